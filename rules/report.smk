# What the report shows (`snakemake --report`, results/report/): parameter counts and training
# speed, the tidy results table, the papers' tables, score by source length, the results
# summary (its page, summary.html, the first link of report/workflow.rst) and learning curves.
# Layout and configuration keys: workflow_scripts/dag/evaluation.py and workflow_scripts/dag/paths.py.


report: "../report/workflow.rst"


rule model_info:
    input:
        checkpoint=paths.BEST_CHECKPOINT,
        metrics=paths.TRAIN_METRICS,
    output:
        paths.MODEL_INFO,
    conda:
        "../envs/train.yaml"
    log:
        paths.log("model_info"),
    benchmark:
        paths.benchmark("model_info")
    resources:
        **cpu_job(mem_mb=4000, runtime=10),
    shell:
        "python -m workflow_scripts.analyses.model_info --checkpoint {input.checkpoint:q} --metrics {input.metrics:q}"
        " --output {output:q} > {log:q} 2>&1"


rule results_table:
    input:
        ev.report_inputs(config),
    output:
        report(paths.RESULTS_TABLE, caption="../report/results.rst", category="Results"),
    params:
        metadata=json.dumps(ev.report_metadata(config)),
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("results_table"),
    benchmark:
        paths.benchmark("results_table")
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.tables collect --metadata {params.metadata:q} --output {output:q} > {log:q} 2>&1"


rule paper_tables:
    input:
        results=paths.RESULTS_TABLE,
        # a claim's row takes its verdict's marker (workflow_scripts/evaluation/markers.py with_verdicts)
        summary=paths.SUMMARY_JSON,
    output:
        markdown=paths.PAPER_TABLE_MARKDOWN,
        latex=paths.PAPER_TABLE_LATEX,
        html=report(
            paths.PAPER_TABLE_HTML,
            caption="../report/paper_tables.rst",
            category="Paper tables",
            labels={"paper": "{paper}"},
        ),
    wildcard_constraints:
        paper="[A-Za-z0-9_-]+",  # a paper's tables, or your own experiments' table (config `paper:`)
    params:
        marker_test=EVALUATION["marker_test"],
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("paper_tables"),
    benchmark:
        paths.benchmark("paper_tables")
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.tables render --results {input.results:q} --summary {input.summary:q}"
        " --paper {wildcards.paper} --marker-test {params.marker_test} --markdown {output.markdown:q} --latex {output.latex:q}"
        " --html {output.html:q} > {log:q} 2>&1"


rule length_analysis:
    input:
        unpack(lambda w: ev.length_inputs(config, w.corpus, w.test_set)),
    output:
        csv=paths.LENGTH_TABLE,
        png=report(
            paths.LENGTH_PLOT,
            caption="../report/length.rst",
            category="Analyses",
            subcategory="Score by source length",
            labels={"corpus": "{corpus}", "test set": "{test_set}"},
        ),
    params:
        lang=lambda w: CORPORA[w.corpus]["tgt"],
        metric=EVALUATION["length_metric"],
        buckets=" ".join(map(str, EVALUATION["length_buckets"])),
        systems=lambda w, input: " ".join(
            f"--system {name} {shlex.quote(path)}"
            for name, path in zip(ev.length_systems(config, w.corpus), input.systems)
        ),
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("length_analysis"),
    benchmark:
        paths.benchmark("length_analysis")
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.plots length --source {input.source:q} --lang {params.lang}"
        " --metric {params.metric} --ref {input.refs:q} {params.systems} --buckets {params.buckets}"
        " --title '{wildcards.corpus} / {wildcards.test_set}' --csv {output.csv:q} --png {output.png:q} > {log:q} 2>&1"



# The results page (summary.md and .json as HTML, verdicts first: workflow_scripts/evaluation/summary_page.py),
# the report item that report/workflow.rst links to first.
SUMMARY_HTML = paths.SUMMARY_MARKDOWN.removesuffix(".md") + ".html"


rule results_summary:
    input:
        **ev.summary_inputs(config),
    output:
        markdown=paths.SUMMARY_MARKDOWN,
        json=paths.SUMMARY_JSON,
        html=report(SUMMARY_HTML, caption="../report/summary.rst", category="Results"),
    params:
        metadata=json.dumps(ev.report_metadata(config)),
        marker_test=EVALUATION["marker_test"],
        # your own claims (config `claims:`, read and checked at start-up): a parameter, so a changed claim remakes the summary
        own_claims=json.dumps(ev.own_claims(config), sort_keys=True),
        compressors=" ".join(
            "--compressor " + " ".join(shlex.quote(r[k]) for k in ("compressor", "corpus", "test_set", "scores", "source", "compressed"))
            for r in compression.compressor_reports(config)
        ),
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("results_summary"),
    benchmark:
        paths.benchmark("results_summary")
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.summary --metadata {params.metadata:q} --results {input.results:q}"
        " --claims {input.claims:q} --own-claims-json {params.own_claims:q} --run-statistics {input.runs:q} {params.compressors}"
        ' --marker-test {params.marker_test} --configfiles-json "$NMT_WORKFLOW_CONFIG_FILES"'
        " --markdown {output.markdown:q} --json {output.json:q} > {log:q} 2>&1"
        " && python -m workflow_scripts.evaluation.summary_page --json {output.json:q} --markdown {output.markdown:q}"
        " --html {output.html:q} >> {log:q} 2>&1"


rule learning_curves:
    input:
        lambda w: ev.curve_inputs(config, w.corpus),
    output:
        report(
            paths.LEARNING_CURVES,
            caption="../report/curves.rst",
            category="Analyses",
            subcategory="Learning curves",
            labels={"corpus": "{corpus}"},
        ),
    params:
        # character-level runs (loss per character) get a panel of their own
        runs=lambda w, input: " ".join(
            f"--{'char-run' if runs.is_char_level(config, name) else 'run'} {name} {shlex.quote(path)}"
            for name, path in zip(ev.length_systems(config, w.corpus), input)
        ),
    conda:
        "../envs/evaluate.yaml"
    log:
        paths.log("learning_curves"),
    benchmark:
        paths.benchmark("learning_curves")
    resources:
        **cpu_job(mem_mb=1000, runtime=10),
    shell:
        "python -m workflow_scripts.evaluation.curves {params.runs} --title {wildcards.corpus}"
        " --png {output:q} > {log:q} 2>&1"


rule report_tables:
    input:
        ev.report_targets(config),
