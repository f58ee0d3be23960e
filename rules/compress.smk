# Explicit sentence compression (ESC): compression pairs, compressor training, compressed
# ("backbone") source of every split with length-controlled beam search, and compression
# quality (token F1, compression ratio).  Layout: results/compression/{compressor}/{corpus}/.
COMPRESSION = paths.COMPRESSION_ROOT
COMPRESSION_SECTION = config.get("compression") or {}


wildcard_constraints:
    compressor="[A-Za-z0-9_-]+",
    compression_set="[A-Za-z0-9_-]+",


localrules:
    fetch_compression_set,


# As rule fetch (rules/data.smk): the mirror directory is no parameter (fetch reads the
# exported NMT_DATA_MIRROR), so moving the mirror reruns nothing; `source` changes only when
# the content of a set without sha256 changed at its mirror path.
rule fetch_compression_set:
    output:
        "resources/compression/{compression_set}.jsonl",
    params:
        spec=lambda w: json.dumps(COMPRESSION_SECTION["data"][w.compression_set], sort_keys=True),
        source=lambda w: fetch_module.source_fingerprint(
            COMPRESSION_SECTION["data"][w.compression_set], w.compression_set,
            f"resources/compression/{w.compression_set}.jsonl", mirror_dir=MIRROR, licensed_dir=LICENSED,
        ),
    conda:
        "../envs/data.yaml"
    log:
        "logs/fetch_compression_set/{compression_set}.log",
    benchmark:
        "results/benchmarks/fetch_compression_set/{compression_set}.tsv"
    resources:
        **cpu_job(mem_mb=500, runtime=30),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.fetch --spec {params.spec:q} --name {wildcards.compression_set:q}"
        " --output {output:q} > {log:q} 2>&1"


rule compression_denoise_pairs:
    input:
        unpack(lambda w: esc.compressor_bpe_files(config, w.compressor, w.corpus)),
        text=lambda w: paths.tokenized(corpus=w.corpus, split=w.split, **paths.sides(CORPORA[w.corpus]), lang=CORPORA[w.corpus]["src"]),
    output:
        src=f"{COMPRESSION}/{{compressor}}/{{corpus}}/denoise/{{split}}.src",
        tgt=f"{COMPRESSION}/{{compressor}}/{{corpus}}/denoise/{{split}}.tgt",
    params:
        noise=lambda w: esc.compressor_spec(config, w.compressor)["noise"],  # defaults: the schema
        threshold=lambda w: CORPORA[w.corpus]["bpe"].get("vocabulary_threshold", 1),
    log:
        "logs/compression_denoise_pairs/{compressor}/{corpus}/{split}.log",
    benchmark:
        "results/benchmarks/compression_denoise_pairs/{compressor}/{corpus}/{split}.tsv"
    conda:
        "../envs/data.yaml"
    resources:
        **cpu_job(mem_mb=2000, runtime=30),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.compression denoise --input {input.text:q} --codes {input.codes:q}"
        " --vocab {input.vocab:q} --threshold {params.threshold} --seed {params.noise[seed]}"
        " --ratio {params.noise[ratio]} --other-sentences {params.noise[other_sentences]} --window {params.noise[window]}"
        " --src-out {output.src:q} --tgt-out {output.tgt:q} > {log:q} 2>&1"


rule compression_supervised_pairs:
    input:
        unpack(lambda w: esc.compressor_bpe_files(config, w.compressor, w.corpus)),
        sets=lambda w: [f"resources/compression/{name}.jsonl" for name in esc.compression_set_part(config, w.part)[0]],
    output:
        src=f"{COMPRESSION}/{{compressor}}/{{corpus}}/supervised/{{part}}.src",
        tgt=f"{COMPRESSION}/{{compressor}}/{{corpus}}/supervised/{{part}}.tgt",
    params:
        preprocess=lambda w: corpus_data.corpus_spec_json(config, w.corpus, corpus_data.preprocessing_spec),
        lang=lambda w: CORPORA[w.corpus]["src"],
        limits=lambda w: esc.compression_set_part(config, w.part)[1],
        unicode_form=config.get("unicode_form", "NFKC"),
        threshold=lambda w: CORPORA[w.corpus]["bpe"].get("vocabulary_threshold", 1),
    wildcard_constraints:
        part="train|dev",
    log:
        "logs/compression_supervised_pairs/{compressor}/{corpus}/{part}.log",
    benchmark:
        "results/benchmarks/compression_supervised_pairs/{compressor}/{corpus}/{part}.tsv"
    conda:
        "../envs/data.yaml"
    resources:
        **cpu_job(mem_mb=2000, runtime=30),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.compression pairs --sets {input.sets:q} --lang {params.lang}"
        " --preprocess {params.preprocess:q} --unicode-form {params.unicode_form} {params.limits}"
        " --codes {input.codes:q} --vocab {input.vocab:q} --threshold {params.threshold}"
        " --src-out {output.src:q} --tgt-out {output.tgt:q} > {log:q} 2>&1"


rule compression_eval_set:
    input:
        unpack(lambda w: esc.compressor_bpe_files(config, w.compressor, w.corpus)),
        sets=lambda w: [f"resources/compression/{name}.jsonl" for name in esc.compression_set_part(config, "eval")[0]],
    output:
        src=f"{COMPRESSION}/{{compressor}}/{{corpus}}/supervised/eval.src",
        tgt=f"{COMPRESSION}/{{compressor}}/{{corpus}}/supervised/eval.tgt",
        refs=f"{COMPRESSION}/{{compressor}}/{{corpus}}/supervised/eval.refs.jsonl",
    params:
        preprocess=lambda w: corpus_data.corpus_spec_json(config, w.corpus, corpus_data.preprocessing_spec),
        lang=lambda w: CORPORA[w.corpus]["src"],
        limits=lambda w: esc.compression_set_part(config, "eval")[1],
        unicode_form=config.get("unicode_form", "NFKC"),
        threshold=lambda w: CORPORA[w.corpus]["bpe"].get("vocabulary_threshold", 1),
    log:
        "logs/compression_eval_set/{compressor}/{corpus}.log",
    benchmark:
        "results/benchmarks/compression_eval_set/{compressor}/{corpus}.tsv"
    conda:
        "../envs/data.yaml"
    resources:
        **cpu_job(mem_mb=2000, runtime=30),
    shell:
        "python -m workflow_scripts.data.compression pairs --sets {input.sets:q} --lang {params.lang}"
        " --preprocess {params.preprocess:q} --unicode-form {params.unicode_form} {params.limits}"
        " --codes {input.codes:q} --vocab {input.vocab:q} --threshold {params.threshold}"
        " --src-out {output.src:q} --tgt-out {output.tgt:q} --refs-out {output.refs:q} > {log:q} 2>&1"


rule compressor_config:
    output:
        f"{COMPRESSION}/{{compressor}}/{{corpus}}/experiment.yaml",
    params:
        settings=lambda w: json.dumps(esc.compressor_settings(config, w.compressor), sort_keys=True),
    log:
        "logs/compressor_config/{compressor}/{corpus}.log",
    benchmark:
        "results/benchmarks/compressor_config/{compressor}/{corpus}.tsv"
    conda:
        "../envs/data.yaml"
    resources:
        **cpu_job(mem_mb=200, runtime=5),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.experiment --settings {params.settings:q} --output {output:q} > {log:q} 2>&1"


rule train_compressor:
    input:
        unpack(lambda w: esc.compressor_inputs(config, w.compressor, w.corpus)),
        config=f"{COMPRESSION}/{{compressor}}/{{corpus}}/experiment.yaml",
    output:
        best=f"{COMPRESSION}/{{compressor}}/{{corpus}}/train/checkpoint_best.pt",
        metrics=f"{COMPRESSION}/{{compressor}}/{{corpus}}/train/metrics.csv",
    params:
        out_dir=lambda w, output: os.path.dirname(output.best),
        launcher=cluster.train_launcher(config),
        num_threads=lambda w, threads: cluster.threads_per_process(config, threads),
        init=lambda w, input: f"--init-from {shlex.quote(input.init)}" if "init" in input.keys() else "",
    log:
        "logs/train_compressor/{compressor}/{corpus}.log",
    benchmark:
        "results/benchmarks/train_compressor/{compressor}/{corpus}.tsv"
    conda:
        "../envs/train.yaml"
    priority: CHAIN_PRIORITY
    threads: config["train_resources"].get("cpus", 1)
    resources:
        **train_job(),
    shell:
        "{params.launcher} -m nmtmodels.cli train --restart-on-change --config {input.config:q}"
        " --train-src {input.train_src:q} --train-tgt {input.train_tgt:q}"
        " --valid-src {input.valid_src:q} --valid-tgt {input.valid_tgt:q}"
        " --src-vocab {input.vocab:q} --tgt-vocab {input.vocab:q} {params.init}"
        " --set train.num_threads={params.num_threads} --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule compress:
    input:
        checkpoint=f"{COMPRESSION}/{{compressor}}/{{corpus}}/train/checkpoint_best.pt",
        source=lambda w: esc.compression_source(config, w.compressor, w.corpus, w.split),
    output:
        f"{COMPRESSION}/{{compressor}}/{{corpus}}/compressed/{{split}}.txt",
    params:
        search=lambda w: esc.compressor_decode_flags(config, w.compressor),
    log:
        "logs/compress/{compressor}/{corpus}/{split}.log",
    benchmark:
        "results/benchmarks/compress/{compressor}/{corpus}/{split}.tsv"
    conda:
        "../envs/train.yaml"
    priority: CHAIN_PRIORITY
    threads: config["train_resources"].get("cpus", 1)
    resources:
        **decode_job(),
    shell:
        "OMP_NUM_THREADS={threads} python -m nmtmodels.cli translate --pretokenized --checkpoint {input.checkpoint:q}"
        " --input {input.source:q} --output {output:q} {params.search} --truncate > {log:q} 2>&1"


rule compression_quality:
    input:
        hyp=f"{COMPRESSION}/{{compressor}}/{{corpus}}/compressed/compression_eval.txt",
        refs=f"{COMPRESSION}/{{compressor}}/{{corpus}}/supervised/eval.refs.jsonl",
    output:
        f"{COMPRESSION}/{{compressor}}/{{corpus}}/compression_eval.scores.json",
    log:
        "logs/compression_quality/{compressor}/{corpus}.log",
    benchmark:
        "results/benchmarks/compression_quality/{compressor}/{corpus}.tsv"
    conda:
        "../envs/evaluate.yaml"
    resources:
        **cpu_job(mem_mb=500, runtime=10),
    shell:
        "python -m workflow_scripts.data.compression evaluate --hyp {input.hyp:q} --refs {input.refs:q}"
        " --output {output:q} > {log:q} 2>&1"
