"""The settings of a model package: ``preprocess.json`` (:class:`PackageSettings`, with the
lattice's and the compressor's sections) and the names of the files beside it.  Torch-free: the
workflow's DAG builds a run's settings with :func:`settings_from_corpus`, and the reader, the
writer and the digests share these names (:mod:`nmtmodels.model_package`)."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from nmtmodels.config import ConfigError
from nmtmodels.text.lattice import POSITION_UNITS
from nmtmodels.text.postprocess import SUBWORDS
from nmtmodels.text.preprocessing import SEGMENTERS, UNICODE_FORMS, LanguageSettings, check_type, language_settings

PREPROCESS_FILE = "preprocess.json"
CHECKPOINT_FILE = "checkpoint.pt"
CODES_FILE = "bpe.codes"
VOCAB_FILE = "bpe.vocab"
SPM_MODEL_FILE = "spm.model"
COMPRESSOR_FILE = "compressor.pt"
MODEL_FILES = (CHECKPOINT_FILE, COMPRESSOR_FILE)
# The compressor's search settings a package records (the compress rule's options).
COMPRESSION_DECODE_KEYS = ("beam", "length_penalty", "coverage_penalty", "max_len_a", "max_len_b", "min_len", "max_len_ratio",
                           "subsequence")
FORMAT = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _is_bpe(units: str) -> bool:
    return units[:3] == "bpe" and units[3:].isdigit()


@dataclasses.dataclass(frozen=True)
class LatticeSettings:
    """``"lattice"`` of ``preprocess.json``: the segmentations a lattice packs (word segmenters
    of the source language or BPE sizes ``bpeN``), the position unit of its nodes and the
    workflow's vocabulary limit (:mod:`nmtmodels.model_package`)."""

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
    """The content of ``preprocess.json`` (:mod:`nmtmodels.model_package`)."""

    source: LanguageSettings
    target: LanguageSettings
    unicode_form: str
    subwords: str
    vocabulary_threshold: int | None = None
    digests: tuple[tuple[str, str], ...] = ()  # (subword file name, sha256 hex); () in packages written before digests
    model_digests: tuple[tuple[str, str], ...] = ()  # (checkpoint.pt / compressor.pt, the sha256 each stores of itself)
    lattice: LatticeSettings | None = None  # the source is a lattice of these segmentations (:mod:`nmtmodels.model_package`)
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


