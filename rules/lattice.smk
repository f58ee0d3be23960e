# Lattice-based Transformer (Xiao et al. 2019): word/subword lattices of the source side
# (workflow_scripts/data/lattice.py) and their model inputs: edge tokens, starts, ends, vocabulary.
# {lattice} names the packed segmentations, e.g. jieba+thulac+snownlp or bpe2000+bpe4000+bpe8000.

from workflow_scripts.data.lattice import paper_position_unit


rule lattice:
    input:
        lambda w: lattices.segmentation_paths(config, w.corpus, w.lattice, w.split),
    output:
        f"{DATA}/{{corpus}}/lattice/{{lattice}}/{{split}}.{{src}}-{{tgt}}.lattice",
    conda:
        "../envs/data.yaml"
    log:
        "logs/lattice/{corpus}/{lattice}/{split}.{src}-{tgt}.log",
    benchmark:
        "results/benchmarks/lattice/{corpus}/{lattice}/{split}.{src}-{tgt}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.lattice build --inputs {input:q} --output {output:q} > {log:q} 2>&1"


rule lattice_inputs:
    input:
        f"{DATA}/{{corpus}}/lattice/{{lattice}}/{{split}}.{{src}}-{{tgt}}.lattice",
    output:
        tokens=f"{DATA}/{{corpus}}/lattice/{{lattice}}/{{split}}.{{src}}-{{tgt}}.{{src}}",
        starts=f"{DATA}/{{corpus}}/lattice/{{lattice}}/{{split}}.{{src}}-{{tgt}}.starts",
        ends=f"{DATA}/{{corpus}}/lattice/{{lattice}}/{{split}}.{{src}}-{{tgt}}.ends",
    wildcard_constraints:
        split=r"(?!vocab\.)[A-Za-z0-9_-]+",
    params:
        # LPE counts minimum subword units in a subword lattice, characters in a word lattice (footnote 1)
        position_unit=lambda w: paper_position_unit(w.lattice.split("+")),
    conda:
        "../envs/data.yaml"
    log:
        "logs/lattice_inputs/{corpus}/{lattice}/{split}.{src}-{tgt}.log",
    benchmark:
        "results/benchmarks/lattice_inputs/{corpus}/{lattice}/{split}.{src}-{tgt}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=30),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.lattice inputs --lattice {input:q} --position-unit {params.position_unit}"
        " --tokens {output.tokens:q}"
        " --starts {output.starts:q} --ends {output.ends:q} > {log:q} 2>&1"


rule lattice_vocab:
    input:
        f"{DATA}/{{corpus}}/lattice/{{lattice}}/train.{{src}}-{{tgt}}.{{src}}",
    output:
        f"{DATA}/{{corpus}}/lattice/{{lattice}}/vocab.{{src}}-{{tgt}}.{{src}}",
    params:
        max_size=lambda w: f"--max-size {config['lattice_vocab_size']}" if config.get("lattice_vocab_size") else "",
    conda:
        "../envs/train.yaml"
    log:
        "logs/lattice_vocab/{corpus}/{lattice}/{src}-{tgt}.log",
    benchmark:
        "results/benchmarks/lattice_vocab/{corpus}/{lattice}/{src}-{tgt}.tsv"
    resources:
        **cpu_job(mem_mb=2000, runtime=30),
    priority: DATA_PRIORITY
    shell:
        "python -m nmtmodels.cli vocab --inputs {input:q} {params.max_size} --output {output:q} > {log:q} 2>&1"
