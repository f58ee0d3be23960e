"""The training loop (docs/training.md): :class:`Trainer` runs the updates, validates, saves and
stops at a limit, on early stopping or on SIGTERM / SIGUSR1 (the CLI then exits :data:`EXIT_REQUEUE`).
Its parts are the sibling modules config, errors, optim, state (checkpoints, resume, lock, signals)
and metrics.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import yaml
from torch import Tensor
from tqdm import tqdm

from nmtmodels.checkpoint import save_checkpoint
from nmtmodels.compiling import begin_step, compile_module
from nmtmodels.config import ConfigError, plain_dict
from nmtmodels.data import Batch, ParallelDataset, pad_to_buckets
from nmtmodels.devices import device_name, resolve_device
from nmtmodels.files import atomic_write_text
from nmtmodels.models.base import Seq2SeqModel
from nmtmodels.modules.attention import avoid_per_shape_attention_kernels
from nmtmodels.precision import bf16_autocast
from nmtmodels.sampler import BucketBatchSampler
from nmtmodels.training import divergence
from nmtmodels.training.config import TrainConfig
from nmtmodels.training.distributed import DistributedContext, all_reduce_sum, broadcast_object
from nmtmodels.training.errors import TrainingDiverged, check_loss
from nmtmodels.training.loss import label_smoothed_nll_loss
from nmtmodels.training.metrics import Interval, TensorBoardLog, append_metrics, early_line, train_line, valid_line
from nmtmodels.training.optim import InverseSqrtSchedule, build_optimizer
from nmtmodels.training.progress import TrainingProgress
from nmtmodels.training.state import (
    RunSpec,
    TrainingObjects,
    checkpoint_state,
    drop_copies_of_last,
    output_lock,
    prune_list,
    restore_best_checkpoint,
    resume_or_restart,
    save_best_checkpoint,
    seed_everything,
    stop_signal_handlers,
)
from nmtmodels.vocab import Vocabulary

EXIT_REQUEUE = 75  # sysexits.h EX_TEMPFAIL: interrupted by SIGTERM/SIGUSR1, resume by rerunning


@dataclass
class TrainResult:
    status: Literal["finished", "interrupted", "diverged"]
    reason: str
    update: int
    best: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)


BleuFn = Callable[[Seq2SeqModel], float]


class Trainer:
    """Trains ``model`` on ``train_data`` (docs/training.md).

    ``bleu_fn(model) -> BLEU`` scores the (unwrapped) model on the dev set; it is called
    at each validation when ``cfg.valid_bleu`` (see :func:`nmtmodels.training.validation.make_bleu_fn`).
    ``model_config`` (a dict) and the vocabularies go into every checkpoint.
    ``restart_on_change``: start over instead of failing when ``checkpoint_last.pt`` belongs
    to a different run (docs/training.md, "Resume and restart"). ``init_fingerprint`` names the
    parameters the run starts from when they come from elsewhere (``nmt-train
    --init-from``); a checkpoint of a run started from other parameters is another run.
    ``device`` goes through :func:`nmtmodels.devices.resolve_device` (None: ``"auto"``), as every
    command's does: a device torch cannot use here is a ConfigError in one line.
    ``on_divergence``: ``"fail"`` raises TrainingDiverged; ``"stop"`` ends the run as diverged
    instead, its result's status "diverged" (:mod:`nmtmodels.training.divergence`).

    ``run`` (:class:`nmtmodels.training.state.RunSpec`; ``cfg`` is its ``train_config``) is what
    the run is, ``progress`` (:class:`nmtmodels.training.progress.TrainingProgress`) how far it
    has come: the loop advances it, every checkpoint saves it, a resume replaces it.
    """

    def __init__(
        self,
        model: Seq2SeqModel,
        cfg: TrainConfig,
        train_data: ParallelDataset,
        valid_data: ParallelDataset | None,
        out_dir: str | os.PathLike,
        *,
        model_config: dict[str, Any],
        src_vocab: Vocabulary,
        tgt_vocab: Vocabulary,
        bleu_fn: BleuFn | None = None,
        decode_config: dict[str, Any] | None = None,
        device: torch.device | str | None = None,
        dist: DistributedContext | None = None,
        log: Callable[[str], None] | None = None,
        restart_on_change: bool = False,
        init_fingerprint: str | None = None,
        wait_for_lock: bool = False,
        on_divergence: str = "fail",
    ):
        if cfg.valid_bleu and bleu_fn is None:
            raise ConfigError("train.valid_bleu: no BLEU scorer was given (validation references missing?)")
        if valid_data is None and (cfg.patience or cfg.best_metric == "bleu"):
            raise ConfigError("train.patience / train.best_metric: need a validation set")
        if not train_data.has_target:
            raise ValueError("training data has no target side")
        if on_divergence not in divergence.ON_DIVERGENCE:
            raise ValueError(f"on_divergence: {on_divergence!r} is not one of {', '.join(divergence.ON_DIVERGENCE)}")
        self.on_divergence = on_divergence
        self.run = RunSpec(model_config, cfg, src_vocab, tgt_vocab, train_data.fingerprint(),
                           init_fingerprint=init_fingerprint, decode_config=decode_config)
        self.dist = dist or DistributedContext()
        self.device = resolve_device("auto" if device is None else device)
        self.out_dir = Path(out_dir)
        self.train_data = train_data
        self.valid_data = valid_data
        self.bleu_fn = bleu_fn
        self.wait_for_lock = wait_for_lock
        self.restart_on_change = restart_on_change
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
        seed_everything(cfg.seed)

        if self.device.type == "cuda":
            avoid_per_shape_attention_kernels()
        self.model = model.to(self.device)
        self.net: torch.nn.Module = self.model
        if self.dist.enabled:
            self.net = torch.nn.parallel.DistributedDataParallel(self.model)
        # the forward pass of training and validation; the parameters stay in self.model
        self.forward = compile_module(self.net, cfg.compile)
        # rank 0 validates alone, so never through DDP's forward (it may communicate)
        self.valid_forward = self.forward if self.net is self.model else compile_module(self.model, cfg.compile)
        self.optimizer = build_optimizer(self.model, cfg, self.device)
        self.schedule = InverseSqrtSchedule(cfg.lr, cfg.warmup_updates, cfg.warmup_init_lr)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self.schedule)
        self.sampler = BucketBatchSampler(train_data, cfg.max_tokens, unit=cfg.batch_unit, shuffle=True,
                                          seed=cfg.seed, max_sentences=cfg.max_sentences,
                                          num_replicas=self.dist.world_size, rank=self.dist.rank, cost=cfg.batch_cost)
        if self.sampler.oversized and self.dist.is_main:
            self.log(f"warning: {self.sampler.oversized} training examples exceed max_tokens "
                     f"{cfg.max_tokens} on their own; each becomes a batch of one")
        self.progress = TrainingProgress()  # what every checkpoint saves and a resume restores
        # Target tokens of the updates not yet counted in progress.target_tokens: under DDP the
        # per-update totals stay on the device until a row or a checkpoint needs the count.
        self._pending_tokens: Tensor | int = 0
        self._signal: int | None = None
        self._loss_sum: Tensor | None = None  # since the last log line, on the device
        self._nll_sum: Tensor | None = None
        self._tensorboard = TensorBoardLog(self.out_dir / "tensorboard")
        self.saved_at = -1  # the update of the last checkpoint written or resumed from
        # bf16 on CUDA and on a CPU with native bf16, else fp32 with a warning (nmtmodels.precision)
        report = (lambda message: self.log(f"warning: {message}")) if self.dist.is_main else (lambda message: None)
        self._autocast = bf16_autocast(cfg.amp, self.device, report=report, model=self.model)  # GRU families: fp32
        self.run = replace(self.run, precision="bf16" if isinstance(self._autocast, torch.autocast) else "fp32")

    # ------------------------------------------------------------------ public
    def request_stop(self, signum: int = signal.SIGTERM) -> None:
        """Finish the current update, save ``checkpoint_last.pt`` and return "interrupted"."""
        self._signal = signum

    @property
    def cfg(self) -> TrainConfig:
        return self.run.train_config

    @property
    def checkpoint_last(self) -> Path:
        return self.out_dir / "checkpoint_last.pt"

    def train(self) -> TrainResult:
        """Train until a limit, early stopping or a signal; resumes from ``checkpoint_last.pt`` (when it
        is unreadable, from the newest readable numbered checkpoint, with a warning).

        OutputDirLocked when another trainer works in ``out_dir``; TrainingDiverged (docs/training.md,
        "Non-finite updates")."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with output_lock(self.out_dir, is_main=self.dist.is_main, log=self.log, wait=self.wait_for_lock):
            if self.checkpoint_last.exists():
                resumed = resume_or_restart(self.checkpoint_last, self.run, self._objects(), self.dist,
                                            restart_on_change=self.restart_on_change, log=self.log)
                if resumed is not None:
                    self.progress, self.saved_at = resumed, resumed.update
            self.progress.record_device(device_name(self.device, self.dist.world_size))  # the checkpoints record it
            if self.dist.is_main:  # only once the run is known to start or to resume
                divergence.clear_record(self.out_dir)  # an earlier end as diverged is undone: this run ends on its own
                resolved = {"model": self.run.model_config, "train": plain_dict(self.cfg),
                            "decode": self.run.decode_config}
                atomic_write_text(self.out_dir / "config.resolved.yaml",
                                  yaml.safe_dump(resolved, sort_keys=False, allow_unicode=True))
            with stop_signal_handlers(self.request_stop):
                try:
                    return self._train_loop()
                except TrainingDiverged as exc:
                    if self.on_divergence != "stop":
                        raise
                    return self._stop_diverged(exc)
                finally:
                    self._tensorboard.close()

    # ------------------------------------------------------------------ loop
    def _train_loop(self) -> TrainResult:
        bar = self._progress_bar()
        try:
            return self._train_updates(bar)
        finally:
            bar.close()

    def _train_updates(self, bar: Any) -> TrainResult:
        cfg, progress = self.cfg, self.progress
        started = self._started = time.monotonic() - progress.elapsed
        interval, first = Interval(), progress.update
        reason = self._stop_reason(started)
        while not reason:
            for group in _chunks(iter(self.sampler), cfg.update_freq):
                grad_norm, tokens, loss = self._train_step(group)
                if loss is not None:  # non-finite: skipped
                    self._skipped_update(loss, grad_norm)
                    reason = self._stop_reason(started)
                    if reason:
                        break
                    continue
                progress.nonfinite_run = 0
                progress.update += 1
                interval.target_tokens += tokens
                bar.update(1)
                if progress.update % cfg.log_interval == 0 or early_line(progress.update - first, cfg.log_interval):
                    self._log_train(interval, grad_norm, started, row=progress.update % cfg.log_interval == 0)
                reason = self._stop_reason(started)
                if reason == "signal":
                    break
                due_validate = bool(cfg.validate_interval_updates) and progress.update % cfg.validate_interval_updates == 0
                due_save = bool(cfg.save_interval_updates) and progress.update % cfg.save_interval_updates == 0
                if due_validate or due_save:
                    paused = time.monotonic()
                    reason = self._validate_and_save(numbered=due_save, started=started) or reason
                    interval.pause(time.monotonic() - paused)
                if reason:
                    break
            else:  # the epoch ran to its end
                paused = time.monotonic()
                reason = self._validate_and_save(numbered=True, started=started) or self._stop_reason(started)
                interval.pause(time.monotonic() - paused)
        if reason == "signal":
            progress.elapsed = time.monotonic() - started
            self._save(numbered=False, metrics=None)
            self.log(f"stopped by signal at update {progress.update}; wrote {self.checkpoint_last}")
            return TrainResult("interrupted", "signal", progress.update, progress.best, progress.last_metrics)
        if self.saved_at != progress.update:
            self._validate_and_save(numbered=True, started=started)
        if self.valid_data is not None and progress.best is None:
            raise TrainingDiverged(
                f"every validation gave a non-finite valid_{self.cfg.best_metric} (update {progress.update})",
                progress.update, f"no {self.out_dir / 'checkpoint_best.pt'} written", "lower train.lr or set train.clip_norm")
        if self.dist.is_main:
            restore_best_checkpoint(self.out_dir, progress.kept, self.cfg.best_metric, log=self.log)
            drop_copies_of_last(self.out_dir)
        self.log(f"finished: {reason} at update {progress.update}"
                 + (f", best {cfg.best_metric} {progress.best:.4f}" if progress.best is not None else ""))
        return TrainResult("finished", reason, progress.update, progress.best, progress.last_metrics)

    def _stop_reason(self, started: float) -> str:
        """"signal", "max_updates", "max_epochs", "max_minutes" or "" (go on).

        Signals and the clock are agreed by all ranks (one small all-reduce per call in
        DDP), so every rank stops after the same update."""
        cfg = self.cfg
        signal_stop = self._signal is not None
        time_stop = bool(cfg.max_minutes) and time.monotonic() - started >= cfg.max_minutes * 60
        if self.dist.enabled:
            flags = torch.tensor([float(signal_stop), float(time_stop)], device=self._collective_device())
            all_reduce_sum(flags, self.dist)
            signal_stop, time_stop = (value > 0 for value in flags.tolist())
        if signal_stop:
            return "signal"
        if cfg.max_updates and self.progress.update >= cfg.max_updates:
            return "max_updates"
        if cfg.max_epochs and self.sampler.epoch > cfg.max_epochs:
            return "max_epochs"
        return "max_minutes" if time_stop else ""

    def _stop_diverged(self, exc: TrainingDiverged) -> TrainResult:
        """``on_divergence="stop"``: end the run as diverged (:mod:`nmtmodels.training.divergence`):
        the best validated model, else the model at the stop, as ``checkpoint_best.pt``, marked;
        ``exc`` raised after all when that model's parameters are not finite."""
        progress = self.progress
        progress.elapsed = time.monotonic() - self._started
        state = None
        if not divergence.has_best(self.out_dir, progress.kept):
            if not divergence.finite_parameters(self.model):
                raise exc
            self.seen_target_tokens()
            state = checkpoint_state(progress, self.run, self._objects(), self.dist)  # collective: every rank calls it
        if self.dist.is_main:
            if state is None:
                restore_best_checkpoint(self.out_dir, progress.kept, self.cfg.best_metric, log=self.log)
            last = progress.metrics_history[-1] if progress.metrics_history else {}
            if str(last.get("update")) != str(progress.update):  # the last row: where the run stopped
                self._write_metrics({"update": progress.update, "epoch": self.sampler.epoch, "elapsed": progress.elapsed,
                                     "target_tokens": self.seen_target_tokens()})
            divergence.end_run(self.out_dir, exc, state, self.log)
        return TrainResult("diverged", "diverged", progress.update, progress.best, progress.last_metrics)

    def _collective_device(self) -> torch.device:
        return self.device if self.device.type == "cuda" else torch.device("cpu")

    def _skipped_update(self, loss: float, grad_norm: Tensor) -> None:
        """Count a skipped non-finite update; TrainingDiverged after too many in a row."""
        progress = self.progress
        progress.nonfinite_run += 1
        progress.nonfinite_total += 1
        limit = self.cfg.max_nonfinite_updates
        if self.dist.is_main:
            self.log(f"warning: update {progress.update + 1} skipped: non-finite loss ({loss:.4g} per token on rank "
                     f"{self.dist.rank}) or gradient norm ({float(grad_norm):.4g}); {progress.nonfinite_run} in a row "
                     f"(train.max_nonfinite_updates: {limit})")
        if progress.nonfinite_run > limit:
            raise TrainingDiverged(
                f"{progress.nonfinite_run} consecutive updates after update {progress.update} had a "
                f"non-finite loss or gradient (train.max_nonfinite_updates: {limit})", progress.update, self._saved_note())

    def _saved_note(self) -> str:
        return f"{self.checkpoint_last} (update {self.saved_at}) is left as it was" if self.saved_at >= 0 else "nothing was saved"

    def _train_step(self, group: Sequence[np.ndarray]) -> tuple[Tensor, int, float | None]:
        """One optimizer update over the batches ``group`` (gradient accumulation).

        Returns (gradient norm, this rank's target tokens, None); when the loss or the
        gradient norm is not finite on some rank, the step is skipped and the third item is
        this rank's loss per target token instead (docs/training.md, "Non-finite updates")."""
        batches = [self._collate(self.train_data, indices) for indices in group]
        local_tokens = sum(batch.num_target_tokens for batch in batches)
        if self.dist.enabled:
            total = all_reduce_sum(torch.tensor(float(local_tokens), device=self._collective_device()), self.dist)
            scale = self.dist.world_size / total.to(self.device)  # DDP averages gradients over ranks
        else:
            scale = 1.0 / local_tokens
        self.net.train()
        loss_total: Tensor | None = None
        nll_total: Tensor | None = None
        for i, batch in enumerate(batches):
            batch = batch.to(self.device)
            last = i == len(batches) - 1
            sync = contextlib.nullcontext() if last or not self.dist.enabled else self.net.no_sync()
            with sync:
                begin_step(self.cfg.compile, self.device)
                with self._autocast:
                    states = self.forward(batch, features_only=True)
                    loss, nll = label_smoothed_nll_loss(states, self.model.output_layer, batch.tgt_out, self.cfg.label_smoothing)
                (loss * scale).backward()
            loss = loss.detach()
            loss_total = loss if loss_total is None else loss_total + loss
            nll_total = nll if nll_total is None else nll_total + nll
        if self.cfg.clip_norm > 0:
            grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip_norm)
        else:
            grad_norm = torch.nn.utils.get_total_norm([p.grad for p in self.model.parameters() if p.grad is not None])
        # DDP has all-reduced the gradients, so their norm agrees on every rank; the loss is local.
        bad = torch.logical_not(torch.isfinite(loss_total.float()) & torch.isfinite(grad_norm.float()))
        if self.dist.enabled:
            bad = all_reduce_sum(bad.float().to(self._collective_device()), self.dist) > 0
        if bool(bad):
            self.optimizer.zero_grad(set_to_none=True)
            return grad_norm, local_tokens, float(loss_total) / max(local_tokens, 1)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self._loss_sum = loss_total if self._loss_sum is None else self._loss_sum + loss_total
        self._nll_sum = nll_total if self._nll_sum is None else self._nll_sum + nll_total
        self._pending_tokens = self._pending_tokens + (total if self.dist.enabled else local_tokens)
        return grad_norm, local_tokens, None

    def seen_target_tokens(self) -> int:
        """All ranks' target tokens over the updates made so far (skipped updates not counted)."""
        pending = self._pending_tokens
        self.progress.target_tokens += int(pending.item()) if isinstance(pending, Tensor) else int(pending)
        self._pending_tokens = 0
        return self.progress.target_tokens

    def _collate(self, data: ParallelDataset, indices: np.ndarray | Sequence[int]) -> Batch:
        """The batch of ``indices``, padded to the shape buckets of ``pad_to_multiple`` and
        ``pad_rows_to_multiple`` (no change to its loss; :func:`nmtmodels.data.pad_to_buckets`)."""
        batch = data.collate(indices)
        if self.cfg.pad_to_multiple > 1 or self.cfg.pad_rows_to_multiple > 1:
            batch = pad_to_buckets(batch, self.cfg.pad_to_multiple, self.cfg.pad_rows_to_multiple, data.extra_pads)
        return batch

    # ------------------------------------------------------------------ logging
    def _log_train(self, interval: Interval, grad_norm: Tensor | None, started: float, row: bool = True) -> None:
        """Log the training line of the updates since the last row; with ``row``, also write it
        to metrics.csv (and TensorBoard) and start the next interval (an early line does not)."""
        sums = torch.stack([self._loss_sum, self._nll_sum]).double().cpu()
        counts = torch.tensor([float(interval.target_tokens)], dtype=torch.float64)
        totals = torch.cat([sums, counts])
        if self.dist.enabled:
            totals = totals.to(self._collective_device())
            all_reduce_sum(totals, self.dist)
            totals = totals.cpu()
        loss_sum, nll_sum, tokens = totals.tolist()
        seconds = interval.seconds()
        values = {
            "update": self.progress.update,
            "epoch": self.sampler.epoch,
            "loss": loss_sum / tokens,
            "nll": nll_sum / tokens,
            "lr": self.optimizer.param_groups[0]["lr"],
            "tokens_per_s": tokens / seconds if seconds > 0 else float("nan"),
            "grad_norm": float(grad_norm) if grad_norm is not None else float("nan"),
            "elapsed": time.monotonic() - started,
            "target_tokens": self.seen_target_tokens(),
        }
        if self.dist.is_main:
            self.log(train_line(values, self.cfg.max_updates, self.cfg.max_minutes))
        # all-reduced, as the dev loss is broadcast: every rank stops together
        check_loss("training loss", values["loss"], len(self.run.tgt_vocab), self.progress.update, self._saved_note())
        if row:
            self._loss_sum = self._nll_sum = None
            interval.reset()
            if self.dist.is_main:
                self._write_metrics(values)

    def _write_metrics(self, row: dict[str, Any]) -> None:
        append_metrics(self.out_dir / "metrics.csv", row, self.progress.metrics_history)
        if self.cfg.tensorboard:
            self._tensorboard.add(row, self.progress.update)

    def _progress_bar(self):
        return tqdm(total=self.cfg.max_updates or None, initial=self.progress.update, unit="upd", dynamic_ncols=True,
                    disable=not (self.dist.is_main and sys.stderr.isatty()))

    # ------------------------------------------------------------------ validation
    @torch.no_grad()
    def validate(self) -> dict[str, float]:
        """Dev-set loss and nll per target token (and BLEU with ``valid_bleu``), on rank 0,
        shared with every rank."""
        metrics: dict[str, float] = {}
        if self.dist.is_main and self.valid_data is not None:
            self.model.eval()
            sampler = BucketBatchSampler(self.valid_data, self.cfg.valid_max_tokens or self.cfg.max_tokens,
                                         unit=self.cfg.batch_unit, shuffle=False)
            loss_sum = torch.zeros((), dtype=torch.float64, device=self.device)
            nll_sum = torch.zeros((), dtype=torch.float64, device=self.device)
            tokens = 0
            for indices in sampler.batches():
                batch = self._collate(self.valid_data, indices)
                tokens += batch.num_target_tokens
                batch = batch.to(self.device)
                begin_step(self.cfg.compile, self.device)
                with self._autocast:
                    states = self.valid_forward(batch, features_only=True)
                    loss, nll = label_smoothed_nll_loss(states, self.model.output_layer, batch.tgt_out, self.cfg.label_smoothing)
                loss_sum += loss
                nll_sum += nll
            metrics = {"valid_loss": float(loss_sum) / tokens, "valid_nll": float(nll_sum) / tokens}
            if self.cfg.valid_bleu and self.bleu_fn is not None:
                metrics["valid_bleu"] = float(self.bleu_fn(self.model))
            self.model.train()
        return broadcast_object(metrics, self.dist)

    def _metric_value(self, metrics: dict[str, float]) -> float | None:
        key = {"bleu": "valid_bleu", "loss": "valid_loss", "nll": "valid_nll"}[self.cfg.best_metric]
        return metrics.get(key)

    def _better(self, value: float, than: float | None) -> bool:
        if than is None or not math.isfinite(than):  # a NaN best (older runs) is beaten by anything
            return True
        return value > than if self.cfg.best_metric == "bleu" else value < than

    def _validate_and_save(self, *, numbered: bool, started: float) -> str:
        """Validate, update best / patience, save; returns "early_stop" when patience ran out."""
        metrics = self.validate() if self.valid_data is not None else {}
        progress = self.progress
        progress.last_metrics = metrics
        value = self._metric_value(metrics)
        validated = value is not None
        if validated and not math.isfinite(value):
            if self.dist.is_main:
                self.log(f"warning: valid_{self.cfg.best_metric} is {value} at update {progress.update}; "
                         "this checkpoint cannot be the best")
            value = None
        improved = value is not None and self._better(value, progress.best)
        if validated:
            if improved:
                progress.best, progress.bad_validations = value, 0
            else:
                progress.bad_validations += 1
        progress.elapsed = time.monotonic() - started
        if metrics and self.dist.is_main:
            row = {"update": progress.update, "epoch": self.sampler.epoch, "elapsed": progress.elapsed,
                   "target_tokens": self.seen_target_tokens(), **metrics}
            self.log(valid_line(progress.update, metrics, improved))
            self._write_metrics(row)
        check_loss("dev loss", metrics.get("valid_loss"), len(self.run.tgt_vocab), progress.update, self._saved_note())
        self._save(numbered=numbered, metrics=metrics, improved=improved, value=value)
        if self.cfg.patience and progress.bad_validations >= self.cfg.patience:
            self.log(f"early stop: no {self.cfg.best_metric} improvement in {progress.bad_validations} validations")
            return "early_stop"
        return ""

    # ------------------------------------------------------------------ checkpoints
    def _objects(self) -> TrainingObjects:
        return TrainingObjects(self.model, self.optimizer, self.scheduler, self.sampler)

    def _save(self, *, numbered: bool, metrics: dict[str, float] | None, improved: bool = False,
              value: float | None = None) -> None:
        progress = self.progress
        if numbered:
            progress.kept = [k for k in progress.kept if k["update"] != progress.update] + [
                {"update": progress.update, "metric": value}]
        doomed = prune_list(progress.kept, self.cfg)
        progress.kept = [k for k in progress.kept if k not in doomed]
        self.seen_target_tokens()  # progress.target_tokens up to date
        state = checkpoint_state(progress, self.run, self._objects(), self.dist)  # collective: every rank calls it
        self.saved_at = progress.update
        if not self.dist.is_main:
            return
        # the best (without the resume state) and the numbered copy first: checkpoint_last.pt never records
        # files that are not on disk; a numbered copy that keep_last / keep_best would prune at once is never written
        if improved:
            save_best_checkpoint(self.out_dir, state)
        copies = [self.out_dir / f"checkpoint_{progress.update}.pt"] if numbered and any(
            k["update"] == progress.update for k in progress.kept) else []
        save_checkpoint(self.checkpoint_last, state, copies=copies)
        for entry in doomed:
            with contextlib.suppress(FileNotFoundError):
                (self.out_dir / f"checkpoint_{entry['update']}.pt").unlink()


def _chunks(iterator: Iterator[np.ndarray], size: int) -> Iterator[list[np.ndarray]]:
    """Groups of ``size`` items (the last may be shorter), never reading past them: the sampler position stays exact."""
    while group := list(itertools.islice(iterator, size)):
        yield group
        if len(group) < size:
            return

