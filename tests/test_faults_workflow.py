"""Workflow faults (docs/faults.md, "Workflow"): moving the data or adding a test set reruns
nothing upstream, a repaired mirror file is fetched again, missing licensed files stop the
DAG build with one list, a failed job shows its log on the console, and a diverging training
ends in one line and a summary that says so."""
from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.snakemake_output import planned_job_details
from tests.snakemake_runs import MIRROR, ROOT, snakemake
from workflow_scripts.dag import corpus_data

CI = ["--configfile", str(ROOT / "configs/ci.yaml")]
# One corpus and one experiment of the miniature: the smallest run with every data step,
# BPE learning and a training.
SUBSET = ["--config", "active_corpora=[multi30k_en_de]", "active_experiments=[baseline]"]
needs_mirror = pytest.mark.skipif(not (MIRROR / "multi30k").is_dir(), reason=f"no corpus mirror at {MIRROR}")


def jobs_of(proc) -> list[dict]:
    return planned_job_details(proc.stdout)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The baseline on multi30k_en_de, trained, decoded and scored from the mirror."""
    if not (MIRROR / "multi30k").is_dir():
        pytest.skip(f"corpus mirror not found at {MIRROR} (set NMT_DATA_MIRROR)")
    workdir = tmp_path_factory.mktemp("trained")
    snakemake(workdir, "all", "--cores", "2", *CI, *SUBSET)
    return workdir


@pytest.mark.slow
def test_moving_the_data_and_adding_a_test_set_rerun_nothing_upstream(trained, tmp_path):
    # Another mirror (same bytes, new mtimes) and a licensed directory now set: nothing to do.
    moved = tmp_path / "mirror"
    shutil.copytree(MIRROR / "multi30k", moved / "multi30k", copy_function=shutil.copy)
    licensed = tmp_path / "licensed"
    (licensed / "extra").mkdir(parents=True)
    env = {"NMT_DATA_MIRROR": str(moved), "NMT_LICENSED_DATA": str(licensed)}
    again = snakemake(trained, "-n", "all", "--cores", "1", *CI, *SUBSET, extra_env=env)
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]

    # A new test set: one file below the licensed directory, one at an absolute path.
    with gzip.open(MIRROR / "multi30k" / "test_2016_flickr.en.gz", "rt", encoding="utf-8") as handle:
        english = handle.read().splitlines()[:20]
    with gzip.open(MIRROR / "multi30k" / "test_2016_flickr.de.gz", "rt", encoding="utf-8") as handle:
        german = handle.read().splitlines()[:20]
    (licensed / "extra" / "extra.en").write_text("\n".join(english) + "\n", encoding="utf-8")
    absolute = tmp_path / "elsewhere" / "extra.de"
    absolute.parent.mkdir()
    absolute.write_text("\n".join(german) + "\n", encoding="utf-8")
    overlay = tmp_path / "extra.yaml"
    overlay.write_text(yaml.safe_dump({"corpora": {"multi30k_en_de": {
        "downloads": {"extra.en": {"local": "extra/extra.en"}, "extra.de": {"local": str(absolute)}},
        "splits": {"extra": [{"format": "plain", "files": {"en": "extra.en", "de": "extra.de"}}]},
        "test_sets": ["test_2016_flickr", "extra"],
    }}}))
    proc = snakemake(trained, "-n", "-p", "all", "--cores", "1", *CI, str(overlay), *SUBSET, extra_env=env)
    jobs = jobs_of(proc)
    rules = {job["rule"] for job in jobs}
    assert not rules & {"learn_bpe", "train", "char_vocab", "joint_vocab"}, sorted(rules)
    for job in jobs:
        if job["rule"] in ("fetch", "extract", "preprocess", "apply_bpe", "char_encode", "translate", "score"):
            assert all("extra" in output for output in job["output"]), job
    assert {"fetch", "extract", "preprocess", "translate", "score"} <= rules

    # The new test set's data is made from the licensed and the absolute file.
    target = "results/data/multi30k_en_de/tok/extra.en-de.de"
    snakemake(trained, target, "--cores", "1", *CI, str(overlay), *SUBSET, extra_env=env)
    assert len((trained / target).read_text(encoding="utf-8").splitlines()) == 20
    record = json.loads((trained / "resources/downloads/multi30k_en_de/extra.de.origin.json").read_text())
    assert (record["origin"], record["source"]) == ("licensed", str(absolute))


def fetch_target(workdir: Path, name: str, entry: dict, mirror: Path, *args: str, check: bool = True):
    overlay = workdir.parent / f"{workdir.name}-{name}.yaml"
    overlay.write_text(yaml.safe_dump({"corpora": {"multi30k_en_de": {"downloads": {name: entry}}}}))
    return snakemake(workdir, f"resources/downloads/multi30k_en_de/{name}", "--cores", "1", *args,
                     "--configfile", str(overlay), check=check, extra_env={"NMT_DATA_MIRROR": str(mirror)})


@pytest.mark.heavy
def test_a_repaired_mirror_file_without_checksum_is_fetched_again(tmp_path):
    mirror, workdir = tmp_path / "mirror", tmp_path / "work"
    (mirror / "multi30k").mkdir(parents=True)
    damaged = mirror / "multi30k" / "val.en.gz"
    damaged.write_bytes(gzip.compress(b"bad \xff byte\n"))
    entry = {"url": "http://127.0.0.1:9/unused", "mirror": "multi30k/val.en.gz"}  # the mirror comes first
    fetch_target(workdir, "val_unchecked.en", entry, mirror)
    unchanged = fetch_target(workdir, "val_unchecked.en", entry, mirror, "-n")
    assert "Nothing to be done" in unchanged.stdout + unchanged.stderr
    damaged.write_bytes(gzip.compress(b"good text\n"))  # repaired in place
    assert [job["rule"] for job in jobs_of(fetch_target(workdir, "val_unchecked.en", entry, mirror, "-n", "-p"))] == ["fetch"]
    fetch_target(workdir, "val_unchecked.en", entry, mirror)
    assert gzip.decompress((workdir / "resources/downloads/multi30k_en_de/val_unchecked.en").read_bytes()) == b"good text\n"


@pytest.mark.heavy
def test_a_download_dated_in_the_future_reruns_nothing_or_rebuilds_the_same_files(tmp_path):
    """Issue 34: Tatoeba's cmn.txt (over snakemake's 1 MB checksum limit) dated a day ahead.
    Its bytes are those fetched: the start-up dates it back and warns, nothing is planned.
    Without its fetch record: a warning naming it and the fix, and the rerun of extract
    succeeds with the same files (snakemake failed it, 'older modification time than input',
    and deleted the good raw files)."""
    import os
    import time

    if not (MIRROR / "zh-en" / "cmn.txt.gz").is_file():
        pytest.skip(f"no Tatoeba file in the corpus mirror at {MIRROR}")
    targets = ["results/data/tatoeba_zh_en/raw/dev.en", "results/data/tatoeba_zh_en/raw/train.zh"]
    tatoeba = [*targets, *CI, "--config", "active_corpora=[tatoeba_zh_en]"]
    workdir = tmp_path / "work"
    snakemake(workdir, "--cores", "2", *tatoeba)
    made = {target: (workdir / target).read_bytes() for target in targets}
    download = workdir / "resources/downloads/tatoeba_zh_en/cmn.txt"
    assert download.stat().st_size > 1_000_000  # snakemake's --max-checksum-file-size: no digest of its own

    future = time.time() + 86400
    os.utime(download, (future, future))
    console = (lambda proc: proc.stdout + proc.stderr)(snakemake(workdir, "-n", "--cores", "1", *tatoeba))
    assert "Warning: resources/downloads/tatoeba_zh_en/cmn.txt was dated in the future (+24.0 h, clock skew?)" in console
    assert "Nothing to be done" in console and download.stat().st_mtime < time.time()

    (workdir / "resources/downloads/tatoeba_zh_en/cmn.txt.origin.json").unlink()  # as if fetched before records
    os.utime(download, (future, future))
    proc = snakemake(workdir, "-n", "-p", "--cores", "1", *tatoeba)
    warning = next(line for line in proc.stderr.splitlines() if "dated in the future" in line)
    assert warning.startswith("Warning: 1 file(s) dated in the future (clock skew?): resources/downloads/tatoeba_zh_en/cmn.txt (+24.0 h).")
    assert "`touch resources/downloads/tatoeba_zh_en/cmn.txt`" in warning and "snakemake --touch" in warning
    assert "What is made from them reruns" in warning and "under 1 MB" not in warning  # cmn.txt is over 1 MB
    assert sorted(job["rule"] for job in jobs_of(proc)) == ["extract", "extract"]
    snakemake(workdir, "--cores", "2", *tatoeba)
    assert {target: (workdir / target).read_bytes() for target in targets} == made
    logs = [(workdir / f"logs/extract/tatoeba_zh_en/{name}.log").read_text() for name in ("dev.en", "train.zh")]
    assert any("cmn.txt was dated in the future (clock skew?); dated now" in log for log in logs), logs  # the first job


@pytest.mark.heavy
def test_a_failed_local_job_shows_its_log_on_the_console(tmp_path):
    """The default workflow profile (profiles/default) sets show-failed-logs: the console
    carries the job's own error (here a checksum mismatch naming the mirror file)."""
    mirror = tmp_path / "mirror"
    (mirror / "multi30k").mkdir(parents=True)
    (mirror / "multi30k" / "val.en.gz").write_bytes(gzip.compress(b"not the real file\n"))
    entry = yaml.safe_load((ROOT / "config.yaml").read_text())["corpora"]["multi30k_en_de"]["downloads"]["val.en"]
    proc = fetch_target(tmp_path / "work", "val.en", entry, mirror, check=False)
    assert proc.returncode != 0
    console = proc.stdout + proc.stderr
    assert f"{mirror / 'multi30k' / 'val.en.gz'}: sha256 mismatch" in console
    bare = fetch_target(tmp_path / "bare", "val.en", entry, mirror, "--workflow-profile", "none", check=False)
    assert bare.returncode != 0 and "sha256 mismatch" not in bare.stdout + bare.stderr


def licensed_relative_paths(config: dict) -> set[str]:
    return {entry["local"] for corpus in config["active_corpora"]
            for entry in config["corpora"][corpus]["downloads"].values() if entry.get("local")}


def full_config() -> dict:
    from snakemake.utils import update_config

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    update_config(config, yaml.safe_load((ROOT / "configs/full.yaml").read_text()))
    return config


@pytest.mark.heavy
def test_missing_licensed_files_stop_even_a_dry_run_with_one_list(tmp_path):
    full = ["-n", "all", "--cores", "1", "--configfile", str(ROOT / "configs/full.yaml")]
    no_mirror = {"NMT_DATA_MIRROR": str(tmp_path / "no-mirror"), "NMT_LICENSED_DATA": ""}
    proc = snakemake(tmp_path / "work", *full, check=False, extra_env=no_mirror)
    console = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Job stats" not in console
    wanted = licensed_relative_paths(full_config())
    assert wanted, "configs/full.yaml has licensed corpora"
    work = (tmp_path / "work").resolve()  # licensed_data_dir unset: relative paths are looked for in --directory
    listed = {line.split()[0].removeprefix(f"{work}/") for line in console.splitlines() if line.startswith(f"  {work}/")}
    assert listed == wanted
    assert f"working directory {work}" in console and "licensed_data_dir" in console and "NMT_LICENSED_DATA" in console

    licensed, left_out = tmp_path / "licensed", min(wanted)
    for path in wanted - {left_out}:
        (licensed / path).parent.mkdir(parents=True, exist_ok=True)
        (licensed / path).touch()
    proc = snakemake(tmp_path / "work", *full, check=False, extra_env={**no_mirror, "NMT_LICENSED_DATA": str(licensed)})
    missing = [line.split()[0] for line in (proc.stdout + proc.stderr).splitlines() if line.startswith(f"  {licensed}")]
    assert proc.returncode != 0 and missing == [str(licensed / left_out)]
    assert not (tmp_path / "work" / "resources").exists()


def test_preprocessing_parameter_carries_blank_references_only_when_not_the_default():
    """The default leaves the preprocess parameter as it was (no rerun of existing runs);
    'fail' is part of it for dev and test sets only."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    before = corpus_data.corpus_spec_json(config, "multi30k_en_de", corpus_data.preprocessing_spec)
    for split in ("train", "dev", "test_2016_flickr"):
        assert corpus_data.split_preprocessing_spec_json({**config, "blank_references": "warn"}, "multi30k_en_de", split) == before
    strict = {**config, "blank_references": "fail"}
    assert corpus_data.split_preprocessing_spec_json(strict, "multi30k_en_de", "train") == before
    assert json.loads(corpus_data.split_preprocessing_spec_json(strict, "multi30k_en_de", "dev"))["blank_references"] == "fail"


def fetch_compression_target(workdir: Path, name: str, entry: dict, mirror: Path, *args: str):
    overlay = workdir.parent / f"{workdir.name}-{name}.yaml"
    overlay.write_text(yaml.safe_dump({"compression": {"data": {name: entry}}}))
    return snakemake(workdir, f"resources/compression/{name}.jsonl", "--cores", "1", *args,
                     "--configfile", str(overlay), extra_env={"NMT_DATA_MIRROR": str(mirror)})


@pytest.mark.heavy
def test_moving_the_mirror_refetches_no_compression_set_but_a_repaired_one_is(tmp_path):
    """fetch_compression_set (rules/compression.smk) as fetch: the mirror directory is no rule
    parameter, so another mirror with the same bytes plans nothing; changed bytes of a set
    without sha256 plan the fetch again."""
    first, moved, workdir = tmp_path / "mirror", tmp_path / "moved", tmp_path / "work"
    (first / "compression").mkdir(parents=True)
    record = json.dumps({"graph": {"sentence": "A long sentence ."}, "compression": {"text": "A sentence ."}})
    (first / "compression" / "tiny.jsonl.gz").write_bytes(gzip.compress(f"{record}\n".encode()))
    entry = {"url": "http://127.0.0.1:9/unused", "mirror": "compression/tiny.jsonl.gz"}  # the mirror comes first
    fetch_compression_target(workdir, "tiny", entry, first)
    shutil.copytree(first, moved, copy_function=shutil.copy)  # same bytes, new mtimes, other path
    again = fetch_compression_target(workdir, "tiny", entry, moved, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]
    (moved / "compression" / "tiny.jsonl.gz").write_bytes(gzip.compress(f"{record}\n{record}\n".encode()))
    planned = jobs_of(fetch_compression_target(workdir, "tiny", entry, moved, "-n", "-p"))
    assert [job["rule"] for job in planned] == ["fetch_compression_set"]


@pytest.mark.heavy
@needs_mirror
def test_rules_run_the_interpreter_that_runs_snakemake(tmp_path):
    """``/path/to/venv/bin/snakemake`` without the venv on PATH: the jobs' ``python`` is still
    the interpreter running Snakemake (docs/faults.md, "Runs that collide or stop")."""
    import os
    import sys

    bare = os.pathsep.join(["/usr/bin", "/bin"])  # shell tools, but not this interpreter
    entry = yaml.safe_load((ROOT / "config.yaml").read_text())["corpora"]["multi30k_en_de"]["downloads"]["val.en"]
    overlay = tmp_path / "val.yaml"
    overlay.write_text(yaml.safe_dump({"corpora": {"multi30k_en_de": {"downloads": {"val.en": entry}}}}))
    proc = snakemake(tmp_path / "work", "resources/downloads/multi30k_en_de/val.en", "--cores", "1", "--configfile",
                     str(overlay), check=False, extra_env={"PATH": bare})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert (tmp_path / "work/resources/downloads/multi30k_en_de/val.en").stat().st_size > 0

    from workflow_scripts.dag.cluster import path_with_interpreter

    assert path_with_interpreter(sys.executable, {"PATH": bare}, False).split(os.pathsep)[0] == os.path.dirname(sys.executable)
    assert path_with_interpreter(sys.executable, {"PATH": bare}, True) == bare  # conda or apptainer: their python
    assert path_with_interpreter(str(tmp_path / "python3"), {"PATH": bare}, False) == bare  # no `python` beside it


def test_a_forced_refetch_with_a_wrong_checksum_is_said_on_the_console(tmp_path):
    """``--forcerun`` of a fetch whose mirror copy changed since (so its sha256 no longer
    matches): the kept download is put back and the run succeeds.  Before, the warning was only
    in logs/fetch and the console said nothing; now the run ends with it."""
    mirror = tmp_path / "mirror" / "multi30k"
    mirror.mkdir(parents=True)
    shutil.copy(MIRROR / "multi30k" / "val.en.gz", mirror / "val.en.gz")
    target = "resources/downloads/multi30k_en_de/val.en"
    environment = {"NMT_DATA_MIRROR": str(mirror.parent)}
    snakemake(tmp_path / "work", "--cores", "1", target, extra_env=environment)
    good = (tmp_path / "work" / target).read_bytes()
    (mirror / "val.en.gz").write_bytes(gzip.compress(gzip.decompress(good) + b"one line more\n"))
    proc = snakemake(tmp_path / "work", "--cores", "1", target, "--forcerun", target, extra_env=environment)
    [line] = [line for line in proc.stderr.splitlines() if line.startswith("warning: fetch: warning: ")]
    assert f"{mirror / 'val.en.gz'}: sha256 mismatch for download 'val.en'" in line
    assert "; kept the previous download of 'val.en' (resources/downloads/.kept/multi30k_en_de/val.en: " in line
    assert (tmp_path / "work" / target).read_bytes() == good


def test_kept_blank_lines_are_repeated_when_the_run_ends(tmp_path):
    """``blank_references: warn``: the preprocess jobs' warnings, read back from their logs for
    the active corpora (the Snakefile's onsuccess prints them); other corpora's logs are not read."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["active_corpora"] = ["multi30k_en_de"]
    warned = "preprocess: warning: a.en / a.de: 2 blank target (de) lines: 3, 9; kept (blank_references: warn)"
    logs = tmp_path / "logs" / "preprocess"
    (logs / "multi30k_en_de").mkdir(parents=True)
    (logs / "multi30k_en_de" / "test_2016_flickr.ref1.en-de.log").write_text(f"{warned}\npreprocess en-de: ...\n")
    (logs / "multi30k_en_de" / "dev.en-de.log").write_text("preprocess en-de dev/test: no blank lines\n")
    (logs / "tatoeba_zh_en").mkdir()
    (logs / "tatoeba_zh_en" / "dev.zh-en.log").write_text(warned.replace("a.en", "other") + "\n")
    assert corpus_data.blank_reference_warnings(config, str(tmp_path)) == [warned]


def test_trainings_that_stopped_as_diverged_are_repeated_when_the_run_ends(tmp_path):
    """The train logs' line of a run that ended as diverged (nmt-train --on-divergence stop), for
    the active runs and every compressor, each named (the Snakefile's onsuccess and onerror print
    them); a log without it, or of an inactive run, gives nothing."""
    from nmtmodels.training.divergence import LINE_PREFIX
    from workflow_scripts.dag import runs

    assert runs.DIVERGED_LINE == f"{LINE_PREFIX}training diverged: "
    config = {"active_corpora": ["c"], "active_experiments": ["a", "b"],
              "experiments": {name: {"corpora": ["c"]} for name in ("a", "b", "inactive")}}
    line = "stopped: training diverged: the training loss per target token is 29,068.3 at update 10, over ...; ..."
    for rule, run, text in (("train", "a", f"update 10/20 | loss 29068.3\n{line}\n"), ("train", "b", "finished: max_updates\n"),
                            ("train", "inactive", f"{line}\n"), ("train_compressor", "esc", f"{line}\n")):
        (tmp_path / "logs" / rule / run).mkdir(parents=True)
        (tmp_path / "logs" / rule / run / "c.log").write_text(text)
    assert runs.diverged_training_lines(config, str(tmp_path)) == [f"train a on c {line}", f"train_compressor esc on c {line}"]


@pytest.mark.slow
@needs_mirror
def test_a_diverging_experiment_ends_in_one_line_and_a_summary_that_says_so(tmp_path):
    """Issue 69: ``train: {lr: 100}`` on the claim's system (relpos, one seed, against the
    baseline).  Before, its train job failed (``nmt-train: error: training diverged: ...``) and
    ``snakemake all`` stopped with no summary.  Now the run ends with exit status 0, the console
    says which training diverged, where and at what loss, and the summary gives its stop reason
    "diverged", a warning, and the claim "not comparable" naming the run; its package is built
    and says so (its log, and the mark in its checkpoint)."""
    from nmtmodels.checkpoint import load_checkpoint

    overlay = tmp_path / "lr100.yaml"
    overlay.write_text(yaml.safe_dump({"experiments": {
        "baseline": {"seeds": [1]},
        "relpos": {"seeds": [1], "train": {"lr": 100},
                   "differs_from_baseline": {"train.lr": "a learning rate that diverges (docs/faults.md)"}}}}))
    work = tmp_path / "work"
    proc = snakemake(work, "all", "--cores", "2", *CI, str(overlay), "--config", "active_corpora=[multi30k_en_de]",
                     "active_experiments=[baseline,relpos]")
    [line] = [line for line in proc.stderr.splitlines() if "diverged" in line and line.startswith("warning: ")]
    assert re.fullmatch(r"warning: train relpos on multi30k_en_de stopped: training diverged: the training loss per target "
                        r"token is [\d,.]+ at update \d+, over 100 x ln\(target vocabulary size \d+\) = [\d.]+; "
                        r"results/experiments/relpos/multi30k_en_de/train/checkpoint_best\.pt is the model at the stop "
                        r"\(update \d+; none was validated before it\), marked as diverged; lower train\.lr, .*", line), line

    markdown = (work / "results/report/summary.md").read_text(encoding="utf-8")
    table = markdown.split("## Training runs")[1].split("\n## ")[0]
    rows = {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()
                                          if line.startswith("| ") and "| multi30k_en_de |" in line)}
    assert rows["relpos"][10] == "diverged" and rows["baseline"][10] == "max_updates", rows
    warnings = markdown.split("## Warnings")[1].split("\n## ")[0]
    assert f"- relpos on multi30k_en_de: {line.split(' stopped: ')[1]}. Its scores and model package" in warnings
    yours = markdown.split("## Your claims")[1].split("\n## ")[0]
    assert "| **not comparable**; relpos (seed 1) diverged" in yours
    data = json.loads((work / "results/report/summary.json").read_text(encoding="utf-8"))
    [claim] = [row for row in data["claims"] if row["system"] == "relpos"]
    assert (claim["verdict"], claim["why"]) == ("not comparable", "relpos (seed 1) diverged (training stopped as diverged)")

    package_log = (work / "logs/model_package/relpos/multi30k_en_de.log").read_text(encoding="utf-8")
    assert "nmt-package: warning: results/experiments/relpos/multi30k_en_de/train/checkpoint_best.pt: its training run " \
           "diverged and was stopped" in package_log
    assert load_checkpoint(work / "results/experiments/relpos/multi30k_en_de/model/checkpoint.pt")["diverged"]
    assert "diverged" not in load_checkpoint(work / "results/experiments/baseline/multi30k_en_de/model/checkpoint.pt")
