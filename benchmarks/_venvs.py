"""Each peer toolkit's own virtual environment, and running a peer's commands.

Every peer is installed into ``benchmarks/.venvs/<name>`` (``python -m venv
--system-site-packages``, so the system's torch is reused; nothing is installed into the
project's environment), with the pinned pip commands in :data:`INSTALL`.  A finished
install is reused while its commands stay the same; a failed one is remembered with its
reason (``--reinstall`` retries).  A peer's commands run with :func:`child_env` and
:func:`run_logged`, whose failures are :class:`PeerError` with the log's telling line.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import site
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._setup import Setup

ROOT = Path(__file__).resolve().parents[1]
VENV_ROOT = ROOT / "benchmarks" / ".venvs"

# Pinned installs per environment; each inner list is one ``pip install`` command.
# OpenNMT-py and Sockeye pin an older torch (2.2 / <1.14) that would pull a multi-GB CUDA
# build: they go in with --no-deps and get their import-time dependencies pinned by hand.
INSTALL: dict[str, list[list[str]]] = {
    "opennmt-py": [
        ["--no-deps", "OpenNMT-py==3.5.1", "pyonmttok==1.38.1", "ConfigArgParse==1.9.0"],
        # onmt.transforms imports every transform module at start-up, so the optional ones'
        # libraries (spacy, fasttext, ahocorasick, rapidfuzz) must import even though unused.
        ["ctranslate2==3.24.0", "pyahocorasick==2.1.0", "rapidfuzz==3.9.7", "fasttext-wheel==0.9.2",
         "spacy==3.8.18", "waitress==3.0.0"],
    ],
    # OpenNMT-py alone, for machines where the libraries above cannot be carried (the GPU
    # machine's 64 MiB, tools/gpu/README.md): the modules that onmt.transforms imports at start-up
    # for transforms this benchmark never uses get empty stand-ins (STAND_INS); no CTranslate2.
    "opennmt-py-slim": [["--no-deps", "OpenNMT-py==3.5.1", "pyonmttok==1.38.1", "ConfigArgParse==1.9.0"]],
    "sockeye": [["--no-deps", "sockeye==3.1.34", "numpy==1.26.4"]],
    "joeynmt": [["--no-deps", "joeynmt==2.3.0", "importlib_metadata==8.5.0", "zipp==3.21.0", "sentencepiece==0.2.0"]],
    # Built from its source archive (no wheel for Python 3.11): Cython first, then the
    # build against the system torch, then its runtime dependencies.
    "fairseq": [
        ["Cython==0.29.37"],
        ["--no-deps", "--no-build-isolation", "fairseq==0.12.2"],
        ["bitarray==2.9.2", "hydra-core==1.0.7", "omegaconf==2.0.6"],
    ],
}
IMPORT_CHECK = {
    "opennmt-py": "import onmt.bin.train, onmt.bin.translate, onmt.bin.build_vocab, ctranslate2",
    "opennmt-py-slim": "import onmt.bin.train, onmt.bin.translate, onmt.bin.build_vocab",
    "sockeye": "import sockeye.train, sockeye.translate",
    "joeynmt": "import joeynmt.training, joeynmt.prediction",
    "fairseq": "import fairseq.options, fairseq_cli.train",
}
# Empty modules written into an environment's site-packages (module -> source): onmt.transforms
# imports terminology (spacy, ahocorasick), inlinetags (ahocorasick), fuzzymatch (rapidfuzz)
# and clean (fasttext) when it starts; none of them runs in this benchmark.
_UNUSED = '"""Stand-in: OpenNMT-py imports this at start-up for a transform the benchmark does not use."""\n'
STAND_INS: dict[str, dict[str, str]] = {
    "opennmt-py-slim": {"spacy": _UNUSED, "ahocorasick": _UNUSED, "fasttext": _UNUSED,
                        "rapidfuzz": _UNUSED + "fuzz = process = None\n"},
}


class PeerError(RuntimeError):
    """A peer could not be installed or run; the message is the reason shown in the table."""


def child_env(setup: Setup) -> dict[str, str]:
    """Environment for a peer process: the benchmark's thread count, no repo on PYTHONPATH."""
    # The peers predate torch 2.6, whose torch.load defaults to weights_only=True and then
    # refuses their own checkpoints (pickled option namespaces): restore the old default.
    env = dict(os.environ, OMP_NUM_THREADS=str(setup.threads), MKL_NUM_THREADS=str(setup.threads),
               PYTHONUNBUFFERED="1", TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1", TQDM_DISABLE="1")
    env.pop("PYTHONPATH", None)
    if not setup.cuda:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def run_logged(command: list[str], log: Path, env: dict[str, str], *, cwd: Path | None = None,
               stdin: Path | None = None, stdout: Path | None = None) -> float:
    """Run ``command`` with stderr (and stdout unless ``stdout``) appended to ``log``; return
    its wall-clock seconds.  A non-zero exit raises PeerError with the log's last line."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as sink, open(stdin or os.devnull, "rb") as source:
        sink.write(f"$ {' '.join(map(str, command))}\n")
        sink.flush()
        out = open(stdout, "wb") if stdout else sink
        try:
            start = time.perf_counter()
            code = subprocess.run([str(c) for c in command], stdin=source, stdout=out, stderr=sink, env=env, cwd=cwd).returncode
            seconds = time.perf_counter() - start
        finally:
            if stdout:
                out.close()
    if code != 0:
        raise PeerError(f"{Path(str(command[0])).name} exited with {code}: {failure_line(log)} (log: {rel(log)})")
    return seconds


# pip's summary lines, which hide the error that caused them
_GENERIC_ERRORS = ("subprocess-exited-with-error", "could not build wheels", "failed building wheel",
                   "this error originates", "failed to build", "calledprocesserror", "error compiling objects",
                   "raise ", "exited with", "status 'error'")


def failure_line(path: Path) -> str:
    """The first specific error line of the last command in ``path`` (else its last line)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = [line.strip() for line in text[text.rfind("\n$ ") + 1:].splitlines()[1:] if line.strip()]
    for line in lines:
        lowered = line.lower()
        if "error" in lowered and not any(generic in lowered for generic in _GENERIC_ERRORS):
            return re.sub(r"\S*/pip-(?:install|req-build)-[^/]+/[^/]+/", "", line)[:300]
    return lines[-1][:300] if lines else "(no output)"


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


class Venv:
    """A cached virtual environment under ``benchmarks/.venvs/<name>``."""

    def __init__(self, name: str, *, reinstall: bool = False, log: Path):
        self.name, self.reinstall, self.log = name, reinstall, log
        self.path = VENV_ROOT / name
        self.python = self.path / "bin" / "python"
        self.spec = json.dumps({"python": sys.version, "install": INSTALL[name], "check": IMPORT_CHECK[name],
                                **({"stand_ins": STAND_INS[name]} if name in STAND_INS else {})})
        self.digest = hashlib.sha256(self.spec.encode()).hexdigest()[:16]

    def bin(self, script: str) -> Path:
        return self.path / "bin" / script

    def site_packages(self) -> Path:
        return self.path / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"

    def ensure(self) -> Path:
        """The environment's python; installs it first if needed (PeerError on failure)."""
        ok, failed = self.path / f".ok-{self.digest}", self.path / f".failed-{self.digest}"
        if ok.exists():
            return self.python
        if failed.exists() and not self.reinstall:
            raise PeerError(failed.read_text(encoding="utf-8").strip() + " (cached; --reinstall retries)")
        shutil.rmtree(self.path, ignore_errors=True)
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        try:
            # --without-pip: the system pip is visible through the system site-packages, and
            # no older setuptools is put in front of the system's one.
            run_logged([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", self.path], self.log, env)
            if sys.prefix != sys.base_prefix:
                # Run from a virtual environment (the GPU machines' python is one): the new one's
                # "system" site-packages are the base interpreter's, not this one's (torch, pip):
                # add this one's behind the new environment's own.
                pth = self.site_packages() / "_parent.pth"
                pth.write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in site.getsitepackages()), encoding="utf-8")
            for packages in INSTALL[self.name]:
                run_logged([self.python, "-m", "pip", "install", "--disable-pip-version-check", *packages], self.log, env)
            for module, source in STAND_INS.get(self.name, {}).items():
                package = self.site_packages() / module
                package.mkdir(parents=True, exist_ok=True)
                (package / "__init__.py").write_text(source, encoding="utf-8")
            run_logged([self.python, "-c", IMPORT_CHECK[self.name]], self.log, env)
        except PeerError as exc:
            failed.write_text(f"install failed: {exc}\n", encoding="utf-8")
            self.reinstall = False  # one attempt per run: later calls report the cached failure
            raise PeerError(f"install failed: {exc}") from None
        freeze = subprocess.run([self.python, "-m", "pip", "freeze", "--local"], capture_output=True, text=True, env=env)
        (self.path / "pip-freeze.txt").write_text(freeze.stdout, encoding="utf-8")
        ok.write_text(self.spec + "\n", encoding="utf-8")
        return self.python
