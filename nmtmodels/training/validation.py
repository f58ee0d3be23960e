"""Validation BLEU for the trainer: the dev set decoded with the run's decoding settings and
scored with sacreBLEU (:func:`make_bleu_fn`)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch

from nmtmodels.data import ParallelDataset
from nmtmodels.decoding.constraints import SourceSubsequence
from nmtmodels.decoding.search import translate_dataset
from nmtmodels.models.base import Seq2SeqModel
from nmtmodels.vocab import Vocabulary


def make_bleu_fn(
    valid_data: ParallelDataset,
    tgt_vocab: Vocabulary,
    decode_cfg: Any,
    *,
    tokenized_references: Sequence[str],
    references: Sequence[Sequence[str]] | None = None,
    lang: str = "en",
    max_tokens: int = 4096,
    device: torch.device | str = "cpu",
    amp: Literal["bf16", "none"] = "none",
    text_format: Literal["bpe", "spm", "char", "plain"] = "bpe",
    src_vocab: Vocabulary | None = None,
) -> Callable[[Seq2SeqModel], float]:
    """A ``bleu_fn`` for :class:`nmtmodels.training.trainer.Trainer`: decode the dev set with ``decode_cfg`` and score it.

    With raw ``references`` (one or more detokenised reference streams, e.g. the four of a
    NIST dev set) hypotheses are post-processed (BPE or SentencePiece removal, or character joining per
    ``text_format``, then detokenisation in ``lang``) and scored with sacreBLEU against all
    of them; otherwise the BLEU of the BPE-removed hypotheses against
    ``tokenized_references`` (the dev targets, BPE removed the same way) with no further
    tokenisation (multi-bleu.perl style) is returned.  ``src_vocab`` builds the
    source-subsequence constraint where ``decode_cfg.subsequence`` asks for it (a compressor's search).
    """
    # lazy: sacremoses and sacrebleu (seconds to import) only when BLEU is scored
    from nmtmodels.text.postprocess import (
        format_options,
        postprocess,
    )
    from nmtmodels.text.scoring import detokenized_bleu, tokenized_bleu

    counts = [len(tokenized_references), *(len(stream) for stream in references or ())]
    if any(count != len(valid_data) for count in counts):
        raise ValueError(f"the dev set has {len(valid_data)} examples but the tokenised reference and the "
                         f"{len(references or ())} raw reference streams have {counts}")
    options = format_options(text_format)
    constraint = None
    if decode_cfg.subsequence:
        if src_vocab is None:
            raise ValueError("decode.subsequence needs the source vocabulary (make_bleu_fn's src_vocab)")
        constraint = SourceSubsequence.from_vocabs(src_vocab, tgt_vocab)
    detokenize = references is not None
    if detokenize:
        metric, reference_streams = detokenized_bleu(lang), [list(stream) for stream in references]
    else:
        metric = tokenized_bleu()
        reference_streams = [[postprocess(line, lang, detokenize=False, **options) for line in tokenized_references]]

    def bleu(model: Seq2SeqModel) -> float:
        hyps = translate_dataset(model, valid_data, decode_cfg, max_tokens=max_tokens, device=device, amp=amp,
                                 constraint=constraint)
        encoded = (" ".join(tgt_vocab.decode(row[0].tokens, keep_unk=True)) for row in hyps)
        hypotheses = [postprocess(line, lang, detokenize=detokenize, **options) for line in encoded]
        return float(metric.corpus_score(hypotheses, reference_streams).score)

    return bleu
