# Corpora: download (or take from the mirror / licensed directory) and extract
# each split of each language to plain text.


# Downloads run on the submit host: cluster nodes often have no internet access.
localrules:
    fetch,


# Where data lies (data_mirror, licensed_data_dir) is no parameter: fetch reads it from the
# environment (NMT_DATA_MIRROR, NMT_LICENSED_DATA, exported by the Snakefile), so moving the
# data reruns nothing.  `source` changes only when the content of a download without sha256
# changed at its mirror or licensed path (workflow_scripts.data.fetch.source_fingerprint).
rule fetch:
    output:
        paths.DOWNLOAD,
    params:
        spec=lambda w: json.dumps(CORPORA[w.corpus]["downloads"][w.download], sort_keys=True),
        source=lambda w: fetch_module.source_fingerprint(
            CORPORA[w.corpus]["downloads"][w.download], w.download, paths.download_path(w.corpus, w.download),
            mirror_dir=MIRROR, licensed_dir=LICENSED,
        ),
    conda:
        "../envs/data.yaml"
    log:
        paths.log("fetch"),
    benchmark:
        paths.benchmark("fetch")
    resources:
        **cpu_job(mem_mb=500, runtime=60),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.fetch --spec {params.spec:q} --name {wildcards.download:q}"
        " --output {output:q} > {log:q} 2>&1"


rule extract:
    input:
        lambda w: corpus_data.download_paths(config, w.corpus, w.split, w.lang),
    output:
        paths.RAW,
    params:
        spec=lambda w: corpus_data.split_extraction_spec_json(config, w.corpus, w.split),
        downloads=lambda w: paths.download_dir(w.corpus),
    conda:
        "../envs/data.yaml"
    log:
        paths.log("extract"),
    benchmark:
        paths.benchmark("extract")
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.extract --spec {params.spec:q} --split {wildcards.split}"
        " --lang {wildcards.lang} --downloads-dir {params.downloads:q} --output {output:q} > {log:q} 2>&1"


rule extract_reference:
    input:
        lambda w: corpus_data.download_paths(config, w.corpus, w.split, w.lang),
    output:
        paths.RAW_REFERENCE,
    params:
        spec=lambda w: corpus_data.split_extraction_spec_json(config, w.corpus, w.split),
        downloads=lambda w: paths.download_dir(w.corpus),
    conda:
        "../envs/data.yaml"
    log:
        paths.log("extract_reference"),
    benchmark:
        paths.benchmark("extract_reference")
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.extract --spec {params.spec:q} --split {wildcards.split}"
        " --lang {wildcards.lang} --ref {wildcards.ref} --downloads-dir {params.downloads:q}"
        " --output {output:q} > {log:q} 2>&1"
