# Beam-search decoding of every test set, then subword removal (BPE, SentencePiece or characters) / detokenisation.


rule translate:
    input:
        checkpoint=lambda w: runs.decode_checkpoint(config, w.experiment, w.corpus),
        source=lambda w: sources.source_of_test_set(config, w.experiment, w.corpus, w.test_set),
        extras=lambda w: sources.extra_inputs_of_test_set(config, w.experiment, w.corpus, w.test_set),
    output:
        paths.TRANSLATION,
    params:
        decode=lambda w: runs.experiment_settings(config, w.experiment)["decode"],
        extras=lambda w: sources.extra_input_flags(config, w.experiment, w.corpus, (w.test_set,)),
    log:
        paths.log("translate"),
    benchmark:
        paths.benchmark("translate")
    conda:
        "../envs/train.yaml"
    threads: config["train_resources"]["cpus"]
    resources:
        **decode_job(),
    # The output keeps the model's subwords: the postprocess rule undoes them (nmt-translate would
    # read --tgt-format only with --postprocess, so the command passes neither).
    shell:
        "OMP_NUM_THREADS={threads} python -m nmtmodels.cli translate --pretokenized --checkpoint {input.checkpoint:q}"
        " --input {input.source:q} --output {output:q} --beam {params.decode[beam]}"
        " --lenpen {params.decode[length_penalty]} --max-len-a {params.decode[max_len_a]}"
        " --max-len-b {params.decode[max_len_b]} {params.extras} > {log:q} 2>&1"


rule postprocess:
    input:
        paths.TRANSLATION,
    output:
        tokenized=paths.TOKENIZED_HYPOTHESIS,
        detokenized=paths.HYPOTHESIS,
    params:
        lang=lambda w: CORPORA[w.corpus]["tgt"],
        unit=lambda w: runs.postprocess_flag(config, w.experiment),
    log:
        paths.log("postprocess"),
    benchmark:
        paths.benchmark("postprocess")
    conda:
        "../envs/evaluate.yaml"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "(python -m nmtmodels.cli postprocess --lang {params.lang} {params.unit} --no-detokenize {input:q} {output.tokenized:q}"
        " && python -m nmtmodels.cli postprocess --lang {params.lang} {params.unit} {input:q} {output.detokenized:q}) > {log:q} 2>&1"
