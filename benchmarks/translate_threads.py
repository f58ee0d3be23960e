"""nmt-translate's threads: ``--threads 1``, ``--threads 2`` and the default, on an idle and on
a loaded machine.

Each run is ``nmt-translate --checkpoint M --input FILE`` as a subprocess (start-up and model
loading included, as a user sees them) on the first ``--lines`` sentences of Multi30k's
English test_2016_flickr, with ``OMP_NUM_THREADS`` unset, so the default is the command's own
(:func:`nmtmodels.devices.default_threads`).  "Loaded" runs beside as many busy processes as
the machine has usable cores (pure-Python loops: another user's jobs).  The runs are
interleaved, ``--repeats`` of each; the table gives the median and the range of the wall
time.  The model is the one of benchmarks/translate_io.py (the workflow's package, or one
trained there and cached).

    python benchmarks/translate_threads.py                 # 200 lines, 5 repeats
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import statistics
import sys
from pathlib import Path

from translate_io import ROOT, WORKFLOW_PACKAGE, Mode, cpu_name, default_data_dir, head_gz, run_mode, train_package, translate_command


def _busy(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "runs" / "translate_io")
    args = parser.parse_args(argv)
    from nmtmodels.devices import default_threads, usable_cores

    work = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    if (WORKFLOW_PACKAGE / "preprocess.json").is_file():
        package, source = WORKFLOW_PACKAGE, f"{WORKFLOW_PACKAGE.relative_to(ROOT)} (the workflow's)"
    else:
        package = train_package(args.data_dir, work, 10000, 8000, 100, 2)
        source = f"trained by benchmarks/translate_io.py ({package})"
    raw = work / "threads.input.en"
    raw.write_text("".join(line + "\n" for line in head_gz(args.data_dir / "multi30k" / "test_2016_flickr.en.gz", args.lines)),
                   encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"} | {"TQDM_DISABLE": "1"}
    cores = usable_cores()
    default = default_threads(env)
    common = ["--checkpoint", str(package), "--input", str(raw)]
    rows = []
    command = translate_command()
    for load in ("idle", "loaded"):
        modes = [Mode("--threads 1", common + ["--threads", "1"], None), Mode("--threads 2", common + ["--threads", "2"], None),
                 Mode(f"default ({default} thread{'s' if default != 1 else ''} here)", common, None)]
        stop = multiprocessing.Event()
        workers = [multiprocessing.Process(target=_busy, args=(stop,)) for _ in range(cores if load == "loaded" else 0)]
        for worker in workers:
            worker.start()
        try:
            for repeat in range(args.repeats):
                for number, mode in enumerate(modes):
                    print(f"{load}, repeat {repeat + 1}/{args.repeats}: {mode.name} ...", file=sys.stderr, flush=True)
                    run_mode(mode, command, env, work / f"threads.{load}.mode{number}.stderr")
        finally:
            stop.set()
            for worker in workers:
                worker.join()
        for mode in modes:
            wall = statistics.median(mode.seconds)
            rows.append(f"| {load} | {mode.name} | {wall:.1f} | {min(mode.seconds):.1f}–{max(mode.seconds):.1f} "
                        f"| {args.lines / wall:.1f} | {statistics.median(mode.cpu_seconds):.1f} |")
        if len({mode.output for mode in modes}) != 1:
            sys.exit("the outputs differ between thread counts")
    import torch

    print(f"{args.lines} sentences of Multi30k test_2016_flickr.en; model: {source}; {args.repeats} repeats, median; "
          f"{cpu_name()}, {cores} usable cores, loaded = {cores} busy processes beside; torch {torch.__version__}, "
          f"Python {platform.python_version()}; command: {' '.join(command)} --input FILE [--threads N]\n")
    print("| machine | threads | wall s (median) | wall s (range) | sentences/s | CPU s (median) |")
    print("|---|---|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
