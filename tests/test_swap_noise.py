"""Swap noise of the reordering paper's Figures 3-5 (workflow_scripts.analyses.swap_noise; its planning:
workflow_scripts.dag.analyses)."""
from __future__ import annotations

import copy
import json
import random
import shlex
from pathlib import Path

import pytest
import yaml

from nmtmodels.files import DataError
from workflow_scripts.analyses import swap_noise as sn
from workflow_scripts.dag import WorkflowConfigError, analyses

ROOT = Path(__file__).parent.parent
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


def moved_positions(before: list[str], after: list[str]) -> list[int]:
    return [i for i, (a, b) in enumerate(zip(before, after)) if a != b]


def test_swapping_exchanges_disjoint_pairs_of_words():
    words = [f"w{i}" for i in range(20)]
    rng = random.Random(3)
    for percent in (10, 30, 50, 100):
        out = sn.swap_words(words, percent, rng)
        assert sorted(out) == sorted(words)  # a permutation ...
        source = [words.index(w) for w in out]
        assert all(source[source[i]] == i for i in range(len(words)))  # ... made of exchanged pairs
        moved = moved_positions(words, out)
        assert len(moved) % 2 == 0 and len(moved) == round(percent / 100 * 20)  # 20 words: p n / 2 is whole


def test_the_swapped_fraction_is_the_percentage_on_average_even_for_short_sentences():
    sentence = [f"w{i}" for i in range(7)]  # 10% of 7 words: 0.35 pairs per sentence
    for percent in (10, 25, 40):
        noisy = sn.add_swap_noise([" ".join(sentence)] * 4000, percent, seed=1)
        fraction = sum(len(moved_positions(sentence, line.split())) for line in noisy) / (4000 * 7)
        assert fraction == pytest.approx(percent / 100, abs=0.01)


def test_noise_is_seeded_and_zero_percent_is_the_identity():
    lines = ["a b c d e f g h", "x y z", "", "one"]
    assert sn.add_swap_noise(lines, 0, seed=1) == ["a b c d e f g h", "x y z", "", "one"]
    assert sn.add_swap_noise(lines, 30, seed=1) == sn.add_swap_noise(lines, 30, seed=1)
    many = [" ".join(f"w{i}" for i in range(12))] * 20
    assert sn.add_swap_noise(many, 30, seed=1) != sn.add_swap_noise(many, 30, seed=2)
    assert sn.add_swap_noise(["a b"], 100, seed=5) == ["b a"]
    with pytest.raises(ValueError, match="in \\[0, 100\\]"):
        sn.swap_words(["a"], 120, random.Random(0))


def test_noise_command_writes_the_noisy_file(tmp_path):
    source = tmp_path / "test.tok"
    source.write_text("a b c d\ne f g h\n", encoding="utf-8")
    out = tmp_path / "noisy"
    assert sn.main(["noise", "--input", str(source), "--output", str(out), "--percent", "50", "--seed", "4"]) == 0
    assert out.read_text(encoding="utf-8").splitlines() == sn.add_swap_noise(["a b c d", "e f g h"], 50, 4)
    assert sn.main(["noise", "--input", str(tmp_path / "missing"), "--output", str(tmp_path / "x"), "--percent", "5"]) == 1
    assert not (tmp_path / "x").exists()


def scores(tmp_path, name: str, bleu: float) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"bleu": {"score": bleu, "signature": "s"}, "chrf": {"score": 1.0}}), encoding="utf-8")
    return str(path)


def test_report_table_and_plot(tmp_path):
    base = [scores(tmp_path, f"b{p}", s) for p, s in ((0, 30.0), (20, 20.0), (50, 8.0))]
    both = [scores(tmp_path, f"r{p}", s) for p, s in ((0, 31.0), (20, 22.5), (50, 9.0))]
    csv, md, png = tmp_path / "t.csv", tmp_path / "t.md", tmp_path / "t.png"
    args = ["report", "--percentages", "0", "20", "50", "--system", "baseline", *base, "--system", "+Both REs", *both,
            "--csv", str(csv), "--markdown", str(md), "--png", str(png)]
    assert sn.main(args) == 0
    table = md.read_text(encoding="utf-8")
    assert "| System | 0% | 20% | 50% |" in table
    assert "| +Both REs | 31.00 | 22.50 | 9.00 |" in table
    assert "| +Both REs − baseline | +1.00 | +2.50 | +1.00 |" in table
    assert csv.read_text().splitlines()[1] == "baseline,0,30.0"
    assert png.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(DataError, match="no tokenized_bleu score"):
        sn.score_table({"baseline": base}, [0, 20, 50], "tokenized_bleu")
    with pytest.raises(ValueError, match="2 score files for 3 percentages"):
        sn.score_table({"baseline": base[:2]}, [0, 20, 50], "bleu")


def test_default_config_plans_the_multi30k_analysis_of_the_baseline_and_both_res():
    config = copy.deepcopy(CONFIG)
    analyses.check_swap_noise(config)
    assert analyses.swap_noise_analyses(config) == [("multi30k_en_de", "test_2016_flickr", ["baseline", "reorder_both"])]
    # equal budgets: neither overrides the training defaults
    assert "train" not in config["experiments"]["baseline"] and "train" not in config["experiments"]["reorder_both"]
    assert analyses.swap_noise_targets(config) == [f"results/report/swap_noise/multi30k_en_de/test_2016_flickr.{e}"
                                             for e in ("csv", "md", "png")]
    inputs = analyses.swap_noise_report_inputs(config, "multi30k_en_de")
    assert inputs[0] == "results/experiments/baseline/multi30k_en_de/test_2016_flickr.scores.json"  # 0%: the plain set
    assert inputs[1] == "results/experiments/baseline/multi30k_en_de/swap_noise/test_2016_flickr.swap10.scores.json"
    assert len(inputs) == 12
    arguments = shlex.split(analyses.swap_noise_report_arguments(config, "multi30k_en_de"))
    assert arguments[:7] == ["--percentages", "0", "10", "20", "30", "40", "50"]
    assert arguments[arguments.index("--system", 10) + 1] == "+Both REs"
    assert analyses.noisy_experiment_source(config, "reorder_both", "multi30k_en_de", "test_2016_flickr", "20") == \
        "results/data/multi30k_en_de/swap_noise/bpe8000/test_2016_flickr.swap20.en-de.en"
    # an inactive system leaves the analysis; none left: no analysis
    assert analyses.swap_noise_analyses({**config, "active_experiments": ["reorder_both"]})[0][2] == ["reorder_both"]
    assert analyses.swap_noise_analyses({**config, "active_corpora": ["tatoeba_zh_en"]}) == []


@pytest.mark.parametrize("change, message", [
    (lambda s: s.update(percentages=[20, 10]), r"swap_noise.percentages: expected increasing"),
    (lambda s: s["corpora"].update(nowhere={"systems": ["baseline"]}), r"swap_noise.corpora.nowhere: unknown corpus"),
    (lambda s: s["corpora"]["multi30k_en_de"].update(systems=["baseline", "gone"]),
     r"swap_noise.corpora.multi30k_en_de.systems\[1\]: unknown experiment 'gone'"),
    (lambda s: s["corpora"]["multi30k_en_de"].update(systems=["char2char"]), r"systems\[0\]: 'char2char' must read the plain BPE"),
    (lambda s: s["corpora"]["multi30k_en_de"].update(systems=["esc_bbf"]), r"family bbfnmt"),
    (lambda s: s["corpora"].update(tatoeba_zh_en={"systems": ["reorder_both"]}), r"does not run on corpus 'tatoeba_zh_en'"),
    (lambda s: s["corpora"].update(tatoeba_zh_en={"systems": ["baseline"], "test_set": "dev"}), r"tatoeba_zh_en.test_set: 'dev'"),
    (lambda s: s["corpora"]["multi30k_en_de"].update(test_set="dev"), r"test_set: 'dev' is not among"),
])
def test_config_mistakes_name_the_key(change, message):
    config = copy.deepcopy(CONFIG)
    change(config["swap_noise"])
    with pytest.raises(WorkflowConfigError, match=message):
        analyses.check_swap_noise(config)


def test_an_inactive_corpus_is_not_checked_against_the_experiments():
    config = copy.deepcopy(CONFIG)
    config["experiments"]["baseline"]["corpora"] = ["tatoeba_zh_en"]  # as a paper config may move it
    with pytest.raises(WorkflowConfigError, match="does not run on corpus 'multi30k_en_de'"):
        analyses.check_swap_noise(config)
    analyses.check_swap_noise({**config, "active_corpora": ["tatoeba_zh_en"]})


def test_a_one_best_segmentation_run_is_not_a_plain_bpe_system():
    # a Transformer on one segmentation of a lattice (the lattice paper's 1-best rows) reads
    # seg/ or lattice/ inputs, not the BPE source that the noisy sets are encoded like
    config = copy.deepcopy(CONFIG)
    config["experiments"]["baseline"]["lattice"] = ["bpe8000"]
    with pytest.raises(WorkflowConfigError, match=r"systems\[0\]: 'baseline' must read the plain BPE"):
        analyses.check_swap_noise(config)
