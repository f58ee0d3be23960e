"""Structure-aware NMT: from raw corpora to paper tables.

    snakemake --cores 2 all                       # embedded default (small corpora, CPU)
    snakemake -n all --configfile configs/full.yaml --config require_licensed_data=False
                                                  # paper-scale plan, licensed files absent
    snakemake --profile slurm all                 # on a SLURM cluster

The DAG (see README "Layout"): download -> extract -> normalise/tokenise/clean ->
segment -> BPE / SentencePiece / characters -> (models, decoding, scoring in later rule files; ESC
compressors and compressed sources in rules/compression.smk).
"""
import json
import os
import shlex
import sys

from snakemake.logging import logger
from snakemake.utils import min_version, validate

from workflow_scripts.dag import evaluation as ev
from workflow_scripts.dag import analyses, checks, cluster, compression, corpus_data, gpu_parts, keys, lattices, packages, paths
from workflow_scripts.dag import future_dates, runs, scheduler_timers, seeds, sources, startup
from workflow_scripts.data.fetch import unchanged_fetch_time  # the job module's digest record, for future_dates
from workflow_scripts.evaluation import claim_files  # the claims' one-line check, at start-up
from workflow_scripts.evaluation import progress  # trainings done and time left, printed as the run goes

min_version("9.0")
# At most one re-evaluation timer in Snakemake's scheduler, not one more per finished job
# (workflow_scripts/dag/scheduler_timers.py; docs/cluster.md, "Snakemake's own CPU").
scheduler_timers.install()


configfile: os.path.join(workflow.basedir, "config.yaml")


# A config error is one line, `error: KEY: ...` on stderr, exit status 1 (no Python frames).
with startup.one_line_errors():
    keys.check_keys(config, os.path.join(workflow.basedir, "schemas/config.schema.yaml"))  # misspelt keys: one line
    # user_modules of every config file, joined (the one list that layered config files do not replace)
    config["user_modules"] = cluster.joined_user_modules(config, workflow.configfiles)
    checks.check_subword_values(config)  # bad sentencepiece values and subwords names: one line too
    validate(config, "schemas/config.schema.yaml")
    seeds.expand_seeds(config)  # experiments.X.seeds: X, X_seed<b>, ... (one run per seed), before the checks
    # Model families from outside the package (config user_modules): every job and the checks import them.
    os.environ.update(cluster.user_modules_variable(config, os.environ, os.getcwd(), workflow.basedir))
    if workflow.is_main_process:  # a missing or broken one: one line naming user_modules[N] and the file
        cluster.check_user_modules(config, os.getcwd(), workflow.basedir)
    # Cross-references the schema cannot see; cluster jobs re-read this file, so the checks that
    # import torch or look at licensed files run in the main process only.
    checks.check(config, os.environ, main_process=workflow.is_main_process)
    # The papers' claims and your own (config `claims:`, inline or a file; their controls join the
    # DAG, evaluation.claim_controls): checked once, in one line naming the file or key and the
    # claim, before any job (the summary job checks them again); config["claims"] holds yours, read.
    config["claims"] = claim_files.checked_own_claims(config, claim_files.read_claims(paths.CLAIMS), os.getcwd(),
                                                      workflow.basedir, ev.evaluation_settings(config)["significance_metrics"])
if workflow.is_main_process:  # after a killed run: `--unlock`, then `--rerun-incomplete`, said at once
    startup.show_killed_run_hint(".snakemake")
    # `--report FILE` in a directory it cannot write (a read-only results/): one line now, not
    # Snakemake's traceback after the whole report was built
    startup.check_report_path(sys.argv[1:])
# Downloads and raw files dated in the future (clock skew): unchanged downloads dated back, a warning for the rest.
future_dates.check_future_dates(unchanged_fetch_time, main_process=workflow.is_main_process)

CORPORA = config["corpora"]
MIRROR, LICENSED = corpus_data.input_dirs(config, os.environ)
os.environ.update(corpus_data.input_dir_environment(config, os.environ))  # fetch reads them: no rule params
# Cluster placement of jobs without GPUs under `--profile slurm` (config `cluster`,
# docs/cluster.md); every rule's resources include it.  Local runs ignore it.
CPU_JOB = cluster.cluster_resources(config)


# Jobs run `python -m workflow_scripts.*` / `nmtmodels.*` from any environment (conda,
# cluster node) without installing the project: put the repository on their path.
os.environ.update(PYTHONPATH=cluster.python_path_with(workflow.basedir, os.environ))
# ... and run the interpreter that runs Snakemake (its venv need not be on PATH), unless a
# deployment method (conda, apptainer) gives the rules their own environments.
os.environ.update(PATH=cluster.path_with_interpreter(sys.executable, os.environ, bool(workflow.deployment_settings.deployment_method)))
# A training still running from a killed Snakemake holds its directory's lock: the rerun's job
# waits for it and resumes from its checkpoints instead of failing (nmt-train --wait-for-lock).
os.environ.update(NMT_TRAIN_WAIT_FOR_LOCK="1")
# A diverged training ends as diverged instead of failing its job (nmt-train --on-divergence stop):
# its best checkpoint is marked, the summary is still made and says so, and the line that says why
# is repeated on the console when the run ends (docs/faults.md, "Runs that collide or stop").
os.environ.update(NMT_TRAIN_ON_DIVERGENCE="stop")


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
include: "rules/compression.smk"
include: "rules/decode.smk"
include: "rules/evaluate.smk"
include: "rules/report.smk"
include: "rules/lattice.smk"
include: "rules/analyses.smk"
include: "rules/gpu.smk"


onstart:
    # Jobs are about to run (not on -n): a results, logs or downloads directory they cannot write
    # is one line naming it, before any job starts (not Snakemake's failure inside the first job).
    startup.check_writable(startup.planned_files(workflow))
    # `python -m workflow_scripts.evaluation.progress` (trainings done, time left) on stderr now
    # and after each finished training, each line starting "progress:"
    progress.watch(log, logger)


onsuccess:
    # Kept blank dev/test lines, downloads put back because fetching them again failed (a sha256
    # mismatch on --forcerun) and trainings that stopped as diverged are only in the jobs' logs
    # otherwise (docs/faults.md).
    for line in (corpus_data.blank_reference_warnings(config) + corpus_data.kept_download_warnings(config)
                 + runs.diverged_training_lines(config)):
        print(f"warning: {line}", file=sys.stderr)


onerror:
    for line in corpus_data.kept_download_warnings(config) + runs.diverged_training_lines(config):
        print(f"warning: {line}", file=sys.stderr)


rule all:
    default_target: True
    input:
        corpus_data.data_targets(config),
        runs.model_targets(config),
        sources.oov_targets(config),
        packages.package_targets(config),
        compression.compression_targets(config),
        ev.report_targets(config),
        analyses.attention_targets(config),
        analyses.swap_noise_targets(config),
        analyses.graph_targets(config),


rule data:
    input:
        corpus_data.data_targets(config),
