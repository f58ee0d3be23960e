"""The results summary and the learning curves, from a fixture experiment tree whose training
runs (budgets, metrics.csv rows) are written by hand in tests/report_fixtures.py."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from tests.report_fixtures import BUDGETS, STOPS, TRAIN_ROWS, build_training_runs, build_tree, fixture_config
from workflow_scripts.dag import evaluation as ev
from workflow_scripts.dag import runs
from workflow_scripts.evaluation import curves, summary, tables

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("summary_tree")
    config = fixture_config()
    build_tree(root, config)
    build_training_runs(root, config)
    tables.collect_results(ev.report_metadata(config), root).to_csv(root / "results.csv", index=False)
    return root, config


def run_cli(root: Path, config: dict, *extra: str) -> int:
    return summary.main(["--metadata", json.dumps(ev.report_metadata(config)), "--results", str(root / "results.csv"),
                         "--workflow-dir", str(ROOT), "--configfile", "config.yaml", "configs/ci.yaml",
                         "--markdown", str(root / "out/summary.md"), "--json", str(root / "out/summary.json"), *extra])


@pytest.fixture(scope="module")
def made(tree, tmp_path_factory) -> tuple[str, dict]:
    root, config = tree
    import os

    cwd = os.getcwd()
    os.chdir(root)  # the summary reads the run files relative to the working directory, as in a job
    try:
        assert run_cli(root, config) == 0
    finally:
        os.chdir(cwd)
    return (root / "out/summary.md").read_text(encoding="utf-8"), json.loads((root / "out/summary.json").read_text())


def test_the_fixture_has_a_minutes_cap_and_a_max_updates_stop():
    reasons = {reason for _, _, reason in STOPS.values()}
    assert {"max_updates", "max_minutes (cap fired)", "max_epochs"} <= reasons
    for (experiment, corpus), (updates, elapsed, _) in STOPS.items():  # STOPS agrees with the rows written
        assert TRAIN_ROWS[experiment, corpus][-1][0] == updates and TRAIN_ROWS[experiment, corpus][-1][-1] == elapsed


def test_runs_have_the_hand_written_updates_time_and_stop_reason(tree, made):
    _, config = tree
    markdown, data = made
    by_run = {(r["experiment"], r["corpus"]): r for r in data["runs"]}
    assert list(by_run) == runs.experiment_runs(config)
    for key, (updates, elapsed, reason) in STOPS.items():
        run = by_run[key]
        assert (run["updates"], run["elapsed_s"], run["stop_reason"]) == (updates, elapsed, reason), key
        assert run["budget"] == BUDGETS[key[0]]
        assert run["family"] == "transformer"
        row = f"| {key[0]} | {key[1]} | transformer | " + " | ".join(str(BUDGETS[key[0]][k]) for k in summary.BUDGET_KEYS)
        assert f"{row} | {updates} | {elapsed:.0f} | {reason} |" in markdown
    assert by_run["gate", "iwslt"]["parameters"] == 987_654 and "987,654" in markdown


def test_runs_have_their_best_dev_loss_and_bleu(made):
    markdown, data = made
    by_run = {(r["experiment"], r["corpus"]): r for r in data["runs"]}
    for key, rows in TRAIN_ROWS.items():
        dev = [(valid_loss, update) for update, _, valid_loss, _, _ in rows if valid_loss is not None]
        bleus = [bleu for *_, bleu, _ in rows if bleu is not None]
        best_loss, at = min(dev)
        run = by_run[key]
        assert (run["best_dev_loss"], run["best_dev_loss_update"]) == (best_loss, at), key
        assert run["best_dev_bleu"] == (max(bleus) if bleus else None), key
        assert f"| {best_loss:.3f} ({at}) |" in markdown
    assert by_run["transformer", "nist"]["best_dev_loss"] == 4.9  # by hand: 6.1 at 100, 4.9 at 300


def test_stop_reason_rule():
    budget = {"max_updates": 100, "max_epochs": 3, "max_minutes": 1}
    assert summary.stop_reason(100, 10.0, budget) == "max_updates"
    assert summary.stop_reason(100, 70.0, budget) == "max_updates"  # both: the update limit first
    assert summary.stop_reason(99, 60.0, budget) == "max_minutes (cap fired)"
    assert summary.stop_reason(99, 59.9, budget) == "max_epochs"
    assert summary.stop_reason(99, 59.9, {"max_updates": 100, "max_epochs": 0, "max_minutes": 1}) == "other"


def test_every_score_and_signature_appears(tree, made):
    root, _ = tree
    markdown, data = made
    frame = tables.read_results(root / "results.csv")
    assert len(data["scores"]) == len(frame)
    for (_, r), entry in zip(frame.iterrows(), data["scores"], strict=True):
        assert (entry["experiment"], entry["corpus"], entry["test_set"], entry["metric"]) == (
            r.experiment, r.corpus, r.test_set, r.metric)
        assert entry["score"] == r.score and entry["signature"] == r.signature
        assert f"| {r.experiment} | {r.metric} | {r.score:.2f}" in markdown
        # GitHub tables need the pipes of a signature escaped, even in code
        assert "`" + r.signature.replace("|", "\\|") + "`" in markdown
    for corpus, test_set in {(r.corpus, r.test_set) for _, r in frame.iterrows()}:
        assert f"### {corpus} / {test_set}" in markdown


def test_markers_are_the_tables(tree, made):
    root, _ = tree
    markdown, data = made
    frame = tables.read_results(root / "results.csv")
    lpe = frame[(frame.experiment == "lpe") & (frame.corpus == "nist") & (frame.test_set == "mt02") & (frame.metric == "bleu")].iloc[0]
    # the lattice paper's table cell for the same row carries the same marker
    grid = tables.paper_grids(frame, "lattice", "sign")[0]
    cells = [cell for row in grid.rows for cell in row if cell.text == f"{lpe.score:.2f}"]
    assert cells and cells[0].marker == "†"
    entry = next(s for s in data["scores"] if (s["experiment"], s["corpus"], s["test_set"], s["metric"]) == ("lpe", "nist", "mt02", "bleu"))
    assert entry["marker"] == "†" and f"| lpe | bleu | {lpe.score:.2f}† |" in markdown
    baseline = next(s for s in data["scores"] if s["experiment"] == "transformer")
    assert baseline["marker"] == "" and baseline["baseline"] is None


def test_fair_comparison_lines(made):
    markdown, data = made
    pairs = {(c["experiment"], c["baseline"], c["corpus"]): c for c in data["comparisons"]}
    assert set(pairs) == {(e, b, c) for e, b, c, _ in ev.comparisons(fixture_config())}
    assert pairs["lpe", "transformer", "nist"]["equal_budgets"] and pairs["lpe", "transformer", "iwslt"]["updates"] == [250, 210]
    assert pairs["gate", "lpe", "iwslt"]["budget_differences"] == {"max_updates": [500, 300]}
    assert "- lpe vs transformer on nist: equal budgets (max_updates 300, max_minutes 2); updates done 300 vs 300 (equal)" in markdown
    assert "- gate vs lpe on iwslt: different budgets (max_updates 500 vs 300)" in markdown


def test_header_names_the_machine_commit_and_config_files(made):
    markdown, data = made
    assert data["machine"]["torch"] == torch.__version__ and f"torch {torch.__version__}" in markdown
    assert data["machine"]["logical_cores"] >= 1 and data["machine"]["gpus"]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert data["workflow"]["commit"].split(" ")[0] == head and head in markdown
    assert data["workflow"]["config_files"] == ["config.yaml", "configs/ci.yaml"]
    assert data["generated_utc"].endswith("Z")


def test_commit_is_unknown_outside_git(tmp_path):
    assert summary.workflow_commit(tmp_path) == "unknown"


def test_missing_metrics_is_one_line_naming_the_file_and_writes_nothing(tree, tmp_path, capsys, monkeypatch):
    root, config = tree
    copy = tmp_path / "tree"
    shutil.copytree(root, copy)
    shutil.rmtree(copy / "out", ignore_errors=True)  # what the module fixture wrote
    missing = copy / "results/experiments/lsa/nist/train/metrics.csv"
    missing.unlink()
    monkeypatch.chdir(copy)
    assert run_cli(copy, config) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "results/experiments/lsa/nist/train/metrics.csv" in err
    assert not (copy / "out").exists() or not list((copy / "out").iterdir())  # no summary, no partial file


# ----------------------------------------------------------------------------- curves
def test_curve_series_are_the_csv_columns(tree):
    root, _ = tree
    path = root / "results/experiments/transformer/nist/train/metrics.csv"
    rows = TRAIN_ROWS["transformer", "nist"]
    expected = {label: ([float(r[0]) for r in rows if r[i] is not None], [r[i] for r in rows if r[i] is not None])
                for label, i in (("train loss", 1), ("dev loss", 2), ("dev BLEU", 3))}
    assert curves.curve_series(path) == expected
    # no BLEU logged: no BLEU series
    assert list(curves.curve_series(root / "results/experiments/gate/iwslt/train/metrics.csv")) == ["train loss", "dev loss"]


def test_learning_curve_png_plots_every_run_of_the_corpus(tree, tmp_path):
    root, config = tree
    names = ev.length_systems(config, "nist")
    argv = [a for name, path in zip(names, ev.curve_inputs(config, "nist"), strict=True) for a in ("--run", name, str(root / path))]
    png = tmp_path / "curves/nist.png"
    assert curves.main([*argv, "--title", "nist", "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5_000
    plotted = curves.plot_curves({n: root / p for n, p in zip(names, ev.curve_inputs(config, "nist"), strict=True)},
                                 tmp_path / "again.png", "nist")
    assert list(plotted) == names
    for name in names:
        assert plotted[name] == curves.curve_series(root / f"results/experiments/{name}/nist/train/metrics.csv")


def test_curves_missing_metrics_is_one_line(tmp_path, capsys):
    assert curves.main(["--run", "x", str(tmp_path / "nope.csv"), "--png", str(tmp_path / "x.png")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nope.csv" in err
    assert not (tmp_path / "x.png").exists()


def test_summary_targets_and_inputs():
    config = fixture_config()
    targets = ev.report_targets(config)
    assert targets[-4:] == ["results/report/summary.md", "results/report/summary.json",
                            "results/report/curves/nist.png", "results/report/curves/iwslt.png"]
    inputs = ev.summary_inputs(config)
    assert inputs["results"] == "results/report/results.csv"
    assert len(inputs["metrics"]) == len(inputs["experiment"]) == len(inputs["model_info"]) == len(runs.experiment_runs(config))
    assert "results/experiments/gate/iwslt/train/metrics.csv" in inputs["metrics"]
    assert ev.curve_inputs(config, "iwslt") == [f"results/experiments/{e}/iwslt/train/metrics.csv" for e in ("transformer", "lpe", "gate")]
