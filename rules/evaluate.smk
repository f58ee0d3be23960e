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
