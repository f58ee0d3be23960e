"""The tidy results table and the papers' result tables (Markdown, LaTeX, HTML).

``collect`` gathers, for every (experiment, corpus, test set, metric) the config ran, the
score (``T.scores.json``), the comparison with the experiment's baseline
(``significance/T.vs.B.json``; with several baselines, the best one on that test set and
metric, as the lattice paper's "best baseline") and the model's parameter count and training
speed (``model_info.json``) into one CSV, one row each.  Columns: :data:`RESULT_COLUMNS`.
Metrics: :data:`SCORE_METRICS`; TER is lower-is-better (its best baseline is the lowest, a
negative ``delta`` an improvement) and has no significance tests (``evaluation.METRICS``).

``render`` lays the rows of one paper's experiments out as that paper's tables
(:data:`LAYOUTS`): rows are the paper's variants (``experiments.X.variant``) and the
baselines they are compared with, columns the test sets of the corpus (or one column group
per language pair), scores with significance markers against the baseline, the best score
of each column in bold, and a note with every score's length ratio and brevity penalty.
How each paper marks significance (its test, levels and symbols, or none) is
:data:`SIGNIFICANCE`, the one place for it.  A marker takes its direction and its p-value
from the same test (``--marker-test``): the sign test's direction is "more sentences better
than worse", the paired tests' the corpus score difference.  A marker is printed only where
that direction agrees with the table's score difference (:func:`significance_mark`); where
they disagree (possible with the sign test) the cell says so in words instead ("sign test
favours the system, score lower") and a note under the table gives both numbers.  A table
takes the corpora of its language pairs; whatever variants the config ran fill it, and a
paper's experiments on other language pairs get an extra table of the same kind.

Seeds (``experiments.X.seeds``, :mod:`workflow_scripts.dag.seeds`): the results table keeps one
row per run, with its system (``seed_group``) and ``seed``; :func:`aggregate_seeds` makes one
row per system for the paper tables and the results summary: the mean score over the seeds
and its sample standard deviation (n - 1 in the denominator), and the significance tests of
the seed whose score is closest to the mean (tie: the lowest seed), which compares that
seed's run with the baseline's run of the same seed.  A system with one run is its run.

    python -m workflow_scripts.evaluation.tables collect --metadata JSON --output results.csv
    python -m workflow_scripts.evaluation.tables render --results results.csv --paper lattice
        [--marker-test sign] --markdown lattice.md --latex lattice.tex --html lattice.html
"""
from __future__ import annotations

import argparse
import html
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from nmtmodels.files import DataError, atomic_output
from workflow_scripts.dag import evaluation as ev

SCORE_METRICS = ("bleu", "chrf", "ter", "tokenized_bleu")
LOWER_IS_BETTER = frozenset({"ter"})
RESULT_COLUMNS = (
    "experiment", "family", "paper", "variant", "input", "tables", "baselines", "subwords",
    "corpus", "pair", "test_set", "concatenation", "metric", "score", "signature",
    "num_sentences", "num_references", "baseline", "baseline_score", "delta",
    "p_sign", "sign_better", "sign_worse", "sign_ties", "p_paired_bs", "p_paired_ar",
    "parameters", "train_tokens_per_s", "seed_group", "seed", "length_ratio", "brevity_penalty",
    "blank_reference_lines",
)
# Columns a results table written before seeds lacks (read_results fills them: each run its own system).
SEED_COLUMNS = ("seed_group", "seed")
# sacreBLEU's hypothesis/reference length ratio and brevity penalty (BLEU metrics only; the
# scores.json fields); a results table written before them lacks them (read_results: empty).
LENGTH_COLUMNS = ("length_ratio", "brevity_penalty")
# Added in 0.2 (scores.json's blank_reference_lines): unknown (empty) in results written before.
LATER_COLUMNS = ("blank_reference_lines",)
# What aggregate_seeds adds: the standard deviation over the seeds (NaN for one seed), their number and list,
# and the run whose significance tests a seeded row reports (the seed closest to the mean) with its own numbers.
SEED_SUMMARY_COLUMNS = ("score_sd", "n_seeds", "seeds", "reported_run", "reported_seed", "reported_score",
                        "reported_baseline_score", "reported_delta")
METRIC_NAMES = {"bleu": "sacreBLEU", "tokenized_bleu": "BLEU (tokenised, multi-bleu.perl style)", "chrf": "chrF2",
                "ter": "TER (lower is better)"}
TEST_NAMES = {"sign": "sign test (Collins et al., 2005)", "paired_bs": "paired bootstrap resampling",
              "paired_ar": "paired approximate randomisation"}
# What "better" means for each test (the direction of its marker), for the legend.
TEST_DIRECTIONS = {"sign": "more of the system's sentences raise the baseline's corpus score when swapped in than lower it",
                   "paired_bs": "the system's corpus score is above the baseline's",
                   "paired_ar": "the system's corpus score is above the baseline's"}
# The tests' names in the words that replace a marker (:func:`disagreement_words`).
TEST_SHORT = {"sign": "sign test", "paired_bs": "paired bootstrap", "paired_ar": "approximate randomisation"}


# ----------------------------------------------------------------------------- collect
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
                for metric in SCORE_METRICS:
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
                    rows.append(row)
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    return frame.astype({"parameters": "Int64", "sign_better": "Int64", "sign_worse": "Int64", "sign_ties": "Int64",
                         "num_sentences": "Int64", "num_references": "Int64", "seed": "Int64",
                         "blank_reference_lines": "Int64"})


def _reference_count(signature: str, default: int) -> int:
    """``nrefs`` of a sacrebleu signature (``default`` for a signature without it)."""
    fields = dict(part.split(":", 1) for part in signature.split("|") if ":" in part)
    return int(fields["nrefs"]) if fields.get("nrefs", "").isdigit() else default


def _versus_best_baseline(load, name: str, baselines: list[str], corpus: str, test_set: str, concatenated: bool,
                          metric: str, score: float) -> dict[str, Any]:
    """Baseline columns of one row: the best-scoring baseline on this test set and metric
    (the lowest for :data:`LOWER_IS_BETTER`) and the p-values of the comparison with it
    (empty without a baseline or a test)."""
    sign = -1 if metric in LOWER_IS_BETTER else 1
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
    for side, expected in (("system", score), ("baseline", baseline_score)):
        if not math.isclose(tested[f"{side}_score"], expected, rel_tol=0, abs_tol=1e-9):
            raise DataError(comparison_file, f"{metric} {side} score {tested[f'{side}_score']} differs from the "
                                             f"score file's {expected} (a stale file?)")
    if "sign" in tested:
        sign = tested["sign"]
        values.update(p_sign=sign["p_value"], sign_better=sign["better"], sign_worse=sign["worse"], sign_ties=sign["ties"])
    for test in ("paired_bs", "paired_ar"):
        if test in tested:
            values[f"p_{test}"] = tested[test]["p_value"]
    return values


def read_results(path: str | Path) -> pd.DataFrame:
    """The CSV written by ``collect`` (list columns as space-separated names)."""
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""],
                        dtype={"tables": str, "baselines": str, "input": str, "paper": str, "baseline": str,
                               "seed_group": str, "seed": "Int64"})
    missing = [c for c in RESULT_COLUMNS if c not in frame.columns and c not in SEED_COLUMNS + LENGTH_COLUMNS + LATER_COLUMNS]
    if missing:
        raise DataError(path, f"not a results table: no column '{missing[0]}'", 1)
    for column in LENGTH_COLUMNS:  # written before them: unknown
        if column not in frame.columns:
            frame[column] = math.nan
    for column in LATER_COLUMNS:
        if column not in frame.columns:
            frame[column] = pd.array([None] * len(frame), dtype="Int64")
    if "seed_group" not in frame.columns:  # written before seeds: every run its own system
        frame["seed_group"] = frame["experiment"]
    if "seed" not in frame.columns:
        frame["seed"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    frame["seed_group"] = frame["seed_group"].fillna(frame["experiment"])
    return frame.fillna({"tables": "", "baselines": "", "input": "", "paper": "", "baseline": ""})


def _closest_to_mean(group: pd.DataFrame, mean: float) -> pd.Series:
    """The row whose score is closest to ``mean``; a tie goes to the lowest seed (then the first row)."""
    def key(item: tuple[int, pd.Series]) -> tuple[float, float, int]:
        position, row = item
        return abs(float(row["score"]) - mean), math.inf if _missing(row["seed"]) else float(row["seed"]), position

    return min(enumerate(row for _, row in group.iterrows()), key=key)[1]


def aggregate_seeds(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (system, corpus, test set, metric): the runs of a system's seeds (rows with
    the same ``seed_group``) as one, in first-appearance order, named by the system.
    ``score``: the mean over the seeds; ``score_sd``: their sample standard deviation (n - 1;
    NaN for one seed); ``n_seeds`` and ``seeds``; the significance columns (``p_*``,
    ``sign_*``) are those of ``reported_run``, the seed whose score is closest to the mean
    (tie: the lowest seed), with that run's ``reported_score``, ``reported_baseline_score``
    and ``reported_delta`` (the difference its tests tested); ``baseline`` is the system of
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
            n_seeds=len(scores), seeds=" ".join(str(s) for s in group["seed"] if not _missing(s)),
            reported_run=reported["experiment"], reported_seed=reported["seed"], reported_score=reported["score"],
            reported_baseline_score=reported["baseline_score"], reported_delta=reported["delta"],
            **{column: _mean(group[column]) for column in ("train_tokens_per_s", *LENGTH_COLUMNS)},
        )
        if not _missing(reported["baseline"]) and reported["baseline"] != "":
            row["baseline"] = system_of.get(reported["baseline"], reported["baseline"])
        row["baselines"] = " ".join(dict.fromkeys(system_of.get(b, b) for b in str(reported["baselines"] or "").split()))
        rows.append(row)
    frame = pd.DataFrame(rows)
    means = {tuple(r[k] for k in ("experiment", "corpus", "test_set", "metric")): r["score"] for r in rows}
    for i, row in enumerate(rows):
        if row["baseline"] and not _missing(row["baseline"]) and row["n_seeds"] > 1:
            base = means.get((row["baseline"], row["corpus"], row["test_set"], row["metric"]))
            if base is not None:
                frame.at[i, "baseline_score"] = base
                frame.at[i, "delta"] = row["score"] - base
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


# ----------------------------------------------------------------------------- significance
@dataclass(frozen=True)
class Markers:
    """Significance markers, strictest level first: (alpha, better, worse)."""

    levels: tuple[tuple[float, str, str], ...]

    def mark(self, p_value: Any, direction: Any) -> str:
        """The marker of a test's p-value and its direction (positive: the system is better;
        both from the same test, see :func:`verdict_direction`); none when either is missing.
        Whether it may be printed is :func:`significance_mark`'s decision."""
        if _missing(p_value) or _missing(direction) or direction == 0:
            return ""
        for alpha, better, worse in self.levels:
            if p_value < alpha:
                return better if direction > 0 else worse
        return ""

    def says(self, marker: str) -> int:
        """+1 when ``marker`` is one of these markers of "significantly better", -1 of "significantly
        worse", 0 for anything else (no marker, another paper's, a marker of an older summary)."""
        if any(marker == better for _, better, _ in self.levels):
            return 1
        return -1 if any(marker == worse for _, _, worse in self.levels) else 0


@dataclass(frozen=True)
class Significance:
    """How one paper's tables mark significance: its ``markers`` (symbols and levels), the
    test it used (``paper_test``, a key of :data:`TEST_NAMES`; None: the paper reports no
    significance test, so the markers are the project's own test's, labelled so) and
    ``source``: what our copy of the paper says (or lacks)."""

    markers: Markers
    paper_test: str | None
    source: str

    def legend(self, test: str, render=lambda marker: marker, escape=lambda text: text) -> str:
        """What the markers under a table mean: markers drawn by ``render``, text by ``escape``
        (the output format's); ``test``: the test the markers come from (``--marker-test``)."""
        levels = "; ".join(f"{render(better)} / {render(worse)}"
                           + escape(f": significantly better / worse than the baseline (p < {alpha})")
                           for alpha, better, worse in self.markers.levels)
        if self.paper_test is None:
            whose = f"the project's own test, not the paper's ({self.source})"
        else:
            whose = f"the paper's convention ({self.source})"
            if test != self.paper_test:
                whose += f"; here the {TEST_NAMES[test]} replaces the paper's {TEST_NAMES[self.paper_test]}"
        return levels + escape(
            f"; {TEST_NAMES[test]} against the (best) baseline, direction and p-value both from it "
            f"(better: {TEST_DIRECTIONS[test]}; worse: the reverse); {whose}. A marker is shown only where its "
            "direction agrees with the score difference in the table; where they disagree the cell says so in "
            "words. Bold: best in column.")


def _missing(value: Any) -> bool:
    return value is None or bool(pd.isna(value))


def tested_delta(row: pd.Series | dict[str, Any]) -> Any:
    """The score difference the row's significance tests tested: ``reported_delta`` (the seed
    closest to the mean, :func:`aggregate_seeds`) where the row has one, else ``delta``."""
    reported = row.get("reported_delta")
    return row.get("delta") if reported is None or _missing(reported) else reported


def verdict_direction(row: pd.Series | dict[str, Any], test: str) -> float | None:
    """The direction of ``test``'s verdict on one results row (positive: the system is
    better; None without the test's numbers).  The sign test counts sentences
    (``sign_better - sign_worse``), which need not agree with the corpus score difference;
    paired bootstrap and approximate randomisation test the corpus score difference itself
    (:func:`tested_delta`)."""
    if test == "sign":
        better, worse = row.get("sign_better"), row.get("sign_worse")
        return None if _missing(better) or _missing(worse) else float(better) - float(worse)
    if test in ("paired_bs", "paired_ar"):
        delta = tested_delta(row)
        return None if _missing(delta) else float(delta)
    raise ValueError(f"unknown test '{test}' (known: {', '.join(TEST_NAMES)})")


def _sign(value: float) -> int:
    return int(value > 0) - int(value < 0)


def disagreement_words(test: str, direction: float, delta: Any, mean: bool = False) -> str:
    """What a cell says instead of a marker whose direction and score difference disagree,
    e.g. "sign test favours the system, score lower" (``mean``: the difference of the means
    over seeds)."""
    side = "system" if direction > 0 else "baseline"
    change = "unknown" if _missing(delta) else {1: "higher", 0: "equal", -1: "lower"}[_sign(float(delta))]
    return f"{TEST_SHORT[test]} favours the {side}, {'mean ' if mean else ''}score {change}"


def significance_mark(row: pd.Series | dict[str, Any], test: str, markers: Markers) -> tuple[str, str]:
    """(marker, words) of one results row: the marker of ``test`` (direction and p-value
    from it, :func:`verdict_direction`) when its direction agrees with the score difference,
    i.e. with the difference the test compared (:func:`tested_delta`) and with the one the
    row shows (``delta``; the difference of the means over seeds); otherwise no marker and
    :func:`disagreement_words`.  ("", "") when the test is not significant or absent."""
    direction = verdict_direction(row, test)
    marker = markers.mark(row.get(f"p_{test}"), direction)
    if not marker:
        return "", ""
    for delta, mean in ((tested_delta(row), False), (row.get("delta"), _seeds(row) > 1)):
        if _missing(delta) or _sign(float(delta)) != _sign(direction):
            return "", disagreement_words(test, direction, delta, mean)
    return marker, ""


def _seeds(row: pd.Series | dict[str, Any]) -> int:
    n = row.get("n_seeds")
    return 1 if n is None or _missing(n) else int(n)


DAGGER = Markers(((0.01, "†", "‡"),))  # lattice paper: "† ... significant difference (p < 0.01)"
PLUS = Markers(((0.01, "++", "−−"), (0.05, "+", "−")))  # the reordering paper's "++"/"+" as this project has it
# How each paper marks significance, from our copies in ../shared/papers (docs/results.md, "Significance
# markers"): the one place for it.  Papers without a test of their own get the project's own test, labelled so.
SIGNIFICANCE: dict[str, Significance] = {
    "lattice": Significance(DAGGER, "sign", "the lattice paper's Setup: sign test (Collins et al., 2005); Tables 2 "
                                            "and 3: † significant difference (p < 0.01) from the best baseline; ‡ for "
                                            "significantly worse is ours"),
    "reordering": Significance(PLUS, "sign", "the reordering paper's System Setting: sign test (Collins et al., 2005); "
                                             "our copy has no table notes, so the symbols ++/+ and levels p < 0.01/0.05 "
                                             "are this project's reading of them"),
    "graph": Significance(PLUS, None, "the Graph-Transformer paper reports BLEU differences (Table 2) without a "
                                      "significance test"),
    "char": Significance(PLUS, None, "the char2word paper reports BLEU (Table 3) without a significance test"),
    "esc": Significance(PLUS, None, "our copy of the ESC paper (a Chinese translation) ends before its experiments: the "
                                    "abstract says the methods improve translation significantly but names no test, "
                                    "level or marker"),
}
PROJECT = Significance(PLUS, None, "no paper")  # experiments without a paper (the results summary)


def significance_of(paper: str) -> Significance:
    """The significance convention of ``paper`` (:data:`SIGNIFICANCE`; :data:`PROJECT` for none)."""
    return SIGNIFICANCE.get(paper, PROJECT)


# ----------------------------------------------------------------------------- layouts
@dataclass(frozen=True)
class Layout:
    """One result table of a paper.

    ``pairs``: language pairs whose corpora it shows; ``columns``: ``"test_sets"`` (one
    column per test set of the corpus) or ``"pairs"`` (one column group per corpus, its
    first test set); ``labels``: (header, results column) of the row-label columns (a
    ``pair`` label puts all matching corpora in one table, otherwise one table per corpus);
    ``extras``: ``params`` and/or ``speed`` columns; ``main``: experiments without a
    ``tables`` list appear here.  Its significance markers are the paper's
    (:data:`SIGNIFICANCE`)."""

    paper: str
    key: str
    caption: str
    pairs: tuple[str, ...]
    columns: str
    labels: tuple[tuple[str, str], ...]
    metric: str
    extras: tuple[str, ...] = ()
    main: bool = True

    @property
    def significance(self) -> Significance:
        return significance_of(self.paper)


_SYSTEM_INPUT = (("System", "variant"), ("Input", "input"))
LAYOUTS: dict[str, tuple[Layout, ...]] = {
    "lattice": (
        Layout("lattice", "table2", "Lattice paper, Table 2: translation performance on Zh-En (NIST in the paper; MT05 its dev set)",
               ("zh-en",), "test_sets", _SYSTEM_INPUT, "bleu"),
        Layout("lattice", "table3",
               "Lattice paper, Table 3: translation performance on En-De (IWSLT2016 in the paper; tst2012 its dev set)",
               ("en-de",), "test_sets", _SYSTEM_INPUT, "bleu"),
        Layout("lattice", "table4", "Lattice paper, Table 4: normal positional encodings (PE) and PE + LSA on lattice inputs",
               ("zh-en",), "test_sets", (("Systems", "variant"),), "bleu", main=False),
    ),
    "reordering": (
        Layout("reordering", "table1", "Reordering paper, Table 1: En-De (WMT14 newstest2014 in the paper; sacreBLEU)",
               ("en-de",), "test_sets", (("System", "variant"), ("Architecture", "family")), "bleu", ("speed", "params")),
        Layout("reordering", "table2", "Reordering paper, Table 2: Zh-En (NIST in the paper; multi-bleu)",
               ("zh-en",), "test_sets", (("System", "variant"),), "tokenized_bleu", ("params",)),
        Layout("reordering", "table3", "Reordering paper, Table 3: Ja-En (WAT ASPEC in the paper; multi-bleu)",
               ("ja-en",), "test_sets", (("System", "variant"),), "tokenized_bleu", ("params",)),
    ),
    "graph": (
        Layout("graph", "table2", "Graph-Transformer, Table 2: BLEU and parameter counts on De-En and En-De (multi-BLEU)",
               ("de-en", "en-de"), "pairs", (("Model", "variant"),), "tokenized_bleu", ("params",)),
    ),
    "char": (
        Layout("char", "table3", "char2word paper, Table 3: character-level models (WMT'15 in the paper; newstest2013 its validation set)",
               ("de-en", "en-de"), "test_sets", (("Model", "variant"), ("Language", "pair")), "tokenized_bleu"),
    ),
    "esc": (
        Layout("esc", "main", "Explicit sentence compression, main results: En-De and En-Fr (WMT14 in the paper)",
               ("en-de", "en-fr"), "pairs", (("System", "variant"), ("Architecture", "family")), "tokenized_bleu",
               ("params",)),
    ),
}
EXTRA_HEADERS = {"params": "#Params", "speed": "#Speed (tok/s)"}


def _other_pairs_layout(paper: str, pairs: tuple[str, ...]) -> Layout:
    return Layout(paper, "other", f"{paper} experiments on further language pairs", pairs, "test_sets",
                  (("System", "variant"),), "bleu", ("params",))


# ----------------------------------------------------------------------------- grid
@dataclass
class Cell:
    text: str
    marker: str = ""
    bold: bool = False
    words: str = ""  # instead of a marker whose direction disagrees with the score difference (significance_mark)
    note: str = ""  # both numbers of such a cell, listed under the table
    value: float | None = None  # the score compared for bold (as shown, rounded)


@dataclass
class Grid:
    """A rendered table before formatting: ``columns`` are (group, name) pairs."""

    caption: str
    label: str
    columns: list[tuple[str, str]]
    rows: list[list[Cell]]
    notes: list[str]
    n_labels: int
    significance: Significance
    marker_test: str


def _fmt_params(value: Any) -> str:
    if value is None or pd.isna(value):
        return "–"
    value = int(value)
    if value >= 1_000_000:
        return f"{value / 1e6:.1f}M"
    return f"{value / 1e3:.1f}K" if value >= 1_000 else str(value)


def _fmt_speed(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{float(value):,.0f}"


def fmt_length(ratio: Any, bp: Any) -> str:
    """A score's hypothesis/reference length ratio and brevity penalty, as sacreBLEU rounds
    them (3 decimals): "ratio 0.982, BP 0.982"; empty for a metric without them."""
    if _missing(ratio) or _missing(bp):
        return ""
    return f"ratio {float(ratio):.3f}, BP {float(bp):.3f}"


def _pair_label(pair: str) -> str:
    return "-".join(part.capitalize() for part in pair.split("-"))


def _members(results: pd.DataFrame, layout: Layout, corpora: list[str]) -> list[str]:
    """Experiments shown in one table: the paper's experiments selected for it and, before
    them, the baselines they are compared with; in config (first-appearance) order."""
    rows = results[results["corpus"].isin(corpora)]
    order = list(dict.fromkeys(rows["experiment"]))
    meta = rows.drop_duplicates("experiment").set_index("experiment")
    chosen = []
    for name in order:
        if meta.at[name, "paper"] != layout.paper:
            continue
        tables = meta.at[name, "tables"].split()
        if layout.key == "other" or (layout.key in tables if tables else layout.main):
            chosen.append(name)
    baselines = [b for name in chosen for b in meta.at[name, "baselines"].split()]
    return [n for n in order if n in baselines and n not in chosen] + chosen


def _hit(rows: pd.DataFrame, experiment: str, corpus: str, test_set: str, metric: str) -> pd.Series | None:
    hit = rows[(rows["experiment"] == experiment) & (rows["corpus"] == corpus)
               & (rows["test_set"] == test_set) & (rows["metric"] == metric)]
    return None if hit.empty else hit.iloc[0]


def _score_cell(rows: pd.DataFrame, experiment: str, corpus: str, test_set: str, metric: str,
                markers: Markers, marker_test: str) -> Cell:
    row = _hit(rows, experiment, corpus, test_set, metric)
    if row is None:
        return Cell("–")
    text = f"{row['score']:.2f}"
    if _seeds(row) > 1:
        text += f" ± {row['score_sd']:.2f}"
    marker, words = significance_mark(row, marker_test, markers)
    cell = Cell(text, marker, words=words, value=float(f"{row['score']:.2f}"))
    if words:
        cell.note = _disagreement_note(rows, row, metric, marker_test, verdict_direction(row, marker_test))
    return cell


def _variant_of(rows: pd.DataFrame, experiment: str) -> str:
    hit = rows.loc[rows["experiment"] == experiment, "variant"]
    return str(hit.iloc[0]) if not hit.empty else experiment


def _disagreement_note(rows: pd.DataFrame, row: pd.Series, metric: str, test: str, direction: float) -> str:
    """Both numbers of a cell whose test and score difference point different ways."""
    where = f"{row['variant']}, {row['test_set']} ({row['corpus']})"
    against = _variant_of(rows, row["baseline"])
    corpus_side = (f"corpus {METRIC_NAMES[metric]} {row['delta']:+.2f} against {against} "
                   f"({row['score']:.2f} vs {row['baseline_score']:.2f})")
    if _seeds(row) > 1:  # the means, and the seed whose tests the row reports
        corpus_side = (f"mean {corpus_side}; seed {int(row['reported_seed'])}: {row['reported_delta']:+.2f} "
                       f"({row['reported_score']:.2f} vs {row['reported_baseline_score']:.2f})")
    if test == "sign":
        verdict = (f"the sign test counts {int(row['sign_better'])} sentences better and {int(row['sign_worse'])} worse "
                   f"({int(row['sign_ties'])} ties; p = {row['p_sign']:.2g})")
    else:
        verdict = f"the {TEST_NAMES[test]} says {'better' if direction > 0 else 'worse'} (p = {row[f'p_{test}']:.2g})"
    return f"{where}: {corpus_side}, but {verdict}; no marker, as the test and the score difference disagree."


def _length_notes(rows: pd.DataFrame, shown: list[tuple[str, str, str]], metric: str) -> list[str]:
    """One note per system of a table: the length ratio and brevity penalty of each score it
    shows (``shown``: the (experiment, corpus, test set) of its score cells; with seeds, the
    means over the seeds)."""
    several = len({corpus for _, corpus, _ in shown}) > 1
    parts: dict[str, list[str]] = {}
    for experiment, corpus, test_set in shown:
        row = _hit(rows, experiment, corpus, test_set, metric)
        length = "" if row is None else fmt_length(row.get("length_ratio"), row.get("brevity_penalty"))
        if length:
            parts.setdefault(experiment, []).append(f"{test_set}{f' ({corpus})' if several else ''} {length}")
    return [f"Length ratio (hypothesis/reference) and brevity penalty of {_variant_of(rows, name)}: {'; '.join(texts)}."
            for name, texts in parts.items()]


def _seed_notes(rows: pd.DataFrame, members: list[str], metric: str) -> list[str]:
    """Under a table with seeded systems: how mean ± sd and the markers are made, and per
    system its seeds and the seed whose tests each column's marker reports."""
    if "n_seeds" not in rows.columns:
        return []
    seeded = rows[rows["experiment"].isin(members) & (rows["metric"] == metric) & (rows["n_seeds"] > 1)]
    if seeded.empty:
        return []
    notes = ["Seeds: mean ± sample standard deviation (n − 1) over each system's seeds; its markers are the "
             "significance tests of the seed whose score is closest to the mean (tie: the lowest seed) against "
             "the baseline's run of the same seed."]
    for name in members:
        mine = seeded[seeded["experiment"] == name]
        if mine.empty:
            continue
        reported: dict[str, list[str]] = {}
        for _, r in mine.iterrows():
            if not _missing(r["baseline"]) and r["baseline"]:
                reported.setdefault(str(r["reported_seed"]), []).append(r["test_set"])
        tests = "; ".join(f"seed {seed} ({', '.join(dict.fromkeys(sets))})" for seed, sets in reported.items())
        first = mine.iloc[0]
        notes.append(f"{first['variant']}: {int(first['n_seeds'])} seeds ({', '.join(str(first['seeds']).split())})"
                     + (f"; tests reported: {tests}." if tests else "."))
    return notes


def _extra_cell(rows: pd.DataFrame, experiment: str, corpus: str, extra: str) -> Cell:
    hit = rows[(rows["experiment"] == experiment) & (rows["corpus"] == corpus)]
    if hit.empty:
        return Cell("–")
    column = "parameters" if extra == "params" else "train_tokens_per_s"
    return Cell((_fmt_params if extra == "params" else _fmt_speed)(hit.iloc[0][column]))


def _bold_best(grid: Grid, score_columns: list[int]) -> None:
    for j in score_columns:
        values = [row[j].value for row in grid.rows if row[j].value is not None]
        for row in grid.rows:
            row[j].bold = bool(values) and row[j].value is not None and row[j].value == max(values)


def _label_cells(rows: pd.DataFrame, experiment: str, corpus: str, labels) -> list[Cell]:
    meta = rows[rows["experiment"] == experiment].iloc[0]
    cells = []
    for _, column in labels:
        value = _pair_label(rows[rows["corpus"] == corpus].iloc[0]["pair"]) if column == "pair" else meta[column]
        cells.append(Cell(str(value)))
    return cells


def _signatures(rows: pd.DataFrame, metric: str) -> str:
    return ", ".join(sorted(set(rows.loc[rows["metric"] == metric, "signature"])))


def layout_grids(results: pd.DataFrame, layout: Layout, marker_test: str = "sign") -> list[Grid]:
    """The tables of one layout filled from the results (none when nothing matches)."""
    rows = results[results["pair"].isin(layout.pairs)]
    corpora = list(dict.fromkeys(rows["corpus"]))
    per_corpus = layout.columns == "test_sets" and all(column != "pair" for _, column in layout.labels)
    groups = [[c] for c in corpora] if per_corpus else ([corpora] if corpora else [])
    grids = []
    for group in groups:
        members = _members(rows, layout, group)
        if not members:
            continue
        grid_rows = rows[rows["corpus"].isin(group)]
        headers = [("", header) for header, _ in layout.labels]
        notes = [f"Metric: {METRIC_NAMES[layout.metric]}; signatures: {_signatures(grid_rows, layout.metric)}."]
        markers, shown = layout.significance.markers, []
        if layout.columns == "test_sets":
            test_sets = list(dict.fromkeys(grid_rows["test_set"]))
            headers += [("", t) for t in test_sets] + [("", EXTRA_HEADERS[e]) for e in layout.extras]
            score_columns = list(range(len(layout.labels), len(layout.labels) + len(test_sets)))
            body = []
            for corpus in group:
                for name in members:
                    if grid_rows[(grid_rows["experiment"] == name) & (grid_rows["corpus"] == corpus)].empty:
                        continue
                    body.append(_label_cells(grid_rows, name, corpus, layout.labels)
                                + [_score_cell(grid_rows, name, corpus, t, layout.metric, markers, marker_test)
                                   for t in test_sets]
                                + [_extra_cell(grid_rows, name, corpus, e) for e in layout.extras])
                    shown += [(name, corpus, t) for t in test_sets]
            suffix = f" ({group[0]})" if per_corpus else ""
        else:
            pair_counts = grid_rows.drop_duplicates("corpus")["pair"].value_counts()
            score_columns, body = [], []
            for corpus in group:
                pair = grid_rows[grid_rows["corpus"] == corpus].iloc[0]["pair"]
                name = _pair_label(pair) + (f" ({corpus})" if pair_counts[pair] > 1 else "")
                score_columns.append(len(headers))
                headers += [(name, "BLEU")] + [(name, EXTRA_HEADERS[e]) for e in layout.extras]
                test_set = grid_rows[grid_rows["corpus"] == corpus].iloc[0]["test_set"]
                notes.append(f"{name}: {corpus}, test set {test_set}.")
            for experiment in members:
                cells = _label_cells(grid_rows, experiment, group[0], layout.labels)
                for corpus in group:
                    test_set = grid_rows[grid_rows["corpus"] == corpus].iloc[0]["test_set"]
                    cells += [_score_cell(grid_rows, experiment, corpus, test_set, layout.metric, markers, marker_test)]
                    cells += [_extra_cell(grid_rows, experiment, corpus, e) for e in layout.extras]
                    shown.append((experiment, corpus, test_set))
                body.append(cells)
            suffix = ""
        notes += [cell.note for cells in body for cell in cells if cell.note]
        notes += _length_notes(grid_rows, shown, layout.metric)
        notes += _seed_notes(grid_rows, members, layout.metric)
        grid = Grid(layout.caption + suffix, f"tab:{layout.paper}-{layout.key}" + (f"-{group[0]}" if per_corpus else ""),
                    headers, body, notes, len(layout.labels), layout.significance, marker_test)
        _bold_best(grid, score_columns)
        grids.append(grid)
    return grids


def paper_grids(results: pd.DataFrame, paper: str, marker_test: str = "sign") -> list[Grid]:
    """Every table of ``paper``; its experiments on pairs none of them covers get one more.
    The runs of a system's seeds are one row (:func:`aggregate_seeds`)."""
    results = aggregate_seeds(results)
    layouts = list(LAYOUTS[paper])
    covered = {pair for layout in layouts for pair in layout.pairs}
    own_pairs = results.loc[results["paper"] == paper, "pair"]
    others = tuple(dict.fromkeys(p for p in own_pairs if p not in covered))
    if others:
        layouts.append(_other_pairs_layout(paper, others))
    return [grid for layout in layouts for grid in layout_grids(results, layout, marker_test)]


# ----------------------------------------------------------------------------- formats
_LATEX_MARKERS = {"†": r"$^{\dagger}$", "‡": r"$^{\ddagger}$", "++": "$^{++}$", "+": "$^{+}$", "−−": "$^{--}$", "−": "$^{-}$"}


def _frame(grid: Grid, cell_text) -> pd.DataFrame:
    grouped = any(group for group, _ in grid.columns)
    columns = pd.MultiIndex.from_tuples(grid.columns) if grouped else [name for _, name in grid.columns]
    return pd.DataFrame([[cell_text(j, cell) for j, cell in enumerate(row)] for row in grid.rows], columns=columns)


def to_markdown(grid: Grid) -> str:
    def text(j: int, cell: Cell) -> str:
        value = cell.text + cell.marker
        return (f"**{value}**" if cell.bold else value) + (f" ({cell.words})" if cell.words else "")

    frame = _frame(grid, text)
    if isinstance(frame.columns, pd.MultiIndex):
        frame.columns = [f"{group} {name}".strip() for group, name in frame.columns]
    table = frame.to_markdown(index=False, disable_numparse=True)
    notes = "\n".join(f"- {note}" for note in grid.notes + [grid.significance.legend(grid.marker_test)])
    return f"### {grid.caption}\n\n{table}\n\n{notes}\n"


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": "$<$", ">": "$>$",
                   "|": r"\textbar{}", "±": r"$\pm$", "−": "$-$"}


def _latex_escape(text: str) -> str:
    """Caption and note text for LaTeX (the Styler escapes the cells it formats itself)."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def to_latex(grid: Grid) -> str:
    def text(j: int, cell: Cell) -> str:
        if j < grid.n_labels:
            return cell.text  # escaped by the Styler below
        value = cell.text.replace("–", "--").replace(" ± ", r" $\pm$ ")
        value = rf"\textbf{{{value}}}" if cell.bold else value
        words = rf" {{\footnotesize ({_latex_escape(cell.words)})}}" if cell.words else ""
        return value + _LATEX_MARKERS.get(cell.marker, "") + words

    frame = _frame(grid, text)
    styler = frame.style.hide(axis="index").format(escape="latex", subset=pd.IndexSlice[:, frame.columns[: grid.n_labels]])
    styler = styler.format_index(escape="latex", axis=1)
    align = "l" * grid.n_labels + "r" * (len(grid.columns) - grid.n_labels)
    body = styler.to_latex(column_format=align, hrules=True, multicol_align="c", position="t",
                           caption=_latex_escape(grid.caption), label=grid.label, position_float="centering")
    legend = grid.significance.legend(grid.marker_test, render=_LATEX_MARKERS.__getitem__, escape=_latex_escape)
    notes = " ".join([_latex_escape(note) for note in grid.notes] + [legend])
    return body.replace(r"\end{table}", f"\\par\\footnotesize {notes}\n\\end{{table}}") + "\n"


def to_html(grid: Grid) -> str:
    def text(j: int, cell: Cell) -> str:
        value = html.escape(cell.text) + (f"<sup>{html.escape(cell.marker)}</sup>" if cell.marker else "")
        return (f"<b>{value}</b>" if cell.bold else value) + (f" <small>({html.escape(cell.words)})</small>" if cell.words else "")

    frame = _frame(grid, text)
    table = frame.style.hide(axis="index").set_caption(html.escape(grid.caption)).to_html()
    legend = grid.significance.legend(grid.marker_test, render=lambda m: f"<sup>{html.escape(m)}</sup>", escape=html.escape)
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in grid.notes) + f"<li>{legend}</li>"
    return f"<section>\n{table}\n<ul>{notes}</ul>\n</section>\n"


def render_paper(results: pd.DataFrame, paper: str, marker_test: str = "sign") -> dict[str, str]:
    """Markdown, LaTeX and HTML documents holding every table of ``paper``."""
    grids = paper_grids(results, paper, marker_test)
    if not grids:
        empty = f"No results of {paper} experiments."
        return {"markdown": empty + "\n", "latex": f"% {empty}\n", "html": f"<p>{html.escape(empty)}</p>\n"}
    return {
        "markdown": "\n".join(to_markdown(g) for g in grids),
        "latex": "% requires \\usepackage{booktabs}\n" + "\n".join(to_latex(g) for g in grids),
        "html": "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
                + html.escape(paper) + "</title></head><body>\n" + "".join(to_html(g) for g in grids) + "</body></html>\n",
    }


# ----------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.tables", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    collect = sub.add_parser("collect", help="gather scores, p-values and model information into one CSV")
    collect.add_argument("--metadata", required=True, help="JSON from workflow_scripts.dag.evaluation.report_metadata")
    collect.add_argument("--output", required=True)
    render = sub.add_parser("render", help="one paper's tables as Markdown, LaTeX and HTML")
    render.add_argument("--results", required=True)
    render.add_argument("--paper", required=True, choices=list(LAYOUTS))
    render.add_argument("--marker-test", default="sign", choices=list(TEST_NAMES))
    render.add_argument("--markdown", required=True)
    render.add_argument("--latex", required=True)
    render.add_argument("--html", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "collect":
            frame = collect_results(json.loads(args.metadata))
            with atomic_output(args.output) as handle:
                frame.to_csv(handle, index=False)
        else:
            documents = render_paper(read_results(args.results), args.paper, args.marker_test)
            for key in ("markdown", "latex", "html"):
                with atomic_output(getattr(args, key)) as handle:
                    handle.write(documents[key])
    except (DataError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
