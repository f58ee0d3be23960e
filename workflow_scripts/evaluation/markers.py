"""Significance markers: how each paper marks a significant difference from the baseline, and
which marker (or which words) one results row gets.

How each paper marks significance (its test, levels and symbols, or none) is
:data:`SIGNIFICANCE`, the one place for it.  A marker takes its direction and its p-value
from the same test (``--marker-test``): the sign test's direction is "more sentences better
than worse", the paired tests' the corpus score difference.  A marker is printed only where
that direction agrees with the table's score difference (:func:`significance_mark`); where
they disagree (possible with the sign test) the cell says so in words instead ("sign test
favours the system, score lower") and a note under the table gives both numbers.  Where the
system or its baseline scores below the quality floor of the metric (:func:`floor_of`, declared
with the metric: ``MetricSpec.floor``), no marker at all (:data:`FLOOR_WORDS`): every table,
the summary and the verdicts follow that one rule.  A row of a claim of the results summary carries the claim's verdict
(:func:`with_verdicts`), and its marker is that verdict's (:func:`verdict_mark`): a marker then
means what the verdict means, and a table's note says which rows are marked how (:data:`VERDICT_NOTE`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from nmtmodels.text.scoring import metric_spec
from workflow_scripts.evaluation.results import P_COLUMNS, missing

TEST_NAMES = {"sign": "sign test (Collins et al., 2005)", "paired_bs": "paired bootstrap resampling",
              "paired_ar": "paired approximate randomisation"}
# What "better" means for each test (the direction of its marker), for the legend.
TEST_DIRECTIONS = {"sign": "more of the system's sentences raise the baseline's corpus score when swapped in than lower it",
                   "paired_bs": "the system's corpus score is above the baseline's",
                   "paired_ar": "the system's corpus score is above the baseline's"}
# The quality floor, in points of the compared metric, is declared with the metric
# (nmtmodels.text.scoring.MetricSpec.floor: BLEU 5, chrF 20): a system below it shares little more
# than frequent words with the references, so a comparison with it measures nothing (e.g. the
# embedded default's character models after 300 updates).  No marker and no verdict for a
# comparison where either side is below it.  QUALITY_FLOOR: BLEU's, for a metric no longer registered.
QUALITY_FLOOR = 5.0
FLOOR_WORDS = "below the quality floor: not tested"
# The tests' names in the words that replace a marker (:func:`disagreement_words`).
TEST_SHORT = {"sign": "sign test", "paired_bs": "paired bootstrap", "paired_ar": "approximate randomisation"}


@dataclass(frozen=True)
class Markers:
    """Significance markers, strictest level first: (alpha, better, worse)."""

    levels: tuple[tuple[float, str, str], ...]

    def mark(self, p_value: Any, direction: Any) -> str:
        """The marker of a test's p-value and its direction (positive: the system is better;
        both from the same test, see :func:`verdict_direction`); none when either is missing.
        Whether it may be printed is :func:`significance_mark`'s decision."""
        if missing(p_value) or missing(direction) or direction == 0:
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


def tested_delta(row: pd.Series | dict[str, Any]) -> Any:
    """The score difference the row's significance tests tested: ``reported_delta`` (the seed
    closest to the mean, :func:`.results.aggregate_seeds`) where the row has one, else ``delta``."""
    reported = row.get("reported_delta")
    return row.get("delta") if reported is None or missing(reported) else reported


def verdict_direction(row: pd.Series | dict[str, Any], test: str) -> float | None:
    """The direction of ``test``'s verdict on one results row (positive: the system is
    better; None without the test's numbers).  The sign test counts sentences
    (``sign_better - sign_worse``), which need not agree with the corpus score difference;
    paired bootstrap and approximate randomisation test the corpus score difference itself
    (:func:`tested_delta`)."""
    if test == "sign":
        better, worse = row.get("sign_better"), row.get("sign_worse")
        return None if missing(better) or missing(worse) else float(better) - float(worse)
    if test in ("paired_bs", "paired_ar"):
        delta = tested_delta(row)
        return None if missing(delta) else float(delta)
    raise ValueError(f"unknown test '{test}' (known: {', '.join(TEST_NAMES)})")


def _sign(value: float) -> int:
    return int(value > 0) - int(value < 0)


def disagreement_words(test: str, direction: float, delta: Any, mean: bool = False) -> str:
    """What a cell says instead of a marker whose direction and score difference disagree,
    e.g. "sign test favours the system, score lower" (``mean``: the difference of the means
    over seeds)."""
    side = "system" if direction > 0 else "baseline"
    change = "unknown" if missing(delta) else {1: "higher", 0: "equal", -1: "lower"}[_sign(float(delta))]
    return f"{TEST_SHORT[test]} favours the {side}, {'mean ' if mean else ''}score {change}"


def floor_of(metric: Any) -> float | None:
    """The quality floor of ``metric`` (``MetricSpec.floor``; None: the metric has none), or
    :data:`QUALITY_FLOOR` for a row without a metric or of a metric no longer registered."""
    if metric is None or missing(metric):
        return QUALITY_FLOOR
    try:
        return metric_spec(str(metric)).floor
    except ValueError:
        return QUALITY_FLOOR


def floor_words(metric: Any) -> str:
    """``quality floor of 20 points of chrF2``: the floor of ``metric`` in words."""
    try:
        display = f" of {metric_spec(str(metric)).display}"
    except ValueError:
        display = ""
    return f"quality floor of {floor_of(metric):g} points{display}"


def below_floor(row: pd.Series | dict[str, Any]) -> bool:
    """Whether the system or its baseline scores below the quality floor of the row's ``metric``
    (:func:`floor_of`; the means, for a row over seeds): a comparison needs both at or above it.
    False without a baseline or for a metric without a floor."""
    score, base, floor = row.get("score"), row.get("baseline_score"), floor_of(row.get("metric"))
    return floor is not None and not missing(score) and not missing(base) and min(float(score), float(base)) < floor


VERDICT_NOTE = (
    "Rows of a claim (the results summary's claims and verdicts): the marker is the claim's verdict, shown only where it "
    "is reproduced (better) or reversed (worse), at the strictest level that its Holm-adjusted stratified AR p-value "
    "(and the paper's sign test, where the paper used it) reach; any other verdict is written in the cell instead. "
    "Other rows: the marker of the test named in the legend alone, without Holm's adjustment, the interval or the "
    "controls that a verdict needs.")
NO_VERDICTS_NOTE = ("No results summary was read: every marker is that of the test named in the legend alone, without "
                    "Holm's adjustment, the interval or the controls that a claim's verdict needs.")


def with_verdicts(results: pd.DataFrame, claims: list[dict[str, Any]]) -> pd.DataFrame:
    """``results`` (one row per system, :func:`.results.aggregate_seeds`) with each claim's
    ``verdict`` and ``verdict_p`` (the larger of its Holm-adjusted AR p-value and, where the
    paper used it, its pooled sign test's) on the row of its system, baseline, test set and
    metric (the results summary's ``claims``); empty elsewhere."""
    results = results.assign(verdict="", verdict_p=float("nan"))
    for c in claims:
        if "corpus" not in c:
            continue
        hit = ((results["experiment"] == c["system"]) & (results["baseline"] == c["baseline"]) & (results["corpus"] == c["corpus"])
               & (results["test_set"] == c["test_set"]) & (results["metric"] == c["metric"]))
        p_values = [c.get("p_holm", c.get("p_ar"))] + ([c.get("p_sign")] if c.get("paper_test") == "sign" else [])
        known = [float(p) for p in p_values if p is not None]
        results.loc[hit, "verdict"] = c["verdict"]
        results.loc[hit, "verdict_p"] = max(known) if len(known) == len(p_values) else float("nan")
    return results


def verdict_mark(row: pd.Series | dict[str, Any], markers: Markers) -> tuple[str, str] | None:
    """(marker, words) of a row that carries a claim's verdict (:func:`with_verdicts`): the
    paper's marker for a reproduced or reversed verdict at the level its ``verdict_p`` reaches,
    else no marker and the verdict in words; None for a row without a verdict."""
    verdict = row.get("verdict")
    if not isinstance(verdict, str) or not verdict:
        return None
    if verdict in ("reproduced", "reversed"):
        return markers.mark(row.get("verdict_p"), 1 if verdict == "reproduced" else -1), ""
    return "", verdict


def significance_mark(row: pd.Series | dict[str, Any], test: str, markers: Markers) -> tuple[str, str]:
    """(marker, words) of one results row: the marker of ``test`` (direction and p-value
    from it, :func:`verdict_direction`) when its direction agrees with the score difference,
    i.e. with the difference the test compared (:func:`tested_delta`) and with the one the
    row shows (``delta``; the difference of the means over seeds); otherwise no marker and
    :func:`disagreement_words`.  ("", "") when the test is not significant or absent;
    ("", :data:`FLOOR_WORDS`) when either side is below the quality floor (:func:`below_floor`),
    whatever the test says; a row of a claim takes its verdict's marker instead (:func:`verdict_mark`)."""
    if below_floor(row):
        return "", FLOOR_WORDS
    if (decided := verdict_mark(row, markers)) is not None:
        return decided
    direction = verdict_direction(row, test)
    marker = markers.mark(row.get(P_COLUMNS[test]), direction)
    if not marker:
        return "", ""
    for delta, mean in ((tested_delta(row), False), (row.get("delta"), seed_count(row) > 1)):
        if missing(delta) or _sign(float(delta)) != _sign(direction):
            return "", disagreement_words(test, direction, delta, mean)
    return marker, ""


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


def seed_count(row: pd.Series | dict[str, Any]) -> int:
    """The number of seeds a results row is the mean of (1 for a row of one run)."""
    n = row.get("n_seeds")
    return 1 if n is None or missing(n) else int(n)
