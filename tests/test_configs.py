"""Every training of every shipped config starts, trains and decodes (``pytest -m configs``).

For ``config.yaml`` and each file of ``configs/`` and ``configs/diagnostics/`` (merged over it, as ``--configfile`` does),
Snakemake plans the translation of one test set for every (experiment, corpus) run; the
test then executes the planned jobs' own shell commands, so each training gets exactly the
flags and inputs the ``train`` rule's wiring gives (vocabularies by role, lattice
``starts``/``ends``, compressed sources, character data, a compressor's ``--init-from``).

Only the corpora are stand-ins: the ``extract`` jobs are replaced by a few real sentence
pairs of the corpus' languages from the mirror (and the compression sets by their first
records), so everything downstream runs for real: tokenisers and segmenters of the corpus,
its BPE sizes, joint vocabularies, characters, lattices, compressors.  The only change to
the configs is the budget (one update, on every training alike); model shapes, options,
batching, optimiser and decoding settings are the shipped ones.

Each run trains one update at its real size, decodes its first test set (the translation
must have one line per source line), and its checkpoints are deleted before the next run.
The data are made first, in this process; the runs are then shared by two forked workers.

A run whose training and translation commands and every input file (experiment settings,
data, vocabularies, compressors) are byte for byte those of a run already trained by an
earlier config of this module in the same process (``config.yaml`` comes first) is the same
job, so it is not trained again; the test names the config that covered it.  Run one
config's test alone to train all of its runs.
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import importlib
import itertools
import multiprocessing
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.snakemake_output import planned_job_details
from tests.snakemake_runs import MIRROR, snakemake

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ["config.yaml", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "configs").glob("*.yaml")),
           *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "configs" / "diagnostics").glob("*.yaml"))]
# Jobs whose outputs are the stand-in corpora; every other planned job runs its own command.
STAND_IN_RULES = {"extract", "extract_reference", "fetch_compression_set"}
# One update of at most two sentences (the test is about each model at its full size, not the batch),
# and no numbered checkpoint besides checkpoint_last.pt and checkpoint_best.pt: a
# Transformer-big checkpoint with its Adam moments is 2.6 GB, and two workers train at once.
ONE_UPDATE = {"max_updates": 1, "max_epochs": 0, "max_minutes": 0, "max_sentences": 2, "keep_last": 0, "keep_best": 0}
TRAIN_SIZE, EVAL_SIZE = 24, 2
WORKERS = 2

pytestmark = [
    pytest.mark.configs,
    pytest.mark.skipif(not (MIRROR / "multi30k").is_dir(), reason="corpus mirror not found (set NMT_DATA_MIRROR)"),
]


# ----------------------------------------------------------------------------- stand-in corpora
def _gz_lines(path: Path, limit: int = 3000) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8-sig") as f:
        return [line.rstrip("\n") for line in itertools.islice(f, limit)]


def _short_pairs(src: list[str], tgt: list[str]) -> list[tuple[str, str]]:
    return [(s, t) for s, t in zip(src, tgt) if s.strip() and t.strip() and len(s.split()) <= 8 and len(t) <= 50]


def mirror_pairs(src: str, tgt: str) -> list[tuple[str, str]]:
    """Real sentence pairs of the language pair from the mirror (short ones)."""
    langs = {src, tgt}
    if langs <= {"en", "de", "fr"}:
        lines = {lang: _gz_lines(MIRROR / "multi30k" / f"train.{lang}.gz") for lang in langs}
        return _short_pairs(lines[src], lines[tgt])
    if langs == {"zh", "en"}:
        rows = [line.split("\t") for line in _gz_lines(MIRROR / "zh-en" / "cmn.txt.gz") if line.count("\t") >= 2]
        pairs = [(zh, en) for en, zh, *_ in rows[500:]]
        return pairs if src == "zh" else [(en, zh) for zh, en in pairs]
    if langs == {"ja", "en"}:
        root = MIRROR / "ja-en" / "small_parallel_enja"
        ja = ["".join(line.split()) for line in _gz_lines(root / "train.ja.gz")]  # raw Japanese has no spaces
        pairs = _short_pairs(ja, _gz_lines(root / "train.en.gz"))
        return pairs if src == "ja" else [(en, j) for j, en in pairs]
    raise AssertionError(f"no stand-in sentences for {src}-{tgt}: add the pair to mirror_pairs")


class StandIns:
    """Raw text of every (corpus, split, language): a few real pairs, disjoint across the splits of a corpus."""

    def __init__(self, config: dict):
        self.config = config
        self.pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self.offsets: dict[tuple[str, str], int] = {}

    def lines(self, corpus: str, split: str, lang: str) -> list[str]:
        spec = self.config["corpora"][corpus]
        key = (spec["src"], spec["tgt"])
        if key not in self.pairs:
            self.pairs[key] = self._pairs(key)
        if (corpus, split) not in self.offsets:  # numbered per corpus, so another config's corpora change nothing
            earlier = sum(1 for known, name in self.offsets if known == corpus and name != "train")
            self.offsets[(corpus, split)] = 0 if split == "train" else TRAIN_SIZE + EVAL_SIZE * earlier
        start = self.offsets[(corpus, split)]
        chosen = self.pairs[key][start:start + (TRAIN_SIZE if split == "train" else EVAL_SIZE)]
        return [s if lang == spec["src"] else t for s, t in chosen]

    def _pairs(self, key: tuple[str, str]) -> list[tuple[str, str]]:
        """The training pairs, then the others shortest source first: a model after one update
        decodes to its length limit, ``max_len_a * |x| + max_len_b``, so short dev and test
        sentences keep the decoding (validation BLEU and the test set) short."""
        pairs = mirror_pairs(*key)
        return pairs[:TRAIN_SIZE] + sorted(pairs[TRAIN_SIZE:TRAIN_SIZE + 400], key=lambda pair: len(pair[0]))

    def write(self, job: dict, workdir: Path) -> None:
        for out in job["output"]:
            path = workdir / out
            path.parent.mkdir(parents=True, exist_ok=True)
            if job["rule"] == "fetch_compression_set":
                name = Path(out).name.removesuffix(".jsonl")
                mirror = self.config["compression"]["data"][name]["mirror"]
                path.write_text("".join(line + "\n" for line in _gz_lines(MIRROR / mirror, limit=4)), encoding="utf-8")
                continue
            corpus, _, name = Path(out).relative_to("results/data").parts
            split, *_, lang = name.split(".")  # SPLIT.LANG or SPLIT.refK.LANG
            path.write_text("".join(line + "\n" for line in self.lines(corpus, split, lang)), encoding="utf-8")


# ----------------------------------------------------------------------------- running planned jobs
def budget_overlay(config: dict) -> dict:
    """:data:`ONE_UPDATE` for every training (defaults, experiments, compressors), numbered
    checkpoints kept where an experiment averages them, and nothing else."""
    overlay: dict = {"training": dict(ONE_UPDATE)}
    overlay["experiments"] = {name: {"train": dict(ONE_UPDATE)} for name in config.get("experiments", {})}
    for name, spec in config.get("experiments", {}).items():
        if spec.get("average_checkpoints"):  # averaging needs its numbered checkpoints (runs.check_averaging)
            overlay["experiments"][name]["train"]["keep_last"] = -1
    compressors = (config.get("compression") or {}).get("compressors", {})
    if compressors:
        overlay["compression"] = {"compressors": {name: {"train": dict(ONE_UPDATE)} for name, spec in compressors.items()
                                                  if spec.get("kind") not in ("identity", "random_deletion")}}
        # an identity or random-deletion compressor trains nothing
    return overlay


def run_command(command: str, workdir: Path) -> None:
    """Run one planned shell command: ``[VAR=V ...] python -m MODULE ARGS > LOG 2>&1`` in
    this process through ``MODULE.main(ARGS)`` (no interpreter start-up per job); any other
    form through the shell."""
    words = shlex.split(command)
    env = {}
    while words and "=" in words[0] and not words[0].startswith("-"):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    log = None
    if words[-3:-1] and words[-1] == "2>&1" and words[-3] == ">":
        log, words = words[-2], words[:-3]
    if log is None or words[:2] != ["python", "-m"] or any(w in ("|", "&&", ";", ">") for w in words):
        proc = subprocess.run(command, shell=True, cwd=workdir, capture_output=True, text=True)
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        return
    module = importlib.import_module(words[2])
    (workdir / log).parent.mkdir(parents=True, exist_ok=True)
    with open(workdir / log, "w", encoding="utf-8") as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            rc = module.main(words[3:])
        except SystemExit as exc:
            rc = exc.code
    if rc not in (None, 0):
        raise AssertionError(f"exit {rc}: {command}\n{(workdir / log).read_text(encoding='utf-8')[-3000:]}")


class Plan:
    """The jobs a dry run planned, executed on demand from the stand-in corpora."""

    def __init__(self, jobs: list[dict], workdir: Path, stand_ins: StandIns):
        self.by_output = {out: job for job in jobs for out in job["output"]}
        self.workdir, self.stand_ins = workdir, stand_ins
        self.ran: list[str] = []
        self.seconds: dict[str, float] = {}

    def make(self, target: str) -> None:
        if (self.workdir / target).exists():
            return
        job = self.by_output.get(target)
        assert job is not None, f"no planned job writes {target}"
        if job["rule"] in STAND_IN_RULES:
            self.stand_ins.write(job, self.workdir)
        else:
            for path in job["input"]:
                self.make(path)
            for out in job["output"]:
                (self.workdir / out).parent.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            run_command(job["shell"], self.workdir)
            self.ran.append(job["rule"])
            for out in job["output"]:  # checkpoint_last.pt is for resuming, which these runs never do
                last = Path(out).with_name("checkpoint_last.pt")
                if Path(out).name == "checkpoint_best.pt" and str(last) not in job["output"]:
                    (self.workdir / last).unlink(missing_ok=True)
            self.seconds[target] = time.perf_counter() - start
        for out in job["output"]:
            assert (self.workdir / out).exists(), f"rule {job['rule']} did not write {out}"


def merged_config(name: str) -> dict:
    from snakemake.utils import update_config

    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    if name != "config.yaml":
        update_config(config, yaml.safe_load((ROOT / name).read_text(encoding="utf-8")) or {})
    return config


def _train_and_decode(plan: Plan, run: tuple[str, str], target: str) -> tuple[list[str], str]:
    """Train one run and decode its test set in this process; (rules run, error or "")."""
    from workflow_scripts.dag import paths

    plan.ran = []
    try:
        plan.make(target)
        words = shlex.split(plan.by_output[target]["shell"])
        translated = (plan.workdir / target).read_text(encoding="utf-8").splitlines()
        source = (plan.workdir / words[words.index("--input") + 1]).read_text(encoding="utf-8").splitlines()
        assert len(translated) == len(source), f"{len(translated)} lines for {len(source)} inputs"
    except Exception as exc:  # noqa: BLE001 - reported by the parent, naming the run
        return plan.ran, f"{run[0]}/{run[1]}: {exc}"
    finally:
        shutil.rmtree(plan.workdir / paths.experiment_dir(*run) / "train", ignore_errors=True)
    return plan.ran, ""


_PLAN: Plan | None = None  # the forked workers' copy of the plan
# Fingerprint (run_fingerprint) of every run trained and decoded in this process -> "CONFIG: EXPERIMENT/CORPUS".
_DONE: dict[str, str] = {}


@functools.cache
def _file_digest(path: Path) -> bytes:
    """sha256 of a file, read in blocks; once per path (a compressor's checkpoint is an input of
    several runs).  Inputs are written before the fingerprints are taken and not changed after."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").digest()


def _digest_path(digest: Any, path: Path) -> None:
    for child in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if child.is_file():
            digest.update(str(child.relative_to(path) if child != path else "").encode())
            digest.update(_file_digest(child))


def run_fingerprint(plan: Plan, target: str) -> str:
    """sha256 of the run's training and translation commands, of every input file they read
    (the training's own outputs excepted) and of ``NMT_USER_MODULES``: equal fingerprints are the
    same job."""
    translate = plan.by_output[target]
    train = next(plan.by_output[path] for path in translate["input"]
                 if path in plan.by_output and plan.by_output[path]["rule"] == "train")
    digest = hashlib.sha256(os.environ.get("NMT_USER_MODULES", "").encode())  # the code of outside families
    for job in (train, translate):
        digest.update(job["shell"].encode())
        for path in sorted(set(job["input"]) - set(train["output"])):
            digest.update(path.encode())
            _digest_path(digest, plan.workdir / path)
    return digest.hexdigest()


def _worker(item: tuple[tuple[str, str], str]) -> tuple[list[str], str]:
    return _train_and_decode(_PLAN, *item)


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)  # two workers on two cores: no oversubscription


@pytest.mark.parametrize("config_name", CONFIGS)
def test_every_training_of_a_shipped_config_trains_and_decodes(config_name, tmp_path, monkeypatch, record_property):
    from workflow_scripts.dag import paths
    from workflow_scripts.dag.cluster import user_modules_variable
    from workflow_scripts.dag.runs import experiment_runs

    config = merged_config(config_name)
    runs = experiment_runs(config)
    assert runs, f"{config_name}: no training runs"
    overlay = tmp_path / "one_update.yaml"
    overlay.write_text(yaml.safe_dump(budget_overlay(config)), encoding="utf-8")
    # Placeholders for licensed files (the runs read stand-in text, never these).
    licensed = tmp_path / "licensed"
    for corpus in config["active_corpora"]:
        for download in config["corpora"][corpus]["downloads"].values():
            if download.get("local") and not os.path.isabs(download["local"]):
                (licensed / download["local"]).parent.mkdir(parents=True, exist_ok=True)
                (licensed / download["local"]).touch()
    workdir = tmp_path / "work"
    targets = [f"{paths.experiment_dir(e, c)}/{config['corpora'][c]['test_sets'][0]}.out" for e, c in runs]
    configfiles = ([] if config_name == "config.yaml" else [str(ROOT / config_name)]) + [str(overlay)]
    proc = snakemake(workdir, "-n", "-p", "--cores", "1", *targets, "--configfile", *configfiles,
                     extra_env={"NMT_LICENSED_DATA": str(licensed)})
    plan = Plan(planned_job_details(proc.stdout), workdir, StandIns(config))

    monkeypatch.chdir(workdir)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    # The config's user_modules, as the Snakefile exports them to every job (a family from outside the package).
    for name, value in user_modules_variable(config, os.environ, str(workdir), str(ROOT)).items():
        monkeypatch.setenv(name, value)
    # Every input of the trainings and translations (data, compressors, compressed sources).
    for target in targets:
        translate = plan.by_output[target]
        for path in translate["input"]:
            job = plan.by_output.get(path)
            for needed in (job["input"] if job is not None and job["rule"] == "train" else [path]):
                plan.make(needed)
    data_rules = list(plan.ran)

    fingerprints = {target: run_fingerprint(plan, target) for target in targets}
    todo = [(run, target) for run, target in zip(runs, targets) if fingerprints[target] not in _DONE]
    same = {f"{e}/{c}": _DONE[fingerprints[target]] for (e, c), target in zip(runs, targets) if fingerprints[target] in _DONE}

    global _PLAN
    _PLAN = plan
    with multiprocessing.get_context("fork").Pool(WORKERS, _one_thread, maxtasksperchild=8) as pool:
        results = pool.map(_worker, todo, chunksize=1)
    errors = [error for _, error in results if error]
    assert not errors, "\n".join(errors)
    ran = data_rules + [rule for rules, _ in results for rule in rules]
    assert ran.count("train") == len(todo)
    for (experiment, corpus), target in todo:
        _DONE.setdefault(fingerprints[target], f"{config_name}: {experiment}/{corpus}")
    trainings = ran.count("train") + ran.count("train_compressor")
    record_property("trainings", trainings)
    record_property("same_as_earlier", len(same))
    slowest = sorted(plan.seconds.items(), key=lambda item: -item[1])[:5]
    print(f"{config_name}: {trainings} trainings ({len(todo)} of {len(runs)} experiment runs), one update each, then decoded; "
          + (f"the other {len(same)} are byte-identical jobs of an earlier config ("
             + ", ".join(f"{run} as {where}" for run, where in same.items()) + "); " if same else "")
          + "slowest data jobs: " + ", ".join(f"{path} {seconds:.1f}s" for path, seconds in slowest))
