"""The digests of a model package: the sha256 of each subword file, and the digest each model
file (``checkpoint.pt``, ``compressor.pt``) stores of itself, as ``preprocess.json`` records
them; checking a package directory's files against them (DataError naming the file).  A package
written before the digests were recorded gets the BPE codes' merge check instead
(:mod:`nmtmodels.model_package`)."""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

from nmtmodels.checkpoint import stored_digest
from nmtmodels.files import DataError
from nmtmodels.model_package.settings import CODES_FILE, PREPROCESS_FILE, VOCAB_FILE, PackageSettings
from nmtmodels.text.bpe_codes import check_codes


def file_sha256(path: str | os.PathLike) -> str:
    """The sha256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def with_digests(directory: Path, settings: PackageSettings, model_files: tuple[str, ...]) -> PackageSettings:
    """``settings`` recording the sha256 of each subword file in ``directory`` and the digest
    each of ``model_files`` there stores of itself (the digests given are replaced)."""
    return dataclasses.replace(settings, digests=tuple((name, file_sha256(directory / name)) for name in settings.subword_file_names),
                               model_digests=tuple(sorted((name, stored_digest(directory / name)) for name in model_files)))


def check_subword_files(directory: Path, settings: PackageSettings) -> None:
    """Each subword file against its recorded sha256 (DataError naming the file); without
    digests (a package written before they were recorded), the BPE codes against ``bpeN``."""
    recorded = dict(settings.digests)
    if not recorded:
        if settings.is_bpe and settings.lattice is None:
            check_codes(directory / CODES_FILE, settings.merges, directory / VOCAB_FILE)
        return
    for name in settings.subword_file_names:
        path = directory / name
        if file_sha256(path) != recorded[name]:
            raise DataError(path, f"content does not match the sha256 that {PREPROCESS_FILE} records (the file was "
                                  "changed or cut short after the package was written); use another copy of the package")


def check_model_files(directory: Path, settings: PackageSettings) -> None:
    """Each model file against the digest preprocess.json records (DataError naming it): only
    the digest it stores of itself is read; loading it checks its content against that."""
    for name, recorded in settings.model_digests:
        path = directory / name
        if not path.is_file():
            raise DataError(path, f"missing; {PREPROCESS_FILE} records it")
        if stored_digest(path) != recorded:
            raise DataError(path, f"is not the model this package was written with ({PREPROCESS_FILE} records "
                                  "another sha256); put the package's own file back, or package that model again")
