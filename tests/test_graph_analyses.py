"""Graph-Transformer analyses (workflow_scripts.analyses.graph_analyses): Figure 5 gate weights by length,
Figure 6 score against encoder layers, and which runs get them."""
from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from nmtmodels.checkpoint import save_checkpoint
from nmtmodels.config import ModelConfig
from nmtmodels.data import ParallelDataset
from nmtmodels.files import DataError
from nmtmodels.registry import build_model
from nmtmodels.symbols import PAD_ID
from nmtmodels.vocab import Vocabulary
from workflow_scripts.analyses import graph_analyses
from workflow_scripts.dag import analyses

CONFIG = {
    "active_corpora": ["m_en_de"],
    "corpora": {"m_en_de": {"src": "en", "tgt": "de", "test_sets": ["t1", "t2"]},
                "other": {"src": "de", "tgt": "en", "test_sets": ["t"]}},
    "training": {}, "decoding": {},
    "experiments": {
        "baseline": {"family": "transformer", "corpora": ["m_en_de"], "subwords": "bpe600", "model": {"preset": "tiny"}},
        "g_sum": {"family": "graph_transformer", "corpora": ["m_en_de"], "subwords": "bpe600", "paper": "graph",
                  "model": {"preset": "tiny", "options": {"fusion": "sum"}}, "layers_plot": "Graph"},
        "g_gate": {"family": "graph_transformer", "corpora": ["m_en_de", "other"], "subwords": "bpe600", "paper": "graph",
                   "model": {"preset": "tiny", "encoder_layers": 5, "options": {"fusion": "gate"}}},
        "g_self_l2": {"family": "graph_transformer", "corpora": ["m_en_de"], "subwords": "bpe600",
                      "model": {"preset": "small", "encoder_layers": 2, "options": {"fusion": "self_gate"}}, "layers_plot": "Graph"},
    },
}


def test_gate_runs_are_active_graph_paper_experiments_with_a_gate():
    assert analyses.gate_runs(CONFIG) == [("g_gate", "m_en_de", "t1")]
    inputs = analyses.gate_inputs(CONFIG, "g_gate", "m_en_de", "t1")
    assert inputs == {"checkpoint": "results/experiments/g_gate/m_en_de/train/checkpoint_best.pt",
                      "source": "results/data/m_en_de/bpe600/t1.en-de.en",
                      "tokenized": "results/data/m_en_de/tok/t1.en-de.en"}


def test_layer_points_read_the_resolved_encoder_layers():
    # g_sum: the tiny preset's 3 layers; g_self_l2: the override of the small preset
    assert analyses.layer_points(CONFIG, "m_en_de", "t2") == [
        ("Graph", 3, "results/experiments/g_sum/m_en_de/t2.scores.json"),
        ("Graph", 2, "results/experiments/g_self_l2/m_en_de/t2.scores.json")]
    assert analyses.layer_analyses(CONFIG) == [("m_en_de", "t1"), ("m_en_de", "t2")]
    targets = analyses.graph_targets(CONFIG)
    assert "results/report/graph/gates/g_gate/m_en_de/t1.png" in targets
    assert "results/report/graph/layers/m_en_de/t2.csv" in targets and len(targets) == 6
    without = {**CONFIG, "active_experiments": ["baseline", "g_gate"]}
    assert analyses.layer_analyses(without) == []


def test_gate_table_means_per_layer_and_bucket_and_difference_to_the_first_bucket():
    weights = [[0.2, 0.5], [0.4, 0.7], [0.6, 0.1], [0.9, 0.3]]  # 4 sentences x 2 layers
    lengths = [5, 10, 15, 30]  # buckets 0-10, 0-10, 11-20, >20 (edges 10 20)
    table = graph_analyses.gate_table(weights, lengths, [10, 20])
    assert table["layer"].tolist() == [1, 1, 1, 2, 2, 2]
    assert table["bucket"].tolist() == ["0-10", "11-20", ">20"] * 2
    assert table["sentences"].tolist() == [2, 1, 1, 2, 1, 1]
    assert table["weight"].tolist() == pytest.approx([0.3, 0.6, 0.9, 0.6, 0.1, 0.3])
    assert table["difference"].tolist() == pytest.approx([0.0, 0.3, 0.6, 0.0, -0.5, -0.3])
    with pytest.raises(ValueError, match="4 sentences have weights but 3"):
        graph_analyses.gate_table(weights, lengths[:3], [10, 20])


def test_layer_table_sorts_points_and_names_bad_files(tmp_path):
    def scores(name, bleu):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"bleu": {"score": bleu}, "tokenized_bleu": None}), encoding="utf-8")
        return str(path)

    points = [("TF", 6, scores("a", 27.0)), ("Graph", 6, scores("b", 28.0)), ("Graph", 4, scores("c", 26.5))]
    table = graph_analyses.layer_table(points, "bleu")
    assert table.values.tolist() == [["Graph", 4, 26.5], ["Graph", 6, 28.0], ["TF", 6, 27.0]]
    with pytest.raises(DataError, match="no tokenized_bleu score"):
        graph_analyses.layer_table(points, "tokenized_bleu")
    with pytest.raises(ValueError, match="two experiments with 6 layers"):
        graph_analyses.layer_table(points + [("TF", 6, scores("d", 1.0))], "bleu")


@pytest.fixture
def checkpoint(tmp_path):
    vocab = Vocabulary(list("abcdefgh"))
    cfg = ModelConfig.from_dict({"family": "graph_transformer", "d_model": 16, "heads": 2, "ffn_dim": 32,
                                 "encoder_layers": 2, "decoder_layers": 1, "options": {"fusion": "gate", "half_dim": True}})
    torch.manual_seed(0)
    model = build_model(cfg, len(vocab), len(vocab))
    path = tmp_path / "best.pt"
    save_checkpoint(path, {
        "model_config": cfg.to_dict(), "model": model.state_dict(), "update": 1,
        "vocab": {"src": vocab.tokens, "tgt": vocab.tokens, "src_fingerprint": vocab.fingerprint(),
                  "tgt_fingerprint": vocab.fingerprint()},
    })
    return path, model.eval(), vocab


def test_cli_gates_averages_the_models_own_weights(tmp_path, checkpoint, monkeypatch):
    path, model, vocab = checkpoint
    drawn = []
    real_plot = graph_analyses.line_plot
    monkeypatch.setattr(graph_analyses, "line_plot", lambda lines, *a, **k: (drawn.append(lines), real_plot(lines, *a, **k)))
    lines = ["a b", "c d e f g h a b c d e f", "h g", "a b c d e f g h a b c d e f g h a b c d e f g h"]
    source, tokenized = tmp_path / "test.bpe", tmp_path / "test.tok"
    source.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    tokenized.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    csv, png = tmp_path / "gates.csv", tmp_path / "gates.png"
    assert graph_analyses.main(["gates", "--checkpoint", str(path), "--source", str(source), "--tokenized", str(tokenized),
                                "--buckets", "10", "20", "--csv", str(csv), "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = pd.read_csv(csv)
    # independent: each sentence alone through the model's encoder, its gate averaged by hand
    batch = ParallelDataset.from_lines(lines, vocab).collate(range(len(lines)))
    per_sentence = []
    for row in range(len(lines)):
        n = int(batch.src[row].ne(PAD_ID).sum())
        weights: list = []
        with torch.no_grad():
            model.encoder(batch.src[row : row + 1, :n], batch.src_pad_mask[row : row + 1, :n], high_weights=weights)
        per_sentence.append([float(w.mean()) for w in weights])
    short = [per_sentence[0], per_sentence[2]]  # bucket 0-10; sentence 1 is 11-20, sentence 3 >20
    for layer in (1, 2):
        rows = table[table["layer"] == layer].set_index("bucket")
        assert rows.loc["0-10", "weight"] == pytest.approx(sum(s[layer - 1] for s in short) / 2, abs=1e-5)
        assert rows.loc["11-20", "difference"] == pytest.approx(per_sentence[1][layer - 1] - rows.loc["0-10", "weight"], abs=1e-5)
        assert rows.loc[">20", "sentences"] == 1
    # the plot's buckets carry their sentence counts
    (lines_drawn,) = drawn
    assert list(lines_drawn["layer 1"][0]) == ["0-10\n(n=2)", "11-20\n(n=1)", ">20\n(n=1)"]


def test_cli_gates_mismatched_files_is_a_clear_error_without_outputs(tmp_path, checkpoint, capsys):
    path, _, _ = checkpoint
    source, tokenized = tmp_path / "test.bpe", tmp_path / "test.tok"
    source.write_text("a b\nc d\n", encoding="utf-8")
    tokenized.write_text("a b\n", encoding="utf-8")
    csv, png = tmp_path / "gates.csv", tmp_path / "gates.png"
    assert graph_analyses.main(["gates", "--checkpoint", str(path), "--source", str(source), "--tokenized", str(tokenized),
                                "--csv", str(csv), "--png", str(png)]) == 1
    assert "test.tok" in capsys.readouterr().err
    assert not csv.exists() and not png.exists()


def test_cli_layers_writes_the_table_and_plot(tmp_path):
    points = []
    for name, layers, bleu in (("TF", 4, 20.0), ("TF", 6, 21.0), ("Graph", 4, 20.5)):
        path = tmp_path / f"{name}{layers}.json"
        path.write_text(json.dumps({"bleu": {"score": bleu}}), encoding="utf-8")
        points += ["--point", name, str(layers), str(path)]
    csv, png = tmp_path / "layers.csv", tmp_path / "layers.png"
    assert graph_analyses.main(["layers", *points, "--csv", str(csv), "--png", str(png)]) == 0
    assert pd.read_csv(csv).values.tolist() == [["Graph", 4, 20.5], ["TF", 4, 20.0], ["TF", 6, 21.0]]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
