"""Start-up faults of the workflow (docs/faults.md, "Workflow"), each one line before any job runs
(workflow_scripts/dag/startup.py):

* a config error: ``error: KEY: ...`` on stderr, exit status 1, no Python frames;
* a results (logs, downloads) directory the jobs cannot write: one line naming it;
* a killed run's lock and incomplete files: one hint with both steps, ``--unlock`` and
  ``--rerun-incomplete``, at the first of Snakemake's two errors.

The Snakemake runs are dry runs or stop before the first job: no corpus mirror is needed.
"""
from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from nmtmodels.tests.filesystem import read_only
from tests.snakemake_runs import ROOT, snakemake
from workflow_scripts.dag import WorkflowConfigError, startup

NO_MIRROR = {"NMT_DATA_MIRROR": "/nonexistent/mirror"}
DOWNLOAD = "resources/downloads/multi30k_en_de/val.en"


def error_lines(proc) -> list[str]:
    return [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith(("error:", "hint:"))]


@pytest.mark.heavy
@pytest.mark.parametrize("overlay, message", [
    ({"active_corpora": ["nope"]},
     "active_corpora[0]: unknown corpus 'nope' (defined: multi30k_de_en, multi30k_en_de, tanaka_ja_en, tatoeba_zh_en)"),
    # a number in quotes: the message of nmt-train (nmtmodels/tests/test_cli.py) after the experiment's key path
    ({"experiments": {"baseline": {"train": {"lr": "1e-3 "}}}},
     "experiments.baseline.train (training).lr: expected float, got str ('1e-3 '); a string is not a number: "
     "write 1e-3 without quotes or spaces"),
    # seeds numpy refuses (np.random.seed: 0 to 2**32 - 1); before, the training job died with a traceback
    ({"experiments": {"baseline": {"seeds": [4294967296]}}},
     "experiments.baseline.seeds[0]: 4294967296 is greater than the maximum of 4294967295"),
    ({"training": {"seed": -5}},
     "compression.compressors.esc_unsup.train (training).seed: must be between 0 and 2**32 - 1 (4294967295), got -5"),
])
def test_a_config_error_is_one_line_and_exit_status_1(tmp_path, overlay, message):
    """Before, Snakemake printed the message, then 3 to 6 ``File "...", line N`` frames."""
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(overlay))
    proc = snakemake(tmp_path / "work", "-n", "all", "--cores", "1", "--configfile", str(tmp_path / "bad.yaml"),
                     check=False, extra_env=NO_MIRROR)
    assert proc.returncode == 1
    assert error_lines(proc) == [f"error: {message}"]
    assert 'File "' not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


USER_MODULES = {
    "missing.py": None,
    "syntax.py": "def broken(:\n",
    "imports.py": "import no_such_package_anywhere\n",
    "taken.py": ("from nmtmodels.models.base import register_model\nfrom nmtmodels.models.transformer import TransformerModel\n"
                 "@register_model('transformer')\nclass Mine(TransformerModel):\n    pass\n"),
}


@pytest.mark.heavy
@pytest.mark.parametrize("name, problem", [
    ("missing.py", "no such file ({work}/missing.py)"),
    ("syntax.py", "cannot be imported (SyntaxError: "),
    ("imports.py", "cannot be imported (ModuleNotFoundError: No module named 'no_such_package_anywhere')"),
    ("taken.py", "cannot be imported (ValueError: model family 'transformer' is already registered by TransformerModel ("),
])
def test_a_broken_user_module_is_one_line_naming_the_key_and_the_file(tmp_path, name, problem):
    """Before: two good lines naming NMT_USER_MODULES, then 6 Python frames (the package's
    ConfigError went past one_line_errors)."""
    work = tmp_path / "work"
    work.mkdir()
    if USER_MODULES[name] is not None:
        (work / name).write_text(USER_MODULES[name])
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"user_modules": [name]}))
    proc = snakemake(work, "-n", "all", "--cores", "1", "--configfile", str(tmp_path / "bad.yaml"),
                     check=False, extra_env=NO_MIRROR)
    assert proc.returncode == 1
    [line] = error_lines(proc)
    assert line.startswith(f"error: user_modules[0] ('{name}'): {problem.format(work=work)}")
    assert 'File "' not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def workflow_with_claims(tmp_path: Path, text: str) -> Path:
    """A copy of the workflow whose claims file (workflow_scripts/evaluation/claims.yaml, where
    workflow_scripts.dag.paths finds it) holds ``text``: the Snakefile and workflow_scripts
    copied, everything else linked."""
    import shutil

    copy = tmp_path / "workflow"
    copy.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in ("Snakefile", "workflow_scripts"):
            (shutil.copytree(entry, copy / entry.name, ignore=shutil.ignore_patterns("__pycache__"))
             if entry.is_dir() else shutil.copy(entry, copy / entry.name))
        elif not entry.name.startswith("."):
            (copy / entry.name).symlink_to(entry)
    (copy / "workflow_scripts" / "evaluation" / "claims.yaml").write_text(text, encoding="utf-8")
    return copy


@pytest.mark.heavy
@pytest.mark.parametrize("change, problem", [
    (lambda text: text.replace("    - experiment: transformer_carry_gate", "    - experment: transformer_carry_gate", 1),
     "graph_half_dim_gate.controls[1]: needs experiment, role and what"),
    (lambda text: text + "broken: [\n", "not valid YAML ("),
])
def test_malformed_claims_are_one_line_before_any_job(tmp_path, change, problem):
    """Before: ``KeyError: 'experiment'`` from claim_controls at DAG build, with frames (the
    summary job checked the file in one line, but only at the end of the run)."""
    claims = ROOT / "workflow_scripts" / "evaluation" / "claims.yaml"
    copy = workflow_with_claims(tmp_path, change(claims.read_text(encoding="utf-8")))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(copy / "Snakefile"), "-d", str(tmp_path / "work"), "-n", "all",
                           "--cores", "1"], cwd=copy, capture_output=True, text=True, check=False,
                          env={**os.environ, **NO_MIRROR})
    assert proc.returncode == 1, proc.stderr[-2000:]
    [line] = error_lines(proc)
    assert line.startswith(f"error: {copy / 'workflow_scripts' / 'evaluation' / 'claims.yaml'}: {problem}"), line
    assert 'File "' not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def test_a_schema_error_is_one_line_naming_the_key(capsys):
    """Snakemake's ``validate`` prints the key's schema (a dozen lines) after its message."""
    from snakemake.utils import validate

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["corpora"]["multi30k_en_de"]["bpe"]["merges"] = [8000, "many"]
    with pytest.raises(SystemExit) as caught, startup.one_line_errors():
        validate(config, str(ROOT / "schemas/config.schema.yaml"))
    assert caught.value.code == 1
    assert capsys.readouterr().err == "error: corpora.multi30k_en_de.bpe.merges[1]: 'many' is not of type 'integer'\n"
    with pytest.raises(ValueError, match="not a config error"), startup.one_line_errors():
        raise ValueError("not a config error")  # anything else goes on to Snakemake
    with pytest.raises(SystemExit), startup.one_line_errors():
        raise WorkflowConfigError("x: y")
    assert capsys.readouterr().err == "error: x: y\n"


def test_a_download_with_only_a_mirror_path_says_it_needs_url_or_local(capsys):
    """Before: ``error: corpora.multi30k_en_de.downloads.train.en: {'mirror': ...} is not valid
    under any of the given schemas``, which does not say what is missing."""
    from snakemake.utils import validate  # as the test above: Snakemake's, where the schema is checked

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    download = config["corpora"]["multi30k_en_de"]["downloads"]["train.en"]
    config["corpora"]["multi30k_en_de"]["downloads"]["train.en"] = {"mirror": download["mirror"]}
    with pytest.raises(SystemExit), startup.one_line_errors():
        validate(config, str(ROOT / "schemas/config.schema.yaml"))
    assert capsys.readouterr().err == "error: corpora.multi30k_en_de.downloads.train.en: needs url or local (it has mirror)\n"


# ---------------------------------------------------------------------- unwritable directories
def test_the_nearest_existing_directory_of_each_planned_file_is_checked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "data").mkdir(parents=True)
    (tmp_path / "logs").write_text("")  # a file where a directory should be
    planned = ["results/data/c/tok/train.en", "results/benchmarks/fetch/c/x.tsv"]

    def writable_but(denied):
        return lambda path, mode: path != denied

    assert startup.unwritable_directory(planned, access=writable_but("results")) == (
        "results", "directory is not writable", "results/benchmarks/fetch/c/x.tsv")
    assert startup.unwritable_directory(planned, access=writable_but("results/data")) == (
        "results/data", "directory is not writable", "results/data/c/tok/train.en")
    assert startup.unwritable_directory(planned, access=writable_but("nothing")) is None
    assert startup.unwritable_directory(["logs/fetch/c/x.log"], access=writable_but("nothing")) == (
        "logs", "not a directory", "logs/fetch/c/x.log")
    assert startup.unwritable_directory(["new.txt"], access=writable_but(".")) == (".", "directory is not writable", "new.txt")


@pytest.mark.heavy
def test_a_read_only_results_directory_stops_the_run_before_its_first_job(tmp_path):
    """Before, the first job started and Snakemake failed creating its benchmark directory
    (``WorkflowError: Failed to create output directory ... PermissionError``)."""
    work = tmp_path / "work"
    with read_only(work / "results"):
        planned = snakemake(work, "-n", DOWNLOAD, "--cores", "1", check=False, extra_env=NO_MIRROR)
        proc = snakemake(work, DOWNLOAD, "--cores", "1", check=False, extra_env=NO_MIRROR)
    assert planned.returncode == 0, planned.stderr[-2000:]  # a dry run writes nothing: not checked
    assert proc.returncode == 1
    assert error_lines(proc) == [
        "error: results: directory is not writable, but the jobs to run write below it (e.g. "
        "results/benchmarks/fetch/multi30k_en_de/val.en.tsv); make it writable, or run in another directory (snakemake -d DIR)"]
    assert "Error in rule" not in proc.stdout + proc.stderr and not (work / DOWNLOAD).exists()
    assert not list((work / ".snakemake" / "locks").glob("*"))  # the lock is released


@pytest.mark.parametrize(("argv", "path"), [
    (["--report", "results/report.html", "--configfile", "c.yaml"], "results/report.html"),
    (["--report=out/r.zip"], "out/r.zip"),
    (["--report", "--configfile", "c.yaml"], "report.html"),  # no FILE: Snakemake's default
    (["all", "--report"], "report.html"),
    (["--cores", "2", "all"], None),
    (["--report-stylesheet", "s.css", "--report", "a.html"], "a.html"),
])
def test_the_report_path_is_read_as_snakemake_reads_it(argv, path):
    assert startup.report_path(argv) == path


@pytest.mark.heavy
def test_a_report_into_a_read_only_results_directory_is_one_line_before_the_dag(tmp_path):
    """``snakemake --report results/report.html`` with results/ read-only (root: chattr +i; a
    read-only mount answers os.access the same).  Before, Snakemake built the DAG and the whole
    report, then failed writing it: a traceback of 8 frames ending in ``OSError: [Errno 30]
    Read-only file system: 'results/report.html'``.  A report outside results/ is not stopped
    (the report itself needs a finished run: checked here by the function the Snakefile calls)."""
    work = tmp_path / "work"
    with read_only(work / "results"):
        proc = snakemake(work, "--report", "results/report.html", check=False, extra_env=NO_MIRROR)
        startup.check_report_path(["--report", str(work / "report.html")])  # beside results/: no error
    assert proc.returncode == 1
    assert error_lines(proc) == [
        "error: results: directory is not writable, but snakemake --report writes results/report.html there; write the "
        "report elsewhere (e.g. snakemake --report report.html, in the working directory, or --report /tmp/report.html) "
        "or make results writable"]
    assert "Traceback" not in proc.stdout + proc.stderr and "Building DAG" not in proc.stdout + proc.stderr


# ---------------------------------------------------------------------- after a killed run
def leave_killed_run_state(work: Path, partial: str, lock: bool = True) -> None:
    """What a run killed while a job wrote ``partial`` leaves: the file, its incomplete marker
    (Snakemake's file persistence: the path in URL-safe base64) and the run's lock."""
    (work / partial).parent.mkdir(parents=True, exist_ok=True)
    (work / partial).write_text("half a file\n")
    incomplete = work / ".snakemake" / "incomplete"
    incomplete.mkdir(parents=True)
    (incomplete / base64.urlsafe_b64encode(partial.encode()).decode()).write_text('{"external_jobid": null}')
    if lock:
        (work / ".snakemake" / "locks").mkdir(parents=True)
        (work / ".snakemake" / "locks" / "0.output.lock").write_text(f"{partial}\n")


@pytest.mark.heavy
def test_a_killed_run_gets_one_hint_with_both_steps(tmp_path):
    """Before, Snakemake asked for --rerun-incomplete; rerun with it, it asked for --unlock."""
    work = tmp_path / "work"
    leave_killed_run_state(work, DOWNLOAD)
    proc = snakemake(work, "-n", DOWNLOAD, "--cores", "1", check=False, extra_env=NO_MIRROR)
    assert proc.returncode == 1 and "IncompleteFilesException" in proc.stdout + proc.stderr
    assert error_lines(proc) == [
        f"hint: a killed run left a lock and incomplete files in {work.resolve()}: unless another snakemake is running "
        "there, run `snakemake --unlock`, then rerun your command with `--rerun-incomplete`"]


def test_the_hint_needs_both_a_lock_and_an_incomplete_file(tmp_path):
    both, unlocked, gone = tmp_path / "both", tmp_path / "unlocked", tmp_path / "gone"
    leave_killed_run_state(both, "results/data/c/tok/train.en")
    leave_killed_run_state(unlocked, "results/data/c/tok/train.en", lock=False)
    leave_killed_run_state(gone, "results/data/c/tok/train.en")
    (gone / "results/data/c/tok/train.en").unlink()  # an atomic writer left no file: nothing to rerun
    assert list(startup.incomplete_files(both / ".snakemake")) == ["results/data/c/tok/train.en"]
    assert startup.killed_run_left_state(both / ".snakemake")
    assert not startup.killed_run_left_state(unlocked / ".snakemake")
    assert not startup.killed_run_left_state(gone / ".snakemake")
    assert not startup.killed_run_left_state(tmp_path / "fresh" / ".snakemake")


@pytest.mark.heavy
def test_a_lock_held_by_a_live_run_names_its_pid_instead_of_suggesting_unlock(tmp_path):
    work = tmp_path / "work"
    (work / ".snakemake" / "locks").mkdir(parents=True)
    (work / ".snakemake" / "locks" / "0.output.lock").write_text(f"{DOWNLOAD}\n")  # what a live run holds
    live = subprocess.Popen(["snakemake", "60"], executable="sleep", cwd=work)  # sleep 60, its argv[0] snakemake
    try:
        for _ in range(100):  # until the child has exec'd
            if startup.live_snakemakes(work):
                break
            time.sleep(0.05)
        assert startup.live_snakemakes(work) == [(live.pid, "snakemake 60")]
        proc = snakemake(work, DOWNLOAD, "--cores", "1", check=False, extra_env=NO_MIRROR)
    finally:
        live.kill()
        live.wait()
    assert proc.returncode == 1 and "LockException" in proc.stdout + proc.stderr
    assert error_lines(proc) == [
        f"hint: the lock in {work.resolve()} is held by a snakemake that is still running there (pid {live.pid}: snakemake 60): "
        "wait for it to finish or stop it (Ctrl-C, or kill PID); do not run `snakemake --unlock` while it runs"]
    assert startup.live_snakemakes(work) == []
