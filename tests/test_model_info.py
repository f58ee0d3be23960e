"""Parameter count from a checkpoint and training speed from metrics.csv (workflow_scripts.analyses.model_info)."""
from __future__ import annotations

import json

import pytest

from nmtmodels.checkpoint import save_checkpoint
from nmtmodels.files import DataError
from nmtmodels.tests.copy_task_fixtures import tiny_model
from nmtmodels.vocab import Vocabulary
from workflow_scripts.analyses import model_info

METRICS_HEADER = "update,epoch,loss,nll,lr,tokens_per_s,grad_norm,valid_loss,valid_nll,valid_bleu,elapsed\n"


def write_checkpoint(path, vocab: Vocabulary, precision: str | None = None, trainer: dict | None = None, **overrides):
    model, cfg = tiny_model(len(vocab), len(vocab), **overrides)
    save_checkpoint(path, {
        "model_config": cfg.to_dict(), "model": model.state_dict(), "update": 7,
        **({"precision": precision} if precision else {}),
        **({"trainer": trainer} if trainer else {}),
        "vocab": {"src": vocab.tokens, "tgt": vocab.tokens, "src_fingerprint": vocab.fingerprint(),
                  "tgt_fingerprint": vocab.fingerprint()},
    })
    return model, cfg


def test_parameters_count_a_shared_embedding_once(tmp_path):
    vocab = Vocabulary([f"t{i}" for i in range(50)])
    metrics = tmp_path / "metrics.csv"
    metrics.write_text(METRICS_HEADER)
    separate, cfg = write_checkpoint(tmp_path / "separate.pt", vocab, share_embeddings=False)
    shared, _ = write_checkpoint(tmp_path / "shared.pt", vocab, share_embeddings=True)
    info_separate = model_info.model_info(tmp_path / "separate.pt", metrics)
    info_shared = model_info.model_info(tmp_path / "shared.pt", metrics)
    assert info_separate["parameters"] == sum(p.numel() for p in separate.parameters())
    assert info_separate["parameters"] - info_shared["parameters"] == len(vocab) * cfg.d_model  # one embedding matrix less
    assert info_separate["updates"] == 7 and info_separate["family"] == cfg.family
    assert info_separate["train_tokens_per_s"] is None  # nothing logged
    assert info_separate["precision"] is None  # a checkpoint that records no precision


def test_the_precision_a_checkpoint_records_is_passed_on(tmp_path):
    vocab = Vocabulary([f"t{i}" for i in range(50)])
    (tmp_path / "metrics.csv").write_text(METRICS_HEADER)
    write_checkpoint(tmp_path / "bf16.pt", vocab, precision="bf16")
    assert model_info.model_info(tmp_path / "bf16.pt", tmp_path / "metrics.csv")["precision"] == "bf16"


def test_the_devices_a_checkpoint_records_are_passed_on(tmp_path):
    vocab = Vocabulary([f"t{i}" for i in range(50)])
    (tmp_path / "metrics.csv").write_text(METRICS_HEADER)
    write_checkpoint(tmp_path / "run.pt", vocab, trainer={"devices": ["CPU A, 1 thread", "GPU B"]})
    assert model_info.model_info(tmp_path / "run.pt", tmp_path / "metrics.csv")["devices"] == ["CPU A, 1 thread", "GPU B"]
    write_checkpoint(tmp_path / "old.pt", vocab)  # written before devices were recorded
    assert model_info.model_info(tmp_path / "old.pt", tmp_path / "metrics.csv")["devices"] is None


def test_training_speed_is_the_median_of_logged_intervals(tmp_path):
    metrics = tmp_path / "metrics.csv"
    metrics.write_text(METRICS_HEADER + "100,1,5.0,4.9,0.001,900.5,1.0,,,,10\n200,1,4.0,3.9,0.001,2000,1.0,3.5,3.4,,20\n"
                       "300,1,3.0,2.9,0.001,1500,1.0,,,,30\n300,1,,,,,,3.1,3.0,,31\n")
    assert model_info.training_speed(metrics) == 1500
    metrics.write_text("")
    assert model_info.training_speed(metrics) is None
    metrics.write_text(METRICS_HEADER + "100,1,5.0,4.9,0.001,fast,1.0,,,,10\n")
    with pytest.raises(DataError, match=r"metrics.csv:2: tokens_per_s is not a number: 'fast'"):
        model_info.training_speed(metrics)
    metrics.write_text("update,loss\n1,2\n")
    with pytest.raises(DataError, match=r"metrics.csv:1: no tokens_per_s column"):
        model_info.training_speed(metrics)


def test_cli(tmp_path, capsys):
    vocab = Vocabulary(["a", "b", "c"])
    write_checkpoint(tmp_path / "best.pt", vocab)
    (tmp_path / "metrics.csv").write_text(METRICS_HEADER + "100,1,5.0,4.9,0.001,1234.5,1.0,,,,10\n")
    out = tmp_path / "info.json"
    assert model_info.main(["--checkpoint", str(tmp_path / "best.pt"), "--metrics", str(tmp_path / "metrics.csv"),
                            "--output", str(out)]) == 0
    assert json.loads(out.read_text())["train_tokens_per_s"] == 1234.5
    (tmp_path / "junk.pt").write_bytes(b"junk")
    assert model_info.main(["--checkpoint", str(tmp_path / "junk.pt"), "--metrics", str(tmp_path / "metrics.csv"),
                            "--output", str(tmp_path / "other.json")]) == 1
    assert "junk.pt: not a readable checkpoint" in capsys.readouterr().err
    assert not (tmp_path / "other.json").exists()
