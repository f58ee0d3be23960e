# Scores: sacreBLEU (with signature), chrF, TER and tokenised BLEU per test set, each against every reference.



rule score:
    input:
        hyp=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{{test_set}}.hyp",
        tok_hyp=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{{test_set}}.tok",
        refs=lambda w: corpus_data.reference_paths(config, w.corpus, w.test_set),
        tok_refs=lambda w: corpus_data.tokenized_references(config, w.corpus, w.test_set),
    output:
        f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{{test_set}}.scores.json",
    params:
        lang=lambda w: CORPORA[w.corpus]["tgt"],
    log:
        "logs/score/{experiment}/{corpus}/{test_set}.log",
    benchmark:
        "results/benchmarks/score/{experiment}/{corpus}/{test_set}.tsv"
    conda:
        "../envs/evaluate.yaml"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m nmtmodels.scoring --lang {params.lang} --hyp {input.hyp:q} --ref {input.refs:q}"
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
        "logs/oov/{experiment}/{corpus}/{test_set}.log",
    benchmark:
        "results/benchmarks/oov/{experiment}/{corpus}/{test_set}.tsv"
    conda:
        "../envs/evaluate.yaml"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.oov --source {input.source:q} --vocab {input.vocab:q}"
        " --unit {params.unit:q} --output {output:q} > {log:q} 2>&1"
