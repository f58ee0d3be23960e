"""Decoding a corpus (a whole data set) in batches.

:func:`translate_dataset` decodes a :class:`~nmtmodels.data.ParallelDataset` in batches of
  similar source length (greedy search for beam 1 with nbest 1, else beam search, see
  :mod:`nmtmodels.decoding.search`) and returns the hypotheses in dataset order.
The trainer's validation BLEU (:mod:`nmtmodels.training.validation`) and ``nmt-translate``
both decode through it.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import torch

from nmtmodels.data import ParallelDataset
from nmtmodels.decoding.scorer import Hypothesis
from nmtmodels.decoding.search import beam_search, greedy_search
from nmtmodels.models.base import Seq2SeqModel
from nmtmodels.modules.attention import avoid_per_shape_attention_kernels
from nmtmodels.sampler import BucketBatchSampler


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
    """Hypotheses (``nmtmodels.decoding.scorer.Hypothesis``, best first) for every example of
    ``dataset``, in dataset order.  Beam 1 with nbest 1 runs greedy search.  ``progress``
    is called with the number of sentences of each batch when it is done.  A sentence with no
    token (an empty input line) is not decoded: its one hypothesis is empty, with score 0."""
    device = torch.device(device)
    if device.type == "cuda":
        avoid_per_shape_attention_kernels()
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16)
                if amp == "bf16" and device.type == "cuda" else contextlib.nullcontext())
    lengths = dataset.sizes("tokens")[:, :1]
    sampler = BucketBatchSampler(lengths, max_tokens, shuffle=False)
    results: list[list[Any]] = [[] for _ in range(len(dataset))]
    empty = lengths[:, 0] <= 1  # no token but </s>: an empty line gets an empty translation, as in CTranslate2
    for row in np.flatnonzero(empty):
        results[row] = [Hypothesis(tokens=[], score=0.0, positional_scores=[])]
    was_training = model.training
    model.eval()
    try:
        for indices in sampler.batches():
            indices = indices[~empty[indices]]
            if not len(indices):
                continue
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
