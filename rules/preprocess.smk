# Normalise + tokenise / segment both sides of a split; clean and dedupe training data.
# tok/ holds model input text, norm/ the same kept lines untokenised (for other segmenters).


rule preprocess:
    input:
        src=paths.fill(paths.RAW, lang="{src}"),
        tgt=paths.fill(paths.RAW, lang="{tgt}"),
    output:
        src=paths.tokenized(lang="{src}"),
        tgt=paths.tokenized(lang="{tgt}"),
        src_norm=paths.normalized(lang="{src}"),
        tgt_norm=paths.normalized(lang="{tgt}"),
    params:
        spec=lambda w: corpus_data.split_preprocessing_spec_json(config, w.corpus, w.split),
        train=lambda w: "--train" if w.split == "train" else "",
        unicode_form=config["unicode_form"],
    conda:
        "../envs/data.yaml"
    log:
        paths.log("preprocess"),
    benchmark:
        paths.benchmark("preprocess")
    threads: config["data_threads"]
    resources:
        **cpu_job(mem_mb=4000, runtime=240),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.preprocess --src-lang {wildcards.src} --tgt-lang {wildcards.tgt}"
        " --src-in {input.src:q} --tgt-in {input.tgt:q} --src-out {output.src:q} --tgt-out {output.tgt:q}"
        " --src-norm-out {output.src_norm:q} --tgt-norm-out {output.tgt_norm:q}"
        " --spec {params.spec:q} {params.train} --unicode-form {params.unicode_form}"
        " --threads {threads} > {log:q} 2>&1"


# Reference K >= 1 of a multi-reference test set, tokenised exactly as reference 0 above
# (paired with the source, so line counts are checked; the other outputs are by-products).
use rule preprocess as preprocess_reference with:
    input:
        src=paths.fill(paths.RAW, lang="{src}"),
        tgt=paths.fill(paths.RAW_REFERENCE, lang="{tgt}"),
    output:
        src=temp(paths.fill(paths.TOKENIZED_REFERENCE, lang="{src}")),
        tgt=paths.fill(paths.TOKENIZED_REFERENCE, lang="{tgt}"),
        src_norm=temp(paths.fill(paths.ENCODED_REFERENCE, units=paths.NORMALIZED_UNITS, lang="{src}")),
        tgt_norm=temp(paths.fill(paths.ENCODED_REFERENCE, units=paths.NORMALIZED_UNITS, lang="{tgt}")),
    log:
        paths.log("preprocess_reference"),
    benchmark:
        paths.benchmark("preprocess_reference")


rule segment:
    input:
        paths.normalized(),
    output:
        paths.encoded(units=paths.SEGMENTED_UNITS),
    conda:
        "../envs/data.yaml"
    log:
        paths.log("segment"),
    benchmark:
        paths.benchmark("segment")
    threads: config["data_threads"]
    resources:
        **cpu_job(mem_mb=4000, runtime=240),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.segment --lang {wildcards.lang} --segmenter {wildcards.segmenter}"
        " --input {input:q} --output {output:q} --threads {threads} > {log:q} 2>&1"
