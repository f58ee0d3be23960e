"""The tidy results table from a fixture experiment tree, and the paper tables rendered from it."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import sacrebleu
from sacrebleu.metrics import TER

from nmtmodels.files import DataError
from nmtmodels.text.scoring import METRIC_SPECS
from tests.report_fixtures import PARAMETERS, build_tree, fixture_config
from tests.test_significance import disagreeing_corpus
from workflow_scripts.dag import evaluation as ev
from workflow_scripts.dag import runs
from workflow_scripts.evaluation import layouts, markers, significance, tables
from workflow_scripts.evaluation import results as results_table


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("tree")
    config = fixture_config()
    build_tree(root, config)
    return root, config


@pytest.fixture(scope="module")
def results(tree) -> pd.DataFrame:
    root, config = tree
    return results_table.collect_results(ev.report_metadata(config), root)


def row(frame: pd.DataFrame, experiment: str, corpus: str, test_set: str, metric: str = "bleu") -> pd.Series:
    hit = frame[(frame.experiment == experiment) & (frame.corpus == corpus) & (frame.test_set == test_set) & (frame.metric == metric)]
    assert len(hit) == 1
    return hit.iloc[0]


# ----------------------------------------------------------------------------- collect
def test_collect_has_one_row_per_run_test_set_and_metric(tree, results):
    root, config = tree
    # every registered metric (BLEU, chrF, chrF++, TER, tokenised BLEU, ...) of every run and test set
    expected = sum(len(ev.evaluation_sets(config, c)) for _, c in runs.experiment_runs(config)) * len(METRIC_SPECS)
    assert len(results) == expected
    assert list(results.columns) == list(results_table.RESULT_COLUMNS)
    for _, r in results.iterrows():
        concatenated = ev.is_concatenation(config, r.corpus, r.test_set)
        scores = json.loads((root / ev.system_files(r.experiment, r.corpus, r.test_set, concatenated)["scores"]).read_text())
        assert r.score == scores[r.metric]["score"] and r.signature == scores[r.metric]["signature"]
        assert r.concatenation == concatenated
        assert r.parameters == PARAMETERS[r.experiment]


def test_every_test_has_its_p_value_column():
    # the markers name a test, the results table holds its p-value: one column each, in the table
    assert set(results_table.P_COLUMNS) == set(markers.TEST_NAMES)
    assert set(results_table.P_COLUMNS.values()) <= set(results_table.RESULT_COLUMNS)
    assert len(set(results_table.P_COLUMNS.values())) == len(results_table.P_COLUMNS)


def test_collect_takes_p_values_from_the_comparison(tree, results):
    root, _ = tree
    r = row(results, "lpe", "nist", "ALL", "tokenized_bleu")
    comparison = json.loads((root / ev.comparison_path("lpe", "transformer", "nist", "ALL")).read_text())["metrics"]["tokenized_bleu"]
    assert r.baseline == "transformer"
    assert (r.p_sign, r.p_paired_bs, r.p_paired_ar) == (comparison["sign"]["p_value"], comparison["paired_bs"]["p_value"],
                                                        comparison["paired_ar"]["p_value"])
    assert (r.sign_better, r.sign_worse, r.sign_ties) == (comparison["sign"]["better"], comparison["sign"]["worse"],
                                                          comparison["sign"]["ties"])
    assert r.delta == pytest.approx(r.score - row(results, "transformer", "nist", "ALL", "tokenized_bleu").score)
    assert r.num_references == 2 and row(results, "lpe", "nist", "ALL").num_references == 2
    assert row(results, "lpe", "nist", "ALL").num_sentences == 80
    # chrF is scored but not tested (not among the significance metrics)
    chrf = row(results, "lpe", "nist", "mt02", "chrf")
    assert chrf.baseline == "transformer" and pd.isna(chrf.p_sign)
    baseline = row(results, "transformer", "nist", "mt02")
    assert pd.isna(baseline.baseline) and pd.isna(baseline.p_sign)


def test_collect_compares_with_the_best_of_several_baselines(results):
    r = row(results, "gate", "iwslt", "tst13")
    lpe, transformer = row(results, "lpe", "iwslt", "tst13"), row(results, "transformer", "iwslt", "tst13")
    assert lpe.score > transformer.score
    assert r.baseline == "lpe" and r.baseline_score == lpe.score


def test_collect_has_ter_as_sacrebleu_computes_it(tree, results):
    root, config = tree
    refs = [(root / path).read_text(encoding="utf-8").splitlines() for path in ev.reference_files(config, "nist", "ALL")["refs"]]
    hyps = (root / ev.system_files("lpe", "nist", "ALL", True)["hyp"]).read_text(encoding="utf-8").splitlines()
    metric = TER()
    r = row(results, "lpe", "nist", "ALL", "ter")
    assert r.score == pytest.approx(metric.corpus_score(hyps, refs).score, rel=1e-12)
    assert r.signature == str(metric.get_signature()) and "nrefs:2" in r.signature and r.num_references == 2
    assert pd.isna(r.p_sign) and pd.isna(r.p_paired_bs)  # TER is reported, not tested
    assert row(results, "gate", "iwslt", "tst13", "ter").score == 0.0  # gate copies the reference


def test_collect_has_sacrebleus_length_ratio_and_brevity_penalty(tree, results):
    root, config = tree
    refs = [(root / path).read_text(encoding="utf-8").splitlines() for path in ev.reference_files(config, "nist", "ALL")["refs"]]
    hyps = (root / ev.system_files("lsa", "nist", "ALL", True)["hyp"]).read_text(encoding="utf-8").splitlines()
    own = sacrebleu.corpus_bleu(hyps, refs)  # en target: sacreBLEU's default tokenizer, as the workflow's
    r = row(results, "lsa", "nist", "ALL")
    assert (r.length_ratio, r.brevity_penalty) == (pytest.approx(own.ratio, rel=1e-12), pytest.approx(own.bp, rel=1e-12))
    for metric in ("chrf", "ter"):  # only BLEU has them
        assert pd.isna(row(results, "lsa", "nist", "ALL", metric).length_ratio)
    for _, r in results[results.metric.isin(["bleu", "tokenized_bleu"])].iterrows():
        concatenated = ev.is_concatenation(config, r.corpus, r.test_set)
        entry = json.loads((root / ev.system_files(r.experiment, r.corpus, r.test_set, concatenated)["scores"]).read_text())[r.metric]
        assert (r.length_ratio, r.brevity_penalty) == (entry["length_ratio"], entry["brevity_penalty"])


def test_lower_ter_is_the_better_baseline(results):
    r = row(results, "gate", "iwslt", "tst13", "ter")
    lpe, transformer = row(results, "lpe", "iwslt", "tst13", "ter"), row(results, "transformer", "iwslt", "tst13", "ter")
    assert lpe.score < transformer.score
    assert r.baseline == "lpe" and r.baseline_score == lpe.score and r.delta == -lpe.score


def test_collect_cli_round_trip(tree, results, monkeypatch):
    root, config = tree
    monkeypatch.chdir(root)
    assert tables.main(["collect", "--metadata", json.dumps(ev.report_metadata(config)), "--output", "report/results.csv"]) == 0
    back = results_table.read_results(root / "report/results.csv")
    pd.testing.assert_frame_equal(back[["experiment", "test_set", "metric", "score", "p_sign", "baseline"]],
                                  results[["experiment", "test_set", "metric", "score", "p_sign", "baseline"]].fillna({"baseline": ""}),
                                  check_dtype=False)


def test_collect_errors_name_the_file(tree, tmp_path):
    _, config = tree
    metadata = ev.report_metadata(config)
    with pytest.raises(DataError, match="model_info.json: no such file"):
        results_table.collect_results(metadata, tmp_path)
    stale = tmp_path / "stale"
    build_tree(stale, config)
    path = stale / ev.comparison_path("lsa", "transformer", "nist", "mt02")
    data = json.loads(path.read_text())
    data["metrics"]["bleu"]["system_score"] += 1.0
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"mt02.vs.transformer.json: bleu system score .* differs"):
        results_table.collect_results(metadata, stale)


# ----------------------------------------------------------------------------- render
def dagger_by_hand(r: pd.Series) -> str:
    """What follows the score in the lattice table (p < 0.01), written out from the sign test's
    own numbers: its marker, or in words why none where the corpus score difference points the
    other way."""
    if not r.p_sign < 0.01 or r.sign_better == r.sign_worse:
        return ""
    better = r.sign_better > r.sign_worse
    if better == (r.delta > 0):
        return "†" if better else "‡"
    return f" (sign test favours the {'system' if better else 'baseline'}, score {'lower' if better else 'higher'})"


def test_lattice_tables_fill_from_the_results(results):
    documents = tables.render_paper(results, "lattice")
    markdown = documents["markdown"]
    sections = markdown.split("### ")[1:]
    assert [s.splitlines()[0] for s in sections] == [
        layouts.LAYOUTS["lattice"][0].caption + " (nist)",
        layouts.LAYOUTS["lattice"][1].caption + " (iwslt)",
        layouts.LAYOUTS["lattice"][2].caption + " (nist)",
    ]
    table2 = sections[0].splitlines()
    header = [c.strip() for c in table2[2].strip("|").split("|")]
    assert header == ["System", "Input", "mt02", "mt03", "ALL"]
    body = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")] for line in table2[4:7]}
    assert list(body) == ["Transformer", "+LPE", "+LSA"]  # the baseline first; PE + LSA only in Table 4
    for k, test_set in enumerate(["mt02", "mt03", "ALL"], start=2):
        lpe = row(results, "lpe", "nist", test_set)
        assert lpe.p_sign < 0.01 and lpe.sign_better > lpe.sign_worse and lpe.delta > 0
        assert body["+LPE"][k] == f"**{lpe.score:.2f}†**"  # significant and best in the column
        lsa = row(results, "lsa", "nist", test_set)
        assert body["+LSA"][k] == f"{lsa.score:.2f}" + dagger_by_hand(lsa)
        assert body["Transformer"][k] == f"{row(results, 'transformer', 'nist', test_set).score:.2f}"
    assert body["+LPE"][1] == "Lattice" and body["Transformer"][1] == "PKU"
    table4 = sections[2]
    assert "PE + LSA" in table4 and "+LPE" not in table4 and "| Transformer" in table4
    assert "sign test (Collins et al., 2005)" in markdown


def test_graph_table_groups_columns_by_pair_with_parameters(results):
    documents = tables.render_paper(results, "graph")
    markdown = documents["markdown"]
    assert "| Model" in markdown and "En-De BLEU" in markdown and "En-De #Params" in markdown
    gate = row(results, "gate", "iwslt", "tst13", "tokenized_bleu")
    assert gate.baseline == "lpe" and gate.p_sign < 0.01
    assert f"**{gate.score:.2f}++**" in markdown and "987.7K" in markdown
    assert "| Transformer" in markdown and "| +LPE" in markdown  # both baselines shown
    # the paper reports no significance test: the markers are labelled as the project's own
    assert "the project's own test, not the paper's (the Graph-Transformer paper reports BLEU differences" in markdown
    latex = documents["latex"]
    assert r"\multicolumn{2}{c}{En-De}" in latex
    assert r"+half-dim\&gate" in latex and r"\textbf{" + f"{gate.score:.2f}" + "}$^{++}$" in latex
    assert r"\label{tab:graph-table2}" in latex and r"\toprule" in latex
    html = documents["html"]
    assert "+half-dim&amp;gate" in html and f"<b>{gate.score:.2f}<sup>++</sup></b>" in html


def test_render_cli_writes_three_formats(tree, results, tmp_path):
    csv = tmp_path / "results.csv"
    results.to_csv(csv, index=False)
    out = {ext: tmp_path / f"lattice.{ext}" for ext in ("md", "tex", "html")}
    assert tables.main(["render", "--results", str(csv), "--paper", "lattice", "--marker-test", "paired_ar",
                        "--markdown", str(out["md"]), "--latex", str(out["tex"]), "--html", str(out["html"])]) == 0
    assert "paired approximate randomisation" in out["md"].read_text()
    assert out["tex"].read_text().count(r"\begin{table}") == 3
    assert out["html"].read_text().startswith("<!DOCTYPE html>")


def handmade(rows: list[dict]) -> pd.DataFrame:
    defaults = {c: None for c in results_table.RESULT_COLUMNS}
    defaults.update(family="transformer", input="", tables="", baselines="", baseline="", metric="bleu", signature="sig",
                    concatenation=False, parameters=100, train_tokens_per_s=None)
    return pd.DataFrame([{**defaults, **r} for r in rows], columns=list(results_table.RESULT_COLUMNS))


def test_layouts_are_the_tables_the_config_may_name():
    assert {paper: tuple(layout.key for layout in paper_layouts) for paper, paper_layouts in layouts.LAYOUTS.items()} == ev.PAPER_TABLES
    assert tuple(layouts.LAYOUTS) == ev.PAPERS


def test_markers_mark_significant_differences_in_both_directions():
    assert markers.PLUS.mark(0.001, 1.0) == "++" and markers.PLUS.mark(0.03, 1.0) == "+"
    assert markers.PLUS.mark(0.001, -1.0) == "−−" and markers.PLUS.mark(0.03, -0.5) == "−"
    assert markers.PLUS.mark(0.2, 1.0) == "" and markers.PLUS.mark(float("nan"), 1.0) == ""
    assert markers.PLUS.mark(0.001, None) == "" and markers.PLUS.mark(0.001, pd.NA) == "" and markers.PLUS.mark(0.001, 0) == ""
    assert markers.DAGGER.mark(0.009, 0.1) == "†" and markers.DAGGER.mark(0.02, 0.1) == "" and markers.DAGGER.mark(0.001, -2) == "‡"
    frame = handmade([
        {"experiment": "base", "paper": "", "variant": "Transformer (base)", "corpus": "wmt", "pair": "en-de",
         "test_set": "nt14", "score": 27.3},
        {"experiment": "enc", "paper": "reordering", "variant": "+Encoder REs", "baselines": "base", "corpus": "wmt",
         "pair": "en-de", "test_set": "nt14", "score": 26.1, "baseline": "base", "baseline_score": 27.3, "delta": -1.2,
         "p_sign": 0.02, "sign_better": 40, "sign_worse": 70, "sign_ties": 10, "train_tokens_per_s": 12345.6},
    ])
    markdown = tables.render_paper(frame, "reordering")["markdown"]
    assert "| +Encoder REs       | transformer    | 26.10−  " in markdown and "12,346" in markdown
    assert "**27.30**" in markdown and "§" not in markdown  # the test and the corpus score agree


def issue_rows(**system) -> pd.DataFrame:
    """A baseline and a system whose corpus BLEU is lower while the sign test counts far more
    sentences better than worse (the numbers of issue 19's miniature run)."""
    return handmade([
        {"experiment": "base", "paper": "", "variant": "Transformer (base)", "corpus": "wmt", "pair": "en-de",
         "test_set": "nt14", "score": 27.30},
        {"experiment": "both", "paper": "reordering", "variant": "+Both REs", "baselines": "base", "corpus": "wmt",
         "pair": "en-de", "test_set": "nt14", "score": 27.00, "baseline": "base", "baseline_score": 27.30, "delta": -0.30,
         "p_sign": 1e-177, "sign_better": 902, "sign_worse": 79, "sign_ties": 22, **system},
    ])


def score_cells(markdown: str, variant: str) -> list[str]:
    """The cells of a variant's row in a Markdown table."""
    line = next(line for line in markdown.splitlines() if line.startswith(f"| {variant} "))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_no_win_marker_beside_a_lower_score():
    """Issue 19: the sign test says "better" at p = 1e-177, corpus BLEU is 0.30 lower.  No
    marker of either direction: the cell says the two disagree, in words."""
    frame = issue_rows(p_paired_bs=0.2, p_paired_ar=0.003)
    documents = tables.render_paper(frame, "reordering", "sign")
    markdown = documents["markdown"]
    words = "sign test favours the system, score lower"
    assert score_cells(markdown, "+Both REs")[2] == f"27.00 ({words})"
    note = ("+Both REs, nt14 (wmt): corpus sacreBLEU -0.30 against Transformer (base) (27.00 vs 27.30), "
            "but the sign test counts 902 sentences better and 79 worse (22 ties; p = 1e-177); no marker, as the test "
            "and the score difference disagree.")
    assert f"- {note}\n" in markdown
    assert "sign test (Collins et al., 2005) against the (best) baseline, direction and p-value both from it" in markdown
    for document in documents.values():
        assert "27.00+" not in document and "27.00$^{+" not in document and "27.00<sup>+" not in document
        assert "§" not in document and r"\S" not in document
    assert r"27.00 {\footnotesize (" + words + ")}" in documents["latex"]
    assert f"27.00 <small>({words})</small>" in documents["html"]
    # paired bootstrap: not significant (p = 0.2), so no marker and no words
    markdown = tables.render_paper(frame, "reordering", "paired_bs")["markdown"]
    assert score_cells(markdown, "+Both REs")[2] == "27.00"
    # approximate randomisation tests the corpus difference: significant and worse, agreeing with it
    markdown = tables.render_paper(frame, "reordering", "paired_ar")["markdown"]
    assert score_cells(markdown, "+Both REs")[2] == "27.00−−"


def test_no_marker_where_the_tested_seed_agrees_but_the_mean_is_lower():
    """Seeds: the reported seed's run beats its baseline's run (+0.5, sign test p = 0.001), but
    the means over the seeds are 0.2 apart the other way: no "++" beside the lower mean."""
    frame = issue_rows(score=27.10, delta=-0.20, baseline_score=27.30, p_sign=0.001, sign_better=600, sign_worse=400,
                       sign_ties=3)
    frame = frame.assign(n_seeds=[1, 3], seeds=["", "1 2 3"], score_sd=[float("nan"), 0.4], reported_delta=[None, 0.5],
                         reported_seed=[None, 2],
                         reported_score=[None, 27.6], reported_baseline_score=[None, 27.1])
    layout = layouts.LAYOUTS["reordering"][0]
    cell = layouts.layout_grids(frame, layout)[0].rows[1][2]
    assert (cell.marker, cell.words) == ("", "sign test favours the system, mean score lower")
    assert "seed 2: +0.50 (27.60 vs 27.10)" in cell.note


def test_sign_marker_on_a_real_comparison_where_corpus_bleu_disagrees():
    system, baseline, streams = disagreeing_corpus()
    entry = significance.compare("en", system, baseline, streams, metrics=["bleu"], tests=["sign"])["metrics"]["bleu"]
    sign = entry["sign"]
    frame = issue_rows(score=entry["system_score"], baseline_score=entry["baseline_score"],
                       delta=entry["system_score"] - entry["baseline_score"], p_sign=sign["p_value"],
                       sign_better=sign["better"], sign_worse=sign["worse"], sign_ties=sign["ties"])
    grid = layouts.paper_grids(frame, "reordering")[0]
    cell = grid.rows[1][2]
    # 9 better, 1 worse: p = 22/1024 lies in [0.01, 0.05), a "+" by itself; but corpus BLEU fell by more than 40
    assert (cell.text, cell.marker, cell.words) == (f"{entry['system_score']:.2f}", "", "sign test favours the system, score lower")
    assert "9 sentences better and 1 worse (0 ties; p = 0.021)" in cell.note and cell.note in grid.notes
    assert f"corpus sacreBLEU {entry['system_score'] - entry['baseline_score']:+.2f} " in cell.note


def test_tables_show_sacrebleus_length_ratio_and_brevity_penalty():
    """A tiny example: 5 hypothesis words against 9 reference words, ratio 5/9 and BP
    exp(1 - 9/5), as sacrebleu.corpus_bleu computes them."""
    hypotheses, references = ["the cat sat", "a dog"], [["the cat sat on the mat", "a dog barked"]]
    own = sacrebleu.corpus_bleu(hypotheses, references)
    assert (own.sys_len, own.ref_len) == (5, 9) and own.bp == pytest.approx(math.exp(1 - 9 / 5))
    frame = issue_rows(length_ratio=own.ratio, brevity_penalty=own.bp)
    markdown = tables.render_paper(frame, "reordering")["markdown"]
    assert ("- Length ratio (hypothesis/reference) and brevity penalty of +Both REs: nt14 "
            f"ratio {own.ratio:.3f}, BP {own.bp:.3f}.\n") in markdown
    assert f"ratio {5 / 9:.3f}, BP {math.exp(1 - 9 / 5):.3f}" == "ratio 0.556, BP 0.449"
    assert "brevity penalty of Transformer (base)" not in markdown  # no numbers: no note


def test_paper_experiments_on_other_pairs_get_their_own_table():
    frame = handmade([
        {"experiment": "base", "paper": "", "variant": "Transformer", "corpus": "tanaka", "pair": "ja-en",
         "test_set": "test", "score": 20.0},
        {"experiment": "lpe", "paper": "lattice", "variant": "+LPE", "baselines": "base", "corpus": "tanaka",
         "pair": "ja-en", "test_set": "test", "score": 21.0, "baseline": "base", "delta": 1.0, "p_sign": 0.5},
    ])
    grids = layouts.paper_grids(frame, "lattice")
    assert [g.label for g in grids] == ["tab:lattice-other-tanaka"]
    assert [[c.text for c in r] for r in grids[0].rows] == [["Transformer", "20.00", "100"], ["+LPE", "21.00", "100"]]
    assert tables.render_paper(frame, "esc")["markdown"] == "No results of esc experiments.\n"


def own_rows(system_score: float, baseline_score: float, **tests) -> pd.DataFrame:
    """A baseline and a system of your own table (``paper: relpos``) on one test set."""
    return handmade([
        {"experiment": "base", "paper": "", "variant": "Transformer", "corpus": "wmt", "pair": "en-de",
         "test_set": "nt14", "score": baseline_score, "parameters": 1000},
        {"experiment": "rel", "paper": "relpos", "variant": "+relative positions", "baselines": "base", "corpus": "wmt",
         "pair": "en-de", "test_set": "nt14", "score": system_score, "baseline": "base", "baseline_score": baseline_score,
         "delta": system_score - baseline_score, "parameters": 1500, **tests},
    ])


def test_your_own_experiments_get_a_generic_comparison_table():
    """`paper: relpos` (no paper of the five): one table per tested metric with the system, its
    baseline, both scores, the difference, every test's p-value and both parameter counts."""
    frame = own_rows(27.5, 26.25, p_sign=0.004, sign_better=60, sign_worse=30, sign_ties=10, p_paired_bs=0.03,
                     p_paired_ar=0.0123)
    frame = pd.concat([frame, frame.assign(metric="chrf_pp", score=[50.0, 51.0], baseline_score=[None, 50.0],
                                           delta=[None, 1.0])], ignore_index=True)
    grids = tables.table_grids(frame, "relpos")
    assert [g.caption for g in grids] == ["relpos: each system against its baseline (sacreBLEU)",
                                          "relpos: each system against its baseline (chrF++)"]
    markdown = tables.render_paper(frame, "relpos")["markdown"]
    cells = score_cells(markdown, "+relative positions")
    # the project's markers (++ at p < 0.01 by the sign test), 27.5 - 26.25 by hand, the p-values as given
    assert cells == ["+relative positions", "Transformer", "wmt", "nt14", "27.50++", "26.25", "+1.25", "0.004", "0.03",
                     "0.0123", "1,500", "1,000"]
    assert "| +1.00 " in markdown.split("(chrF++)")[1]
    assert "no paper" in markdown  # the legend says whose markers these are


def test_no_marker_where_a_side_is_below_the_quality_floor():
    """At 0.40 against 0.00 a sign test can be 'significant' (p 1e-76): both are below BLEU's floor
    of 5 points, so no marker in any table, the words say why, and a note explains.  A marker
    needs both sides at or above the floor: 6.00 against 0.00 gets none either."""
    frame = own_rows(0.4, 0.0, p_sign=1e-76, sign_better=300, sign_worse=0, sign_ties=700, p_paired_bs=0.001,
                     p_paired_ar=0.0001)
    for test in markers.TEST_NAMES:
        cell = score_cells(tables.render_paper(frame, "relpos", test)["markdown"], "+relative positions")[4]
        assert cell == f"0.40 ({markers.FLOOR_WORDS})"
    assert "below the quality floor of 5 points of sacreBLEU" in tables.render_paper(frame, "relpos")["markdown"]
    paper = frame.assign(paper=["", "reordering"])
    assert score_cells(tables.render_paper(paper, "reordering")["markdown"], "+relative positions")[2] == (
        f"**0.40** ({markers.FLOOR_WORDS})")  # bold: best in its column
    # one side above the floor: still no marker; both at or above it: the test decides again
    assert score_cells(tables.render_paper(own_rows(6.0, 0.0, p_sign=1e-76, sign_better=300, sign_worse=0),
                                           "relpos")["markdown"], "+relative positions")[4] == f"6.00 ({markers.FLOOR_WORDS})"
    assert score_cells(tables.render_paper(own_rows(6.0, 5.0, p_sign=1e-76, sign_better=300, sign_worse=0),
                                           "relpos")["markdown"], "+relative positions")[4] == "6.00++"


def test_each_metric_has_its_own_quality_floor():
    """The floor is declared with the metric: chrF's 20 points where BLEU's is 5.  The issue's
    chrF1 5.63 against 4.64 (garbage at 20 updates) got ++ under the one 5-point floor."""
    from nmtmodels.text.scoring import METRIC_SPECS

    assert (METRIC_SPECS["bleu"].floor, METRIC_SPECS["tokenized_bleu"].floor, METRIC_SPECS["chrf"].floor) == (5.0, 5.0, 20.0)
    assert METRIC_SPECS["ter"].floor is None
    for metric, system, baseline, marked in [("bleu", 5.63, 4.64, False), ("bleu", 25.63, 24.64, True),
                                             ("chrf", 25.63, 24.64, True), ("chrf", 25.63, 14.64, False),
                                             ("chrf", 5.63, 4.64, False), ("ter", 5.63, 4.64, True)]:
        row = {"metric": metric, "score": system, "baseline_score": baseline, "delta": system - baseline, "p_sign": 1e-9,
               "sign_better": 90, "sign_worse": 10}
        assert markers.below_floor(row) is not marked, (metric, system, baseline)
        assert markers.significance_mark(row, "sign", markers.PLUS) == (("++", "") if marked else ("", markers.FLOOR_WORDS))
    assert markers.floor_of("no_longer_registered") == markers.QUALITY_FLOOR


def test_a_table_of_your_own_needs_a_baseline_and_a_name():
    config = fixture_config()
    config["experiments"]["lsa"].update(paper="my study")
    with pytest.raises(ev.WorkflowConfigError, match=r"^experiments\.lsa\.paper: 'my study' is neither a paper"):
        ev.check_evaluation_config(config)
    config["experiments"]["lsa"].update(paper="mine")
    ev.check_evaluation_config(config)
    config["experiments"]["transformer"].update(paper="mine")
    with pytest.raises(ev.WorkflowConfigError, match=r"^experiments\.transformer\.paper: .*baseline is missing"):
        ev.check_evaluation_config(config)
