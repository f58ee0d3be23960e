# Scores: sacreBLEU (with signature), chrF and tokenised BLEU per test set, each against every reference.



rule score:
    input:
        hyp=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{{test_set}}.hyp",
        tok_hyp=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{{test_set}}.tok",
        refs=lambda w: wc.reference_paths(config, w.corpus, w.test_set),
        tok_refs=lambda w: wc.tokenized_references(config, w.corpus, w.test_set),
    output:
        f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{{test_set}}.scores.json",
    params:
        lang=lambda w: CORPORA[w.corpus]["tgt"],
        refs=lambda w, input: " ".join(f"--ref {shlex.quote(r)}" for r in input.refs),
        tok_refs=lambda w, input: " ".join(f"--tok-ref {shlex.quote(r)}" for r in input.tok_refs),
    log:
        "logs/score/{experiment}/{corpus}/{test_set}.log",
    benchmark:
        "results/benchmarks/score/{experiment}/{corpus}/{test_set}.tsv"
    conda:
        "../envs/evaluate.yaml"
    resources:
        **CPU_JOB,
        mem_mb=1000,
        runtime=10,
    shell:
        "python -m nmtmodels.scoring --lang {params.lang} --hyp {input.hyp:q} {params.refs}"
        " --tok-hyp {input.tok_hyp:q} {params.tok_refs} --output {output:q} > {log:q} 2>&1"
