"""Faults of ``nmt-translate`` that used to get through (issue 59, docs/faults.md "Translation"):
signals while writing ``--output``, temporary files of killed runs, a closed standard output, a
gzip input, a full disk, broken user modules and a package that records no model digest.  The
model is the untrained tiny Transformer package of test_model_package.py."""
from __future__ import annotations

import gzip
import io
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import nmtmodels.decoding.search
from nmtmodels import cli
from nmtmodels.cli import translate as translate_cli
from nmtmodels.tests.test_cli import in_small_tmpfs
from nmtmodels.tests.test_model_package import WORDS, bpe_package
from nmtmodels.tests.test_model_package import files as package_files

REPO = Path(__file__).resolve().parents[2]
PROGRESS = re.compile(r"^nmt-translate: [\d,]+ (of [\d,]+ )?sentences, ")
files = package_files  # the fixture, under the name the tests take


def lines_of(path: Path, count: int) -> Path:
    path.write_text("".join(f"{' '.join(WORDS[i % 7:] + WORDS[:i % 7])}\n" for i in range(count)), encoding="utf-8")
    return path


def translate_command(directory: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "nmtmodels.cli", "translate", "--checkpoint", str(directory), "--threads", "1", *args]


def temporary_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# ---------------------------------------------------------------------- signals
@pytest.mark.heavy
@pytest.mark.parametrize("signum, earlier", [(signal.SIGTERM, None), (signal.SIGINT, None), (signal.SIGTERM, "old\n")])
def test_a_signal_while_writing_the_output_is_one_line_and_leaves_no_partial_file(files, tmp_path, signum, earlier):
    """Before: SIGTERM exited 143 without a word and left .out.de.XXXXXXXX.tmp; SIGINT printed a
    61-line traceback.  The signal comes once the first batch is translated (its progress line),
    when the temporary output file exists."""
    directory = bpe_package(files)
    out = tmp_path / "out" / "out.de"
    out.parent.mkdir()
    if earlier is not None:
        out.write_text(earlier)
    command = translate_command(directory, "--input", str(lines_of(tmp_path / "big.en", 120000)), "--output", str(out),
                                "--log-interval", "0")
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if PROGRESS.match(line):
                assert temporary_files(out.parent)  # writing
                proc.send_signal(signum)
                break
        rest = proc.stderr.read()
        assert proc.wait(timeout=120) == 128 + signum
    finally:
        proc.kill()
    said = [line for line in rest.splitlines() if not PROGRESS.match(line) and "warning:" not in line]
    kept = "is left as it was" if earlier is not None else "was not written"
    assert said == [f"nmt-translate: error: interrupted by {signal.Signals(signum).name}; {out} {kept} "
                    "(no partial file is left)"]
    assert temporary_files(out.parent) == []
    assert out.exists() == (earlier is not None) and (earlier is None or out.read_text() == earlier)


class _SignalOnImport:
    """A finder that sends ``signum`` to this process when ``module`` is imported: the signal
    arrives while the command imports torch (a second or more of its start)."""

    def __init__(self, module: str, signum: int):
        self.module, self.signum = module, signum

    def find_spec(self, name, path=None, target=None):
        if name == self.module:
            os.kill(os.getpid(), self.signum)
        return None


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_torch_is_imported_is_one_line(files, tmp_path, monkeypatch, capsys, signum):
    """Before: ``timeout -s TERM 0.5 nmt-translate ... --output out.txt`` printed a 46-line
    traceback ending ``Interrupted: 15`` with exit status 1 (SIGINT: a traceback inside
    ``import torch``): the command imported the checkpoint module (and torch) before it caught
    signals.  A real signal, sent when that import starts."""
    directory = bpe_package(files)
    out = tmp_path / "out.txt"
    monkeypatch.delitem(sys.modules, "nmtmodels.checkpoint")
    monkeypatch.setattr(sys, "meta_path", [_SignalOnImport("nmtmodels.checkpoint", signum), *sys.meta_path])
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C's KeyboardInterrupt, as in a shell
    try:
        status = cli.main(["translate", "--checkpoint", str(directory), "--input", str(files / "raw.en"),
                           "--output", str(out)])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert status == 128 + signum
    assert capsys.readouterr().err.splitlines() == [
        f"nmt-translate: error: interrupted by {signal.Signals(signum).name}; {out} was not written (no partial file is left)"]
    assert not out.exists() and temporary_files(tmp_path) == []


def test_temporary_files_of_killed_runs_are_removed_or_named(files, tmp_path, capsys):
    """A run killed with SIGKILL leaves its temporary file: the next one removes those of
    processes no longer running (the PID is in the name) and names an earlier version's."""
    directory = bpe_package(files)
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    dead = int(ended.stdout)
    (tmp_path / f".out.txt.{dead}.k2j4h5g6.tmp").write_text("a killed run's half\n")
    (tmp_path / f".out.txt.{os.getppid()}.a1b2c3d4.tmp").write_text("a live process's\n")
    (tmp_path / ".out.txt.x8y7z6w5.tmp").write_text("an earlier version's\n")
    assert cli.main(["translate", "--checkpoint", str(directory), "--input", str(files / "raw.en"),
                     "--output", str(tmp_path / "out.txt")]) == 0
    assert temporary_files(tmp_path) == [f".out.txt.{os.getppid()}.a1b2c3d4.tmp", ".out.txt.x8y7z6w5.tmp"]
    err = capsys.readouterr().err
    assert (f"nmt-translate: warning: {tmp_path / '.out.txt.x8y7z6w5.tmp'}: a temporary file that an earlier run left "
            f"(killed while it wrote {tmp_path / 'out.txt'}?); remove it unless that run still goes on") in err


# ---------------------------------------------------------------------- a closed pipe
@pytest.mark.heavy
def test_a_closed_standard_output_ends_quietly(files, tmp_path):
    """``nmt-translate ... | head -n 2``: before, a further chunk was translated, then
    ``error: Broken pipe``.  Now no word on stderr and exit status 141, as a Unix tool's."""
    directory = bpe_package(files)
    proc = subprocess.Popen(translate_command(directory, "--input", str(lines_of(tmp_path / "big.en", 12000))),
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        head = [proc.stdout.readline() for _ in range(2)]
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 128 + signal.SIGPIPE
    finally:
        proc.kill()
    assert all(line.endswith(b"\n") for line in head)
    assert "error" not in err and "Traceback" not in err and "Broken pipe" not in err


def test_standard_output_gets_the_first_lines_after_a_short_search(files, tmp_path, monkeypatch, capsys):
    """``nmt-translate | head -n 2``: before, the first line came only once the first chunk of
    5,000 lines was searched.  Now standard output's chunks are 16, 32, ... lines, each written
    before the next is read; ``--output`` keeps whole chunks.  Counted as the searches made."""
    directory = bpe_package(files)
    text = lines_of(tmp_path / "in.en", 60).read_text(encoding="utf-8")
    searched: list[int] = []
    real = nmtmodels.decoding.search.translate_dataset
    monkeypatch.setattr(nmtmodels.decoding.search, "translate_dataset",
                        lambda model, data, cfg, **kw: searched.append(len(data)) or real(model, data, cfg, **kw))
    written = []  # searches made when each chunk's last line was written
    real_write = translate_cli._Writer.write
    monkeypatch.setattr(translate_cli._Writer, "write", lambda self, lines, chunk_done=False:
                        (chunk_done and written.append(len(searched))) or real_write(self, lines, chunk_done=chunk_done))
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert cli.main(["translate", "--checkpoint", str(directory), "--log-interval", "0"]) == 0
    assert searched == [16, 32, 12] and written == [1, 2, 3]
    assert len(capsys.readouterr().out.splitlines()) == 60
    searched.clear()
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert cli.main(["translate", "--checkpoint", str(directory), "--output", str(tmp_path / "out.de")]) == 0
    assert searched == [60]


# ---------------------------------------------------------------------- gzip input
def test_a_gzip_input_is_read_and_a_corrupt_one_is_one_line(files, tmp_path, capsys):
    """Before: 98 'invalid UTF-8' errors and 98 empty lines, with no mention of gzip."""
    directory = bpe_package(files)
    plain = lines_of(tmp_path / "test.en", 98)
    packed = tmp_path / "test.en.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for source, output in ((plain, "plain.de"), (packed, "packed.de")):
        assert cli.main(["translate", "--checkpoint", str(directory), "--input", str(source),
                         "--output", str(tmp_path / output)]) == 0
    assert (tmp_path / "packed.de").read_text() == (tmp_path / "plain.de").read_text()
    assert len((tmp_path / "packed.de").read_text().splitlines()) == 98
    capsys.readouterr()
    cut = tmp_path / "cut.en.gz"
    cut.write_bytes(packed.read_bytes()[:-20])
    assert cli.main(["translate", "--checkpoint", str(directory), "--input", str(cut), "--output",
                     str(tmp_path / "cut.de")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"nmt-translate: error: {cut}: corrupt or truncated gzip file (")
    assert not (tmp_path / "cut.de").exists() and temporary_files(tmp_path) == []


def test_a_gzip_standard_input_is_read_as_a_gzip_input_is(files, tmp_path):
    """``nmt-translate --checkpoint M < test.en.gz``.  Before: an ``<stdin>:N: invalid UTF-8``
    error and an empty output line for each line of the compressed bytes, exit status 2, no word
    of gzip (only ``--input`` looked at the magic bytes).  A cut one is one line, as ``--input``'s."""
    directory = bpe_package(files)
    plain = lines_of(tmp_path / "test.en", 98)
    packed = tmp_path / "test.en.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    cut = tmp_path / "cut.en.gz"
    cut.write_bytes(packed.read_bytes()[:-20])
    runs = {}
    for source in (plain, packed, cut):
        with source.open("rb") as stdin:
            runs[source.name] = subprocess.run(translate_command(directory), stdin=stdin, cwd=REPO, capture_output=True,
                                               timeout=300, check=False)
    assert runs["test.en"].returncode == 0 and len(runs["test.en"].stdout.splitlines()) == 98
    assert runs["test.en.gz"].returncode == 0, runs["test.en.gz"].stderr
    assert runs["test.en.gz"].stdout == runs["test.en"].stdout
    assert runs["cut.en.gz"].returncode == 2
    said = [line for line in runs["cut.en.gz"].stderr.decode().splitlines() if "warning:" not in line
            and not line.startswith("nmt-translate: translated ")]
    assert len(said) == 1 and said[0].startswith("nmt-translate: error: <stdin>: corrupt or truncated gzip file ("), said


# ---------------------------------------------------------------------- a full disk
@pytest.mark.heavy
def test_a_full_disk_names_the_output_and_the_free_space(files, tmp_path):
    """A real full file system (a 16 KiB tmpfs, no fault injected into Python).  Before:
    ``nmt-translate: error: No space left on device``, no file named (a write's OSError has no
    file name).  The earlier output stays as it was."""
    directory = bpe_package(files)
    full = tmp_path / "full"
    out = full / "out.txt"
    source = lines_of(tmp_path / "in.en", 4000)
    command = " ".join(translate_command(directory, "--input", str(source), "--output", str(out)))
    proc = subprocess.run(in_small_tmpfs(full, 16, f"printf 'earlier\\n' > {out}; {command}; rc=$?; cat {out}; "
                                                   f"ls -a {full}; exit $rc"),
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    error = proc.stderr.splitlines()[-1]
    assert re.fullmatch(rf"nmt-translate: error: {re.escape(str(out))}: No space left on device "
                        rf"\([\d,]+ bytes free in {re.escape(str(full))}\)", error), error
    assert proc.stdout.split() == ["earlier", ".", "..", "out.txt"]  # no temporary file left


# ---------------------------------------------------------------------- user modules, model digests
def test_a_missing_user_module_is_an_error_with_a_built_in_family(files, tmp_path, monkeypatch, capsys):
    """Before: ``NMT_USER_MODULES=missing.py nmt-translate`` with a built-in family exited 0
    without a word (the modules were imported only to look up an unknown family)."""
    directory = bpe_package(files)
    monkeypatch.setenv("NMT_USER_MODULES", str(tmp_path / "missing.py"))
    assert cli.main(["translate", "--checkpoint", str(directory), "--input", str(files / "raw.en"),
                     "--output", str(tmp_path / "out.txt")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"nmt-translate: error: NMT_USER_MODULES '{tmp_path / 'missing.py'}': no such file"]
    assert not (tmp_path / "out.txt").exists()
