"""Corpus BLEU, chrF and TER through sacrebleu's API, with signatures, as a dict or JSON file.

* ``bleu``: sacreBLEU on detokenised text with the target language's tokenizer: ``13a``,
  ``zh`` for Chinese, ``ja-mecab`` for Japanese when its extra packages are importable and
  ``char`` otherwise (the tokenizer is part of the signature, so the two are never confused).
* ``chrf``: chrF2 (sacrebleu defaults) on the same text.
* ``chrf_pp``: chrF++ (sacrebleu's ``CHRF(word_order=2)``: character n-grams and word uni- and
  bigrams) on the same text.
* ``ter``: TER (translation edit rate, lower is better: word edits, a block shift counting as
  one, per reference word) on the same text; sacrebleu defaults (case-insensitive, words split
  at spaces), and for Chinese and Japanese ``normalized`` + ``asian_support`` so that
  characters are words (unsegmented text would otherwise be one word per sentence).
* ``tokenized_bleu``: what the papers report with multi-bleu.perl: sacrebleu BLEU on the
  *tokenised* hypotheses and references with ``tokenize="none"``, ``force=True`` and
  ``smooth_method="none"`` (multi-bleu.perl does not smooth: a zero n-gram precision gives 0).

References are given as sacrebleu expects them: a list of reference *streams*, each with
one line per hypothesis (two references -> two lists as long as the hypotheses).

Each metric is one :class:`MetricSpec` in :data:`METRIC_SPECS` (how to make the sacrebleu metric for
a language, its display name, whether higher is better, whether it reads tokenised text, and
whether the significance tests support it); :func:`score_corpus`, the workflow's significance
tests, tables and plots read them from there, so a metric of your own is one
:func:`register_metric` call (docs/howto.md, "A new metric").

CLI::

    python -m nmtmodels.cli score --lang de --hyp HYP --ref REF [--ref REF2 ...]
        [--tok-hyp TOKHYP --tok-ref TOKREF ...] --output scores.json
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.base import Metric

from nmtmodels.files import atomic_write_text
from nmtmodels.plugins import load_user_modules
from nmtmodels.text.postprocess import CJK_LANGUAGES, base_language


@functools.cache
def _mecab_available() -> bool:
    return importlib.util.find_spec("MeCab") is not None and importlib.util.find_spec("ipadic") is not None


def bleu_tokenizer(lang: str) -> str:
    """sacrebleu tokenizer for detokenised text in ``lang``."""
    base = base_language(lang)
    if base == "zh":
        return "zh"
    if base == "ja":
        return "ja-mecab" if _mecab_available() else "char"
    return "13a"


def _check_counts(hypotheses: list[str], references: list[list[str]], what: str) -> None:
    if not hypotheses:
        raise ValueError(f"{what}: no hypotheses to score (0 lines)")
    if not references:
        raise ValueError(f"{what}: no reference streams for {len(hypotheses)} hypotheses")
    for number, stream in enumerate(references, start=1):
        if len(stream) != len(hypotheses):
            raise ValueError(f"{what}: {len(hypotheses)} hypotheses but reference {number} has {len(stream)} lines")


def detokenized_bleu(lang: str) -> BLEU:
    """sacreBLEU as the papers' tables report it, with ``lang``'s tokenizer."""
    return BLEU(tokenize=bleu_tokenizer(lang))


def tokenized_bleu() -> BLEU:
    """BLEU on already tokenised text (multi-bleu.perl style: no tokenizer, no smoothing)."""
    return BLEU(tokenize="none", force=True, smooth_method="none")


def ter_metric(lang: str) -> TER:
    """sacrebleu's TER for detokenised text in ``lang`` (CJK: one word per character)."""
    cjk = base_language(lang) in CJK_LANGUAGES
    return TER(normalized=cjk, asian_support=cjk)


def _bleu_details(result: Any) -> dict[str, Any]:
    return {"precisions": list(result.precisions), "brevity_penalty": result.bp, "length_ratio": result.ratio,
            "hypothesis_length": result.sys_len, "reference_length": result.ref_len}


def _ter_details(result: Any) -> dict[str, Any]:
    return {"num_edits": result.num_edits, "reference_length": result.ref_length}


@dataclass(frozen=True)
class MetricSpec:
    """One metric: ``make(lang)`` gives the sacrebleu metric for a target language; ``display``
    names it in tables and their notes, ``label`` (default: ``display``) on plot axes;
    ``tokenized``: it scores the tokenised text (``--tok-hyp``/``--tok-ref``) instead of the
    detokenised; ``significance``: the sign and paired tests support it (sacrebleu
    sentence statistics); ``details``: more fields of its scores.json entry from the result;
    ``floor``: the quality floor, in the metric's points, below which a system shares little more
    than frequent words or characters with the references, so that a comparison with it measures
    nothing (no significance marker, no verdict: the workflow's tables and claims need both sides
    at or above it); None for none (a lower-is-better metric).  BLEU's is 5; a metric that credits
    partial matches sits higher on the same output (chrF: 20)."""

    name: str
    display: str
    make: Callable[[str], Metric]
    higher_is_better: bool = True
    tokenized: bool = False
    significance: bool = True
    details: Callable[[Any], dict[str, Any]] | None = field(default=None, compare=False)
    label: str = ""
    floor: float | None = 5.0

    @property
    def axis_label(self) -> str:
        return self.label or self.display

    @property
    def title(self) -> str:
        """``display``, with "(lower is better)" for a metric where lower is better."""
        return self.display if self.higher_is_better else f"{self.display} (lower is better)"

    def with_references(self, lang: str, references: list[list[str]]) -> Metric:
        """``make(lang)`` with the statistics of ``references`` (reference streams) cached, as
        sacrebleu's ``references=`` argument caches them: what the significance tests score with."""
        metric = self.make(lang)
        metric._ref_cache = metric._cache_references(references)
        return metric

    def entry(self, hypotheses: list[str], references: list[list[str]], lang: str) -> dict[str, Any]:
        """``{"score", "signature", ...details}`` of one system output."""
        metric = self.make(lang)
        result = metric.corpus_score(hypotheses, references)
        return {"score": result.score, "signature": str(metric.get_signature()),
                **(self.details(result) if self.details is not None else {})}


METRIC_SPECS: dict[str, MetricSpec] = {}


def register_metric(spec: MetricSpec) -> MetricSpec:
    """Add ``spec`` to :data:`METRIC_SPECS` (a name may be registered once).  A metric with
    significance tests must be higher-is-better: the sign test counts a rise as "better" and the
    tables' markers follow the score difference."""
    if spec.name in METRIC_SPECS and METRIC_SPECS[spec.name] != spec:
        raise ValueError(f"metric {spec.name!r} is already registered")
    if spec.significance and not spec.higher_is_better:
        raise ValueError(f"metric {spec.name!r}: significance tests need a higher-is-better metric (significance=False)")
    METRIC_SPECS[spec.name] = spec
    return spec


def registered_metrics() -> dict[str, MetricSpec]:
    """:data:`METRIC_SPECS` after importing the modules from outside the package
    (:func:`nmtmodels.plugins.load_user_modules`: a ``register_metric`` call there adds a metric
    to every score file, table and test of the workflow)."""
    load_user_modules()
    return METRIC_SPECS


def metric_spec(name: str) -> MetricSpec:
    """The spec registered as ``name`` (the modules from outside the package are imported only
    for a name the package does not register); ValueError listing the known ones."""
    specs = METRIC_SPECS if name in METRIC_SPECS else registered_metrics()
    if name not in specs:
        raise ValueError(f"unknown metric {name!r} (registered: {', '.join(specs)})")
    return specs[name]


def significance_metrics() -> tuple[str, ...]:
    """Names of the registered metrics that the significance tests support."""
    return tuple(name for name, spec in registered_metrics().items() if spec.significance)


register_metric(MetricSpec("bleu", "sacreBLEU", detokenized_bleu, details=_bleu_details))
# chrF's floor: character n-grams match on output that shares only frequent words with the
# references (docs/results/cpu/summary.md: the character models at 300 updates score chrF about
# 17 where their BLEU is below 5).
register_metric(MetricSpec("chrf", "chrF2", lambda lang: CHRF(), floor=20.0))
register_metric(MetricSpec("chrf_pp", "chrF++", lambda lang: CHRF(word_order=2), floor=20.0))  # Popovic (2017): + word bigrams
register_metric(MetricSpec("ter", "TER", ter_metric, higher_is_better=False, significance=False, details=_ter_details,
                           floor=None))
register_metric(MetricSpec("tokenized_bleu", "BLEU (tokenised, multi-bleu.perl style)", lambda lang: tokenized_bleu(),
                           tokenized=True, details=_bleu_details, label="BLEU (tokenised)"))


def metrics_fingerprint() -> str:
    """What decides every score: the registered metrics, each with the settings of its sacrebleu
    metric for a Latin-script and a Chinese target, and sacrebleu's version.  The workflow's
    score rule takes it as a parameter, so a metric added or changed reruns the score jobs,
    nothing else."""
    parts = [sacrebleu.__version__]
    for name, spec in sorted(registered_metrics().items()):
        settings = []
        for lang in ("en", "zh"):
            metric = spec.make(lang)
            plain = {key: value for key, value in vars(metric).items() if isinstance(value, (str, int, float, bool, type(None)))}
            settings.append(f"{type(metric).__name__}{sorted(plain.items())}")
        parts.append(f"{name}|{spec.display}|{spec.higher_is_better}|{spec.tokenized}|{'|'.join(settings)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def score_corpus(
    hypotheses: list[str],
    references: list[list[str]],
    lang: str,
    tokenized_hypotheses: list[str] | None = None,
    tokenized_references: list[list[str]] | None = None,
) -> dict[str, Any]:
    """Every metric of :data:`METRIC_SPECS` of one system output (those on tokenised text only given
    tokenised text, else None).

    Returns ``{"bleu": {...}, "chrf": {...}, "ter": {...}, "tokenized_bleu": {...} | None, ...,
    "num_sentences": n, "num_references": r, "blank_reference_lines": b, "lang": lang}`` (``b``:
    lines where some reference is empty, as ``blank_references: warn`` keeps them); every metric entry holds
    ``score`` and sacrebleu's ``signature``.  ValueError on empty input or mismatched counts.
    """
    _check_counts(hypotheses, references, "detokenised text")
    if (tokenized_hypotheses is None) != (tokenized_references is None):
        raise ValueError("tokenised BLEU needs both tokenized_hypotheses and tokenized_references")
    if tokenized_hypotheses is not None:
        _check_counts(tokenized_hypotheses, tokenized_references, "tokenised text")
        if len(tokenized_hypotheses) != len(hypotheses):
            raise ValueError(f"{len(hypotheses)} detokenised but {len(tokenized_hypotheses)} tokenised hypotheses")
    scores: dict[str, Any] = {}
    for name, spec in registered_metrics().items():
        if not spec.tokenized:
            scores[name] = spec.entry(hypotheses, references, lang)
        else:
            scores[name] = None if tokenized_hypotheses is None else spec.entry(tokenized_hypotheses, tokenized_references, lang)
    return {
        **scores,
        "num_sentences": len(hypotheses),
        "num_references": len(references),
        "blank_reference_lines": sum(1 for line in zip(*references) if any(not ref.strip() for ref in line)),
        "lang": lang,
    }


def write_scores_json(path: str | os.PathLike, scores: dict[str, Any]) -> None:
    """Write ``scores`` as indented JSON, atomically (no partial file on failure)."""
    atomic_write_text(path, json.dumps(scores, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
