"""Preprocessing throughput: our CLIs against the sacremoses and subword-nmt command lines.

On Multi30k en-de train (29,000 pairs) from the data mirror:

* tokenise both sides: ``python -m workflow_scripts.data.preprocess`` (NFKC, Moses punctuation
  normalisation, Moses tokenisation with -a, no escaping; also writes the NORM files)
  against ``sacremoses -l L -j N normalize tokenize -a -x`` per language;
* BPE-encode both sides with 8,000 joint merges learned once first:
  ``python -m workflow_scripts.data.bpe apply`` against ``subword-nmt apply-bpe --num-workers N``
  (the outputs are checked to be byte-identical).

Each command runs as a subprocess, so the times include interpreter start and model
loading, as in the workflow.  Prints a Markdown table of sentences per second (lines
of both languages together), median of ``--repeats`` runs.

    python benchmarks/preprocess_throughput.py [--data-dir DIR] [--threads 1 2] [--repeats 3]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANGS = ("en", "de")
SPEC = {"preprocess": {"en": {"tokenizer": "moses"}, "de": {"tokenizer": "moses"}}, "lowercase": False}
MERGES = 8000


def default_data_dir() -> Path:
    return Path(os.environ.get("NMT_DATA_MIRROR") or ROOT.parent / "shared" / "data")


def run(command: list[str], stdin: Path | None = None, stdout: Path | None = None) -> float:
    """Run ``command`` (optionally with files as stdin/stdout); return its wall-clock seconds."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    with open(stdin or os.devnull, "rb") as source, open(stdout or os.devnull, "wb") as sink:
        subprocess.run(command, stdin=source, stdout=sink, stderr=subprocess.DEVNULL, check=True, env=environment, cwd=ROOT)
    return time.perf_counter() - start


def timed(commands: list[tuple[list[str], Path | None, Path | None]], repeats: int) -> float:
    """Median over ``repeats`` of the total time of running ``commands`` one after another."""
    return statistics.median(sum(run(*command) for command in commands) for _ in range(repeats))


def tool(name: str) -> str:
    """A console script of this interpreter's environment."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        sys.exit(f"{name} not found next to {sys.executable} or on PATH")
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=default_data_dir(),
                        help="data mirror (default: $NMT_DATA_MIRROR or ../shared/data)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    python, sacremoses, subword_nmt = sys.executable, tool("sacremoses"), tool("subword-nmt")
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="preprocess-bench-") as tmp:
        work = Path(tmp)
        raw = {lang: work / f"train.{lang}" for lang in LANGS}
        for lang in LANGS:
            source = args.data_dir / "multi30k" / f"train.{lang}.gz"
            if not source.exists():
                sys.exit(f"{source} not found: pass --data-dir or set NMT_DATA_MIRROR")
            raw[lang].write_bytes(gzip.decompress(source.read_bytes()))
        sentences = sum(len(raw[lang].read_bytes().splitlines()) for lang in LANGS)
        tok = {lang: work / f"tok.{lang}" for lang in LANGS}
        codes, vocab = {lang: work / f"codes.{lang}" for lang in LANGS}, {lang: work / f"vocab.{lang}" for lang in LANGS}

        rows: list[tuple[str, str, int, float]] = []
        for threads in args.threads:
            ours = [python, "-m", "workflow_scripts.data.preprocess", "--src-lang", "en", "--tgt-lang", "de",
                    "--src-in", str(raw["en"]), "--tgt-in", str(raw["de"]), "--src-out", str(tok["en"]), "--tgt-out", str(tok["de"]),
                    "--src-norm-out", str(work / "norm.en"), "--tgt-norm-out", str(work / "norm.de"),
                    "--spec", json.dumps(SPEC), "--threads", str(threads)]
            rows.append(("tokenise", "ours: workflow_scripts.data.preprocess", threads, timed([(ours, None, None)], args.repeats)))
            moses = [([sacremoses, "-q", "-l", lang, "-j", str(threads), "normalize", "tokenize", "-a", "-x"],
                      raw[lang], work / f"moses.{lang}")
                     for lang in LANGS]
            rows.append(("tokenise", "sacremoses normalize tokenize -a -x", threads, timed(moses, args.repeats)))

        run([python, "-m", "workflow_scripts.data.bpe", "learn", "--merges", str(MERGES), "--joint", "--vocabulary-threshold", "1",
             "--src-in", str(tok["en"]), "--tgt-in", str(tok["de"]),
             "--src-codes-out", str(codes["en"]), "--tgt-codes-out", str(codes["de"]),
             "--src-vocab-out", str(vocab["en"]), "--tgt-vocab-out", str(vocab["de"])])
        for threads in args.threads:
            ours = [([python, "-m", "workflow_scripts.data.bpe", "apply", "--codes", str(codes[lang]), "--vocab", str(vocab[lang]),
                      "--vocabulary-threshold", "1", "--input", str(tok[lang]), "--output", str(work / f"bpe.{lang}"),
                      "--threads", str(threads)], None, None) for lang in LANGS]
            rows.append(("BPE apply (8k joint)", "ours: workflow_scripts.data.bpe apply", threads, timed(ours, args.repeats)))
            reference = [([subword_nmt, "apply-bpe", "-c", str(codes[lang]), "--vocabulary", str(vocab[lang]),
                           "--vocabulary-threshold", "1", "--num-workers", str(threads), "-i", str(tok[lang]),
                           "-o", str(work / f"ref.{lang}")], None, None) for lang in LANGS]
            rows.append(("BPE apply (8k joint)", "subword-nmt apply-bpe", threads, timed(reference, args.repeats)))
            for lang in LANGS:
                if (work / f"bpe.{lang}").read_bytes() != (work / f"ref.{lang}").read_bytes():
                    sys.exit(f"BPE output differs from subword-nmt apply-bpe for {lang} at {threads} threads")

    print(f"Multi30k en-de train, {sentences} sentences (both languages), median of {args.repeats}; "
          f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"1-minute load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after\n")
    print("| step | command | threads | seconds | sentences/s |")
    print("|---|---|---:|---:|---:|")
    for step, command, threads, seconds in rows:
        print(f"| {step} | {command} | {threads} | {seconds:.1f} | {sentences / seconds:,.0f} |")


if __name__ == "__main__":
    main()
