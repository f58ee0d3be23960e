# Evaluation beyond single scores: concatenated test sets ("ALL"), significance against each
# experiment's baseline(s), parameter counts and training speed, the tidy results table,
# the papers' tables, BLEU by source length, and the `snakemake --report` annotations.
# Layout and configuration keys: workflow_scripts/dag/evaluation.py.

EVALUATION = ev.evaluation_settings(config)
REPORT = ev.REPORT_ROOT


report: "../report/workflow.rst"


rule concatenate_outputs:
    input:
        hyp=lambda w: ev.member_output_files(config, w.experiment, w.corpus, w.concatenation, "hyp"),
        tok=lambda w: ev.member_output_files(config, w.experiment, w.corpus, w.concatenation, "tok"),
    output:
        hyp=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/concat/{{concatenation}}.hyp",
        tok=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/concat/{{concatenation}}.tok",
    wildcard_constraints:
        concatenation="[A-Za-z0-9_-]+",
    conda:
        "../envs/evaluate.yaml"
    log:
        "logs/concatenate_outputs/{experiment}/{corpus}/{concatenation}.log",
    benchmark:
        "results/benchmarks/concatenate_outputs/{experiment}/{corpus}/{concatenation}.tsv"
    resources:
        **cpu_job(mem_mb=500, runtime=10),
    shell:
        "(python -m workflow_scripts.evaluation.concatenate --input {input.hyp:q} --output {output.hyp:q}"
        " && python -m workflow_scripts.evaluation.concatenate --input {input.tok:q} --output {output.tok:q}) > {log:q} 2>&1"


rule concatenate_references:
    input:
        lambda w: ev.member_reference_files(config, w.corpus, w.concatenation, "refs", int(w.ref) - 1),
    output:
        f"{DATA}/{{corpus}}/concat/{{concatenation}}.ref{{ref}}.{{lang}}",
    wildcard_constraints:
        concatenation="[A-Za-z0-9_-]+",
    conda:
        "../envs/evaluate.yaml"
    log:
        "logs/concatenate_references/{corpus}/{concatenation}.ref{ref}.{lang}.log",
    benchmark:
        "results/benchmarks/concatenate_references/{corpus}/{concatenation}.ref{ref}.{lang}.tsv"
    resources:
        **cpu_job(mem_mb=500, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.concatenate --input {input:q} --output {output:q} > {log:q} 2>&1"


use rule concatenate_references as concatenate_tokenized_references with:
    input:
        lambda w: ev.member_reference_files(config, w.corpus, w.concatenation, "tok", 0),
    output:
        f"{DATA}/{{corpus}}/concat/{{concatenation}}.tok.{{lang}}",
    log:
        "logs/concatenate_references/{corpus}/{concatenation}.tok.{lang}.log",
    benchmark:
        "results/benchmarks/concatenate_references/{corpus}/{concatenation}.tok.{lang}.tsv"


use rule concatenate_references as concatenate_tokenized_extra_references with:
    input:
        lambda w: ev.member_reference_files(config, w.corpus, w.concatenation, "tok", int(w.ref)),
    output:
        f"{DATA}/{{corpus}}/concat/{{concatenation}}.tok.ref{{ref}}.{{lang}}",
    log:
        "logs/concatenate_references/{corpus}/{concatenation}.tok.ref{ref}.{lang}.log",
    benchmark:
        "results/benchmarks/concatenate_references/{corpus}/{concatenation}.tok.ref{ref}.{lang}.tsv"


use rule score as score_concatenation with:
    input:
        hyp=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/concat/{{concatenation}}.hyp",
        tok_hyp=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/concat/{{concatenation}}.tok",
        refs=lambda w: ev.reference_files(config, w.corpus, w.concatenation)["refs"],
        tok_refs=lambda w: ev.reference_files(config, w.corpus, w.concatenation)["tok"],
    output:
        f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/concat/{{concatenation}}.scores.json",
    wildcard_constraints:
        concatenation="[A-Za-z0-9_-]+",
    log:
        "logs/score/{experiment}/{corpus}/concat/{concatenation}.log",
    benchmark:
        "results/benchmarks/score/{experiment}/{corpus}/concat/{concatenation}.tsv"


rule model_info:
    input:
        checkpoint=paths.BEST_CHECKPOINT,
        metrics=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/train/metrics.csv",
    output:
        f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/model_info.json",
    conda:
        "../envs/train.yaml"
    log:
        "logs/model_info/{experiment}/{corpus}.log",
    benchmark:
        "results/benchmarks/model_info/{experiment}/{corpus}.tsv"
    resources:
        **cpu_job(mem_mb=4000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.model_info --checkpoint {input.checkpoint:q} --metrics {input.metrics:q}"
        " --output {output:q} > {log:q} 2>&1"


rule significance:
    input:
        unpack(lambda w: ev.comparison_inputs(config, w.experiment, w.baseline, w.corpus, w.test_set)),
    output:
        f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/significance/{{test_set}}.vs.{{baseline}}.json",
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
        "logs/significance/{experiment}/{corpus}/{test_set}.vs.{baseline}.log",
    benchmark:
        "results/benchmarks/significance/{experiment}/{corpus}/{test_set}.vs.{baseline}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=30),
    shell:
        "python -m workflow_scripts.evaluation.significance --lang {params.lang} --system {input.system:q}"
        " --baseline {input.baseline:q} --ref {input.refs:q} --tok-system {input.system_tok:q}"
        " --tok-baseline {input.baseline_tok:q} --tok-ref {input.tok_refs:q}"
        " --metrics {params.metrics} --tests {params.tests} --bootstrap-samples {params.bootstrap_samples}"
        " --ar-trials {params.ar_trials} --seed {params.seed} --output {output:q} > {log:q} 2>&1"


rule results_table:
    input:
        ev.report_inputs(config),
    output:
        report(f"{REPORT}/results.csv", caption="../report/results.rst", category="Results"),
    params:
        metadata=json.dumps(ev.report_metadata(config)),
    conda:
        "../envs/evaluate.yaml"
    log:
        "logs/report/results_table.log",
    benchmark:
        "results/benchmarks/report/results_table.tsv"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.tables collect --metadata {params.metadata:q} --output {output:q} > {log:q} 2>&1"


rule paper_tables:
    input:
        f"{REPORT}/results.csv",
    output:
        markdown=f"{REPORT}/tables/{{paper}}.md",
        latex=f"{REPORT}/tables/{{paper}}.tex",
        html=report(
            f"{REPORT}/tables/{{paper}}.html",
            caption="../report/paper_tables.rst",
            category="Paper tables",
            labels={"paper": "{paper}"},
        ),
    wildcard_constraints:
        paper="|".join(ev.PAPERS),
    params:
        marker_test=EVALUATION["marker_test"],
    conda:
        "../envs/evaluate.yaml"
    log:
        "logs/report/paper_tables/{paper}.log",
    benchmark:
        "results/benchmarks/report/paper_tables/{paper}.tsv"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.tables render --results {input:q} --paper {wildcards.paper}"
        " --marker-test {params.marker_test} --markdown {output.markdown:q} --latex {output.latex:q}"
        " --html {output.html:q} > {log:q} 2>&1"


rule length_analysis:
    input:
        unpack(lambda w: ev.length_inputs(config, w.corpus, w.test_set)),
    output:
        csv=f"{REPORT}/length/{{corpus}}/{{test_set}}.csv",
        png=report(
            f"{REPORT}/length/{{corpus}}/{{test_set}}.png",
            caption="../report/length.rst",
            category="Analyses",
            subcategory="Score by source length",
            labels={"corpus": "{corpus}", "test set": "{test_set}"},
        ),
    params:
        lang=lambda w: CORPORA[w.corpus]["tgt"],
        metric=EVALUATION["length_metric"],
        buckets=" ".join(map(str, EVALUATION["length_buckets"])),
        systems=lambda w, input: " ".join(
            f"--system {name} {shlex.quote(path)}"
            for name, path in zip(ev.length_systems(config, w.corpus), input.systems)
        ),
    conda:
        "../envs/evaluate.yaml"
    log:
        "logs/report/length/{corpus}/{test_set}.log",
    benchmark:
        "results/benchmarks/report/length/{corpus}/{test_set}.tsv"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.plots length --source {input.source:q} --lang {params.lang}"
        " --metric {params.metric} --ref {input.refs:q} {params.systems} --buckets {params.buckets}"
        " --title '{wildcards.corpus} / {wildcards.test_set}' --csv {output.csv:q} --png {output.png:q} > {log:q} 2>&1"


# The config files of this run, for the summary's header, through the environment (as fetch's
# input directories in the Snakefile): as a parameter, adding a config file that changes
# nothing upstream would rerun the summary.  Its header names the config files and the
# commit of the run that made it.
CONFIG_FILES = [f if os.path.relpath(f, workflow.basedir).startswith("..") else os.path.relpath(f, workflow.basedir)
                for f in map(os.path.abspath, workflow.configfiles)]
os.environ.update(NMT_WORKFLOW_CONFIG_FILES=json.dumps(CONFIG_FILES))


rule results_summary:
    input:
        **ev.summary_inputs(config),
    output:
        markdown=report(f"{REPORT}/summary.md", caption="../report/summary.rst", category="Results"),
        json=f"{REPORT}/summary.json",
    params:
        metadata=json.dumps(ev.report_metadata(config)),
        marker_test=EVALUATION["marker_test"],
    conda:
        "../envs/evaluate.yaml"
    log:
        "logs/report/results_summary.log",
    benchmark:
        "results/benchmarks/report/results_summary.tsv"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.summary --metadata {params.metadata:q} --results {input.results:q}"
        " --claims {input.claims:q}"
        ' --marker-test {params.marker_test} --configfiles-json "$NMT_WORKFLOW_CONFIG_FILES"'
        " --markdown {output.markdown:q} --json {output.json:q} > {log:q} 2>&1"


rule learning_curves:
    input:
        lambda w: ev.curve_inputs(config, w.corpus),
    output:
        report(
            f"{REPORT}/curves/{{corpus}}.png",
            caption="../report/curves.rst",
            category="Analyses",
            subcategory="Learning curves",
            labels={"corpus": "{corpus}"},
        ),
    params:
        runs=lambda w, input: " ".join(
            f"--run {name} {shlex.quote(path)}" for name, path in zip(ev.length_systems(config, w.corpus), input)
        ),
    conda:
        "../envs/evaluate.yaml"
    log:
        "logs/report/learning_curves/{corpus}.log",
    benchmark:
        "results/benchmarks/report/learning_curves/{corpus}.tsv"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.curves {params.runs} --title {wildcards.corpus}"
        " --png {output:q} > {log:q} 2>&1"


rule report_tables:
    input:
        ev.report_targets(config),


# The GPU reproduction (configs/gpu.yaml, docs/gpu.md): every score, significance test, paper
# table and the results summary of the config, without the model packages and analyses of `all`:
#   snakemake --cores 16 --configfile configs/gpu.yaml gpu_reproduction
rule gpu_reproduction:
    input:
        runs.model_targets(config),
        [ev.comparison_path(*comparison) for comparison in ev.comparisons(config)],
        ev.report_targets(config),


# The GPU reproduction in parts, one per paper, each within one call of the GPU machine
# (configs/gpu_parts/, workflow_scripts/dag/gpu_parts.py, docs/gpu.md): what gpu_reproduction
# builds, for the part's config; the target checks that the part's config files were given:
#   snakemake --cores 16 gpu_part_lattice --configfile configs/gpu.yaml configs/gpu_parts/lattice.yaml
for _part in gpu_parts.PARTS:

    rule:
        name:
            f"gpu_part_{_part}"
        input:
            gpu_parts.part_inputs(_part, config, CONFIG_FILES),
