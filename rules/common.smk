# What the rule files share, defined once before any of them (the Snakefile includes this file
# first): the job module that fingerprints downloads, the evaluation settings, the config files
# of the run, scheduling priorities and the resources of the three kinds of jobs.  Every default
# that a rule reads comes from the validated config (schemas/config.schema.yaml fills them in).
from nmtmodels.text.scoring import metrics_fingerprint
from workflow_scripts.data import fetch as fetch_module  # rules fetch and fetch_compression_set

# Significance tests, metrics, marker test and length buckets, their defaults filled in
# (workflow_scripts/dag/evaluation.py): rules/evaluate.smk, analyses.smk and report.smk.
EVALUATION = ev.evaluation_settings(config)

# What decides every score file: the registered metrics with their sacrebleu settings and
# sacrebleu's version (nmtmodels/text/scoring.py).  A parameter of the score rules, so that a
# metric added (in the package or a user module) or changed reruns the score jobs and what reads
# their files, never a training or a decoding.  Computed once, in the main process: cluster
# jobs, which re-read this file, take it from the environment instead of importing the user
# modules (and torch) again.
METRICS_FINGERPRINT = os.environ.get("NMT_METRICS_FINGERPRINT") if not workflow.is_main_process else None
METRICS_FINGERPRINT = METRICS_FINGERPRINT or metrics_fingerprint()
os.environ.update(NMT_METRICS_FINGERPRINT=METRICS_FINGERPRINT)

# The config files of this run, for the summary's header, through the environment (as fetch's
# input directories in the Snakefile): as a parameter, adding a config file that changes
# nothing upstream would rerun the summary.  Its header names the config files and the
# commit of the run that made it: the embedded config.yaml first, then those of the command line,
# each once (`--configfile config.yaml configs/controls.yaml` names config.yaml a second time).
CONFIG_FILES = [f if os.path.relpath(f, workflow.basedir).startswith("..") else os.path.relpath(f, workflow.basedir)
                for f in map(os.path.abspath, workflow.configfiles)]
CONFIG_FILES = list(dict.fromkeys(sorted(CONFIG_FILES, key=lambda f: f != "config.yaml")))
os.environ.update(NMT_WORKFLOW_CONFIG_FILES=json.dumps(CONFIG_FILES))


# Resources of the three kinds of jobs, so that every rule states only what differs (memory
# and time of a CPU job); placement on a cluster comes from config `cluster` (CPU_JOB) and
# config `train_resources` (docs/cluster.md).

# Scheduling priorities: among the jobs ready at one time, Snakemake starts those of highest
# priority first (the default is 0: decoding, scoring, analyses, reports).
# - Data preparation first: its jobs are short, and every training waits for them.  With
#   trainings first, a 2-core run once kept a corpus' tokenisation waiting 9 minutes behind two
#   trainings of another corpus.
# - Then the trainings, so that evaluation jobs do not hold cores while a training could run.
# - The ESC compressor's training and the compression before them: the ESC systems' training
#   can only start after both, so this chain is the longest (docs/pipeline.md, "Scheduling").
DATA_PRIORITY = 100
TRAIN_PRIORITY = 50
CHAIN_PRIORITY = TRAIN_PRIORITY + 10


def cpu_job(mem_mb, runtime):
    """Resources of a job without GPUs: memory (MB), time limit (minutes), placement."""
    return {**CPU_JOB, "mem_mb": mem_mb, "runtime": runtime}


# GPU jobs also take one `gpu_slots`: on a local run, `--resources gpu_slots=N` lets at most N
# trainings and decodings share the GPU(s) at once.  Without it, `--cores` bounds them (each
# takes train_resources.cpus cores): `--cores 16` with cpus 2 runs up to 8 at once
# (docs/gpu.md).  Small models leave most of an H100 idle, so several at once are faster.
def gpu_slots(gpus):
    return {"gpu_slots": 1} if gpus > 0 else {}


def train_job():
    """Resources of a training job: config `train_resources` (GPUs, memory, time limit)."""
    spec = config["train_resources"]
    return {"mem_mb": spec["mem_mb"], "runtime": spec["runtime"],
            **cluster.cluster_resources(config, gpus=spec["gpus"]), **gpu_slots(spec["gpus"])}


def decode_job():
    """Resources of a decoding job: at most one of the training GPUs, an hour."""
    spec = config["train_resources"]
    return {"mem_mb": spec["mem_mb"], "runtime": 60,
            **cluster.cluster_resources(config, gpus=min(1, spec["gpus"])), **gpu_slots(spec["gpus"])}
