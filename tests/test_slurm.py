"""The `slurm` profile, and on a real single-node SLURM cluster (../shared/slurm-local).

Without a cluster: the profile is valid, and config `cluster` / `train_resources` place the
jobs (dry run).  The tests marked `slurm` start SLURM (slurmctld, slurmd, slurmdbd with
MariaDB, munge, two fake GPUs) with start-local-slurm.sh and run `snakemake all --profile
slurm` from the repository root on the miniature config (configs/ci.yaml cut to one corpus,
with a two-GPU torchrun training that outlasts its 1-minute jobs).  Through sacct and the
SLURM logs they check that every job was an sbatch job on the partition the config names,
the outputs, the resumed training, and a partial rebuild next to a job that fails for good.
They stop the daemons they started, by their pid files, and skip, saying why, without root,
apt-get, the start script or the corpus mirror.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import sacrebleu
import yaml

from nmtmodels.checkpoint import load_checkpoint
from tests.snakemake_output import planned_jobs

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
START_SCRIPT = SHARED / "slurm-local" / "start-local-slurm.sh"
MIRROR = Path(os.environ.get("NMT_DATA_MIRROR", SHARED / "data"))

# Daemons of start-local-slurm.sh, in the order they are stopped.
PID_FILES = {
    "slurmd": Path("/run/slurmd.pid"),
    "slurmctld": Path("/run/slurmctld.pid"),
    "slurmdbd": Path("/run/slurmdbd.pid"),
    "mariadbd": Path("/run/mysqld/mysqld.pid"),
    "munged": Path("/run/munge/munged.pid"),
}
# The test cluster: partitions named in the config below, 2 fake GPUs, more CPUs than the
# machine has (jobs are small; a training job must not block every other job).
CLUSTER_ENV = {"SLURM_LOCAL_PARTITIONS": "cpu gpu", "SLURM_LOCAL_GPUS": "2", "SLURM_LOCAL_CPUS": "8"}
# Status polls every 3 s, instead of the profile's cluster-friendly 40 s + 10 s more after each
# poll in which no job finished: snakemake runs through tests/snakemake_steady_polling.py, which
# keeps the plugin's wait at --seconds-between-status-checks (with the plugin's own rule a finished
# training was noticed up to a minute late).
SNAKEMAKE = (sys.executable, "-m", "tests.snakemake_steady_polling")
FAST_POLLING = ("--seconds-between-status-checks", "3", "--slurm-init-seconds-before-status-checks", "3",
                "--latency-wait", "5")
CORPUS = "multi30k_en_de"
PAIR = "en-de"
TEST_SET = "test_2016_flickr"
SUBWORDS = "bpe300"
# GPUs of a job of each rule placed on the GPU partition (training: train_resources.gpus
# below; decoding, also of the swap-noise test sets, one); every other job is a CPU job.
GPU_JOBS = {"train": 2, "translate": 1, "translate_swap_noise": 1}
# Training time of the miniature (wall clock, summed over resumed jobs): more than a job with a
# 1-minute limit can do (SLURM ends it 60-90 s after its start: it checks limits every 30 s, later
# on a loaded machine, and it waits KillWait before SIGKILL; at 1.5 and at 2 minutes a first job
# was seen to spend the whole budget), little enough for a retry or two to finish.
TRAIN_MINUTES = 3.0

# ----------------------------------------------------------------------------- helpers
def _pid_alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text().split()[0]), 0)
    except (OSError, ValueError, IndexError):
        return False
    return True


def _terminate(pid: int, wait_s: float) -> None:
    """SIGTERM ``pid``; SIGKILL it if it is still there after ``wait_s``."""
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.2)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _stop(pid_file: Path) -> None:
    """Stop the daemon named by ``pid_file``."""
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    _terminate(pid, wait_s=30)


def _stop_leftovers(directories: list[Path]) -> None:
    """End processes of this test's SLURM jobs that outlived their job: without cgroups the
    local cluster finds a job's processes by parentage, so one whose parent died escapes."""
    roots = [str(directory) for directory in directories]
    for entry in Path("/proc").iterdir():
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if entry.name.isdigit() and any(cwd == root or cwd.startswith(root + "/") for root in roots):
            _terminate(int(entry.name), wait_s=5)


def _unavailable() -> str | None:
    """Why the local cluster cannot be started here (None: it can)."""
    if not START_SCRIPT.is_file():
        return f"{START_SCRIPT} not found"
    if os.geteuid() != 0:
        return "start-local-slurm.sh needs root"
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        return "no apt-get to install SLURM (Debian only)"
    if not (MIRROR / "multi30k").is_dir():
        return f"corpus mirror not found at {MIRROR} (set NMT_DATA_MIRROR)"
    return None


@dataclass
class Run:
    returncode: int
    output: str  # stdout + stderr of snakemake

    def own_lines(self) -> str:
        """The output without the failed jobs' logs that snakemake prints (show-failed-logs)."""
        return re.sub(r"^Logfile [^\n]*:\n={20,}\n.*?^={20,}\n", "", self.output, flags=re.M | re.S)

    def submissions(self) -> list[tuple[str, str, str]]:
        """(SLURM job id, rule, wildcards) of every sbatch submission, from snakemake's log
        lines and the per-job SLURM log path (.snakemake/slurm_logs/rule_R/WILDCARDS/ID.log)."""
        found = []
        for slurm_id, log in re.findall(r"has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.", self.output):
            path = Path(log)
            assert path.is_file(), f"no SLURM log {path} for job {slurm_id}"
            parts = path.parts
            where = parts.index("slurm_logs") + 1  # rule_RULE[/WILDCARDS]/ID.log
            found.append((slurm_id, parts[where].removeprefix("rule_"), "/".join(parts[where + 1:-1])))
        return found

    def planned_jobs(self) -> dict[str, int]:
        """Job counts per rule from the 'Job stats' table snakemake prints before running."""
        return planned_jobs(self.output)

def start_profile(workdir: Path, targets: list[str], configfiles: list[Path], *options: str) -> subprocess.Popen:
    """Start `snakemake TARGETS --profile slurm` from the repository root, outputs in ``workdir``."""
    command = [*SNAKEMAKE, *targets, "--profile", "slurm", "-d", str(workdir),
               *FAST_POLLING, *options, "--configfile", str(ROOT / "configs/ci.yaml"), *map(str, configfiles)]
    return subprocess.Popen(command, cwd=ROOT, env={**os.environ, "NMT_DATA_MIRROR": str(MIRROR)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen, timeout_s: float = 900) -> Run:
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.terminate()  # snakemake cancels its SLURM jobs
        output, _ = proc.communicate(timeout=120)
        raise AssertionError(f"snakemake ran longer than {timeout_s} s:\n{output[-6000:]}") from None
    return Run(proc.returncode, output)


def run_profile(workdir: Path, targets: list[str], configfiles: list[Path], *options: str) -> Run:
    return finish(start_profile(workdir, targets, configfiles, *options))


SACCT_FIELDS = ("JobIDRaw", "JobName", "State", "Partition", "AllocTRES", "Submit", "End", "Timelimit", "ElapsedRaw")


def sacct(job_ids: list[str]) -> dict[str, dict[str, str]]:
    """SLURM's accounting record of each job (slurmdbd receives them asynchronously: wait)."""
    for _ in range(40):
        out = subprocess.run(["sacct", "-X", "-n", "-P", "-j", ",".join(job_ids), "--format", ",".join(SACCT_FIELDS)],
                             capture_output=True, text=True, check=True).stdout
        records = {row[0]: dict(zip(SACCT_FIELDS, row)) for row in (line.split("|") for line in out.splitlines())}
        if set(job_ids) <= set(records) and all(records[j]["End"] != "Unknown" for j in job_ids):
            return records
        time.sleep(0.5)
    raise AssertionError(f"sacct does not know every job of {job_ids}: {out}")


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def cluster(machine_slurm):
    """A running local SLURM cluster; stops, at the end, the daemons that were not running before.
    Its commands read the machine's SLURM configuration (tests/conftest.py ``machine_slurm``)."""
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    running_before = {name: _pid_alive(pid_file) for name, pid_file in PID_FILES.items()}
    try:
        proc = subprocess.run(["bash", str(START_SCRIPT), "start"], env={**os.environ, **CLUSTER_ENV},
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            pytest.fail(f"start-local-slurm.sh failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        yield
    finally:
        for name, pid_file in PID_FILES.items():
            if not running_before[name]:
                _stop(pid_file)


BROKEN = "broken_en_de"  # a corpus whose train split cannot be read (invalid UTF-8); its dev split can
FAILING_RETRIES = 1


@pytest.fixture(scope="module")
def workflow(cluster, tmp_path_factory):
    """`snakemake all --profile slurm` on the miniature config, cut to one corpus, with a
    training of 90 s on two (fake) GPUs in jobs limited to one minute.  Meanwhile, in another
    directory, a run whose first target fails for good (see test_a_failing_job...)."""
    workdir = tmp_path_factory.mktemp("slurm-workflow")
    overlay = workdir / "miniature.yaml"
    overlay.write_text(yaml.safe_dump({
        "active_corpora": [CORPUS],
        "corpora": {
            CORPUS: {"bpe": {"merges": [int(SUBWORDS[3:])]}},
            BROKEN: {
                "src": "en", "tgt": "de",
                "downloads": {name: {"local": f"{BROKEN}/{name}"} for name in ("train.en", "train.de", "dev.en", "dev.de")},
                "splits": {split: [{"format": "plain", "files": {lang: f"{split}.{lang}" for lang in ("en", "de")}}]
                           for split in ("train", "dev")},
                "test_sets": ["dev"],
                "preprocess": {"en": {"tokenizer": "whitespace"}, "de": {"tokenizer": "whitespace"}},
                "clean": {}, "bpe": {"merges": [10]},
            },
        },
        # one training (one seed: configs/ci.yaml gives the baseline two), killed by the time limit and resumed
        "experiments": {"baseline": {"corpora": [CORPUS], "subwords": SUBWORDS, "seeds": [1]}},
        "active_experiments": ["baseline"],
        "training": {"max_updates": 0, "max_minutes": TRAIN_MINUTES},
        "decoding": {"beam": 1},
        "train_resources": {"gpus": 2, "cpus": 2, "mem_mb": 1000, "runtime": 1},
        "cluster": {"cpu_partition": "cpu", "gpu_partition": "gpu"},
    }))
    # The failing run: its downloads are there already (rule fetch runs on this host); one
    # job at a time, the failing target first, so the other is submitted after the failure.
    failing_dir = tmp_path_factory.mktemp("slurm-failing")
    downloads = failing_dir / "resources/downloads" / BROKEN
    downloads.mkdir(parents=True)
    (downloads / "train.en").write_bytes(b"fine\n\xff\xfe broken\n")
    for name, text in (("train.de", "gut\nkaputt\n"), ("dev.en", "a test\n"), ("dev.de", "ein Test\n")):
        (downloads / name).write_text(text, encoding="utf-8")
    failing_target = f"results/data/{BROKEN}/raw/train.en"
    failing = start_profile(failing_dir, [failing_target, f"results/data/{BROKEN}/raw/dev.de"], [overlay],
                            "--jobs", "1", "--retries", str(FAILING_RETRIES), "--prioritize", failing_target)
    try:
        run = run_profile(workdir, ["all"], [overlay])
        failing_run = finish(failing)
        assert run.returncode == 0, run.output[-6000:]
        yield workdir, overlay, run, failing_dir, failing_run
    finally:
        if failing.poll() is None:
            failing.terminate()
            failing.wait(timeout=120)
        _stop_leftovers([workdir, failing_dir])


# ----------------------------------------------------------------------------- without a cluster
@pytest.mark.heavy
def test_profile_options_are_accepted_by_snakemake(tmp_path):
    """A dry run with the profile: snakemake rejects unknown or mistyped profile keys."""
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "all", "-n", "--profile", "slurm", "-d", str(tmp_path),
         "--configfile", str(ROOT / "configs/ci.yaml")],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NMT_DATA_MIRROR": str(tmp_path / "none")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "This was a dry-run" in proc.stdout + proc.stderr


@pytest.mark.heavy
def test_config_cluster_places_gpu_and_cpu_jobs(tmp_path):
    """Partitions, account and GPU requests of a dry run follow config `cluster` and `train_resources`."""
    overlay = tmp_path / "cluster.yaml"
    overlay.write_text(yaml.safe_dump({
        "cluster": {"cpu_partition": "short", "gpu_partition": "gpu-a100", "account": "nmt-lab", "gpu_model": "a100"},
        "train_resources": {"gpus": 4, "cpus": 8, "mem_mb": 16000, "runtime": 600},
    }))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "all", "-n", "-p", "--cores", "8", "-d", str(tmp_path),
         "--configfile", str(ROOT / "configs/ci.yaml"), str(overlay)],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NMT_DATA_MIRROR": str(tmp_path / "none")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    resources = {}
    for rule, block in re.findall(r"^(?:local)?rule (\w+):\n(.*?)(?=^\S)", proc.stdout, re.M | re.S):
        found = re.search(r"resources: (.*)", block)
        resources.setdefault(rule, dict(item.split("=", 1) for item in found.group(1).split(", ")) if found else {})
    assert resources["train"]["gpu"] == "4" and resources["train"]["gpu_model"] == "a100"
    assert resources["train"]["slurm_partition"] == "gpu-a100"
    assert resources["translate"]["gpu"] == "1" and resources["translate"]["slurm_partition"] == "gpu-a100"
    for rule in ("extract", "preprocess", "apply_bpe", "score"):
        assert resources[rule]["slurm_partition"] == "short" and "gpu" not in resources[rule], rule
    assert all(values.get("slurm_account") == "nmt-lab" for rule, values in resources.items() if rule != "all")
    assert re.search(r"torchrun --standalone --nproc_per_node=4 -m nmtmodels\.cli train .*--set train\.num_threads=2 ",
                     proc.stdout)


# ----------------------------------------------------------------------------- on the cluster
@pytest.mark.slurm
def test_every_job_of_all_is_an_sbatch_job_on_its_partition(workflow):
    workdir, _, run, _, _ = workflow
    planned = run.planned_jobs()
    submitted = run.submissions()
    records = sacct([job for job, _, _ in submitted])
    attempts = Counter(rule for _, rule, _ in submitted)
    local = set(re.findall(r"^localrule (\w+):", run.own_lines(), re.M))
    assert {"all", "fetch"} <= local and not local & set(attempts), "downloads run on the submit host"
    # one sbatch job per planned job, but training: one per attempt (test below)
    assert attempts - Counter(train=attempts["train"] - 1) == Counter(
        {rule: count for rule, count in planned.items() if rule not in local})
    assert {records[job]["State"] for job, rule, _ in submitted if rule != "train"} == {"COMPLETED"}
    assert len({records[job]["JobName"] for job, _, _ in submitted}) == 1, "one run id names every job"
    for job, rule, _ in submitted:
        record = records[job]
        if rule in GPU_JOBS:
            assert record["Partition"] == "gpu" and f"gres/gpu={GPU_JOBS[rule]}" in record["AllocTRES"], (rule, record)
        else:
            assert record["Partition"] == "cpu" and "gres/gpu" not in record["AllocTRES"], (rule, record)


@pytest.mark.slurm
def test_all_outputs_are_complete_and_scored(workflow):
    workdir, *_ = workflow
    data = workdir / "results/data" / CORPUS
    for split in ("train", "dev", TEST_SET):
        for stage in ("tok", SUBWORDS, "char"):
            src, tgt = (lines(data / stage / f"{split}.{PAIR}.{lang}") for lang in ("en", "de"))
            assert len(src) == len(tgt) > 0, (stage, split)
    experiment = workdir / "results/experiments/baseline" / CORPUS
    hypotheses = lines(experiment / f"{TEST_SET}.hyp")
    references = lines(data / "raw" / f"{TEST_SET}.de")
    assert len(hypotheses) == len(references) == 1000  # Multi30k test 2016 (Flickr) has 1000 sentences
    scores = json.loads((experiment / f"{TEST_SET}.scores.json").read_text())
    assert scores["bleu"]["score"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score)


@pytest.mark.slurm
def test_training_past_its_time_limit_resumes_in_the_next_attempt(workflow):
    """The 2-GPU (torchrun) training outlasts its 1-minute jobs: the first ends at the time
    limit (SIGTERM: the trainer writes checkpoint_last.pt), a retry resumes and finishes it."""
    workdir, _, run, _, _ = workflow
    trains = [job for job, rule, _ in run.submissions() if rule == "train"]
    records = sacct(trains)
    assert len(trains) >= 2, "the training must outlast one job"
    assert records[trains[0]]["State"] == "TIMEOUT" and records[trains[-1]]["State"] == "COMPLETED"
    assert {records[job]["Timelimit"] for job in trains} == {"00:01:00"}

    train_dir = workdir / "results/experiments/baseline" / CORPUS / "train"
    # The rule's log holds the last attempt only (each attempt rewrites it): that attempt resumed.
    # It may have resumed at the final update (a job killed after the budget was spent but before
    # the end-of-training validation finished leaves nothing but that validation to the next one),
    # so that attempts before it trained on is shown by the training time: more than one job can
    # train (SLURM ends a job with a 1-minute limit within about 2 minutes of its start).
    log = (workdir / "logs/train/baseline" / f"{CORPUS}.log").read_text()
    resumes = [int(update) for update in re.findall(r"resumed from \S+checkpoint_last\.pt at update (\d+)", log)]
    final = load_checkpoint(train_dir / "checkpoint_last.pt")
    assert resumes and 0 < resumes[0] <= final["update"]
    assert final["trainer"]["elapsed"] >= TRAIN_MINUTES * 60 > 120  # more than one job's time limit allows
    assert len(final["trainer"]["rng"]) == 2  # one RNG state per torchrun process
    assert (train_dir / "checkpoint_best.pt").is_file()
    updates = [int(row.split(",")[0]) for row in lines(train_dir / "metrics.csv")[1:]]
    assert updates == sorted(updates) and min(updates) < resumes[0] <= max(updates), "metrics of every attempt"


@pytest.mark.slurm
def test_partial_rebuild_submits_only_the_jobs_of_its_target(workflow):
    workdir, overlay, *_ = workflow
    experiment = workdir / "results/experiments/baseline" / CORPUS
    for suffix in ("hyp", "tok", "scores.json"):
        (experiment / f"{TEST_SET}.{suffix}").unlink()
    untouched = [experiment / f"{TEST_SET}.out", experiment / "train/checkpoint_best.pt",
                 workdir / "results/data" / CORPUS / SUBWORDS / f"{TEST_SET}.{PAIR}.en"]
    stamps = [path.stat().st_mtime_ns for path in untouched]
    target = experiment / f"{TEST_SET}.scores.json"

    run = run_profile(workdir, [str(target.relative_to(workdir))], [overlay])

    assert run.returncode == 0, run.output[-6000:]
    submitted = run.submissions()
    assert sorted(rule for _, rule, _ in submitted) == ["postprocess", "score"]
    assert {record["State"] for record in sacct([job for job, _, _ in submitted]).values()} == {"COMPLETED"}
    assert target.is_file()
    assert [path.stat().st_mtime_ns for path in untouched] == stamps


@pytest.mark.slurm
def test_a_failing_job_is_retried_and_the_rest_goes_on(workflow):
    """The run of the fixture's other directory: extracting the unreadable train split is
    submitted 1 + retries times and fails each time; the dev split, independent of it, is
    submitted after that (keep-going) and extracted."""
    *_, failing_dir, run = workflow
    assert run.returncode != 0, "the unreadable split must fail the run"
    submitted = run.submissions()
    failures = [job for job, rule, wildcards in submitted if wildcards == f"{BROKEN}_train_en"]
    others = [job for job, rule, wildcards in submitted if job not in failures]
    records = sacct([job for job, _, _ in submitted])
    assert len(failures) == 1 + FAILING_RETRIES and {records[job]["State"] for job in failures} == {"FAILED"}
    assert len(others) == 1 and records[others[0]]["State"] == "COMPLETED"
    assert run.output.index(f"submitted with SLURM jobid {others[0]} ") > run.output.index(f"SLURM-job '{failures[-1]}' failed")
    assert lines(failing_dir / "results/data" / BROKEN / "raw/dev.de") == ["ein Test"]
    assert "invalid UTF-8" in (failing_dir / f"logs/extract/{BROKEN}/train.en.log").read_text()
    assert not (failing_dir / "results/data" / BROKEN / "raw/train.en").exists()
