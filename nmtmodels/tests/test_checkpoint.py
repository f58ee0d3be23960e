from __future__ import annotations

import errno
import hashlib
import os
import pickle
import re
import shutil

import pytest
import torch

from nmtmodels import checkpoint as ckpt
from nmtmodels.checkpoint import (
    CheckpointError,
    CheckpointWriteError,
    average_checkpoints,
    copy_checkpoint,
    load_checkpoint,
    numbered_checkpoints,
    save_checkpoint,
)
from nmtmodels.files import DataError
from nmtmodels.tests.copy_task_fixtures import tiny_model


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
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(ckpt.torch, "save", broken)
    with pytest.raises(CheckpointWriteError, match=r"c.pt: cannot write checkpoint: disk full \(.* free in "):
        save_checkpoint(tmp_path / "c.pt", {"a": 2})
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]
    assert load_checkpoint(tmp_path / "c.pt")["a"] == 1  # the old file is intact


class FullDisk:
    """A file handle whose writes fail with ENOSPC once ``room`` bytes are written (what
    write(2) does on a full file system)."""

    def __init__(self, handle, room: int):
        self.handle, self.room = handle, room

    def write(self, data) -> int:
        if len(data) > self.room:
            self.handle.write(bytes(data[: self.room]))
            self.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.handle.write(data)

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()


def test_full_disk_while_saving_is_one_line_naming_the_file_and_free_space(tmp_path, monkeypatch):
    state = model_state(0)
    save_checkpoint(tmp_path / "c.pt", state)
    before = (tmp_path / "c.pt").read_bytes()
    monkeypatch.setattr(ckpt, "open", lambda path, mode="r": FullDisk(open(path, mode), 5000), raising=False)
    with pytest.raises(CheckpointWriteError) as caught:
        save_checkpoint(tmp_path / "c.pt", model_state(1))
    message = str(caught.value)
    free = shutil.disk_usage(tmp_path).free
    assert "\n" not in message and "inline_container" not in message
    assert message.startswith(f"{tmp_path / 'c.pt'}: cannot write checkpoint: [Errno {errno.ENOSPC}] No space left on device (")
    assert f"free in {tmp_path})" in message
    shown = re.search(r"\(([\d.]+) (B|KiB|MiB|GiB|TiB) free", message)
    scale = 1024 ** ["B", "KiB", "MiB", "GiB", "TiB"].index(shown.group(2))
    assert abs(float(shown.group(1)) * scale - free) <= 0.05 * scale + 2**26  # rounding; others write meanwhile
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"] and (tmp_path / "c.pt").read_bytes() == before


def test_copies_are_written_before_the_main_file(tmp_path, monkeypatch):
    save_checkpoint(tmp_path / "last.pt", {"a": 1}, copies=[tmp_path / "best.pt"])
    real_copy = ckpt._clone_or_copy

    def fail_for_best(source, target):
        if "best.pt" in str(target):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_copy(source, target)

    monkeypatch.setattr(ckpt, "_clone_or_copy", fail_for_best)
    with pytest.raises(CheckpointWriteError, match=r"best.pt: cannot write checkpoint: \[Errno 28\]"):
        save_checkpoint(tmp_path / "last.pt", {"a": 2}, copies=[tmp_path / "n.pt", tmp_path / "best.pt"])
    assert load_checkpoint(tmp_path / "last.pt")["a"] == 1  # last still matches best
    assert load_checkpoint(tmp_path / "best.pt")["a"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.pt", "last.pt", "n.pt"]


def test_copies_keep_their_bytes_when_the_main_file_is_saved_again(tmp_path):
    """A later save replaces the main file only: the best and numbered copies still hold what
    they held."""
    save_checkpoint(tmp_path / "last.pt", {"a": 1}, copies=[tmp_path / "best.pt", tmp_path / "n1.pt"])
    assert (tmp_path / "best.pt").read_bytes() == (tmp_path / "last.pt").read_bytes()
    save_checkpoint(tmp_path / "last.pt", {"a": 2}, copies=[tmp_path / "n2.pt"])
    assert [load_checkpoint(tmp_path / name)["a"] for name in ("last.pt", "n2.pt", "best.pt", "n1.pt")] == [2, 2, 1, 1]
    copy_checkpoint(tmp_path / "n2.pt", tmp_path / "best.pt")  # a new best replaces the old one's name
    assert load_checkpoint(tmp_path / "best.pt")["a"] == 2 and load_checkpoint(tmp_path / "n1.pt")["a"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.pt", "last.pt", "n1.pt", "n2.pt"]


def test_copies_are_files_of_their_own_so_damage_to_one_spares_the_others(tmp_path):
    """Issue 34: hard links made checkpoint_last/best/N.pt one file, so one truncation destroyed
    every copy.  Each copy is its own file (a reflink where the filesystem has them)."""
    names = ["last.pt", "best.pt", "n.pt", "copied.pt"]
    save_checkpoint(tmp_path / "last.pt", model_state(0), copies=[tmp_path / "best.pt", tmp_path / "n.pt"])
    copy_checkpoint(tmp_path / "best.pt", tmp_path / "copied.pt")
    stats = [os.stat(tmp_path / name) for name in names]
    assert len({stat.st_ino for stat in stats}) == 4 and all(stat.st_nlink == 1 for stat in stats)
    sha = {name: hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() for name in names}
    assert len(set(sha.values())) == 1
    for damaged in names:
        data = (tmp_path / damaged).read_bytes()
        os.truncate(tmp_path / damaged, 0)
        with pytest.raises(CheckpointError, match=r"not a readable checkpoint \(EOFError: \)"):
            load_checkpoint(tmp_path / damaged)
        for other in names:
            if other != damaged:
                assert hashlib.sha256((tmp_path / other).read_bytes()).hexdigest() == sha[other]
                assert ckpt.verify_digest(tmp_path / other) and load_checkpoint(tmp_path / other)["model_config"]
        (tmp_path / damaged).write_bytes(data)


def test_a_copy_tries_a_reflink_then_copy_file_range_then_plain_writes(tmp_path, monkeypatch):
    save_checkpoint(tmp_path / "a.pt", model_state(0))
    calls = []

    def no_reflink(fd, request, arg):
        calls.append(request)
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

    def no_copy_range(*args):
        calls.append("copy_file_range")
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))

    monkeypatch.setattr(ckpt.fcntl, "ioctl", no_reflink)
    monkeypatch.setattr(ckpt.os, "copy_file_range", no_copy_range, raising=False)
    copy_checkpoint(tmp_path / "a.pt", tmp_path / "b.pt")
    assert calls == [0x40049409, "copy_file_range"]  # FICLONE, then the kernel copy, then read/write
    assert (tmp_path / "b.pt").read_bytes() == (tmp_path / "a.pt").read_bytes()
    assert os.stat(tmp_path / "b.pt").st_ino != os.stat(tmp_path / "a.pt").st_ino

    def full_disk(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(ckpt.os, "copy_file_range", full_disk, raising=False)
    with pytest.raises(CheckpointWriteError, match=r"c.pt: cannot write checkpoint: \[Errno 28\] No space left"):
        copy_checkpoint(tmp_path / "a.pt", tmp_path / "c.pt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pt", "b.pt"]


def test_bytes_changed_in_place_are_refused(tmp_path):
    state = model_state(0)
    save_checkpoint(tmp_path / "c.pt", state)
    data = bytearray((tmp_path / "c.pt").read_bytes())
    # a byte inside the stored parameters: torch's zip reader does not notice (no CRC check)
    weight = state["model"]["encoder.layers.0.fc1.weight"] if "encoder.layers.0.fc1.weight" in state["model"] else \
        max(state["model"].values(), key=lambda t: t.numel())
    raw = weight.contiguous().view(-1).view(torch.uint8).numpy().tobytes()
    offset = bytes(data).find(raw[:64])
    assert offset > 0
    data[offset + 17] ^= 0x40
    (tmp_path / "bad.pt").write_bytes(bytes(data))
    unchecked = torch.load(tmp_path / "bad.pt", weights_only=True)  # plain torch.load still reads the file
    assert any(not torch.equal(unchecked["model"][k], v) for k, v in state["model"].items())
    with pytest.raises(CheckpointError, match=r"bad.pt: content does not match the checkpoint's sha256 digest"):
        load_checkpoint(tmp_path / "bad.pt")
    assert ckpt.verify_digest(tmp_path / "c.pt") is True


def test_checkpoints_without_a_digest_still_load(tmp_path):
    state = {"format": ckpt.FORMAT, "version": ckpt.VERSION, **model_state(0)}
    torch.save(state, tmp_path / "old.pt")  # how checkpoints were written before digests
    assert ckpt.verify_digest(tmp_path / "old.pt") is False
    loaded = load_checkpoint(tmp_path / "old.pt")
    assert all(torch.equal(loaded["model"][k], v) for k, v in state["model"].items())


def test_digest_is_sha256_of_the_file_up_to_its_comment(tmp_path):
    save_checkpoint(tmp_path / "c.pt", {"a": 1})
    data = (tmp_path / "c.pt").read_bytes()
    comment = data[-81:]
    assert comment.startswith(b"nmtmodels-sha256:") and data[-83:-81] == (81).to_bytes(2, "little")
    assert hashlib.sha256(data[:-83] + b"\0\0").hexdigest() == comment[17:].decode()


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


def test_a_pickle_of_other_objects_is_not_a_checkpoint_and_gets_no_unsafe_advice(tmp_path):
    import argparse

    torch.save({"model": argparse.Namespace(a=1)}, tmp_path / "foreign.pt")  # loadable only with weights_only=False
    with pytest.raises(CheckpointError) as caught:
        ckpt.load_checkpoint(tmp_path / "foreign.pt")
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'foreign.pt'}: not an nmtmodels checkpoint")
    assert "weights_only" not in message and "\n" not in message
    for junk in (b"hello\n", b"not a checkpoint"):  # torch: KeyError; UnpicklingError with its weights_only advice
        (tmp_path / "text.pt").write_bytes(junk)
        with pytest.raises(CheckpointError, match=r"text\.pt: not a readable checkpoint \(") as caught:
            ckpt.load_checkpoint(tmp_path / "text.pt")
        assert "weights_only" not in str(caught.value) and "\n" not in str(caught.value)
