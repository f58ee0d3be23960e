"""Translate raw text with a trained model: the Python API behind ``nmt-translate``.

::

    from nmtmodels import Translator

    translator = Translator.from_checkpoint("results/experiments/baseline/multi30k_en_de/model")
    for translation in translator.translate(["Two dogs are playing in the snow."], beam=4, nbest=2):
        print(translation.text, [(h.text, h.score) for h in translation.hypotheses])

:meth:`Translator.stream` is the one translation loop: an iterable of raw lines (text, or bytes
read from a file or a pipe) in, a :class:`LineTranslation` per line out, read and searched a
chunk at a time (memory bounded whatever the input's size; ``interactive``: line by line), a bad
line (invalid UTF-8, too long, a segmenter's failure) costing that line only; its ``stats``
(:class:`~nmtmodels.decoding.translation_stats.TranslationStats`) count unknown tokens and the
failed, short, truncated, unfinished, degenerate and multi-sentence lines, and give the
warnings ``nmt-translate`` prints.  ``nmt-translate`` feeds it standard input or ``--input`` and
only formats what comes back; :meth:`Translator.translate_lines` (a list),
:meth:`Translator.translate` (sentences that must all translate) and
:meth:`Translator.translate_file` (a file encoded like the training source, with
``pretokenized``; the workflow's rules) are thin wrappers over it.

``from_checkpoint`` takes a model package directory (:mod:`nmtmodels.model_package`, written by
the workflow's rule ``model_package``) or a checkpoint inside one.  Raw input then goes
through the steps that made the training source (:class:`nmtmodels.text.preprocessing.TextProcessor`
with the corpus' settings, then subword-nmt BPE with the package's codes, vocabulary and
threshold, or characters), and each hypothesis is turned back into plain text
(:func:`nmtmodels.text.postprocess.postprocess`: BPE removal or character joining, Moses
detokenisation or the CJK space rule for the target language).

``pretokenized=True`` takes any checkpoint and reads input that is already encoded like the
training source (what the workflow's rules pass); hypotheses are then the model's tokens
joined by spaces, as ``nmt-translate --pretokenized`` writes them.

Model families with ``extra_inputs`` read raw text through their package too: a lattice
package segments each sentence with its segmenters (or BPE sizes), builds the lattice and
reads its edge tokens with their ``starts`` and ``ends`` (:meth:`ModelPackage.input_encoder
<nmtmodels.model_package.reader.ModelPackage.input_encoder>`); an ESC package first compresses
the encoded source with its compressor (:class:`nmtmodels.decoding.compression.Compressor`) and
reads the compressed tokens as ``compressed``, which :attr:`Translation.compressed` shows.  A
checkpoint whose extra inputs its package does not make (a package written before these
were packaged, or none) is refused in one line by ``from_checkpoint``.
"""
from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import torch

from nmtmodels.config import ConfigError, from_dict
from nmtmodels.data import ExtraField, ParallelDataset, TooLong
from nmtmodels.decoding import search
from nmtmodels.decoding.compression import Compressor
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.constraints import SourceSubsequence
from nmtmodels.decoding.loading import load, raw_text_refusal
from nmtmodels.decoding.scorer import Hypothesis as SearchHypothesis
from nmtmodels.decoding.translation_stats import ExtraInput, LineTranslation, TextHypothesis, Translation, TranslationStats
from nmtmodels.devices import resolve_device
from nmtmodels.files import DataError, decode_line, raw_lines
from nmtmodels.model_package.reader import EncodedSource, ModelPackage
from nmtmodels.text.preprocessing import SegmentationError
from nmtmodels.text.sentences import joiner, sentence_splitter
from nmtmodels.vocab import Vocabulary

__all__ = ["ExtraInput", "LineTranslation", "TextHypothesis", "Translation", "Translator", "TranslationStream",
           "raw_text_refusal"]

# Lines read, encoded and searched together (sorted into batches by length within each chunk):
# memory is bounded by this, not by the input's size.
CHUNK_LINES = 5000


class Translator:
    """A model with its vocabularies, decode defaults and (unless ``pretokenized``) its
    preprocessing; build it with :meth:`from_checkpoint`."""

    def __init__(self, model: torch.nn.Module, src_vocab: Vocabulary, tgt_vocab: Vocabulary, state: dict[str, Any], *,
                 package: ModelPackage | None, device: torch.device | str = "cpu", name: str = "<checkpoint>"):
        self.model, self.src_vocab, self.tgt_vocab, self.state = model, src_vocab, tgt_vocab, state
        self.package = package
        self.device = resolve_device(device)
        self.name = name
        self.family = state["model_config"].get("family", "?")
        self._encode = package.input_encoder() if package is not None else None
        self._detect = self._sentence_detector() if package is not None else None  # multi-sentence lines
        self.compressor = None
        # an identity compression (x^c = x, an ESC control): the compressed input is the encoded source
        self.identity_compression = bool(package is not None and package.settings.compression is not None
                                         and package.settings.compression.identity)
        if package is not None and package.compressor is not None and "compressed" in model.extra_inputs:
            compressor = Translator.from_checkpoint(package.compressor, device=self.device, pretokenized=True)
            self.compressor = Compressor(compressor, package.settings.compression)

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike | Sequence[str | os.PathLike], *, device: torch.device | str = "cpu",
                        pretokenized: bool = False, threads: int | None = None, src_vocab: str | os.PathLike | None = None,
                        tgt_vocab: str | os.PathLike | None = None) -> Translator:
        """Load a package directory or a checkpoint (in a package directory unless
        ``pretokenized``); several paths: an :class:`~nmtmodels.decoding.ensemble.Ensemble` of their
        models, with the first one's package and decode settings.  ``threads``: torch's
        intra-op threads (as CTranslate2's ``intra_threads``; a setting of the whole process),
        None to leave them.  ``src_vocab`` / ``tgt_vocab``: vocabulary files that must be the
        checkpoint's (by fingerprint).  CheckpointError / ConfigError in one line naming the path."""
        loaded = load(path, device=device, pretokenized=pretokenized, threads=threads, src_vocab=src_vocab, tgt_vocab=tgt_vocab)
        return cls(**loaded._asdict())

    @property
    def pretokenized(self) -> bool:
        return self.package is None

    @property
    def source_lang(self) -> str | None:
        return self.package.settings.source.lang if self.package else None

    @property
    def target_lang(self) -> str | None:
        return self.package.settings.target.lang if self.package else None

    @property
    def compresses(self) -> bool:
        """Whether the model reads a compressed source that the translator makes (an ESC package)."""
        return self.compressor is not None or self.identity_compression

    @property
    def max_source_tokens(self) -> int:
        """The model's source positions, ``</s>`` included: a longer source is too long (or cut)."""
        return self.model.max_positions()[0]

    # ------------------------------------------------------------------ source side
    def encode(self, sentence: str) -> str:
        """The model's source tokens for one raw sentence (separated by spaces):
        :meth:`nmtmodels.model_package.reader.ModelPackage.source_encoder`.  With ``pretokenized``
        the sentence is returned as it is."""
        return self._encode_source(sentence).tokens

    def _encode_source(self, sentence: str) -> EncodedSource:
        """The source tokens and the integer extra inputs (lattice ``starts``/``ends``) of one
        raw sentence: :meth:`nmtmodels.model_package.reader.ModelPackage.input_encoder`."""
        return EncodedSource(sentence, {}) if self._encode is None else self._encode(sentence)

    def encode_line(self, sentence: str, name: str = "<input>", number: int = 1) -> EncodedSource:
        """The source tokens and extra inputs of one raw sentence, with a segmenter's failure as a
        DataError naming ``name`` and line ``number``."""
        try:
            return self._encode_source(sentence)
        except SegmentationError as exc:
            raise DataError(name, str(exc), number) from None

    def compress(self, encoded: Sequence[str | EncodedSource], *, name: str = "<input>", first_line: int = 1) -> list[str] | None:
        """The compressed source lines of an ESC package's translator (:mod:`nmtmodels.decoding.compression`;
        the encoded source itself for an identity compression), None for other translators."""
        if self.identity_compression:
            return [_tokens(line) for line in encoded]
        if self.compressor is None:
            return None
        return self.compressor.compress([_tokens(line) for line in encoded], name=name, first_line=first_line)

    def encoded_dataset(self, encoded: Sequence[str | EncodedSource], *, name: str = "<input>", first_line: int = 1,
                        too_long: TooLong = "error", fields: Mapping[str, ExtraField] | None = None) -> ParallelDataset:
        """The source dataset of lines already encoded (by :meth:`encode_line`, or ``pretokenized``
        input) with the extra inputs the model reads: those of the encoding (``fields`` names and
        types those of pretokenized input), and for an ESC package ``compressed`` (:meth:`compress`);
        errors name ``name`` and the line counted from ``first_line``."""
        extras: dict[str, tuple[ExtraField, Sequence[str]]] = {}
        for key, pad in self.model.extra_inputs.items():
            if key == "compressed" and self.package is not None:
                lines = self.compress(encoded, name=name, first_line=first_line)
                extras[key] = (ExtraField(f"{name} (compressed)", pad, tokens=True), lines)
            elif fields is not None and key in fields or self.package is not None:
                field = (fields or {}).get(key) or ExtraField(f"{name} ({key})", pad)
                extras[key] = (field, [line.extras[key] for line in encoded])
        return ParallelDataset.from_lines([_tokens(line) for line in encoded], self.src_vocab,
                                          max_positions=self.model.max_positions(), too_long=too_long, name=name,
                                          first_line=first_line, extras=extras)

    def _check_encoded(self, encoded: EncodedSource, *, name: str, number: int, too_long: TooLong,
                       fields: Mapping[str, ExtraField]) -> None:
        """DataError naming ``name`` (or an extra input's) and line ``number`` when one encoded
        line cannot be read: too long (unless ``too_long="truncate"``), an integer extra input
        that is not integers.  Counts tokens; builds no dataset."""
        limit = self.max_source_tokens
        count = len(encoded.tokens.split()) + 1
        if count > limit and too_long != "truncate":
            raise DataError(name, f"source has {count} tokens incl. </s>, over the model's limit {limit} (too long)", number)
        for key, field in fields.items():
            text = encoded.extras[key]
            if field.tokens and len(text.split()) + 1 > limit and too_long != "truncate":
                raise DataError(field.path, f"{len(text.split()) + 1} tokens incl. </s>, over the model's limit {limit} "
                                            "(too long)", number)
            if not field.tokens:
                try:
                    [int(value) for value in text.split()]
                except ValueError:
                    raise DataError(field.path, f"expected space-separated integers, got {text[:60]!r}", number) from None

    def _compressed_tokens(self, dataset: ParallelDataset, index: int) -> list[str] | None:
        """The compressed tokens that the model reads for example ``index`` (ESC), else None."""
        rows = dataset.extras.get("compressed")
        return None if rows is None or self.package is None else self.src_vocab.decode(rows[index], keep_unk=True)

    def _source_text(self, tokens: Sequence[str]) -> str:
        """Source-side tokens (a compressed source) as plain text in the source language."""
        return self.package.postprocess_source(" ".join(tokens)) if self.package is not None else " ".join(tokens)

    # ------------------------------------------------------------------ search
    def decode_config(self, **overrides: Any) -> DecodeConfig:
        """The checkpoint's decode settings (those of training) with ``overrides`` that are not None."""
        decode = {**(self.state.get("decode_config") or {}), **{k: v for k, v in overrides.items() if v is not None}}
        return from_dict(DecodeConfig, decode, where="decode")

    def search(self, dataset: ParallelDataset, decode_cfg: DecodeConfig, *, max_tokens: int = 4096,
               amp: Literal["bf16", "none"] = "none", progress: Callable[[int], None] | None = None) -> list[list[SearchHypothesis]]:
        """Search hypotheses (token ids) for every example of ``dataset``, in order;
        ``progress`` is called with the number of sentences of each finished batch."""
        constraint = SourceSubsequence.from_vocabs(self.src_vocab, self.tgt_vocab) if decode_cfg.subsequence else None
        return search.translate_dataset(self.model, dataset, decode_cfg, max_tokens=max_tokens, device=self.device,
                                        amp=amp, progress=progress, constraint=constraint)

    # ------------------------------------------------------------------ target side
    def _target_tokens(self, hypothesis: SearchHypothesis) -> list[str]:
        return self.tgt_vocab.decode(hypothesis.tokens, keep_unk=True)

    def render(self, hypothesis: SearchHypothesis) -> TextHypothesis:
        """A search hypothesis as text: detokenised plain text, or (``pretokenized``) the tokens."""
        tokens = self._target_tokens(hypothesis)
        text = " ".join(tokens)
        if self.package is not None:
            text = self.package.postprocess(text)
        return TextHypothesis(text=text, score=float(hypothesis.score), tokens=tokens, attention=hypothesis.attention,
                              finished=getattr(hypothesis, "finished", True))

    # ------------------------------------------------------------------ the translation stream
    def stream(self, lines: Iterable[str | bytes], *, name: str = "<input>", first_line: int = 1,
               decode: DecodeConfig | None = None, split_sentences: bool = False, too_long: TooLong = "error",
               max_tokens: int = 4096, amp: Literal["bf16", "none"] = "none",
               progress: Callable[[int], None] | None = None, errors: Literal["keep", "raise"] = "keep",
               interactive: bool = False, extras: Mapping[str, ExtraInput] | None = None,
               chunk_lines: int | None = None, first_chunk_lines: int | None = None,
               stats: TranslationStats | None = None) -> TranslationStream:
        """The one translation loop: raw lines in, a :class:`LineTranslation` per line out, in order.

        ``lines`` are lines ``first_line``, ... of ``name`` (for messages): text, or bytes as read
        from a file or a pipe (UTF-8, :func:`nmtmodels.files.decode_line`: a byte-order mark on line
        1 and the line end dropped), any iterable (a file, ``sys.stdin.buffer``, a generator).  They
        are read :data:`CHUNK_LINES` (``chunk_lines``) at a time (``first_chunk_lines``: the first
        chunk that many, each next one twice the last, up to that: the first lines come out
        after a short search, as a reader of standard output wants), encoded like the training source
        (:meth:`encode_line`; as they are with ``pretokenized``), with ``split_sentences`` sentence
        by sentence, and searched in batches of ``max_tokens`` tokens sorted by length within the
        chunk; a chunk's lines are yielded before the next chunk is read, so memory does not grow
        with the input.  ``interactive``: each line is translated and yielded as soon as it is
        read, nothing read ahead.  ``extras``: the model's extra inputs of pretokenized input, name
        -> :class:`ExtraInput` (lines aligned with ``lines``; lattice ``starts``/``ends``,
        ``compressed`` tokens).  A line that cannot be read (invalid UTF-8, a segmenter's failure,
        too long unless ``too_long="truncate"``, a bad extra input) gets its DataError in its
        :class:`LineTranslation` (``errors="keep"``) or raises it (``"raise"``) before its chunk is
        searched.  ``progress``: called with the sentences of each search batch.  ``decode``: the
        search settings (default: the checkpoint's), checked before the first line is read.  The
        iterator's ``stats`` (``stats``, or a new
        :class:`~nmtmodels.decoding.translation_stats.TranslationStats`) count and flag the lines as
        they go by, and give their warnings (``stats.messages()``)."""
        stats = stats if stats is not None else TranslationStats()
        stats.name, stats.max_source_tokens, stats.split_sentences = name, self.max_source_tokens, split_sentences
        stats.hint = ("is the input tokenised and BPE-encoded like the training source?" if self.pretokenized
                      else "the model's source vocabulary covers little of this input: text in another language, script "
                           f"or spelling than its training data ({self.source_lang}; e.g. traditional against simplified "
                           "characters, mixed scripts), or words it never saw, become <unk> and are dropped from the "
                           "translation")
        if decode is not None:
            decode.validate()  # once, before the first line: the search takes checked settings
        run = dict(decode=decode if decode is not None else self.decode_config(), too_long=too_long, max_tokens=max_tokens,
                   amp=amp, progress=progress, errors=errors, stats=stats)
        fields = {key: ExtraField(spec.name or f"{name} ({key})", self.model.extra_inputs.get(key, 0), spec.tokens)
                  for key, spec in (extras or {}).items()}
        lines_in = numbered(lines, name, first_line, {key: spec.lines for key, spec in (extras or {}).items()}, fields)
        size = 1 if interactive else max(1, chunk_lines or CHUNK_LINES)
        read = chunks(lines_in, size, stats, first_line, read_ahead=not interactive, first=first_chunk_lines)
        split = self._sentence_splitter() if split_sentences else None
        detect = None if split_sentences else self._detect
        return TranslationStream((line for chunk in read for line in self._translate_chunk(chunk, name, split, detect, fields, **run)),
                                 stats)

    def translate_lines(self, lines: Sequence[str | bytes], **options: Any) -> list[LineTranslation]:
        return list(self.stream(lines, **options))  # the stream as a list (the same keywords)

    def translate(self, sentences: Sequence[str], *, beam: int | None = None, nbest: int = 1, return_attention: bool = False,
                  max_tokens: int = 4096, too_long: TooLong = "error", amp: Literal["bf16", "none"] = "none",
                  stats: TranslationStats | None = None, **decode: Any) -> list[Translation]:
        """Translate ``sentences`` (raw text; encoded text with ``pretokenized``), in order:
        :meth:`stream` with a sentence per line, where any bad sentence raises its DataError.

        ``beam`` (default: the checkpoint's decode settings) and ``nbest`` (hypotheses per
        sentence, at most ``beam``); ``return_attention`` keeps each hypothesis' attention;
        other keywords are :class:`~nmtmodels.decoding.config.DecodeConfig` fields (``length_penalty``,
        ``max_len_a``, ...).  ``max_tokens``: the token budget of a batch.  ``amp="bf16"``: the model
        runs under bf16 autocast on CUDA or on a CPU with native bf16, elsewhere in fp32 with a
        RuntimeWarning once (:mod:`nmtmodels.precision`); default ``"none"``: fp32.  ``stats``: a
        :class:`~nmtmodels.decoding.translation_stats.TranslationStats` to fill.
        """
        if isinstance(sentences, str):
            raise TypeError("translate takes a list of sentences, not one string")
        decode_cfg = self.decode_config(beam=beam, nbest=nbest, return_attention=return_attention, **decode)
        lines = self.stream(sentences, decode=decode_cfg, too_long=too_long, max_tokens=max_tokens, amp=amp,
                            errors="raise", stats=stats)
        return [line.translations[0] for line in lines]

    def translate_file(self, path: str | os.PathLike, *, extras: Mapping[str, tuple[bool, str]] | None = None,
                       **options: Any) -> list[LineTranslation]:
        """Translate a file encoded like the training source (``pretokenized``: what the
        workflow's rules pass), with the model's extra inputs read from ``extras`` (name ->
        (token input?, file), line-aligned with ``path``): :meth:`stream` over its lines, where
        any bad line raises a DataError naming its file and line (other keywords: :meth:`stream`'s)."""
        inputs = {key: ExtraInput(raw_lines(file), tokens, str(file)) for key, (tokens, file) in (extras or {}).items()}
        results = list(self.stream(raw_lines(path), name=str(path), extras=inputs, **{"errors": "raise", **options}))
        if not results:
            raise DataError(path, "empty file (no lines)")
        return results

    def _translate_chunk(self, chunk: Sequence[tuple[int, str | bytes, dict[str, str | bytes]]], name: str,
                         split: Callable[[str], list[str]] | None, detect: Callable[[str], bool] | None,
                         fields: Mapping[str, ExtraField], *, decode: DecodeConfig, too_long: TooLong, max_tokens: int,
                         amp: Literal["bf16", "none"], progress: Callable[[int], None] | None,
                         errors: Literal["keep", "raise"], stats: TranslationStats) -> Iterator[LineTranslation]:
        """The lines of one chunk read, checked line by line, searched together and counted."""
        encoded: list[EncodedSource] = []
        sources: list[str] = []
        numbers: list[int] = []  # the input line of each encoded sentence
        failed: dict[int, DataError] = {}
        several: set[int] = set()
        for number, line, raw_extras in chunk:
            try:
                text = decode_line(line, number, name)
                sentences = split(text) if split is not None else [text]
                line_extras = {key: decode_line(value, number, fields[key].path) for key, value in raw_extras.items()}
                line_encoded = [self.encode_line(sentence, name, number) for sentence in sentences]
                if line_extras:
                    line_encoded = [EncodedSource(e.tokens, {**e.extras, **line_extras}) for e in line_encoded]
                for sentence in line_encoded:
                    self._check_encoded(sentence, name=name, number=number, too_long=too_long, fields=fields)
            except DataError as exc:
                if errors == "raise":
                    raise
                failed[number] = exc
                stats.add_failed(number)
                continue
            if detect is not None and detect(text):
                several.add(number)
            encoded += line_encoded
            sources += sentences
            numbers += [number] * len(sentences)
        translations: list[Translation] = []
        if encoded:
            limit = self.max_source_tokens
            dataset = self.encoded_dataset(encoded, name=name, first_line=numbers[0], too_long=too_long, fields=fields)
            results = self.search(dataset, decode, max_tokens=max_tokens, amp=amp, progress=progress)
            translations = [self._translation(dataset, index, hyps, decode.nbest, where=f"{name}:{numbers[index]}",
                                              source=sources[index], truncated=len(encoded[index].tokens.split()) >= limit)
                            for index, hyps in enumerate(results)]
        stats.add_sentences(translations)
        by_line: dict[int, list[Translation]] = {}
        for number, translation in zip(numbers, translations):
            by_line.setdefault(number, []).append(translation)
        joiner = self._target_joiner() if split is not None else " "
        for number, _, _ in chunk:
            line = by_line.get(number, [])
            flags = stats.add_line(number, line, number in several) if line else frozenset()
            yield LineTranslation(number, line, failed.get(number), joiner, flags)

    def _translation(self, dataset: ParallelDataset, index: int, hyps: Sequence[SearchHypothesis], nbest: int, *,
                     where: str, source: str | None = None, truncated: bool = False) -> Translation:
        """Example ``index`` of ``dataset`` (input ``where``) with its search hypotheses as a Translation."""
        if not hyps:  # the search guarantees a hypothesis per sentence; never shift lines
            raise RuntimeError(f"{where}: the search returned no hypothesis")
        compressed = self._compressed_tokens(dataset, index)
        hypotheses = [self.render(hyp) for hyp in hyps[:nbest]]  # the target side, then the source's tokens
        source_tokens = self.src_vocab.decode(dataset.src[index], keep_unk=True)
        return Translation(source=" ".join(source_tokens) if source is None else source, source_tokens=source_tokens,
                           hypotheses=hypotheses, compressed=None if compressed is None else self._source_text(compressed),
                           compressed_tokens=compressed, truncated=truncated)

    def _sentence_splitter(self) -> Callable[[str], list[str]]:
        if self.package is None:
            raise ConfigError("split_sentences needs raw text and a model package (not pretokenized input)")
        return sentence_splitter(self.package.settings.source.lang)

    def _sentence_detector(self) -> Callable[[str], bool] | None:
        """Whether a line holds several sentences (the source language's splitter, run only on lines
        with a sentence mark before their end); None when the language has no splitter."""
        try:
            split = self._sentence_splitter()
        except ConfigError:
            return None
        return lambda text: _INNER_END.search(text) is not None and len(split(text)) > 1

    def _target_joiner(self) -> str:
        return joiner(self.target_lang) if self.target_lang else " "


class TranslationStream:
    """The iterator :meth:`Translator.stream <nmtmodels.decoding.translator.Translator.stream>`
    returns: its :class:`~nmtmodels.decoding.translation_stats.LineTranslation` objects, one
    per input line in order, and ``stats``, filled as they go by."""

    def __init__(self, lines: Iterator[LineTranslation], stats: TranslationStats):
        self._lines, self.stats = lines, stats

    def __iter__(self) -> TranslationStream:
        return self

    def __next__(self) -> LineTranslation:
        return next(self._lines)


def numbered(lines: Iterable[str | bytes], name: str, first_line: int, extras: Mapping[str, Iterable[str | bytes]],
              fields: Mapping[str, ExtraField]) -> Iterator[tuple[int, str | bytes, dict[str, str | bytes]]]:
    """(line number, line, its extra inputs' lines); DataError when the extra inputs' line counts differ."""
    keys = list(extras)
    sentinel = object()
    count = 0
    for count, row in enumerate(itertools.zip_longest(lines, *extras.values(), fillvalue=sentinel), start=1):
        if any(value is sentinel for value in row):
            names = [name, *(fields[key].path for key in keys)]
            short = [n for n, value in zip(names, row) if value is sentinel]
            long = [n for n, value in zip(names, row) if value is not sentinel]
            raise DataError(short[0], f"has {count - 1} lines but {long[0]} has more (line counts differ)")
        yield first_line + count - 1, row[0], dict(zip(keys, row[1:]))


def chunks(lines: Iterator[Any], size: int, stats: TranslationStats, first_line: int, *,
            read_ahead: bool, first: int | None = None) -> Iterator[list[Any]]:
    """``lines`` in lists of ``size`` (``first``: the first list that many, each next one twice
    the last, up to ``size``); ``stats.lines_read`` and ``stats.input_done`` kept up to date
    (``read_ahead``: one line read past each list, so that a single list knows it is the last)."""
    pending: list[Any] = []
    now = max(1, min(first or size, size))
    while True:
        chunk = pending + list(itertools.islice(lines, now - len(pending)))
        pending = list(itertools.islice(lines, 1)) if read_ahead and chunk else []
        stats.input_done = not pending if read_ahead else not chunk
        if not chunk:
            return
        stats.lines_read = chunk[-1][0] - first_line + 1
        yield chunk
        now = min(2 * now, size)


_INNER_END = re.compile(r"[.!?。！？]\W*\w")  # a sentence mark with more words after it


def _tokens(line: str | EncodedSource) -> str:
    return line.tokens if isinstance(line, EncodedSource) else line
