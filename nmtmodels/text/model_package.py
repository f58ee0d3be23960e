"""A model package: one directory with what a model needs to read raw text and write plain text.

Layout (written by the workflow's rule ``model_package`` into
``results/experiments/EXPERIMENT/CORPUS/model/``, or by :func:`write_package`)::

    checkpoint.pt        the checkpoint the run decodes: train/checkpoint_best.pt, or with
                         average_checkpoints: N the average of its last N (a copy of its own,
                         never a hard link: a reflink where the filesystem has them)
    preprocess.json      languages, normaliser and tokeniser settings, subword units
    bpe.codes            source BPE codes (subwords bpeN only)
    bpe.vocab            source BPE vocabulary, "subword count" lines, read with the threshold
    spm.model            source SentencePiece model (subwords spmN only, :mod:`nmtmodels.text.spm`)

``preprocess.json`` holds the source and target :class:`~nmtmodels.text.preprocessing.LanguageSettings`
of the corpus' ``preprocess`` spec (``lang``, ``tokenizer``, ``join_pretokenized``,
``lowercase``), the unicode form, the subword units (``bpeN``, ``spmN`` or ``char``) and, for
BPE, the vocabulary threshold that the workflow's ``apply_bpe`` used (``"bpe": {...}``), for
SentencePiece the model file (``"sentencepiece": {"model": "spm.model"}``), and the sha256
digest of each subword file (``"sha256": {"bpe.codes": HEX, "bpe.vocab": HEX}``).  The target
settings name the language of the detokeniser.  Source text then goes through the steps that
made the training source (:class:`~nmtmodels.text.preprocessing.TextProcessor`, then subword-nmt
BPE with codes, vocabulary and threshold, SentencePiece with the model, or characters with ▁
for spaces); the target side is undone by :func:`nmtmodels.text.postprocess.postprocess`.

Subword files are checked: :func:`write_package` refuses BPE codes that are cut short or have
another number of merges than ``bpeN`` asks for (:func:`nmtmodels.text.bpe_codes.check_codes`)
and records the digests; :func:`read_package` refuses a file whose sha256 differs from the
recorded one (DataError naming the file).  Packages written before the digests were recorded
load without them; their BPE codes get the merge check instead.

CLI (the rule's command)::

    python -m nmtmodels.cli package --checkpoint CKPT --settings JSON [--codes C --vocab V | --spm-model M] --out-dir DIR
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nmtmodels.checkpoint import copy_checkpoint
from nmtmodels.config import ConfigError
from nmtmodels.text.bpe_codes import check_codes
from nmtmodels.text.postprocess import SUBWORDS, postprocess
from nmtmodels.text.preprocessing import (
    UNICODE_FORMS,
    LanguageSettings,
    TextProcessor,
    check_type,
    language_settings,
    load_bpe,
    sentence_characters,
)
from nmtmodels.textio import DataError, current_umask

PREPROCESS_FILE = "preprocess.json"
CHECKPOINT_FILE = "checkpoint.pt"
CODES_FILE = "bpe.codes"
VOCAB_FILE = "bpe.vocab"
SPM_MODEL_FILE = "spm.model"
FORMAT = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclasses.dataclass(frozen=True)
class PackageSettings:
    """The content of ``preprocess.json`` (module docstring)."""

    source: LanguageSettings
    target: LanguageSettings
    unicode_form: str
    subwords: str
    vocabulary_threshold: int | None = None
    digests: tuple[tuple[str, str], ...] = ()  # (subword file name, sha256 hex); () in packages written before digests

    @property
    def is_bpe(self) -> bool:
        return self.subwords.startswith("bpe")

    @property
    def is_spm(self) -> bool:
        return self.subwords.startswith("spm")

    @property
    def is_char(self) -> bool:
        return self.subwords == "char"

    @property
    def subword_file_names(self) -> tuple[str, ...]:
        """The names of the files beside ``preprocess.json`` that the subword units need."""
        return (CODES_FILE, VOCAB_FILE) if self.is_bpe else (SPM_MODEL_FILE,) if self.is_spm else ()

    @property
    def merges(self) -> int | None:
        """N of ``bpeN``, else None."""
        return int(self.subwords[3:]) if self.is_bpe else None

    def to_dict(self) -> dict[str, Any]:
        def side(settings: LanguageSettings) -> dict[str, Any]:
            return {"lang": settings.lang, "tokenizer": settings.tokenizer, "join_pretokenized": settings.join_pretokenized}

        data = {"format": FORMAT, "source": side(self.source), "target": side(self.target),
                "lowercase": self.source.lowercase, "unicode_form": self.unicode_form, "subwords": self.subwords}
        if self.is_bpe:
            data["bpe"] = {"codes": CODES_FILE, "vocabulary": VOCAB_FILE, "vocabulary_threshold": self.vocabulary_threshold}
        if self.is_spm:
            data["sentencepiece"] = {"model": SPM_MODEL_FILE}
        if self.digests:
            data["sha256"] = dict(self.digests)
        return data

    @classmethod
    def from_dict(cls, data: Any, where: str) -> PackageSettings:
        """Settings from ``preprocess.json`` (or the rule's ``--settings``); ConfigError naming ``where`` and the key."""
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a JSON object")
        if data.get("format", FORMAT) != FORMAT:
            raise ConfigError(f"{where}: format {data.get('format')!r} is not supported (this nmtmodels reads format {FORMAT})")
        for key in ("source", "target", "subwords"):
            if key not in data:
                raise ConfigError(f"{where}: {key}: required key is missing")
        sides = []
        for key in ("source", "target"):
            entry = check_type(data[key], dict, f"{where}: {key}")
            lang = check_type(entry.get("lang"), str, f"{where}: {key}.lang")
            spec = {"preprocess": {lang: entry}, "lowercase": data.get("lowercase", False)}
            try:
                sides.append(language_settings(spec, lang))
            except ConfigError as exc:
                raise ConfigError(f"{where}: {key}: {str(exc).removeprefix('spec.')}") from None
        unicode_form = data.get("unicode_form", "NFKC")
        if unicode_form not in UNICODE_FORMS:
            raise ConfigError(f"{where}: unicode_form: expected one of {', '.join(UNICODE_FORMS)}, got {unicode_form!r}")
        subwords = check_type(data["subwords"], str, f"{where}: subwords")
        if not SUBWORDS.fullmatch(subwords):
            raise ConfigError(f"{where}: subwords: expected bpeN, spmN or char, got {subwords!r}")
        threshold = None
        if subwords.startswith("bpe"):
            bpe = check_type(data.get("bpe", {}), dict, f"{where}: bpe")
            threshold = check_type(bpe.get("vocabulary_threshold", 1), int, f"{where}: bpe.vocabulary_threshold")
        settings = cls(source=sides[0], target=sides[1], unicode_form=unicode_form, subwords=subwords,
                       vocabulary_threshold=threshold)
        if "sha256" not in data:
            return settings  # written before the digests were recorded
        digests = check_type(data["sha256"], dict, f"{where}: sha256")
        names = settings.subword_file_names
        if sorted(digests) != sorted(names):
            raise ConfigError(f"{where}: sha256: expected digests of {', '.join(names) or 'no files'} (subwords {subwords}), "
                              f"got {', '.join(sorted(digests)) or 'none'}")
        for name in names:
            if not (isinstance(digests[name], str) and _SHA256.fullmatch(digests[name])):
                raise ConfigError(f"{where}: sha256.{name}: expected 64 lowercase hex digits, got {digests[name]!r}")
        return dataclasses.replace(settings, digests=tuple((name, digests[name]) for name in names))


@dataclasses.dataclass(frozen=True)
class ModelPackage:
    """A package directory read by :func:`read_package`: its settings and file paths."""

    directory: Path
    settings: PackageSettings

    @property
    def checkpoint(self) -> Path:
        return self.directory / CHECKPOINT_FILE

    @property
    def codes(self) -> Path:
        return self.directory / CODES_FILE

    @property
    def vocab(self) -> Path:
        return self.directory / VOCAB_FILE

    @property
    def spm_model(self) -> Path:
        return self.directory / SPM_MODEL_FILE

    def subword_files(self) -> list[Path]:
        """The files beside ``preprocess.json`` that the subword units need."""
        return [self.directory / name for name in self.settings.subword_file_names]

    def check_subword_files(self) -> None:
        """Each subword file against its recorded sha256 (DataError naming the file); without
        digests (a package written before they were recorded), the BPE codes against ``bpeN``."""
        recorded = dict(self.settings.digests)
        if not recorded:
            if self.settings.is_bpe:
                check_codes(self.codes, self.settings.merges, self.vocab)
            return
        for path in self.subword_files():
            if file_sha256(path) != recorded[path.name]:
                raise DataError(path, f"content does not match the sha256 that {PREPROCESS_FILE} records (the file was "
                                      "changed or cut short after the package was written); use another copy of the package")

    def source_encoder(self) -> Callable[[str], str]:
        """Raw source sentence -> model input (tokens separated by spaces): the corpus'
        normalisation and tokenisation, then BPE (codes, vocabulary, threshold), SentencePiece
        (the model) or characters.  Building it loads the tokeniser and the codes or model."""
        settings = self.settings
        tokenize = TextProcessor(settings.source, settings.unicode_form).tokenize
        if settings.is_bpe:
            bpe = load_bpe(self.codes, self.vocab, settings.vocabulary_threshold)
            return lambda sentence: bpe.process_line(tokenize(sentence))
        if settings.is_spm:
            from nmtmodels.text.spm import SentencePieceEncoder

            pieces = SentencePieceEncoder(self.spm_model)
            return lambda sentence: pieces.encode_line(tokenize(sentence))
        return lambda sentence: " ".join(sentence_characters(tokenize(sentence)))

    def postprocess(self, text: str) -> str:
        """Model output tokens -> plain text: BPE, SentencePiece pieces or characters joined,
        then detokenised for the target language."""
        settings = self.settings
        return postprocess(text, settings.target.lang, bpe=settings.is_bpe, spm=settings.is_spm, char_level=settings.is_char)


def settings_from_corpus(corpus_spec: dict[str, Any], subwords: str, unicode_form: str, where: str) -> PackageSettings:
    """Package settings of a workflow corpus spec (``src``, ``tgt``, ``preprocess``,
    ``lowercase``, ``bpe.vocabulary_threshold``) for a model trained on ``subwords``
    (``spmN``: everything else is in the SentencePiece model file)."""
    try:
        src, tgt = (language_settings(corpus_spec, corpus_spec[side]) for side in ("src", "tgt"))
    except ConfigError as exc:
        raise ConfigError(f"{where}.{str(exc).removeprefix('spec.')}") from None
    threshold = corpus_spec.get("bpe", {}).get("vocabulary_threshold", 1) if subwords.startswith("bpe") else None
    return PackageSettings(source=src, target=tgt, unicode_form=unicode_form, subwords=subwords, vocabulary_threshold=threshold)


def file_sha256(path: str | os.PathLike) -> str:
    """The sha256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def package_directory(path: str | os.PathLike) -> Path | None:
    """The package directory of ``path`` (the directory itself, or a checkpoint in it), or
    None when there is no ``preprocess.json`` there."""
    path = Path(path)
    directory = path if path.is_dir() else path.parent
    return directory if (directory / PREPROCESS_FILE).is_file() else None


def read_package(directory: str | os.PathLike) -> ModelPackage:
    """Read ``DIRECTORY/preprocess.json`` and check the subword files
    (:meth:`ModelPackage.check_subword_files`); ConfigError or DataError naming the file."""
    directory = Path(directory)
    settings_path = directory / PREPROCESS_FILE
    try:
        data = json.loads(settings_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(settings_path, f"not valid JSON ({exc.msg})", exc.lineno) from None
    package = ModelPackage(directory, PackageSettings.from_dict(data, where=str(settings_path)))
    for path in package.subword_files():
        if not path.is_file():
            raise ConfigError(f"{settings_path}: subwords {package.settings.subwords} need {path.name} beside it; it is missing")
    package.check_subword_files()
    return package


def write_package(out_dir: str | os.PathLike, checkpoint: str | os.PathLike, settings: PackageSettings,
                  codes: str | os.PathLike | None = None, vocab: str | os.PathLike | None = None,
                  spm_model: str | os.PathLike | None = None, *, note: Callable[[str], None] | None = None) -> Path:
    """Write a package directory (it replaces ``out_dir`` whole, or leaves it as it was on failure).
    BPE codes are checked against ``bpeN`` first (DataError naming them; a note for codes
    accepted on their vocabulary goes to ``note``); ``preprocess.json`` records the sha256 of
    each subword file copied (``settings.digests`` given are replaced)."""
    if settings.is_bpe != (codes is not None and vocab is not None):
        raise ValueError(f"subwords {settings.subwords}: " + ("need" if settings.is_bpe else "take no") + " codes and vocabulary")
    if settings.is_spm != (spm_model is not None):
        raise ValueError(f"subwords {settings.subwords}: " + ("need" if settings.is_spm else "take no") + " SentencePiece model")
    if settings.is_bpe:
        message = check_codes(codes, settings.merges, vocab)
        if message and note:
            note(message)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        copy_checkpoint(checkpoint, tmp / CHECKPOINT_FILE)
        if settings.is_bpe:
            shutil.copyfile(codes, tmp / CODES_FILE)
            shutil.copyfile(vocab, tmp / VOCAB_FILE)
        if settings.is_spm:
            shutil.copyfile(spm_model, tmp / SPM_MODEL_FILE)
        settings = dataclasses.replace(settings, digests=tuple((name, file_sha256(tmp / name)) for name in settings.subword_file_names))
        (tmp / PREPROCESS_FILE).write_text(json.dumps(settings.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes 0700; follow the umask like mkdir
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
