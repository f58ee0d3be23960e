"""DDP on CPU (gloo, 2 processes) against single-process training.

Equivalence: rank r of R takes global batch ``k*R + r`` of step ``k`` and the gradient
is normalised by the target tokens of the whole step on all ranks, so R ranks with
``update_freq=1`` see the same batches and the same gradient as one process with
``update_freq=R`` (only the float summation order differs, hence a tolerance); the two
ranks apply the same all-reduced gradient and stay bitwise identical.
"""
from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from nmtmodels.checkpoint import load_checkpoint
from nmtmodels.data import ParallelDataset
from nmtmodels.tests.copy_task_fixtures import copy_task, tiny_model, train_config, write_lines
from nmtmodels.training.distributed import DistributedContext, init_from_env
from nmtmodels.training.trainer import Trainer
from nmtmodels.vocab import Vocabulary

SETTINGS = dict(max_tokens=30, max_updates=5, save_interval_updates=2, lr=2e-3, warmup_updates=2)


def _setup(root: str):
    vocab = Vocabulary.from_file(os.path.join(root, "vocab.txt"))
    train = ParallelDataset.from_files(os.path.join(root, "train.src"), os.path.join(root, "train.tgt"), vocab, vocab)
    valid = ParallelDataset.from_files(os.path.join(root, "valid.src"), os.path.join(root, "valid.tgt"), vocab, vocab)
    model, cfg = tiny_model(len(vocab), len(vocab), seed=0, dropout=0.0)
    return vocab, train, valid, model, cfg


def _worker(rank: int, world: int, port: int, root: str, runs=(("ddp", {}, False, "ddp"),)) -> None:
    """Trains each of ``runs`` = (out_dir, settings over SETTINGS, restart_on_change, name) in
    turn and saves rank r's final parameters as ``{name}.rank{r}.pt``."""
    # the variables torchrun sets
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(world))
    context = init_from_env("cpu")
    assert context == DistributedContext(rank=rank, world_size=world, local_rank=rank)
    try:
        for out_dir, settings, restart_on_change, name in runs:
            vocab, train, valid, model, cfg = _setup(root)
            trainer = Trainer(model, train_config(**{**SETTINGS, **settings}), train, valid, os.path.join(root, out_dir),
                              model_config=cfg.to_dict(), src_vocab=vocab, tgt_vocab=vocab, device="cpu",
                              dist=context, log=lambda m: None, restart_on_change=restart_on_change)
            trainer.train()
            torch.save(trainer.model.state_dict(), os.path.join(root, f"{name}.rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_corpus(root) -> None:
    src, tgt = copy_task(260, seed=11, max_len=7)
    write_lines(root / "train.src", src[:240])
    # variable target lengths make the per-rank token counts differ (tests the normalisation)
    write_lines(root / "train.tgt", [" ".join(t.split()[: 1 + i % 7]) for i, t in enumerate(tgt[:240])])
    write_lines(root / "valid.src", src[240:])
    write_lines(root / "valid.tgt", tgt[240:])
    Vocabulary.from_corpus([root / "train.src"]).save(root / "vocab.txt")


@pytest.mark.heavy
def test_two_gloo_ranks_equal_single_process_with_accumulation(tmp_path):
    _write_corpus(tmp_path)
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    rank0 = torch.load(tmp_path / "ddp.rank0.pt")
    rank1 = torch.load(tmp_path / "ddp.rank1.pt")
    assert all(torch.equal(rank0[k], rank1[k]) for k in rank0)

    vocab, train, valid, model, cfg = _setup(str(tmp_path))
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    threads = torch.get_num_threads()
    try:
        single = Trainer(model, train_config(**SETTINGS, update_freq=2), train, valid, tmp_path / "single",
                         model_config=cfg.to_dict(), src_vocab=vocab, tgt_vocab=vocab, device="cpu", log=lambda m: None)
        assert len(single.sampler) > 2 * SETTINGS["max_updates"]  # no epoch end (no dropped tail) in the run
        single.train()
    finally:
        torch.set_num_threads(threads)
    for key, value in single.model.state_dict().items():
        torch.testing.assert_close(rank0[key], value, rtol=1e-5, atol=1e-6)
    assert any(not torch.allclose(initial[k], rank0[k]) for k in initial)

    written = load_checkpoint(tmp_path / "ddp" / "checkpoint_last.pt")
    assert written["update"] == 5 and len(written["trainer"]["rng"]) == 2  # every rank's RNG state
    single_metrics = load_checkpoint(tmp_path / "single" / "checkpoint_last.pt")["metrics"]
    assert written["metrics"]["valid_loss"] == pytest.approx(single_metrics["valid_loss"], rel=1e-5)


@pytest.mark.heavy
def test_two_gloo_ranks_resume_exactly_and_start_over_together_when_the_settings_changed(tmp_path):
    """A two-rank run stopped at update 3 resumes to the same parameters as a straight run;
    rerun with another lr and restart_on_change, both ranks read the old checkpoint, rank 0
    deletes it, and both train from scratch: the result equals a run in an empty directory."""
    _write_corpus(tmp_path)
    first = (("run", {"max_updates": 3}, False, "stopped"), ("straight", {}, False, "straight"))
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path), first), nprocs=2, join=True)
    second = (("run", {}, False, "resumed"), ("run", {"lr": 1e-3}, True, "restarted"),
              ("fresh", {"lr": 1e-3}, False, "fresh"))
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path), second), nprocs=2, join=True)
    final = {name: torch.load(tmp_path / f"{name}.rank1.pt") for name in ("straight", "resumed", "restarted", "fresh")}
    for a, b in (("resumed", "straight"), ("restarted", "fresh")):
        assert all(torch.equal(final[a][k], final[b][k]) for k in final[b]), (a, b)
    assert load_checkpoint(tmp_path / "run" / "checkpoint_last.pt")["train_config"]["lr"] == 1e-3
