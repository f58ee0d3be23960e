"""Corpus BLEU, chrF and TER through sacrebleu's API, with signatures, as a dict or JSON file.

* ``bleu``: sacreBLEU on detokenised text with the target language's tokenizer: ``13a``,
  ``zh`` for Chinese, ``ja-mecab`` for Japanese when its extra packages are importable and
  ``char`` otherwise (the tokenizer is part of the signature, so the two are never confused).
* ``chrf``: chrF2 (sacrebleu defaults) on the same text.
* ``ter``: TER (translation edit rate, lower is better: word edits, a block shift counting as
  one, per reference word) on the same text; sacrebleu defaults (case-insensitive, words split
  at spaces), and for Chinese and Japanese ``normalized`` + ``asian_support`` so that
  characters are words (unsegmented text would otherwise be one word per sentence).
* ``tokenized_bleu``: what the papers report with multi-bleu.perl: sacrebleu BLEU on the
  *tokenised* hypotheses and references with ``tokenize="none"``, ``force=True`` and
  ``smooth_method="none"`` (multi-bleu.perl does not smooth: a zero n-gram precision gives 0).

References are given as sacrebleu expects them: a list of reference *streams*, each with
one line per hypothesis (two references -> two lists as long as the hypotheses).

CLI::

    python -m nmtmodels.cli score --lang de --hyp HYP --ref REF [--ref REF2 ...]
        [--tok-hyp TOKHYP --tok-ref TOKREF ...] --output scores.json
"""
from __future__ import annotations

import functools
import importlib.util
import json
import os
from typing import Any

from sacrebleu.metrics import BLEU, CHRF, TER

from nmtmodels.text.postprocess import CJK_LANGUAGES, base_language
from nmtmodels.textio import atomic_write_text


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


def _bleu_entry(metric: BLEU, hypotheses: list[str], references: list[list[str]]) -> dict[str, Any]:
    result = metric.corpus_score(hypotheses, references)
    return {
        "score": result.score,
        "signature": str(metric.get_signature()),
        "precisions": list(result.precisions),
        "brevity_penalty": result.bp,
        "length_ratio": result.ratio,
        "hypothesis_length": result.sys_len,
        "reference_length": result.ref_len,
    }


def score_corpus(
    hypotheses: list[str],
    references: list[list[str]],
    lang: str,
    tokenized_hypotheses: list[str] | None = None,
    tokenized_references: list[list[str]] | None = None,
) -> dict[str, Any]:
    """BLEU, chrF, TER and (given tokenised text) tokenised BLEU of one system output.

    Returns ``{"bleu": {...}, "chrf": {...}, "ter": {...}, "tokenized_bleu": {...} | None,
    "num_sentences": n, "num_references": r, "blank_reference_lines": b, "lang": lang}`` (``b``:
    lines where some reference is empty, as ``blank_references: warn`` keeps them); every metric entry holds
    ``score`` and sacrebleu's ``signature``.  ValueError on empty input or mismatched counts.
    """
    _check_counts(hypotheses, references, "detokenised text")
    bleu = _bleu_entry(detokenized_bleu(lang), hypotheses, references)
    chrf_metric = CHRF()
    chrf = {"score": chrf_metric.corpus_score(hypotheses, references).score, "signature": str(chrf_metric.get_signature())}
    ter_scorer = ter_metric(lang)
    ter_result = ter_scorer.corpus_score(hypotheses, references)
    ter = {"score": ter_result.score, "signature": str(ter_scorer.get_signature()),
           "num_edits": ter_result.num_edits, "reference_length": ter_result.ref_length}
    tokenized = None
    if (tokenized_hypotheses is None) != (tokenized_references is None):
        raise ValueError("tokenised BLEU needs both tokenized_hypotheses and tokenized_references")
    if tokenized_hypotheses is not None:
        _check_counts(tokenized_hypotheses, tokenized_references, "tokenised text")
        if len(tokenized_hypotheses) != len(hypotheses):
            raise ValueError(f"{len(hypotheses)} detokenised but {len(tokenized_hypotheses)} tokenised hypotheses")
        tokenized = _bleu_entry(tokenized_bleu(), tokenized_hypotheses, tokenized_references)
    return {
        "bleu": bleu,
        "chrf": chrf,
        "ter": ter,
        "tokenized_bleu": tokenized,
        "num_sentences": len(hypotheses),
        "num_references": len(references),
        "blank_reference_lines": sum(1 for line in zip(*references) if any(not ref.strip() for ref in line)),
        "lang": lang,
    }


def write_scores_json(path: str | os.PathLike, scores: dict[str, Any]) -> None:
    """Write ``scores`` as indented JSON, atomically (no partial file on failure)."""
    atomic_write_text(path, json.dumps(scores, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
