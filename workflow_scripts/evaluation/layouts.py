"""The papers' result tables as grids of cells, before any output format.

:data:`LAYOUTS` lays the rows of one paper's experiments out as that paper's tables: rows are
the paper's variants (``experiments.X.variant``) and the baselines they are compared with,
columns the test sets of the corpus (or one column group per language pair), scores with
significance markers against the baseline (:mod:`.markers`, in the paper's convention), the
best score of each column in bold, and a note with every score's length ratio and brevity
penalty.  A table takes the corpora of its language pairs; whatever variants the config ran
fill it, and a paper's experiments on other language pairs get an extra table of the same
kind.  A system with several seeds is one row (:func:`.results.aggregate_seeds`): mean ± sd,
and the markers of the seed closest to the mean.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from nmtmodels.text.scoring import metric_spec
from workflow_scripts.evaluation.markers import (
    FLOOR_WORDS,
    TEST_NAMES,
    Markers,
    Significance,
    floor_words,
    seed_count,
    significance_mark,
    significance_of,
    verdict_direction,
    with_verdicts,
)
from workflow_scripts.evaluation.results import P_COLUMNS, aggregate_seeds, missing


@dataclass(frozen=True)
class Layout:
    """One result table of a paper.

    ``pairs``: language pairs whose corpora it shows; ``columns``: ``"test_sets"`` (one
    column per test set of the corpus) or ``"pairs"`` (one column group per corpus, its
    first test set); ``labels``: (header, results column) of the row-label columns (a
    ``pair`` label puts all matching corpora in one table, otherwise one table per corpus);
    ``extras``: ``params`` and/or ``speed`` columns; ``main``: experiments without a
    ``tables`` list appear here.  Its significance markers are the paper's
    (:data:`.markers.SIGNIFICANCE`)."""

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
    if missing(ratio) or missing(bp):
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
    if seed_count(row) > 1:
        text += f" ± {row['score_sd']:.2f}"
    marker, words = significance_mark(row, marker_test, markers)
    cell = Cell(text, marker, words=words, value=float(f"{row['score']:.2f}"))
    if words and words != FLOOR_WORDS and not row.get("verdict"):
        cell.note = _disagreement_note(rows, row, metric, marker_test, verdict_direction(row, marker_test))
    return cell


def _variant_of(rows: pd.DataFrame, experiment: str) -> str:
    hit = rows.loc[rows["experiment"] == experiment, "variant"]
    return str(hit.iloc[0]) if not hit.empty else experiment


def _disagreement_note(rows: pd.DataFrame, row: pd.Series, metric: str, test: str, direction: float) -> str:
    """Both numbers of a cell whose test and score difference point different ways."""
    where = f"{row['variant']}, {row['test_set']} ({row['corpus']})"
    against = _variant_of(rows, row["baseline"])
    corpus_side = (f"corpus {metric_spec(metric).title} {row['delta']:+.2f} against {against} "
                   f"({row['score']:.2f} vs {row['baseline_score']:.2f})")
    if seed_count(row) > 1:  # the means, and the seed whose tests the row reports
        corpus_side = (f"mean {corpus_side}; seed {int(row['reported_seed'])}: {row['reported_delta']:+.2f} "
                       f"({row['reported_score']:.2f} vs {row['reported_baseline_score']:.2f})")
    if test == "sign":
        verdict = (f"the sign test counts {int(row['sign_better'])} sentences better and {int(row['sign_worse'])} worse "
                   f"({int(row['sign_ties'])} ties; p = {row['p_sign']:.2g})")
    else:
        verdict = f"the {TEST_NAMES[test]} says {'better' if direction > 0 else 'worse'} (p = {row[P_COLUMNS[test]]:.2g})"
    return f"{where}: {corpus_side}, but {verdict}; no marker, as the test and the score difference disagree."


def _floor_note(body: list[list[Cell]], metric: str) -> list[str]:
    """The note under a table with cells below the metric's quality floor (:func:`.markers.floor_of`)."""
    if not any(cell.words == FLOOR_WORDS for cells in body for cell in cells):
        return []
    return [f"\"{FLOOR_WORDS}\": the system or its baseline scores below the {floor_words(metric)}, where a "
            "significance test compares noise; no marker there, whatever the test says (the summary's verdicts "
            "follow the same rule)."]


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
             "tests over all runs that the results summary's verdicts read (approximate randomisation stratified by "
             "run; the sign test pooled over the runs; no paired bootstrap over runs), each run against the "
             "baseline's run of the same seed, or where a system has no comparison over runs, the tests of the seed "
             "whose score is closest to the mean (tie: the lowest seed)."]
    for name in members:
        mine = seeded[seeded["experiment"] == name]
        if mine.empty:
            continue
        reported: dict[str, list[str]] = {}
        for _, r in mine.iterrows():
            if not missing(r["baseline"]) and r["baseline"]:
                which = "all runs" if r.get("reported_run") == "all runs" else f"seed {r['reported_seed']}"
                reported.setdefault(which, []).append(r["test_set"])
        tests = "; ".join(f"{which} ({', '.join(dict.fromkeys(sets))})" for which, sets in reported.items())
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
        notes = [f"Metric: {metric_spec(layout.metric).title}; signatures: {_signatures(grid_rows, layout.metric)}."]
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
        notes += _floor_note(body, layout.metric)
        notes += _length_notes(grid_rows, shown, layout.metric)
        notes += _seed_notes(grid_rows, members, layout.metric)
        grid = Grid(layout.caption + suffix, f"tab:{layout.paper}-{layout.key}" + (f"-{group[0]}" if per_corpus else ""),
                    headers, body, notes, len(layout.labels), layout.significance, marker_test)
        _bold_best(grid, score_columns)
        grids.append(grid)
    return grids


def _exact_params(value: Any) -> str:
    """A parameter count in full (the generic table compares two models' sizes: 8.1M hides a
    relation table of a few thousand)."""
    return "–" if value is None or pd.isna(value) else f"{int(value):,}"


def _p_cell(row: pd.Series, test: str) -> Cell:
    value = row.get(P_COLUMNS[test])
    return Cell("–" if missing(value) else f"{float(value):.3g}")


def comparison_grids(results: pd.DataFrame, name: str, metrics: list[str], marker_test: str = "sign",
                     claims: list[dict[str, Any]] | None = None) -> list[Grid]:
    """The generic comparison table of an experiment outside the five papers (``paper: NAME``,
    any other name): one table per metric of ``metrics`` (those with significance tests) with a
    row per system, corpus and test set: its baseline, both scores (mean ± sd over seeds), the
    difference, the p-value of every test and both parameter counts in full.  Markers in the project's
    convention (:data:`.markers.PROJECT`), with the quality floor; no bold (the rows compare
    with different baselines); a row of a claim in ``claims`` (the results summary's) takes its
    verdict's marker (:func:`.markers.with_verdicts`)."""
    results = with_verdicts(aggregate_seeds(results), claims or [])
    rows = results[(results["paper"] == name) & results["baseline"].fillna("").astype(bool)]
    significance = significance_of(name)
    params = {(r["experiment"], r["corpus"]): r["parameters"] for _, r in results.iterrows()}
    grids = []
    for metric in metrics:
        shown = rows[rows["metric"] == metric]
        if shown.empty:
            continue
        headers = [("", h) for h in ("System", "Baseline", "Corpus", "Test set", metric_spec(metric).display, "Baseline score",
                                     "Difference", *(f"p ({TEST_NAMES[t].split(' (')[0]})" for t in TEST_NAMES),
                                     "#Params", "Baseline #Params")]
        body = []
        for _, row in shown.iterrows():
            base = _hit(results, row["baseline"], row["corpus"], row["test_set"], metric)
            base_text = "–" if base is None else f"{base['score']:.2f}" + (
                f" ± {base['score_sd']:.2f}" if seed_count(base) > 1 else "")
            score = _score_cell(shown, row["experiment"], row["corpus"], row["test_set"], metric, significance.markers,
                                marker_test)
            body.append([Cell(str(row["variant"])), Cell(_variant_of(results, row["baseline"])), Cell(row["corpus"]),
                         Cell(row["test_set"]), score, Cell(base_text), Cell(f"{row['delta']:+.2f}"),
                         *(_p_cell(row, t) for t in TEST_NAMES),
                         Cell(_exact_params(row["parameters"])),
                         Cell(_exact_params(params.get((row["baseline"], row["corpus"]))))])
        notes = [f"Metric: {metric_spec(metric).title}; signatures: {_signatures(shown, metric)}.",
                 "Difference: system minus baseline (of the means over seeds); p-values: each test of the system's "
                 "run against its baseline's run (with seeds: the tests over all runs, or the seed closest to the "
                 "mean, below)."]
        notes += [cell.note for cells in body for cell in cells if cell.note]
        notes += _floor_note(body, metric)
        notes += _seed_notes(shown, list(dict.fromkeys(shown["experiment"])), metric)
        grids.append(Grid(f"{name}: each system against its baseline ({metric_spec(metric).display})",
                          f"tab:{name}-{metric}", headers, body, notes, 4, significance, marker_test))
    return grids


def paper_grids(results: pd.DataFrame, paper: str, marker_test: str = "sign",
                claims: list[dict[str, Any]] | None = None) -> list[Grid]:
    """Every table of ``paper``; its experiments on pairs none of them covers get one more.
    The runs of a system's seeds are one row (:func:`aggregate_seeds`); a row of a claim in
    ``claims`` (the results summary's) takes its verdict's marker (:func:`.markers.with_verdicts`)."""
    results = with_verdicts(aggregate_seeds(results), claims or [])
    layouts = list(LAYOUTS[paper])
    covered = {pair for layout in layouts for pair in layout.pairs}
    own_pairs = results.loc[results["paper"] == paper, "pair"]
    others = tuple(dict.fromkeys(p for p in own_pairs if p not in covered))
    if others:
        layouts.append(_other_pairs_layout(paper, others))
    return [grid for layout in layouts for grid in layout_grids(results, layout, marker_test)]
