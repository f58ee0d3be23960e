# Corpora: download (or take from the mirror / licensed directory) and extract
# each split of each language to plain text.


rule fetch:
    output:
        "resources/downloads/{corpus}/{download}",
    params:
        spec=lambda w: json.dumps(CORPORA[w.corpus]["downloads"][w.download], sort_keys=True),
    conda:
        "../envs/data.yaml"
    log:
        "logs/fetch/{corpus}/{download}.log",
    benchmark:
        "results/benchmarks/fetch/{corpus}/{download}.tsv"
    resources:
        mem_mb=500,
        runtime=60,
    shell:
        "python -m workflow_scripts.fetch --spec {params.spec:q} --name {wildcards.download:q}"
        " --output {output:q} --mirror-dir={MIRROR:q} --licensed-dir={LICENSED:q} > {log:q} 2>&1"


def _downloads(w):
    names = corpus_specs.downloads_for(CORPORA[w.corpus], w.split, w.lang)
    return [f"resources/downloads/{w.corpus}/{name}" for name in names]


rule extract:
    input:
        _downloads,
    output:
        f"{DATA}/{{corpus}}/raw/{{split}}.{{lang}}",
    params:
        spec=corpus_json(wc.extraction_spec),
        downloads=lambda w: f"resources/downloads/{w.corpus}",
    conda:
        "../envs/data.yaml"
    log:
        "logs/extract/{corpus}/{split}.{lang}.log",
    benchmark:
        "results/benchmarks/extract/{corpus}/{split}.{lang}.tsv"
    resources:
        mem_mb=2000,
        runtime=60,
    shell:
        "python -m workflow_scripts.extract --spec {params.spec:q} --split {wildcards.split}"
        " --lang {wildcards.lang} --downloads-dir {params.downloads:q} --output {output:q} > {log:q} 2>&1"


rule extract_reference:
    input:
        _downloads,
    output:
        f"{DATA}/{{corpus}}/raw/{{split}}.ref{{ref}}.{{lang}}",
    params:
        spec=corpus_json(wc.extraction_spec),
        downloads=lambda w: f"resources/downloads/{w.corpus}",
    conda:
        "../envs/data.yaml"
    log:
        "logs/extract/{corpus}/{split}.ref{ref}.{lang}.log",
    benchmark:
        "results/benchmarks/extract/{corpus}/{split}.ref{ref}.{lang}.tsv"
    resources:
        mem_mb=2000,
        runtime=60,
    shell:
        "python -m workflow_scripts.extract --spec {params.spec:q} --split {wildcards.split}"
        " --lang {wildcards.lang} --ref {wildcards.ref} --downloads-dir {params.downloads:q}"
        " --output {output:q} > {log:q} 2>&1"
