"""Decoding in bf16 against fp32 on the CPU: the share of identical lines, the BLEU of each, the time.

For each model package (raw text in, detokenised text out, the package's own search settings),
the script translates one source file twice with ``nmt-translate`` (``python -m nmtmodels.cli
translate``), once with ``--amp none`` and once with ``--amp bf16``, each on ``--threads``
threads, and prints per package: lines, the share of lines that are byte-identical, sacreBLEU of
each against the reference, and each run's wall time (start-up included; one run each, so the
times are rough where the machine is shared).  Decoding keeps the workflow's setting
(``decoding`` in config.yaml); bf16 is a choice of ``nmt-translate --amp bf16`` and the API.

    python benchmarks/decode_precision.py --root results \\
        --package baseline/multi30k_en_de:multi30k_en_de/raw/test_2016_flickr.en:multi30k_en_de/raw/test_2016_flickr.de

(``--package EXPERIMENT/CORPUS:SOURCE:REFERENCE``, the source and reference under
``ROOT/data``, the package at ``ROOT/experiments/EXPERIMENT/CORPUS/model``; after
``snakemake --cores 2 all``.)
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sacrebleu

ROOT = Path(__file__).resolve().parents[1]


def translate(package: Path, source: Path, out: Path, amp: str, threads: int) -> float:
    """Wall seconds of one ``nmt-translate`` run of ``source`` into ``out``."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "nmtmodels.cli", "translate", "--checkpoint", str(package),
                    "--input", str(source), "--output", str(out), "--amp", amp, "--threads", str(threads)],
                   check=True, cwd=ROOT, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT / "results", help="the workflow's results directory")
    parser.add_argument("--package", action="append", required=True, metavar="EXPERIMENT/CORPUS:SOURCE:REFERENCE")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    print("| package | lines | identical | BLEU fp32 | BLEU bf16 | s fp32 | s bf16 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for spec in args.package:
        name, source, reference = spec.split(":")
        lang = "zh" if reference.endswith(".zh") else ("ja" if reference.endswith(".ja") else "13a")
        refs = (args.root / "data" / reference).read_text(encoding="utf-8").splitlines()
        with tempfile.TemporaryDirectory() as scratch:
            outputs, seconds = {}, {}
            for amp in ("none", "bf16"):
                out = Path(scratch) / f"{amp}.txt"
                seconds[amp] = translate(args.root / "experiments" / name / "model", args.root / "data" / source, out,
                                         amp, args.threads)
                outputs[amp] = out.read_text(encoding="utf-8").splitlines()
        same = sum(a == b for a, b in zip(outputs["none"], outputs["bf16"]))
        bleu = {amp: sacrebleu.corpus_bleu(lines, [refs], tokenize=lang).score for amp, lines in outputs.items()}
        print(f"| {name} | {len(refs):,} | {same / len(refs):.1%} | {bleu['none']:.2f} | {bleu['bf16']:.2f} | "
              f"{seconds['none']:.0f} | {seconds['bf16']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
