"""Source OOV rate of a test set (workflow_scripts/evaluation/oov.py) and its place in the DAG
(rule oov_rate: one record per trained run and test set, in the inputs of `all`)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from nmtmodels.data import ParallelDataset
from nmtmodels.symbols import UNK_ID
from nmtmodels.vocab import Vocabulary
from tests.snakemake_output import planned_jobs
from tests.snakemake_runs import snakemake
from workflow_scripts.dag import paths, runs, seeds, sources
from workflow_scripts.evaluation import oov

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))


def test_unknown_tokens_are_counted_by_hand():
    vocab = Vocabulary(["我", "是", "学生", "。"])
    # 3 + 0 + 4 tokens; unknown: 老师 (line 1), 他 and 们 (line 3); </s> is not a source token
    assert oov.count_unknown(["我 是 老师", "", "他 们 是 学生"], vocab) == (7, 3)
    # a character file writes characters outside its vocabulary as <unk>: unknown as well
    assert oov.count_unknown(["a <unk> b"], Vocabulary(["a", "b"])) == (3, 1)


def test_the_count_is_what_the_models_data_loader_reads(tmp_path):
    source = tmp_path / "test.src"
    source.write_text("th@@ e house\nthe hous@@ e ▁ <unk>\n\nan unknown word\n", encoding="utf-8")
    (tmp_path / "vocab").write_text("th@@ 5\ne 4\nhouse 3\nthe 2\nan 1\n", encoding="utf-8")
    vocab = Vocabulary.from_file(tmp_path / "vocab")
    data = ParallelDataset.from_files(source, None, vocab)
    loader = (int((data.src.data == UNK_ID).sum()), len(data.src.data) - len(data))  # ids minus the appended </s>
    assert oov.count_unknown(source.read_text(encoding="utf-8").splitlines(), vocab) == (loader[1], loader[0]) == (11, 5)


def test_cli_writes_the_record_and_fails_in_one_line(tmp_path, capsys):
    (tmp_path / "test.zh").write_text("我 是 老师\n我\n", encoding="utf-8")
    (tmp_path / "vocab.zh").write_text("我\n是\n", encoding="utf-8")
    out = tmp_path / "test.oov.json"
    args = ["--source", str(tmp_path / "test.zh"), "--vocab", str(tmp_path / "vocab.zh"), "--unit", "lattice/jieba"]
    assert oov.main([*args, "--output", str(out)]) == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    assert {k: record[k] for k in ("unit", "tokens", "unknown", "oov_rate")} == {
        "unit": "lattice/jieba", "tokens": 4, "unknown": 1, "oov_rate": 0.25}
    (tmp_path / "empty.zh").write_text("\n", encoding="utf-8")
    assert oov.main(["--source", str(tmp_path / "empty.zh"), *args[2:], "--output", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["oov_rate"] is None
    capsys.readouterr()
    assert oov.main(["--source", str(tmp_path / "missing.zh"), *args[2:], "--output", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "missing.zh" in err and not (tmp_path / "x.json").exists()


# ----------------------------------------------------------------------------- the DAG
def test_one_record_per_trained_run_and_test_set():
    expected = [f"results/experiments/{e}/{c}/{t}.oov.json" for e, c in runs.experiment_runs(CONFIG)
                for t in CONFIG["corpora"][c]["test_sets"]]
    assert sources.oov_targets(CONFIG) == expected
    assert "results/experiments/lattice_1best_zh/tatoeba_zh_en/test.oov.json" in expected
    assert paths.oov_path("e", "c", "t") == "results/experiments/e/c/t.oov.json"
    config = copy.deepcopy(CONFIG)
    config["active_experiments"] = ["baseline"]
    assert sources.oov_targets(config) == ["results/experiments/baseline/multi30k_en_de/test_2016_flickr.oov.json"]
    # the embedded default leaves its char2word pair out (inactive_experiments): no OOV record of it
    assert not any("/char2" in path for path in expected)
    config = {**copy.deepcopy(CONFIG), "inactive_experiments": []}
    assert "results/experiments/char2char/multi30k_en_de/test_2016_flickr.oov.json" in sources.oov_targets(config)


@pytest.mark.parametrize(("experiment", "corpus", "unit", "source", "vocab"), [
    ("lattice_lpe_lsa_zh", "tatoeba_zh_en", "lattice/jieba+thulac+snownlp",
     "lattice/jieba+thulac+snownlp/test.zh-en.zh", "lattice/jieba+thulac+snownlp/vocab.zh-en.zh"),
    ("lattice_1best_zh", "tatoeba_zh_en", "lattice/jieba", "lattice/jieba/test.zh-en.zh", "lattice/jieba/vocab.zh-en.zh"),
    ("baseline", "multi30k_en_de", "bpe8000", "bpe8000/test_2016_flickr.en-de.en", "bpe8000/vocab.en-de.en"),
    ("char2char", "multi30k_en_de", "char", "char/test_2016_flickr.en-de.en", "char/vocab.en-de.en"),
    ("esc_bbf", "multi30k_en_de", "bpe8000", "bpe8000/test_2016_flickr.en-de.en", "bpe8000/vocab.en-de.en"),
])
def test_a_record_reads_the_test_source_and_vocabulary_of_the_run(experiment, corpus, unit, source, vocab):
    test_set = CONFIG["corpora"][corpus]["test_sets"][0]
    inputs = sources.oov_inputs(CONFIG, experiment, corpus, test_set)
    assert inputs == {"source": f"results/data/{corpus}/{source}", "vocab": f"results/data/{corpus}/{vocab}"}
    # the same files the run trains and translates with
    assert inputs["source"] == sources.source_of_test_set(CONFIG, experiment, corpus, test_set)
    assert inputs["vocab"] == sources.model_inputs(CONFIG, experiment, corpus)["src_vocab"]
    assert sources.source_units(CONFIG, experiment) == unit


def test_a_model_sharing_embeddings_is_counted_against_its_joint_vocabulary():
    config = copy.deepcopy(CONFIG)
    config["experiments"]["baseline"]["model"]["share_embeddings"] = True
    assert sources.oov_inputs(config, "baseline", "multi30k_en_de", "test_2016_flickr")["vocab"] == (
        "results/data/multi30k_en_de/bpe8000/vocab.en-de.joint")


@pytest.mark.heavy
def test_all_plans_the_records(tmp_path):
    jobs = planned_jobs(snakemake(tmp_path, "-n", "all", "--cores", "1").stdout)
    expanded = seeds.expand_seeds(copy.deepcopy(CONFIG))  # one record per run: every seed of a system
    assert jobs["oov_rate"] == len(sources.oov_targets(expanded)) == jobs["score"] == len(runs.experiment_runs(expanded))
