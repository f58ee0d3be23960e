# Graph-Transformer paper (Duan et al.), Figure 5: high-order gate weight by source length per
# encoder layer; Figure 6: score against the number of encoder layers (experiments sharing a
# `layers_plot` series).  Figure 4 is the shared length analysis (rules/report.smk).
# Logic and layout: workflow_scripts/analyses/graph_analyses.py.


rule graph_gate_weights:
    input:
        unpack(lambda w: graph_analyses.gate_inputs(config, w.experiment, w.corpus, w.test_set)),
    output:
        csv=f"{graph_analyses.GRAPH_ROOT}/gates/{{experiment}}/{{corpus}}/{{test_set}}.csv",
        png=report(
            f"{graph_analyses.GRAPH_ROOT}/gates/{{experiment}}/{{corpus}}/{{test_set}}.png",
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
        "logs/graph_gate_weights/{experiment}/{corpus}/{test_set}.log",
    benchmark:
        "results/benchmarks/graph_gate_weights/{experiment}/{corpus}/{test_set}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.graph_analyses gates --checkpoint {input.checkpoint:q} --source {input.source:q}"
        " --tokenized {input.tokenized:q} --buckets {params.buckets} --title '{wildcards.experiment} / {wildcards.corpus}'"
        " --csv {output.csv:q} --png {output.png:q} > {log:q} 2>&1"


rule graph_layers:
    input:
        lambda w: [path for _, _, path in graph_analyses.layer_points(config, w.corpus, w.test_set)],
    output:
        csv=f"{graph_analyses.GRAPH_ROOT}/layers/{{corpus}}/{{test_set}}.csv",
        png=report(
            f"{graph_analyses.GRAPH_ROOT}/layers/{{corpus}}/{{test_set}}.png",
            caption="../report/graph_layers.rst",
            category="Analyses",
            subcategory="Score by number of layers (Graph-Transformer, Figure 6)",
            labels={"corpus": "{corpus}", "test set": "{test_set}"},
        ),
    params:
        points=lambda w: " ".join(
            f"--point {shlex.quote(series)} {layers} {shlex.quote(path)}"
            for series, layers, path in graph_analyses.layer_points(config, w.corpus, w.test_set)
        ),
        metric=EVALUATION["length_metric"],
    conda:
        "../envs/evaluate.yaml"
    log:
        "logs/graph_layers/{corpus}/{test_set}.log",
    benchmark:
        "results/benchmarks/graph_layers/{corpus}/{test_set}.tsv"
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.graph_analyses layers {params.points} --metric {params.metric}"
        " --title '{wildcards.corpus} / {wildcards.test_set}' --csv {output.csv:q} --png {output.png:q} > {log:q} 2>&1"
