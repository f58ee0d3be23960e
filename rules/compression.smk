# Explicit sentence compression (ESC): compression pairs, compressor training, compressed
# ("backbone") source of every split with length-controlled beam search, and compression
# quality (token F1, compression ratio).  Layout: results/compression/{compressor}/{corpus}/.
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
        paths.COMPRESSION_SET,
    params:
        spec=lambda w: json.dumps(COMPRESSION_SECTION["data"][w.compression_set], sort_keys=True),
        source=lambda w: fetch_module.source_fingerprint(
            COMPRESSION_SECTION["data"][w.compression_set], w.compression_set,
            paths.compression_set_path(w.compression_set), mirror_dir=MIRROR, licensed_dir=LICENSED,
        ),
    conda:
        "../envs/data.yaml"
    log:
        paths.log("fetch_compression_set"),
    benchmark:
        paths.benchmark("fetch_compression_set")
    resources:
        **cpu_job(mem_mb=500, runtime=30),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.fetch --spec {params.spec:q} --name {wildcards.compression_set:q}"
        " --output {output:q} > {log:q} 2>&1"


rule compression_denoise_pairs:
    input:
        unpack(lambda w: compression.compressor_bpe_files(config, w.compressor, w.corpus)),
        text=lambda w: paths.tokenized(corpus=w.corpus, split=w.split, **paths.sides(CORPORA[w.corpus]), lang=CORPORA[w.corpus]["src"]),
    output:
        src=paths.DENOISE_SOURCE,
        tgt=paths.DENOISE_TARGET,
    params:
        noise=lambda w: compression.compressor_spec(config, w.compressor)["noise"],  # defaults: the schema
        threshold=lambda w: CORPORA[w.corpus]["bpe"]["vocabulary_threshold"],
    log:
        paths.log("compression_denoise_pairs"),
    benchmark:
        paths.benchmark("compression_denoise_pairs")
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
        unpack(lambda w: compression.compressor_bpe_files(config, w.compressor, w.corpus)),
        sets=lambda w: [paths.compression_set_path(name) for name in compression.compression_set_part(config, w.part)[0]],
    output:
        src=paths.SUPERVISED_SOURCE,
        tgt=paths.SUPERVISED_TARGET,
    params:
        preprocess=lambda w: corpus_data.corpus_spec_json(config, w.corpus, corpus_data.preprocessing_spec),
        lang=lambda w: CORPORA[w.corpus]["src"],
        limits=lambda w: compression.compression_set_part(config, w.part)[1],
        unicode_form=config["unicode_form"],
        threshold=lambda w: CORPORA[w.corpus]["bpe"]["vocabulary_threshold"],
    wildcard_constraints:
        part="train|dev",
    log:
        paths.log("compression_supervised_pairs"),
    benchmark:
        paths.benchmark("compression_supervised_pairs")
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
        unpack(lambda w: compression.compressor_bpe_files(config, w.compressor, w.corpus)),
        sets=lambda w: [paths.compression_set_path(name) for name in compression.compression_set_part(config, "eval")[0]],
    output:
        src=paths.fill(paths.SUPERVISED_SOURCE, part="eval"),
        tgt=paths.fill(paths.SUPERVISED_TARGET, part="eval"),
        refs=paths.COMPRESSION_REFERENCES,
    params:
        preprocess=lambda w: corpus_data.corpus_spec_json(config, w.corpus, corpus_data.preprocessing_spec),
        lang=lambda w: CORPORA[w.corpus]["src"],
        limits=lambda w: compression.compression_set_part(config, "eval")[1],
        unicode_form=config["unicode_form"],
        threshold=lambda w: CORPORA[w.corpus]["bpe"]["vocabulary_threshold"],
    log:
        paths.log("compression_eval_set"),
    benchmark:
        paths.benchmark("compression_eval_set")
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
        paths.COMPRESSOR_YAML,
    params:
        settings=lambda w: json.dumps(compression.compressor_settings(config, w.compressor), sort_keys=True),
    log:
        paths.log("compressor_config"),
    benchmark:
        paths.benchmark("compressor_config")
    conda:
        "../envs/data.yaml"
    resources:
        **cpu_job(mem_mb=200, runtime=5),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.training.experiment_yaml --settings {params.settings:q} --output {output:q} > {log:q} 2>&1"


rule train_compressor:
    input:
        unpack(lambda w: compression.compressor_inputs(config, w.compressor, w.corpus)),
        config=paths.COMPRESSOR_YAML,
    output:
        best=paths.COMPRESSOR_CHECKPOINT,
        metrics=paths.COMPRESSOR_METRICS,
    params:
        out_dir=lambda w, output: os.path.dirname(output.best),
        launcher=cluster.train_launcher(config),
        num_threads=lambda w, threads: cluster.threads_per_process(config, threads),
        init=lambda w, input: f"--init-from {shlex.quote(input.init)}" if "init" in input.keys() else "",
    log:
        paths.log("train_compressor"),
    benchmark:
        paths.benchmark("train_compressor")
    conda:
        "../envs/train.yaml"
    priority: CHAIN_PRIORITY
    threads: config["train_resources"]["cpus"]
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
        checkpoint=paths.COMPRESSOR_CHECKPOINT,
        source=lambda w: compression.compression_source(config, w.compressor, w.corpus, w.split),
    output:
        paths.COMPRESSED,
    wildcard_constraints:
        compressor=compression.learned_pattern(config),
    params:
        search=lambda w: compression.compressor_decode_flags(config, w.compressor),
    log:
        paths.log("compress"),
    benchmark:
        paths.benchmark("compress")
    conda:
        "../envs/train.yaml"
    priority: CHAIN_PRIORITY
    threads: config["train_resources"]["cpus"]
    resources:
        **decode_job(),
    shell:
        "OMP_NUM_THREADS={threads} python -m nmtmodels.cli translate --pretokenized --checkpoint {input.checkpoint:q}"
        " --input {input.source:q} --output {output:q} {params.search} --truncate > {log:q} 2>&1"


# The random-deletion control of a learned compressor (kind: random_deletion): line by line,
# random source words, as many as the learned compressor `lengths_of` kept.
rule random_delete:
    input:
        unpack(lambda w: compression.random_deletion_inputs(config, w.compressor, w.corpus, w.split)),
    output:
        paths.COMPRESSED,
    wildcard_constraints:
        compressor=compression.random_deletion_pattern(config),
    params:
        seed=lambda w: compression.compressor_spec(config, w.compressor).get("seed", 1),
    log:
        paths.log("random_delete"),
    benchmark:
        paths.benchmark("random_delete")
    conda:
        "../envs/data.yaml"
    priority: CHAIN_PRIORITY
    resources:
        **cpu_job(mem_mb=500, runtime=10),
    shell:
        "python -m workflow_scripts.data.compression random-delete --source {input.source:q}"
        " --lengths-from {input.lengths:q} --seed {params.seed} --output {output:q} > {log:q} 2>&1"


rule compression_quality:
    input:
        hyp=paths.fill(paths.COMPRESSED, split="compression_eval"),
        refs=paths.COMPRESSION_REFERENCES,
    output:
        paths.COMPRESSION_SCORES,
    log:
        paths.log("compression_quality"),
    benchmark:
        paths.benchmark("compression_quality")
    conda:
        "../envs/evaluate.yaml"
    resources:
        **cpu_job(mem_mb=500, runtime=10),
    shell:
        "python -m workflow_scripts.data.compression evaluate --hyp {input.hyp:q} --refs {input.refs:q}"
        " --output {output:q} > {log:q} 2>&1"
