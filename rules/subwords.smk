# Subword units: BPE at each configured merge size (subword-nmt), SentencePiece at each
# configured vocabulary size (corpora.C.sentencepiece), and character data.


rule learn_bpe:
    input:
        src=paths.tokenized(split="train", lang="{src}"),
        tgt=paths.tokenized(split="train", lang="{tgt}"),
    output:
        src_codes=paths.codes(units=paths.BPE_UNITS, lang="{src}"),
        tgt_codes=paths.codes(units=paths.BPE_UNITS, lang="{tgt}"),
        src_vocab=paths.vocab(units=paths.BPE_UNITS, lang="{src}"),
        tgt_vocab=paths.vocab(units=paths.BPE_UNITS, lang="{tgt}"),
    params:
        mode=lambda w: "--joint" if CORPORA[w.corpus]["bpe"]["joint"] else "--separate",
        threshold=lambda w: CORPORA[w.corpus]["bpe"]["vocabulary_threshold"],
    conda:
        "../envs/data.yaml"
    log:
        paths.log("learn_bpe"),
    benchmark:
        paths.benchmark("learn_bpe")
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
        codes=paths.codes(units=paths.BPE_UNITS),
        vocab=paths.vocab(units=paths.BPE_UNITS),
    output:
        paths.encoded(units=paths.BPE_UNITS),
    params:
        threshold=lambda w: CORPORA[w.corpus]["bpe"]["vocabulary_threshold"],
    conda:
        "../envs/data.yaml"
    log:
        paths.log("apply_bpe"),
    benchmark:
        paths.benchmark("apply_bpe")
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
        src=paths.encoded(units=paths.BPE_UNITS, split="train", lang="{src}"),
        tgt=paths.encoded(units=paths.BPE_UNITS, split="train", lang="{tgt}"),
    output:
        paths.vocab(units=paths.BPE_UNITS, lang="joint"),
    conda:
        "../envs/train.yaml"
    log:
        paths.log("joint_vocab"),
    benchmark:
        paths.benchmark("joint_vocab")
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        "python -m nmtmodels.cli vocab --inputs {input.src:q} {input.tgt:q} --output {output:q} > {log:q} 2>&1"


# SentencePiece (nmtmodels/text/spm.py), beside BPE: learnt on the same tokenised training text and
# laid out like bpeN/ (spmN/: models, vocabularies "piece count", encoded splits), so training,
# the joint vocabulary, decoding and scoring read it the same way (docs/pipeline.md).
rule learn_spm:
    input:
        src=paths.tokenized(split="train", lang="{src}"),
        tgt=paths.tokenized(split="train", lang="{tgt}"),
    output:
        src_model=paths.fill(paths.SPM_MODEL, units=paths.SPM_UNITS, lang="{src}"),
        tgt_model=paths.fill(paths.SPM_MODEL, units=paths.SPM_UNITS, lang="{tgt}"),
        src_vocab=paths.vocab(units=paths.SPM_UNITS, lang="{src}"),
        tgt_vocab=paths.vocab(units=paths.SPM_UNITS, lang="{tgt}"),
    wildcard_constraints:
        vocab_size="[0-9]+",
    params:
        options=lambda w: corpus_data.sentencepiece_flags(config, w.corpus),
    conda:
        "../envs/data.yaml"
    log:
        paths.log("learn_spm"),
    benchmark:
        paths.benchmark("learn_spm")
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
        model=paths.fill(paths.SPM_MODEL, units=paths.SPM_UNITS),
    output:
        paths.encoded(units=paths.SPM_UNITS),
    wildcard_constraints:
        vocab_size="[0-9]+",
    conda:
        "../envs/data.yaml"
    log:
        paths.log("apply_spm"),
    benchmark:
        paths.benchmark("apply_spm")
    threads: config["data_threads"]
    resources:
        **cpu_job(mem_mb=2000, runtime=120),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.spm apply --model {input.model:q} --input {input.text:q} --output {output:q}"
        " --threads {threads} > {log:q} 2>&1"


use rule joint_vocab as joint_vocab_spm with:
    input:
        src=paths.encoded(units=paths.SPM_UNITS, split="train", lang="{src}"),
        tgt=paths.encoded(units=paths.SPM_UNITS, split="train", lang="{tgt}"),
    output:
        paths.vocab(units=paths.SPM_UNITS, lang="joint"),
    wildcard_constraints:
        vocab_size="[0-9]+",
    log:
        paths.log("joint_vocab_spm"),
    benchmark:
        paths.benchmark("joint_vocab_spm")


rule char_vocab:
    input:
        paths.tokenized(split="train"),
    output:
        paths.vocab(units=paths.CHAR_UNITS),
    params:
        size=config["characters"]["vocab_size"],
    conda:
        "../envs/data.yaml"
    log:
        paths.log("char_vocab"),
    benchmark:
        paths.benchmark("char_vocab")
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
        vocab=paths.vocab(units=paths.CHAR_UNITS),
    output:
        paths.encoded(units=paths.CHAR_UNITS),
    wildcard_constraints:
        split=r"(?!train\.)[A-Za-z0-9_-]+",
    conda:
        "../envs/data.yaml"
    log:
        paths.log("char_encode"),
    benchmark:
        paths.benchmark("char_encode")
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        CHAR_APPLY


rule char_encode_train:
    input:
        text=paths.tokenized(split="train"),
        vocab=paths.vocab(units=paths.CHAR_UNITS),
    output:
        temp(paths.encoded(units=paths.UNFILTERED_CHAR_UNITS, split="train")),
    conda:
        "../envs/data.yaml"
    log:
        paths.log("char_encode_train"),
    benchmark:
        paths.benchmark("char_encode_train")
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        CHAR_APPLY


rule char_filter_train:
    input:
        src=paths.encoded(units=paths.UNFILTERED_CHAR_UNITS, split="train", lang="{src}"),
        tgt=paths.encoded(units=paths.UNFILTERED_CHAR_UNITS, split="train", lang="{tgt}"),
    output:
        src=paths.encoded(units=paths.CHAR_UNITS, split="train", lang="{src}"),
        tgt=paths.encoded(units=paths.CHAR_UNITS, split="train", lang="{tgt}"),
    params:
        max_src=config["characters"]["max_src_chars"],
        max_tgt=config["characters"]["max_tgt_chars"],
    conda:
        "../envs/data.yaml"
    log:
        paths.log("char_filter_train"),
    benchmark:
        paths.benchmark("char_filter_train")
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.chars filter --src-in {input.src:q} --tgt-in {input.tgt:q}"
        " --max-src {params.max_src} --max-tgt {params.max_tgt}"
        " --src-out {output.src:q} --tgt-out {output.tgt:q} > {log:q} 2>&1"
