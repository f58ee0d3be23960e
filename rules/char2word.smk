# char2word paper (Johansen et al. 2016), Figures 6-7: attention heat-maps of a few test
# sentences for each character-level experiment (workflow_scripts/analyses/attention_plots.py).

rule attention_plot:
    input:
        checkpoint=paths.BEST_CHECKPOINT,
        source=lambda w: attention_plots.attention_source(config, w.corpus),
    output:
        png=report(
            f"{attention_plots.ATTENTION_ROOT}/{{experiment}}/{{corpus}}.png",
            caption="../report/attention.rst",
            category="Analyses",
            subcategory="Attention (char2word paper, Figures 6-7)",
            labels={"experiment": "{experiment}", "corpus": "{corpus}"},
        ),
        json=f"{attention_plots.ATTENTION_ROOT}/{{experiment}}/{{corpus}}.json",
    params:
        beam=lambda w: runs.experiment_settings(config, w.experiment)["decode"].get("beam", 4),
    conda:
        "../envs/train.yaml"
    log:
        "logs/attention_plot/{experiment}/{corpus}.log",
    benchmark:
        "results/benchmarks/attention_plot/{experiment}/{corpus}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.attention_plots --checkpoint {input.checkpoint:q} --source {input.source:q}"
        " --beam {params.beam} --title '{wildcards.experiment} / {wildcards.corpus}'"
        " --png {output.png:q} --json {output.json:q} > {log:q} 2>&1"
