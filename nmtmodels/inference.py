"""Inference: a model from a checkpoint, a dataset translated, a dev set scored.

* :func:`load_model_from_checkpoint` rebuilds the model of a checkpoint written by
  :class:`nmtmodels.train.Trainer` (or ``nmt-average``) with its vocabularies; it refuses a
  checkpoint whose vocabularies do not match their fingerprints or whose parameters hold
  NaN or inf.
* :func:`translate_dataset` decodes a :class:`~nmtmodels.data.ParallelDataset` in batches of
  similar source length (greedy search for beam 1 with nbest 1, else beam search, see
  :mod:`nmtmodels.search`) and returns the hypotheses in dataset order.
* :func:`make_bleu_fn` gives the trainer its validation BLEU.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch

from nmtmodels.checkpoint import CheckpointError, load_checkpoint
from nmtmodels.config import ModelConfig
from nmtmodels.data import BucketBatchSampler, ParallelDataset
from nmtmodels.models.base import Seq2SeqModel
from nmtmodels.modules.attention import avoid_per_shape_attention_kernels
from nmtmodels.registry import build_model
from nmtmodels.search import beam_search, greedy_search
from nmtmodels.vocab import Vocabulary


def load_model_from_checkpoint(
    path: str, device: torch.device | str = "cpu"
) -> tuple[Seq2SeqModel, Vocabulary, Vocabulary, dict[str, Any]]:
    """(model in eval mode on ``device``, source vocabulary, target vocabulary, checkpoint)."""
    state = load_checkpoint(path, map_location="cpu")
    vocabs = []
    for side in ("src", "tgt"):
        tokens = state["vocab"][side]
        vocab = Vocabulary(tokens[4:])
        if vocab.tokens != tokens or vocab.fingerprint() != state["vocab"][f"{side}_fingerprint"]:
            raise CheckpointError(f"{path}: the stored {side} vocabulary is inconsistent with its fingerprint")
        vocabs.append(vocab)
    broken = [name for name, tensor in state["model"].items()
              if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())]
    if broken:
        raise CheckpointError(f"{path}: {len(broken)} parameter tensors hold NaN or inf (first: {broken[0]}); "
                              "the training run diverged, use an earlier checkpoint")
    model_cfg = ModelConfig.from_dict(state["model_config"], where=f"{path}: model_config")
    model = build_model(model_cfg, len(vocabs[0]), len(vocabs[1]), where=f"{path}: model_config")
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise CheckpointError(f"{path}: its parameters do not fit its own model_config ({first})") from None
    model.to(device).eval()
    return model, vocabs[0], vocabs[1], state


@torch.no_grad()
def translate_dataset(
    model: Seq2SeqModel,
    dataset: ParallelDataset,
    decode_cfg: Any,
    *,
    max_tokens: int,
    device: torch.device | str = "cpu",
    amp: Literal["bf16", "none"] = "none",
    progress: Callable[[int], None] | None = None,
) -> list[list[Any]]:
    """Hypotheses (``nmtmodels.search.Hypothesis``, best first) for every example of
    ``dataset``, in dataset order.  Beam 1 with nbest 1 runs greedy search.  ``progress``
    is called with the number of sentences of each batch when it is done."""
    device = torch.device(device)
    if device.type == "cuda":
        avoid_per_shape_attention_kernels()
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16)
                if amp == "bf16" and device.type == "cuda" else contextlib.nullcontext())
    sampler = BucketBatchSampler(dataset.sizes("tokens")[:, :1], max_tokens, shuffle=False)
    results: list[list[Any]] = [[] for _ in range(len(dataset))]
    was_training = model.training
    model.eval()
    try:
        for indices in sampler.batches():
            batch = dataset.collate(indices).to(device)
            batch.tgt_in = batch.tgt_out = None
            with autocast:
                if decode_cfg.beam == 1 and decode_cfg.nbest == 1:
                    hyps = [[h] for h in greedy_search(model, batch, decode_cfg.max_len_a, decode_cfg.max_len_b,
                                                       min_len=decode_cfg.min_len,
                                                       return_attention=decode_cfg.return_attention,
                                                       compile=decode_cfg.compile)]
                else:
                    hyps = beam_search(model, batch, decode_cfg)
            for row, row_hyps in zip(indices.tolist(), hyps):
                results[row] = row_hyps
            if progress is not None:
                progress(len(indices))
    finally:
        model.train(was_training)
    return results


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
) -> Callable[[Seq2SeqModel], float]:
    """A ``bleu_fn`` for :class:`nmtmodels.train.Trainer`: decode the dev set with ``decode_cfg`` and score it.

    With raw ``references`` (one or more detokenised reference streams, e.g. the four of a
    NIST dev set) hypotheses are post-processed (BPE or SentencePiece removal, or character joining per
    ``text_format``, then detokenisation in ``lang``) and scored with sacreBLEU against all
    of them; otherwise the BLEU of the BPE-removed hypotheses against
    ``tokenized_references`` (the dev targets, BPE removed the same way) with no further
    tokenisation (multi-bleu.perl style) is returned.
    """
    from nmtmodels.postprocess import (  # sacremoses and sacrebleu: only when scoring
        format_options,
        postprocess,
    )
    from nmtmodels.scoring import detokenized_bleu, tokenized_bleu

    counts = [len(tokenized_references), *(len(stream) for stream in references or ())]
    if any(count != len(valid_data) for count in counts):
        raise ValueError(f"the dev set has {len(valid_data)} examples but the tokenised reference and the "
                         f"{len(references or ())} raw reference streams have {counts}")
    options = format_options(text_format)
    detokenize = references is not None
    if detokenize:
        metric, reference_streams = detokenized_bleu(lang), [list(stream) for stream in references]
    else:
        metric = tokenized_bleu()
        reference_streams = [[postprocess(line, lang, detokenize=False, **options) for line in tokenized_references]]

    def bleu(model: Seq2SeqModel) -> float:
        hyps = translate_dataset(model, valid_data, decode_cfg, max_tokens=max_tokens, device=device, amp=amp)
        encoded = (" ".join(tgt_vocab.decode(row[0].tokens, keep_unk=True)) for row in hyps)
        hypotheses = [postprocess(line, lang, detokenize=detokenize, **options) for line in encoded]
        return float(metric.corpus_score(hypotheses, reference_streams).score)

    return bleu
