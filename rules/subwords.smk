# Subword units: BPE at each configured merge size (subword-nmt), SentencePiece at each
# configured vocabulary size (corpora.C.sentencepiece), and character data.


rule learn_bpe:
    input:
        src=paths.tokenized(split="train", lang="{src}"),
        tgt=paths.tokenized(split="train", lang="{tgt}"),
    output:
        src_codes=f"{DATA}/{{corpus}}/bpe{{merges}}/codes.{{src}}-{{tgt}}.{{src}}",
        tgt_codes=f"{DATA}/{{corpus}}/bpe{{merges}}/codes.{{src}}-{{tgt}}.{{tgt}}",
        src_vocab=f"{DATA}/{{corpus}}/bpe{{merges}}/vocab.{{src}}-{{tgt}}.{{src}}",
        tgt_vocab=f"{DATA}/{{corpus}}/bpe{{merges}}/vocab.{{src}}-{{tgt}}.{{tgt}}",
    params:
        mode=lambda w: "--joint" if CORPORA[w.corpus]["bpe"].get("joint", True) else "--separate",
        threshold=lambda w: CORPORA[w.corpus]["bpe"].get("vocabulary_threshold", 1),
    conda:
        "../envs/data.yaml"
    log:
        "logs/learn_bpe/{corpus}/bpe{merges}.{src}-{tgt}.log",
    benchmark:
        "results/benchmarks/learn_bpe/{corpus}/bpe{merges}.{src}-{tgt}.tsv"
    resources:
        **cpu_job(mem_mb=4000, runtime=240),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.bpe learn --merges {wildcards.merges} {params.mode}"
        " --vocabulary-threshold {params.threshold}"
        " --src-in {input.src:q} --tgt-in {input.tgt:q}"
        " --src-codes-out {output.src_codes:q} --tgt-codes-out {output.tgt_codes:q}"
        " --src-vocab-out {output.src_vocab:q} --tgt-vocab-out {output.tgt_vocab:q} > {log:q} 2>&1"


rule apply_bpe:
    input:
        text=paths.tokenized(),
        codes=f"{DATA}/{{corpus}}/bpe{{merges}}/codes.{{src}}-{{tgt}}.{{lang}}",
        vocab=f"{DATA}/{{corpus}}/bpe{{merges}}/vocab.{{src}}-{{tgt}}.{{lang}}",
    output:
        f"{DATA}/{{corpus}}/bpe{{merges}}/{{split}}.{{src}}-{{tgt}}.{{lang}}",
    params:
        threshold=lambda w: CORPORA[w.corpus]["bpe"].get("vocabulary_threshold", 1),
    conda:
        "../envs/data.yaml"
    log:
        "logs/apply_bpe/{corpus}/bpe{merges}/{split}.{src}-{tgt}.{lang}.log",
    benchmark:
        "results/benchmarks/apply_bpe/{corpus}/bpe{merges}/{split}.{src}-{tgt}.{lang}.tsv"
    threads: config["data_threads"]
    resources:
        **cpu_job(mem_mb=2000, runtime=120),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.bpe apply --codes {input.codes:q} --vocab {input.vocab:q}"
        " --vocabulary-threshold {params.threshold} --input {input.text:q} --output {output:q}"
        " --threads {threads} > {log:q} 2>&1"


rule joint_vocab:
    # One vocabulary over both sides' encoded training text (fairseq's --joined-dictionary),
    # for models that share source and target embeddings (model.share_embeddings).
    input:
        src=f"{DATA}/{{corpus}}/bpe{{merges}}/train.{{src}}-{{tgt}}.{{src}}",
        tgt=f"{DATA}/{{corpus}}/bpe{{merges}}/train.{{src}}-{{tgt}}.{{tgt}}",
    output:
        f"{DATA}/{{corpus}}/bpe{{merges}}/vocab.{{src}}-{{tgt}}.joint",
    conda:
        "../envs/train.yaml"
    log:
        "logs/joint_vocab/{corpus}/bpe{merges}.{src}-{tgt}.log",
    benchmark:
        "results/benchmarks/joint_vocab/{corpus}/bpe{merges}.{src}-{tgt}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        "python -m nmtmodels.cli vocab --inputs {input.src:q} {input.tgt:q} --output {output:q} > {log:q} 2>&1"


# SentencePiece (nmtmodels/spm.py), beside BPE: learnt on the same tokenised training text and
# laid out like bpeN/ (spmN/: models, vocabularies "piece count", encoded splits), so training,
# the joint vocabulary, decoding and scoring read it the same way (docs/pipeline.md).
rule learn_spm:
    input:
        src=paths.tokenized(split="train", lang="{src}"),
        tgt=paths.tokenized(split="train", lang="{tgt}"),
    output:
        src_model=paths.fill(paths.SPM_MODEL, units="spm{vocab_size}", lang="{src}"),
        tgt_model=paths.fill(paths.SPM_MODEL, units="spm{vocab_size}", lang="{tgt}"),
        src_vocab=paths.vocab(units="spm{vocab_size}", lang="{src}"),
        tgt_vocab=paths.vocab(units="spm{vocab_size}", lang="{tgt}"),
    wildcard_constraints:
        vocab_size="[0-9]+",
    params:
        options=lambda w: corpus_data.sentencepiece_flags(config, w.corpus),
    conda:
        "../envs/data.yaml"
    log:
        "logs/learn_spm/{corpus}/spm{vocab_size}.{src}-{tgt}.log",
    benchmark:
        "results/benchmarks/learn_spm/{corpus}/spm{vocab_size}.{src}-{tgt}.tsv"
    threads: config["data_threads"]
    resources:
        **cpu_job(mem_mb=4000, runtime=240),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.spm learn --vocab-size {wildcards.vocab_size} {params.options}"
        " --src-in {input.src:q} --tgt-in {input.tgt:q}"
        " --src-model-out {output.src_model:q} --tgt-model-out {output.tgt_model:q}"
        " --src-vocab-out {output.src_vocab:q} --tgt-vocab-out {output.tgt_vocab:q} --threads {threads} > {log:q} 2>&1"


rule apply_spm:
    input:
        text=paths.tokenized(),
        model=paths.fill(paths.SPM_MODEL, units="spm{vocab_size}"),
    output:
        paths.encoded(units="spm{vocab_size}"),
    wildcard_constraints:
        vocab_size="[0-9]+",
    conda:
        "../envs/data.yaml"
    log:
        "logs/apply_spm/{corpus}/spm{vocab_size}/{split}.{src}-{tgt}.{lang}.log",
    benchmark:
        "results/benchmarks/apply_spm/{corpus}/spm{vocab_size}/{split}.{src}-{tgt}.{lang}.tsv"
    threads: config["data_threads"]
    resources:
        **cpu_job(mem_mb=2000, runtime=120),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.spm apply --model {input.model:q} --input {input.text:q} --output {output:q}"
        " --threads {threads} > {log:q} 2>&1"


use rule joint_vocab as joint_vocab_spm with:
    input:
        src=paths.encoded(units="spm{vocab_size}", split="train", lang="{src}"),
        tgt=paths.encoded(units="spm{vocab_size}", split="train", lang="{tgt}"),
    output:
        paths.vocab(units="spm{vocab_size}", lang="joint"),
    wildcard_constraints:
        vocab_size="[0-9]+",
    log:
        "logs/joint_vocab/{corpus}/spm{vocab_size}.{src}-{tgt}.log",
    benchmark:
        "results/benchmarks/joint_vocab/{corpus}/spm{vocab_size}.{src}-{tgt}.tsv"


rule char_vocab:
    input:
        paths.tokenized(split="train"),
    output:
        f"{DATA}/{{corpus}}/char/vocab.{{src}}-{{tgt}}.{{lang}}",
    params:
        size=config["characters"]["vocab_size"],
    conda:
        "../envs/data.yaml"
    log:
        "logs/char_vocab/{corpus}/{src}-{tgt}.{lang}.log",
    benchmark:
        "results/benchmarks/char_vocab/{corpus}/{src}-{tgt}.{lang}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.chars vocab --input {input:q} --size {params.size}"
        " --output {output:q} > {log:q} 2>&1"


CHAR_APPLY = (
    "python -m workflow_scripts.data.chars apply --vocab {input.vocab:q} --input {input.text:q}"
    " --output {output:q} > {log:q} 2>&1"
)


rule char_encode:
    input:
        text=paths.tokenized(),
        vocab=f"{DATA}/{{corpus}}/char/vocab.{{src}}-{{tgt}}.{{lang}}",
    output:
        f"{DATA}/{{corpus}}/char/{{split}}.{{src}}-{{tgt}}.{{lang}}",
    wildcard_constraints:
        split=r"(?!train\.)[A-Za-z0-9_-]+",
    conda:
        "../envs/data.yaml"
    log:
        "logs/char_encode/{corpus}/{split}.{src}-{tgt}.{lang}.log",
    benchmark:
        "results/benchmarks/char_encode/{corpus}/{split}.{src}-{tgt}.{lang}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        CHAR_APPLY


rule char_encode_train:
    input:
        text=paths.tokenized(split="train"),
        vocab=f"{DATA}/{{corpus}}/char/vocab.{{src}}-{{tgt}}.{{lang}}",
    output:
        temp(f"{DATA}/{{corpus}}/char/unfiltered/train.{{src}}-{{tgt}}.{{lang}}"),
    conda:
        "../envs/data.yaml"
    log:
        "logs/char_encode/{corpus}/train.{src}-{tgt}.{lang}.log",
    benchmark:
        "results/benchmarks/char_encode/{corpus}/train.{src}-{tgt}.{lang}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        CHAR_APPLY


rule char_filter_train:
    input:
        src=f"{DATA}/{{corpus}}/char/unfiltered/train.{{src}}-{{tgt}}.{{src}}",
        tgt=f"{DATA}/{{corpus}}/char/unfiltered/train.{{src}}-{{tgt}}.{{tgt}}",
    output:
        src=f"{DATA}/{{corpus}}/char/train.{{src}}-{{tgt}}.{{src}}",
        tgt=f"{DATA}/{{corpus}}/char/train.{{src}}-{{tgt}}.{{tgt}}",
    params:
        max_src=config["characters"]["max_src_chars"],
        max_tgt=config["characters"]["max_tgt_chars"],
    conda:
        "../envs/data.yaml"
    log:
        "logs/char_filter/{corpus}/train.{src}-{tgt}.log",
    benchmark:
        "results/benchmarks/char_filter/{corpus}/train.{src}-{tgt}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.chars filter --src-in {input.src:q} --tgt-in {input.tgt:q}"
        " --max-src {params.max_src} --max-tgt {params.max_tgt}"
        " --src-out {output.src:q} --tgt-out {output.tgt:q} > {log:q} 2>&1"
