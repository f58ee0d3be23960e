"""A run's progress and its resume without a Trainer (nmtmodels/training/progress.py, state.py):
the progress's own serialisation, and a checkpoint written by ``checkpoint_state`` and resumed
by ``resume_or_restart`` into freshly built objects going on exactly as the run that was never
stopped, also from the layout written before the progress had a version."""
from __future__ import annotations

import copy
import csv
import dataclasses
import re

import pytest
import torch

from nmtmodels.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from nmtmodels.config import ConfigError
from nmtmodels.sampler import BucketBatchSampler
from nmtmodels.tests.copy_task_fixtures import copy_task_corpus, tiny_model, train_config
from nmtmodels.training.distributed import DistributedContext
from nmtmodels.training.loss import label_smoothed_nll_loss
from nmtmodels.training.optim import InverseSqrtSchedule, build_optimizer
from nmtmodels.training.progress import PROGRESS_VERSION, TrainingProgress
from nmtmodels.training.state import RunSpec, TrainingObjects, checkpoint_state, resume_or_restart, seed_everything

ONE_PROCESS = DistributedContext()


@pytest.fixture(autouse=True)
def _restore_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return copy_task_corpus(tmp_path_factory.mktemp("corpus"), 120, 10)


def some_progress() -> TrainingProgress:
    return TrainingProgress(update=7, elapsed=12.5, target_tokens=431, best=1.25, bad_validations=2, nonfinite_run=1,
                            nonfinite_total=3, kept=[{"update": 4, "metric": 1.25}, {"update": 6, "metric": None}],
                            last_metrics={"valid_loss": 1.5, "valid_nll": 1.375},
                            metrics_history=[{"update": 6, "loss": 2.0}, {"update": 6, "valid_loss": 1.5}],
                            devices=["CPU A, 1 thread", "GPU B"])


# ---------------------------------------------------------------------- serialisation
def test_progress_round_trips_through_its_dict_and_a_checkpoint_file(tmp_path):
    progress = some_progress()
    data = progress.to_dict()
    assert data["progress_version"] == PROGRESS_VERSION
    assert TrainingProgress.from_dict(data) == progress
    save_checkpoint(tmp_path / "progress.pt", {"progress": data})  # read back with weights_only=True
    assert TrainingProgress.from_dict(load_checkpoint(tmp_path / "progress.pt")["progress"]) == progress
    data["kept"][0]["metric"] = 0.0
    data["metrics_history"].clear()
    assert progress == some_progress()  # the dict is a copy: the progress did not change


def test_progress_reads_the_dicts_written_before_it_had_a_version():
    unversioned = {k: v for k, v in some_progress().to_dict().items() if k not in ("progress_version", "last_metrics")}
    assert TrainingProgress.from_dict(unversioned) == dataclasses.replace(some_progress(), last_metrics={})
    undeviced = {k: v for k, v in some_progress().to_dict().items() if k != "devices"}  # before devices were recorded
    assert TrainingProgress.from_dict(undeviced) == dataclasses.replace(some_progress(), devices=[])
    oldest = {"update": 5, "elapsed": 3.0, "best": None, "bad_validations": 0, "kept": []}  # before the token count
    assert TrainingProgress.from_dict(oldest) == TrainingProgress(update=5, elapsed=3.0)


def test_a_progress_of_a_newer_layout_is_refused():
    newer = {**some_progress().to_dict(), "progress_version": PROGRESS_VERSION + 1}
    with pytest.raises(ValueError, match=rf"layout version {PROGRESS_VERSION + 1}; this nmtmodels reads versions up "
                                         rf"to {PROGRESS_VERSION}"):
        TrainingProgress.from_dict(newer)


# ---------------------------------------------------------------------- resume without a Trainer
def build(corpus, model_seed: int) -> tuple[RunSpec, TrainingObjects]:
    """A run's parts built as the Trainer builds them (dropout on, so that the RNG state matters)."""
    vocab, train, _ = corpus
    cfg = train_config()
    model, model_cfg = tiny_model(len(vocab), len(vocab), seed=model_seed, dropout=0.1)
    optimizer = build_optimizer(model, cfg, torch.device("cpu"))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, InverseSqrtSchedule(cfg.lr, cfg.warmup_updates,
                                                                                  cfg.warmup_init_lr))
    sampler = BucketBatchSampler(train, cfg.max_tokens, shuffle=True, seed=cfg.seed)
    return RunSpec(model_cfg.to_dict(), cfg, vocab, vocab, train.fingerprint()), TrainingObjects(model, optimizer,
                                                                                                 scheduler, sampler)


def update(corpus, objects: TrainingObjects, progress: TrainingProgress) -> None:
    """One update by hand: the next batch's label-smoothed loss per target token, an Adam step
    on the scheduled rate; the progress counts it."""
    batch = corpus[1].collate(next(iter(objects.sampler)))
    objects.model.train()
    states = objects.model(batch, features_only=True)
    loss, _ = label_smoothed_nll_loss(states, objects.model.output_layer, batch.tgt_out, 0.1)
    (loss / batch.num_target_tokens).backward()
    objects.optimizer.step()
    objects.scheduler.step()
    objects.optimizer.zero_grad(set_to_none=True)
    progress.update += 1
    progress.target_tokens += batch.num_target_tokens
    progress.metrics_history.append({"update": progress.update, "loss": float(loss.detach()) / batch.num_target_tokens})


def before_progress_had_a_version(state: dict) -> dict:
    """``state`` as the trainer wrote it before the progress had a layout version: the same,
    without ``progress_version`` and ``last_metrics`` in its trainer section."""
    old = copy.deepcopy(state)
    del old["trainer"]["progress_version"], old["trainer"]["last_metrics"]
    return old


@pytest.mark.parametrize("layout", ["current", "before_version"])
def test_resume_without_a_trainer_goes_on_as_the_run_that_was_not_stopped(corpus, tmp_path, layout):
    seed_everything(1)
    run, objects = build(corpus, model_seed=0)
    progress = TrainingProgress()
    for _ in range(3):
        update(corpus, objects, progress)
    progress.kept.append({"update": 3, "metric": 2.5})
    progress.last_metrics = {"valid_loss": 2.5, "valid_nll": 2.25}
    state = checkpoint_state(progress, run, objects, ONE_PROCESS)
    last = tmp_path / "checkpoint_last.pt"
    save_checkpoint(last, state if layout == "current" else before_progress_had_a_version(state))
    saved = copy.deepcopy(progress)
    for _ in range(3):
        update(corpus, objects, progress)  # the run that was not stopped

    messages: list[str] = []
    run_again, fresh = build(corpus, model_seed=7)  # other parameters and RNG state: the checkpoint's replace them
    resumed = resume_or_restart(last, run_again, fresh, ONE_PROCESS, restart_on_change=False, log=messages.append)
    assert resumed == saved
    assert messages == [f"resumed from {last} at update 3 (epoch 1, batch 3)"]
    with open(tmp_path / "metrics.csv", encoding="utf-8") as rows:
        assert [int(row["update"]) for row in csv.DictReader(rows)] == [1, 2, 3]  # rewritten from the progress
    for _ in range(3):
        update(corpus, fresh, resumed)
    assert resumed == progress
    assert fresh.sampler.state_dict() == objects.sampler.state_dict()
    assert fresh.scheduler.state_dict() == objects.scheduler.state_dict()
    unequal = [k for k, v in objects.model.state_dict().items() if not torch.equal(v, fresh.model.state_dict()[k])]
    assert not unequal, f"parameters differ: {unequal[:5]}"


def test_another_run_or_a_newer_layout_is_refused_without_a_trainer(corpus, tmp_path):
    run, objects = build(corpus, model_seed=0)
    last = tmp_path / "checkpoint_last.pt"
    state = checkpoint_state(TrainingProgress(), run, objects, ONE_PROCESS)
    other_lr = dataclasses.replace(run, train_config=dataclasses.replace(run.train_config, lr=2e-3))
    save_checkpoint(last, state)
    with pytest.raises(ConfigError, match=r"belongs to a different run: train.lr was 0.001 and is 0.002 now"):
        resume_or_restart(last, other_lr, objects, ONE_PROCESS, restart_on_change=False, log=lambda msg: None)
    assert resume_or_restart(last, other_lr, objects, ONE_PROCESS, restart_on_change=True, log=lambda msg: None) is None
    assert not last.exists()  # started over: the other run's checkpoint is gone

    state["trainer"]["progress_version"] = PROGRESS_VERSION + 1
    save_checkpoint(last, state)
    _, fresh = build(corpus, model_seed=7)
    before = {k: v.clone() for k, v in fresh.model.state_dict().items()}
    with pytest.raises(CheckpointError, match=rf"^{re.escape(str(last))}: training progress of layout version "
                                              rf"{PROGRESS_VERSION + 1}; this nmtmodels reads versions up to"):
        resume_or_restart(last, run, fresh, ONE_PROCESS, restart_on_change=False, log=lambda msg: None)
    # refused before anything was loaded
    assert all(torch.equal(v, before[k]) for k, v in fresh.model.state_dict().items())
    assert fresh.optimizer.state_dict()["state"] == {}
