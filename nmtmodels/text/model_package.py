"""A model package: one directory with what a model needs to read raw text and write plain text
(docs/translate.md, "The model package", lists every file and key).  The workflow's rule
``model_package`` writes it into ``results/experiments/EXPERIMENT/CORPUS/model/`` with
:func:`write_package`: ``checkpoint.pt`` (the model the run decodes, without its training
state), ``preprocess.json``, and the source's subword files (``bpe.codes`` and ``bpe.vocab``,
``spm.model``, or ``lattice.bpeN.codes``/``.vocab`` for each BPE size a lattice packs), plus
``compressor.pt`` for ESC.

``preprocess.json`` holds the source and target :class:`~nmtmodels.text.preprocessing.LanguageSettings`
of the corpus' ``preprocess`` spec, the unicode form, the subword units (``bpeN``, ``spmN`` or
``char``) with BPE's vocabulary threshold or the SentencePiece model's name, the sha256 of each
subword file (``"sha256"``) and the sha256 that each model file stores of itself
(``"model_sha256"``).  Source text goes through the steps that made the training source
(:class:`~nmtmodels.text.preprocessing.TextProcessor`, then BPE, SentencePiece or characters);
the target side is undone by :func:`nmtmodels.text.postprocess.postprocess`.

**Lattice packages** (``"lattice"``): the source is the lattice of the named segmentations,
built as the workflow's rules build it (:mod:`nmtmodels.text.lattice`; the edge tokens, and
their start and end nodes as the extra inputs ``starts`` and ``ends``:
:meth:`ModelPackage.input_encoder`).  **ESC packages** (``"compression"``): the translator
first compresses the subword source with ``compressor.pt`` (its decode settings) and reads
the result as the extra input ``compressed``.

Checks: :func:`write_package` refuses BPE codes cut short or with another number of merges than
``bpeN`` asks for (:func:`nmtmodels.text.bpe_codes.check_codes`); :func:`read_package` refuses
a subword file whose sha256 differs from the recorded one, and another model's checkpoint
(DataError naming the file); packages written before the digests load without those checks.

CLI (``nmt-package``, also the rule's command as ``python -m nmtmodels.cli package``; ``--settings``
takes a preprocess.json file, or inline JSON as the rule gives it)::

    nmt-package --checkpoint CKPT --settings FILE [--codes C --vocab V | --spm-model M]
        [--lattice-bpe bpeN CODES VOCAB ...] [--compressor CKPT] --out-dir DIR
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from nmtmodels.checkpoint import load_checkpoint, save_checkpoint, stored_digest
from nmtmodels.config import ConfigError
from nmtmodels.files import DataError, current_umask, temporary_directory_beside
from nmtmodels.text.bpe_codes import check_codes
from nmtmodels.text.lattice import POSITION_UNITS, lattice_inputs
from nmtmodels.text.postprocess import SUBWORDS, postprocess
from nmtmodels.text.preprocessing import (
    SEGMENTERS,
    UNICODE_FORMS,
    LanguageSettings,
    SegmentationError,
    TextProcessor,
    WordSegmenter,
    check_type,
    language_settings,
    load_bpe,
    sentence_characters,
)

PREPROCESS_FILE = "preprocess.json"
CHECKPOINT_FILE = "checkpoint.pt"
CODES_FILE = "bpe.codes"
VOCAB_FILE = "bpe.vocab"
SPM_MODEL_FILE = "spm.model"
COMPRESSOR_FILE = "compressor.pt"
MODEL_FILES = (CHECKPOINT_FILE, COMPRESSOR_FILE)
# The compressor's search settings a package records (the compress rule's options).
COMPRESSION_DECODE_KEYS = ("beam", "length_penalty", "coverage_penalty", "max_len_a", "max_len_b", "min_len", "max_len_ratio")
FORMAT = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _is_bpe(units: str) -> bool:
    return units[:3] == "bpe" and units[3:].isdigit()


class EncodedSource(NamedTuple):
    """A raw sentence as a model reads it: source tokens separated by spaces and the integer
    extra inputs a lattice package makes (``starts``, ``ends``; space-separated integers)."""

    tokens: str
    extras: dict[str, str]


@dataclasses.dataclass(frozen=True)
class LatticeSettings:
    """``"lattice"`` of ``preprocess.json``: the segmentations a lattice packs (word segmenters
    of the source language or BPE sizes ``bpeN``), the position unit of its nodes and the
    workflow's vocabulary limit (module docstring)."""

    segmentations: tuple[str, ...]
    position_unit: str
    vocab_limit: int = 0

    @property
    def bpe_sizes(self) -> tuple[str, ...]:
        return tuple(part for part in self.segmentations if _is_bpe(part))

    @property
    def file_names(self) -> tuple[str, ...]:
        return tuple(name for part in self.bpe_sizes for name in (f"lattice.{part}.codes", f"lattice.{part}.vocab"))

    def to_dict(self) -> dict[str, Any]:
        return {"segmentations": list(self.segmentations), "position_unit": self.position_unit, "vocab_limit": self.vocab_limit}

    @classmethod
    def from_dict(cls, data: Any, lang: str, where: str) -> LatticeSettings:
        data = check_type(data, dict, where)
        parts = check_type(data.get("segmentations"), list, f"{where}.segmentations")
        known = SEGMENTERS.get(lang, ())
        if not parts:
            raise ConfigError(f"{where}.segmentations: expected at least one segmentation")
        for i, part in enumerate(parts):
            if not (isinstance(part, str) and (_is_bpe(part) or part in known)):
                raise ConfigError(f"{where}.segmentations[{i}]: expected bpeN or a {lang} segmenter "
                                  f"({', '.join(known) or 'none known'}), got {part!r}")
        unit = data.get("position_unit")
        if unit not in POSITION_UNITS:
            raise ConfigError(f"{where}.position_unit: expected one of {', '.join(POSITION_UNITS)}, got {unit!r}")
        limit = check_type(data.get("vocab_limit", 0), int, f"{where}.vocab_limit")
        return cls(tuple(parts), unit, limit)


@dataclasses.dataclass(frozen=True)
class CompressionSettings:
    """``"compression"`` of ``preprocess.json``: the ESC compressor's search settings
    (:data:`COMPRESSION_DECODE_KEYS`, over the compressor checkpoint's own) and batch size; or,
    with ``identity`` (``{"identity": true}``, no checkpoint), no compressor at all: the
    "compressed" input is the encoded source itself (x^c = x, the control of an ESC claim)."""

    decode: tuple[tuple[str, Any], ...] = ()
    batch_tokens: int = 4096
    identity: bool = False

    def to_dict(self) -> dict[str, Any]:
        if self.identity:
            return {"identity": True}
        return {"checkpoint": COMPRESSOR_FILE, "decode": dict(self.decode), "batch_tokens": self.batch_tokens}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> CompressionSettings:
        data = check_type(data, dict, where)
        if check_type(data.get("identity", False), bool, f"{where}.identity"):
            extra = sorted(set(data) - {"identity"})
            if extra:
                raise ConfigError(f"{where}.{extra[0]}: an identity compression (x^c = x) has no compressor settings")
            return cls(identity=True)
        decode = check_type(data.get("decode", {}), dict, f"{where}.decode")
        unknown = sorted(set(decode) - set(COMPRESSION_DECODE_KEYS))
        if unknown:
            raise ConfigError(f"{where}.decode.{unknown[0]}: not a compressor search setting "
                              f"(known: {', '.join(COMPRESSION_DECODE_KEYS)})")
        batch_tokens = check_type(data.get("batch_tokens", 4096), int, f"{where}.batch_tokens")
        if batch_tokens < 1:
            raise ConfigError(f"{where}.batch_tokens: must be >= 1, got {batch_tokens}")
        return cls(tuple(sorted(decode.items())), batch_tokens)


@dataclasses.dataclass(frozen=True)
class PackageSettings:
    """The content of ``preprocess.json`` (module docstring)."""

    source: LanguageSettings
    target: LanguageSettings
    unicode_form: str
    subwords: str
    vocabulary_threshold: int | None = None
    digests: tuple[tuple[str, str], ...] = ()  # (subword file name, sha256 hex); () in packages written before digests
    model_digests: tuple[tuple[str, str], ...] = ()  # (checkpoint.pt / compressor.pt, the sha256 each stores of itself)
    lattice: LatticeSettings | None = None  # the source is a lattice of these segmentations (module docstring)
    compression: CompressionSettings | None = None  # an ESC package: the compressor's settings

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
        """The names of the files beside ``preprocess.json`` that the source's subword units need
        (a lattice package: those of its BPE sizes; the target's units need none)."""
        if self.lattice is not None:
            return self.lattice.file_names
        return (CODES_FILE, VOCAB_FILE) if self.is_bpe else (SPM_MODEL_FILE,) if self.is_spm else ()

    @property
    def reads_bpe_threshold(self) -> bool:
        """Whether source BPE is applied (plain BPE or a lattice's BPE sizes), with ``vocabulary_threshold``."""
        return self.is_bpe if self.lattice is None else bool(self.lattice.bpe_sizes)

    @property
    def extra_inputs(self) -> tuple[str, ...]:
        """The extra model inputs the package makes from raw text."""
        return (("starts", "ends") if self.lattice is not None else ()) + (("compressed",) if self.compression else ())

    @property
    def merges(self) -> int | None:
        """N of ``bpeN``, else None."""
        return int(self.subwords[3:]) if self.is_bpe else None

    def to_dict(self) -> dict[str, Any]:
        def side(settings: LanguageSettings) -> dict[str, Any]:
            return {"lang": settings.lang, "tokenizer": settings.tokenizer, "join_pretokenized": settings.join_pretokenized}

        data = {"format": FORMAT, "source": side(self.source), "target": side(self.target),
                "lowercase": self.source.lowercase, "unicode_form": self.unicode_form, "subwords": self.subwords}
        if self.is_bpe and self.lattice is None:
            data["bpe"] = {"codes": CODES_FILE, "vocabulary": VOCAB_FILE, "vocabulary_threshold": self.vocabulary_threshold}
        elif self.reads_bpe_threshold:
            data["bpe"] = {"vocabulary_threshold": self.vocabulary_threshold}
        if self.is_spm and self.lattice is None:
            data["sentencepiece"] = {"model": SPM_MODEL_FILE}
        if self.lattice is not None:
            data["lattice"] = self.lattice.to_dict()
        if self.compression is not None:
            data["compression"] = self.compression.to_dict()
        if self.digests:
            data["sha256"] = dict(self.digests)
        if self.model_digests:
            data["model_sha256"] = dict(self.model_digests)
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
        lattice = compression = None
        if data.get("lattice") is not None:
            lattice = LatticeSettings.from_dict(data["lattice"], sides[0].lang, f"{where}: lattice")
        if data.get("compression") is not None:
            compression = CompressionSettings.from_dict(data["compression"], f"{where}: compression")
        settings = cls(source=sides[0], target=sides[1], unicode_form=unicode_form, subwords=subwords,
                       lattice=lattice, compression=compression)
        if settings.reads_bpe_threshold:
            bpe = check_type(data.get("bpe", {}), dict, f"{where}: bpe")
            threshold = check_type(bpe.get("vocabulary_threshold", 1), int, f"{where}: bpe.vocabulary_threshold")
            settings = dataclasses.replace(settings, vocabulary_threshold=threshold)
        if "model_sha256" in data:
            models = check_type(data["model_sha256"], dict, f"{where}: model_sha256")
            for name, digest in models.items():
                if name not in MODEL_FILES or not (isinstance(digest, str) and _SHA256.fullmatch(digest)):
                    raise ConfigError(f"{where}: model_sha256.{name}: expected {' or '.join(MODEL_FILES)} with 64 "
                                      f"lowercase hex digits, got {digest!r}")
            settings = dataclasses.replace(settings, model_digests=tuple(sorted(models.items())))
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

    @property
    def compressor(self) -> Path | None:
        """The ESC compressor's checkpoint, None unless the package has one."""
        compression = self.settings.compression
        return self.directory / COMPRESSOR_FILE if compression is not None and not compression.identity else None

    def subword_files(self) -> list[Path]:
        """The files beside ``preprocess.json`` that the subword units need."""
        return [self.directory / name for name in self.settings.subword_file_names]

    def check_subword_files(self) -> None:
        """Each subword file against its recorded sha256 (DataError naming the file); without
        digests (a package written before they were recorded), the BPE codes against ``bpeN``."""
        recorded = dict(self.settings.digests)
        if not recorded:
            if self.settings.is_bpe and self.settings.lattice is None:
                check_codes(self.codes, self.settings.merges, self.vocab)
            return
        for path in self.subword_files():
            if file_sha256(path) != recorded[path.name]:
                raise DataError(path, f"content does not match the sha256 that {PREPROCESS_FILE} records (the file was "
                                      "changed or cut short after the package was written); use another copy of the package")

    def check_model_files(self) -> None:
        """Each model file against the digest preprocess.json records (DataError naming it): only
        the digest it stores of itself is read; loading it checks its content against that."""
        for name, recorded in self.settings.model_digests:
            path = self.directory / name
            if not path.is_file():
                raise DataError(path, f"missing; {PREPROCESS_FILE} records it")
            if stored_digest(path) != recorded:
                raise DataError(path, f"is not the model this package was written with ({PREPROCESS_FILE} records "
                                      "another sha256); put the package's own file back, or package that model again")

    def source_encoder(self) -> Callable[[str], str]:
        """Raw source sentence -> model input (tokens separated by spaces): the corpus'
        normalisation and tokenisation, then BPE (codes, vocabulary, threshold), SentencePiece
        (the model) or characters; for a lattice package, the lattice's edge tokens
        (:meth:`input_encoder`).  Building it loads the tokeniser and the codes or model."""
        settings = self.settings
        if settings.lattice is not None:
            encode = self.input_encoder()
            return lambda sentence: encode(sentence).tokens
        tokenize = TextProcessor(settings.source, settings.unicode_form).tokenize
        if settings.is_bpe:
            bpe = load_bpe(self.codes, self.vocab, settings.vocabulary_threshold)
            return lambda sentence: bpe.process_line(tokenize(sentence))
        if settings.is_spm:
            from nmtmodels.text.spm import SentencePieceEncoder

            pieces = SentencePieceEncoder(self.spm_model)
            return lambda sentence: pieces.encode_line(tokenize(sentence))
        return lambda sentence: " ".join(sentence_characters(tokenize(sentence)))

    def input_encoder(self) -> Callable[[str], EncodedSource]:
        """Raw source sentence -> :class:`EncodedSource`: :meth:`source_encoder`'s tokens, and
        for a lattice package the lattice's edge tokens with their ``starts`` and ``ends``
        (module docstring: each segmentation as the workflow's rules make it, then
        :func:`nmtmodels.text.lattice.lattice_inputs`).  A segmenter that is not installed is a
        ConfigError naming the extra to install; one that changes the text a SegmentationError."""
        settings, lattice = self.settings, self.settings.lattice
        if lattice is None:
            encode = self.source_encoder()
            return lambda sentence: EncodedSource(encode(sentence), {})
        source = settings.source
        if not lattice.bpe_sizes and source.tokenizer != "moses":  # only NORM is read, which the tokeniser does not change
            source = dataclasses.replace(source, tokenizer="whitespace")  # (moses also normalises punctuation: kept)
        processor = TextProcessor(source, settings.unicode_form)
        makers: list[Callable[[str, str], list[str]]] = []
        for part in lattice.segmentations:
            if _is_bpe(part):
                bpe = load_bpe(self.directory / f"lattice.{part}.codes", self.directory / f"lattice.{part}.vocab",
                               settings.vocabulary_threshold)
                makers.append(lambda norm, tok, bpe=bpe: bpe.process_line(tok).split())
            else:
                words = WordSegmenter(settings.source.lang, part)
                makers.append(lambda norm, tok, words=words: words.segment(norm))

        def encode(sentence: str) -> EncodedSource:
            norm, tok = processor.process(sentence)  # the segment rule reads NORM, apply_bpe reads TOK
            try:
                inputs = lattice_inputs([make(norm, tok) for make in makers], lattice.position_unit)
            except ValueError as exc:
                raise SegmentationError(f"no lattice of {'+'.join(lattice.segmentations)}: {exc}") from None
            return EncodedSource(inputs.tokens, {"starts": inputs.starts, "ends": inputs.ends})

        return encode

    def postprocess(self, text: str) -> str:
        """Model output tokens -> plain text: BPE, SentencePiece pieces or characters joined,
        then detokenised for the target language."""
        settings = self.settings
        return postprocess(text, settings.target.lang, bpe=settings.is_bpe, spm=settings.is_spm, char_level=settings.is_char)

    def postprocess_source(self, text: str) -> str:
        """Source-side subword tokens (an ESC package's compressed source) -> plain text in the
        source language."""
        settings = self.settings
        return postprocess(text, settings.source.lang, bpe=settings.is_bpe, spm=settings.is_spm, char_level=settings.is_char)


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
    package.check_model_files()
    return package


def write_package(out_dir: str | os.PathLike, checkpoint: str | os.PathLike, settings: PackageSettings,
                  codes: str | os.PathLike | None = None, vocab: str | os.PathLike | None = None,
                  spm_model: str | os.PathLike | None = None, *,
                  lattice_bpe: dict[str, tuple[str | os.PathLike, str | os.PathLike]] | None = None,
                  compressor: str | os.PathLike | None = None, note: Callable[[str], None] | None = None) -> Path:
    """Write a package directory (it replaces ``out_dir`` whole, or leaves it as it was on failure).
    ``lattice_bpe``: ``bpeN`` -> (codes, vocabulary) of each BPE size ``settings.lattice`` packs;
    ``compressor``: the ESC compressor's checkpoint (``settings.compression``).  BPE codes are
    checked against ``bpeN`` first (DataError naming them; a note for codes accepted on their
    vocabulary goes to ``note``); ``preprocess.json`` records the sha256 of each subword file
    copied (``settings.digests`` given are replaced)."""
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
            save_checkpoint(tmp / name, state)
        for name, source in copies.items():
            if source is not None:
                shutil.copyfile(source, tmp / name)
        settings = dataclasses.replace(settings, digests=tuple((name, file_sha256(tmp / name)) for name in settings.subword_file_names),
                                       model_digests=tuple(sorted((name, stored_digest(tmp / name)) for name in models)))
        (tmp / PREPROCESS_FILE).write_text(json.dumps(settings.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes 0700; follow the umask like mkdir
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
