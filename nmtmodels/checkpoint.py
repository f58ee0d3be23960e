"""Checkpoints: atomic save, checked load, averaging.

A checkpoint is a dict written with ``torch.save`` and read back with
``weights_only=True`` (plain containers and tensors only, nothing executable):

``format``          "nmtmodels-checkpoint" and ``version``
``model_config``    ModelConfig as a dict
``model``           model state_dict
``vocab``           {"src": tokens, "tgt": tokens, "src_fingerprint", "tgt_fingerprint"}
``train_config``    TrainConfig as a dict
``decode_config``   DecodeConfig as a dict used for validation (optional)
``trainer``         optimizer, scheduler, RNG, sampler states, update/epoch counters,
                    best metric, kept-checkpoint registry, elapsed seconds (training only)
``metrics``         the latest validation metrics
``update``          number of optimizer updates

An averaged checkpoint keeps the newest input's entries except ``trainer`` (so it cannot
be resumed), with the mean parameters and ``averaged_from`` (the input paths).

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
previous file in place.  ``save_checkpoint(last, state, copies=[best, numbered])`` writes
the copies (hard links where possible: :func:`copy_checkpoint`) before it renames ``last``
into place, so ``last`` never records a best checkpoint or a numbered one that is not on disk.

``nmt-train --init-from`` loads another run's parameters with :func:`initialise_from` and
records :func:`parameters_fingerprint` of the result.  Loading a model to translate with is
:func:`nmtmodels.checkpoint.load_model_from_checkpoint`.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.textio import atomic_path
from nmtmodels.vocab import Vocabulary, check_fingerprint

if TYPE_CHECKING:
    from nmtmodels.models.base import Seq2SeqModel

FORMAT = "nmtmodels-checkpoint"
VERSION = 1


DIGEST_PREFIX = b"nmtmodels-sha256:"
_COMMENT = len(DIGEST_PREFIX) + 64  # bytes of the archive comment
_EOCD = 22  # zip end-of-central-directory record (without its comment)
_EOCD_SIGNATURE = b"PK\x05\x06"
_CHUNK = 1 << 20


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

    A hard link where the filesystem allows one, a copy otherwise.  A link is safe because no
    checkpoint file is ever changed in place: every write makes a new file and renames it
    over the old name, which leaves the other names of the old bytes as they were.  It saves
    writing a transformer-big checkpoint (with its optimizer state) two more times at every
    validation.
    """
    try:
        with atomic_path(target) as tmp:
            _link_or_copy(Path(source), tmp)
    except OSError as exc:
        raise _write_error(target, exc) from None


def _link_or_copy(source: Path, target: Path) -> None:
    target.unlink()  # the empty placeholder from atomic_path
    try:
        os.link(source, target)
    except OSError:  # no hard links here (another filesystem, FAT, some network mounts)
        shutil.copyfile(source, target)


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
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an nmtmodels checkpoint")
    if state.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint format version {state.get('version')} (this code reads {VERSION})")
    return state


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
    from nmtmodels.registry import build_model  # the model families: only when a model is built

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
