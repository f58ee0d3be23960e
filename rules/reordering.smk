# Reordering-embeddings paper, Figures 3-5: BLEU on test sets with a percentage of source
# words swapped (workflow_scripts/analyses/swap_noise.py, config `swap_noise`).  The noisy source is
# BPE-encoded, decoded, post-processed and scored by the rules of subwords.smk, decode.smk
# and evaluate.smk; 0% is the plain test set.
SWAP = f"swap_noise/{{test_set}}.swap{{percent}}"


rule swap_noise_source:
    input:
        paths.tokenized(split="{test_set}", lang="{src}"),
    output:
        f"{DATA}/{{corpus}}/swap_noise/tok/{{test_set}}.swap{{percent}}.{{src}}-{{tgt}}.{{src}}",
    wildcard_constraints:
        percent="[0-9]+",
    params:
        seed=swap_noise.settings(config)["seed"],
    conda:
        "../envs/data.yaml"
    log:
        "logs/swap_noise/{corpus}/{test_set}.swap{percent}.{src}-{tgt}.log",
    benchmark:
        "results/benchmarks/swap_noise/{corpus}/{test_set}.swap{percent}.{src}-{tgt}.tsv"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.swap_noise noise --input {input:q} --output {output:q}"
        " --percent {wildcards.percent} --seed {params.seed} > {log:q} 2>&1"


use rule apply_bpe as swap_noise_bpe with:
    input:
        text=f"{DATA}/{{corpus}}/swap_noise/tok/{{test_set}}.swap{{percent}}.{{src}}-{{tgt}}.{{lang}}",
        codes=f"{DATA}/{{corpus}}/bpe{{merges}}/codes.{{src}}-{{tgt}}.{{lang}}",
        vocab=f"{DATA}/{{corpus}}/bpe{{merges}}/vocab.{{src}}-{{tgt}}.{{lang}}",
    output:
        f"{DATA}/{{corpus}}/swap_noise/bpe{{merges}}/{{test_set}}.swap{{percent}}.{{src}}-{{tgt}}.{{lang}}",
    wildcard_constraints:
        percent="[0-9]+",
    threads: 1
    log:
        "logs/apply_bpe/{corpus}/swap_noise/bpe{merges}/{test_set}.swap{percent}.{src}-{tgt}.{lang}.log",
    benchmark:
        "results/benchmarks/apply_bpe/{corpus}/swap_noise/bpe{merges}/{test_set}.swap{percent}.{src}-{tgt}.{lang}.tsv"


use rule translate as translate_swap_noise with:
    input:
        checkpoint=lambda w: runs.decode_checkpoint(config, w.experiment, w.corpus),
        source=lambda w: swap_noise.experiment_source(config, w.experiment, w.corpus, w.test_set, w.percent),
        extras=[],
    output:
        f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{SWAP}.out",
    wildcard_constraints:
        percent="[0-9]+",
    log:
        f"logs/translate/{{experiment}}/{{corpus}}/{SWAP}.log",
    benchmark:
        f"results/benchmarks/translate/{{experiment}}/{{corpus}}/{SWAP}.tsv"


use rule postprocess as postprocess_swap_noise with:
    input:
        f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{SWAP}.out",
    output:
        tokenized=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{SWAP}.tok",
        detokenized=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{SWAP}.hyp",
    wildcard_constraints:
        percent="[0-9]+",
    log:
        f"logs/postprocess/{{experiment}}/{{corpus}}/{SWAP}.log",
    benchmark:
        f"results/benchmarks/postprocess/{{experiment}}/{{corpus}}/{SWAP}.tsv"


use rule score as score_swap_noise with:
    input:
        hyp=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{SWAP}.hyp",
        tok_hyp=f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{SWAP}.tok",
        refs=lambda w: corpus_data.reference_paths(config, w.corpus, w.test_set),
        tok_refs=lambda w: corpus_data.tokenized_references(config, w.corpus, w.test_set),
    output:
        f"{EXPERIMENTS}/{{experiment}}/{{corpus}}/{SWAP}.scores.json",
    wildcard_constraints:
        percent="[0-9]+",
    log:
        f"logs/score/{{experiment}}/{{corpus}}/{SWAP}.log",
    benchmark:
        f"results/benchmarks/score/{{experiment}}/{{corpus}}/{SWAP}.tsv"


rule swap_noise_report:
    input:
        lambda w: swap_noise.report_inputs(config, w.corpus),
    output:
        csv=f"{swap_noise.REPORT_ROOT}/{{corpus}}/{{test_set}}.csv",
        markdown=f"{swap_noise.REPORT_ROOT}/{{corpus}}/{{test_set}}.md",
        png=report(
            f"{swap_noise.REPORT_ROOT}/{{corpus}}/{{test_set}}.png",
            caption="../report/swap_noise.rst",
            category="Analyses",
            subcategory="Swap noise (reordering paper, Figures 3-5)",
            labels={"corpus": "{corpus}", "test set": "{test_set}"},
        ),
    params:
        arguments=lambda w: swap_noise.report_arguments(config, w.corpus),
    conda:
        "../envs/evaluate.yaml"
    log:
        "logs/report/swap_noise/{corpus}/{test_set}.log",
    benchmark:
        "results/benchmarks/report/swap_noise/{corpus}/{test_set}.tsv"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.swap_noise report {params.arguments} --title '{wildcards.corpus} / {wildcards.test_set}'"
        " --csv {output.csv:q} --markdown {output.markdown:q} --png {output.png:q} > {log:q} 2>&1"
