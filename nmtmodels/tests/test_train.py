from __future__ import annotations

import csv
import errno
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import signal
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from nmtmodels import checkpoint as ckpt_module
from nmtmodels import precision
from nmtmodels.checkpoint import (
    CheckpointError,
    CheckpointWriteError,
    holds_resume_state,
    load_checkpoint,
    numbered_checkpoints,
    save_checkpoint,
)
from nmtmodels.config import ConfigError, from_dict
from nmtmodels.data import ParallelDataset, Ragged
from nmtmodels.model_package.settings import PackageSettings
from nmtmodels.model_package.writer import write_package
from nmtmodels.registry import model_families
from nmtmodels.sampler import BucketBatchSampler
from nmtmodels.symbols import PAD_ID
from nmtmodels.tests.copy_task_fixtures import (
    copy_task_corpus,
    tiny_model,
    train_config,
)
from nmtmodels.text.preprocessing import LanguageSettings
from nmtmodels.training import state as state_module
from nmtmodels.training import trainer as train_module
from nmtmodels.training.config import TrainConfig
from nmtmodels.training.errors import OutputDirLocked, TrainingDiverged, check_loss
from nmtmodels.training.loss import _ProjectedLabelSmoothedCrossEntropy, label_smoothed_nll_loss
from nmtmodels.training.metrics import early_line, seconds_left
from nmtmodels.training.optim import InverseSqrtSchedule, build_optimizer
from nmtmodels.training.trainer import Trainer


@pytest.fixture(autouse=True)
def _restore_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return copy_task_corpus(tmp_path_factory.mktemp("corpus"), 200, 40)


def make_trainer(corpus, out_dir, *, model_seed=0, dropout=0.0, log=None, bleu_fn=None, train=None,
                 restart_on_change=False, on_divergence="fail", **cfg):
    vocab, train_data, valid = corpus
    model, model_cfg = tiny_model(len(vocab), len(vocab), seed=model_seed, dropout=dropout)
    return Trainer(model, train_config(**cfg), train or train_data, valid, out_dir, model_config=model_cfg.to_dict(),
                   src_vocab=vocab, tgt_vocab=vocab, bleu_fn=bleu_fn, log=log or (lambda msg: None),
                   restart_on_change=restart_on_change, device="cpu",  # these tests mean the CPU, also on a GPU host
                   on_divergence=on_divergence)


def test_the_trainer_chooses_its_device_with_resolve_device(corpus, tmp_path, monkeypatch):
    """The device a Trainer trains on is nmtmodels.devices.resolve_device's, as every command's:
    None asks for "auto", a name is checked there (a misspelt one is a ConfigError in one line,
    not torch's RuntimeError), and the model goes where it says."""
    vocab, train_data, _ = corpus
    asked = []

    def recording(name):
        asked.append(name)
        return torch.device("cpu")

    monkeypatch.setattr(train_module, "resolve_device", recording)
    for device, out in ((None, "auto"), ("cuda:7", "cuda:7")):
        model, model_cfg = tiny_model(len(vocab), len(vocab))
        trainer = Trainer(model, train_config(), train_data, None, tmp_path / out, model_config=model_cfg.to_dict(),
                          src_vocab=vocab, tgt_vocab=vocab, log=lambda msg: None, device=device)
        assert trainer.device == torch.device("cpu") and next(trainer.model.parameters()).device.type == "cpu"
    assert asked == ["auto", "cuda:7"]
    monkeypatch.undo()
    model, model_cfg = tiny_model(len(vocab), len(vocab))
    with pytest.raises(ConfigError, match=r"^device 'cdua': not a device name \(auto, cpu, cuda or cuda:N\)$"):
        Trainer(model, train_config(), train_data, None, tmp_path / "bad", model_config=model_cfg.to_dict(),
                src_vocab=vocab, tgt_vocab=vocab, log=lambda msg: None, device="cdua")


def params(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}


def assert_bitwise_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    unequal = [k for k in a if not torch.equal(a[k], b[k])]
    assert not unequal, f"parameters differ: {unequal[:5]}"


# ---------------------------------------------------------------------- loss and schedule
class FixedLogits(nn.Linear):
    """An output layer whose logits are its input (identity weight): hand-written logits."""

    def __init__(self, vocab: int) -> None:
        super().__init__(vocab, vocab, bias=False)
        with torch.no_grad():
            self.weight.copy_(torch.eye(vocab))


def test_label_smoothed_loss_matches_hand_computation():
    logits = torch.tensor([[[2.0, 0.0, 1.0, -1.0], [0.5, 0.5, 0.0, 3.0], [1.0, 1.0, 1.0, 1.0]]])
    target = torch.tensor([[2, 3, PAD_ID]])
    eps, V = 0.1, 4
    loss, nll = label_smoothed_nll_loss(logits, FixedLogits(V), target, eps)
    hand_loss = hand_nll = 0.0
    for row, t in zip(logits[0].tolist()[:2], (2, 3)):
        log_z = math.log(sum(math.exp(x) for x in row))
        logp = [x - log_z for x in row]
        hand_nll += -logp[t]
        # smoothed target distribution: 1 - eps + eps/V on the target, eps/V elsewhere
        hand_loss += -sum(((1 - eps) * (i == t) + eps / V) * lp for i, lp in enumerate(logp))
    assert nll.item() == pytest.approx(hand_nll, rel=1e-6)
    assert loss.item() == pytest.approx(hand_loss, rel=1e-6)
    reference = F.cross_entropy(logits.view(-1, V), target.view(-1), ignore_index=PAD_ID, label_smoothing=eps, reduction="sum")
    assert loss.item() == pytest.approx(reference.item(), rel=1e-6)
    plain, _ = label_smoothed_nll_loss(logits, FixedLogits(V), target, 0.0)
    assert plain.item() == pytest.approx(hand_nll, rel=1e-6)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_label_smoothed_loss_and_gradients_match_torch_cross_entropy(eps, bias, monkeypatch):
    # 3 x 5 positions over 11 classes, projected from d = 6; chunks of 2 rows (22 logits)
    # cover the chunk boundaries, including a last chunk of one row.
    monkeypatch.setitem(_ProjectedLabelSmoothedCrossEntropy.CHUNK_ELEMENTS, "cpu", 22)
    torch.manual_seed(0)
    states = torch.randn(3, 5, 6)
    layer = nn.Linear(6, 11, bias=bias)
    target = torch.randint(4, 11, (3, 5))
    target[0, 3:] = PAD_ID
    target[2, 1] = PAD_ID
    ours_in = states.clone().requires_grad_()
    loss, nll = label_smoothed_nll_loss(ours_in, layer, target, eps)
    (loss * 0.7).backward()
    ours_grads = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()
    torch_in = states.clone().requires_grad_()
    logits = layer(torch_in).view(-1, 11)
    reference = F.cross_entropy(logits, target.view(-1), ignore_index=PAD_ID, label_smoothing=eps, reduction="sum")
    (reference * 0.7).backward()
    torch.testing.assert_close(loss, reference)
    torch.testing.assert_close(nll, F.cross_entropy(logits, target.view(-1), ignore_index=PAD_ID, reduction="sum"))
    torch.testing.assert_close(ours_in.grad, torch_in.grad)
    for ours, theirs in zip(ours_grads, layer.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs.grad)
    assert not nll.requires_grad
    assert ours_in.grad[0, 3:].abs().sum() == 0  # padding gets no gradient


def test_label_smoothed_loss_without_gradients_matches_and_needs_no_backward():
    torch.manual_seed(0)
    layer, states, target = nn.Linear(6, 11), torch.randn(4, 6, requires_grad=True), torch.randint(4, 11, (4,))
    with torch.no_grad():
        loss, nll = label_smoothed_nll_loss(states, layer, target, 0.1)
        reference = F.cross_entropy(layer(states), target, label_smoothing=0.1, reduction="sum")
    assert not loss.requires_grad and not nll.requires_grad
    torch.testing.assert_close(loss, reference)


def test_label_smoothed_loss_of_bf16_states_keeps_each_gradient_in_its_parameter_dtype():
    torch.manual_seed(0)
    layer = nn.Linear(8, 7)
    states = torch.randn(2, 3, 8).to(torch.bfloat16).requires_grad_()
    target = torch.randint(4, 7, (2, 3))
    loss, _ = label_smoothed_nll_loss(states, layer, target, 0.1)
    assert loss.dtype == torch.float32
    loss.backward()
    assert states.grad.dtype == torch.bfloat16 and layer.weight.grad.dtype == torch.float32
    reference = F.cross_entropy(layer(states.detach().float()).view(-1, 7), target.view(-1), label_smoothing=0.1, reduction="sum")
    torch.testing.assert_close(loss, reference, rtol=2e-2, atol=2e-2)


def test_inverse_sqrt_schedule_values():
    peak, warmup = 1e-3, 4
    schedule = InverseSqrtSchedule(peak, warmup)
    for update in range(1, 20):
        assert schedule.lr(update) == pytest.approx(peak * min(update / warmup, math.sqrt(warmup / update)))
    warm = InverseSqrtSchedule(peak, warmup, init=1e-5)
    assert warm.lr(0) == pytest.approx(1e-5)
    assert warm.lr(2) == pytest.approx(1e-5 + (peak - 1e-5) * 2 / 4)
    assert warm.lr(16) == pytest.approx(peak * 0.5)


def test_each_update_uses_the_scheduled_rate(corpus, tmp_path):
    trainer = make_trainer(corpus, tmp_path, lr=2e-3, warmup_updates=3, warmup_init_lr=1e-4, max_updates=6)
    used = []
    trainer.optimizer.register_step_pre_hook(lambda opt, args, kwargs: used.append(opt.param_groups[0]["lr"]))
    trainer.train()
    expected = [InverseSqrtSchedule(2e-3, 3, 1e-4).lr(u) for u in range(1, 7)]
    assert used == pytest.approx(expected)


def test_adam_uses_the_transformer_betas_and_eps_by_default(corpus, tmp_path):
    """Vaswani et al. 2017, section 5.3: beta1 0.9, beta2 0.98, epsilon 1e-9."""
    group = make_trainer(corpus, tmp_path).optimizer.param_groups[0]
    assert tuple(group["betas"]) == (0.9, 0.98) and group["eps"] == 1e-9


def test_clip_norm_rescales_the_gradient_to_that_norm(corpus, tmp_path):
    """The optimizer sees g * c / ||g|| when ||g|| > c, else g itself (same model, same first batch)."""
    def first_gradients(clip_norm: float) -> list[torch.Tensor]:
        trainer = make_trainer(corpus, tmp_path / str(clip_norm), clip_norm=clip_norm, max_updates=1)
        seen: list[torch.Tensor] = []
        trainer.optimizer.register_step_pre_hook(
            lambda opt, args, kwargs: seen.extend(p.grad.clone() for g in opt.param_groups for p in g["params"]))
        trainer.train()
        return seen

    raw = first_gradients(0.0)
    raw_norm = math.sqrt(sum(float(g.double().pow(2).sum()) for g in raw))
    clip = raw_norm / 4
    for clipped, unclipped in zip(first_gradients(clip), raw):
        torch.testing.assert_close(clipped, unclipped * (clip / raw_norm), rtol=1e-4, atol=1e-9)
    for loose, unclipped in zip(first_gradients(raw_norm * 4), raw):
        torch.testing.assert_close(loose, unclipped)


# ---------------------------------------------------------------------- resume
def test_resume_after_stop_is_bit_exact(corpus, tmp_path):
    settings = {"max_updates": 14, "update_freq": 2, "save_interval_updates": 4, "dropout": 0.1, "log_interval": 1}
    straight = make_trainer(corpus, tmp_path / "straight", **settings)
    assert straight.train().update == 14
    assert straight.sampler.epoch > 1  # the run crossed an epoch boundary

    first = make_trainer(corpus, tmp_path / "resumed", **{**settings, "max_updates": 5})
    assert first.train().update == 5
    second = make_trainer(corpus, tmp_path / "resumed", model_seed=99, **settings)  # different init: overwritten
    result = second.train()
    assert result.status == "finished" and result.update == 14
    assert_bitwise_equal(params(straight), params(second))
    rows = list(csv.DictReader((tmp_path / "resumed" / "metrics.csv").read_text().splitlines()))
    train_updates = [int(r["update"]) for r in rows if r["loss"]]
    assert train_updates == list(range(1, 15))
    # target tokens of every update so far: the same after the resume, and what the batches of a
    # fresh sampler with the run's seed hold (the first 14 updates of update_freq batches each, an
    # epoch's last update taking what is left of it)
    straight_rows = list(csv.DictReader((tmp_path / "straight" / "metrics.csv").read_text().splitlines()))
    def train_tokens(table):
        return [(r["update"], r["target_tokens"]) for r in table if r["loss"]]

    assert train_tokens(rows) == train_tokens(straight_rows)
    _, train_data, _ = corpus
    fresh = BucketBatchSampler(train_data, straight.cfg.max_tokens, seed=straight.cfg.seed,
                               max_sentences=straight.cfg.max_sentences)
    epochs = [list(iter(fresh)) for _ in range(20)]
    updates = [epoch[k:k + 2] for epoch in epochs for k in range(0, len(epoch), 2)][:14]
    lengths = train_data.tgt.lengths()
    expected = sum(int(lengths[i]) + 1 for group in updates for batch in group for i in batch)  # + EOS
    assert int(rows[-1]["target_tokens"]) == straight.seen_target_tokens() == expected


def test_checkpoints_record_the_devices_a_run_trained_on(corpus, tmp_path, monkeypatch):
    """The CPU's model and torch's threads (as /proc/cpuinfo and torch say), and a new entry only
    where a resumed run goes on elsewhere."""
    from nmtmodels import devices
    from nmtmodels.training import trainer as trainer_module

    model_name = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo", encoding="utf-8")
                      if line.startswith("model name")) if os.path.exists("/proc/cpuinfo") else devices.cpu_model()
    assert make_trainer(corpus, tmp_path / "run", max_updates=2).train().update == 2
    here = f"CPU {model_name}, {torch.get_num_threads()} thread{'' if torch.get_num_threads() == 1 else 's'}"

    def recorded():
        return load_checkpoint(tmp_path / "run" / "checkpoint_last.pt")["trainer"]["devices"]

    assert recorded() == [here]
    assert make_trainer(corpus, tmp_path / "run", max_updates=3).train().update == 3
    assert recorded() == [here]  # resumed on the same device: no new entry
    monkeypatch.setattr(trainer_module, "device_name", lambda device, processes: f"{processes} x GPU elsewhere")
    assert make_trainer(corpus, tmp_path / "run", max_updates=4).train().update == 4
    assert recorded() == [here, "1 x GPU elsewhere"]


def test_resume_restores_outputs_a_scheduler_deleted(corpus, tmp_path):
    """Snakemake deletes a failed job's declared outputs (checkpoint_best.pt, metrics.csv);
    the resumed run must end with both, the best being the best validated model."""
    settings = {"max_updates": 12, "save_interval_updates": 3, "log_interval": 1}
    straight = make_trainer(corpus, tmp_path / "straight", **settings)
    straight.train()
    first = make_trainer(corpus, tmp_path / "resumed", **{**settings, "max_updates": 6})
    first.train()
    (tmp_path / "resumed" / "checkpoint_best.pt").unlink()
    (tmp_path / "resumed" / "metrics.csv").unlink()
    make_trainer(corpus, tmp_path / "resumed", **settings).train()
    rows = {name: list(csv.DictReader((tmp_path / name / "metrics.csv").read_text().splitlines()))
            for name in ("straight", "resumed")}
    columns = ("update", "epoch", "loss", "nll", "lr", "valid_loss")
    assert [[r[c] for c in columns] for r in rows["resumed"]] == [[r[c] for c in columns] for r in rows["straight"]]
    best = {name: load_checkpoint(tmp_path / name / "checkpoint_best.pt") for name in ("straight", "resumed")}
    assert best["resumed"]["update"] == best["straight"]["update"]
    assert_bitwise_equal(best["straight"]["model"], best["resumed"]["model"])


def test_finished_run_restores_a_deleted_best_checkpoint_from_the_kept_ones(corpus, tmp_path):
    settings = {"max_updates": 6, "save_interval_updates": 3, "log_interval": 1}
    make_trainer(corpus, tmp_path, **settings).train()
    expected = load_checkpoint(tmp_path / "checkpoint_best.pt")
    (tmp_path / "checkpoint_best.pt").unlink()
    result = make_trainer(corpus, tmp_path, **settings).train()  # nothing left to train
    assert result.update == 6
    restored = load_checkpoint(tmp_path / "checkpoint_best.pt")
    assert restored["update"] == expected["update"]
    assert_bitwise_equal(expected["model"], restored["model"])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1])
def test_signal_saves_and_resume_is_bit_exact(corpus, tmp_path, signum):
    settings = {"max_updates": 10, "dropout": 0.1, "log_interval": 1}
    straight = make_trainer(corpus, tmp_path / "straight", **settings)
    straight.train()

    def kill_at_update_4(message):
        if message.startswith("update 4/10 |"):
            signal.raise_signal(signum)  # a real signal through the installed handler

    handler_before = signal.getsignal(signum)
    killed = make_trainer(corpus, tmp_path / "killed", log=kill_at_update_4, **settings)
    result = killed.train()
    assert result.status == "interrupted" and result.update == 4
    assert signal.getsignal(signum) is handler_before  # handlers restored
    assert load_checkpoint(tmp_path / "killed" / "checkpoint_last.pt")["update"] == 4
    resumed = make_trainer(corpus, tmp_path / "killed", model_seed=5, **settings)
    assert resumed.train().update == 10
    assert_bitwise_equal(params(straight), params(resumed))


def test_resume_refuses_a_different_model(corpus, tmp_path):
    make_trainer(corpus, tmp_path, max_updates=1).train()
    vocab, train, valid = corpus
    model, cfg = tiny_model(len(vocab), len(vocab), dropout=0.0, ffn_dim=32)
    trainer = Trainer(model, train_config(max_updates=2), train, valid, tmp_path, model_config=cfg.to_dict(),
                      src_vocab=vocab, tgt_vocab=vocab, log=lambda m: None, device="cpu")
    with pytest.raises(ConfigError, match=r"belongs to a different run: model.ffn_dim was 64 and is 32 now"):
        trainer.train()


def test_resume_refuses_other_training_settings_or_data_but_not_a_longer_budget(corpus, tmp_path):
    make_trainer(corpus, tmp_path, max_updates=3, save_interval_updates=2).train()
    with pytest.raises(ConfigError, match=r"train.lr was 0.001 and is 0.002 now.*--restart-on-change"):
        make_trainer(corpus, tmp_path, max_updates=3, lr=2e-3).train()
    _vocab, train, _ = corpus
    same_lengths_other_words = ParallelDataset(train.src, Ragged(train.tgt.data[::-1].copy(), train.tgt.offsets))
    with pytest.raises(ConfigError, match=r"the training data differs"):
        make_trainer(corpus, tmp_path, max_updates=3, train=same_lengths_other_words).train()
    assert load_checkpoint(tmp_path / "checkpoint_last.pt")["update"] == 3  # refusing touched nothing
    assert make_trainer(corpus, tmp_path, max_updates=5, patience=0, log_interval=7).train().update == 5


def test_a_budget_below_the_checkpoint_s_updates_trains_to_it_or_is_refused(corpus, tmp_path):
    """A finished run of 6 updates, then ``max_updates: 4``.  Before: the trainer resumed from
    checkpoint_last.pt, stopped at once ("finished: max_updates") with 6 updates, and the
    summary paired budget 4 with 6 updates.  Now refused in one line without
    ``restart_on_change``; with it (the workflow's rules) the run starts over and is the run of
    4 updates from an empty directory."""
    make_trainer(corpus, tmp_path / "rerun", max_updates=6, save_interval_updates=2).train()
    with pytest.raises(ConfigError, match=r"belongs to a different run: train.max_updates is 4 now, fewer than the 6 "
                                          r"updates it has made\..*--restart-on-change"):
        make_trainer(corpus, tmp_path / "rerun", max_updates=4).train()
    assert load_checkpoint(tmp_path / "rerun" / "checkpoint_last.pt")["update"] == 6  # refusing touched nothing
    restarted = make_trainer(corpus, tmp_path / "rerun", max_updates=4, restart_on_change=True)
    assert restarted.train().update == 4
    fresh = make_trainer(corpus, tmp_path / "fresh", max_updates=4)
    fresh.train()
    assert_bitwise_equal(params(fresh), params(restarted))
    assert load_checkpoint(tmp_path / "rerun" / "checkpoint_last.pt")["update"] == 4
    assert make_trainer(corpus, tmp_path / "rerun", max_updates=4).train().update == 4  # the same budget resumes


def test_restart_on_change_starts_over_as_in_an_empty_directory(corpus, tmp_path):
    """A workflow rerunning a job whose settings changed must get the new run's model, not
    the old checkpoint; the old run's numbered checkpoints and metrics rows are gone."""
    make_trainer(corpus, tmp_path / "rerun", max_updates=6, save_interval_updates=2, log_interval=1).train()
    messages = []
    restarted = make_trainer(corpus, tmp_path / "rerun", max_updates=4, lr=2e-3, log_interval=1,
                             log=messages.append, restart_on_change=True)
    assert restarted.train().update == 4
    fresh = make_trainer(corpus, tmp_path / "fresh", max_updates=4, lr=2e-3, log_interval=1)
    fresh.train()
    assert_bitwise_equal(params(fresh), params(restarted))
    assert any(m.startswith("starting over:") and "train.lr was 0.001" in m for m in messages)
    assert [u for u, _ in numbered_checkpoints(tmp_path / "rerun")] == [u for u, _ in numbered_checkpoints(tmp_path / "fresh")]
    rows = [int(r["update"]) for r in csv.DictReader((tmp_path / "rerun" / "metrics.csv").read_text().splitlines())
            if r["loss"]]
    assert rows == [1, 2, 3, 4]


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_truncating_one_checkpoint_leaves_every_other_copy_intact(corpus, tmp_path):
    """Issue 34: checkpoint_last.pt, checkpoint_best.pt, the newest checkpoint_N.pt and the model
    package's checkpoint.pt were hard links of one file, so `truncate -s 0` on one emptied all."""
    run = tmp_path / "train"
    make_trainer(corpus, run, max_updates=6, save_interval_updates=3, log_interval=1).train()
    settings = PackageSettings(source=LanguageSettings("en", "whitespace"), target=LanguageSettings("en", "whitespace"),
                               unicode_form="NFKC", subwords="char")
    package = write_package(tmp_path / "model", run / "checkpoint_best.pt", settings)
    files = [run / "checkpoint_last.pt", run / "checkpoint_best.pt", run / "checkpoint_6.pt", run / "checkpoint_3.pt",
             package / "checkpoint.pt"]
    assert load_checkpoint(run / "checkpoint_best.pt")["update"] == 6  # so all but checkpoint_3.pt hold one state
    digests = {path: sha256(path) for path in files}
    for damaged in files:
        data = damaged.read_bytes()
        os.truncate(damaged, 0)
        with pytest.raises(CheckpointError, match=r"not a readable checkpoint \(EOFError: \)"):
            load_checkpoint(damaged)
        for other in files:
            if other != damaged:
                assert sha256(other) == digests[other], f"truncating {damaged.name} changed {other}"
                assert load_checkpoint(other)["update"] in (3, 6)
        damaged.write_bytes(data)


def test_resume_from_an_unreadable_last_checkpoint_falls_back_to_the_newest_readable_numbered_one(corpus, tmp_path):
    settings = {"save_interval_updates": 2, "log_interval": 1, "dropout": 0.1}
    straight = make_trainer(corpus, tmp_path / "straight", max_updates=10, **settings)
    straight.train()
    run = tmp_path / "run"
    make_trainer(corpus, run, max_updates=6, **settings).train()
    last = run / "checkpoint_last.pt"
    os.truncate(last, 0)
    os.truncate(run / "checkpoint_6.pt", 100)  # the newest numbered one is damaged too
    messages = []
    resumed = make_trainer(corpus, run, max_updates=10, model_seed=3, log=messages.append, **settings)
    assert resumed.train().update == 10
    assert_bitwise_equal(params(straight), params(resumed))  # as if never interrupted
    warnings = [m for m in messages if m.startswith("warning:")]
    assert warnings == [f"warning: {last}: not a readable checkpoint (EOFError: ); resuming from {run / 'checkpoint_4.pt'}, "
                        "the newest readable numbered checkpoint (unreadable too: checkpoint_6.pt)"]
    assert f"resumed from {run / 'checkpoint_4.pt'} at update 4" in "\n".join(messages)
    assert [load_checkpoint(run / f"checkpoint_{u}.pt")["update"] for u in (6, 8, 10)] == [6, 8, 10]  # rewritten
    # a finished run whose last checkpoint is damaged: the rerun (snakemake -f) repairs it from the newest
    # numbered checkpoint with resume state (checkpoint_10.pt, the final update's, kept the model only: issue
    # 70) and trains the updates after it again, to the same model and optimizer state
    finished = load_checkpoint(last)
    os.truncate(last, 0)
    messages.clear()
    make_trainer(corpus, run, max_updates=10, log=messages.append, **settings).train()
    assert messages[0] == (f"warning: {last}: not a readable checkpoint (EOFError: ); resuming from "
                           f"{run / 'checkpoint_8.pt'}, the newest readable numbered checkpoint "
                           "(without resume state: checkpoint_10.pt)")
    repaired = load_checkpoint(last)
    assert repaired["update"] == 10 and holds_resume_state(repaired)
    assert_bitwise_equal(finished["model"], repaired["model"])
    moments = [{f"{i}.{k}": v for i, s in p["optimizer"]["state"].items() for k, v in s.items()}
               for p in (finished["trainer"], repaired["trainer"])]
    assert_bitwise_equal(*moments)
    # a damaged best checkpoint: the rerun replaces it with the model of the best numbered one
    best = run / "checkpoint_best.pt"
    os.truncate(best, 0)
    messages.clear()
    make_trainer(corpus, run, max_updates=10, log=messages.append, **settings).train()
    source = run / f"checkpoint_{load_checkpoint(best)['update']}.pt"
    assert [m for m in messages if m.startswith("warning:")] == [
        f"warning: {best}: not a readable checkpoint (EOFError: ); replaced it with the model of {source}"]
    assert_bitwise_equal(load_checkpoint(best)["model"], load_checkpoint(source)["model"])
    assert not holds_resume_state(load_checkpoint(best))


def test_resume_without_any_readable_checkpoint_says_how_to_start_over(corpus, tmp_path):
    make_trainer(corpus, tmp_path, max_updates=4, save_interval_updates=2).train()
    for path in [tmp_path / "checkpoint_last.pt", *(path for _, path in numbered_checkpoints(tmp_path))]:
        os.truncate(path, 0)
    for restart in (False, True):
        with pytest.raises(CheckpointError) as caught:
            make_trainer(corpus, tmp_path, max_updates=4, save_interval_updates=2, restart_on_change=restart).train()
        assert str(caught.value) == (
            f"{tmp_path / 'checkpoint_last.pt'}: not a readable checkpoint (EOFError: ); no readable numbered checkpoint "
            f"(checkpoint_N.pt) in {tmp_path} to resume from instead; to start over, delete {tmp_path / 'checkpoint_last.pt'} "
            f"and {tmp_path / 'checkpoint_[0-9]*.pt'}")
    for path in [tmp_path / "checkpoint_last.pt", *(path for _, path in numbered_checkpoints(tmp_path))]:
        path.unlink()  # what the message says
    assert make_trainer(corpus, tmp_path, max_updates=4, save_interval_updates=2).train().update == 4


def test_no_two_checkpoints_hold_the_same_bytes_and_only_resume_files_hold_the_resume_state(corpus, tmp_path):
    """Issue 70: checkpoint_best.pt was a byte copy of checkpoint_last.pt (or of a numbered one), Adam's
    moments included, and a numbered save at the final update left checkpoint_N.pt a second copy: three
    files of one update's training state.  Now the best holds the model without the resume state, the
    final numbered one too, and a longer budget still resumes from checkpoint_last.pt as if never stopped."""
    settings = {"save_interval_updates": 3, "log_interval": 1, "dropout": 0.1}
    trainer = make_trainer(corpus, tmp_path / "run", max_updates=6, **settings)
    trainer.train()
    run = tmp_path / "run"
    names = ["checkpoint_last.pt", "checkpoint_best.pt", "checkpoint_3.pt", "checkpoint_6.pt"]
    assert sorted(p.name for p in run.glob("*.pt")) == sorted(names)
    states = {name: load_checkpoint(run / name) for name in names}
    assert [states[name]["update"] for name in names] == [6, 6, 3, 6]  # three files of update 6
    assert len({sha256(run / name) for name in names}) == 4
    assert [name for name in names if holds_resume_state(states[name])] == ["checkpoint_last.pt", "checkpoint_3.pt"]
    for name in ("checkpoint_best.pt", "checkpoint_6.pt"):
        assert_bitwise_equal(states[name]["model"], states["checkpoint_last.pt"]["model"])
        # what the workflow's model_info and a reader of the run's facts take from it stays
        assert states[name]["trainer"]["devices"] == states["checkpoint_last.pt"]["trainer"]["devices"]
        assert states[name]["trainer"]["metrics_history"] == states["checkpoint_last.pt"]["trainer"]["metrics_history"]
    # Adam keeps two fp32 moments per parameter: 8 bytes each that the best no longer stores
    parameters = sum(t.numel() for t in states["checkpoint_last.pt"]["model"].values() if t.is_floating_point())
    saved = (run / "checkpoint_last.pt").stat().st_size - (run / "checkpoint_best.pt").stat().st_size
    assert saved >= 8 * parameters and (run / "checkpoint_best.pt").stat().st_size >= 4 * parameters
    straight = make_trainer(corpus, tmp_path / "straight", max_updates=9, **settings)
    straight.train()
    longer = make_trainer(corpus, run, max_updates=9, **settings)
    assert longer.train().update == 9
    assert_bitwise_equal(params(straight), params(longer))


def test_a_checkpoint_without_resume_state_is_never_resumed_from(corpus, tmp_path):
    """checkpoint_best.pt copied over checkpoint_last.pt by mistake: the run resumes from the newest
    numbered checkpoint that holds the resume state, with a warning, to the model of a run never
    stopped; with none, one line saying how to start over."""
    settings = {"save_interval_updates": 2, "log_interval": 1, "dropout": 0.1}
    straight = make_trainer(corpus, tmp_path / "straight", max_updates=6, **settings)
    straight.train()
    run, messages = tmp_path / "run", []
    make_trainer(corpus, run, max_updates=4, **settings).train()
    last = run / "checkpoint_last.pt"
    shutil.copyfile(run / "checkpoint_best.pt", last)
    resumed = make_trainer(corpus, run, max_updates=6, log=messages.append, **settings)
    assert resumed.train().update == 6
    assert_bitwise_equal(params(straight), params(resumed))
    problem = (f"{last}: holds no resume state (optimizer, scheduler, RNG and batch position), like checkpoint_best.pt, "
               "which is for decoding")
    assert [m for m in messages if m.startswith("warning:")] == [
        f"warning: {problem}; resuming from {run / 'checkpoint_2.pt'}, the newest readable numbered checkpoint "
        "(without resume state: checkpoint_4.pt)"]
    for _, path in numbered_checkpoints(run):
        path.unlink()
    shutil.copyfile(run / "checkpoint_best.pt", last)
    with pytest.raises(CheckpointError) as caught:
        make_trainer(corpus, run, max_updates=8, **settings).train()
    assert str(caught.value) == (f"{problem}; no readable numbered checkpoint (checkpoint_N.pt) in {run} to resume from "
                                 f"instead; to start over, delete {last} and {run / 'checkpoint_[0-9]*.pt'}")


# ---------------------------------------------------------------------- checkpoints, validation, stopping
def test_keep_last_keep_best_and_best_checkpoint(corpus, tmp_path):
    bleu = iter([10.0, 30.0, 20.0, 25.0, 5.0, 28.0])
    trainer = make_trainer(corpus, tmp_path, bleu_fn=lambda model: next(bleu), max_tokens=24, valid_bleu=True,
                           best_metric="bleu", save_interval_updates=2, keep_last=2, keep_best=2, max_updates=12)
    assert len(trainer.sampler) > 12  # no epoch end inside the run
    result = trainer.train()
    assert result.best == 30.0
    assert [u for u, _ in numbered_checkpoints(tmp_path)] == [4, 10, 12]  # newest 2 (10, 12) + best 2 (4, 12)
    best = load_checkpoint(tmp_path / "checkpoint_best.pt")
    assert best["update"] == 4 and best["metrics"]["valid_bleu"] == 30.0
    assert load_checkpoint(tmp_path / "checkpoint_last.pt")["update"] == 12


def test_keep_last_before_it_is_reached(corpus, tmp_path):
    make_trainer(corpus, tmp_path, save_interval_updates=2, keep_last=3, keep_best=0, max_tokens=24, max_updates=4).train()
    assert [u for u, _ in numbered_checkpoints(tmp_path)] == [2, 4]


def test_a_numbered_checkpoint_that_would_be_pruned_at_once_is_never_written(corpus, tmp_path, monkeypatch):
    written = []

    def recording(path, state, copies=()):
        written.extend(Path(c).name for c in [path, *copies] if Path(c).name != "checkpoint_last.pt")
        save_checkpoint(path, state, copies=copies)

    monkeypatch.setattr(train_module, "save_checkpoint", recording)
    monkeypatch.setattr(state_module, "save_checkpoint", recording)  # the best: save_best_checkpoint
    bleu = iter([10.0, 30.0, 20.0])
    make_trainer(corpus, tmp_path, bleu_fn=lambda model: next(bleu), max_tokens=24, valid_bleu=True, best_metric="bleu",
                 save_interval_updates=2, keep_last=0, keep_best=1, max_updates=6).train()
    # keep_best=1 keeps update 2 until update 4 beats it; update 6 (20 < 30) would be pruned at once
    assert written == ["checkpoint_best.pt", "checkpoint_2.pt", "checkpoint_best.pt", "checkpoint_4.pt"]
    assert [u for u, _ in numbered_checkpoints(tmp_path)] == [4]
    written.clear()
    make_trainer(corpus, tmp_path / "none", save_interval_updates=2, keep_last=0, keep_best=0, max_tokens=24,
                 max_updates=4).train()
    assert not [name for name in written if name != "checkpoint_best.pt"]
    assert (tmp_path / "none" / "checkpoint_best.pt").is_file() and not numbered_checkpoints(tmp_path / "none")


def test_early_stopping_with_patience(corpus, tmp_path):
    bleu = iter([10.0, 30.0, 20.0, 25.0, 5.0, 28.0])
    trainer = make_trainer(corpus, tmp_path, bleu_fn=lambda model: next(bleu), max_tokens=24, valid_bleu=True,
                           best_metric="bleu", save_interval_updates=2, patience=3, max_updates=12)
    result = trainer.train()
    assert (result.reason, result.update) == ("early_stop", 10)
    # TensorBoard (on by default) has the dev BLEU beside the dev loss, at each validation
    scalars = tensorboard_scalars(tmp_path / "tensorboard")
    assert scalars["valid_bleu"] == [(2, 10.0), (4, 30.0), (6, 20.0), (8, 25.0), (10, 5.0)]  # exact in float32
    assert [step for step, _ in scalars["valid_loss"]] == [2, 4, 6, 8, 10]


def tensorboard_scalars(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Tag -> (step, value) of every scalar in the TensorBoard event files of ``log_dir``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(log_dir))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_best_by_loss_and_metrics_log(corpus, tmp_path):
    trainer = make_trainer(corpus, tmp_path, max_updates=12, save_interval_updates=3, log_interval=2)  # TensorBoard: default
    trainer.train()
    rows = list(csv.DictReader((tmp_path / "metrics.csv").read_text().splitlines()))
    assert list(rows[0]) == ["update", "epoch", "loss", "nll", "lr", "tokens_per_s", "grad_norm",
                             "valid_loss", "valid_nll", "valid_bleu", "elapsed", "target_tokens"]
    assert [int(r["update"]) for r in rows if r["loss"]] == [2, 4, 6, 8, 10, 12]
    assert all(float(r["tokens_per_s"]) > 0 and float(r["grad_norm"]) > 0 for r in rows if r["loss"])
    valid = {int(r["update"]): float(r["valid_loss"]) for r in rows if r["valid_loss"]}
    assert {3, 6, 9, 12} <= set(valid)
    best = load_checkpoint(tmp_path / "checkpoint_best.pt")
    assert best["metrics"]["valid_loss"] == pytest.approx(min(valid.values()), rel=1e-5)
    scalars = tensorboard_scalars(tmp_path / "tensorboard")
    assert [step for step, _ in scalars["loss"]] == [2, 4, 6, 8, 10, 12]
    assert dict(scalars["valid_loss"]) == pytest.approx(valid, rel=1e-5)  # metrics.csv: 6 digits
    assert "valid_bleu" not in scalars  # no BLEU measured


TRAIN_LINE = re.compile(r"update (\d+)/(\d+) \| epoch \d+ \| loss \S+ \| nll \S+ \| lr \S+ \| tok/s \S+ \| gnorm \S+ "
                        r"\| elapsed (\d+)s \| left (\d+)s")


def test_training_lines_give_updates_of_max_and_time_left_from_the_first_update(corpus, tmp_path, monkeypatch):
    logs: list[str] = []
    trainer = make_trainer(corpus, tmp_path, max_updates=25, log_interval=20, save_interval_updates=100, log=logs.append)
    trainer.train()
    lines = [TRAIN_LINE.fullmatch(line) for line in logs if line.startswith("update ")]
    assert all(lines), logs
    assert [(int(m[1]), int(m[2])) for m in lines] == [(1, 25), (10, 25), (20, 25)]  # early lines, then the interval
    for match in lines:  # the run's own rate: seconds per update so far times the updates left
        update, elapsed, left = int(match[1]), int(match[3]), int(match[4])
        assert left <= (elapsed + 0.5) * (25 - update) / update + 0.5  # both rounded to seconds
    rows = list(csv.DictReader((tmp_path / "metrics.csv").read_text().splitlines()))
    assert [int(r["update"]) for r in rows if r["loss"]] == [20]  # the early lines are no rows
    # the row at 20 covers updates 1-20, as without early lines
    monkeypatch.setattr(train_module, "early_line", lambda done, interval: False)
    plain = make_trainer(corpus, tmp_path / "plain", max_updates=25, log_interval=20, save_interval_updates=100)
    plain.train()
    plain_rows = list(csv.DictReader((tmp_path / "plain" / "metrics.csv").read_text().splitlines()))
    assert [r["loss"] for r in plain_rows if r["loss"]] == [r["loss"] for r in rows if r["loss"]]


def test_training_lines_without_max_updates_give_the_time_left_of_max_minutes(corpus, tmp_path):
    logs: list[str] = []
    make_trainer(corpus, tmp_path, max_updates=0, max_epochs=1, max_minutes=60, log_interval=2, log=logs.append).train()
    lines = [line for line in logs if line.startswith("update ")]
    assert lines and all(re.fullmatch(r"update \d+ \| .* \| elapsed (\d+)s \| left (\d+)s", line) for line in lines)
    assert all(3600 - 1 - int(line.split("elapsed ")[1].split("s")[0]) <= int(line.rsplit("left ", 1)[1][:-1]) <= 3600
               for line in lines)


@pytest.mark.parametrize(("update", "elapsed", "max_updates", "max_minutes", "left"), [
    (100, 50.0, 600, 0, 250.0),  # 0.5 s per update, 500 updates left
    (100, 50.0, 600, 2, 70.0),  # max_minutes binds: 120 s in all
    (100, 50.0, 600, 10, 250.0),  # max_updates binds
    (0, 5.0, 600, 0, None),  # no rate yet
    (0, 5.0, 600, 1, 55.0),
    (700, 50.0, 600, 0, 0.0),  # never negative
    (100, 200.0, 0, 3, 0.0),
    (100, 50.0, 0, 0, None),  # max_epochs alone: no estimate
])
def test_seconds_left(update, elapsed, max_updates, max_minutes, left):
    assert seconds_left(update, elapsed, max_updates, max_minutes) == left


def test_early_lines_come_at_powers_of_ten_below_the_interval():
    assert [done for done in range(1, 2000) if early_line(done, 1000)] == [1, 10, 100]
    assert not any(early_line(done, 1) for done in range(0, 50))


def test_max_minutes_stops_cleanly_with_a_checkpoint(corpus, tmp_path):
    trainer = make_trainer(corpus, tmp_path, max_minutes=1e-9, max_updates=0, max_epochs=0)
    result = trainer.train()
    assert result.status == "finished" and result.reason == "max_minutes"
    assert load_checkpoint(tmp_path / "checkpoint_last.pt")["update"] == result.update


def logged_losses(out_dir: Path) -> list[float]:
    return [float(row["loss"]) for row in csv.DictReader((out_dir / "metrics.csv").read_text().splitlines()) if row["loss"]]


def test_bf16_training_on_a_cpu_with_native_bf16_stays_close_to_fp32(corpus, tmp_path, monkeypatch):
    """``amp: bf16`` on a CPU with native bf16 (faked where the CPU only emulates it: same numbers,
    slower) trains under bf16 autocast with fp32 parameters.  bf16 keeps 8 significant bits
    (relative rounding 2^-9 = 0.2% per operation), and the loss's log-softmax and sums are
    fp32: six updates' losses stay within 2% of fp32's, which a bf16 loss reduction or bf16
    master weights (updates of lr 1e-3 rounded away) would not keep."""
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)
    messages: list[str] = []
    bf16 = make_trainer(corpus, tmp_path / "bf16", max_updates=6, log_interval=1, amp="bf16", log=messages.append)
    fp32 = make_trainer(corpus, tmp_path / "fp32", max_updates=6, log_interval=1, amp="none")
    bf16.train()
    fp32.train()
    assert not any("bf16" in message for message in messages)
    losses16, losses32 = logged_losses(tmp_path / "bf16"), logged_losses(tmp_path / "fp32")
    assert len(losses16) == len(losses32) == 6
    assert losses16 == pytest.approx(losses32, rel=2e-2)
    assert losses16 != losses32  # the steps did run in bf16
    assert all(p.dtype == torch.float32 for p in bf16.model.parameters())
    assert all(v.dtype == torch.float32 for state in bf16.optimizer.state.values() for v in state.values()
               if torch.is_tensor(v) and v.is_floating_point())
    assert [load_checkpoint(tmp_path / run / "checkpoint_last.pt")["precision"] for run in ("bf16", "fp32")] == ["bf16", "fp32"]


def test_a_gru_family_under_amp_bf16_trains_in_fp32_on_the_cpu_and_records_it(corpus, tmp_path, monkeypatch):
    """char2char declares ``cpu_bf16 = False`` (its GRU steps are slower in bf16 on the CPU):
    with ``amp: bf16`` on a CPU with native bf16 (faked) it trains exactly as with ``amp: none``,
    loss for loss, says so once, and its checkpoint records fp32."""
    from nmtmodels.config import ModelConfig
    from nmtmodels.registry import build_model

    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setattr(precision, "_REPORTED", set())
    vocab, train_data, valid = corpus
    cfg = ModelConfig.from_dict({"family": "char2char", "dropout": 0.0, "options": {"preset": "tiny"}})
    messages: list[str] = []
    for amp in ("bf16", "none"):
        torch.manual_seed(0)
        Trainer(build_model(cfg, len(vocab), len(vocab)), train_config(max_updates=3, log_interval=1, amp=amp), train_data,
                valid, tmp_path / amp, model_config=cfg.to_dict(), src_vocab=vocab, tgt_vocab=vocab, log=messages.append,
                device="cpu").train()
        assert load_checkpoint(tmp_path / amp / "checkpoint_last.pt")["precision"] == "fp32"
    assert logged_losses(tmp_path / "bf16") == logged_losses(tmp_path / "none") and len(logged_losses(tmp_path / "none")) == 3
    assert len([m for m in messages if "model family char2char computes in fp32 on the CPU" in m]) == 1


def test_bf16_training_on_a_cpu_without_native_bf16_is_fp32_and_says_so_once(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: False)
    monkeypatch.setattr(precision, "_REPORTED", set())
    messages: list[str] = []
    a = make_trainer(corpus, tmp_path / "a", max_updates=3, validate_interval_updates=1, amp="bf16", log=messages.append)
    b = make_trainer(corpus, tmp_path / "b", max_updates=3, validate_interval_updates=1, amp="none")
    a.train()
    b.train()
    assert_bitwise_equal(params(a), params(b))
    assert [m for m in messages if "bf16" in m] == [f"warning: {precision.CPU_FALLBACK}"]


@pytest.mark.parametrize(
    "config, message",
    [
        ({"lrr": 0.1, "max_updates": 1}, r"train.lrr: unknown key \(did you mean 'lr'\?\)"),
        ({}, "set at least one of max_updates"),
        ({"max_updates": 1, "best_metric": "bleu"}, "valid_bleu: true"),
        ({"max_updates": 1, "label_smoothing": 1.5}, "train.label_smoothing"),
        ({"max_updates": 1, "amp": "fp16"}, r"train.amp: expected one of \['bf16', 'none'\]"),
        ({"max_updates": 1, "adam_betas": [0.9]}, "train.adam_betas"),
    ],
)
def test_config_errors_name_the_key(config, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(TrainConfig, config, "train")


@pytest.mark.parametrize("config, message", [
    ({"max_updates": 1, "max_nonfinite_updates": -1}, "train.max_nonfinite_updates: must be >= 0"),
    ({"max_updates": 1, "lr": float("nan")}, "train.lr: must be a finite number"),
])
def test_new_config_values_are_checked(config, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(TrainConfig, config, "train")


# ---------------------------------------------------------------------- divergence
def nan_on_calls(monkeypatch, calls: set[int]) -> None:
    """Make the training loss of the given forward calls (1-based) NaN.  Patched in trainer.py,
    where the train step and the validation look the loss up."""
    real = train_module.label_smoothed_nll_loss
    count = {"n": 0}

    def loss(states, *args, **kwargs):
        if torch.is_grad_enabled():
            count["n"] += 1
            if count["n"] in calls:
                states = states * float("nan")
        return real(states, *args, **kwargs)

    monkeypatch.setattr(train_module, "label_smoothed_nll_loss", loss)


def test_a_non_finite_update_is_skipped_and_training_goes_on(corpus, tmp_path, monkeypatch):
    nan_on_calls(monkeypatch, {3})
    logs: list[str] = []
    trainer = make_trainer(corpus, tmp_path, max_updates=4, log=logs.append)
    steps: list[int] = []
    trainer.optimizer.register_step_pre_hook(lambda opt, args, kwargs: steps.append(trainer.progress.update))
    result = trainer.train()
    assert result.update == 4 and trainer.progress.nonfinite_total == 1 and trainer.progress.nonfinite_run == 0
    assert steps == [0, 1, 2, 3]  # five batches, four optimizer steps: the third batch's was skipped
    assert trainer.scheduler.last_epoch == 4
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    skipped = [line for line in logs if "skipped" in line]
    assert len(skipped) == 1 and skipped[0].startswith("warning: update 3 skipped: non-finite loss (nan")
    state = load_checkpoint(tmp_path / "checkpoint_last.pt")["trainer"]
    assert (state["nonfinite_run"], state["nonfinite_total"]) == (0, 1)


def test_too_many_consecutive_non_finite_updates_stop_training(corpus, tmp_path, monkeypatch):
    nan_on_calls(monkeypatch, set(range(3, 100)))
    trainer = make_trainer(corpus, tmp_path, max_updates=50, max_nonfinite_updates=3, save_interval_updates=2)
    with pytest.raises(TrainingDiverged, match=r"training diverged: 4 consecutive updates after update 2 had a "
                                               r"non-finite loss or gradient \(train.max_nonfinite_updates: 3\); "
                                               r".*checkpoint_last.pt \(update 2\) is left as it was"):
        trainer.train()
    assert load_checkpoint(tmp_path / "checkpoint_last.pt")["update"] == 2
    assert all(torch.isfinite(v).all() for v in load_checkpoint(tmp_path / "checkpoint_best.pt")["model"].values())


def test_huge_learning_rate_diverges_instead_of_saving_a_nan_model(corpus, tmp_path):
    trainer = make_trainer(corpus, tmp_path, lr=1e9, warmup_updates=1, max_updates=40, validate_interval_updates=5)
    with pytest.raises(TrainingDiverged, match="training diverged"):
        trainer.train()
    assert not (tmp_path / "checkpoint_best.pt").exists()


def test_an_exploding_training_loss_stops_as_diverged(corpus, tmp_path):
    """``train.lr: 100``.  Before: the loss went from 3.2 to 78,764 per token at update 5 (and
    a dev loss of 152,397 was the "best"), yet the run finished with ``max_updates`` and a
    checkpoint_best.pt; only non-finite losses were caught.  The copy task's target vocabulary
    has 14 tokens: the bound is 100 x ln 14 = 263.9 per token."""
    trainer = make_trainer(corpus, tmp_path, lr=100.0, warmup_updates=4, max_updates=40, validate_interval_updates=10,
                           log_interval=5)
    with pytest.raises(TrainingDiverged, match=r"^training diverged: the training loss per target token is [\d,.]+ at "
                                               r"update \d, over 100 x ln\(target vocabulary size 14\) = 263\.9; nothing "
                                               r"was saved; lower train\.lr"):
        trainer.train()
    assert not (tmp_path / "checkpoint_best.pt").exists() and not (tmp_path / "checkpoint_last.pt").exists()


def test_an_exploding_dev_loss_stops_as_diverged_and_saves_nothing_of_it(corpus, tmp_path, monkeypatch):
    """The dev loss of the issue's run (134,374 per token) at the second validation: the first
    one's checkpoint stays, the diverged model is not saved."""
    trainer = make_trainer(corpus, tmp_path, max_updates=8, validate_interval_updates=2, save_interval_updates=2)
    real = trainer.validate
    losses = iter([None, 134374.0])
    monkeypatch.setattr(trainer, "validate", lambda: real() if (loss := next(losses)) is None
                        else {"valid_loss": loss, "valid_nll": loss})
    with pytest.raises(TrainingDiverged, match=r"the dev loss per target token is 134,374\.0 at update 4, over 100 x ln"
                                               rf".*; {re.escape(str(tmp_path / 'checkpoint_last.pt'))} \(update 2\) is "
                                               "left as it was"):
        trainer.train()
    assert load_checkpoint(tmp_path / "checkpoint_last.pt")["update"] == 2


@pytest.mark.parametrize(("vocab_size", "loss", "diverged"), [
    # 100 x ln 611 = 641.5097 (the workflow's Multi30k bpe600 target vocabulary)
    (611, 641.50, False), (611, 641.52, True),
    # 100 x ln 14 = 263.9057 (the copy task)
    (14, 263.90, False), (14, 263.91, True),
    # a vocabulary of one token: ln 2, never ln 1 = 0, which would stop every run
    (1, 69.31, False), (1, 69.32, True),
    # a non-finite loss is the skipped-update rule's, never this one's
    (14, float("inf"), False), (14, float("nan"), False), (14, None, False),
])
def test_the_divergence_bound_is_100_times_the_loss_of_a_uniform_guess(vocab_size, loss, diverged):
    """check_loss, the rule itself: a loss per target token over 100 x ln(V) is divergence (the
    bounds above are computed by hand from ln); the error carries what was seen and where."""
    if not diverged:
        check_loss("training loss", loss, vocab_size, 7, "nothing was saved")
        return
    with pytest.raises(TrainingDiverged) as caught:
        check_loss("training loss", loss, vocab_size, 7, "nothing was saved")
    assert (caught.value.update, caught.value.advice) == (7, "lower train.lr, set train.clip_norm or check the training data")
    assert caught.value.reason.startswith(f"the training loss per target token is {loss:,.1f} at update 7, over 100 x ln")
    assert str(caught.value) == f"training diverged: {caught.value.reason}; nothing was saved; {caught.value.advice}"


def test_an_exploding_training_loss_with_on_divergence_stop_ends_the_run_as_diverged(corpus, tmp_path):
    """``on_divergence="stop"`` (the workflow's trainings): the lr-100 run of the test above ends
    instead of raising: one line in the log, the model at the stop as checkpoint_best.pt marked
    as diverged (no validation came before), diverged.json, a last metrics.csv row at the
    stop, and checkpoint_last.pt left as it was (none)."""
    logs: list[str] = []
    trainer = make_trainer(corpus, tmp_path, lr=100.0, warmup_updates=4, max_updates=40, validate_interval_updates=10,
                           log_interval=5, log=logs.append, on_divergence="stop")
    result = trainer.train()
    assert (result.status, result.reason, result.update) == ("diverged", "diverged", 5)
    [line] = [line for line in logs if "diverged" in line]
    assert re.fullmatch(r"stopped: training diverged: the training loss per target token is [\d,.]+ at update 5, over "
                        r"100 x ln\(target vocabulary size 14\) = 263\.9; .*checkpoint_best\.pt is the model at the stop "
                        r"\(update 5; none was validated before it\), marked as diverged; lower train\.lr, set "
                        r"train\.clip_norm or check the training data", line), line
    best = load_checkpoint(tmp_path / "checkpoint_best.pt")
    assert best["update"] == 5 and best["diverged"]["update"] == 5 and best["diverged"]["message"] == line
    assert not holds_resume_state(best)  # for decoding, as every best (issue 70)
    assert_bitwise_equal(best["model"], {k: v.cpu() for k, v in trainer.model.state_dict().items()})
    assert not (tmp_path / "checkpoint_last.pt").exists() and not numbered_checkpoints(tmp_path)
    record = json.loads((tmp_path / "diverged.json").read_text())
    assert (record["stop_reason"], record["update"], record["message"]) == ("diverged", 5, line)
    with open(tmp_path / "metrics.csv", encoding="utf-8", newline="") as handle:
        assert int(list(csv.DictReader(handle))[-1]["update"]) == 5


def test_an_exploding_dev_loss_with_on_divergence_stop_keeps_the_best_model_before_it(corpus, tmp_path, monkeypatch):
    """The dev loss of the issue's run at the second validation: the first validation's model
    (update 2) stays checkpoint_best.pt, now marked; checkpoint_last.pt is left as it was."""
    trainer = make_trainer(corpus, tmp_path, max_updates=8, validate_interval_updates=2, save_interval_updates=2,
                           on_divergence="stop")
    real = trainer.validate
    losses = iter([None, 134374.0])
    monkeypatch.setattr(trainer, "validate", lambda: real() if (loss := next(losses)) is None
                        else {"valid_loss": loss, "valid_nll": loss})
    assert trainer.train().status == "diverged"
    best, numbered = load_checkpoint(tmp_path / "checkpoint_best.pt"), load_checkpoint(tmp_path / "checkpoint_2.pt")
    assert best["update"] == 2 and best["diverged"]["update"] == 4
    assert "the dev loss per target token is 134,374.0 at update 4" in best["diverged"]["reason"]
    assert "checkpoint_best.pt is the best model before it (update 2), marked as diverged" in best["diverged"]["message"]
    assert_bitwise_equal(best["model"], numbered["model"])
    assert load_checkpoint(tmp_path / "checkpoint_last.pt")["update"] == 2 and "diverged" not in numbered


def test_the_next_run_in_the_directory_undoes_an_end_as_diverged(corpus, tmp_path):
    make_trainer(corpus, tmp_path, lr=100.0, warmup_updates=4, max_updates=40, log_interval=5,
                 on_divergence="stop").train()
    assert (tmp_path / "diverged.json").exists()
    result = make_trainer(corpus, tmp_path, max_updates=6, on_divergence="stop").train()
    assert result.status == "finished" and not (tmp_path / "diverged.json").exists()
    best = load_checkpoint(tmp_path / "checkpoint_best.pt")
    assert best["update"] == 6 and "diverged" not in best


def test_on_divergence_stop_with_a_model_that_is_not_finite_fails_as_before(corpus, tmp_path, monkeypatch):
    """Nothing finite to keep (no validated model, parameters not finite): the error, as with fail."""
    monkeypatch.setattr(train_module.divergence, "finite_parameters", lambda model: False)
    trainer = make_trainer(corpus, tmp_path, lr=100.0, warmup_updates=4, max_updates=40, log_interval=5,
                           on_divergence="stop")
    with pytest.raises(TrainingDiverged, match="^training diverged: the training loss per target token"):
        trainer.train()
    assert not (tmp_path / "checkpoint_best.pt").exists() and not (tmp_path / "diverged.json").exists()


def test_a_nan_validation_is_never_the_best(corpus, tmp_path):
    bleu = iter([float("nan"), 10.0, 20.0, float("nan"), 15.0])
    trainer = make_trainer(corpus, tmp_path, bleu_fn=lambda model: next(bleu), max_tokens=24, valid_bleu=True,
                           best_metric="bleu", save_interval_updates=2, keep_last=0, keep_best=1, max_updates=10)
    result = trainer.train()
    assert result.best == 20.0
    best = load_checkpoint(tmp_path / "checkpoint_best.pt")
    assert best["update"] == 6 and best["metrics"]["valid_bleu"] == 20.0
    assert [u for u, _ in numbered_checkpoints(tmp_path)] == [6]  # a NaN never ranks among keep_best


def test_a_run_without_a_finite_validation_fails_without_a_best_checkpoint(corpus, tmp_path):
    trainer = make_trainer(corpus, tmp_path, bleu_fn=lambda model: float("nan"), valid_bleu=True, best_metric="bleu",
                           save_interval_updates=2, max_updates=4)
    with pytest.raises(TrainingDiverged, match="every validation gave a non-finite valid_bleu"):
        trainer.train()
    assert not (tmp_path / "checkpoint_best.pt").exists()


# ---------------------------------------------------------------------- saving, locking
def test_failed_best_copy_leaves_last_consistent_with_best(corpus, tmp_path, monkeypatch):
    """A full disk while writing checkpoint_best.pt: checkpoint_last.pt still records the best
    that checkpoint_best.pt holds (the old order wrote last first, then failed on best)."""
    real_write = ckpt_module._write
    best_writes = {"n": 0}

    def write(path, state):
        if "checkpoint_best" in str(path):
            best_writes["n"] += 1
            if best_writes["n"] == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(path, state)

    monkeypatch.setattr(ckpt_module, "_write", write)
    bleu = iter([10.0, 20.0, 30.0])
    trainer = make_trainer(corpus, tmp_path, bleu_fn=lambda model: next(bleu), max_tokens=24, valid_bleu=True,
                           best_metric="bleu", save_interval_updates=2, max_updates=6)
    with pytest.raises(CheckpointWriteError, match=r"checkpoint_best.pt: cannot write checkpoint: \[Errno 28\] "
                                                   r"No space left on device \(.* free in "):
        trainer.train()
    last = load_checkpoint(tmp_path / "checkpoint_last.pt")
    best = load_checkpoint(tmp_path / "checkpoint_best.pt")
    assert last["trainer"]["best"] == best["metrics"]["valid_bleu"] == 10.0
    assert last["update"] == best["update"] == 2
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_second_trainer_on_the_same_directory_is_refused(corpus, tmp_path):
    tmp_path.mkdir(exist_ok=True)
    with open(tmp_path / ".nmt-train.lock", "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a running trainer holds
        holder.write("4242\n")
        holder.flush()
        with pytest.raises(OutputDirLocked, match=rf"{tmp_path}: another nmt-train \(pid 4242\) is training in this "
                                                  r"directory \(.*\.nmt-train\.lock is locked\)"):
            make_trainer(corpus, tmp_path, max_updates=2).train()
        assert not (tmp_path / "checkpoint_last.pt").exists()
    assert make_trainer(corpus, tmp_path, max_updates=2).train().update == 2  # released: trains
    assert make_trainer(corpus, tmp_path, max_updates=3).train().update == 3  # and the lock was released again


def test_the_lock_file_is_removed_when_training_ends(corpus, tmp_path):
    seen = []
    make_trainer(corpus, tmp_path, max_updates=2, log=lambda m: seen.append((tmp_path / ".nmt-train.lock").read_text())).train()
    assert seen and set(seen) == {f"{os.getpid()}\n"}  # held while training
    assert not (tmp_path / ".nmt-train.lock").exists()  # finished: no lock file left

    def stop_at_update_1(message):
        if message.startswith("update 1/"):
            signal.raise_signal(signal.SIGTERM)

    result = make_trainer(corpus, tmp_path / "stopped", max_updates=4, log_interval=1, log=stop_at_update_1).train()
    assert result.status == "interrupted" and not (tmp_path / "stopped" / ".nmt-train.lock").exists()


def test_a_trainer_that_waited_on_a_removed_lock_file_locks_the_new_one(tmp_path):
    """The first trainer removes its lock file as it ends; the one that waited on that file then
    locks the file at the path, so a third one is refused rather than let in beside it."""
    import threading

    from nmtmodels.training.state import output_lock

    first_in, waiting, first_done, second_in, second_out = (threading.Event() for _ in range(5))
    outcome = {}

    def first():
        with output_lock(tmp_path, is_main=True, log=print):
            first_in.set()
            waiting.wait(10)  # until the second one waits for this lock
        first_done.set()

    def second():
        with output_lock(tmp_path, is_main=True, log=lambda m: waiting.set() if "waiting for it" in m else None, wait=True):
            second_in.set()
            second_out.wait(10)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert first_in.wait(10)
    threads[1].start()
    try:
        # the first sets first_done just after its lock is released, which may be after the second got in
        assert second_in.wait(10) and first_done.wait(10)
        try:
            with output_lock(tmp_path, is_main=True, log=print):
                outcome["third"] = "let in"
        except OutputDirLocked:
            outcome["third"] = "refused"
    finally:
        second_out.set()
        for thread in threads:
            thread.join(10)
    assert outcome == {"third": "refused"}
    assert not (tmp_path / ".nmt-train.lock").exists()


# ---------------------------------------------------------------------- weight decay
@pytest.mark.parametrize("family", model_families())
def test_weight_decay_shrinks_weights_but_not_biases_or_norms(family):
    """AdamW, zero gradient: m = v = 0, so the Adam term is 0 and a decayed parameter becomes
    w * (1 - lr * wd) (Loshchilov & Hutter 2019, Alg. 2); biases and LayerNorm gains/biases
    (fewer than two dimensions) must not change at all."""
    model, _ = tiny_model(20, 20, family=family)
    lr, wd = 0.01, 0.5
    optimizer = build_optimizer(model.parameters(), train_config(lr=lr, weight_decay=wd), torch.device("cpu"))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    norms = [name for name, module in model.named_modules() if isinstance(module, nn.LayerNorm)]
    for name, p in model.named_parameters():
        if p.ndim < 2:
            assert torch.equal(p.detach(), before[name]), f"{name} decayed"
        else:
            torch.testing.assert_close(p.detach(), before[name] * (1 - lr * wd), rtol=1e-6, atol=0)
    assert any(name.endswith("bias") for name in before)
    assert family in ("char2char", "char2word") or any(f"{n}.weight" in before for n in norms)  # RNNs: no LayerNorm


def test_resume_refuses_a_run_whose_optimizer_decayed_every_parameter(corpus, tmp_path):
    trainer = make_trainer(corpus, tmp_path, max_updates=2, weight_decay=0.1)
    trainer.train()
    state = load_checkpoint(tmp_path / "checkpoint_last.pt")
    old = torch.optim.AdamW(trainer.model.parameters(), lr=1e-3, weight_decay=0.1)  # one group, as before
    state["trainer"]["optimizer"] = old.state_dict()
    save_checkpoint(tmp_path / "checkpoint_last.pt", {k: v for k, v in state.items() if k not in ("format", "version")})
    with pytest.raises(ConfigError, match=r"the optimizer's parameter groups were \[\d+\] parameters and are "
                                          r"\[\d+, \d+\] now"):
        make_trainer(corpus, tmp_path, max_updates=4, weight_decay=0.1).train()


def _seeded_run(corpus, out_dir, seed: int) -> tuple[dict, list, dict]:
    """As nmt-train does (nmtmodels/cli/train.py): seed, build the model, train with train.seed =
    ``seed`` and dropout 0.3; (initial parameters, first epoch's batches, final parameters)."""
    from nmtmodels.config import ModelConfig
    from nmtmodels.registry import build_model
    from nmtmodels.tests.copy_task_fixtures import TINY_MODEL
    from nmtmodels.training.state import seed_everything

    vocab, train_data, valid = corpus
    model_cfg = ModelConfig.from_dict({**TINY_MODEL, "dropout": 0.3})
    seed_everything(seed)
    model = build_model(model_cfg, len(vocab), len(vocab))
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    trainer = Trainer(model, train_config(seed=seed, max_updates=5), train_data, valid, out_dir,
                      model_config=model_cfg.to_dict(), src_vocab=vocab, tgt_vocab=vocab, log=lambda msg: None,
                      device="cpu")
    batches = [b.tolist() for b in trainer.sampler.global_batches(1)]
    trainer.train()
    return initial, batches, params(trainer)


def test_a_seed_sets_initialisation_and_batch_order(corpus, tmp_path):
    """train.seed (experiments.X.seeds): the same seed gives bit-identical parameters; another
    seed another initialisation, another batch order and other final parameters."""
    init_a, batches_a, final_a = _seeded_run(corpus, tmp_path / "a", 1)
    init_b, batches_b, final_b = _seeded_run(corpus, tmp_path / "b", 1)
    init_c, batches_c, final_c = _seeded_run(corpus, tmp_path / "c", 2)
    assert_bitwise_equal(init_a, init_b)
    assert batches_a == batches_b
    assert_bitwise_equal(final_a, final_b)
    assert all(not torch.equal(init_a[k], init_c[k]) for k in init_a if init_a[k].dim() > 1)
    assert batches_a != batches_c
    assert any(not torch.equal(final_a[k], final_c[k]) for k in final_a)
    # the dropout masks follow the same seed (seed_everything): test_modules.py,
    # test_dropout_masks_follow_the_seed
