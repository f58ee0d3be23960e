# Resources of the three kinds of jobs, so that every rule states only what differs (memory
# and time of a CPU job); placement on a cluster comes from config `cluster` (CPU_JOB) and
# config `train_resources` (docs/cluster.md).

# Scheduling priority of the long jobs (trainings, compressor training and compression): among
# the jobs ready at one time, Snakemake starts these first (the default priority is 0).
TRAIN_PRIORITY = 50


def cpu_job(mem_mb, runtime):
    """Resources of a job without GPUs: memory (MB), time limit (minutes), placement."""
    return {**CPU_JOB, "mem_mb": mem_mb, "runtime": runtime}


def train_job():
    """Resources of a training job: config `train_resources` (GPUs, memory, time limit)."""
    spec = config["train_resources"]
    return {"mem_mb": spec.get("mem_mb", 8000), "runtime": spec.get("runtime", 60),
            **cluster.cluster_resources(config, gpus=spec.get("gpus", 0))}


def decode_job():
    """Resources of a decoding job: at most one of the training GPUs, an hour."""
    spec = config["train_resources"]
    return {"mem_mb": spec.get("mem_mb", 8000), "runtime": 60,
            **cluster.cluster_resources(config, gpus=min(1, spec.get("gpus", 0)))}
