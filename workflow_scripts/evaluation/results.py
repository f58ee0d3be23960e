"""The tidy results table: one row per (experiment, corpus, test set, metric) the config ran.

:func:`collect_results` gathers the score (``T.scores.json``), the comparison with the
experiment's baseline (``significance/T.vs.B.json``; with several baselines, the best one on
that test set and metric, as the lattice paper's "best baseline") and the model's parameter
count and training speed (``model_info.json``) into one table (``python -m
workflow_scripts.evaluation.tables collect`` writes it as CSV; :func:`read_results` reads it
back).  Columns: :data:`RESULT_COLUMNS`.  Metrics: every one of
:data:`nmtmodels.text.scoring.METRIC_SPECS` a score file holds; for a lower-is-better metric
(TER) the best baseline is the lowest and a negative ``delta`` an improvement; significance tests
only for metrics that support them (``significance_metrics()``).

Seeds (``experiments.X.seeds``, :mod:`workflow_scripts.dag.seeds`): the results table keeps one
row per run, with its system (``seed_group``) and ``seed``; :func:`aggregate_seeds` makes one
row per system for the paper tables and the results summary: the mean score over the seeds
and its sample standard deviation (n - 1 in the denominator), and the significance tests over
all runs that the verdicts read (:mod:`.run_statistics`: approximate randomisation stratified
by run, in ``p_paired_ar``, and the sign test pooled over the runs, in ``p_sign`` and
``sign_*``; no paired bootstrap over runs), so that a table's marker and a claim's verdict come
from the same test.  Only where no comparison over runs exists (a results table written before
them, a system without its baseline's seeds) the tests are those of the seed whose score is
closest to the mean (tie: the lowest seed), which compares that seed's run with the baseline's
run of the same seed.  A system with one run is its run.
"""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from nmtmodels.files import DataError
from nmtmodels.text.scoring import metric_spec, registered_metrics
from workflow_scripts.dag import evaluation as ev

RESULT_COLUMNS = (
    "experiment", "family", "paper", "variant", "input", "tables", "baselines", "subwords",
    "corpus", "pair", "test_set", "concatenation", "metric", "score", "signature",
    "num_sentences", "num_references", "baseline", "baseline_score", "delta",
    "p_sign", "sign_better", "sign_worse", "sign_ties", "p_paired_bs", "p_paired_ar",
    "parameters", "train_tokens_per_s", "seed_group", "seed", "length_ratio", "brevity_penalty",
    "blank_reference_lines", *("runs_p_sign", "runs_sign_better", "runs_sign_worse", "runs_sign_ties", "runs_p_ar"),
)
# The column of each significance test's p-value (the tests: markers.TEST_NAMES).
P_COLUMNS = {"sign": "p_sign", "paired_bs": "p_paired_bs", "paired_ar": "p_paired_ar"}
# The tests over all runs of the row's system against its baseline's system (run_statistics);
# empty where none was made; a results table written before them lacks them.
RUNS_COLUMNS = ("runs_p_sign", "runs_sign_better", "runs_sign_worse", "runs_sign_ties", "runs_p_ar")
# Columns a results table written before seeds lacks (read_results fills them: each run its own system).
SEED_COLUMNS = ("seed_group", "seed")
# sacreBLEU's hypothesis/reference length ratio and brevity penalty (BLEU metrics only; the
# scores.json fields); a results table written before them lacks them (read_results: empty).
LENGTH_COLUMNS = ("length_ratio", "brevity_penalty")
# Added in 0.2 (scores.json's blank_reference_lines): unknown (empty) in results written before.
LATER_COLUMNS = ("blank_reference_lines",)  # Int64 columns
# What aggregate_seeds adds: the standard deviation over the seeds (NaN for one seed), their number and list,
# and the run whose significance tests a seeded row reports (the seed closest to the mean) with its own numbers.
SEED_SUMMARY_COLUMNS = ("score_sd", "n_seeds", "seeds", "reported_run", "reported_seed", "reported_score",
                        "reported_baseline_score", "reported_delta")


def read_json(path: Path) -> Any:
    """A JSON file's content; DataError naming the file when it is missing or not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, "no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(path, f"not valid JSON ({exc})") from None


def _pair(corpus: dict[str, Any]) -> str:
    return f"{corpus['src']}-{corpus['tgt']}"


def collect_results(metadata: dict[str, Any], root: str | Path = ".") -> pd.DataFrame:
    """One row per (experiment, corpus, test set, metric); ``metadata`` as made by
    :func:`workflow_scripts.dag.evaluation.report_metadata`, files below ``root``."""
    root = Path(root)
    experiments, corpora = metadata["experiments"], metadata["corpora"]
    cache: dict[str, dict[str, Any]] = {}

    def load(relative: str) -> dict[str, Any]:
        if relative not in cache:
            cache[relative] = read_json(root / relative)
        return cache[relative]

    rows = []
    for name, exp in experiments.items():
        for corpus in exp["corpora"]:
            spec = corpora[corpus]
            info = load(ev.model_info_path(name, corpus))
            for test_set in spec["test_sets"] + list(spec["concatenations"]):
                concatenated = test_set in spec["concatenations"]
                scores = load(ev.system_files(name, corpus, test_set, concatenated)["scores"])
                for metric in registered_metrics():
                    entry = scores.get(metric)
                    if entry is None:
                        continue
                    row = {
                        "experiment": name, "family": exp["family"], "paper": exp["paper"], "variant": exp["variant"],
                        "input": exp["input"], "tables": " ".join(exp["tables"]), "baselines": " ".join(exp["baselines"]),
                        "subwords": exp["subwords"], "corpus": corpus, "pair": _pair(spec), "test_set": test_set,
                        "concatenation": concatenated, "metric": metric, "score": entry["score"],
                        "signature": entry["signature"], "num_sentences": scores["num_sentences"],
                        "num_references": _reference_count(entry["signature"], scores["num_references"]),
                        "parameters": info["parameters"],
                        "train_tokens_per_s": info["train_tokens_per_s"],
                        "seed_group": exp.get("seed_group") or name, "seed": exp.get("seed"),
                        "length_ratio": entry.get("length_ratio"), "brevity_penalty": entry.get("brevity_penalty"),
                        "blank_reference_lines": scores.get("blank_reference_lines"),  # absent in scores made before 0.2
                    }
                    row.update(_versus_best_baseline(load, name, exp["baselines"], corpus, test_set, concatenated, metric,
                                                     entry["score"]))
                    row.update(_over_runs(root, load, experiments, row, metric))
                    rows.append(row)
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    return frame.astype({"parameters": "Int64", "sign_better": "Int64", "sign_worse": "Int64", "sign_ties": "Int64",
                         "num_sentences": "Int64", "num_references": "Int64", "seed": "Int64",
                         "blank_reference_lines": "Int64", "runs_sign_better": "Int64", "runs_sign_worse": "Int64",
                         "runs_sign_ties": "Int64"})


def _over_runs(root: Path, load, experiments: dict[str, Any], row: dict[str, Any], metric: str) -> dict[str, Any]:
    """The :data:`RUNS_COLUMNS` of one row: the tests over all runs of its system against the
    system of its baseline, where the comparison over runs exists (read once through ``load``,
    :func:`collect_results`' cache, for all the runs and metrics that share it)."""
    if not row.get("baseline"):
        return {}
    base_system = (experiments.get(row["baseline"]) or {}).get("seed_group") or row["baseline"]
    relative = ev.run_statistics_path(row["seed_group"], base_system, row["corpus"], row["test_set"])
    if not (root / relative).is_file():
        return {}
    stats = (load(relative).get("metrics") or {}).get(metric)
    if stats is None:
        return {}
    sign = stats["sign_pooled"]
    return {"runs_p_sign": sign["p_value"], "runs_sign_better": sign["better"], "runs_sign_worse": sign["worse"],
            "runs_sign_ties": sign["ties"], "runs_p_ar": stats["stratified_ar"]["p_value"]}


def _reference_count(signature: str, default: int) -> int:
    """``nrefs`` of a sacrebleu signature (``default`` for a signature without it)."""
    fields = dict(part.split(":", 1) for part in signature.split("|") if ":" in part)
    return int(fields["nrefs"]) if fields.get("nrefs", "").isdigit() else default


def _versus_best_baseline(load, name: str, baselines: list[str], corpus: str, test_set: str, concatenated: bool,
                          metric: str, score: float) -> dict[str, Any]:
    """Baseline columns of one row: the best-scoring baseline on this test set and metric
    (the lowest for a metric where lower is better) and the p-values of the comparison with it
    (empty without a baseline or a test)."""
    sign = 1 if metric_spec(metric).higher_is_better else -1
    best = None
    for baseline in baselines:
        base_entry = load(ev.system_files(baseline, corpus, test_set, concatenated)["scores"]).get(metric)
        if base_entry is not None and (best is None or sign * base_entry["score"] > sign * best[1]):
            best = (baseline, base_entry["score"])
    if best is None:
        return {}
    baseline, baseline_score = best
    values: dict[str, Any] = {"baseline": baseline, "baseline_score": baseline_score, "delta": score - baseline_score}
    comparison_file = ev.comparison_path(name, baseline, corpus, test_set)
    tested = load(comparison_file)["metrics"].get(metric)
    if tested is None:
        return values
    for side, recorded, expected in (("system", tested["system_score"], score), ("baseline", tested["baseline_score"], baseline_score)):
        if not math.isclose(recorded, expected, rel_tol=0, abs_tol=1e-9):
            raise DataError(comparison_file, f"{metric} {side} score {recorded} differs from the "
                                             f"score file's {expected} (a stale file?)")
    if "sign" in tested:
        sign = tested["sign"]
        values.update(p_sign=sign["p_value"], sign_better=sign["better"], sign_worse=sign["worse"], sign_ties=sign["ties"])
    for test in ("paired_bs", "paired_ar"):
        if test in tested:
            values[P_COLUMNS[test]] = tested[test]["p_value"]
    return values


def read_results(path: str | Path) -> pd.DataFrame:
    """The CSV written by ``collect`` (list columns as space-separated names)."""
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""],
                        dtype={"tables": str, "baselines": str, "input": str, "paper": str, "baseline": str,
                               "seed_group": str, "seed": "Int64"})
    missing = [c for c in RESULT_COLUMNS
               if c not in frame.columns and c not in SEED_COLUMNS + LENGTH_COLUMNS + LATER_COLUMNS + RUNS_COLUMNS]
    if missing:
        raise DataError(path, f"not a results table: no column '{missing[0]}'", 1)
    for column in LENGTH_COLUMNS:  # written before them: unknown
        if column not in frame.columns:
            frame[column] = math.nan
    for column in LATER_COLUMNS + RUNS_COLUMNS:  # written before them: unknown
        if column not in frame.columns:
            frame[column] = math.nan if column.startswith("runs_p_") else pd.array([None] * len(frame), dtype="Int64")
    if "seed_group" not in frame.columns:  # written before seeds: every run its own system
        frame["seed_group"] = frame["experiment"]
    if "seed" not in frame.columns:
        frame["seed"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    frame["seed_group"] = frame["seed_group"].fillna(frame["experiment"])
    return frame.fillna({"tables": "", "baselines": "", "input": "", "paper": "", "baseline": ""})


ALL_RUNS = "all runs"  # reported_run of a row whose tests are those over all runs


def _closest_to_mean(group: pd.DataFrame, mean: float) -> pd.Series:
    """The row whose score is closest to ``mean``; a tie goes to the lowest seed (then the first row)."""
    def key(item: tuple[int, pd.Series]) -> tuple[float, float, int]:
        position, row = item
        return abs(float(row["score"]) - mean), math.inf if missing(row["seed"]) else float(row["seed"]), position

    return min(enumerate(row for _, row in group.iterrows()), key=key)[1]


def aggregate_seeds(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (system, corpus, test set, metric): the runs of a system's seeds (rows with
    the same ``seed_group``) as one, in first-appearance order, named by the system.
    ``score``: the mean over the seeds; ``score_sd``: their sample standard deviation (n - 1;
    NaN for one seed); ``n_seeds`` and ``seeds``; the significance columns (``p_*``,
    ``sign_*``) are the tests over all runs (:data:`RUNS_COLUMNS`; ``reported_run`` "all runs",
    ``p_paired_bs`` empty) where the group has them, else those of ``reported_run``, the seed
    whose score is closest to the mean (tie: the lowest seed), with that run's
    ``reported_score``, ``reported_baseline_score`` and ``reported_delta`` (the difference its
    tests tested); ``baseline`` is the system of
    that run's baseline, ``baseline_score`` the baseline system's mean and ``delta`` the
    difference of the means; ``train_tokens_per_s``, ``length_ratio`` and ``brevity_penalty``
    the means over the seeds.  A system with one run keeps its run's values."""
    results = results.assign(seed_group=results["seed_group"].fillna(results["experiment"]) if "seed_group" in results
                             else results["experiment"], seed=results["seed"] if "seed" in results else pd.NA)
    if results.empty:
        return results.assign(**{c: pd.Series(dtype=object) for c in SEED_SUMMARY_COLUMNS})
    system_of = dict(zip(results["experiment"], results["seed_group"], strict=True))
    keys = ["seed_group", "corpus", "test_set", "metric"]
    rows = []
    for _, group in results.groupby(keys, sort=False):
        scores = [float(s) for s in group["score"]]
        mean = statistics.fmean(scores)
        reported = _closest_to_mean(group, mean)
        row = reported.to_dict()
        row.update(
            experiment=reported["seed_group"], score=mean, score_sd=statistics.stdev(scores) if len(scores) > 1 else math.nan,
            n_seeds=len(scores), seeds=" ".join(str(s) for s in group["seed"] if not missing(s)),
            reported_run=reported["experiment"], reported_seed=reported["seed"], reported_score=reported["score"],
            reported_baseline_score=reported["baseline_score"], reported_delta=reported["delta"],
            **{column: _mean(group[column]) for column in ("train_tokens_per_s", *LENGTH_COLUMNS)},
        )
        if len(scores) > 1 and not missing(reported.get("runs_p_ar")):
            row.update(p_sign=reported["runs_p_sign"], sign_better=reported["runs_sign_better"],
                       sign_worse=reported["runs_sign_worse"], sign_ties=reported["runs_sign_ties"],
                       p_paired_ar=reported["runs_p_ar"], p_paired_bs=math.nan, reported_run=ALL_RUNS, reported_seed=pd.NA,
                       reported_score=mean, reported_baseline_score=math.nan, reported_delta=math.nan)
        if not missing(reported["baseline"]) and reported["baseline"] != "":
            row["baseline"] = system_of.get(reported["baseline"], reported["baseline"])
        row["baselines"] = " ".join(dict.fromkeys(system_of.get(b, b) for b in str(reported["baselines"] or "").split()))
        rows.append(row)
    frame = pd.DataFrame(rows)
    means = {tuple(r[k] for k in ("experiment", "corpus", "test_set", "metric")): r["score"] for r in rows}
    for i, row in enumerate(rows):
        if row["baseline"] and not missing(row["baseline"]) and row["n_seeds"] > 1:
            base = means.get((row["baseline"], row["corpus"], row["test_set"], row["metric"]))
            if base is not None:
                frame.at[i, "baseline_score"] = base
                frame.at[i, "delta"] = row["score"] - base
                if row["reported_run"] == ALL_RUNS:  # the tests over runs tested the difference of the means
                    frame.at[i, "reported_baseline_score"] = base
                    frame.at[i, "reported_delta"] = row["score"] - base
    return frame


def _mean(values: pd.Series) -> float:
    """The mean of the known values (NaN when none is known)."""
    known = pd.to_numeric(values, errors="coerce").dropna()
    return float(known.mean()) if not known.empty else math.nan


def is_seeded(results: pd.DataFrame) -> bool:
    """Whether any system of the results has more than one run (seed)."""
    if results.empty or "seed_group" not in results:
        return False
    return bool((results.groupby("seed_group")["experiment"].nunique() > 1).any())


def missing(value: Any) -> bool:
    """Whether a results cell is empty (None, NaN or pandas' NA)."""
    return value is None or bool(pd.isna(value))
