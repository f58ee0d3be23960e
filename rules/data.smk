# Corpora: download (or take from the mirror / licensed directory) and extract
# each split of each language to plain text.


# Downloads run on the submit host: cluster nodes often have no internet access.
localrules:
    fetch,


rule fetch:
    output:
        "resources/downloads/{corpus}/{download}",
    params:
        spec=lambda w: json.dumps(CORPORA[w.corpus]["downloads"][w.download], sort_keys=True),
        mirror=MIRROR,
        licensed=LICENSED,
    conda:
        "../envs/data.yaml"
    log:
        "logs/fetch/{corpus}/{download}.log",
    benchmark:
        "results/benchmarks/fetch/{corpus}/{download}.tsv"
    resources:
        **CPU_JOB,
        mem_mb=500,
        runtime=60,
    shell:
        "python -m workflow_scripts.fetch --spec {params.spec:q} --name {wildcards.download:q}"
        " --output {output:q} --mirror-dir={params.mirror:q} --licensed-dir={params.licensed:q} > {log:q} 2>&1"


rule extract:
    input:
        lambda w: wc.download_paths(config, w.corpus, w.split, w.lang),
    output:
        f"{DATA}/{{corpus}}/raw/{{split}}.{{lang}}",
    params:
        spec=lambda w: wc.corpus_spec_json(config, w.corpus, wc.extraction_spec),
        downloads=lambda w: f"resources/downloads/{w.corpus}",
    conda:
        "../envs/data.yaml"
    log:
        "logs/extract/{corpus}/{split}.{lang}.log",
    benchmark:
        "results/benchmarks/extract/{corpus}/{split}.{lang}.tsv"
    resources:
        **CPU_JOB,
        mem_mb=2000,
        runtime=60,
    shell:
        "python -m workflow_scripts.extract --spec {params.spec:q} --split {wildcards.split}"
        " --lang {wildcards.lang} --downloads-dir {params.downloads:q} --output {output:q} > {log:q} 2>&1"


rule extract_reference:
    input:
        lambda w: wc.download_paths(config, w.corpus, w.split, w.lang),
    output:
        f"{DATA}/{{corpus}}/raw/{{split}}.ref{{ref}}.{{lang}}",
    params:
        spec=lambda w: wc.corpus_spec_json(config, w.corpus, wc.extraction_spec),
        downloads=lambda w: f"resources/downloads/{w.corpus}",
    conda:
        "../envs/data.yaml"
    log:
        "logs/extract/{corpus}/{split}.ref{ref}.{lang}.log",
    benchmark:
        "results/benchmarks/extract/{corpus}/{split}.ref{ref}.{lang}.tsv"
    resources:
        **CPU_JOB,
        mem_mb=2000,
        runtime=60,
    shell:
        "python -m workflow_scripts.extract --spec {params.spec:q} --split {wildcards.split}"
        " --lang {wildcards.lang} --ref {wildcards.ref} --downloads-dir {params.downloads:q}"
        " --output {output:q} > {log:q} 2>&1"
