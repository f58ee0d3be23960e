# What is measured on the decoded test sets: scores (sacreBLEU with signature, chrF, TER and
# tokenised BLEU, each against every reference), the source OOV rate, the scores of concatenated
# test sets ("ALL": outputs and references concatenated), and significance against each
# experiment's baseline(s).  Which test sets and comparisons: workflow_scripts/dag/evaluation.py.


rule score:
    input:
        hyp=paths.HYPOTHESIS,
        tok_hyp=paths.TOKENIZED_HYPOTHESIS,
        refs=lambda w: corpus_data.reference_paths(config, w.corpus, w.test_set),
        tok_refs=lambda w: corpus_data.tokenized_references(config, w.corpus, w.test_set),
    output:
        paths.SCORES,
    params:
        lang=lambda w: CORPORA[w.corpus]["tgt"],
        metrics=METRICS_FINGERPRINT,
    log:
        paths.log("score"),
    benchmark:
        paths.benchmark("score")
    conda:
        "../envs/evaluate.yaml"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m nmtmodels.cli score --lang {params.lang} --hyp {input.hyp:q} --ref {input.refs:q}"
        " --tok-hyp {input.tok_hyp:q} --tok-ref {input.tok_refs:q} --output {output:q} > {log:q} 2>&1"


# Source OOV rate of each run on each test set: the share of its test source tokens, as the model
# reads them, that its source vocabulary maps to <unk> (workflow_scripts/evaluation/oov.py).
rule oov_rate:
    input:
        unpack(lambda w: sources.oov_inputs(config, w.experiment, w.corpus, w.test_set)),
    output:
        paths.OOV,
    params:
        unit=lambda w: sources.source_units(config, w.experiment),
    log:
        paths.log("oov_rate"),
    benchmark:
        paths.benchmark("oov_rate")
    conda:
        "../envs/evaluate.yaml"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.oov --source {input.source:q} --vocab {input.vocab:q}"
        " --unit {params.unit:q} --output {output:q} > {log:q} 2>&1"


rule concatenate_outputs:
    input:
        hyp=lambda w: ev.member_output_files(config, w.experiment, w.corpus, w.concatenation, "hyp"),
        tok=lambda w: ev.member_output_files(config, w.experiment, w.corpus, w.concatenation, "tok"),
    output:
        hyp=paths.fill(paths.HYPOTHESIS, test_set=paths.CONCATENATED_SET),
        tok=paths.fill(paths.TOKENIZED_HYPOTHESIS, test_set=paths.CONCATENATED_SET),
    wildcard_constraints:
        concatenation="[A-Za-z0-9_-]+",
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("concatenate_outputs"),
    benchmark:
        paths.benchmark("concatenate_outputs")
    resources:
        **cpu_job(mem_mb=500, runtime=10),
    shell:
        "(python -m workflow_scripts.evaluation.concatenate --input {input.hyp:q} --output {output.hyp:q}"
        " && python -m workflow_scripts.evaluation.concatenate --input {input.tok:q} --output {output.tok:q}) > {log:q} 2>&1"


rule concatenate_references:
    input:
        lambda w: ev.member_reference_files(config, w.corpus, w.concatenation, "refs", int(w.ref) - 1),
    output:
        paths.CONCATENATED_REFERENCE,
    wildcard_constraints:
        concatenation="[A-Za-z0-9_-]+",
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("concatenate_references"),
    benchmark:
        paths.benchmark("concatenate_references")
    resources:
        **cpu_job(mem_mb=500, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.concatenate --input {input:q} --output {output:q} > {log:q} 2>&1"


use rule concatenate_references as concatenate_tokenized_references with:
    input:
        lambda w: ev.member_reference_files(config, w.corpus, w.concatenation, "tok", 0),
    output:
        paths.CONCATENATED_TOKENIZED_REFERENCE,
    log:
        paths.log("concatenate_tokenized_references"),
    benchmark:
        paths.benchmark("concatenate_tokenized_references")


use rule concatenate_references as concatenate_tokenized_extra_references with:
    input:
        lambda w: ev.member_reference_files(config, w.corpus, w.concatenation, "tok", int(w.ref)),
    output:
        paths.CONCATENATED_TOKENIZED_EXTRA_REFERENCE,
    log:
        paths.log("concatenate_tokenized_extra_references"),
    benchmark:
        paths.benchmark("concatenate_tokenized_extra_references")


use rule score as score_concatenation with:
    input:
        hyp=paths.fill(paths.HYPOTHESIS, test_set=paths.CONCATENATED_SET),
        tok_hyp=paths.fill(paths.TOKENIZED_HYPOTHESIS, test_set=paths.CONCATENATED_SET),
        refs=lambda w: ev.reference_files(config, w.corpus, w.concatenation)["refs"],
        tok_refs=lambda w: ev.reference_files(config, w.corpus, w.concatenation)["tok"],
    output:
        paths.fill(paths.SCORES, test_set=paths.CONCATENATED_SET),
    wildcard_constraints:
        concatenation="[A-Za-z0-9_-]+",
    log:
        paths.log("score_concatenation"),
    benchmark:
        paths.benchmark("score_concatenation")


rule significance:
    input:
        unpack(lambda w: ev.comparison_inputs(config, w.experiment, w.baseline, w.corpus, w.test_set)),
    output:
        paths.SIGNIFICANCE,
    wildcard_constraints:
        baseline="[A-Za-z0-9_-]+",
    params:
        lang=lambda w: CORPORA[w.corpus]["tgt"],
        metrics=" ".join(EVALUATION["significance_metrics"]),
        tests=" ".join(EVALUATION["tests"]),
        bootstrap_samples=EVALUATION["bootstrap_samples"],
        ar_trials=EVALUATION["ar_trials"],
        seed=EVALUATION["seed"],
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("significance"),
    benchmark:
        paths.benchmark("significance")
    resources:
        **cpu_job(mem_mb=2000, runtime=30),
    shell:
        "python -m workflow_scripts.evaluation.significance --lang {params.lang} --system {input.system:q}"
        " --baseline {input.baseline:q} --ref {input.refs:q} --tok-system {input.system_tok:q}"
        " --tok-baseline {input.baseline_tok:q} --tok-ref {input.tok_refs:q}"
        " --metrics {params.metrics} --tests {params.tests} --bootstrap-samples {params.bootstrap_samples}"
        " --ar-trials {params.ar_trials} --seed {params.seed} --output {output:q} > {log:q} 2>&1"


# A system against its baseline over all their runs (seeds): scores, s_opt and s_sel, the
# approximate randomisation test stratified by run and the pooled sign test, what the results
# summary's verdicts read (workflow_scripts/evaluation/run_statistics.py).
rule run_statistics:
    input:
        unpack(lambda w: ev.run_statistics_inputs(config, w.experiment, w.baseline, w.corpus, w.test_set)),
    output:
        paths.RUN_STATISTICS,
    wildcard_constraints:
        baseline="[A-Za-z0-9_-]+",
    params:
        lang=lambda w: CORPORA[w.corpus]["tgt"],
        seeds=lambda w: " ".join(str(seed) for seed, _, _ in ev.run_pairs(config, w.experiment, w.baseline, w.corpus)),
        system_runs=lambda w: " ".join(run for _, run, _ in ev.run_pairs(config, w.experiment, w.baseline, w.corpus)),
        baseline_runs=lambda w: " ".join(base for _, _, base in ev.run_pairs(config, w.experiment, w.baseline, w.corpus)),
        metrics=" ".join(EVALUATION["significance_metrics"]),
        bootstrap_samples=EVALUATION["bootstrap_samples"],
        ar_trials=EVALUATION["ar_trials"],
        seed=EVALUATION["seed"],
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("run_statistics"),
    benchmark:
        paths.benchmark("run_statistics")
    resources:
        **cpu_job(mem_mb=2000, runtime=30),
    shell:
        "python -m workflow_scripts.evaluation.run_statistics --lang {params.lang} --seeds {params.seeds}"
        " --comparison {wildcards.experiment} {wildcards.baseline} {wildcards.corpus} {wildcards.test_set}"
        " --system-runs {params.system_runs} --baseline-runs {params.baseline_runs}"
        " --system {input.system:q} --baseline {input.baseline:q} --ref {input.refs:q}"
        " --tok-system {input.system_tok:q} --tok-baseline {input.baseline_tok:q} --tok-ref {input.tok_refs:q}"
        " --metrics {params.metrics} --bootstrap-samples {params.bootstrap_samples}"
        " --ar-trials {params.ar_trials} --seed {params.seed} --output {output:q} > {log:q} 2>&1"
