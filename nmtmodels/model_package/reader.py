"""Reading a model package: :func:`read_package` (its settings, with its files checked against
their digests) and :class:`ModelPackage`, whose encoders turn a raw sentence into what the model
reads and the model's output into plain text, the steps that made the training data
(:mod:`nmtmodels.model_package`).  Every translated sentence passes here; nothing here writes."""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError
from nmtmodels.model_package.digests import check_model_files, check_subword_files
from nmtmodels.model_package.settings import (
    CHECKPOINT_FILE,
    CODES_FILE,
    COMPRESSOR_FILE,
    PREPROCESS_FILE,
    SPM_MODEL_FILE,
    VOCAB_FILE,
    PackageSettings,
)
from nmtmodels.text.lattice import lattice_inputs
from nmtmodels.text.postprocess import postprocess
from nmtmodels.text.preprocessing import SegmentationError, TextProcessor, WordSegmenter, load_bpe, sentence_characters
from nmtmodels.text.spm import SentencePieceEncoder


class EncodedSource(NamedTuple):
    """A raw sentence as a model reads it: source tokens separated by spaces and the integer
    extra inputs a lattice package makes (``starts``, ``ends``; space-separated integers)."""

    tokens: str
    extras: dict[str, str]


@dataclasses.dataclass(frozen=True)
class ModelPackage:
    """A package directory read by :func:`read_package`: its settings and file paths."""

    directory: Path
    settings: PackageSettings
    # how postprocess joins subwords, fixed here once: each sentence's path stays in this module
    _joins: dict[str, bool] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        settings = self.settings
        object.__setattr__(self, "_joins", {"bpe": settings.is_bpe, "spm": settings.is_spm, "char_level": settings.is_char})

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

    @property
    def unchecked_model(self) -> str | None:
        """Why the checkpoint cannot be checked against this package (``preprocess.json`` records
        no ``model_sha256``: written before model digests were recorded), else None."""
        if self.settings.model_digests:
            return None
        return (f"{self.checkpoint}: cannot be checked against its package: preprocess.json records no model_sha256 "
                "(a package written before model digests were recorded), so another model's checkpoint copied in "
                "would translate all the same; package the model again to record its digest")

    def subword_files(self) -> list[Path]:
        """The files beside ``preprocess.json`` that the subword units need."""
        return [self.directory / name for name in self.settings.subword_file_names]

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
            pieces = SentencePieceEncoder(self.spm_model)
            return lambda sentence: pieces.encode_line(tokenize(sentence))
        return lambda sentence: " ".join(sentence_characters(tokenize(sentence)))

    def input_encoder(self) -> Callable[[str], EncodedSource]:
        """Raw source sentence -> :class:`EncodedSource`: :meth:`source_encoder`'s tokens, and
        for a lattice package the lattice's edge tokens with their ``starts`` and ``ends``
        (:mod:`nmtmodels.model_package`: each segmentation as the workflow's rules make it, then
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
            if part in lattice.bpe_sizes:
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
        return postprocess(text, self.settings.target.lang, **self._joins)

    def postprocess_source(self, text: str) -> str:
        """Source-side subword tokens (an ESC package's compressed source) -> plain text in the
        source language."""
        return postprocess(text, self.settings.source.lang, **self._joins)


def package_directory(path: str | os.PathLike) -> Path | None:
    """The package directory of ``path`` (the directory itself, or a checkpoint in it), or
    None when there is no ``preprocess.json`` there."""
    path = Path(path)
    directory = path if path.is_dir() else path.parent
    return directory if (directory / PREPROCESS_FILE).is_file() else None


def read_package(directory: str | os.PathLike) -> ModelPackage:
    """Read ``DIRECTORY/preprocess.json`` and check the subword files
    (:func:`~nmtmodels.model_package.digests.check_subword_files`, and the model files); ConfigError or DataError naming the file."""
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
    check_subword_files(directory, package.settings)
    check_model_files(directory, package.settings)
    return package


