"""Structure-aware NMT: from raw corpora to paper tables.

    snakemake --cores 2 all                       # embedded default (small corpora, CPU)
    snakemake -n all --configfile configs/full.yaml --config require_licensed_data=False
                                                  # paper-scale plan, licensed files absent
    snakemake --profile slurm all                 # on a SLURM cluster

The DAG (see README "Layout"): download -> extract -> normalise/tokenise/clean ->
segment -> BPE / SentencePiece / characters -> (models, decoding, scoring in later rule files; ESC
compressors and compressed sources in rules/compress.smk).
"""
import json
import os
import shlex

from snakemake.utils import min_version, validate

from workflow_scripts.dag import evaluation as ev
from workflow_scripts.dag import analyses, checks, cluster, corpus_data, esc, gpu_parts, keys, lattices, packages, paths
from workflow_scripts.dag import runs, seeds, sources

min_version("9.0")


configfile: os.path.join(workflow.basedir, "config.yaml")


keys.check_keys(config, os.path.join(workflow.basedir, "schemas/config.schema.yaml"))  # misspelt keys: one line
checks.check_subword_values(config)  # bad sentencepiece values and subwords names: one line too
validate(config, "schemas/config.schema.yaml")
seeds.expand_seeds(config)  # experiments.X.seeds: X, X_seed<b>, ... (one run per seed), before the checks
# Cross-references the schema cannot see; cluster jobs re-read this file, so the checks that
# import torch or look at licensed files run in the main process only.
checks.check(config, os.environ, main_process=workflow.is_main_process)

CORPORA = config["corpora"]
MIRROR, LICENSED = corpus_data.input_dirs(config, os.environ)
os.environ.update(corpus_data.input_dir_environment(config, os.environ))  # fetch reads them: no rule params
# Cluster placement of jobs without GPUs under `--profile slurm` (config `cluster`,
# docs/cluster.md); every rule's resources include it.  Local runs ignore it.
CPU_JOB = cluster.cluster_resources(config)


# Jobs run `python -m workflow_scripts.*` / `nmtmodels.*` from any environment (conda,
# cluster node) without installing the project: put the repository on their path.
os.environ.update(PYTHONPATH=cluster.python_path_with(workflow.basedir, os.environ))


wildcard_constraints:
    corpus="[A-Za-z0-9_-]+",
    split="[A-Za-z0-9_-]+",
    download="[A-Za-z0-9_.+-]+",
    lang="[a-z]{2,3}",
    src="[a-z]{2,3}",
    tgt="[a-z]{2,3}",
    ref="[1-9][0-9]*",
    merges="[0-9]+",
    segmenter="[a-z]+",
    experiment="[A-Za-z0-9_-]+",
    test_set="[A-Za-z0-9_-]+",
    lattice=r"[a-z0-9]+(\+[a-z0-9]+)*",


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/preprocess.smk"
include: "rules/subwords.smk"
include: "rules/train.smk"
include: "rules/compress.smk"
include: "rules/decode.smk"
include: "rules/evaluate.smk"
include: "rules/report.smk"
include: "rules/lattice.smk"
include: "rules/analyses.smk"
include: "rules/gpu.smk"


rule all:
    default_target: True
    input:
        corpus_data.data_targets(config),
        runs.model_targets(config),
        sources.oov_targets(config),
        packages.package_targets(config),
        esc.compression_targets(config),
        ev.report_targets(config),
        analyses.attention_targets(config),
        analyses.swap_noise_targets(config),
        analyses.graph_targets(config),


rule data:
    input:
        corpus_data.data_targets(config),
