"""Evaluation settings, cross-reference checks, comparisons and file layout (workflow_scripts.dag.evaluation)."""
from __future__ import annotations

import copy

import pytest

from tests.report_fixtures import corpus_spec, fixture_config
from workflow_scripts.dag import WorkflowConfigError
from workflow_scripts.dag import evaluation as ev


def test_settings_defaults_and_overrides():
    config = fixture_config()
    assert ev.evaluation_settings(config) == ev.EVALUATION_DEFAULTS
    config["evaluation"] = {"ar_trials": 50, "tests": ["sign", "paired_ar"], "marker_test": "paired_ar"}
    settings = ev.evaluation_settings(config)
    assert settings["ar_trials"] == 50 and settings["bootstrap_samples"] == 1000 and settings["marker_test"] == "paired_ar"


@pytest.mark.parametrize(
    ("evaluation", "message"),
    [
        ({"sed": 1}, r"evaluation.sed: unknown key"),
        ({"seed": 0}, r"evaluation.seed: expected an integer >= 1"),
        ({"ar_trials": True}, r"evaluation.ar_trials: expected an integer >= 1"),
        ({"tests": ["sign", "t-test"]}, r"evaluation.tests\[1\]: 't-test' is not one of"),
        ({"significance_metrics": ["ter"]}, r"evaluation.significance_metrics\[0\]"),
        ({"tests": ["paired_bs"]}, r"evaluation.marker_test: 'sign' is not among evaluation.tests"),
        ({"length_buckets": [20, 10]}, r"evaluation.length_buckets: expected increasing positive integers"),
        ({"length_metric": "meteor"}, r"evaluation.length_metric"),
    ],
)
def test_settings_errors_name_the_key(evaluation, message):
    config = fixture_config()
    config["evaluation"] = evaluation
    with pytest.raises(WorkflowConfigError, match=message):
        ev.evaluation_settings(config)


def broken(change) -> dict:
    config = copy.deepcopy(fixture_config())
    change(config)
    return config


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c["experiments"]["lpe"].update(baseline="nobody"), r"experiments.lpe.baseline: unknown experiment 'nobody'"),
        (lambda c: c["experiments"]["lpe"].update(baseline="lpe"), r"experiments.lpe.baseline: an experiment cannot be its own"),
        (lambda c: c["experiments"]["gate"].update(baseline=["transformer", "lsa"]),
         r"experiments.gate.baseline\[1\]: baseline 'lsa' does not run on corpus 'iwslt'"),
        (lambda c: c["experiments"]["lpe"].update(paper="my paper"), r"experiments.lpe.paper: 'my paper' is neither a paper"),
        (lambda c: c["experiments"]["lpe"].update(tables=["table9"]), r"experiments.lpe.tables\[0\]: 'table9' is not a table"),
        (lambda c: c["corpora"]["nist"].update(concatenations={"ALL": ["mt02", "mt05"]}),
         r"corpora.nist.concatenations.ALL\[1\]: 'mt05' is not among"),
        (lambda c: c["corpora"]["nist"].update(concatenations={"dev": ["mt02"]}), r"corpora.nist.concatenations.dev: the name"),
        (lambda c: c["corpora"]["nist"].update(concatenations={"ALL": []}), r"concatenations.ALL: no test sets"),
    ],
)
def test_cross_reference_errors_name_the_key(change, message):
    with pytest.raises(WorkflowConfigError, match=message):
        ev.check_evaluation_config(broken(change))


def test_concatenated_test_sets_need_equal_reference_counts():
    config = fixture_config()
    spec = corpus_spec("zh", "en", ["mt02", "mt03"], refs=2)
    spec["splits"]["mt03"] = [{"format": "plain", "files": {"zh": "f", "en": "f"}}]
    config["corpora"]["nist"] = {**spec, "concatenations": {"ALL": ["mt02", "mt03"]}}
    with pytest.raises(WorkflowConfigError, match=r"concatenations.ALL: its test sets have different numbers of references \[1, 2\]"):
        ev.check_evaluation_config(config)


def test_valid_fixture_passes():
    ev.check_evaluation_config(fixture_config())


def test_comparisons_cover_every_baseline_corpus_and_test_set():
    config = fixture_config()
    assert ev.comparisons(config) == [
        ("lpe", "transformer", "nist", "mt02"), ("lpe", "transformer", "nist", "mt03"), ("lpe", "transformer", "nist", "ALL"),
        ("lpe", "transformer", "iwslt", "tst13"),
        ("lsa", "transformer", "nist", "mt02"), ("lsa", "transformer", "nist", "mt03"), ("lsa", "transformer", "nist", "ALL"),
        ("pe_lsa", "transformer", "nist", "mt02"), ("pe_lsa", "transformer", "nist", "mt03"), ("pe_lsa", "transformer", "nist", "ALL"),
        ("gate", "transformer", "iwslt", "tst13"), ("gate", "lpe", "iwslt", "tst13"),
    ]
    config["active_corpora"] = ["iwslt"]
    assert ev.comparisons(config) == [("lpe", "transformer", "iwslt", "tst13"), ("gate", "transformer", "iwslt", "tst13"),
                                      ("gate", "lpe", "iwslt", "tst13")]


def test_paths_of_test_sets_and_concatenations():
    config = fixture_config()
    inputs = ev.comparison_inputs(config, "lpe", "transformer", "nist", "ALL")
    assert inputs == {
        "system": "results/experiments/lpe/nist/concat/ALL.hyp", "system_tok": "results/experiments/lpe/nist/concat/ALL.tok",
        "baseline": "results/experiments/transformer/nist/concat/ALL.hyp",
        "baseline_tok": "results/experiments/transformer/nist/concat/ALL.tok",
        "refs": ["results/data/nist/concat/ALL.ref1.en", "results/data/nist/concat/ALL.ref2.en"],
        "tok_refs": ["results/data/nist/concat/ALL.tok.en", "results/data/nist/concat/ALL.tok.ref1.en"],
    }
    assert ev.reference_files(config, "nist", "mt02") == {
        "refs": ["results/data/nist/raw/mt02.en", "results/data/nist/raw/mt02.ref1.en"],
        "tok": ["results/data/nist/tok/mt02.zh-en.en", "results/data/nist/tok/mt02.ref1.zh-en.en"],
    }
    assert ev.reference_files(config, "iwslt", "tst13") == {
        "refs": ["results/data/iwslt/raw/tst13.de"], "tok": ["results/data/iwslt/tok/tst13.en-de.de"],
    }
    assert ev.member_reference_files(config, "nist", "ALL", "refs", 1) == ["results/data/nist/raw/mt02.ref1.en",
                                                                          "results/data/nist/raw/mt03.ref1.en"]
    assert ev.member_reference_files(config, "nist", "ALL", "tok", 0) == ["results/data/nist/tok/mt02.zh-en.en",
                                                                         "results/data/nist/tok/mt03.zh-en.en"]
    assert ev.member_reference_files(config, "nist", "ALL", "tok", 1) == ["results/data/nist/tok/mt02.ref1.zh-en.en",
                                                                         "results/data/nist/tok/mt03.ref1.zh-en.en"]
    assert ev.member_output_files(config, "lsa", "nist", "ALL", "tok") == ["results/experiments/lsa/nist/mt02.tok",
                                                                          "results/experiments/lsa/nist/mt03.tok"]
    assert ev.comparison_path("gate", "lpe", "iwslt", "tst13") == "results/experiments/gate/iwslt/significance/tst13.vs.lpe.json"


def test_report_targets_and_inputs():
    config = fixture_config()
    targets = ev.report_targets(config)
    assert targets[0] == "results/report/results.csv"
    assert [t for t in targets if "/tables/" in t] == [f"results/report/tables/{p}.{e}" for p in ("lattice", "graph")
                                                        for e in ("md", "tex", "html")]
    assert [t for t in targets if t.endswith(".png") and "/curves/" not in t] == [  # curves: tests/test_summary.py
        "results/report/length/nist/mt02.png", "results/report/length/nist/mt03.png", "results/report/length/iwslt/tst13.png"]
    inputs = ev.report_inputs(config)
    assert "results/experiments/lsa/nist/concat/ALL.scores.json" in inputs
    assert "results/experiments/gate/iwslt/model_info.json" in inputs
    assert len([i for i in inputs if "/significance/" in i]) == len(ev.comparisons(config))
    length = ev.length_inputs(config, "nist", "mt02")
    assert ev.length_systems(config, "nist") == ["transformer", "lpe", "lsa", "pe_lsa"]
    assert length["systems"][1] == "results/experiments/lpe/nist/mt02.hyp" and len(length["refs"]) == 2
    config["evaluation"] = {"length_metric": "tokenized_bleu"}
    assert ev.length_inputs(config, "nist", "mt02")["refs"] == ["results/data/nist/tok/mt02.zh-en.en",
                                                                "results/data/nist/tok/mt02.ref1.zh-en.en"]


def test_concatenate_keeps_every_line(tmp_path, capsys):
    from workflow_scripts.evaluation import concatenate

    (tmp_path / "a").write_text("one\ntwo")  # no final newline
    (tmp_path / "b").write_text("three\n")
    assert concatenate.main(["--input", str(tmp_path / "a"), str(tmp_path / "b"), "--output", str(tmp_path / "ab")]) == 0
    assert (tmp_path / "ab").read_text() == "one\ntwo\nthree\n"
    (tmp_path / "bad").write_bytes(b"ok\n\xff\n")
    assert concatenate.main(["--input", str(tmp_path / "a"), str(tmp_path / "bad"), "--output", str(tmp_path / "x")]) == 1
    assert "bad:2: invalid UTF-8" in capsys.readouterr().err and not (tmp_path / "x").exists()
