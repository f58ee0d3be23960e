# The papers' analyses beyond their main tables, each in the report's "Analyses":
# - char2word paper (Johansen et al. 2016), Figures 6-7: attention heat-maps of a few test
#   sentences for each character-level experiment;
# - Graph-Transformer paper (Duan et al.), Figure 5: high-order gate weight by source length per
#   encoder layer; Figure 6: score against the number of encoder layers (experiments sharing a
#   `layers_plot` series).  Figure 4 is the shared length analysis (rules/report.smk);
# - reordering-embeddings paper, Figures 3-5: BLEU on test sets with a percentage of source words
#   swapped (config `swap_noise`).  The noisy source is BPE-encoded, decoded, post-processed and
#   scored by the rules of subwords.smk, decode.smk and evaluate.smk; 0% is the plain test set.
# Which runs are analysed: workflow_scripts/dag/analyses.py; the jobs: workflow_scripts/analyses/.


# ----------------------------------------------------------------------------- attention (char2word)
rule attention_plot:
    input:
        checkpoint=paths.BEST_CHECKPOINT,
        source=lambda w: analyses.attention_source(config, w.corpus),
    output:
        png=report(
            paths.ATTENTION_PLOT,
            caption="../report/attention.rst",
            category="Analyses",
            subcategory="Attention (char2word paper, Figures 6-7)",
            labels={"experiment": "{experiment}", "corpus": "{corpus}"},
        ),
        json=paths.ATTENTION_WEIGHTS,
    params:
        beam=lambda w: runs.experiment_settings(config, w.experiment)["decode"]["beam"],
    conda:
        "../envs/train.yaml"
    log:
        paths.log("attention_plot"),
    benchmark:
        paths.benchmark("attention_plot")
    resources:
        **cpu_job(mem_mb=2000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.attention_plots --checkpoint {input.checkpoint:q} --source {input.source:q}"
        " --beam {params.beam} --title '{wildcards.experiment} / {wildcards.corpus}'"
        " --png {output.png:q} --json {output.json:q} > {log:q} 2>&1"


# ----------------------------------------------------------------------------- Graph-Transformer
rule graph_gate_weights:
    input:
        unpack(lambda w: analyses.gate_inputs(config, w.experiment, w.corpus, w.test_set)),
    output:
        csv=paths.GATE_TABLE,
        png=report(
            paths.GATE_PLOT,
            caption="../report/graph_gates.rst",
            category="Analyses",
            subcategory="High-order gate weight by length (Graph-Transformer, Figure 5)",
            labels={"experiment": "{experiment}", "corpus": "{corpus}", "test set": "{test_set}"},
        ),
    params:
        buckets=" ".join(map(str, EVALUATION["length_buckets"])),
    conda:
        "../envs/train.yaml"
    log:
        paths.log("graph_gate_weights"),
    benchmark:
        paths.benchmark("graph_gate_weights")
    resources:
        **cpu_job(mem_mb=2000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.graph_analyses gates --checkpoint {input.checkpoint:q} --source {input.source:q}"
        " --tokenized {input.tokenized:q} --buckets {params.buckets} --title '{wildcards.experiment} / {wildcards.corpus}'"
        " --csv {output.csv:q} --png {output.png:q} > {log:q} 2>&1"


rule graph_layers:
    input:
        lambda w: [path for _, _, path in analyses.layer_points(config, w.corpus, w.test_set)],
    output:
        csv=paths.LAYERS_TABLE,
        png=report(
            paths.LAYERS_PLOT,
            caption="../report/graph_layers.rst",
            category="Analyses",
            subcategory="Score by number of layers (Graph-Transformer, Figure 6)",
            labels={"corpus": "{corpus}", "test set": "{test_set}"},
        ),
    params:
        points=lambda w: " ".join(
            f"--point {shlex.quote(series)} {layers} {shlex.quote(path)}"
            for series, layers, path in analyses.layer_points(config, w.corpus, w.test_set)
        ),
        metric=EVALUATION["length_metric"],
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("graph_layers"),
    benchmark:
        paths.benchmark("graph_layers")
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.graph_analyses layers {params.points} --metric {params.metric}"
        " --title '{wildcards.corpus} / {wildcards.test_set}' --csv {output.csv:q} --png {output.png:q} > {log:q} 2>&1"


# ----------------------------------------------------------------------------- swap noise (reordering)
rule swap_noise_source:
    input:
        paths.tokenized(split="{test_set}", lang="{src}"),
    output:
        paths.fill(paths.NOISY_SOURCE, units=paths.TOKENIZED_UNITS, lang="{src}"),
    wildcard_constraints:
        percent="[0-9]+",
    params:
        seed=analyses.swap_noise_settings(config)["seed"],
    conda:
        "../envs/data.yaml"
    log:
        paths.log("swap_noise_source"),
    benchmark:
        paths.benchmark("swap_noise_source")
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.swap_noise noise --input {input:q} --output {output:q}"
        " --percent {wildcards.percent} --seed {params.seed} > {log:q} 2>&1"


use rule apply_bpe as swap_noise_bpe with:
    input:
        text=paths.fill(paths.NOISY_SOURCE, units=paths.TOKENIZED_UNITS),
        codes=paths.codes(units=paths.BPE_UNITS),
        vocab=paths.vocab(units=paths.BPE_UNITS),
    output:
        paths.fill(paths.NOISY_SOURCE, units=paths.BPE_UNITS),
    wildcard_constraints:
        percent="[0-9]+",
    threads: 1
    log:
        paths.log("swap_noise_bpe"),
    benchmark:
        paths.benchmark("swap_noise_bpe")


use rule translate as translate_swap_noise with:
    input:
        checkpoint=lambda w: runs.decode_checkpoint(config, w.experiment, w.corpus),
        source=lambda w: analyses.noisy_experiment_source(config, w.experiment, w.corpus, w.test_set, w.percent),
        extras=[],
    output:
        paths.fill(paths.TRANSLATION, test_set=paths.NOISY_SET),
    wildcard_constraints:
        percent="[0-9]+",
    log:
        paths.log("translate_swap_noise"),
    benchmark:
        paths.benchmark("translate_swap_noise")


use rule postprocess as postprocess_swap_noise with:
    input:
        paths.fill(paths.TRANSLATION, test_set=paths.NOISY_SET),
    output:
        tokenized=paths.fill(paths.TOKENIZED_HYPOTHESIS, test_set=paths.NOISY_SET),
        detokenized=paths.fill(paths.HYPOTHESIS, test_set=paths.NOISY_SET),
    wildcard_constraints:
        percent="[0-9]+",
    log:
        paths.log("postprocess_swap_noise"),
    benchmark:
        paths.benchmark("postprocess_swap_noise")


use rule score as score_swap_noise with:
    input:
        hyp=paths.fill(paths.HYPOTHESIS, test_set=paths.NOISY_SET),
        tok_hyp=paths.fill(paths.TOKENIZED_HYPOTHESIS, test_set=paths.NOISY_SET),
        refs=lambda w: corpus_data.reference_paths(config, w.corpus, w.test_set),
        tok_refs=lambda w: corpus_data.tokenized_references(config, w.corpus, w.test_set),
    output:
        paths.fill(paths.SCORES, test_set=paths.NOISY_SET),
    wildcard_constraints:
        percent="[0-9]+",
    log:
        paths.log("score_swap_noise"),
    benchmark:
        paths.benchmark("score_swap_noise")


rule swap_noise_report:
    input:
        lambda w: analyses.swap_noise_report_inputs(config, w.corpus),
    output:
        csv=paths.SWAP_NOISE_TABLE,
        markdown=paths.SWAP_NOISE_MARKDOWN,
        png=report(
            paths.SWAP_NOISE_PLOT,
            caption="../report/swap_noise.rst",
            category="Analyses",
            subcategory="Swap noise (reordering paper, Figures 3-5)",
            labels={"corpus": "{corpus}", "test set": "{test_set}"},
        ),
    params:
        arguments=lambda w: analyses.swap_noise_report_arguments(config, w.corpus),
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("swap_noise_report"),
    benchmark:
        paths.benchmark("swap_noise_report")
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.swap_noise report {params.arguments} --title '{wildcards.corpus} / {wildcards.test_set}'"
        " --csv {output.csv:q} --markdown {output.markdown:q} --png {output.png:q} > {log:q} 2>&1"
