"""Graph-Transformer (Duan, Zhao and Wang, "Graph-to-Sequence Neural Machine Translation"),
registered as ``"graph_transformer"``: a Transformer whose encoder layers group subgraphs
by order; the decoder is the baseline's.

Every encoder layer reads two representations, the *previous* one ``p`` (the full
representation of the layer below) and the *incremental* one ``i`` (what the layer below
added), and computes three attention parts, each with its own projections:

    i_h  = MHA(q=i, kv=i)                          high order
    i_m  = MHA(q=i, kv=p) + MHA(q=p, kv=i)         middle order (two groups)
    i_l  = p                                       low order: passed on, no attention

fused into the layer's full representation ``r_f`` by one of (``options.fusion``):

    sum        r_f = i_h + i_m + i_l
    gate       w = sigmoid(W [i_h + i_m; LN(i_l)] + b); r_f = (i_h + i_m) * w + i_l * (1 - w)
               (eq. 6 with Table 2's parameters; options.gate: printed is w = sigmoid(i_h + i_m + i_l))
    self_gate  R = [i_h; i_m1; i_m2; i_l] (4 units per position),
               r_f = sum_a (softmax(R_q R_k^T / sqrt(d)) / 4 R_v)_a                      (eq. 7)

followed by the position-wise feed-forward sub-layer with its residual connection.

Choices where the paper is vague:

* what passes between layers: the paper defines the previous representation of a layer as
  the full representation of the layer below and the incremental one as "the difference
  between full representation and previous representation".  So layer n maps ``(p, i)``
  to ``(r, r - p)`` with ``r`` its full representation (after the FFN); the low-order group
  ``p`` is the residual stream, and the encoder output is the last ``r`` (= previous +
  incremental of the last layer, the paper's "final representation").
* the first layer: the embeddings are the full representation of a "layer 0" that had
  nothing before it, so ``p = i = embeddings`` (previous = embeddings, incremental =
  embeddings - 0).
* norms: pre-norm layers normalise ``p`` and ``i`` (two layer norms) before the attention
  parts and add the un-normalised ``p`` as ``i_l``; post-norm layers normalise ``r_f``.
  Dropout applies to each attention part's output.
* weight-gate (``options.gate``): eq. 6 prints no parameters, but Table 2 counts about 2 d^2
  more per encoder layer for every "+gate" row (En-De: 77M -> 80M, 71M -> 74M at d = 512, six
  layers).  The default ``learned`` reads the gate as a learned one, w = sigmoid(W [i_h + i_m;
  LN(i_l)] + b) with W: 2d -> d (:class:`LearnedGate`), W = 0 and b = ``gate_bias`` at the
  start; ``printed`` is eq. 6 as printed, element-wise without parameters (:class:`WeightGate`).
  The printed gate mixes the raw residual stream coordinate by coordinate, and the gradient
  that reaches the embeddings loses its direction with every layer; trained, it lost quality
  with every added layer (docs/models/graph.md, "The weight-gate", has the runs).
  ``i_m`` is the sum of the two middle parts.
* self-gate: single-head, ``R_q, R_k, R_v`` affine maps d -> d, ``d_k = d``; the four
  outputs of eq. 7 are summed, so the division by 4 makes the weights of the four groups
  sum to one.  Since ``R_v`` is affine and those weights sum to one, it is applied once to
  the weighted mix of the units, and the scores use ``W_q^T W_k`` (see
  :meth:`SelfGate.unit_weights`): the same numbers as eq. 7, less work.
* half-dim: the three attention parts project queries, keys and values to ``d/2``
  (``MultiheadAttention(inner_dim=d/2)``, same number of heads), output back to ``d``.
* shared-qkv: the three parts share one query, one key and one value projection (applied
  to ``i`` and ``p`` they give the paper's "six vectors"); each part keeps its own output
  projection.
* the "weight of subgraphs of high order" (Figure 5) is the gate ``w`` averaged over the
  model dimension (gate), or the weight of the unit ``i_h`` averaged over the four queries
  (self-gate); the sum fusion has none.

A control, not in the paper (``options.subgraphs: false``): every layer keeps only the high-order
part over its input, ``i_h = MHA(q=p, kv=p)``, fused with ``i_l = p``.  With the sum fusion this
is the Transformer's encoder layer, parameter for parameter; with the learned gate it is a
Transformer whose self-attention residual has the headline's carry gate (2 d^2 + d parameters per
layer), the control that tells "the subgraph groups help" from "a learned carry gate helps"
(workflow_scripts/evaluation/claims.yaml, ``transformer_carry_gate``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import Batch
from nmtmodels.models.base import register_model
from nmtmodels.models.transformer import TransformerEncoder, TransformerModel
from nmtmodels.modules.attention import MultiheadAttention
from nmtmodels.modules.dropout import Dropout
from nmtmodels.modules.embedding import InputEmbedding
from nmtmodels.modules.layers import FeedForward, ResidualNorm

# What the workflow and nmt-export read of this family without importing it (nmtmodels/family_needs.py).
FAMILY_NEEDS = {
    "graph_transformer": {"not_exported": "its encoder layers run several attention groups over the previous and "
                                          "incremental representations and fuse them by sum or gates; a CTranslate2 "
                                          "encoder layer has one self-attention and one feed-forward block"},
}


@dataclass
class GraphOptions:
    """``model.options`` of ``graph_transformer`` (the variants of the paper's Table 2)."""

    fusion: Literal["sum", "gate", "self_gate"] = "sum"
    half_dim: bool = False  # attention parts at d/2
    shared_qkv: bool = False  # one query/key/value projection for the three parts
    gate: Literal["learned", "printed"] = "learned"  # weight-gate: learned (Table 2's parameters) or eq. 6 as printed
    gate_bias: float = -2.0  # learned gate: initial bias, sigmoid(-2) = 0.12 of the new groups
    subgraphs: bool = True  # false: the high-order part over the layer input only (a Transformer layer; a control)


# The variants of the paper's Table 2 as ``model.options`` (configs, tests and the benchmark).
TABLE2_VARIANTS: dict[str, dict] = {
    "model": {},
    "+half-dim": {"half_dim": True},
    "+gate": {"fusion": "gate"},
    "+self-gate": {"fusion": "self_gate"},
    "+shared-qkv&gate": {"shared_qkv": True, "fusion": "gate"},
    "+half-dim&gate": {"half_dim": True, "fusion": "gate"},
    "+half-dim&gate&shared-qkv": {"half_dim": True, "fusion": "gate", "shared_qkv": True},
}


# --- fusion of the subgraph groups (eq. 6-7) ----------------------------------------------


# Every fusion takes the three attention parts, the low-order group ``low`` (the un-normalised
# previous representation) and ``low_normed`` (the same after the layer's input norm: equal to
# ``low`` in post-norm layers); only the learned gate reads ``low_normed``.


class SumFusion(nn.Module):
    """r_f = i_h + i_m + i_l (equal weights, as the plain Transformer's residual)."""

    def forward(self, high: Tensor, middle_incr: Tensor, middle_prev: Tensor, low: Tensor, low_normed: Tensor) -> tuple[Tensor, None]:
        return high + middle_incr + middle_prev + low, None


class WeightGate(nn.Module):
    """Eq. 6 as printed, without parameters: w = sigmoid(i_h + i_m + i_l),
    r_f = (i_h + i_m) w + i_l (1 - w); returns r_f and the high-order weight averaged over the
    model dimension (B, S)."""

    def forward(self, high: Tensor, middle_incr: Tensor, middle_prev: Tensor, low: Tensor, low_normed: Tensor) -> tuple[Tensor, Tensor]:
        new = high + middle_incr + middle_prev
        w = torch.sigmoid(new + low)
        return new * w + low * (1.0 - w), w.mean(-1)


class LearnedGate(nn.Module):
    """Eq. 6 with the parameters of Table 2's "+gate" rows: w = sigmoid(W [i_h + i_m; i_l] + b),
    r_f = (i_h + i_m) w + i_l (1 - w), W: 2d -> d (2 d^2 + d parameters per layer).

    The gate reads the low-order group as normalised (``low_normed``) so that its pre-activation
    does not grow with the pre-norm residual stream; the carried value is ``low`` itself.  W
    starts at zero and b at ``bias`` (< 0), so every layer starts close to the identity on the
    residual path (w = sigmoid(b) of the new groups), as a highway layer's carry gate (Srivastava
    et al. 2015) and the gradient reaches the embeddings at any depth."""

    def __init__(self, d_model: int, bias: float) -> None:
        super().__init__()
        self.proj = nn.Linear(2 * d_model, d_model)
        nn.init.zeros_(self.proj.weight)
        nn.init.constant_(self.proj.bias, bias)

    def forward(self, high: Tensor, middle_incr: Tensor, middle_prev: Tensor, low: Tensor, low_normed: Tensor) -> tuple[Tensor, Tensor]:
        new = high + middle_incr + middle_prev
        w = torch.sigmoid(self.proj(torch.cat([new, low_normed], -1)))
        return new * w + low * (1.0 - w), w.mean(-1)


class SelfGate(nn.Module):
    """Eq. 7: self-attention over the four group units of each position, divided by 4 and
    summed; returns r_f and the weight of the high-order unit (B, S)."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.query = nn.Linear(d_model, d_model)
        # No key bias: its term (W_q u_a + b_q) b_k is the same for every key b and cancels in
        # the softmax, so it could never learn (the conformance suite's gradient check).
        self.key = nn.Linear(d_model, d_model, bias=False)
        self.value = nn.Linear(d_model, d_model)
        for proj in (self.query, self.key, self.value):
            nn.init.xavier_uniform_(proj.weight)
            if proj.bias is not None:
                nn.init.zeros_(proj.bias)
        self._register_load_state_dict_pre_hook(self._drop_key_bias)

    @staticmethod
    def _drop_key_bias(state: dict, prefix: str, *args: object) -> None:
        """Checkpoints written with the key bias (always zero-gradient) load without it."""
        state.pop(prefix + "key.bias", None)

    def unit_weights(self, units: Tensor) -> Tensor:
        """(B, S, 4): sum over queries a of softmax(R_q R_k^T / sqrt(d))_ab / 4, per unit b.

        ``(W_q u_a + b_q)(W_k u_b)`` is computed as ``(u_a W_q^T W_k + b_q W_k) u_b``: one d x d
        product per unit replaces two."""
        bilinear = self.query.weight.t() @ self.key.weight
        queries = units @ bilinear + self.query.bias @ self.key.weight
        scores = queries @ units.transpose(-1, -2) / math.sqrt(units.size(-1))
        return scores.softmax(-1).sum(-2) / 4.0

    def forward(self, high: Tensor, middle_incr: Tensor, middle_prev: Tensor, low: Tensor, low_normed: Tensor) -> tuple[Tensor, Tensor]:
        units = torch.stack([high, middle_incr, middle_prev, low], dim=-2)  # (B, S, 4, d)
        weights = self.unit_weights(units)
        mixed = (weights.unsqueeze(-1) * units).sum(-2)
        return self.value(mixed), weights[..., 0]


def build_fusion(options: GraphOptions, d_model: int) -> nn.Module:
    """The fusion module of ``options`` (fusion, and for the weight-gate its reading)."""
    if options.fusion == "self_gate":
        return SelfGate(d_model)
    if options.fusion == "gate":
        return LearnedGate(d_model, options.gate_bias) if options.gate == "learned" else WeightGate()
    return SumFusion()


# --- encoder ------------------------------------------------------------------------------


class GraphEncoderLayer(nn.Module):
    """Three attention parts over (previous, incremental), a fusion, and the FFN sub-layer."""

    def __init__(self, cfg: ModelConfig, options: GraphOptions) -> None:
        super().__init__()
        d = cfg.d_model
        inner = d // 2 if options.half_dim else d

        def attention() -> MultiheadAttention:
            return MultiheadAttention(d, cfg.heads, dropout=cfg.attention_dropout, inner_dim=inner)

        self.subgraphs = options.subgraphs
        self.high = attention()  # q, k, v = incremental (without subgraphs: previous)
        self.norm_prev = nn.LayerNorm(d) if cfg.normalize_before else nn.Identity()
        if self.subgraphs:
            self.middle_incr = attention()  # q = incremental, k/v = previous
            self.middle_prev = attention()  # q = previous, k/v = incremental
            if options.shared_qkv:
                for part in (self.middle_incr, self.middle_prev):
                    part.q_proj, part.kv_proj = self.high.q_proj, self.high.kv_proj
            self.norm_incr = nn.LayerNorm(d) if cfg.normalize_before else nn.Identity()
        self.fusion_norm = nn.Identity() if cfg.normalize_before else nn.LayerNorm(d)
        self.dropout = Dropout(cfg.dropout)
        self.fusion = build_fusion(options, d)
        self.ffn = FeedForward(d, cfg.ffn_dim, cfg.activation, cfg.activation_dropout)
        self.ffn_residual = ResidualNorm(d, cfg.dropout, cfg.normalize_before)

    def forward(self, previous: Tensor, incremental: Tensor, pad_mask: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
        """(B, S, d) previous and incremental -> (full r, incremental r - previous, high-order
        weight (B, S) or None)."""
        p = self.norm_prev(previous)
        if self.subgraphs:
            i = self.norm_incr(incremental)
            high, _ = self.high(i, key_padding_mask=pad_mask)
            middle_incr, _ = self.middle_incr(i, p, key_padding_mask=pad_mask)
            middle_prev, _ = self.middle_prev(p, i, key_padding_mask=pad_mask)
            parts = self.dropout(high), self.dropout(middle_incr), self.dropout(middle_prev)  # in this order (RNG)
        else:  # the control: a Transformer layer's self-attention, fused with the residual p
            high, _ = self.high(p, key_padding_mask=pad_mask)
            parts = self.dropout(high), high.new_zeros(()), high.new_zeros(())
        fused, high_weight = self.fusion(*parts, previous, p)
        full = self.fusion_norm(fused)
        full = self.ffn_residual.merge(full, self.ffn(self.ffn_residual.prepare(full)))
        return full, full - previous, high_weight


class GraphEncoder(TransformerEncoder):
    """Embeddings (previous = incremental = embeddings), graph layers, final norm (pre-norm)."""

    def __init__(self, cfg: ModelConfig, embedding: InputEmbedding, options: GraphOptions) -> None:
        self.options = options
        super().__init__(cfg, embedding)

    def build_layer(self, cfg: ModelConfig, index: int) -> nn.Module:
        return GraphEncoderLayer(cfg, self.options)

    def forward(
        self, src: Tensor, pad_mask: Tensor, positions: Tensor | None = None, high_weights: list | None = None
    ) -> Tensor:
        """Memory (B, S, d); appends each layer's high-order weight (B, S) to ``high_weights``."""
        previous = incremental = self.embedding(src, positions)
        for layer in self.layers:
            previous, incremental, weight = layer(previous, incremental, pad_mask)
            if high_weights is not None:
                high_weights.append(weight)
        return self.final_norm(previous)


@register_model("graph_transformer")
class GraphTransformerModel(TransformerModel):
    """Graph-Transformer encoder + the baseline decoder."""

    options_class = GraphOptions

    @classmethod
    def build_encoder(cls, cfg: ModelConfig, embedding: InputEmbedding) -> nn.Module:
        options = cls.parse_options(cfg.options)
        if options.half_dim and (cfg.d_model % 2 or (cfg.d_model // 2) % cfg.heads):
            raise ConfigError(f"model.options.half_dim: d_model/2 = {cfg.d_model / 2} is not divisible by {cfg.heads} heads")
        if not options.subgraphs and (options.fusion == "self_gate" or options.shared_qkv):
            key = "fusion: self_gate" if options.fusion == "self_gate" else "shared_qkv"
            raise ConfigError(f"model.options.subgraphs: false keeps one attention part; {key} needs the three")
        return GraphEncoder(cfg, embedding, options)

    @torch.no_grad()
    def high_order_weights(self, batch: Batch) -> Tensor:
        """(layers, B): each sentence's high-order weight per encoder layer, averaged over its
        real (non-padding) positions (the paper's Figure 5)."""
        if self.encoder.options.fusion == "sum":
            raise ValueError("the sum fusion has no high-order weight (options.fusion: gate or self_gate)")
        weights: list[Tensor] = []
        self.encoder(batch.src, batch.src_pad_mask, high_weights=weights)
        real = (~batch.src_pad_mask).float()
        return torch.stack([(w * real).sum(1) / real.sum(1) for w in weights])
