"""Attention heat-maps of the char2word paper's Figures 6-7 (workflow_scripts.analyses.attention_plots)."""
from __future__ import annotations

import json

import pytest
import torch

from nmtmodels.checkpoint import save_checkpoint
from nmtmodels.config import ModelConfig
from nmtmodels.files import DataError
from nmtmodels.registry import build_model
from nmtmodels.symbols import SPACE_SYMBOL
from nmtmodels.vocab import Vocabulary
from workflow_scripts.analyses import attention_plots
from workflow_scripts.dag import analyses

S = SPACE_SYMBOL


def test_choose_sentences_takes_the_first_lines_in_the_length_range():
    lines = ["a b", "a b c d", "a", "a b c", "a b c d e", "b c d"]
    assert attention_plots.choose_sentences(lines, 2, 3, 4) == [1, 3]
    assert attention_plots.choose_sentences(lines, 5, 3, 4) == [1, 3, 5]
    with pytest.raises(DataError, match="no test sentence has 7 to 9 characters"):
        attention_plots.choose_sentences(lines, 2, 7, 9)


def test_memory_labels_follow_the_memory_positions():
    chars = ["a", "b", S, "c", S, "d", "e"]
    assert attention_plots.memory_labels(chars, 8) == [*chars, "</s>"]  # char2char: a row per character
    assert attention_plots.memory_labels(chars, 3) == ["ab", "c", "de"]  # char2word: a row per word end
    assert attention_plots.memory_labels(chars, 5) == ["0", "1", "2", "3", "4"]
    assert [attention_plots.memory_unit(chars, n) for n in (8, 3, 5)] == ["source characters", "source words", "source positions"]


def test_targets_are_the_char_papers_character_level_runs():
    config = {
        "active_corpora": ["m_en_de", "m_de_en"],
        "corpora": {"m_en_de": {"src": "en", "tgt": "de", "test_sets": ["t1", "t2"]},
                    "m_de_en": {"src": "de", "tgt": "en", "test_sets": ["t"]}},
        "experiments": {
            "baseline": {"corpora": ["m_en_de"], "subwords": "bpe600"},
            "c2c": {"corpora": ["m_en_de", "m_de_en", "inactive"], "subwords": "char", "paper": "char"},
            "other_char": {"corpora": ["m_en_de"], "subwords": "char"},
        },
    }
    assert analyses.attention_targets(config) == [
        "results/report/attention/c2c/m_en_de.png", "results/report/attention/c2c/m_de_en.png"]
    assert analyses.attention_source(config, "m_en_de") == "results/data/m_en_de/char/t1.en-de.en"


@pytest.fixture
def checkpoint(tmp_path):
    src_vocab = Vocabulary([S, *"abcde"])
    tgt_vocab = Vocabulary([S, *"vwxyz"])
    cfg = ModelConfig.from_dict({"family": "char2word", "options": {
        "preset": "tiny", "embedding_dim": 8, "encoder_dim": 8, "decoder_dim": 8, "attention_dim": 8}})
    torch.manual_seed(0)
    model = build_model(cfg, len(src_vocab), len(tgt_vocab))
    model.attach_vocabularies(src_vocab, tgt_vocab)
    path = tmp_path / "best.pt"
    save_checkpoint(path, {
        "model_config": cfg.to_dict(), "model": model.state_dict(), "update": 1,
        "vocab": {"src": src_vocab.tokens, "tgt": tgt_vocab.tokens, "src_fingerprint": src_vocab.fingerprint(),
                  "tgt_fingerprint": tgt_vocab.fingerprint()},
    })
    return path


def test_cli_plots_the_chosen_sentences(tmp_path, checkpoint):
    source = tmp_path / "test.chars"
    source.write_text(f"a\na b {S} c\nd {S} e e {S} a\nb {S} c c\n", encoding="utf-8")
    png, out = tmp_path / "att.png", tmp_path / "att.json"
    assert attention_plots.main(["--checkpoint", str(checkpoint), "--source", str(source), "--count", "2",
                                 "--min-chars", "4", "--max-chars", "9", "--beam", "2",
                                 "--png", str(png), "--json", str(out)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plots = json.loads(out.read_text(encoding="utf-8"))
    assert [p["line"] for p in plots] == [2, 3]
    assert [p["source"] for p in plots] == [["ab", "c"], ["d", "ee", "a"]]
    for p in plots:
        attention = torch.tensor(p["attention"])
        assert attention.shape == (len(p["target"]), len(p["source"])) and p["target"][-1] == "</s>"
        torch.testing.assert_close(attention.sum(1), torch.ones(len(p["target"])))


def test_cli_bad_checkpoint_is_a_clear_error_without_outputs(tmp_path, capsys):
    source = tmp_path / "test.chars"
    source.write_text("a b c\n", encoding="utf-8")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    png, out = tmp_path / "att.png", tmp_path / "att.json"
    assert attention_plots.main(["--checkpoint", str(junk), "--source", str(source), "--min-chars", "1",
                                 "--png", str(png), "--json", str(out)]) == 1
    assert "junk.pt" in capsys.readouterr().err
    assert not png.exists() and not out.exists()


def test_each_heat_map_has_a_colour_bar_and_a_tick_per_character():
    plots = [{"source": list("ab▁c") + ["</s>"], "target": list("xy▁z"), "attention": [[0.7, 0.1, 0.1, 0.05, 0.05]] * 4},
             {"source": list("de") + ["</s>"], "target": list("uv"), "attention": [[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]}]
    fig = attention_plots.figure(plots, "char2word")
    heat_maps = [ax for ax in fig.axes if ax.get_images()]
    bars = [ax for ax in fig.axes if ax.get_ylabel() == "attention weight"]
    assert len(heat_maps) == len(bars) == 2
    assert [t.get_text() for t in heat_maps[0].get_xticklabels()] == ["x", "y", "␣", "z"]
    assert [t.get_text() for t in heat_maps[1].get_yticklabels()] == ["d", "e", "</s>"]
    assert heat_maps[0].get_images()[0].get_clim() == (0.0, 0.7)
