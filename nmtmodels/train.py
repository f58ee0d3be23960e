"""The trainer: label-smoothed cross-entropy, Adam with inverse-sqrt warm-up, gradient
accumulation, bf16 autocast, DDP, checkpoints with exact resume, validation, early stopping.

Semantics worth knowing:

* Loss: label-smoothed cross-entropy (Szegedy et al. 2016; torch's ``label_smoothing``
  definition: the target gets ``1 - eps + eps/V``, every other class ``eps/V``), summed
  over non-pad target tokens.  The gradient of an update is that sum divided by the
  number of target tokens of the whole update (all accumulated batches on all ranks),
  so ``R`` ranks x ``u`` accumulation steps equal one process with ``R*u`` steps.
  Reported ``loss``/``nll`` are per target token, in nats (perplexity = exp(nll)).
  The loss takes the model's decoder states (``forward(batch, features_only=True)``) and
  applies the output layer itself, a chunk of rows at a time, so the (tokens x vocabulary)
  logits are never held in memory (:func:`nmtmodels.loss.label_smoothed_nll_loss`).
* Learning rate for the ``u``-th update (1-based): ``init + (peak - init) * u / warmup``
  while ``u <= warmup``, then ``peak * sqrt(warmup / u)`` (fairseq ``inverse_sqrt``;
  with ``init = 0`` this is ``peak * min(u / warmup, sqrt(warmup / u))``).
* Optimizer: AdamW (decoupled weight decay as in fairseq's Adam; with ``weight_decay=0``
  it is Adam), betas (0.9, 0.98), eps 1e-9.  Weight decay applies to weight matrices and
  embeddings only: parameters with fewer than two dimensions (biases, LayerNorm gains and
  biases, scalar gates) are in a second parameter group without decay, for every model
  family (fairseq's and Hugging Face's convention; the L2 regularisation of the char2word
  paper is on the weights).  See :func:`build_optimizer`.
* Non-finite updates: when the loss or the gradient norm of an update is NaN or infinite
  (on any rank), the update is skipped: no optimizer or schedule step, the update counter
  does not advance, its batches are consumed.  More than ``max_nonfinite_updates``
  consecutive skipped updates stop training with :class:`TrainingDiverged` (the CLI exits
  2 with one line); the last saved checkpoint is left as it was.  A validation whose
  ``best_metric`` is NaN or infinite is never "best" (it counts against ``patience``), and a
  run whose every validation was non-finite ends with :class:`TrainingDiverged` instead of
  writing ``checkpoint_best.pt``.
* Checkpoints in ``out_dir``: ``checkpoint_last.pt`` (every save), ``checkpoint_{update}.pt``
  (every ``save_interval_updates`` and at each epoch end), ``checkpoint_best.pt`` (best
  validation ``best_metric``); numbered files are pruned to the ``keep_last`` newest plus
  the ``keep_best`` best.  Every save is preceded by a validation (as in fairseq).  A save
  writes ``checkpoint_best.pt`` and the numbered file before it replaces
  ``checkpoint_last.pt`` (each atomically), so a failed save (full disk) never leaves a
  ``checkpoint_last.pt`` whose recorded best is not on disk.
* Lock: :meth:`Trainer.train` holds an exclusive ``fcntl.flock`` on ``out_dir/.nmt-train.lock``
  (rank 0), so a second trainer on the same directory stops with :class:`OutputDirLocked`
  instead of interleaving checkpoints.  The lock is released when the process ends, even
  by ``kill -9``; the file stays.
* ``config.resolved.yaml`` in ``out_dir``: the model, train and decode settings of the run,
  written when training starts or resumes (not by a run that stops with an error first).
* Resume: when ``checkpoint_last.pt`` exists, model, optimizer, scheduler, every rank's
  RNG states, the batch sampler position, counters and the early-stopping state are
  restored, so an interrupted run ends with the same parameters as an uninterrupted one.
  Only a checkpoint of the same run is resumed: same model config, vocabularies, training
  data (:meth:`ParallelDataset.fingerprint`), batches, initial parameters
  (``init_fingerprint``) and ``train`` settings, except the limits and bookkeeping in
  :data:`CHANGEABLE_ON_RESUME` (so a finished run can be extended by raising
  ``max_updates``). Otherwise the trainer stops with an error naming what changed, or with
  ``restart_on_change`` deletes the old run's checkpoints and metrics and starts over (what
  a workflow wants when a job reruns because its inputs or parameters changed: the old
  checkpoint would otherwise be passed off as the new run's model).
* SIGTERM / SIGUSR1: the current update finishes, ``checkpoint_last.pt`` is written and
  :meth:`Trainer.train` returns status "interrupted"; the CLI then exits with
  :data:`EXIT_REQUEUE` (75, EX_TEMPFAIL) so a scheduler can requeue the job.
* ``max_minutes``: wall-clock training budget summed over resumed runs; when spent the
  run validates, saves and finishes normally.
"""
from __future__ import annotations

import contextlib
import csv
import errno
import math
import os
import random
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import yaml
from torch import Tensor, nn

from nmtmodels.batch import Batch
from nmtmodels.checkpoint import (
    copy_checkpoint,
    load_checkpoint,
    numbered_checkpoints,
    save_checkpoint,
)
from nmtmodels.compiling import TrainCompileMode, begin_step, compile_module, pad_to_buckets
from nmtmodels.config import ConfigError, plain_dict, to_dict
from nmtmodels.data import BucketBatchSampler, ParallelDataset
from nmtmodels.distributed import (
    DistributedContext,
    all_gather_object,
    all_reduce_sum,
    barrier,
    broadcast_object,
)
from nmtmodels.loss import label_smoothed_nll_loss
from nmtmodels.models.base import Seq2SeqModel
from nmtmodels.modules.attention import avoid_per_shape_attention_kernels
from nmtmodels.textio import atomic_output, atomic_write_text
from nmtmodels.vocab import Vocabulary

try:
    import fcntl
except ImportError:  # not POSIX: no output-directory lock
    fcntl = None  # type: ignore[assignment]

EXIT_REQUEUE = 75  # sysexits.h EX_TEMPFAIL: interrupted by SIGTERM/SIGUSR1, resume by rerunning
# ``train`` settings that may differ between a checkpoint and the run resuming it: limits,
# checkpointing, validation and logging. Every other setting shapes the parameters.
CHANGEABLE_ON_RESUME = frozenset({
    "max_updates", "max_epochs", "max_minutes", "save_interval_updates", "validate_interval_updates",
    "valid_max_tokens", "keep_last", "keep_best", "valid_bleu", "patience", "num_threads", "log_interval",
    "tensorboard", "max_nonfinite_updates", "compile", "pad_to_multiple", "pad_rows_to_multiple",
})
LOCK_NAME = ".nmt-train.lock"


class TrainingError(RuntimeError):
    """Training cannot go on; the message (one line) says why and what to do."""


class TrainingDiverged(TrainingError):
    """Too many consecutive non-finite updates, or no finite validation at all."""


class OutputDirLocked(TrainingError):
    """Another trainer holds the lock of the output directory."""

METRIC_COLUMNS = ("update", "epoch", "loss", "nll", "lr", "tokens_per_s", "grad_norm",
                  "valid_loss", "valid_nll", "valid_bleu", "elapsed")


@dataclass
class TrainConfig:
    """Optimisation, batching, checkpointing and logging settings (the ``train:`` section).

    Zero disables ``max_updates``, ``max_epochs``, ``max_minutes``, the two intervals
    (then only epoch ends count), ``clip_norm``, ``patience`` and ``num_threads``
    (torch's default); ``keep_last=-1`` keeps every numbered checkpoint.
    ``max_nonfinite_updates``: how many consecutive updates with a NaN/inf loss or gradient
    are skipped before training stops as diverged (0: stop at the first, as fairseq does
    without a loss scaler).  ``weight_decay`` spares parameters with fewer than two
    dimensions (biases, norms; module doc).  ``compile`` runs the model's forward pass
    through ``torch.compile`` (``reduce-overhead``: with CUDA graphs), and
    ``pad_to_multiple`` / ``pad_rows_to_multiple`` pad every training and validation batch's
    lengths and rows to multiples, so that compiled graphs are reused; neither changes the
    loss or the gradient (:mod:`nmtmodels.compiling`).
    """

    max_tokens: int = 4096
    max_sentences: int | None = None
    valid_max_tokens: int | None = None
    batch_unit: Literal["tokens", "chars"] = "tokens"
    too_long: Literal["skip", "error"] = "skip"
    update_freq: int = 1
    lr: float = 5e-4
    warmup_updates: int = 4000
    warmup_init_lr: float = 0.0
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-9
    weight_decay: float = 0.0
    clip_norm: float = 0.0
    label_smoothing: float = 0.1
    max_updates: int = 0
    max_epochs: int = 0
    max_minutes: float = 0.0
    seed: int = 1
    save_interval_updates: int = 0
    validate_interval_updates: int = 0
    keep_last: int = 5
    keep_best: int = 1
    valid_bleu: bool = False
    best_metric: Literal["bleu", "loss", "nll"] = "loss"
    patience: int = 0
    amp: Literal["bf16", "none"] = "none"
    num_threads: int = 0
    log_interval: int = 100
    tensorboard: bool = False
    max_nonfinite_updates: int = 10
    compile: TrainCompileMode = "none"
    pad_to_multiple: int = 1
    pad_rows_to_multiple: int = 1

    def validate(self, where: str = "train") -> None:
        positive = ("max_tokens", "update_freq", "warmup_updates", "log_interval", "pad_to_multiple",
                    "pad_rows_to_multiple")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be >= 1, got {getattr(self, name)}")
        non_negative = ("lr", "warmup_init_lr", "weight_decay", "clip_norm", "max_updates", "max_epochs",
                        "max_minutes", "save_interval_updates", "validate_interval_updates", "keep_best",
                        "patience", "num_threads", "max_nonfinite_updates")
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ConfigError(f"{where}.{name}: must be >= 0, got {getattr(self, name)}")
        for name in ("max_sentences", "valid_max_tokens"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be >= 1, got {getattr(self, name)}")
        for name in ("lr", "warmup_init_lr", "weight_decay", "clip_norm", "max_minutes", "adam_eps", "label_smoothing"):
            if not math.isfinite(getattr(self, name)):
                raise ConfigError(f"{where}.{name}: must be a finite number, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ConfigError(f"{where}.lr: must be > 0, got {self.lr}")
        if self.warmup_init_lr > self.lr:
            raise ConfigError(f"{where}.warmup_init_lr: must not exceed lr ({self.lr}), got {self.warmup_init_lr}")
        if self.keep_last < -1:
            raise ConfigError(f"{where}.keep_last: must be >= -1 (-1 keeps all), got {self.keep_last}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ConfigError(f"{where}.label_smoothing: must be in [0, 1), got {self.label_smoothing}")
        if len(self.adam_betas) != 2 or not all(0.0 <= b < 1.0 for b in self.adam_betas):
            raise ConfigError(f"{where}.adam_betas: expected two values in [0, 1), got {list(self.adam_betas)}")
        if self.adam_eps <= 0:
            raise ConfigError(f"{where}.adam_eps: must be > 0, got {self.adam_eps}")
        if self.best_metric == "bleu" and not self.valid_bleu:
            raise ConfigError(f"{where}.best_metric: 'bleu' needs {where}.valid_bleu: true")
        if not (self.max_updates or self.max_epochs or self.max_minutes):
            raise ConfigError(f"{where}: set at least one of max_updates, max_epochs, max_minutes")


# ---------------------------------------------------------------------- optimizer / schedule
def build_optimizer(parameters: nn.Module | Iterable[Tensor], cfg: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW with ``cfg``'s lr, betas, eps and weight decay; torch's fused kernel on CUDA and
    CPU (faster than the default per-parameter loop; the timings: benchmarks/README.md).

    With ``weight_decay > 0`` the parameters form two groups: those with two or more
    dimensions (weight matrices, embeddings) decay, those with fewer (biases, LayerNorm
    gains and biases, scalars) do not, as in fairseq and Hugging Face Transformers: decay
    pulls a LayerNorm gain towards 0, not towards its neutral value 1, and the char2word
    paper's L2 term is on the weights.  AdamW's decoupled decay multiplies a decayed
    parameter by ``1 - lr * weight_decay`` at each step (Loshchilov & Hutter 2019, Alg. 2
    line 12).  With ``weight_decay == 0`` there is one group.
    """
    params = [p for p in (parameters.parameters() if isinstance(parameters, nn.Module) else parameters)
              if p.requires_grad]
    fused = {"fused": True} if device.type in ("cuda", "cpu") else {}
    groups: list[dict[str, Any]] | list[Tensor] = params
    if cfg.weight_decay > 0:
        decay = [p for p in params if p.ndim >= 2]
        no_decay = [p for p in params if p.ndim < 2]
        groups = [g for g in ({"params": decay, "weight_decay": cfg.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}) if g["params"]]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=tuple(cfg.adam_betas), eps=cfg.adam_eps,
                             weight_decay=cfg.weight_decay, **fused)


@dataclass
class InverseSqrtSchedule:
    """Multiplier for ``torch.optim.lr_scheduler.LambdaLR`` (base lr = ``peak``).

    ``lr(u)`` is the learning rate of the ``u``-th update (1-based), see the module doc.
    """

    peak: float
    warmup: int
    init: float = 0.0

    def lr(self, update: int) -> float:
        if update <= self.warmup:
            return self.init + (self.peak - self.init) * update / self.warmup
        return self.peak * math.sqrt(self.warmup / update)

    def __call__(self, updates_done: int) -> float:
        return self.lr(updates_done + 1) / self.peak


# ---------------------------------------------------------------------- RNG state
def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def get_rng_state() -> dict[str, Any]:
    """Python, numpy and torch (CPU + CUDA) generator states, in checkpoint-safe types."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "gauss": float(gauss)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(_as_tuple(state["python"]))
    np_state = state["numpy"]
    np.random.set_state((np_state["kind"], np_state["keys"].numpy().astype(np.uint32), np_state["pos"],
                         np_state["has_gauss"], np_state["gauss"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _as_tuple(value: Any) -> Any:
    return tuple(_as_tuple(v) for v in value) if isinstance(value, (list, tuple)) else value


# ---------------------------------------------------------------------- trainer
@dataclass
class TrainResult:
    status: Literal["finished", "interrupted"]
    reason: str
    update: int
    best: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)


BleuFn = Callable[[Seq2SeqModel], float]


class Trainer:
    """Trains ``model`` on ``train_data``; see the module docstring.

    ``bleu_fn(model) -> BLEU`` scores the (unwrapped) model on the dev set; it is called
    at each validation when ``cfg.valid_bleu`` (see :func:`nmtmodels.inference.make_bleu_fn`).
    ``model_config`` (a dict) and the vocabularies go into every checkpoint.
    ``restart_on_change``: start over instead of failing when ``checkpoint_last.pt`` belongs
    to a different run (see the module docstring). ``init_fingerprint`` names the
    parameters the run starts from when they come from elsewhere (``nmt-train
    --init-from``); a checkpoint of a run started from other parameters is another run.
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
    ):
        if cfg.valid_bleu and bleu_fn is None:
            raise ConfigError("train.valid_bleu: no BLEU scorer was given (validation references missing?)")
        if valid_data is None and (cfg.patience or cfg.best_metric == "bleu"):
            raise ConfigError("train.patience / train.best_metric: need a validation set")
        if not train_data.has_target:
            raise ValueError("training data has no target side")
        self.cfg = cfg
        self.dist = dist or DistributedContext()
        self.device = torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.out_dir = Path(out_dir)
        self.train_data = train_data
        self.valid_data = valid_data
        self.model_config = model_config
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.bleu_fn = bleu_fn
        self.decode_config = decode_config
        self.restart_on_change = restart_on_change
        self.init_fingerprint = init_fingerprint
        self.data_fingerprint = train_data.fingerprint()
        self._log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
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
                                          num_replicas=self.dist.world_size, rank=self.dist.rank)
        if self.sampler.oversized and self.dist.is_main:
            self._log(f"warning: {self.sampler.oversized} training examples exceed max_tokens "
                      f"{cfg.max_tokens} on their own; each becomes a batch of one")
        self.update = 0
        self.elapsed = 0.0
        self.best: float | None = None
        self.bad_validations = 0
        self.nonfinite_run = 0  # consecutive skipped (non-finite) updates
        self.nonfinite_total = 0
        self.kept: list[dict[str, Any]] = []  # numbered checkpoints: {"update", "metric"}
        self.last_metrics: dict[str, float] = {}
        # Every metrics.csv row so far; kept in checkpoints so that a resumed run can
        # rewrite metrics.csv whole (a scheduler may delete a failed job's outputs).
        self.metrics_history: list[dict[str, str]] = []
        self._signal: int | None = None
        self._loss_sum: Tensor | None = None  # since the last log line, on the device
        self._nll_sum: Tensor | None = None
        self._writer = None
        self._saved_at = -1
        self._autocast = (torch.autocast("cuda", dtype=torch.bfloat16)
                          if cfg.amp == "bf16" and self.device.type == "cuda" else contextlib.nullcontext())

    # ------------------------------------------------------------------ public
    def request_stop(self, signum: int = signal.SIGTERM) -> None:
        """Finish the current update, save ``checkpoint_last.pt`` and return "interrupted"."""
        self._signal = signum

    @property
    def checkpoint_last(self) -> Path:
        return self.out_dir / "checkpoint_last.pt"

    def train(self) -> TrainResult:
        """Train until a limit, early stopping or a signal; resumes from ``checkpoint_last.pt``.

        OutputDirLocked when another trainer works in ``out_dir``; TrainingDiverged (module doc)."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with self._output_lock():
            if self.checkpoint_last.exists():
                self._resume_or_restart(self.checkpoint_last)
            if self.dist.is_main:  # only once the run is known to start or to resume
                resolved = {"model": self.model_config, "train": plain_dict(self.cfg), "decode": self.decode_config}
                atomic_write_text(self.out_dir / "config.resolved.yaml",
                                  yaml.safe_dump(resolved, sort_keys=False, allow_unicode=True))
            with self._signal_handlers():
                try:
                    return self._train_loop()
                finally:
                    if self._writer is not None:
                        self._writer.close()

    @contextlib.contextmanager
    def _output_lock(self) -> Iterator[None]:
        """Hold an exclusive flock on ``out_dir/.nmt-train.lock`` (rank 0) while training."""
        if not self.dist.is_main or fcntl is None:
            yield
            return
        path = self.out_dir / LOCK_NAME
        with open(path, "a+", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    # e.g. ENOLCK on a network file system without locks: train unguarded
                    self._log(f"warning: {path}: cannot lock ({exc.strerror}); make sure no other "
                              f"trainer writes to {self.out_dir}")
                    yield
                    return
                handle.seek(0)
                holder = handle.read().strip()
                raise OutputDirLocked(
                    f"{self.out_dir}: another nmt-train{f' (pid {holder})' if holder.isdigit() else ''} is training "
                    f"in this directory ({path} is locked); wait for it to end or use another --out-dir") from None
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            yield  # closing the file releases the lock

    # ------------------------------------------------------------------ loop
    def _train_loop(self) -> TrainResult:
        progress = self._progress_bar()
        try:
            return self._train_updates(progress)
        finally:
            progress.close()

    def _train_updates(self, progress: Any) -> TrainResult:
        cfg = self.cfg
        started = time.monotonic() - self.elapsed
        interval = _Interval()
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
                self.nonfinite_run = 0
                self.update += 1
                interval.target_tokens += tokens
                progress.update(1)
                if self.update % cfg.log_interval == 0:
                    self._log_train(interval, grad_norm, started)
                reason = self._stop_reason(started)
                if reason == "signal":
                    break
                due_validate = bool(cfg.validate_interval_updates) and self.update % cfg.validate_interval_updates == 0
                due_save = bool(cfg.save_interval_updates) and self.update % cfg.save_interval_updates == 0
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
            self.elapsed = time.monotonic() - started
            self._save(numbered=False, metrics=None)
            self._log(f"stopped by signal at update {self.update}; wrote {self.checkpoint_last}")
            return TrainResult("interrupted", "signal", self.update, self.best, self.last_metrics)
        if self._saved_at != self.update:
            self._validate_and_save(numbered=True, started=started)
        if self.valid_data is not None and self.best is None:
            raise TrainingDiverged(
                f"training diverged: every validation gave a non-finite valid_{self.cfg.best_metric} "
                f"(update {self.update}); no {self.out_dir / 'checkpoint_best.pt'} written; lower train.lr or set "
                "train.clip_norm")
        self._ensure_best_checkpoint()
        self._log(f"finished: {reason} at update {self.update}"
                  + (f", best {cfg.best_metric} {self.best:.4f}" if self.best is not None else ""))
        return TrainResult("finished", reason, self.update, self.best, self.last_metrics)

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
        if cfg.max_updates and self.update >= cfg.max_updates:
            return "max_updates"
        if cfg.max_epochs and self.sampler.epoch > cfg.max_epochs:
            return "max_epochs"
        return "max_minutes" if time_stop else ""

    def _collective_device(self) -> torch.device:
        return self.device if self.device.type == "cuda" else torch.device("cpu")

    def _skipped_update(self, loss: float, grad_norm: Tensor) -> None:
        """Count a skipped non-finite update; TrainingDiverged after too many in a row."""
        self.nonfinite_run += 1
        self.nonfinite_total += 1
        limit = self.cfg.max_nonfinite_updates
        if self.dist.is_main:
            self._log(f"warning: update {self.update + 1} skipped: non-finite loss ({loss:.4g} per token on rank "
                      f"{self.dist.rank}) or gradient norm ({float(grad_norm):.4g}); {self.nonfinite_run} in a row "
                      f"(train.max_nonfinite_updates: {limit})")
        if self.nonfinite_run > limit:
            saved = (f"{self.checkpoint_last} (update {self._saved_at}) is left as it was"
                     if self._saved_at >= 0 else "nothing was saved")
            raise TrainingDiverged(
                f"training diverged: {self.nonfinite_run} consecutive updates after update {self.update} had a "
                f"non-finite loss or gradient (train.max_nonfinite_updates: {limit}); {saved}; lower train.lr, "
                "set train.clip_norm or check the training data")

    def _train_step(self, group: Sequence[np.ndarray]) -> tuple[Tensor, int, float | None]:
        """One optimizer update over the batches ``group`` (gradient accumulation).

        Returns (gradient norm, this rank's target tokens, None); when the loss or the
        gradient norm is not finite on some rank, the step is skipped and the third item is
        this rank's loss per target token instead (module doc)."""
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
        return grad_norm, local_tokens, None

    def _collate(self, data: ParallelDataset, indices: np.ndarray | Sequence[int]) -> Batch:
        """The batch of ``indices``, padded to the shape buckets of ``pad_to_multiple`` and
        ``pad_rows_to_multiple`` (no change to its loss; :func:`nmtmodels.compiling.pad_to_buckets`)."""
        batch = data.collate(indices)
        if self.cfg.pad_to_multiple > 1 or self.cfg.pad_rows_to_multiple > 1:
            batch = pad_to_buckets(batch, self.cfg.pad_to_multiple, self.cfg.pad_rows_to_multiple, data.extra_pads)
        return batch

    # ------------------------------------------------------------------ logging
    def _log_train(self, interval: _Interval, grad_norm: Tensor | None, started: float) -> None:
        sums = torch.stack([self._loss_sum, self._nll_sum]).double().cpu()
        counts = torch.tensor([float(interval.target_tokens)], dtype=torch.float64)
        totals = torch.cat([sums, counts])
        if self.dist.enabled:
            totals = totals.to(self._collective_device())
            all_reduce_sum(totals, self.dist)
            totals = totals.cpu()
        loss_sum, nll_sum, tokens = totals.tolist()
        self._loss_sum = self._nll_sum = None
        seconds = interval.seconds()
        row = {
            "update": self.update,
            "epoch": self.sampler.epoch,
            "loss": loss_sum / tokens,
            "nll": nll_sum / tokens,
            "lr": self.optimizer.param_groups[0]["lr"],
            "tokens_per_s": tokens / seconds if seconds > 0 else float("nan"),
            "grad_norm": float(grad_norm) if grad_norm is not None else float("nan"),
            "elapsed": time.monotonic() - started,
        }
        interval.reset()
        if self.dist.is_main:
            self._log(f"update {row['update']} | epoch {row['epoch']} | loss {row['loss']:.4f} | nll {row['nll']:.4f} "
                      f"| lr {row['lr']:.3g} | tok/s {row['tokens_per_s']:.0f} | gnorm {row['grad_norm']:.3f} "
                      f"| elapsed {row['elapsed']:.0f}s")
            self._write_metrics(row)

    def _write_metrics(self, row: dict[str, Any]) -> None:
        formatted = {k: _fmt(row.get(k)) for k in METRIC_COLUMNS}
        self.metrics_history.append(formatted)
        path = self.out_dir / "metrics.csv"
        new = not path.exists() or path.stat().st_size == 0
        with open(path, "a", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=METRIC_COLUMNS)
            if new:
                writer.writeheader()
            writer.writerow(formatted)
        if self.cfg.tensorboard:
            if self._writer is None:
                from torch.utils.tensorboard import SummaryWriter

                self._writer = SummaryWriter(str(self.out_dir / "tensorboard"))
            for key, value in row.items():
                if key not in ("update", "epoch") and value is not None and not math.isnan(value):
                    self._writer.add_scalar(key, value, self.update)
            self._writer.flush()

    def _rewrite_metrics(self) -> None:
        """metrics.csv = the rows up to the resumed checkpoint (drops a killed run's tail,
        restores a file deleted after a failure)."""
        if not self.dist.is_main:
            return
        with atomic_output(self.out_dir / "metrics.csv") as handle:
            writer = csv.DictWriter(handle, fieldnames=METRIC_COLUMNS)
            writer.writeheader()
            writer.writerows(self.metrics_history)

    def _ensure_best_checkpoint(self) -> None:
        """checkpoint_best.pt exists at the end of training, even if it was deleted while the
        run was interrupted: it is restored from the best kept numbered checkpoint."""
        best_path = self.out_dir / "checkpoint_best.pt"
        if not self.dist.is_main or best_path.exists():
            return
        rated = [k for k in self.kept if k["metric"] is not None]
        sign = -1.0 if self.cfg.best_metric == "bleu" else 1.0
        if rated:
            best = min(rated, key=lambda k: (sign * k["metric"], -k["update"]))
            copy_checkpoint(self.out_dir / f"checkpoint_{best['update']}.pt", best_path)
        else:  # never validated: the last model is the best we know
            copy_checkpoint(self.checkpoint_last, best_path)

    def _progress_bar(self):
        from tqdm import tqdm

        return tqdm(total=self.cfg.max_updates or None, initial=self.update, unit="upd", dynamic_ncols=True,
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
        self.last_metrics = metrics
        value = self._metric_value(metrics)
        validated = value is not None
        if validated and not math.isfinite(value):
            if self.dist.is_main:
                self._log(f"warning: valid_{self.cfg.best_metric} is {value} at update {self.update}; "
                          "this checkpoint cannot be the best")
            value = None
        improved = value is not None and self._better(value, self.best)
        if validated:
            if improved:
                self.best, self.bad_validations = value, 0
            else:
                self.bad_validations += 1
        self.elapsed = time.monotonic() - started
        if metrics and self.dist.is_main:
            row = {"update": self.update, "epoch": self.sampler.epoch, "elapsed": self.elapsed, **metrics}
            self._log(f"valid at update {self.update}: " + " | ".join(f"{k} {v:.4f}" for k, v in metrics.items())
                      + (" (best)" if improved else ""))
            self._write_metrics(row)
        self._save(numbered=numbered, metrics=metrics, improved=improved, value=value)
        if self.cfg.patience and self.bad_validations >= self.cfg.patience:
            self._log(f"early stop: no {self.cfg.best_metric} improvement in {self.bad_validations} validations")
            return "early_stop"
        return ""

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint_state(self) -> dict[str, Any]:
        rng_states = all_gather_object(get_rng_state(), self.dist)
        return {
            "model_config": self.model_config,
            "model": self.model.state_dict(),
            "vocab": {
                "src": self.src_vocab.tokens,
                "tgt": self.tgt_vocab.tokens,
                "src_fingerprint": self.src_vocab.fingerprint(),
                "tgt_fingerprint": self.tgt_vocab.fingerprint(),
            },
            "train_config": to_dict(self.cfg),
            "decode_config": self.decode_config,
            "update": self.update,
            "metrics": self.last_metrics,
            "trainer": {
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "rng": rng_states,
                "sampler": self.sampler.state_dict(),
                "update": self.update,
                "data_fingerprint": self.data_fingerprint,
                "init_fingerprint": self.init_fingerprint,
                "metrics_history": self.metrics_history,
                "elapsed": self.elapsed,
                "best": self.best,
                "bad_validations": self.bad_validations,
                "nonfinite_run": self.nonfinite_run,
                "nonfinite_total": self.nonfinite_total,
                "kept": self.kept,
            },
        }

    def _save(self, *, numbered: bool, metrics: dict[str, float] | None, improved: bool = False,
              value: float | None = None) -> None:
        if numbered:
            self.kept = [k for k in self.kept if k["update"] != self.update] + [{"update": self.update, "metric": value}]
        doomed = self._prune_list()
        self.kept = [k for k in self.kept if k not in doomed]
        state = self._checkpoint_state()  # collective (RNG gather): every rank calls it
        self._saved_at = self.update
        if not self.dist.is_main:
            return
        # best and numbered copies first: checkpoint_last.pt never records files that are not on disk
        copies = [self.out_dir / "checkpoint_best.pt"] if improved else []
        if numbered:
            copies.append(self.out_dir / f"checkpoint_{self.update}.pt")
        save_checkpoint(self.checkpoint_last, state, copies=copies)
        for entry in doomed:
            with contextlib.suppress(FileNotFoundError):
                (self.out_dir / f"checkpoint_{entry['update']}.pt").unlink()

    def _prune_list(self) -> list[dict[str, Any]]:
        """Numbered checkpoints outside the ``keep_last`` newest and the ``keep_best`` best."""
        if self.cfg.keep_last < 0:
            return []
        newest = sorted(self.kept, key=lambda k: k["update"])[-self.cfg.keep_last:] if self.cfg.keep_last else []
        rated = [k for k in self.kept if k["metric"] is not None]
        sign = -1.0 if self.cfg.best_metric == "bleu" else 1.0
        best = sorted(rated, key=lambda k: (sign * k["metric"], -k["update"]))[: self.cfg.keep_best]
        keep = {k["update"] for k in newest} | {k["update"] for k in best}
        return [k for k in self.kept if k["update"] not in keep]

    def _resume_or_restart(self, path: Path) -> None:
        state = load_checkpoint(path, map_location="cpu")
        changes = self._changes_since(state)
        if not changes:
            self._resume(path, state)
            return
        if not self.restart_on_change:
            raise ConfigError(f"{path} belongs to a different run: {'; '.join(changes)}. Resuming it would not "
                              "train this run's model; use a new out_dir, or start over (nmt-train --restart-on-change)")
        barrier(self.dist)  # every rank has read the checkpoint before it is deleted
        if self.dist.is_main:
            self._log(f"starting over: {path} belongs to a different run ({'; '.join(changes)}); "
                      "deleting its checkpoints and metrics")
            self._delete_previous_run()
        barrier(self.dist)

    def _changes_since(self, state: dict[str, Any]) -> list[str]:
        """What differs between the run that wrote ``state`` and this one (empty: the same run)."""
        changes = [f"model.{k} was {state['model_config'].get(k)!r} and is {self.model_config.get(k)!r} now"
                   for k in sorted(set(state["model_config"]) | set(self.model_config))
                   if state["model_config"].get(k) != self.model_config.get(k)]
        changes += [f"the {side} vocabulary differs" for side, vocab in (("src", self.src_vocab), ("tgt", self.tgt_vocab))
                    if state["vocab"][f"{side}_fingerprint"] != vocab.fingerprint()]
        then, now = state.get("train_config", {}), to_dict(self.cfg)
        changes += [f"train.{k} was {then.get(k)!r} and is {now.get(k)!r} now" for k in sorted(set(then) | set(now))
                    if k not in CHANGEABLE_ON_RESUME and then.get(k) != now.get(k)]
        saved_data = state["trainer"].get("data_fingerprint")
        if saved_data is not None and saved_data != self.data_fingerprint:
            changes.append("the training data differs")
        if state["trainer"].get("init_fingerprint") != self.init_fingerprint:
            changes.append("the initial parameters (--init-from) differ")
        saved_groups = [len(g["params"]) for g in state["trainer"]["optimizer"].get("param_groups", [])]
        groups = [len(g["params"]) for g in self.optimizer.param_groups]
        if saved_groups != groups:  # e.g. a run from before weight decay spared biases and norms
            changes.append(f"the optimizer's parameter groups were {saved_groups} parameters and are {groups} now")
        if not changes:  # the batch order can only be compared on the same data and settings
            changes += self.sampler.mismatches(state["trainer"]["sampler"])
        return changes

    def _delete_previous_run(self) -> None:
        for path in [self.checkpoint_last, self.out_dir / "checkpoint_best.pt", self.out_dir / "metrics.csv",
                     *(path for _, path in numbered_checkpoints(self.out_dir))]:
            path.unlink(missing_ok=True)
        shutil.rmtree(self.out_dir / "tensorboard", ignore_errors=True)

    def _resume(self, path: Path, state: dict[str, Any]) -> None:
        trainer = state["trainer"]
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(trainer["optimizer"])
        self.scheduler.load_state_dict(trainer["scheduler"])
        self.sampler.load_state_dict(trainer["sampler"])
        rng = trainer["rng"]
        set_rng_state(rng[self.dist.rank] if len(rng) == self.dist.world_size else rng[0])
        self.update = int(trainer["update"])
        self.elapsed = float(trainer["elapsed"])
        self.best = trainer["best"]
        self.bad_validations = int(trainer["bad_validations"])
        self.nonfinite_run = int(trainer.get("nonfinite_run", 0))  # absent in older checkpoints
        self.nonfinite_total = int(trainer.get("nonfinite_total", 0))
        self.kept = [dict(k) for k in trainer["kept"]]
        self.last_metrics = dict(state.get("metrics") or {})
        self.metrics_history = [dict(row) for row in trainer.get("metrics_history", [])]
        self._saved_at = self.update
        self._rewrite_metrics()
        if self.dist.is_main:
            self._log(f"resumed from {path} at update {self.update} (epoch {self.sampler.epoch}, "
                      f"batch {self.sampler.position})")

    @contextlib.contextmanager
    def _signal_handlers(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        wanted = [signal.SIGTERM] + ([signal.SIGUSR1] if hasattr(signal, "SIGUSR1") else [])
        previous = {sig: signal.signal(sig, lambda signum, frame: self.request_stop(signum)) for sig in wanted}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


class _Interval:
    """Target tokens and training seconds since the last log line (validation time excluded)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.start = time.monotonic()
        self.paused = 0.0
        self.target_tokens = 0

    def pause(self, seconds: float) -> None:
        self.paused += seconds

    def seconds(self) -> float:
        return time.monotonic() - self.start - self.paused


def _chunks(iterator: Iterator[np.ndarray], size: int) -> Iterator[list[np.ndarray]]:
    """Consecutive groups of ``size`` items (the last one may be shorter); never reads
    past the items it yields, so the sampler position stays exact."""
    while True:
        group = []
        for item in iterator:
            group.append(item)
            if len(group) == size:
                break
        if not group:
            return
        yield group
        if len(group) < size:
            return


def _fmt(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return value
