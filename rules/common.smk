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
    return {"mem_mb": spec.get("mem_mb", 8000), "runtime": spec.get("runtime", 60),
            **cluster.cluster_resources(config, gpus=spec.get("gpus", 0)), **gpu_slots(spec.get("gpus", 0))}


def decode_job():
    """Resources of a decoding job: at most one of the training GPUs, an hour."""
    spec = config["train_resources"]
    return {"mem_mb": spec.get("mem_mb", 8000), "runtime": 60,
            **cluster.cluster_resources(config, gpus=min(1, spec.get("gpus", 0))), **gpu_slots(spec.get("gpus", 0))}
