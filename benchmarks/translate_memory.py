"""nmt-translate's peak memory against the size of its input (issue 44: "large input is held
whole").

For each ``--sizes`` N, the first N lines of a file that repeats a Multi30k English test set go
through ``nmt-translate --checkpoint PACKAGE --input FILE --output FILE`` in a fresh process,
with a search cut short (``--beam 1 --max-len-a 0 --max-len-b 1``: one output token) so that
reading, encoding and batching, which held the whole input before, dominate, not decoding.  The
table gives each run's peak resident memory (the process's own high-water mark, read by the process
itself at its end: ``VmHWM``), its wall time, and the growth over the smallest size.  ``--repo DIR`` runs
another checkout's nmt-translate (e.g. a worktree of an older commit) with the same model.

    python benchmarks/translate_memory.py                         # 1,000 / 10,000 / 40,000 lines
    python benchmarks/translate_memory.py --sizes 1000 100000 --repo /tmp/old-checkout

The model: ``--checkpoint`` (a package directory), else the package ``translate_io.py`` trains
and caches (``benchmarks/runs/translate_io``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from translate_io import default_data_dir, head_gz, train_package  # noqa: E402

# Runs nmt-translate's main in this process, then reports the process's peak RSS on stderr: VmHWM
# of /proc/self/status, the high-water mark of this program's memory (ru_maxrss would also count
# the memory of the process it was forked from, before the exec).
WORKER = ("import sys\nfrom nmtmodels.cli import translate\ncode = translate.main(sys.argv[1:])\n"
          "hwm = next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:'))\n"
          "print(f'peak_rss_kib {hwm}', file=sys.stderr)\nsys.exit(code)")


def run(repo: Path, package: Path, source: Path, threads: int) -> tuple[float, float]:
    """(peak RSS in MiB, wall seconds) of one nmt-translate process from ``repo``."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", WORKER, "--checkpoint", str(package), "--input", str(source),
                               "--output", str(Path(tmp) / "out"), "--beam", "1", "--max-len-a", "0", "--max-len-b", "1",
                               "--log-interval", "3600"],
                              cwd=repo, capture_output=True, text=True, check=False,
                              env={**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(repo)})
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"nmt-translate failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    kib = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("peak_rss_kib"))
    return kib / 1024, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, help="a model package directory (default: translate_io.py's)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 40000], help="input lines of each run")
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout whose nmt-translate runs (default: this one)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "runs" / "translate_io")
    args = parser.parse_args(argv)
    package = args.checkpoint or train_package(args.data_dir, args.work_dir, 10000, 8000, 100, args.threads)
    lines = head_gz(args.data_dir / "multi30k" / "test_2016_flickr.en.gz", None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sorted(args.sizes):
            source = Path(tmp) / f"in.{size}.en"
            source.write_text("".join(f"{lines[i % len(lines)]}\n" for i in range(size)), encoding="utf-8")
            rows.append((size, *run(args.repo.resolve(), package, source, args.threads)))
    print(f"nmt-translate of {args.repo.resolve()} ({package}), --beam 1 --max-len-b 1, OMP_NUM_THREADS={args.threads}\n")
    print("| input lines | input MiB | peak RSS (MiB) | growth over the smallest (MiB) | wall (s) |")
    print("|---:|---:|---:|---:|---:|")
    size_mib = {size: sum(len(lines[i % len(lines)].encode()) + 1 for i in range(size)) / 2**20 for size, _, _ in rows}
    for size, rss, wall in rows:
        print(f"| {size:,} | {size_mib[size]:.1f} | {rss:.0f} | {rss - rows[0][1]:+.0f} | {wall:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
