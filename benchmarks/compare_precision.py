"""The embedded default in fp32 against bf16: wall time, each system's dev loss and BLEU over seeds, verdicts.

Reads the two runs that ``benchmarks/default_wall_time.sh`` leaves in ``OUT`` (each a clean clone
of one commit, ``OUT/<precision>/repo/results/report/summary.json`` and ``OUT/<precision>/wall_s``)
and prints markdown tables:

1. wall time and the trainings' summed job time of each run;
2. each training that finished in both runs: its wall minutes in each and their ratio (the
   same experiment and seed, so the pair differs only by the precision and by what ran beside
   it on the other core);
3. per system (seeds pooled): the precision its runs recorded, the best dev loss and the test
   BLEU, each as mean and standard deviation over seeds, in fp32 and in bf16, their difference
   and that difference in units of the pooled seed standard deviation
   ``s = sqrt((sd_fp32^2 + sd_bf16^2) / 2)``, the spread of one run;
4. each claim's difference, interval and verdict in both runs.

A run that has not finished has no summary.json: ``--partial`` then reads the finished trainings
(last update at ``train.max_updates``) from ``results/experiments/*/*/train/metrics.csv``, and
only the paired trainings' table says anything.

The decision rule of issue 55 ("if the scores agree within the spread over seeds, make bf16 the
default") is read on the dev loss, the only score a choice may be made on (test BLEU is
reported, not used): a system agrees when ``|mean_bf16 - mean_fp32| <= s``.

    python benchmarks/compare_precision.py OUT            # OUT as given to default_wall_time.sh
    python benchmarks/compare_precision.py --fp32 A.json --bf16 B.json   # any two summaries
    python benchmarks/compare_precision.py OUT --partial  # a run still going or stopped
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from workflow_scripts.evaluation.curves import curve_series, read_metrics
from workflow_scripts.evaluation.machine import workflow_commit
from workflow_scripts.evaluation.training_runs import precision as train_precision

PRECISIONS = ("fp32", "bf16")


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1); sd 0 for one value."""
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def dev_losses(summary: dict) -> dict[str, list[float]]:
    """System name -> best dev loss of each of its runs (seeds), in run order."""
    out: dict[str, list[float]] = defaultdict(list)
    for run in summary["runs"]:
        if run.get("best_dev_loss") is not None:
            out[run["system"]].append(float(run["best_dev_loss"]))
    return dict(out)


def precisions(summary: dict) -> dict[str, str]:
    """System name -> the precision(s) its runs recorded, joined ("fp32", "bf16", "bf16/fp32")."""
    seen: dict[str, set[str]] = defaultdict(set)
    for run in summary["runs"]:
        seen[run["system"]].add(run.get("precision") or "?")
    return {system: "/".join(sorted(values)) for system, values in seen.items()}


def bleu_on_test(summary: dict) -> dict[str, tuple[float, float, int]]:
    """System name -> (mean, sd, seeds) of sacreBLEU over seeds on its first test set."""
    out: dict[str, tuple[float, float, int]] = {}
    for row in summary["seed_scores"]:
        if row["metric"] == "bleu" and row["experiment"] not in out:
            out[row["experiment"]] = (row["score"], row["score_sd"] or 0.0, row["n_seeds"])
    return out


def training_minutes(summary: dict) -> float:
    """Summed wall minutes of the runs' trainings (each run's own ``elapsed_s``)."""
    return sum(float(run["elapsed_s"]) for run in summary["runs"]) / 60


def pooled(sd_a: float, sd_b: float) -> float:
    return math.sqrt((sd_a ** 2 + sd_b ** 2) / 2)


def _in_spreads(diff: float, spread: float) -> float:
    if spread > 0:
        return diff / spread
    return math.copysign(math.inf, diff) if diff else 0.0


def system_rows(fp32: dict, bf16: dict) -> list[dict]:
    """One row per system present in both summaries (the fp32 summary's order)."""
    loss = {p: dev_losses(s) for p, s in zip(PRECISIONS, (fp32, bf16))}
    bleu = {p: bleu_on_test(s) for p, s in zip(PRECISIONS, (fp32, bf16))}
    prec = {p: precisions(s) for p, s in zip(PRECISIONS, (fp32, bf16))}
    rows = []
    for system in loss["fp32"]:
        if system not in loss["bf16"]:
            continue
        (m32, s32), (m16, s16) = mean_sd(loss["fp32"][system]), mean_sd(loss["bf16"][system])
        spread = pooled(s32, s16)
        diff = m16 - m32
        row = {"system": system, "precision": (prec["fp32"][system], prec["bf16"][system]),
               "seeds": (len(loss["fp32"][system]), len(loss["bf16"][system])),
               "dev_loss": ((m32, s32), (m16, s16)), "dev_loss_diff": diff,
               "dev_loss_spreads": _in_spreads(diff, spread),
               "agrees": abs(diff) <= spread, "bleu": None}
        if system in bleu["fp32"] and system in bleu["bf16"]:
            row["bleu"] = (bleu["fp32"][system], bleu["bf16"][system])
        rows.append(row)
    return rows


def training_pairs(fp32: dict, bf16: dict) -> list[tuple[str, float, float]]:
    """(experiment, fp32 minutes, bf16 minutes) of every training finished in both runs."""
    minutes = [{run["experiment"]: float(run["elapsed_s"]) / 60 for run in s["runs"]} for s in (fp32, bf16)]
    return [(name, m32, minutes[1][name]) for name, m32 in minutes[0].items() if name in minutes[1]]


def runs_from_metrics(repo: Path) -> list[dict]:
    """The finished trainings of a run in progress: each ``train/metrics.csv`` whose last update
    reached its ``experiment.yaml``'s ``train.max_updates`` (read with the summary's own readers)."""
    runs = []
    for metrics in sorted(repo.glob("results/experiments/*/*/train/metrics.csv")):
        experiment = metrics.parents[2].name
        train = yaml.safe_load((metrics.parents[1] / "experiment.yaml").read_text())["train"]
        last = read_metrics(metrics)[-1]
        if int(float(last["update"])) < int(train["max_updates"]):
            continue
        dev = curve_series(metrics).get("dev loss")
        runs.append({"experiment": experiment, "system": re.sub(r"_seed\d+$", "", experiment),
                     "elapsed_s": float(last["elapsed"]), "precision": train_precision(train),
                     "best_dev_loss": min(dev[1]) if dev else None})
    return runs


def partial_summary(repo: Path) -> dict:
    return {"workflow": {"commit": workflow_commit(repo)}, "runs": runs_from_metrics(repo),
            "seed_scores": [], "claims": []}


def claim_rows(fp32: dict, bf16: dict) -> list[tuple[dict, dict | None]]:
    by_system = {claim["system"]: claim for claim in bf16.get("claims", [])}
    return [(claim, by_system.get(claim["system"])) for claim in fp32.get("claims", [])]


def _interval(claim: dict | None) -> str:
    if claim is None or claim.get("delta") is None:
        return "—"
    interval = claim.get("interval") or {}
    if "low" in interval:
        return f"{claim['delta']:+.2f} [{interval['low']:+.2f}, {interval['high']:+.2f}]"
    return f"{claim['delta']:+.2f}"


def markdown(fp32: dict, bf16: dict, wall_s: dict[str, float | None]) -> str:
    lines = ["| run | commit | wall minutes | trainings' job minutes |", "|---|---|---:|---:|"]
    for precision, summary in zip(PRECISIONS, (fp32, bf16)):
        wall = wall_s.get(precision)
        lines.append(f"| {precision} | {summary['workflow']['commit'][:7]} | "
                     f"{'—' if wall is None else f'{wall / 60:.1f}'} | {training_minutes(summary):.1f} |")
    pairs = training_pairs(fp32, bf16)
    lines += ["", "| training (finished in both) | fp32 minutes | bf16 minutes | fp32 / bf16 |",
              "|---|---:|---:|---:|"]
    lines += [f"| {name} | {m32:.1f} | {m16:.1f} | ×{m32 / m16:.2f} |" for name, m32, m16 in pairs]
    if pairs:
        total32, total16 = sum(p[1] for p in pairs), sum(p[2] for p in pairs)
        lines.append(f"| all {len(pairs)} | {total32:.1f} | {total16:.1f} | ×{total32 / total16:.2f} |")
    lines += ["", "| system | precision recorded (fp32 run / bf16 run) | best dev loss, fp32 | bf16 | "
              "bf16 − fp32 (in seed sd) | within the spread | test BLEU, fp32 | bf16 |",
              "|---|---|---:|---:|---:|---|---:|---:|"]
    for row in system_rows(fp32, bf16):
        (m32, s32), (m16, s16) = row["dev_loss"]
        bleu = ("—", "—") if row["bleu"] is None else tuple(
            f"{m:.2f} ± {s:.2f}" for m, s, _ in row["bleu"])
        lines.append(
            f"| {row['system']} | {' / '.join(row['precision'])} | {m32:.3f} ± {s32:.3f} | "
            f"{m16:.3f} ± {s16:.3f} | {row['dev_loss_diff']:+.3f} ({row['dev_loss_spreads']:+.1f}) | "
            f"{'yes' if row['agrees'] else 'no'} | {bleu[0]} | {bleu[1]} |")
    lines += ["", "| claim (system against baseline) | fp32: Δ BLEU [95% interval] | verdict | "
              "bf16: Δ BLEU [95% interval] | verdict |", "|---|---:|---|---:|---|"]
    for a, b in claim_rows(fp32, bf16):
        lines.append(f"| {a['system']} against {a['baseline']} | {_interval(a)} | {a.get('verdict', '—')} | "
                     f"{_interval(b)} | {'—' if b is None else b.get('verdict', '—')} |")
    return "\n".join(lines) + "\n"


def _wall(path: Path) -> float | None:
    return float(path.read_text()) if path.is_file() else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", nargs="?", type=Path, help="OUT of default_wall_time.sh")
    parser.add_argument("--fp32", type=Path, help="a summary.json of the fp32 run")
    parser.add_argument("--bf16", type=Path, help="a summary.json of the bf16 run")
    parser.add_argument("--partial", action="store_true",
                        help="a run in OUT without summary.json: its finished trainings only")
    args = parser.parse_args(argv)
    if args.out is None and not (args.fp32 and args.bf16):
        parser.error("give OUT, or both --fp32 and --bf16")
    paths, wall = {}, {}
    for precision in PRECISIONS:
        given = getattr(args, precision)
        if given is not None:
            paths[precision], wall[precision] = given, None
        else:
            paths[precision] = args.out / precision / "repo/results/report/summary.json"
            wall[precision] = _wall(args.out / precision / "wall_s")
    summaries = []
    for precision in PRECISIONS:
        path = paths[precision]
        if path.is_file():
            summaries.append(json.loads(path.read_text()))
        elif args.partial and args.out is not None and (args.out / precision / "repo").is_dir():
            summaries.append(partial_summary(args.out / precision / "repo"))
        else:
            parser.error(f"{path}: no summary.json for the {precision} run")
    print(markdown(*summaries, wall), end="")


if __name__ == "__main__":
    main()
