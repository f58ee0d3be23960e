"""SentencePiece subwords (Kudo and Richardson, 2018), unigram or BPE, with the
``sentencepiece`` library: the other subword option beside subword-nmt BPE
(:mod:`nmtmodels.text.preprocessing`).

SentencePiece is meant for raw text; here it reads the same normalised and tokenised text
that subword-nmt reads (the TOK text of :class:`~nmtmodels.text.preprocessing.TextProcessor`),
so that everything downstream (tokenised BLEU, Moses detokenisation, lattices, the
postprocessing rules) treats both subword kinds alike:

* training: ``SentencePieceTrainer.train`` on the training text of both languages
  (``joint``) or of each language, with ``normalization_rule_name="identity"`` (the text
  is already normalised by our own steps, so encoding then decoding gives the tokenised text
  back, character for character) and ``hard_vocab_limit=False`` (a small corpus may give
  fewer pieces than asked, as subword-nmt stops merging early);
* encoding: ``SentencePieceProcessor.encode(out_type=str)``, the pieces separated by
  spaces; a piece that starts a word carries ``▁`` (U+2581);
* decoding: :func:`nmtmodels.text.postprocess.remove_spm` joins the pieces and turns each ``▁``
  back into a space (what ``SentencePieceProcessor.decode_pieces`` does, without needing
  the model), then the target language's Moses detokeniser runs as for BPE.

The vocabulary of a side is ``piece count`` over its encoded training text, as for BPE, so
``nmt-train --src-vocab`` and the joint vocabulary (``model.share_embeddings``) read it
unchanged.
"""
from __future__ import annotations

import collections
import dataclasses
import io
import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError, read_lines

MODEL_TYPES = ("unigram", "bpe")
# Lines per call of the (multi-threaded) C++ encoder.
ENCODE_CHUNK = 10000
SEED = 1


def _sentencepiece():
    try:
        import sentencepiece  # lazy: an optional dependency (only spmN subwords need it)
    except ModuleNotFoundError:
        raise ConfigError("SentencePiece subwords need the Python package 'sentencepiece': "
                          "pip install -c requirements/lock.txt sentencepiece") from None
    return sentencepiece


def _check(value: Any, ok: bool, where: str, expected: str) -> None:
    if not ok:
        raise ConfigError(f"{where}: expected {expected}, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class SentencePieceSettings:
    """One corpus' ``sentencepiece`` section (schemas/config.schema.yaml) without its sizes."""

    model_type: str = "unigram"
    joint: bool = True
    character_coverage: float = 1.0
    input_sentence_size: int = 0

    @classmethod
    def from_dict(cls, data: Any, where: str) -> SentencePieceSettings:
        """Read and check a section; one-line ConfigError naming ``where`` and the key.
        ``vocab_sizes`` is checked here too (:func:`vocab_sizes`) and otherwise ignored."""
        _check(data, isinstance(data, dict), where, "a mapping")
        known = {field.name for field in dataclasses.fields(cls)} | {"vocab_sizes"}
        for key in data:
            if key not in known:
                raise ConfigError(f"{where}.{key}: unknown key (known: {', '.join(sorted(known))})")
        vocab_sizes(data, where)
        defaults = cls()
        model_type = data.get("model_type", defaults.model_type)
        _check(model_type, model_type in MODEL_TYPES, f"{where}.model_type", " or ".join(MODEL_TYPES))
        joint = data.get("joint", defaults.joint)
        _check(joint, isinstance(joint, bool), f"{where}.joint", "true or false")
        coverage = data.get("character_coverage", defaults.character_coverage)
        _check(coverage, isinstance(coverage, (int, float)) and not isinstance(coverage, bool) and 0 < coverage <= 1,
               f"{where}.character_coverage", "a number in (0, 1]")
        size = data.get("input_sentence_size", defaults.input_sentence_size)
        _check(size, _is_int(size) and size >= 0, f"{where}.input_sentence_size", "an integer >= 0 (0: every sentence)")
        return cls(model_type=model_type, joint=joint, character_coverage=float(coverage), input_sentence_size=size)


def vocab_sizes(data: dict[str, Any], where: str) -> list[int]:
    """``vocab_sizes`` of a section: a non-empty list of distinct integers >= 1."""
    sizes = data.get("vocab_sizes")
    expected = "a non-empty list of distinct integers >= 1 (e.g. [8000])"
    _check(sizes, isinstance(sizes, list) and bool(sizes), f"{where}.vocab_sizes", expected)
    for i, size in enumerate(sizes):
        _check(size, _is_int(size) and size >= 1, f"{where}.vocab_sizes[{i}]", "an integer >= 1")
        if size in sizes[:i]:
            raise ConfigError(f"{where}.vocab_sizes[{i}]: {size} is listed twice")
    return list(sizes)


def train_model(inputs: Sequence[str | os.PathLike], vocab_size: int, settings: SentencePieceSettings, *,
                threads: int = 1) -> bytes:
    """The serialised model (the content of a ``.model`` file) trained on the lines of ``inputs``.

    DataError for an input that is missing or empty; ValueError with SentencePiece's own
    message when it cannot train (e.g. a vocabulary smaller than the characters to cover).
    """
    sentencepiece = _sentencepiece()
    for path in inputs:
        if not any(line.strip() for line in read_lines(path)):
            raise DataError(path, "no text to learn SentencePiece pieces from")
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be at least 1, got {vocab_size}")
    sentencepiece.set_random_generator_seed(SEED)  # the sample of input_sentence_size; EM and merges are deterministic
    model = io.BytesIO()
    # The lines go in through Python (read_lines: gzip, a byte-order mark, bad UTF-8 named by file and line).
    read_errors: list[DataError] = []

    def lines() -> Iterator[str]:
        try:
            yield from itertools.chain.from_iterable(read_lines(path) for path in inputs)
        except DataError as exc:  # sentencepiece would report it wrapped in several lines of its own
            read_errors.append(exc)
            raise
    options: dict[str, Any] = dict(
        sentence_iterator=lines(), model_writer=model, vocab_size=vocab_size,
        model_type=settings.model_type, character_coverage=settings.character_coverage,
        normalization_rule_name="identity", hard_vocab_limit=False, num_threads=max(1, threads), minloglevel=1,
    )
    if settings.input_sentence_size:
        options.update(input_sentence_size=settings.input_sentence_size, shuffle_input_sentence=True)
    try:
        sentencepiece.SentencePieceTrainer.train(**options)
    except RuntimeError as exc:
        if read_errors:
            raise read_errors[0] from None
        raise ValueError(f"SentencePiece cannot learn {vocab_size} {settings.model_type} pieces from "
                         f"{', '.join(map(os.fspath, inputs))}: {exc}") from None
    return model.getvalue()


class SentencePieceEncoder:
    """A trained model (a ``.model`` file, or its bytes) that encodes tokenised text into pieces."""

    def __init__(self, model: str | os.PathLike | bytes):
        sentencepiece = _sentencepiece()
        try:
            if isinstance(model, bytes):
                self.processor = sentencepiece.SentencePieceProcessor(model_proto=model)
            else:
                if not os.path.isfile(model):
                    raise DataError(model, "no such SentencePiece model")
                self.processor = sentencepiece.SentencePieceProcessor(model_file=os.fspath(model))
        except (RuntimeError, OSError) as exc:
            raise DataError("<model bytes>" if isinstance(model, bytes) else model,
                            f"not a SentencePiece model ({exc})") from None

    def pieces(self, line: str) -> list[str]:
        return self.processor.encode(line, out_type=str)

    def encode_line(self, line: str) -> str:
        """The pieces of one line separated by spaces (empty for an empty line)."""
        return " ".join(self.pieces(line))

    def encode_lines(self, lines: Iterable[str], *, threads: int = 1) -> Iterator[str]:
        """:meth:`encode_line` over ``lines``, in order, in batches on ``threads`` C++ threads."""
        batch: list[str] = []
        for line in lines:
            batch.append(line)
            if len(batch) == ENCODE_CHUNK:
                yield from self._encode_batch(batch, threads)
                batch = []
        if batch:
            yield from self._encode_batch(batch, threads)

    def _encode_batch(self, batch: list[str], threads: int) -> Iterator[str]:
        for pieces in self.processor.encode(batch, out_type=str, num_threads=max(1, threads)):
            yield " ".join(pieces)


def piece_counts(encoded: Iterable[str]) -> collections.Counter:
    """Counts of the space-separated pieces of encoded lines (a side's vocabulary)."""
    counts: collections.Counter = collections.Counter()
    for line in encoded:
        counts.update(line.split())
    return counts
