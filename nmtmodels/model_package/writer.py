"""Writing a model package: :func:`write_package`, the rule ``model_package``'s job and
``nmt-package``'s: the model files without their training state, the subword files (BPE codes
checked against ``bpeN`` first) and ``preprocess.json`` with their digests, written whole or
not at all (:mod:`nmtmodels.model_package`)."""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from nmtmodels.checkpoint import diverged_note, load_checkpoint, save_checkpoint
from nmtmodels.files import current_umask, temporary_directory_beside
from nmtmodels.model_package.digests import with_digests
from nmtmodels.model_package.settings import (
    CHECKPOINT_FILE,
    CODES_FILE,
    COMPRESSOR_FILE,
    PREPROCESS_FILE,
    SPM_MODEL_FILE,
    VOCAB_FILE,
    PackageSettings,
)
from nmtmodels.text.bpe_codes import check_codes


def write_package(out_dir: str | os.PathLike, checkpoint: str | os.PathLike, settings: PackageSettings,
                  codes: str | os.PathLike | None = None, vocab: str | os.PathLike | None = None,
                  spm_model: str | os.PathLike | None = None, *,
                  lattice_bpe: dict[str, tuple[str | os.PathLike, str | os.PathLike]] | None = None,
                  compressor: str | os.PathLike | None = None, note: Callable[[str], None] | None = None,
                  warn: Callable[[str], None] | None = None) -> Path:
    """Write a package directory (it replaces ``out_dir`` whole, or leaves it as it was on failure).
    ``lattice_bpe``: ``bpeN`` -> (codes, vocabulary) of each BPE size ``settings.lattice`` packs;
    ``compressor``: the ESC compressor's checkpoint (``settings.compression``).  BPE codes are
    checked against ``bpeN`` first (DataError naming them; a note for codes accepted on their
    vocabulary goes to ``note``); ``preprocess.json`` records the sha256 of each subword file
    copied (``settings.digests`` given are replaced).  A model from a run that ended as diverged
    is packaged with its mark, and said to ``warn``."""
    plain = settings.lattice is None
    if (settings.is_bpe and plain) != (codes is not None and vocab is not None):
        raise ValueError(f"subwords {settings.subwords}: " + ("need" if settings.is_bpe and plain else "take no")
                         + " codes and vocabulary" + ("" if plain else " (the source is a lattice)"))
    if (settings.is_spm and plain) != (spm_model is not None):
        raise ValueError(f"subwords {settings.subwords}: " + ("need" if settings.is_spm and plain else "take no")
                         + " SentencePiece model")
    lattice_bpe = dict(lattice_bpe or {})
    wanted = settings.lattice.bpe_sizes if settings.lattice is not None else ()
    if sorted(lattice_bpe) != sorted(wanted):
        raise ValueError(f"the lattice's BPE sizes are {', '.join(wanted) or 'none'}; "
                         f"got codes for {', '.join(sorted(lattice_bpe)) or 'none'}")
    if (settings.compression is not None and not settings.compression.identity) != (compressor is not None):
        raise ValueError("an ESC package (settings.compression, not identity) needs the compressor's checkpoint, "
                         "and only it takes one")
    checks = [(codes, vocab, settings.merges)] if settings.is_bpe and plain else []
    checks += [(files[0], files[1], int(part[3:])) for part, files in sorted(lattice_bpe.items())]
    for check_path, check_vocab, merges in checks:
        message = check_codes(check_path, merges, check_vocab)
        if message and note:
            note(message)
    copies = {CODES_FILE: codes, VOCAB_FILE: vocab, SPM_MODEL_FILE: spm_model}
    for part, (part_codes, part_vocab) in lattice_bpe.items():
        copies.update({f"lattice.{part}.codes": part_codes, f"lattice.{part}.vocab": part_vocab})
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_directory_beside(out_dir)
    try:
        models = {CHECKPOINT_FILE: checkpoint, **({COMPRESSOR_FILE: compressor} if compressor is not None else {})}
        for name, source in models.items():  # what translation needs: no optimizer moments or other training state
            state = load_checkpoint(source)
            state.pop("trainer", None)
            if warn and (diverged := diverged_note(source, state)):  # its entry "diverged" goes into the package
                warn(f"{diverged}; the package holds it all the same, and nmt-translate says so on every use")
            save_checkpoint(tmp / name, state)
        for name, source in copies.items():
            if source is not None:
                shutil.copyfile(source, tmp / name)
        settings = with_digests(tmp, settings, tuple(models))
        (tmp / PREPROCESS_FILE).write_text(json.dumps(settings.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes 0700; follow the umask like mkdir
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
