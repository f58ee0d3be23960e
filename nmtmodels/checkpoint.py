"""Checkpoints: atomic save, checked load, averaging.

A checkpoint is a dict written with ``torch.save`` and read back with
``weights_only=True`` (plain containers and tensors only, nothing executable):

``format``          "nmtmodels-checkpoint" and ``version``
``model_config``    ModelConfig as a dict
``model``           model state_dict
``vocab``           {"src": tokens, "tgt": tokens, "src_fingerprint", "tgt_fingerprint"}
``train_config``    TrainConfig as a dict
``decode_config``   DecodeConfig as a dict used for validation (optional)
``trainer``         optimizer, scheduler, RNG and sampler states (:data:`RESUME_STATE`, the
                    resume state: in ``checkpoint_last.pt`` and the numbered checkpoints
                    only), the data and init fingerprints, and the run's progress
                    (training only): the keys of
                    ``nmtmodels.training.progress.TrainingProgress.to_dict``, with
                    ``progress_version`` (absent in checkpoints written before it)
``metrics``         the latest validation metrics
``update``          number of optimizer updates
``diverged``        only in the ``checkpoint_best.pt`` of a run that ended as diverged
                    (``nmt-train --on-divergence stop``, nmtmodels.training.divergence):
                    ``{"reason", "update", "message"}``; :func:`diverged_note` says so

An averaged checkpoint keeps the newest input's entries except ``trainer`` (so it cannot
be resumed), with the mean parameters and ``averaged_from`` (the input paths).  The trainer
writes ``checkpoint_best.pt`` :func:`without_resume_state` (about a third of the bytes: no
Adam moments), for decoding, packaging and ``--init-from``; only a checkpoint that
:func:`holds_resume_state` can be resumed from.

Integrity: torch's zip reader does not check the CRC-32 of its records, so bytes changed in
place inside a tensor load silently.  :func:`save_checkpoint` therefore streams the
``torch.save`` output through SHA-256 and stores ``nmtmodels-sha256:<hex>`` as the zip
archive comment (the last bytes of the file; the file stays a plain ``torch.load``-able
zip).  The digest covers every byte before the comment, with the comment-length field of
the end-of-central-directory record read as 0 (as ``torch.save`` wrote it).
:func:`load_checkpoint` recomputes it and refuses a mismatch.  Checkpoints without the
comment (written before digests existed, or by other tools) still load, unchecked.

Writes are atomic (temporary file + ``os.replace``); a failed write (full disk, quota)
raises :class:`CheckpointWriteError` naming the file and the free space, and leaves the
previous file in place.  ``save_checkpoint(last, state, copies=[numbered])`` writes
the copies (:func:`copy_checkpoint`) before it renames ``last`` into place, so ``last`` never
records a numbered checkpoint that is not on disk (the trainer writes the best before both).
Copies are independent files, never hard links: damage to one name (a truncation, an
editor, a bad rsync) leaves every other copy readable (docs/faults.md, "Checkpoints").

``nmt-train --init-from`` loads another run's parameters with :func:`initialise_from` and
records :func:`parameters_fingerprint` of the result.  Loading a model to translate with is
:func:`nmtmodels.checkpoint.load_model_from_checkpoint`.
"""
from __future__ import annotations

import errno
import hashlib
import os
import pickle
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.files import atomic_path
from nmtmodels.registry import build_model
from nmtmodels.vocab import Vocabulary, check_fingerprint

try:
    import fcntl
except ImportError:  # not POSIX: no reflinks
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from nmtmodels.models.base import Seq2SeqModel

FORMAT = "nmtmodels-checkpoint"
VERSION = 1


DIGEST_PREFIX = b"nmtmodels-sha256:"
_COMMENT = len(DIGEST_PREFIX) + 64  # bytes of the archive comment
_EOCD = 22  # zip end-of-central-directory record (without its comment)
_EOCD_SIGNATURE = b"PK\x05\x06"
_CHUNK = 1 << 20
FICLONE = 0x40049409  # linux/fs.h _IOW(0x94, 9, int): make the target share the source's blocks
# copy_file_range errors that mean "not here" (old kernel, seccomp, another filesystem), not a failed write
_NO_COPY_RANGE = {errno.ENOSYS, errno.EXDEV, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM, errno.EBADF}


# the entries of a checkpoint's ``trainer`` that only a resume reads: Adam's two moments are two
# thirds of a training checkpoint's bytes
RESUME_STATE = ("optimizer", "scheduler", "rng", "sampler")


class CheckpointError(ValueError):
    """A checkpoint file is missing, unreadable or inconsistent (the message names it)."""


class CheckpointWriteError(CheckpointError):
    """A checkpoint could not be written (disk full, quota, permissions); names the file."""


def _human_bytes(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"  # unreachable


def _write_error(path: str | os.PathLike, exc: BaseException) -> CheckpointWriteError:
    """One line naming ``path``, the cause and the free space of its file system."""
    directory = Path(path).parent
    try:
        free = f"{_human_bytes(shutil.disk_usage(directory).free)} free in {directory}"
    except OSError:
        free = f"free space of {directory} unknown"
    if isinstance(exc, OSError) and exc.strerror:
        reason = f"[Errno {exc.errno}] {exc.strerror}" if exc.errno else exc.strerror
    else:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return CheckpointWriteError(f"{path}: cannot write checkpoint: {reason} ({free})")


class _HashingWriter:
    """A write-only stream for ``torch.save`` that hashes what it writes.  torch turns an
    exception raised by ``write`` into an uninformative RuntimeError ("unexpected pos"),
    so the original one is kept in ``error``."""

    def __init__(self, handle: Any):
        self.handle = handle
        self.digest = hashlib.sha256()
        self.error: OSError | None = None

    def write(self, data: bytes) -> int:
        try:
            written = self.handle.write(data)
        except OSError as exc:
            self.error = exc
            raise
        self.digest.update(data)
        return written

    def flush(self) -> None:
        self.handle.flush()


def _write(path: Path, state: dict[str, Any]) -> None:
    """``torch.save(state)`` to ``path`` with the digest as the zip comment (module doc)."""
    with open(path, "w+b") as handle:
        writer = _HashingWriter(handle)
        try:
            torch.save(state, writer)
        except RuntimeError:
            if writer.error is not None:
                raise writer.error from None
            raise
        end = handle.tell()
        handle.seek(end - _EOCD)
        eocd = handle.read(_EOCD)
        if len(eocd) != _EOCD or eocd[:4] != _EOCD_SIGNATURE or eocd[-2:] != b"\0\0":
            raise RuntimeError(f"{path}: torch.save did not end the file with a comment-less zip directory")
        comment = DIGEST_PREFIX + writer.digest.hexdigest().encode("ascii")
        handle.seek(end - 2)
        handle.write(len(comment).to_bytes(2, "little") + comment)


def _stored_digest(handle: Any, size: int) -> str | None:
    """The hex digest in the zip comment of an open checkpoint, or None if it has none."""
    if size < _EOCD + _COMMENT:
        return None
    handle.seek(size - _EOCD - _COMMENT)
    tail = handle.read(_EOCD + _COMMENT)
    if (tail[:4] != _EOCD_SIGNATURE or tail[_EOCD - 2:_EOCD] != _COMMENT.to_bytes(2, "little")
            or not tail[_EOCD:].startswith(DIGEST_PREFIX)):
        return None
    return tail[_EOCD + len(DIGEST_PREFIX):].decode("ascii", errors="replace")


def stored_digest(path: str | os.PathLike) -> str | None:
    """The sha256 (hex) that checkpoint ``path`` records of its own content (written by
    :func:`save_checkpoint`), without hashing the file; None for a file that records none."""
    with open(path, "rb") as handle:
        return _stored_digest(handle, os.fstat(handle.fileno()).st_size)


def verify_digest(path: str | os.PathLike) -> bool:
    """Check the stored digest of checkpoint ``path``: True when it matches, False when the
    file has none (an older checkpoint); CheckpointError when it does not match."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        stored = _stored_digest(handle, size)
        if stored is None:
            return False
        digest = hashlib.sha256()
        handle.seek(0)
        remaining = size - _COMMENT - 2  # up to the comment-length field
        while remaining > 0:
            chunk = handle.read(min(_CHUNK, remaining))
            if not chunk:
                break
            digest.update(chunk)
            remaining -= len(chunk)
        digest.update(b"\0\0")
    if digest.hexdigest() != stored:
        raise CheckpointError(f"{path}: content does not match the checkpoint's sha256 digest "
                              "(the file was changed or damaged after it was written); use another copy")
    return True


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any],
                    copies: Sequence[str | os.PathLike] = ()) -> None:
    """Write ``state`` to ``path`` atomically (temporary file + os.replace), with a digest.

    Each of ``copies`` gets the same bytes (atomically) before ``path`` is replaced, so a
    failure leaves ``path`` as it was.  CheckpointWriteError naming the file that failed.
    """
    state = {"format": FORMAT, "version": VERSION, **state}
    try:
        with atomic_path(path) as tmp:
            try:
                _write(tmp, state)
            except OSError as exc:
                raise _write_error(path, exc) from None
            for target in copies:
                copy_checkpoint(tmp, target)
    except OSError as exc:  # creating the temporary file or os.replace
        raise _write_error(path, exc) from None


def copy_checkpoint(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Put the bytes of ``source`` at ``target`` atomically; CheckpointWriteError naming ``target``.

    ``target`` becomes a file of its own, never a hard link to ``source``: truncating or
    overwriting one name in place leaves the other intact.  Where the filesystem shares
    blocks copy-on-write (a reflink: btrfs, XFS with reflink, bcachefs, OCFS2, ZFS with block
    cloning) the copy takes no extra space until one of the files changes; elsewhere (ext4,
    tmpfs, most network mounts) it costs the checkpoint's size on disk (docs/training.md,
    "Checkpoints").
    """
    try:
        with atomic_path(target) as tmp:
            _clone_or_copy(Path(source), tmp)
    except OSError as exc:
        raise _write_error(target, exc) from None


def _clone_or_copy(source: Path, target: Path) -> None:
    """Fill the empty file ``target`` with the bytes of ``source``: a reflink (the FICLONE
    ioctl) where the filesystem has one, else ``os.copy_file_range`` (copied inside the kernel,
    on the server for NFS 4.2), else reads and writes."""
    with open(source, "rb") as src, open(target, "r+b") as dst:
        if _reflink(src.fileno(), dst.fileno()):
            return
        size = os.fstat(src.fileno()).st_size
        copied = 0
        if hasattr(os, "copy_file_range"):
            try:
                while copied < size:
                    count = os.copy_file_range(src.fileno(), dst.fileno(), size - copied)
                    if count == 0:
                        break
                    copied += count
            except OSError as exc:
                if copied or exc.errno not in _NO_COPY_RANGE:
                    raise  # e.g. ENOSPC: the disk is full
        if copied == 0 and size > 0:
            shutil.copyfileobj(src, dst, _CHUNK)


def _reflink(src_fd: int, dst_fd: int) -> bool:
    """True when ``dst_fd`` now shares the blocks of ``src_fd`` (Linux FICLONE)."""
    if fcntl is None or not sys.platform.startswith("linux"):
        return False
    try:
        fcntl.ioctl(dst_fd, FICLONE, src_fd)
    except OSError:  # EOPNOTSUPP (ext4, tmpfs), EXDEV, EINVAL, ...: copy instead
        return False
    return True


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` after checking its digest (if
    it has one); CheckpointError naming the path."""
    if not Path(path).is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    try:
        verify_digest(path)
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for corrupt or foreign files
        if isinstance(exc, pickle.UnpicklingError) and "Unsupported global" in str(exc):
            # A pickle of other Python objects: not ours.  torch's advice (load it with
            # weights_only=False) would run its code, so it is not repeated.
            raise CheckpointError(f"{path}: not an nmtmodels checkpoint (it holds Python objects other than tensors and "
                                  "plain values; nmtmodels never loads such files)") from None
        # torch's first line only: the rest of an UnpicklingError is its advice to load with
        # weights_only=False, which would run the file's code.
        lines = str(exc).strip().splitlines()
        first = lines[0] if lines else ""
        if isinstance(exc, pickle.UnpicklingError):
            detail = str(exc).split("WeightsUnpickler error:", 1)[-1].strip().splitlines() if "WeightsUnpickler error:" in str(exc) else []
            first = detail[0] if detail else "not a pickle of tensors"
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(exc).__name__}: {first})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an nmtmodels checkpoint")
    if state.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint format version {state.get('version')} (this code reads {VERSION})")
    return state


def without_resume_state(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` without the entries of its ``trainer`` that only a resume reads
    (:data:`RESUME_STATE`): what decoding, packaging, ``--init-from`` and the run's facts
    (progress, devices, fingerprints) need.  The trainer's ``checkpoint_best.pt``."""
    trainer = state.get("trainer")
    if not isinstance(trainer, dict):
        return dict(state)
    return {**state, "trainer": {k: v for k, v in trainer.items() if k not in RESUME_STATE}}


def holds_resume_state(state: dict[str, Any]) -> bool:
    """Whether a training run can resume from checkpoint ``state`` (it has every entry of
    :data:`RESUME_STATE`): not a ``checkpoint_best.pt``, an average or a package's checkpoint."""
    trainer = state.get("trainer")
    return isinstance(trainer, dict) and all(key in trainer for key in RESUME_STATE)


def average_checkpoints(paths: Sequence[str | os.PathLike]) -> dict[str, Any]:
    """Element-wise mean of the model parameters of ``paths`` (accumulated in fp32, cast
    back to each tensor's dtype); the other fields come from the last checkpoint, without
    the trainer state.  The checkpoints must share model config, vocabularies and keys."""
    if not paths:
        raise CheckpointError("no checkpoints to average")
    sums: dict[str, torch.Tensor] = {}
    first: dict[str, Any] | None = None
    last: dict[str, Any] = {}
    for path in paths:
        state = load_checkpoint(path)
        if first is None:
            first = state
            sums = {k: v.detach().to(torch.float32).clone() for k, v in state["model"].items()}
        else:
            for key in ("model_config", "vocab"):
                if state.get(key) != first.get(key):
                    raise CheckpointError(f"{path}: {key} differs from {paths[0]}; cannot average")
            if state["model"].keys() != sums.keys():
                raise CheckpointError(f"{path}: parameter names differ from {paths[0]}; cannot average")
            for key, value in state["model"].items():
                if value.shape != sums[key].shape:
                    raise CheckpointError(f"{path}: {key} has shape {tuple(value.shape)}, {paths[0]} {tuple(sums[key].shape)}")
                sums[key] += value.to(torch.float32)
        last = state
    assert first is not None
    averaged = {
        key: (total / len(paths)).to(first["model"][key].dtype)
        if first["model"][key].is_floating_point() else last["model"][key]
        for key, total in sums.items()
    }
    result = {k: v for k, v in last.items() if k not in ("trainer", "format", "version")}
    result["model"] = averaged
    result["averaged_from"] = [str(p) for p in paths]
    return result


def numbered_checkpoints(directory: str | os.PathLike) -> list[tuple[int, Path]]:
    """``checkpoint_{update}.pt`` files in ``directory`` as (update, path), ascending."""
    found = []
    for path in Path(directory).glob("checkpoint_*.pt"):
        stem = path.stem[len("checkpoint_"):]
        if stem.isdigit():
            found.append((int(stem), path))
    return sorted(found)


def parameters_fingerprint(model: torch.nn.Module) -> str:
    """SHA-256 (hex) of ``model``'s state (names and raw bytes, in name order)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode("utf-8"))
        digest.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def initialise_from(model: torch.nn.Module, path: str, src_vocab: Vocabulary, tgt_vocab: Vocabulary) -> None:
    """Load the parameters of checkpoint ``path`` into ``model`` (vocabularies must match)."""
    state = load_checkpoint(path, map_location="cpu")
    for side, vocab in (("src", src_vocab), ("tgt", tgt_vocab)):
        try:
            check_fingerprint(vocab, state["vocab"][f"{side}_fingerprint"], side, path)
        except ValueError as exc:
            raise ConfigError(f"--init-from: {exc}") from None
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ConfigError(f"--init-from {path}: parameters do not fit the configured model ({first})") from None


def load_model_from_checkpoint(
    path: str, device: torch.device | str = "cpu"
) -> tuple[Seq2SeqModel, Vocabulary, Vocabulary, dict[str, Any]]:
    """(model in eval mode on ``device``, source vocabulary, target vocabulary, checkpoint).

    Rebuilds the model of a checkpoint written by the trainer or ``nmt-average`` with its
    vocabularies; refuses a checkpoint whose vocabularies do not match their fingerprints or
    whose parameters hold NaN or inf."""
    state = load_checkpoint(path, map_location="cpu")
    vocabs = []
    for side in ("src", "tgt"):
        tokens = state["vocab"][side]
        vocab = Vocabulary(tokens[4:])
        if vocab.tokens != tokens or vocab.fingerprint() != state["vocab"][f"{side}_fingerprint"]:
            raise CheckpointError(f"{path}: the stored {side} vocabulary is inconsistent with its fingerprint")
        vocabs.append(vocab)
    broken = [name for name, tensor in state["model"].items()
              if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())]
    if broken:
        raise CheckpointError(f"{path}: {len(broken)} parameter tensors hold NaN or inf (first: {broken[0]}); "
                              "the training run diverged, use an earlier checkpoint")
    model_cfg = ModelConfig.from_dict(state["model_config"], where=f"{path}: model_config")
    model = build_model(model_cfg, len(vocabs[0]), len(vocabs[1]), where=f"{path}: model_config")
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise CheckpointError(f"{path}: its parameters do not fit its own model_config ({first})") from None
    model.to(device).eval()
    return model, vocabs[0], vocabs[1], state


def diverged_note(path: str | os.PathLike, state: dict[str, Any]) -> str | None:
    """What a reader of checkpoint ``path`` (its loaded ``state``) says when the model comes
    from a training run that ended as diverged (the entry ``diverged``); None otherwise."""
    entry = state.get("diverged")
    if not entry:
        return None
    return (f"{path}: its training run diverged and was stopped ({entry['reason']}); this is the model of update "
            f"{state.get('update')}, whose translations are not those of a trained model")
