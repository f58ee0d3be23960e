"""The results summary and the learning curves, from a fixture experiment tree whose training
runs (budgets, metrics.csv rows) are written by hand in tests/report_fixtures.py."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
import sacrebleu
import torch
import yaml

from tests.report_fixtures import BUDGETS, NO_TARGET_TOKENS, STOPS, TRAIN_ROWS, build_training_runs, build_tree, fixture_config
from tests.test_tables import handmade
from workflow_scripts.dag import evaluation as ev
from workflow_scripts.dag import runs
from workflow_scripts.evaluation import claim_files, curves, layouts, machine, results, run_statistics, summary, training_runs
from workflow_scripts.evaluation.verdicts import rules

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# Claims on the fixture's systems (the summary's claims section reads them with --claims).
FIXTURE_CLAIMS = {
    "lpe": {"paper": "lattice", "metric": "bleu", "claim": "+LPE beats the 1-best Transformer", "paper_delta": 0.58},
    "lsa": {"paper": "lattice", "metric": "bleu", "claim": "+LSA beats the 1-best Transformer", "paper_delta": 0.42},
    "gate": {"paper": "graph", "metric": "tokenized_bleu", "claim": "+half-dim&gate beats the Transformer", "paper_delta": 1.1},
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("summary_tree")
    config = fixture_config()
    build_tree(root, config)
    build_training_runs(root, config)
    results.collect_results(ev.report_metadata(config), root).to_csv(root / "results.csv", index=False)
    (root / "claims.yaml").write_text(yaml.safe_dump(FIXTURE_CLAIMS), encoding="utf-8")
    for system, baseline, corpus, test_set in ev.run_comparisons(config, str(root / "claims.yaml")):
        files = {role: [str(root / f) for f in value] for role, value in
                 ev.run_statistics_inputs(config, system, baseline, corpus, test_set).items()}
        seeds = [str(seed) for seed, _, _ in ev.run_pairs(config, system, baseline, corpus)]
        assert run_statistics.main(
            ["--lang", config["corpora"][corpus]["tgt"], "--seeds", *seeds, "--system", *files["system"],
             "--baseline", *files["baseline"], "--ref", *files["refs"], "--tok-system", *files["system_tok"],
             "--tok-baseline", *files["baseline_tok"], "--tok-ref", *files["tok_refs"], "--ar-trials", "2000",
             "--bootstrap-samples", "200", "--comparison", system, baseline, corpus, test_set,
             "--output", str(root / ev.run_statistics_path(system, baseline, corpus, test_set))]) == 0
    return root, config


def run_cli(root: Path, config: dict, *extra: str) -> int:
    return summary.main(["--metadata", json.dumps(ev.report_metadata(config)), "--results", str(root / "results.csv"),
                         "--workflow-dir", str(ROOT), "--configfile", "config.yaml", "configs/ci.yaml", "--claims",
                         str(root / "claims.yaml"), "--run-statistics",
                         *(str(root / ev.run_statistics_path(*c)) for c in ev.run_comparisons(config, str(root / "claims.yaml"))),
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
        row = f"| {key[0]} | {key[1]} | transformer |  | "  # no train.seed: an empty seed cell
        row = row + "" + " | ".join(str(BUDGETS[key[0]][k]) for k in training_runs.BUDGET_KEYS)
        tokens = "–" if key[0] in NO_TARGET_TOKENS else f"{1000 * updates:,}"
        assert run["target_tokens"] == (None if key[0] in NO_TARGET_TOKENS else 1000 * updates)
        assert run["precision"] == "fp32"  # the fixture's experiment.yaml sets no train.amp
        assert f"{row} | {updates} | {elapsed:.0f} | {tokens} | {reason} | fp32 |" in markdown
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


def test_precision_is_train_amp():
    assert [training_runs.precision(train) for train in ({}, {"amp": "none"}, {"amp": "bf16"})] == ["fp32", "fp32", "bf16"]


def test_a_runs_precision_is_what_its_checkpoint_recorded_where_it_did(tree, tmp_path):
    """model_info.json's ``precision`` (what the steps computed in: a GRU family under amp bf16
    on the CPU records fp32) wins over train.amp; without it, train.amp decides."""
    root, config = tree
    copy = tmp_path / "tree"
    shutil.copytree(root, copy)
    experiment, corpus = runs.experiment_runs(config)[0]
    info_path = copy / ev.model_info_path(experiment, corpus)
    experiment_path = copy / ev.run_files(experiment, corpus)["experiment"]
    settings = yaml.safe_load(experiment_path.read_text(encoding="utf-8"))
    settings["train"]["amp"] = "bf16"
    experiment_path.write_text(yaml.safe_dump(settings), encoding="utf-8")
    assert training_runs.training_run(experiment, corpus, copy)["precision"] == "bf16"  # no record: train.amp
    info = json.loads(info_path.read_text(encoding="utf-8"))
    info_path.write_text(json.dumps({**info, "precision": "fp32"}), encoding="utf-8")
    assert training_runs.training_run(experiment, corpus, copy)["precision"] == "fp32"
    info_path.write_text(json.dumps({**info, "devices": ["GPU B"]}), encoding="utf-8")
    assert training_runs.training_run(experiment, corpus, copy)["devices"] == ["GPU B"]  # passed on as recorded


def test_a_run_whose_checkpoint_records_a_divergence_stopped_as_diverged_and_is_a_warning(tree, made, tmp_path):
    """Issue 69: the run's model_info.json carries its checkpoint's record of an end as diverged
    (workflow_scripts/analyses/model_info.py); the stop reason is "diverged" whatever its budget
    says, and the summary's Warnings give the trainer's line; without the record, as before."""
    root, config = tree
    copy = tmp_path / "tree"
    shutil.copytree(root, copy)
    experiment, corpus = runs.experiment_runs(config)[0]
    before = training_runs.training_run(experiment, corpus, copy)
    assert before["stop_reason"] != "diverged" and before["diverged"] is None
    info_path = copy / ev.model_info_path(experiment, corpus)
    line = ("stopped: training diverged: the training loss per target token is 29,068.3 at update 10, over 100 x "
            "ln(target vocabulary size 611) = 641.5; X/checkpoint_best.pt is the model at the stop (update 10; none was "
            "validated before it), marked as diverged; lower train.lr, set train.clip_norm or check the training data")
    info = json.loads(info_path.read_text(encoding="utf-8"))
    info_path.write_text(json.dumps({**info, "diverged": {"reason": "r", "update": 10, "message": line}}), encoding="utf-8")
    run = training_runs.training_run(experiment, corpus, copy)
    assert (run["stop_reason"], run["diverged"], run["updates"]) == ("diverged", line, before["updates"])
    _, data = made
    markdown = summary.to_markdown({**data, "runs": [run, *data["runs"][1:]]})
    warnings = markdown.split("## Warnings")[1].split("\n## ")[0]
    assert f"- {experiment} on {corpus}: {line.removeprefix('stopped: ')}. Its scores and model package" in warnings
    assert f"| {experiment} | {corpus} | " in markdown and " | diverged | " in markdown
    assert training_runs.stop_reason(700, 1.0, {"max_updates": 700}, diverged=True) == "diverged"


def test_the_oov_column_lists_only_the_configured_test_sets(tree, tmp_path):
    """A test set removed from the config keeps its old ``T.oov.json`` on disk; the summary reads
    the configured ones only (it listed every file it found)."""
    root, config = tree
    copy = tmp_path / "tree"
    shutil.copytree(root, copy)
    experiment, corpus = runs.experiment_runs(config)[0]
    folder = (copy / ev.run_files(experiment, corpus)["experiment"]).parent
    for name in ("kept", "removed"):
        (folder / f"{name}.oov.json").write_text(json.dumps({"unit": "bpe", "oov_rate": 0.01}), encoding="utf-8")
    assert set(training_runs.training_run(experiment, corpus, copy, test_sets=["kept"])["source_oov"]) == {"kept"}
    assert {"kept", "removed"} <= set(training_runs.training_run(experiment, corpus, copy)["source_oov"])


def test_stop_reason_rule():
    budget = {"max_updates": 100, "max_epochs": 3, "max_minutes": 1}
    assert training_runs.stop_reason(100, 10.0, budget) == "max_updates"
    assert training_runs.stop_reason(100, 70.0, budget) == "max_updates"  # both: the update limit first
    assert training_runs.stop_reason(99, 60.0, budget) == "max_minutes (cap fired)"
    assert training_runs.stop_reason(99, 59.9, budget) == "max_epochs"
    assert training_runs.stop_reason(99, 59.9, {"max_updates": 100, "max_epochs": 0, "max_minutes": 1}) == "other"


def test_every_score_and_signature_appears(tree, made):
    root, _ = tree
    markdown, data = made
    frame = results.read_results(root / "results.csv")
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
    frame = results.read_results(root / "results.csv")
    lpe = frame[(frame.experiment == "lpe") & (frame.corpus == "nist") & (frame.test_set == "mt02") & (frame.metric == "bleu")].iloc[0]
    # the lattice paper's table cell for the same row carries the same marker
    grid = layouts.paper_grids(frame, "lattice", "sign")[0]
    cells = [cell for row in grid.rows for cell in row if cell.text == f"{lpe.score:.2f}"]
    assert cells and cells[0].marker == "†"
    entry = next(s for s in data["scores"] if (s["experiment"], s["corpus"], s["test_set"], s["metric"]) == ("lpe", "nist", "mt02", "bleu"))
    assert entry["marker"] == "†" and f"| lpe | bleu | {lpe.score:.2f}† |" in markdown
    baseline = next(s for s in data["scores"] if s["experiment"] == "transformer")
    assert baseline["marker"] == "" and baseline["baseline"] is None


def test_every_score_row_has_its_length_ratio_and_brevity_penalty(tree, made):
    root, config = tree
    markdown, data = made
    refs = [(root / path).read_text(encoding="utf-8").splitlines() for path in ev.reference_files(config, "nist", "mt03")["refs"]]
    hyps = (root / ev.system_files("lsa", "nist", "mt03", False)["hyp"]).read_text(encoding="utf-8").splitlines()
    own = sacrebleu.corpus_bleu(hyps, refs)  # en target: the default tokenizer, as the workflow's
    entry = next(s for s in data["scores"] if (s["experiment"], s["test_set"], s["metric"]) == ("lsa", "mt03", "bleu"))
    assert (entry["length_ratio"], entry["brevity_penalty"]) == (pytest.approx(own.ratio), pytest.approx(own.bp))
    section = markdown.split("### nist / mt03\n")[1].split("\n### ")[0]
    lines = {tuple(line.split(" | ")[:2]): line for line in section.splitlines() if line.startswith("| lsa | ")}
    assert f" | {own.ratio:.3f} | {own.bp:.3f} | `" in lines["| lsa", "bleu"]
    assert " |  |  | `" in lines["| lsa", "chrf"]  # chrF has no length ratio or brevity penalty


def test_summary_scores_show_a_tiny_examples_sacrebleu_lengths(tmp_path):
    """5 hypothesis words against 9 reference words: ratio 5/9 = 0.556, BP exp(1 - 9/5) = 0.449."""
    own = sacrebleu.corpus_bleu(["the cat sat", "a dog"], [["the cat sat on the mat", "a dog barked"]])
    assert (f"{own.ratio:.3f}", f"{own.bp:.3f}") == ("0.556", "0.449") == (f"{5 / 9:.3f}", f"{math.exp(1 - 9 / 5):.3f}")
    csv = disagreeing_results(tmp_path, length_ratio=own.ratio, brevity_penalty=own.bp)
    markdown = summary.to_markdown(summary_of(csv))
    assert f"| 7.4e-07 | 0.0120 | 0.0127 | {own.ratio:.3f} | {own.bp:.3f} | `sig` |" in markdown


def disagreeing_results(tmp_path: Path, **system) -> Path:
    """A results.csv with the embedded default's lattice comparison as the issue measured it
    (corpus BLEU 1.40 lower, the sign test "better" at p = 7.4e-07) against the word-level
    1-best Transformer, and char2word against char2char, both below the quality floor."""
    common = {"family": "transformer", "pair": "zh-en", "test_set": "test", "signature": "sig", "num_sentences": 1000,
              "num_references": 1}
    frame = handmade([
        {**common, "experiment": "lattice_1best_zh", "paper": "", "variant": "1-best", "corpus": "tatoeba_zh_en",
         "score": 10.77},
        {**common, "experiment": "lattice_lpe_lsa_zh", "paper": "lattice", "variant": "+LPE+LSA", "corpus": "tatoeba_zh_en",
         "baselines": "lattice_1best_zh", "baseline": "lattice_1best_zh", "score": 9.37, "baseline_score": 10.77,
         "delta": -1.40, "p_sign": 7.4e-07, "sign_better": 480, "sign_worse": 330, "sign_ties": 190, "p_paired_bs": 0.012,
         "p_paired_ar": 0.0127, **system},
        {**common, "experiment": "char2char", "paper": "char", "variant": "char2char", "corpus": "multi30k_de_en",
         "pair": "de-en", "score": 2.60, "metric": "tokenized_bleu"},
        {**common, "experiment": "char2word", "paper": "char", "variant": "char2word", "corpus": "multi30k_de_en",
         "pair": "de-en", "baselines": "char2char", "baseline": "char2char", "score": 1.08, "baseline_score": 2.60,
         "delta": -1.52, "p_sign": 2e-06, "sign_better": 400, "sign_worse": 250, "sign_ties": 350, "p_paired_bs": 0.001,
         "p_paired_ar": 0.0001, "metric": "tokenized_bleu"},
    ])
    path = tmp_path / "results.csv"
    frame.to_csv(path, index=False)
    return path


def summary_of(results_csv: Path, claims_file: Path = claim_files.CLAIMS_FILE) -> dict:
    """A results summary of ``results_csv`` without training runs (make_summary's facts that
    do not need the run files)."""
    data = {"generated_utc": "2026-01-01T00:00:00Z",
            "machine": {"platform": "p", "cpu": "c", "logical_cores": 2, "memory_gib": 1.0, "gpus": ["none"], "python": "3",
                        "torch": "2", "sacrebleu": "2", "snakemake": "9"},
            "workflow": {"commit": "abc", "config_files": []}, "marker_test": "sign", "runs": [],
            "scores": summary.score_rows(results_csv, "sign"), "comparisons": []}
    data.update(claims_file="claims.yaml", quality_floor=summary.quality_floors(),
                claims=rules.claim_rows(data, claim_files.read_claims(claims_file)))
    assert data["claims"] == []  # claims rows come from comparisons over runs, which results.csv does not hold
    return data


def test_no_win_marker_beside_a_lower_score_in_the_summary(tmp_path):
    data = summary_of(disagreeing_results(tmp_path))
    lattice = next(s for s in data["scores"] if s["experiment"] == "lattice_lpe_lsa_zh")
    # the lattice paper's marker would be † (sign test, p < 0.01, 480 better vs 330 worse), but corpus BLEU is 1.40 lower
    assert (lattice["marker"], lattice["disagreement"]) == ("", "sign test favours the system, score lower")
    markdown = summary.to_markdown(data)
    assert "| lattice_lpe_lsa_zh | bleu | 9.37 (sign test favours the system, score lower) | lattice_1best_zh | -1.40 |" in markdown
    assert "9.37†" not in markdown and "1.08+" not in markdown and "§" not in markdown


def test_the_fixtures_claims_over_runs_and_their_verdicts(tree, made):
    """The fixture's systems have one run each: no verdict stronger than "suggestive (1 run)";
    a pair whose runs did not both stop by max_updates at the same count is "not comparable"."""
    root, config = tree
    markdown, data = made
    rows = {(v["system"], v["baseline"], v["corpus"], v["test_set"]): v for v in data["claims"]}
    assert set(rows) == {c for c in ev.run_comparisons(config, str(root / "claims.yaml")) if c[0] in FIXTURE_CLAIMS}
    for (system, baseline, corpus, test_set), v in rows.items():
        stats = json.loads((root / ev.run_statistics_path(system, baseline, corpus, test_set)).read_text())
        metric = stats["metrics"][FIXTURE_CLAIMS[system]["metric"]]
        assert (v["n"], v["p_ar"], v["delta"]) == (1, metric["stratified_ar"]["p_value"], metric["delta"])
    # +LPE copies 95% of the reference words, the Transformer 55%: significant, both at max_updates 300, one run
    for key in (("lpe", "transformer", "nist", "mt02"), ("lpe", "transformer", "nist", "ALL")):
        assert rows[key]["delta"] > 0 and rows[key]["p_ar"] < 0.01 and rows[key]["verdict"] == "suggestive (1 run)"
    # the 2-minute cap stopped both iwslt runs, at 250 and 210 updates; +LSA stopped by max_epochs
    assert rows["lpe", "transformer", "iwslt", "tst13"]["verdict"] == "not comparable"
    assert rows["lpe", "transformer", "iwslt", "tst13"]["system_training"]["updates"] == [250]
    assert rows["lsa", "transformer", "nist", "mt02"]["verdict"] == "not comparable"
    assert {rows["gate", b, "iwslt", "tst13"]["verdict"] for b in ("transformer", "lpe")} == {"not comparable"}
    section = markdown.split("## Claims and verdicts")[1].split("## Scores")[0]
    assert "| gate | +half-dim&gate beats the Transformer | 1.10 | iwslt / tst13 | 1 |" in section  # the verdict table
    assert "| gate | iwslt / tst13 | tokenized_bleu |" in section  # the evidence table
    assert "500; 210 (max_minutes (cap fired))" in section and "**not comparable**" in section


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


def test_the_header_names_the_devices_the_trainings_ran_on(made):
    """The fixture's checkpoints record none; the line counts runs per device, a run that moved
    counted on each of its devices."""
    markdown, data = made
    assert f"- Trainings ran on: not recorded ({len(data['runs'])} runs)" in markdown
    runs = [{"devices": ["CPU A, 1 thread"]}, {"devices": ["CPU A, 1 thread", "GPU B"]}, {"devices": []},
            {"devices": ["GPU B", "GPU B"]}]
    assert summary.training_devices(runs) == "CPU A, 1 thread (2 runs); GPU B (2 runs); not recorded (1 run)"
    assert summary.training_devices([]) == "no runs"


def test_commit_is_unknown_outside_git(tmp_path):
    assert machine.workflow_commit(tmp_path) == "unknown"


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


def test_character_runs_get_their_own_loss_panel_and_the_legend_covers_no_curve(tree, tmp_path):
    """Per-character and per-token losses are not on one axis, and the legend sits below the
    panels (with 14 runs it used to cover the curves)."""
    root, config = tree
    names = ev.length_systems(config, "nist")
    data = {n: curves.curve_series(root / p) for n, p in zip(names, ev.curve_inputs(config, "nist"), strict=True)}
    char = {names[0]}
    fig = curves.figure(data, "nist", char)
    by_label = {ax.get_ylabel(): ax for ax in fig.axes}
    token, per_char = by_label[curves.LOSS_LABELS["token"]], by_label[curves.LOSS_LABELS["char"]]
    def curves_of(ax):
        return [line for line in ax.get_lines() if line.get_linestyle() != "None"]  # not the crosses of early stops

    assert len(curves_of(per_char)) == len(data[names[0]]) - ("dev BLEU" in data[names[0]])  # train and dev loss
    assert len(curves_of(token)) == sum(len(data[n]) - ("dev BLEU" in data[n]) for n in names[1:])
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:len(names) + 2] == [*names, "train loss", "dev loss"]
    bleu = ["dev BLEU"] if any("dev BLEU" in series for series in data.values()) else []  # its line style
    assert labels[len(names) + 2:] == [*bleu, "stopped early: lsa (180)"]  # the fixture's run stopped by max_epochs
    legend_top = fig.legends[0].get_window_extent(fig.canvas.get_renderer()).y1
    assert all(legend_top <= ax.get_window_extent().y0 for ax in fig.axes)
    assert len(curves.figure(data, "nist").axes) == len(fig.axes) - 1  # no character run: no such panel

    png = tmp_path / "c.png"
    argv = ["--char-run", names[0], str(root / ev.curve_inputs(config, "nist")[0])]
    argv += [a for n, p in zip(names[1:], ev.curve_inputs(config, "nist")[1:], strict=True) for a in ("--run", n, str(root / p))]
    assert curves.main([*argv, "--title", "nist", "--png", str(png)]) == 0 and png.read_bytes()[:8] == PNG_MAGIC


def test_curves_colour_by_system_and_mark_runs_that_stopped_early():
    run = {"train loss": ([100, 200, 300], [5.0, 4.0, 3.5]), "dev loss": ([300], [3.9])}
    capped = {"train loss": ([100, 200], [5.1, 4.2]), "dev loss": ([200], [4.3])}
    data = {"base": run, "base_seed2": run, "base_seed3": capped, "gate": run, "gate_seed2": run}
    fig = curves.figure(data, "c")
    (ax,) = fig.axes
    lines = [line for line in ax.get_lines() if line.get_linestyle() != "None"]
    colours = {line.get_color() for line in lines[:6]}  # base's three runs: train and dev each
    assert len(colours) == 1 and lines[6].get_color() not in colours  # gate: another colour
    assert [line.get_alpha() for line in lines[:6:2]] == [1.0, 0.45, 0.45]  # the first seed opaque
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert [(line.get_xdata()[0], line.get_ydata()[0]) for line in crosses] == [(200, 4.2), (200, 4.3)]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["base (3 runs)", "gate (2 runs)", "train loss", "dev loss", "stopped early: base_seed3 (200)"]


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


def test_blank_reference_lines_are_a_warning_of_the_summary(tree, made, tmp_path):
    """``blank_references: warn`` keeps blank reference lines; the summary names each test set
    with their number (the scores' blank_reference_lines), and results written before 0.2
    (no such column) give no warning."""
    root, _ = tree
    frame = results.read_results(root / "results.csv")
    assert (frame["blank_reference_lines"] == 0).all()  # the fixture's references have none
    first = frame.iloc[0]
    chosen = (frame["corpus"] == first["corpus"]) & (frame["test_set"] == first["test_set"])
    frame.loc[chosen, "blank_reference_lines"] = 3
    frame.to_csv(tmp_path / "blank.csv", index=False)
    assert summary.blank_reference_rows(tmp_path / "blank.csv") == [
        {"corpus": first["corpus"], "test_set": first["test_set"], "lines": 3}]
    frame.drop(columns=["blank_reference_lines"]).to_csv(tmp_path / "old.csv", index=False)
    assert summary.blank_reference_rows(tmp_path / "old.csv") == []
    _, data = made
    markdown = summary.to_markdown({**data, "blank_references": summary.blank_reference_rows(tmp_path / "blank.csv")})
    assert f"- {first['corpus']} / {first['test_set']}: 3 reference line(s) are blank" in markdown
    assert "## Warnings" not in summary.to_markdown(data)
