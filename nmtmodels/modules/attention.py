"""Multi-head attention (Vaswani et al. 2017, eq. 1-3) with optional relation terms.

Two code paths give the same numbers:

* the fast path calls :func:`torch.nn.functional.scaled_dot_product_attention` (used
  whenever no relation terms and no attention weights are requested, except below);
* the explicit path computes ``softmax(q k^T / sqrt(d_head))`` itself.  It is taken
  when the caller asks for the head-averaged weights (decoder cross-attention for
  coverage penalties / alignment output) or passes :class:`RelationTerms`, and on CPU for
  a single query (one incremental-decoding step), where two batched matrix products are
  faster than torch's CPU flash-attention kernel at the key lengths of a sentence
  (timings: benchmarks/HISTORY.md, "Where the time goes").

Under bf16 autocast on the CPU (``train.amp: bf16``), a training step's fast path runs in fp32:
torch 2.13's CPU flash-attention backward in bf16 is about four times slower than in fp32 at
our shapes, while the projections around it gain from bf16 (benchmarks/README.md, "bf16 on
the CPU").  Without gradients (decoding) the bf16 kernel is as fast as fp32 and is kept.

Relation terms (Shaw et al. 2018; lattice-transformer paper eq. 4-5) add a learned
vector per relation to every key and value, shared by all heads::

    e_ij = q_i (k_j + a^K_{r_ij})^T / sqrt(d_head)        o_i = sum_j alpha_ij (v_j + a^V_{r_ij})

They are computed without a (B, Tq, Tk, d) tensor: ``q a^K`` is (B, h, Tq, R) and is
gathered by ``r_ij``; the value term sums the attention weights per relation
(``scatter_add`` into (B, h, Tq, R)) and multiplies by ``a^V``.

Masks: ``key_padding_mask`` (B, Tk) is True at padding; ``causal`` hides later keys.
Incremental decoding keeps a per-module ``cache`` dict: self-attention appends the new
keys/values (``cache["k"]``/``cache["v"]``, (B, h, T, d_head)); static (memory)
attention (``static_kv=True``) projects the memory once and reuses it, and marks its cache
with ``STATIC_CACHE`` so that beam search need not reorder it between beams of one sentence.
Beam search keeps that cache once per sentence: when the queries have ``g`` times as many rows as
the cached keys, rows ``i*g .. i*g+g-1`` (sentence i's hypotheses) attend to key row i as one
group of ``g`` queries, one matrix product per sentence instead of ``g`` matrix-vector ones
(benchmarks/HISTORY.md, "Decoding: one memory per sentence").
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmtmodels.modules.dropout import dropout as nmt_dropout

STATIC_CACHE = "static"
"""Key set to True in a cache dict whose tensors depend on the source sentence only (projected
memory keys/values): every hypothesis of a sentence holds the same rows, so
:func:`~nmtmodels.decoding.search.reorder_state` skips the dict when it only permutes hypotheses
within sentences (fairseq's ``reorder_incremental_state`` does the same for static keys)."""


def avoid_per_shape_attention_kernels() -> None:
    """Switch off the cuDNN backend of ``scaled_dot_product_attention`` (process-wide).

    torch picks cuDNN's attention first for bf16 on recent GPUs, and cuDNN builds an execution
    graph for every new (batch, length) shape before caching it. Our batches are bucketed by
    length and every beam-search step has a new key length, so it keeps building (timings:
    benchmarks/HISTORY.md, "On a GPU"). Flash and memory-efficient attention need no per-shape
    set-up. The trainer and :func:`nmtmodels.decoding.search.translate_dataset` call this on CUDA."""
    torch.backends.cuda.enable_cudnn_sdp(False)


class RelationTerms(NamedTuple):
    """Relation embeddings added to keys and values, shared by heads.

    ``ids`` (B, Tq, Tk) long: relation r_ij of query i to key j, in [0, R);
    ``keys`` (R, d_head): a^K; ``values`` (R, d_head): a^V.
    """

    ids: Tensor
    keys: Tensor
    values: Tensor


def allowed_keys(
    num_queries: int, num_keys: int, key_padding_mask: Tensor | None, causal: bool, device: torch.device
) -> Tensor | None:
    """Bool mask, True where a query may attend a key, broadcastable to (B, h, Tq, Tk); None = all.

    With ``causal``, query i (the last ``num_queries`` of ``num_keys`` positions) sees keys
    ``j <= i + num_keys - num_queries`` (so cached decoding steps line up).
    """
    mask = None
    if causal and num_queries > 1:
        offset = num_keys - num_queries
        mask = torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril(offset)
    if key_padding_mask is not None:
        keep = ~key_padding_mask[:, None, None, :]
        mask = keep if mask is None else mask & keep
    return mask


class MultiheadAttention(nn.Module):
    """Multi-head attention from ``query`` to ``key_value`` (self-attention when the same).

    ``embed_dim``: size of queries and of the output; ``kv_dim``: size of the key/value
    source (default ``embed_dim``); ``inner_dim``: size of the projected queries, keys and
    values across all heads (default ``embed_dim``; smaller for the Graph-Transformer's
    half-dimension attention).  Queries and keys/values have separate projections so a
    family can attend from one representation to another.
    """

    def __init__(
        self,
        embed_dim: int,
        heads: int,
        *,
        dropout: float = 0.0,
        kv_dim: int | None = None,
        inner_dim: int | None = None,
        bias: bool = True,
    ) -> None:
        super().__init__()
        inner_dim = inner_dim or embed_dim
        if inner_dim % heads:
            raise ValueError(f"attention size {inner_dim} is not divisible by {heads} heads")
        self.heads = heads
        self.head_dim = inner_dim // heads
        self.inner_dim = inner_dim
        self.dropout = dropout
        self.q_proj = nn.Linear(embed_dim, inner_dim, bias=bias)
        self.kv_proj = nn.Linear(kv_dim or embed_dim, 2 * inner_dim, bias=bias)
        self.out_proj = nn.Linear(inner_dim, embed_dim, bias=bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform projections (each of q, k, v, out on its own), zero biases."""
        nn.init.xavier_uniform_(self.q_proj.weight)
        for block in self.kv_proj.weight.data.chunk(2, dim=0):
            nn.init.xavier_uniform_(block)
        nn.init.xavier_uniform_(self.out_proj.weight)
        for proj in (self.q_proj, self.kv_proj, self.out_proj):
            if proj.bias is not None:
                nn.init.zeros_(proj.bias)

    def project_key_value(self, key_value: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values (B, h, Tk, d_head) of ``key_value`` (B, Tk, kv_dim)."""
        batch, length, _ = key_value.shape
        kv = self.kv_proj(key_value).view(batch, length, 2, self.heads, self.head_dim)
        k, v = kv.permute(2, 0, 3, 1, 4).unbind(0)
        return k, v

    def forward(
        self,
        query: Tensor,
        key_value: Tensor | None = None,
        *,
        key_padding_mask: Tensor | None = None,
        causal: bool = False,
        relations: RelationTerms | None = None,
        need_weights: bool = False,
        cache: dict[str, Tensor] | None = None,
        static_kv: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend; return ``(output (B, Tq, embed_dim), weights (B, Tq, Tk) or None)``.

        ``key_value`` None means self-attention on ``query``.  ``cache`` (a dict owned by
        the caller, one per attention module) enables incremental decoding: with
        ``static_kv`` the keys/values are projected on the first call and reused
        (``key_value`` may then be None on later calls); otherwise the new keys/values are
        appended to the cached ones.  ``need_weights`` returns the attention weights
        averaged over heads (before dropout).
        """
        batch, num_queries, _ = query.shape
        q = self.q_proj(query).view(batch, num_queries, self.heads, self.head_dim).transpose(1, 2)
        if static_kv and cache is not None and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k, v = self.project_key_value(query if key_value is None else key_value)
            if cache is not None:
                if not static_kv and "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
                if static_kv:
                    cache[STATIC_CACHE] = True
        groups = batch // k.size(0) if static_kv else 1
        if groups * k.size(0) != batch:
            raise ValueError(f"{batch} queries cannot share the memory of {k.size(0)} sentences evenly")
        if groups > 1 and relations is not None:  # relation ids are per hypothesis
            k, v, groups = k.repeat_interleave(groups, 0), v.repeat_interleave(groups, 0), 1
        if groups > 1:  # the hypotheses of a sentence share its memory: their queries form one group
            q = q.view(k.size(0), groups, self.heads, num_queries, self.head_dim).transpose(1, 2)
            q = q.reshape(k.size(0), self.heads, groups * num_queries, self.head_dim)
            key_padding_mask = None if key_padding_mask is None else key_padding_mask[::groups]
        single_query_on_cpu = num_queries == 1 and q.device.type == "cpu"  # per hypothesis, before grouping
        out, weights = self._attend(q, k, v, key_padding_mask, causal, relations, need_weights, single_query_on_cpu)
        if groups > 1:
            out = out.view(k.size(0), self.heads, groups, num_queries, self.head_dim).transpose(1, 2)
            out = out.reshape(batch, self.heads, num_queries, self.head_dim)
            weights = None if weights is None else weights.reshape(batch, num_queries, -1)
        out = out.transpose(1, 2).reshape(batch, num_queries, self.inner_dim)
        return self.out_proj(out), weights

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, key_padding_mask: Tensor | None, causal: bool,
                relations: RelationTerms | None, need_weights: bool, explicit: bool) -> tuple[Tensor, Tensor | None]:
        """Attention output (B, h, Tq, d_head) and head-averaged weights (B, Tq, Tk) if asked for;
        ``explicit`` takes the explicit path even where the fast one could run (module doc)."""
        num_queries, num_keys = q.size(2), k.size(2)
        dropout = self.dropout if self.training else 0.0
        if relations is None and not need_weights and not explicit:
            is_causal = causal and num_queries > 1 and key_padding_mask is None and num_queries == num_keys
            mask = None if is_causal else allowed_keys(num_queries, num_keys, key_padding_mask, causal, q.device)
            if q.requires_grad and q.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
                with torch.autocast("cpu", enabled=False):
                    out = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask,
                                                         dropout_p=dropout, is_causal=is_causal)
            else:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=is_causal)
            weights = None
        else:
            mask = allowed_keys(num_queries, num_keys, key_padding_mask, causal, q.device)
            out, weights = self._explicit_attention(q, k, v, mask, relations, need_weights, dropout)
        return out, weights

    def _explicit_attention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        mask: Tensor | None,
        relations: RelationTerms | None,
        need_weights: bool,
        dropout: float,
    ) -> tuple[Tensor, Tensor | None]:
        """softmax(q k^T / sqrt(d) [+ relation logits]) v [+ relation values]; eq. 1-5."""
        q = q * self.head_dim**-0.5
        scores = torch.matmul(q, k.transpose(-2, -1))
        if relations is not None:
            index = relations.ids.unsqueeze(1).expand(-1, self.heads, -1, -1)
            scores = scores + torch.matmul(q, relations.keys.t()).gather(-1, index)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        weights = probs.mean(dim=1) if need_weights else None
        probs = nmt_dropout(probs, dropout, training=dropout > 0)
        out = torch.matmul(probs, v)
        if relations is not None:
            per_relation = probs.new_zeros(*probs.shape[:-1], relations.values.size(0))
            per_relation = per_relation.scatter_add(-1, index, probs)
            out = out + torch.matmul(per_relation, relations.values)
        return out, weights
