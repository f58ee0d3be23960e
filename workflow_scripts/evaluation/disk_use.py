"""Where a workflow run's disk went: the bytes of a ``results/`` folder as ``du`` counts them
(allocated blocks; a file with several names once), by kind of file, the checkpoints that
repeat another's bytes, and the resume state that this version's trainer no longer keeps
(docs/training.md, "Checkpoints").

    python -m workflow_scripts.evaluation.disk_use results [--markdown docs/results/cpu/disk.md]

Kinds: ``checkpoint_last.pt``, ``checkpoint_best.pt``, numbered ``checkpoint_N.pt``, averaged
``checkpoint_avgN.pt``, the checkpoints of model packages (``.pt`` files in a folder with a
``preprocess.json``), other ``.pt`` files, and every other file by its top-level folder
(``data/``, ``experiments/`` ...).  A training is a folder with a ``checkpoint_last.pt``.

Not kept by this version: the resume state (:data:`nmtmodels.checkpoint.RESUME_STATE`) of a
``checkpoint_best.pt`` and of a numbered checkpoint whose digest is its ``checkpoint_last.pt``'s,
counted as the bytes of its tensors (read from the checkpoint's index with torch's ``mmap``, not
from the data); the total less it is what the same run takes with this version.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from nmtmodels.checkpoint import RESUME_STATE, numbered_checkpoints, stored_digest
from nmtmodels.files import DataError, atomic_write_text
from workflow_scripts.evaluation.markdown_tables import table

NUMBERED = re.compile(r"checkpoint_\d+\.pt")
AVERAGED = re.compile(r"checkpoint_avg\d+\.pt")
GIB = 1024 ** 3


@dataclass
class DiskUse:
    """What :func:`measure` found under ``root``: bytes and files by kind, the trainings, the
    checkpoints that repeat another's bytes and the resume state this version does not keep."""
    root: Path
    kinds: dict[str, list[int]] = field(default_factory=dict)  # kind -> [files, bytes]
    trainings: int = 0
    repeated: list[int] = field(default_factory=lambda: [0, 0])  # files, bytes
    not_kept: int = 0

    @property
    def total(self) -> int:
        return sum(size for _, size in self.kinds.values())

    @property
    def files(self) -> int:
        return sum(count for count, _ in self.kinds.values())


def kind_of(path: Path, root: Path) -> str:
    """The row of ``path`` (a file under ``root``) in the table (module docstring)."""
    name = path.name
    if name == "checkpoint_last.pt" or name == "checkpoint_best.pt":
        return name
    if NUMBERED.fullmatch(name):
        return "checkpoint_N.pt (numbered)"
    if AVERAGED.fullmatch(name):
        return "checkpoint_avgN.pt (averaged)"
    if name.endswith(".pt"):
        return "model packages' checkpoints" if (path.parent / "preprocess.json").is_file() else "other .pt files"
    parts = path.relative_to(root).parts
    return f"other files in {parts[0]}/" if len(parts) > 1 else "other files"


def tensor_bytes(value: Any) -> int:
    """The bytes of the tensors in a checkpoint entry (dicts, lists and tuples walked)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    return 0


def resume_state_bytes(path: Path) -> int:
    """The bytes of the resume state's tensors in checkpoint ``path`` (0 without one)."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a damaged file
        raise DataError(path, f"not a readable checkpoint ({type(exc).__name__})") from None
    trainer = state.get("trainer") if isinstance(state, dict) else None
    return sum(tensor_bytes(trainer[key]) for key in RESUME_STATE if key in trainer) if isinstance(trainer, dict) else 0


def _files(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            stat = path.lstat()
            if not path.is_symlink():
                yield path, stat


def _digest(path: Path) -> str | None:
    try:
        return stored_digest(path)
    except OSError:
        return None


def not_kept_bytes(folder: Path) -> int:
    """The resume state in training folder ``folder`` that this version does not keep: that of
    ``checkpoint_best.pt`` and of a numbered checkpoint with the digest of ``checkpoint_last.pt``
    (not counted when it is a hard link of ``checkpoint_last.pt``: its bytes are stored once)."""
    last, best = folder / "checkpoint_last.pt", folder / "checkpoint_best.pt"
    digest = _digest(last) if last.is_file() else None
    slimmed = [best] if best.is_file() else []
    slimmed += [path for _, path in numbered_checkpoints(folder) if digest is not None and _digest(path) == digest]
    return sum(resume_state_bytes(path) for path in slimmed if not (last.is_file() and os.path.samefile(path, last)))


def measure(root: str | os.PathLike) -> DiskUse:
    """:class:`DiskUse` of the folder ``root``; DataError when it is not a folder."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(root, "not a folder")
    use, seen, digests, trainings = DiskUse(root), set(), {}, set()
    for path, stat in sorted(_files(root)):
        if path.name in ("checkpoint_last.pt", "checkpoint_best.pt"):
            trainings.add(path.parent)
        if (stat.st_dev, stat.st_ino) in seen:  # another name of a file counted: du counts it once
            continue
        seen.add((stat.st_dev, stat.st_ino))
        size = stat.st_blocks * 512
        counts = use.kinds.setdefault(kind_of(path, root), [0, 0])
        counts[0] += 1
        counts[1] += size
        if path.suffix == ".pt" and (digest := _digest(path)) is not None:
            digests.setdefault(digest, []).append(size)
    for sizes in digests.values():
        use.repeated[0] += len(sizes) - 1
        use.repeated[1] += sum(sizes[1:])
    use.trainings = sum((folder / "checkpoint_last.pt").is_file() for folder in trainings)
    use.not_kept = sum(not_kept_bytes(folder) for folder in sorted(trainings))
    return use


def gib(count: int) -> str:
    return f"{count / GIB:.2f}"


def render(use: DiskUse, command: str) -> str:
    """The Markdown page of ``use`` (module docstring); ``command`` made it."""
    rows = [[kind, str(files), gib(size), f"{100 * size / use.total:.0f}%" if use.total else ""]
            for kind, (files, size) in sorted(use.kinds.items(), key=lambda item: -item[1][1])]
    lines = [
        "# Disk use of a workflow run", "",
        f"`{use.root}` as `du` counts it (allocated blocks, a file with several names once), in GiB "
        f"(`du -h`'s G); made by `{command}`.", "",
        f"- total: **{gib(use.total)} GiB** ({use.total:,} bytes) in {use.files:,} files; "
        f"{use.trainings} trainings (folders with a `checkpoint_last.pt`)",
        f"- checkpoints that repeat another one's bytes: {use.repeated[0]} files, {gib(use.repeated[1])} GiB",
        f"- resume state that this version does not keep (in `checkpoint_best.pt`, and in a numbered checkpoint "
        f"that copies its `checkpoint_last.pt`): {gib(use.not_kept)} GiB; without it: "
        f"**{gib(use.total - use.not_kept)} GiB**", "",
        *table(["files", "count", "GiB", "share"], rows),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.disk_use",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="the folder to measure (a workflow's results/)")
    parser.add_argument("--markdown", help="write the page here (default: print it)")
    args = parser.parse_args(argv)
    command = " ".join(["python -m workflow_scripts.evaluation.disk_use", args.results]
                       + (["--markdown", args.markdown] if args.markdown else []))
    try:
        page = render(measure(args.results), command)
        if args.markdown:
            atomic_write_text(args.markdown, page)
        else:
            sys.stdout.write(page)
    except (DataError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
