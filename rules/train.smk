# Model training: one job per (experiment, corpus). The job resumes from
# train/checkpoint_last.pt when it exists (after a kill or a time limit); when the job
# reruns because its inputs or settings changed, that checkpoint belongs to another run and
# the trainer deletes it and starts over (--restart-on-change).


rule experiment_config:
    output:
        paths.EXPERIMENT_YAML,
    params:
        settings=lambda w: json.dumps(runs.experiment_settings(config, w.experiment), sort_keys=True),
    log:
        paths.log("experiment_config"),
    benchmark:
        paths.benchmark("experiment_config")
    conda:
        "../envs/data.yaml"
    resources:
        **cpu_job(mem_mb=200, runtime=5),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.training.experiment_yaml --settings {params.settings:q} --output {output:q} > {log:q} 2>&1"


rule train:
    input:
        unpack(lambda w: sources.model_inputs(config, w.experiment, w.corpus)),
        config=paths.EXPERIMENT_YAML,
    output:
        best=paths.BEST_CHECKPOINT,
        metrics=paths.TRAIN_METRICS,
    params:
        out_dir=lambda w, output: os.path.dirname(output.best),
        launcher=cluster.train_launcher(config),
        num_threads=lambda w, threads: cluster.threads_per_process(config, threads),
        tgt_lang=lambda w: CORPORA[w.corpus]["tgt"],
        tgt_format=lambda w: runs.target_format(config, w.experiment),
        extras=lambda w: sources.extra_input_flags(config, w.experiment, w.corpus, ("train", "dev")),
    log:
        paths.log("train"),
    benchmark:
        paths.benchmark("train")
    conda:
        "../envs/train.yaml"
    # trainings are the long jobs: start each as soon as its data is ready, before the short
    # data and scoring jobs that are ready at the same time (TRAIN_PRIORITY, rules/common.smk)
    priority: TRAIN_PRIORITY
    threads: config["train_resources"]["cpus"]
    resources:
        **train_job(),
    shell:
        "{params.launcher} -m nmtmodels.cli train --restart-on-change --config {input.config:q}"
        " --train-src {input.train_src:q} --train-tgt {input.train_tgt:q}"
        " --valid-src {input.valid_src:q} --valid-tgt {input.valid_tgt:q} --valid-ref {input.valid_ref:q}"
        " --src-vocab {input.src_vocab:q} --tgt-vocab {input.tgt_vocab:q}"
        " --tgt-lang {params.tgt_lang} --tgt-format {params.tgt_format} {params.extras}"
        " --set train.num_threads={params.num_threads} --out-dir {params.out_dir:q} > {log:q} 2>&1"


# The model package (nmtmodels/model_package/): the decoded checkpoint, preprocess.json and the source
# BPE codes or SentencePiece model (a lattice run: its lattice settings and the codes of its BPE sizes; an ESC
# run: also its compressor), so that nmt-translate and nmtmodels.decoding.translator.Translator read raw text.
# Every run of `all` gets one (workflow_scripts/dag/packages.py). Its outputs are two files of the
# package, not directory(...): Snakemake would write its .snakemake_timestamp into the package.
rule model_package:
    input:
        unpack(lambda w: packages.package_inputs(config, w.experiment, w.corpus)),
    output:
        checkpoint=paths.MODEL_PACKAGE_CHECKPOINT,
        settings=paths.MODEL_PACKAGE_SETTINGS,
    params:
        out_dir=lambda w, output: os.path.dirname(output.settings),
        settings=lambda w: packages.package_settings_json(config, w.experiment, w.corpus),
        subword_files=lambda w: packages.package_subword_flags(packages.package_inputs(config, w.experiment, w.corpus)),
    log:
        paths.log("model_package"),
    benchmark:
        paths.benchmark("model_package")
    conda:
        "../envs/train.yaml"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m nmtmodels.cli package --checkpoint {input.checkpoint:q} --settings {params.settings:q} {params.subword_files}"
        " --out-dir {params.out_dir:q} > {log:q} 2>&1"


# experiments.E.average_checkpoints: N decodes (and packages) the parameter average of the
# run's last N numbered checkpoints (workflow_scripts/dag/runs.py decode_checkpoint).
rule average_checkpoints:
    input:
        paths.BEST_CHECKPOINT,  # the training run has finished
    output:
        paths.AVERAGED_CHECKPOINT,
    wildcard_constraints:
        last="[0-9]+",
    params:
        train_dir=lambda w, input: os.path.dirname(input[0]),
    log:
        paths.log("average_checkpoints"),
    benchmark:
        paths.benchmark("average_checkpoints")
    conda:
        "../envs/train.yaml"
    resources:
        **cpu_job(mem_mb=4000, runtime=30),
    shell:
        "python -m nmtmodels.cli average --last {wildcards.last} --dir {params.train_dir:q} --output {output:q} > {log:q} 2>&1"
