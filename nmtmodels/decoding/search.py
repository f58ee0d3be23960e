"""Beam search and greedy decoding for every :class:`~nmtmodels.models.base.Seq2SeqModel`, for
one batch and for a whole data set (:func:`translate_dataset`: batches of similar source length,
hypotheses back in dataset order; the trainer's validation BLEU, the ESC compressor and the
:class:`~nmtmodels.decoding.translator.Translator` all decode through it).

Both searches are batched and incremental: the encoder runs once, the decoder is fed only
the newest token and keeps its state in the ``cache`` dict, and
:func:`reorder_state` moves encoder output and cache along with the
surviving hypotheses (beam search runs its first step once per row and only then copies
the states to the beams).  Rows whose search is over leave the batch.

Conventions
-----------
* ``Hypothesis.tokens`` holds neither BOS nor EOS.  ``positional_scores`` holds the model's
  log-probability of every generated token *including the final EOS*, so its sum is
  log P(Y, EOS | X) and a hypothesis of n tokens has n + 1 positional scores (and n + 1
  attention rows).  Restricting the candidates (PAD/BOS never, EOS not before ``min_len``,
  only EOS at the length limit) never changes these numbers: they are the model's own
  log-softmax values.
* Length limit of a row: ``floor(max_len_a * |x| + max_len_b)`` target tokens (EOS not
  counted), ``|x|`` = source length without its EOS (``batch.src_lengths - 1``), further
  capped by every :class:`LengthLimit` (ESC's ``gamma * |S|``) and by the model's
  ``max_positions()``.  A hypothesis that reaches the limit is ended with EOS.  When the limit
  is below ``min_len`` the limit wins.
* Finished hypotheses are ranked by ``log P / lp(|Y|) + sum(terms)`` (ESC eq. 1) with the
  GNMT length penalty ``lp(|Y|) = ((5 + |Y|) / 6) ** alpha`` (ESC eq. 2) where ``|Y|`` counts
  the EOS (``len(tokens) + 1``, as OpenNMT-py), and the coverage penalty of ESC eq. 3.
  Live hypotheses all have the same length at a step, so they are ranked by log P alone;
  the coverage penalty, like OpenNMT-py's ``wu`` penalty, only ranks finished hypotheses.
* Expansion follows fairseq: each row keeps ``beam`` live hypotheses; of the ``2 * beam``
  best candidates the EOS ones ranked within the first ``beam`` become finished candidates
  and the first ``beam`` non-EOS ones stay live.  With beam 1 and no length penalty this is
  greedy search.
* When a row stops (``DecodeConfig.early_stop``; every rule also stops at the length limit):

  - ``"exact"`` (default): when it holds ``nbest`` finished hypotheses and no live one can
    beat the worst of them.  Any completion of a live hypothesis with log-probability
    L <= 0 has log P' <= L and length |Y'| <= limit + 1; for alpha >= 0 the penalty is
    positive and non-decreasing, so its normalised score is at most ``L / lp(limit + 1)``;
    every extra term is bounded by its ``upper_bound`` (0 for the coverage penalty, a sum of
    logs of numbers <= 1).  The row's result is therefore the one running to the length
    limit would give.  With a length penalty this bound is loose, so rows often run several
    steps past their best hypothesis.
  - ``"beam"`` (fairseq; Hugging Face ``early_stopping=True``): once ``beam`` hypotheses of
    the row have finished (every EOS candidate ranked within the first ``beam`` counts,
    whether or not it made the ``nbest`` list).
  - ``"top"`` (OpenNMT-py): at the first step whose best candidate is EOS, or later once
    ``nbest`` hypotheses have finished.

  ``"beam"`` and ``"top"`` are heuristics: a longer hypothesis that the length penalty would
  rank higher can be lost.  They do less work per sentence (benchmarks/README.md, "Beam search: work per sentence").
* Every row gets at least one hypothesis.  A row none of whose beams finished (only when
  the model gives NaN or -inf log-probabilities: at the length limit EOS is the only
  allowed token) gets its best live hypothesis at the point it stopped, marked
  ``finished=False``: no EOS, ``score`` = its log-probability without length penalty, one
  positional score per token.  ``nmt-translate`` writes it and warns, so no output line goes
  missing or shifts.  Greedy search emits EOS at the length limit whatever its
  log-probability, so it always finishes.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from nmtmodels.choices import DECODE_COMPILE_MODES
from nmtmodels.compiling import compile_module
from nmtmodels.data import Batch, ParallelDataset
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.constraints import SourceSubsequence
from nmtmodels.decoding.scorer import (
    FinishedHypotheses,
    Hypothesis,
    HypothesisScorer,
    LengthLimit,
    LinearLengthLimit,
)
from nmtmodels.models.base import Seq2SeqModel, State
from nmtmodels.modules.attention import STATIC_CACHE, avoid_per_shape_attention_kernels
from nmtmodels.precision import bf16_autocast
from nmtmodels.sampler import BucketBatchSampler
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID


def reorder_state(state: State, index: Tensor, *, within_sentences: bool = False,
                  sentences: tuple[int, Tensor] | None = None) -> State:
    """Select rows ``index`` (dim 0) of every tensor in a (nested) state dict, in place.

    ``within_sentences``: ``index`` keeps every sentence's hypotheses in the rows of that
    sentence (beam reordering, no sentence leaves), so dicts marked ``STATIC_CACHE`` stay.
    ``sentences`` = (sentences before, the sentence of each of ``index``'s hypotheses, once per
    sentence): a ``STATIC_CACHE`` dict with one row per sentence takes these rows instead (beam
    search keeps a sentence's memory once for its hypotheses: :mod:`nmtmodels.modules.attention`).
    """
    if state.get(STATIC_CACHE):
        if within_sentences:
            return state
        rows = next(v.size(0) for v in state.values() if isinstance(v, Tensor))
        index = sentences[1] if sentences is not None and rows == sentences[0] else index
    for key, value in state.items():
        if isinstance(value, Tensor):
            state[key] = value.index_select(0, index.to(value.device))
        elif isinstance(value, dict):
            reorder_state(value, index, within_sentences=within_sentences, sentences=sentences)
        elif isinstance(value, (tuple, list)) and value and all(isinstance(v, Tensor) for v in value):
            state[key] = type(value)(v.index_select(0, index.to(v.device)) for v in value)
    return state


# --- shared machinery ------------------------------------------------------------------


@contextlib.contextmanager
def _eval_mode(model: torch.nn.Module) -> Iterator[None]:
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


class _IncrementalDecoder:
    """Encoder output and decoder cache of the live hypotheses, one row each."""

    def __init__(self, model: Seq2SeqModel, batch: Batch, need_attention: bool, compile: str = "none"):
        self.model = model
        self.decode = compiled_decode(model, compile)
        self.need_attention = need_attention
        self.encoder_out = model.encode(batch)
        if "memory_pad_mask" not in self.encoder_out:
            raise KeyError(f"{type(model).__name__}.encode must return 'memory_pad_mask'")
        self.cache: State = {}
        self.sentences = batch.size

    @property
    def memory_pad_mask(self) -> Tensor:
        return self.encoder_out["memory_pad_mask"]

    def step(self, last_tokens: Tensor) -> tuple[Tensor, Tensor | None]:
        """Scores (N, V) of the next token, in the model's output dtype (log-probabilities up to a
        row's constant: :func:`_best_tokens`), and, if asked for, attention (N, S)."""
        if self.need_attention:
            logits, attention = self.decode(last_tokens, self.encoder_out, self.cache, need_attention=True)
            if attention is None:
                raise RuntimeError(f"{type(self.model).__name__}.decode returned no attention although need_attention=True")
            attention = attention[:, -1]
            attention = attention.to(torch.promote_types(attention.dtype, torch.float32))
            if attention.shape != self.memory_pad_mask.shape:
                raise RuntimeError(
                    f"{type(self.model).__name__}.decode returned attention over {attention.size(-1)} positions "
                    f"but memory_pad_mask has {self.memory_pad_mask.size(-1)}"
                )
        else:
            logits, attention = self.decode(last_tokens, self.encoder_out, self.cache)
            attention = None
        return logits[:, -1], attention

    def reorder(self, index: Tensor) -> None:
        """Continue hypotheses ``index`` (beam reordering within rows: the cache only, and of
        it not the parts computed from the source alone)."""
        reorder_state(self.cache, index, within_sentences=True)

    def keep(self, index: Tensor, sentences: Tensor | None = None) -> None:
        """Continue hypotheses ``index`` as rows leave or are copied to beams (encoder output too);
        ``sentences``: each continued sentence's row, once (None: one hypothesis each, ``index``)."""
        sentences = index if sentences is None else sentences
        reorder_state(self.encoder_out, index)
        reorder_state(self.cache, index, sentences=(self.sentences, sentences))
        self.sentences = sentences.numel()  # rows of the per-sentence static caches


_COMPILED_DECODE: dict[tuple[type, str], Callable[..., Any]] = {}


def compiled_decode(model: Seq2SeqModel, mode: str) -> Callable[..., Any]:
    """``model.decode``, through ``torch.compile`` unless ``mode`` is "none".  The family's
    ``decode`` function is compiled once per family and mode and kept, so every batch (and
    every search call) reuses its graphs (:mod:`nmtmodels.compiling`)."""
    if mode == "none":
        return model.decode
    if mode not in DECODE_COMPILE_MODES:
        raise ValueError(f"decode compile mode must be one of {', '.join(DECODE_COMPILE_MODES)}, got {mode!r}")
    key = (type(model), mode)
    if key not in _COMPILED_DECODE:
        _COMPILED_DECODE[key] = compile_module(type(model).decode, mode)
    return functools.partial(_COMPILED_DECODE[key], model)


def _max_lengths(model: Seq2SeqModel, batch: Batch, scorer: HypothesisScorer) -> Tensor:
    """(B,) token limits, EOS not counted; decoder inputs (BOS + tokens) fit max_positions()."""
    src_lengths = (batch.src_lengths - 1).clamp(min=0)
    limits = scorer.max_lengths(src_lengths.cpu()).to(batch.src.device)
    return limits.clamp(max=model.max_positions()[1] - 1)


def _constrain_(lprobs: Tensor, step: int, min_len: int, forced: Tensor, allowed: Tensor | None = None) -> None:
    """In place, at ``step`` (1-based): no PAD/BOS, no EOS before min_len, only EOS where forced,
    and where ``allowed`` (N, V) is given only its tokens (the scorer's ``constraint``).

    Allowed tokens keep their log-probabilities, so the values of chosen tokens stay the model's.
    """
    any_forced = bool(forced.any())
    forced_eos = lprobs[forced, EOS_ID] if any_forced else None  # before min_len or a constraint blocks EOS
    if allowed is not None:
        lprobs.masked_fill_(~allowed, -math.inf)
    lprobs[:, PAD_ID] = -math.inf
    lprobs[:, BOS_ID] = -math.inf
    if step <= min_len:
        lprobs[:, EOS_ID] = -math.inf
    if any_forced:
        lprobs[forced] = -math.inf
        lprobs[forced, EOS_ID] = forced_eos


# Rows whose log-softmax is taken at once (:func:`_best_tokens`): 64 x 8,000 fp32 values are 2 MB.
ROWS_PER_CHUNK = 64


def _best_tokens(logits: Tensor, width: int, step: int, min_len: int, forced: Tensor,
                 allowed: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The ``width`` best allowed next tokens of every row, best first: log-probabilities (N, width),
    at least fp32, and ids (N, width); ``width`` 1 takes the first of equal ones, as ``argmax``.
    The log-softmax (of whole rows) runs over :data:`ROWS_PER_CHUNK` rows at a time: a batch's
    (N, V) fp32 tensor is tens of MB, which the C allocator maps afresh, page by page, at every
    step (benchmarks/HISTORY.md, "Decoding: the log-softmax in chunks")."""
    dtype = torch.promote_types(logits.dtype, torch.float32)
    values, tokens = [], []
    for start in range(0, logits.size(0), ROWS_PER_CHUNK):
        lprobs = torch.log_softmax(logits[start:start + ROWS_PER_CHUNK], dim=-1, dtype=dtype)
        _constrain_(lprobs, step, min_len, forced[start:start + ROWS_PER_CHUNK],
                    None if allowed is None else allowed[start:start + ROWS_PER_CHUNK])
        best = lprobs.topk(width, dim=1) if width > 1 else lprobs.max(dim=1, keepdim=True)
        values.append(best[0])
        tokens.append(best[1])
    return (values[0], tokens[0]) if len(values) == 1 else (torch.cat(values), torch.cat(tokens))


def _trim_attention(attention: Tensor, memory_pad_mask: Tensor) -> Tensor:
    return attention[:, ~memory_pad_mask].cpu()


# --- beam search -----------------------------------------------------------------------


@torch.no_grad()
def beam_search(
    model: Seq2SeqModel, batch: Batch, cfg: DecodeConfig | None = None, scorer: HypothesisScorer | None = None
) -> list[list[Hypothesis]]:
    """The ``cfg.nbest`` best hypotheses of every batch row, best first (see module doc).  Without
    a ``scorer`` it checks ``cfg`` (``cfg.validate()``) and makes the scorer from it; a caller
    that gives the scorer checked the settings it made it from (:func:`translate_dataset`'s
    callers, once per run: a search of a batch is not where settings are checked)."""
    cfg = cfg or DecodeConfig()
    if scorer is None:
        cfg.validate()
        scorer = HypothesisScorer.from_config(cfg)
    with _eval_mode(model):
        return _beam_search(model, batch, cfg, scorer)


def _beam_search(model: Seq2SeqModel, batch: Batch, cfg: DecodeConfig, scorer: HypothesisScorer) -> list[list[Hypothesis]]:
    k, device = cfg.beam, batch.src.device
    need_coverage = scorer.needs_attention
    decoder = _IncrementalDecoder(model, batch, need_coverage or cfg.return_attention, cfg.compile)
    rows = torch.arange(batch.size, device=device)  # original row of every active row
    max_len = _max_lengths(model, batch, scorer)  # per active row
    tokens = torch.full((batch.size, 1), BOS_ID, dtype=torch.long, device=device)
    scores = None  # (N, t-1) positional scores of the live hypotheses
    coverage = attention_history = None
    finished = FinishedHypotheses(batch.size, cfg.nbest, device)
    finished_count = torch.zeros(batch.size, dtype=torch.long, device=device)  # per active row, "beam" rule
    top_finished = torch.zeros(batch.size, dtype=torch.bool, device=device)  # per active row, "top" rule
    rank_offsets = torch.arange(2 * k, device=device)
    constraint = scorer.constraint
    if constraint is not None:  # the source of each active row, the positions each hypothesis may have copied last
        row_src = batch.src
        copied = constraint.start(row_src)

    for step in itertools.count(1):
        n = rows.numel()
        logits, attention = decoder.step(tokens[:, -1:])
        first = scores is None  # the first step ran once per row
        forced = max_len < step
        allowed = None
        if constraint is not None:
            hyp_src = row_src if first else row_src.repeat_interleave(k, 0)
            allowed = constraint.allowed_tokens(hyp_src, copied, logits.size(-1))
        # A row's 2k best candidates are among the 2k best tokens of each of its hypotheses (a
        # hypothesis adds one running score to all its tokens), so only those get a running score.
        width = min(2 * k, logits.size(-1))
        hyp_lprobs, hyp_tokens = _best_tokens(logits, width, step, cfg.min_len,
                                              forced if first else forced.repeat_interleave(k), allowed)
        if first:  # copy everything to k beams
            copies = torch.arange(n, device=device).repeat_interleave(k)
            decoder.keep(copies, sentences=torch.arange(n, device=device))
            tokens, hyp_lprobs, hyp_tokens = tokens[copies], hyp_lprobs[copies], hyp_tokens[copies]
            if constraint is not None:
                copied = copied[copies]
            attention = None if attention is None else attention[copies]
            scores = hyp_lprobs.new_zeros(n * k, 0)
            cumulative = hyp_lprobs.new_full((n, k), -math.inf)
            cumulative[:, 0] = 0.0
            cumulative = cumulative.view(-1)
            if need_coverage:
                coverage = torch.zeros_like(attention)
            if cfg.return_attention:
                attention_history = attention.new_zeros(n * k, 0, attention.size(-1))
        if coverage is not None:
            coverage = coverage + attention
        candidates = (cumulative.unsqueeze(1) + hyp_lprobs).view(n, k * width)
        top_scores, top_index = candidates.topk(2 * k, dim=1)
        top_beams = top_index // width
        top_tokens = hyp_tokens.view(n, k * width).gather(1, top_index)
        top_lprobs = hyp_lprobs.view(n, k * width).gather(1, top_index)  # log P of each candidate's last token
        is_eos = top_tokens.eq(EOS_ID)

        # Finished candidates: EOS among the first k, scored and kept if they beat the row's worst.
        eos_first = is_eos[:, :k] & top_scores[:, :k].isfinite()
        if bool(eos_first.any()):
            r, c = eos_first.nonzero(as_tuple=True)
            parents = r * k + top_beams[r, c]
            final = scorer.score(
                top_scores[r, c],
                torch.full_like(r, step),
                None if coverage is None else coverage[parents],
                decoder.memory_pad_mask[parents],
            )
            accept = final > finished.worst[rows[r]]
            for i in accept.nonzero().flatten().tolist():
                parent = int(parents[i])
                attn = None
                if attention_history is not None:
                    full = torch.cat([attention_history[parent], attention[parent].unsqueeze(0)], 0)
                    attn = _trim_attention(full, decoder.memory_pad_mask[parent])
                finished.add(
                    int(rows[r[i]]),
                    Hypothesis(
                        tokens=tokens[parent, 1:].tolist(),
                        score=float(final[i]),
                        positional_scores=scores[parent].tolist() + [float(top_lprobs[r[i], c[i]])],
                        attention=attn,
                    ),
                )

        # Live hypotheses: the first k non-EOS candidates.
        live = (is_eos.long() * (2 * k) + rank_offsets).topk(k, dim=1, largest=False).indices
        live_scores = top_scores.gather(1, live)
        live_tokens = top_tokens.gather(1, live)
        live_lprobs = top_lprobs.gather(1, live)
        parents = (torch.arange(n, device=device).unsqueeze(1) * k + top_beams.gather(1, live)).view(-1)
        if constraint is not None:
            copied = constraint.advance(row_src.repeat_interleave(k, 0)[parents], copied[parents], live_tokens.view(-1))

        # A row is done at its length limit or by its early-stop rule (module doc).
        if cfg.early_stop == "exact":
            done = scorer.bound(live_scores[:, 0], max_len + 1) <= finished.worst[rows]
        elif cfg.early_stop == "beam":
            finished_count = finished_count + eos_first.sum(1)
            done = finished_count >= k
        else:
            top_finished = top_finished | eos_first[:, 0]
            done = top_finished & (finished.worst[rows] > -math.inf)  # nbest hypotheses are kept
        done = done | (max_len < step)
        for i in done.nonzero().flatten().tolist():
            if not finished.lists[int(rows[i])]:
                finished.lists[int(rows[i])].append(
                    _best_unfinished(i, k, tokens, scores, cumulative, attention_history, decoder.memory_pad_mask))
        if bool(done.all()):
            break
        if bool(done.any()):
            kept_rows = (~done).nonzero().flatten()
            parents = parents.view(n, k)[kept_rows].view(-1)
            live_scores, live_tokens, live_lprobs = live_scores[kept_rows], live_tokens[kept_rows], live_lprobs[kept_rows]
            rows, max_len = rows[kept_rows], max_len[kept_rows]
            if constraint is not None:
                row_src, copied = row_src[kept_rows], copied.view(n, k, -1)[kept_rows].flatten(0, 1)
            finished_count, top_finished = finished_count[kept_rows], top_finished[kept_rows]
            decoder.keep(parents, sentences=kept_rows)  # rows leave and beams reorder in one index
        else:
            decoder.reorder(parents)
        tokens = torch.cat([tokens[parents], live_tokens.view(-1, 1)], 1)
        scores = torch.cat([scores[parents], live_lprobs.view(-1, 1)], 1)
        cumulative = live_scores.view(-1)
        if coverage is not None:
            coverage = coverage[parents]
        if attention_history is not None:
            attention_history = torch.cat([attention_history[parents], attention[parents].unsqueeze(1)], 1)

    return finished.lists


def _best_unfinished(row: int, k: int, tokens: Tensor, scores: Tensor, cumulative: Tensor,
                     attention_history: Tensor | None, memory_pad_mask: Tensor) -> Hypothesis:
    """The live hypothesis of active ``row`` with the highest log-probability (NaN ranks last)."""
    beams = cumulative[row * k:(row + 1) * k]
    best = row * k + int(torch.nan_to_num(beams, nan=-math.inf).argmax())
    attention = None
    if attention_history is not None:
        attention = _trim_attention(attention_history[best], memory_pad_mask[best])
    return Hypothesis(tokens=tokens[best, 1:].tolist(), score=float(beams[best - row * k]),
                      positional_scores=scores[best].tolist(), attention=attention, finished=False)


# --- greedy search ---------------------------------------------------------------------


@torch.no_grad()
def greedy_search(
    model: Seq2SeqModel,
    batch: Batch,
    max_len_a: float = 1.2,
    max_len_b: int = 10,
    *,
    min_len: int = 1,
    return_attention: bool = False,
    compile: str = "none",
    length_limits: Sequence[LengthLimit] = (),
) -> list[Hypothesis]:
    """The most probable next token at every step (PAD/BOS never, EOS not before ``min_len``).

    ``score`` is the log-probability (no length penalty); equals :func:`beam_search` with
    beam 1, ``length_penalty=0`` and no coverage penalty.  ``length_limits``: further limits
    beside ``floor(max_len_a * |x| + max_len_b)`` (ESC's :class:`RatioLengthLimit`).
    ``compile``: as ``DecodeConfig.compile``.
    """
    scorer = HypothesisScorer(length_limits=(LinearLengthLimit(max_len_a, max_len_b), *length_limits))
    with _eval_mode(model):
        decoder = _IncrementalDecoder(model, batch, return_attention, compile)
        device = batch.src.device
        rows = torch.arange(batch.size, device=device)
        max_len = _max_lengths(model, batch, scorer)
        tokens = torch.full((batch.size, 1), BOS_ID, dtype=torch.long, device=device)
        scores: Tensor | None = None
        attention_history: Tensor | None = None
        results: list[Hypothesis] = [None] * batch.size  # type: ignore[list-item]  # every row ends with EOS
        for step in itertools.count(1):
            logits, attention = decoder.step(tokens[:, -1:])
            forced = max_len < step
            best_lprob, best = _best_tokens(logits, 1, step, min_len, forced)
            if scores is None:
                scores = best_lprob.new_zeros(rows.numel(), 0)
                if return_attention:
                    attention_history = attention.new_zeros(rows.numel(), 0, attention.size(-1))
            # at the limit EOS even if its log-probability is NaN or -inf (the best could be PAD)
            choice = torch.where(forced, EOS_ID, best[:, 0])
            tokens = torch.cat([tokens, choice.unsqueeze(1)], 1)
            scores = torch.cat([scores, best_lprob], 1)
            if attention_history is not None:
                attention_history = torch.cat([attention_history, attention.unsqueeze(1)], 1)
            ended = choice.eq(EOS_ID)
            for i in ended.nonzero().flatten().tolist():
                positional = scores[i].tolist()
                results[int(rows[i])] = Hypothesis(
                    tokens=tokens[i, 1:-1].tolist(),
                    score=math.fsum(positional),
                    positional_scores=positional,
                    attention=None if attention_history is None else _trim_attention(attention_history[i], decoder.memory_pad_mask[i]),
                )
            if bool(ended.all()):
                break
            if bool(ended.any()):
                kept = (~ended).nonzero().flatten()
                decoder.keep(kept)
                rows, max_len, tokens, scores = rows[kept], max_len[kept], tokens[kept], scores[kept]
                if attention_history is not None:
                    attention_history = attention_history[kept]
    return results


# ----------------------------------------------------------------------------- a whole data set
@torch.no_grad()
def translate_dataset(
    model: Seq2SeqModel,
    dataset: ParallelDataset,
    decode_cfg: DecodeConfig,
    *,
    max_tokens: int,
    device: torch.device | str = "cpu",
    amp: Literal["bf16", "none"] = "none",
    progress: Callable[[int], None] | None = None,
    constraint: SourceSubsequence | None = None,
) -> list[list[Any]]:
    """Hypotheses (``nmtmodels.decoding.scorer.Hypothesis``, best first) for every example of
    ``dataset``, in dataset order, with checked search settings ``decode_cfg`` (made by
    ``from_dict`` or checked by their ``validate()``, as
    :meth:`~nmtmodels.decoding.translator.Translator.stream` does).  Beam 1 with nbest 1 runs
    greedy search when that gives what :func:`beam_search` with beam 1 gives: no length
    penalty, no coverage penalty (every length limit, ``max_len_ratio`` included, applies
    either way); otherwise beam search with beam 1, which ranks the finished hypotheses by the
    penalties.  ``progress``
    is called with the number of sentences of each batch when it is done.  A sentence with no
    token (an empty input line) is not decoded: its one hypothesis is empty, with score 0.
    ``amp="bf16"``: the model runs under bf16 autocast on CUDA or on a CPU with native bf16
    (log-probabilities and scores stay fp32); elsewhere fp32, with a warning once
    (:mod:`nmtmodels.precision`).  ``constraint``: the source-subsequence constraint that
    ``decode_cfg.subsequence`` needs (beam search, also at beam 1)."""
    device = torch.device(device)
    if device.type == "cuda":
        avoid_per_shape_attention_kernels()
    # bf16 only on CUDA or a CPU with native bf16; fp32, the default, goes through no precision code
    autocast = bf16_autocast(amp, device, model=model) if amp == "bf16" else contextlib.nullcontext()
    lengths = dataset.sizes("tokens")[:, :1]
    sampler = BucketBatchSampler(lengths, max_tokens, shuffle=False)
    results: list[list[Any]] = [[] for _ in range(len(dataset))]
    empty = lengths[:, 0] <= 1  # no token but </s>: an empty line gets an empty translation, as in CTranslate2
    for row in np.flatnonzero(empty):
        results[row] = [Hypothesis(tokens=[], score=0.0, positional_scores=[])]
    scorer = HypothesisScorer.from_config(decode_cfg, constraint)
    greedy = (decode_cfg.beam == 1 and decode_cfg.nbest == 1 and scorer.length_penalty is None and not scorer.terms
              and scorer.constraint is None)
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
                if greedy:
                    hyps = [[h] for h in greedy_search(model, batch, decode_cfg.max_len_a, decode_cfg.max_len_b,
                                                       min_len=decode_cfg.min_len,
                                                       return_attention=decode_cfg.return_attention,
                                                       compile=decode_cfg.compile,
                                                       length_limits=scorer.length_limits[1:])]
                else:
                    hyps = beam_search(model, batch, decode_cfg, scorer)
            for row, row_hyps in zip(indices.tolist(), hyps):
                results[row] = row_hyps
            if progress is not None:
                progress(len(indices))
    finally:
        model.train(was_training)
    return results
