from __future__ import annotations

import os
import pickle

import pytest
import torch

from nmtmodels import checkpoint as ckpt
from nmtmodels.checkpoint import CheckpointError, average_checkpoints, load_checkpoint, numbered_checkpoints, save_checkpoint
from nmtmodels.tests.helpers_e import tiny_model
from nmtmodels.textio import DataError


def model_state(seed: int) -> dict:
    model, cfg = tiny_model(12, 14, seed=seed)
    return {"model_config": cfg.to_dict(), "model": model.state_dict(), "vocab": {"src": ["x"], "tgt": ["y"]}}


def test_round_trip(tmp_path):
    state = model_state(0)
    state["trainer"] = {"rng": [torch.get_rng_state()], "python": (3, (1, 2), None), "kept": [{"update": 2, "metric": None}]}
    save_checkpoint(tmp_path / "c.pt", state)
    loaded = load_checkpoint(tmp_path / "c.pt")
    assert loaded["model_config"] == state["model_config"]
    assert loaded["trainer"]["python"] == (3, (1, 2), None)
    for key, value in state["model"].items():
        assert torch.equal(loaded["model"][key], value)


def test_failed_save_leaves_nothing_behind(tmp_path, monkeypatch):
    save_checkpoint(tmp_path / "c.pt", {"a": 1})

    def broken(obj, f):
        open(f, "wb").write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(ckpt.torch, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path / "c.pt", {"a": 2})
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]
    assert load_checkpoint(tmp_path / "c.pt")["a"] == 1  # the old file is intact


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(CheckpointError, match=r"missing.pt: checkpoint not found"):
        load_checkpoint(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"junk.pt: not a readable checkpoint"):
        load_checkpoint(tmp_path / "junk.pt")
    torch.save({"model": {}}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match=r"foreign.pt: not an nmtmodels checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")


def test_average_is_the_elementwise_mean(tmp_path):
    states = [model_state(seed) for seed in (1, 2, 3)]
    paths = []
    for i, state in enumerate(states):
        state["trainer"] = {"update": i}
        save_checkpoint(tmp_path / f"c{i}.pt", state)
        paths.append(tmp_path / f"c{i}.pt")
    averaged = average_checkpoints(paths)
    assert "trainer" not in averaged and averaged["averaged_from"] == [str(p) for p in paths]
    for key, value in averaged["model"].items():
        manual = sum(s["model"][key].double() for s in states) / 3
        assert value.dtype == states[0]["model"][key].dtype
        torch.testing.assert_close(value.double(), manual, rtol=1e-6, atol=1e-7)
    assert any(not torch.equal(states[0]["model"][k], states[1]["model"][k]) for k in states[0]["model"])


def test_average_refuses_different_models(tmp_path):
    a = model_state(1)
    b = model_state(2)
    b["model_config"] = {**b["model_config"], "dropout": 0.5}
    save_checkpoint(tmp_path / "a.pt", a)
    save_checkpoint(tmp_path / "b.pt", b)
    with pytest.raises(CheckpointError, match=r"b.pt: model_config differs"):
        average_checkpoints([tmp_path / "a.pt", tmp_path / "b.pt"])
    with pytest.raises(CheckpointError, match="no checkpoints"):
        average_checkpoints([])


def test_numbered_checkpoints_sort_numerically(tmp_path):
    for name in ("checkpoint_10.pt", "checkpoint_9.pt", "checkpoint_last.pt", "checkpoint_best.pt", "checkpoint_100.pt"):
        (tmp_path / name).write_bytes(b"")
    assert [u for u, _ in numbered_checkpoints(tmp_path)] == [9, 10, 100]


def test_outputs_follow_the_umask_and_data_errors_pickle(tmp_path):
    save_checkpoint(tmp_path / "c.pt", {"a": 1})
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(tmp_path / "c.pt").st_mode & 0o777 == 0o666 & ~mask
    error = pickle.loads(pickle.dumps(DataError("f.txt", "bad token", 3)))
    assert (str(error), error.path, error.line) == ("f.txt:3: bad token", "f.txt", 3)
