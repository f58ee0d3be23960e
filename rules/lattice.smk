# Lattice-based Transformer (Xiao et al. 2019): word/subword lattices of the source side
# (workflow_scripts/data/lattice.py) and their model inputs: edge tokens, starts, ends, vocabulary.
# {lattice} names the packed segmentations, e.g. jieba+thulac+snownlp or bpe2000+bpe4000+bpe8000.

from nmtmodels.text.lattice import paper_position_unit


rule lattice:
    input:
        lambda w: lattices.segmentation_paths(config, w.corpus, w.lattice, w.split),
    output:
        paths.LATTICE,
    conda:
        "../envs/data.yaml"
    log:
        paths.log("lattice"),
    benchmark:
        paths.benchmark("lattice")
    resources:
        **cpu_job(mem_mb=2000, runtime=60),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.lattice build --inputs {input:q} --output {output:q} > {log:q} 2>&1"


rule lattice_inputs:
    input:
        paths.LATTICE,
    output:
        tokens=paths.encoded(units=paths.LATTICE_UNITS, lang="{src}"),
        starts=paths.encoded(units=paths.LATTICE_UNITS, lang="starts"),
        ends=paths.encoded(units=paths.LATTICE_UNITS, lang="ends"),
    wildcard_constraints:
        split=r"(?!vocab\.)[A-Za-z0-9_-]+",
    params:
        # LPE counts minimum subword units in a subword lattice, characters in a word lattice (footnote 1)
        position_unit=lambda w: paper_position_unit(w.lattice.split("+")),
    conda:
        "../envs/data.yaml"
    log:
        paths.log("lattice_inputs"),
    benchmark:
        paths.benchmark("lattice_inputs")
    resources:
        **cpu_job(mem_mb=2000, runtime=30),
    priority: DATA_PRIORITY
    shell:
        "python -m workflow_scripts.data.lattice inputs --lattice {input:q} --position-unit {params.position_unit}"
        " --tokens {output.tokens:q}"
        " --starts {output.starts:q} --ends {output.ends:q} > {log:q} 2>&1"


rule lattice_vocab:
    input:
        paths.encoded(units=paths.LATTICE_UNITS, split="train", lang="{src}"),
    output:
        paths.vocab(units=paths.LATTICE_UNITS, lang="{src}"),
    params:
        max_size=lambda w: f"--max-size {config['lattice_vocab_size']}" if config["lattice_vocab_size"] else "",
    conda:
        "../envs/train.yaml"
    log:
        paths.log("lattice_vocab"),
    benchmark:
        paths.benchmark("lattice_vocab")
    resources:
        **cpu_job(mem_mb=2000, runtime=30),
    priority: DATA_PRIORITY
    shell:
        "python -m nmtmodels.cli vocab --inputs {input:q} {params.max_size} --output {output:q} > {log:q} 2>&1"
