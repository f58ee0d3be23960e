"""What a translation stream gives and saw, line by line: its results (:class:`LineTranslation`
per input line, a :class:`Translation` per sentence, a :class:`TextHypothesis` per hypothesis)
and :class:`TranslationStats`, which :meth:`nmtmodels.decoding.translator.Translator.stream`
fills and every caller reads alike (the Python API, ``nmt-translate``).  No torch here: the CLI
imports it before a translation starts.  The result types stay beside the stats, not in a
module of their own: a :class:`LineTranslation` carries the flags that the rules below give
it, and the stats count what it holds, so the two change together; and every output line is
made by both (``stats.add_line`` flags it, ``line.text`` joins it), so a split would put one
more file on every sentence's path (``nmtmodels/tests/test_translator.py`` counts them).

Each translated line gets the flags of the rules below (:data:`FLAGS`), and the stats keep, per
flag, how many lines had it and the first :data:`LINES_KEPT` line numbers (memory does not grow
with the input); also the failed lines, the source tokens and how many were ``<unk>``.

* ``unfinished``: no hypothesis ended in ``</s>`` within the length limit.
* ``truncated``: the encoded source was longer than the model's source positions and was cut
  (``too_long="truncate"``).
* ``short``: a translation shorter than :data:`SHORT_RATIO` of its source, in tokens, for sources
  of :data:`SHORT_MIN_SOURCE` tokens or more (a paragraph on one line tends to come out as one
  short sentence).
* ``degenerate``: the best hypothesis repeats one token or n-gram (n <= :data:`REPEAT_MAX_N`)
  :data:`REPEAT_TIMES` or more times in a row ("the the the the", "a b a b a b a b"), or its
  output/source length ratio (in tokens, sources of :data:`DEGENERATE_MIN_SOURCE` tokens or
  more) is over :data:`DEGENERATE_RATIO` times, or under 1/:data:`DEGENERATE_RATIO` of, the
  ratio of the whole input so far (all its sentences' output tokens over their source tokens,
  this line's chunk included): a model that diverged or loops, or a line unlike the rest.
* ``unknown``: more than :data:`UNKNOWN_LINE_RATE` of the line's source tokens are ``<unk>``.
* ``multi_sentence``: raw text, not split (``split_sentences`` off), where the source
  language's sentence splitter finds several sentences in the line.

Overall, more than :data:`UNKNOWN_WARNING_RATE` of all source tokens ``<unk>`` gives one
warning on coverage (:meth:`TranslationStats.unknown_message`).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from nmtmodels.files import DataError
from nmtmodels.symbols import UNK

if TYPE_CHECKING:
    import torch

UNKNOWN_WARNING_RATE = 0.10  # warn when more source tokens than this are <unk>
UNKNOWN_MIN_TOKENS = 100  # interactive input: warn of the rate only once this many source tokens are read
UNKNOWN_LINE_RATE = 0.5  # a line more than half of whose source tokens are <unk> is flagged
SHORT_RATIO = 0.3
SHORT_MIN_SOURCE = 20
REPEAT_MAX_N = 4
REPEAT_TIMES = 4
DEGENERATE_RATIO = 3.0
DEGENERATE_MIN_SOURCE = 5
LINES_KEPT = 1000  # line numbers kept per flag (the counts go on)
FLAGS = ("unfinished", "truncated", "short", "degenerate", "unknown", "multi_sentence")


@dataclass(frozen=True)
class TextHypothesis:
    """One translation of a sentence.

    ``text``: plain (detokenised) text, or the model's tokens joined by spaces with
    ``pretokenized``; ``score``: the search score (log-probability with the length penalty
    and other terms of the decode settings); ``tokens``: the target tokens the model wrote
    (BPE or characters, ``<unk>`` kept); ``attention``: (len(tokens) + 1, source tokens + 1)
    cross-attention weights when asked for, else None; ``finished``: False when no beam
    reached ``</s>`` within the length limit (see :mod:`nmtmodels.decoding.search`).
    """

    text: str
    score: float
    tokens: list[str]
    attention: torch.Tensor | None = None
    finished: bool = True


@dataclass(frozen=True)
class Translation:
    """The hypotheses of one input sentence, best first; ``source_tokens`` is what the model read."""

    source: str
    source_tokens: list[str]
    hypotheses: list[TextHypothesis]
    compressed: str | None = None  # ESC: the compressed source as plain text (source language), else None
    compressed_tokens: list[str] | None = None  # ESC: the compressed tokens the model read
    truncated: bool = False  # the encoded source was longer than the model's source positions and was cut

    @property
    def text(self) -> str:
        return self.hypotheses[0].text

    @property
    def score(self) -> float:
        return self.hypotheses[0].score


@dataclass(frozen=True)
class LineTranslation:
    """What became of input line ``number``: the translations of its sentences (one, unless the
    line was split into sentences), or the :class:`~nmtmodels.files.DataError` that cost the
    line (``translations`` then empty)."""

    number: int
    translations: list[Translation]
    error: DataError | None = None
    joiner: str = " "  # between the translations of a line's sentences (none for zh/ja targets)
    flags: frozenset[str] = frozenset()  # nmtmodels.decoding.translation_stats.FLAGS: unfinished, degenerate, ...

    @property
    def unknown_rate(self) -> float:
        """The share of the line's source tokens (what the model read) that are ``<unk>``."""
        tokens = [token for translation in self.translations for token in translation.source_tokens]
        return sum(token == UNK for token in tokens) / len(tokens) if tokens else 0.0

    @property
    def text(self) -> str:
        """The line's translation: the best hypotheses of its sentences, joined ("" when it failed)."""
        return self.joiner.join(translation.text for translation in self.translations)


class ExtraInput(NamedTuple):
    """An extra input of pretokenized lines for :meth:`Translator.stream
    <nmtmodels.decoding.translator.Translator.stream>`: its lines (aligned with the source),
    whether they are tokens (``compressed``) or integers (lattice ``starts``/``ends``), and the
    name errors give them (default ``NAME (KEY)``)."""

    lines: Iterable[str | bytes]
    tokens: bool = False
    name: str | None = None


def repeats(tokens: Sequence[str], max_n: int = REPEAT_MAX_N, times: int = REPEAT_TIMES) -> bool:
    """Whether one token or n-gram (n <= ``max_n``) of ``tokens`` comes ``times`` or more times in a row."""
    for n in range(1, max_n + 1):
        run = 0  # consecutive positions i with tokens[i] == tokens[i + n]
        for i in range(len(tokens) - n):
            run = run + 1 if tokens[i] == tokens[i + n] else 0
            if run >= n * (times - 1):
                return True
    return False


@dataclass
class TranslationStats:
    """Counts and line numbers of one translation stream (module docstring).  ``name`` names the
    input in messages; ``lines_read`` counts input lines read so far and ``input_done`` says
    whether the input has ended (a progress total); ``sentences`` counts searched sentences."""

    name: str = "<input>"
    hint: str = ""
    max_source_tokens: int = 0
    split_sentences: bool = False
    lines_read: int = 0
    input_done: bool = False
    sentences: int = 0
    source_tokens: int = 0
    unknown_tokens: int = 0
    output_tokens: int = 0  # over sources of DEGENERATE_MIN_SOURCE tokens or more (the input's length ratio)
    ratio_source_tokens: int = 0
    failed: list[int] = field(default_factory=list)
    failed_count: int = 0
    lines: dict[str, list[int]] = field(default_factory=lambda: {flag: [] for flag in FLAGS})
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FLAGS, 0))

    @property
    def unknown_rate(self) -> float:
        """The share of all source tokens read so far that are ``<unk>``."""
        return self.unknown_tokens / self.source_tokens if self.source_tokens else 0.0

    def add_failed(self, number: int) -> None:
        self.failed_count += 1
        if len(self.failed) < LINES_KEPT:
            self.failed.append(number)

    def add_sentences(self, translations: Sequence[Any]) -> None:
        """Count the source and output tokens of a chunk's translations, before their lines' flags."""
        for translation in translations:
            source = translation.source_tokens
            self.sentences += 1
            self.source_tokens += len(source)
            self.unknown_tokens += sum(token == UNK for token in source)
            if len(source) >= DEGENERATE_MIN_SOURCE:
                self.ratio_source_tokens += len(source)
                self.output_tokens += len(translation.hypotheses[0].tokens)

    def add_line(self, number: int, translations: Sequence[Any], multi_sentence: bool = False) -> frozenset[str]:
        """The flags of input line ``number`` with these translations (module docstring), counted."""
        flags = set()
        ratio = self.output_tokens / self.ratio_source_tokens if self.ratio_source_tokens else None
        source_total = unknown = 0
        for translation in translations:
            source, output = translation.source_tokens, translation.hypotheses[0].tokens
            source_total += len(source)
            unknown += sum(token == UNK for token in source)
            if not translation.hypotheses[0].finished:
                flags.add("unfinished")
            if translation.truncated:
                flags.add("truncated")
            if len(source) >= SHORT_MIN_SOURCE and len(output) < SHORT_RATIO * len(source):
                flags.add("short")
            own = len(output) / len(source) if len(source) >= DEGENERATE_MIN_SOURCE else None
            if repeats(output) or (own is not None and ratio and not ratio / DEGENERATE_RATIO <= own <= ratio * DEGENERATE_RATIO):
                flags.add("degenerate")
        if source_total and unknown > UNKNOWN_LINE_RATE * source_total:
            flags.add("unknown")
        if multi_sentence:
            flags.add("multi_sentence")
        for flag in flags:
            self.counts[flag] += 1
            if len(self.lines[flag]) < LINES_KEPT:
                self.lines[flag].append(number)
        return frozenset(flags)

    # ------------------------------------------------------------------ messages
    def message(self, flag: str, numbers: Sequence[int] | None = None, count: int | None = None) -> str:
        """The warning for the lines ``numbers`` (default: every line with ``flag`` so far)."""
        numbers = self.lines[flag] if numbers is None else numbers
        count = len(numbers) if count is None else count
        shown = ", ".join(map(str, numbers[:10])) + (", ..." if count > 10 else "")
        unit = "sentence(s)" if flag == "unfinished" else "line(s)"
        return f"{self.name}: {count} {unit} (line {shown}) {self._what(flag)}"

    def _what(self, flag: str) -> str:
        one_by_one = "" if self.split_sentences else "; --split-sentences translates a long line sentence by sentence"
        return {
            "unfinished": "had no hypothesis ending in </s> within the length limit; wrote the best unfinished one "
                          "(a diverged model?)",
            "truncated": f"were longer than the model's {self.max_source_tokens - 1} source tokens and were cut "
                         f"(--truncate){one_by_one}",
            "short": f"came out less than {SHORT_RATIO:.0%} as long as their source (in tokens, sources of "
                     f"{SHORT_MIN_SOURCE} or more): " + ("check them" if self.split_sentences else
                                                         "a line holding several sentences often comes out as one short "
                                                         "sentence; --split-sentences translates them one by one"),
            "degenerate": f"came out degenerate: a token or n-gram of up to {REPEAT_MAX_N} tokens {REPEAT_TIMES} or more "
                          f"times in a row, or an output/source length ratio over {DEGENERATE_RATIO:g} times or under "
                          f"1/{DEGENERATE_RATIO:g} of the input's (a diverged or undertrained model, or a line unlike "
                          "the rest?)",
            "unknown": f"have more than {UNKNOWN_LINE_RATE:.0%} of their source tokens outside the checkpoint's "
                       "vocabulary (<unk>)",
            "multi_sentence": "hold several sentences and were translated as one (the models are trained on single "
                              "sentences); --split-sentences translates them one by one",
        }[flag]

    def unknown_message(self, min_tokens: int = 0) -> str | None:
        """The coverage warning when more than :data:`UNKNOWN_WARNING_RATE` of the source tokens
        are ``<unk>`` (once ``min_tokens`` are read), else None."""
        if self.source_tokens < max(min_tokens, 1) or self.unknown_tokens <= UNKNOWN_WARNING_RATE * self.source_tokens:
            return None
        return (f"{self.name}: {self.unknown_rate:.1%} of the source tokens ({self.unknown_tokens:,} of "
                f"{self.source_tokens:,}) are not in the checkpoint's vocabulary; {self.hint}")

    def messages(self) -> list[str]:
        """Every warning of the stream: the coverage warning, then one per flag naming its lines."""
        unknown = self.unknown_message()
        return ([unknown] if unknown else []) + [self.message(flag, count=self.counts[flag]) for flag in FLAGS
                                                 if self.counts[flag]]
