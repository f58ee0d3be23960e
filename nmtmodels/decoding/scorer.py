"""What a search optimises and where it stops, from its settings
(:class:`~nmtmodels.decoding.config.DecodeConfig`): the :class:`Hypothesis` a search returns,
and :class:`HypothesisScorer`, which ranks finished hypotheses by ``log P / lp(|Y|) +
sum(terms)`` (ESC eq. 1) with the GNMT length penalty (ESC eq. 2), the coverage penalty (ESC
eq. 3) as a term, and the length limits ``floor(a * |x| + b)`` and ``floor(gamma * |S|)``;
:class:`FinishedHypotheses` keeps each row's best.  The conventions (what ``|Y|`` counts, when
rows stop) are in :mod:`nmtmodels.decoding.search`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import torch
from torch import Tensor

from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.constraints import SourceSubsequence

# Guards floor(a * x + b) against float error (0.7 * 30 = 20.999999999999996).
_LIMIT_EPSILON = 1e-6


@dataclass
class Hypothesis:
    """One output: ``tokens`` without BOS/EOS; ``attention`` (len(tokens) + 1, S) or None."""

    tokens: list[int]
    score: float
    positional_scores: list[float]
    attention: Tensor | None = None
    finished: bool = True  # False: no beam reached EOS (module doc)

    @property
    def log_prob(self) -> float:
        """log P(tokens, EOS | source) under the model."""
        return math.fsum(self.positional_scores)


# --- scorers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GNMTLengthPenalty:
    """lp(|Y|) = ((5 + |Y|) / 6) ** alpha (Wu et al. 2016; ESC eq. 2); |Y| counts the EOS."""

    alpha: float

    def __call__(self, lengths: Tensor) -> Tensor:
        return ((5.0 + lengths) / 6.0) ** self.alpha


class ScoreTerm(Protocol):
    """A term added to the normalised log-probability of a finished hypothesis."""

    needs_attention: bool
    upper_bound: float  # no hypothesis gets more (used by the exact early stop)

    def __call__(self, coverage: Tensor, memory_pad_mask: Tensor) -> Tensor:
        """(N,) term from the summed attention ``coverage`` (N, S) over all target steps."""


@dataclass(frozen=True)
class CoveragePenalty:
    """cp = beta * sum_i log(min(sum_j p_ij, 1)) (ESC eq. 3; Wu et al. 2016).

    ``i`` runs over the non-padding memory positions (the source EOS included), ``j`` over
    every target step including the one that produced EOS.
    """

    beta: float
    needs_attention: ClassVar[bool] = True
    upper_bound: ClassVar[float] = 0.0

    def __call__(self, coverage: Tensor, memory_pad_mask: Tensor) -> Tensor:
        # A position that got no attention at all would give log 0; clamp to the smallest
        # positive float so the hypothesis ranks last instead of producing NaN.
        capped = coverage.clamp(min=torch.finfo(coverage.dtype).tiny, max=1.0).log()
        return self.beta * capped.masked_fill(memory_pad_mask, 0.0).sum(-1)


class LengthLimit(Protocol):
    """The largest number of target tokens (EOS not counted) for each source length."""

    def __call__(self, src_lengths: Tensor) -> Tensor:
        """(B,) long limits from the (B,) source lengths without EOS."""


@dataclass(frozen=True)
class LinearLengthLimit:
    """floor(a * |x| + b) tokens."""

    a: float
    b: float

    def __call__(self, src_lengths: Tensor) -> Tensor:
        return torch.floor(src_lengths.double() * self.a + self.b + _LIMIT_EPSILON).long()


@dataclass(frozen=True)
class RatioLengthLimit:
    """ESC's hard stop: decoding ends once |S'| would exceed gamma * |S| (floor(gamma * |S|) tokens)."""

    gamma: float

    def __call__(self, src_lengths: Tensor) -> Tensor:
        return torch.floor(src_lengths.double() * self.gamma + _LIMIT_EPSILON).long()


@dataclass
class HypothesisScorer:
    """s(Y) = log P(Y) / lp(|Y|) + sum(terms) (ESC eq. 1) and the length limits of a search.

    Pass one to :func:`beam_search` to plug in other terms or limits; :meth:`from_config`
    builds the standard one from a :class:`DecodeConfig`.
    """

    length_penalty: GNMTLengthPenalty | None = None
    terms: Sequence[ScoreTerm] = ()
    length_limits: Sequence[LengthLimit] = field(default_factory=lambda: (LinearLengthLimit(1.2, 10),))
    constraint: SourceSubsequence | None = None  # which tokens a hypothesis may choose next (None: all)

    @classmethod
    def from_config(cls, cfg: DecodeConfig, constraint: SourceSubsequence | None = None) -> HypothesisScorer:
        """The scorer of ``cfg``; ``constraint``: the source-subsequence constraint, which
        ``cfg.subsequence`` needs (it is built from the vocabularies: ``SourceSubsequence.from_vocabs``)."""
        if cfg.subsequence and constraint is None:
            raise ValueError("decode.subsequence needs the vocabularies: pass SourceSubsequence.from_vocabs(...) "
                             "(nmtmodels.decoding.translator.Translator does)")
        limits: list[LengthLimit] = [LinearLengthLimit(cfg.max_len_a, cfg.max_len_b)]
        if cfg.max_len_ratio is not None:
            limits.append(RatioLengthLimit(cfg.max_len_ratio))
        terms: list[ScoreTerm] = [CoveragePenalty(cfg.coverage_penalty)] if cfg.coverage_penalty > 0 else []
        penalty = GNMTLengthPenalty(cfg.length_penalty) if cfg.length_penalty != 0 else None
        return cls(length_penalty=penalty, terms=tuple(terms), length_limits=tuple(limits),
                   constraint=constraint if cfg.subsequence else None)

    @property
    def needs_attention(self) -> bool:
        return any(term.needs_attention for term in self.terms)

    def max_lengths(self, src_lengths: Tensor) -> Tensor:
        """(B,) token limits (EOS not counted): the smallest of all length limits."""
        limits = [limit(src_lengths) for limit in self.length_limits]
        if not limits:
            raise ValueError("HypothesisScorer needs at least one length limit")
        return torch.stack(limits).amin(0).clamp(min=0)

    def score(self, log_probs: Tensor, lengths: Tensor, coverage: Tensor | None, memory_pad_mask: Tensor | None) -> Tensor:
        """Scores of finished hypotheses; ``lengths`` count the EOS."""
        scores = log_probs if self.length_penalty is None else log_probs / self.length_penalty(lengths.to(log_probs.dtype))
        for term in self.terms:
            scores = scores + term(coverage, memory_pad_mask).to(scores.dtype)
        return scores

    def bound(self, log_probs: Tensor, max_lengths: Tensor) -> Tensor:
        """Upper bound on the score of any completion of live hypotheses with ``log_probs`` (<= 0)."""
        scores = log_probs if self.length_penalty is None else log_probs / self.length_penalty(max_lengths.to(log_probs.dtype))
        return scores + sum(term.upper_bound for term in self.terms)


class FinishedHypotheses:
    """The ``nbest`` best finished hypotheses of every row of a beam search, best first."""

    def __init__(self, rows: int, nbest: int, device: torch.device):
        self.nbest = nbest
        self.lists: list[list[Hypothesis]] = [[] for _ in range(rows)]
        # Score a new hypothesis must beat: the nbest-th best, -inf while fewer are known.
        self.worst = torch.full((rows,), -math.inf, dtype=torch.float64, device=device)

    def add(self, row: int, hypothesis: Hypothesis) -> None:
        kept = self.lists[row]
        kept.append(hypothesis)
        kept.sort(key=lambda h: -h.score)  # stable: earlier (shorter) first on ties
        del kept[self.nbest :]
        if len(kept) == self.nbest:
            self.worst[row] = kept[-1].score
