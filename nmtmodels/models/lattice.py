"""Lattice-based Transformer encoder (Xiao et al. 2019, "Lattice-Based Transformer Encoder for
Neural Machine Translation"), registered as ``"lattice_transformer"``.

The source is a word or subword lattice (several segmentations of one character sequence,
identical edges merged; see :mod:`nmtmodels.text.lattice`).
All its edges form the input token sequence t_1..t_M, ordered by (start, end); the extra
integer inputs ``starts``/``ends`` give every edge's span e_{i:j}.

* Lattice positional encoding (LPE, section 3.2): edge e_{i:j} gets the sinusoidal encoding
  of its first element c_{i+1} instead of its index, so positions increase along every path.
  The elements are those of footnote 1: characters in a word lattice, minimum subword units
  in a subword lattice ("th@@ e / the / hous@@ e / house" has positions 0 0 1 2 2 3, not
  the character offsets 0 0 2 3 3 7).  ``starts``/``ends`` arrive already counted in that
  unit (:func:`nmtmodels.text.lattice.renumber_nodes`, ``--position-unit subword|char``; the workflow
  picks the footnote's unit per lattice), so the model needs no option for it.
* Lattice-aware self-attention (LSA, eq. 4-5, after Shaw et al. 2018): every encoder
  self-attention adds relation embeddings a^K_r, a^V_r (r = the Table 1 relation of the
  query edge to the key edge, plus "self") to keys and values.  Eight (d_head)-vectors per
  table, one pair of tables per layer, shared by the layer's heads.  The relation ids are
  computed once per batch on the device; the shared attention applies them without a
  (B, M, M, d) tensor (``q a^K`` gathered by relation, attention weights summed per relation
  before multiplying by ``a^V``).

The decoder is the baseline's.  ``model.options`` (:class:`LatticeOptions`) select the
variants of the paper's tables:

* ``positions: lattice`` (LPE), ``sequence`` (the normal PE 0..M-1 over the edge sequence,
  Table 4's "PE") or ``none`` (no positional encoding: our reading of the paper's "+LSA"
  row, since its Table 4 "PE + LSA" is a different, better system than "+LSA");
* ``lsa: true|false``.

Choices where the paper is vague:

* ``</s>`` closing the source is the edge e_{N:N+1} (position N with LPE; it succeeds every
  edge and is right-adjacent to the edges ending at v_N);
* positions count from 0 as the shared embedding does: c_{i+1} is position i (the paper's
  p_{i+1} counts from 1), so the first edge of every path has position 0 like a first token;
* a^K and a^V start at zero, so training starts from the plain encoder.

Edge spans (the helpers below: relations, spans, positions): node v_i is the gap after
element i; edge e_{i:j} (i < j) covers elements c_{i+1}..c_j and is given by ``start = i``
and ``end = j``.  The elements are the lattice's *position unit*
(footnote 1): characters for a word lattice, minimum subword units for a subword lattice;
the unit is chosen when the inputs are written (:mod:`nmtmodels.text.lattice`,
``--position-unit``), so the model reads the numbers as they come.  A batch carries the
edges of each sentence as the extra integer inputs ``starts`` and ``ends`` (B, M), one entry
per edge token; the source row has one more token, ``</s>``, which is treated as the edge
e_{N:N+1} after the last element (so it succeeds every edge and is right-adjacent to those
ending at v_N).

The helpers are pure tensor functions, batched and on the tensors' device.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import Batch
from nmtmodels.models.base import State, register_model
from nmtmodels.models.transformer import TransformerEncoder, TransformerModel
from nmtmodels.modules.attention import RelationTerms
from nmtmodels.modules.embedding import InputEmbedding

# What the workflow and nmt-export read of this family without importing it, and where its class's
# extra_inputs come from (nmtmodels/family_needs.py): the span inputs and their pad value (SPAN_PAD).
FAMILY_NEEDS = {
    "lattice_transformer": {
        "inputs": {"starts": -1, "ends": -1},
        "not_exported": "its encoder reads lattice spans (extra inputs starts, ends) for lattice positions and "
                        "relation-aware self-attention; a CTranslate2 encoder reads one token sequence with positions "
                        "0, 1, 2, ...",
    },
}

# ---------------------------------------------------------------------- edge spans and relations
# Relation r(e_{i:j}, e_{p:q}) of a query edge e_{i:j} to a key edge e_{p:q} (Table 1, plus
# "self" for an edge with itself).  Every pair of edges has exactly one of them.
RELATIONS = ("self", "left_adjacent", "right_adjacent", "includes", "included", "intersects", "preceding", "succeeding")
SELF, LEFT_ADJACENT, RIGHT_ADJACENT, INCLUDES, INCLUDED, INTERSECTS, PRECEDING, SUCCEEDING = range(len(RELATIONS))
NUM_RELATIONS = len(RELATIONS)
SPAN_PAD = FAMILY_NEEDS["lattice_transformer"]["inputs"]["starts"]  # -1: pad value of the span inputs (declared above)


def relation_ids(starts: Tensor, ends: Tensor) -> Tensor:
    """Relation ids (B, M, M) of query edge m to key edge n, from spans ``starts``/``ends`` (B, M).

    With query e_{i:j} and key e_{p:q} (Table 1): self i=p, j=q; lad j=p; rad q=i;
    inc i<=p<q<=j; ind p<=i<j<=q (not both equal); its i<p<j<q or p<i<q<j; pre j<p; suc q<i.
    """
    i, j = starts.unsqueeze(2), ends.unsqueeze(2)
    p, q = starts.unsqueeze(1), ends.unsqueeze(1)
    ids = torch.full(torch.broadcast_shapes(i.shape, p.shape), INTERSECTS, dtype=torch.long, device=starts.device)
    ids = ids.masked_fill((i <= p) & (q <= j), INCLUDES)
    ids = ids.masked_fill((p <= i) & (j <= q), INCLUDED)
    ids = ids.masked_fill((i == p) & (j == q), SELF)
    ids = ids.masked_fill(j < p, PRECEDING)
    ids = ids.masked_fill(q < i, SUCCEEDING)
    ids = ids.masked_fill(j == p, LEFT_ADJACENT)
    return ids.masked_fill(q == i, RIGHT_ADJACENT)


def spans_with_eos(starts: Tensor, ends: Tensor, pad_mask: Tensor) -> tuple[Tensor, Tensor]:
    """Spans (B, S) of every source position: the edges' ``starts``/``ends`` (B, S-1, padded
    with :data:`SPAN_PAD`), then ``</s>`` as e_{N:N+1} (N = the sentence's last node),
    padding as 0:0.  ``pad_mask`` (B, S) is True at padding."""
    width = pad_mask.size(1)
    if starts.shape != ends.shape or starts.size(1) != width - 1:
        raise ValueError(
            f"lattice spans of shape {tuple(starts.shape)}/{tuple(ends.shape)} do not fit a source of "
            f"{width} positions (one span per edge token, none for </s>; was the source truncated?)"
        )
    last_node = ends.max(dim=1, keepdim=True).values.clamp(min=0)  # 0 for an empty lattice
    eos = (~pad_mask).sum(dim=1, keepdim=True) - 1
    starts = F.pad(starts, (0, 1), value=0).scatter(1, eos, last_node).masked_fill(pad_mask, 0)
    ends = F.pad(ends, (0, 1), value=0).scatter(1, eos, last_node + 1).masked_fill(pad_mask, 0)
    return starts, ends


def lattice_positions(starts: Tensor) -> Tensor:
    """LPE positions (section 3.2): edge e_{i:j} gets the position of its first element c_{i+1}.

    The elements are the unit ``starts`` count in: characters (word lattice) or minimum
    subword units (subword lattice; footnote 1, see the module docstring).  The paper's
    p_{i+1} counts elements from 1; the shared position encodings count from 0 (the first
    token is position 0), so c_{i+1} is position ``i`` = ``start``.  Along any path
    e_{0:a}, e_{a:b}, ... the positions 0 < a < b < ... strictly increase.
    """
    return starts


# ---------------------------------------------------------------------- the model
@dataclass
class LatticeOptions:
    """``model.options`` of ``lattice_transformer`` (default: LPE + LSA)."""

    positions: Literal["lattice", "sequence", "none"] = "lattice"  # LPE | normal PE over edges | none
    lsa: bool = True  # lattice-aware self-attention


class LatticeEncoder(TransformerEncoder):
    """Transformer encoder over lattice edges with LPE and/or LSA."""

    def __init__(self, cfg: ModelConfig, embedding: InputEmbedding, options: LatticeOptions) -> None:
        super().__init__(cfg, embedding)
        self.positions = options.positions
        head_dim = cfg.d_model // cfg.heads
        shape = (cfg.encoder_layers, NUM_RELATIONS, head_dim)
        self.relation_keys = nn.Parameter(torch.zeros(shape)) if options.lsa else None  # a^K per layer
        self.relation_values = nn.Parameter(torch.zeros(shape)) if options.lsa else None  # a^V per layer

    def embed(self, src: Tensor, starts: Tensor) -> Tensor:
        if self.positions == "lattice":
            return self.embedding(src, lattice_positions(starts))
        if self.positions == "sequence":
            return self.embedding(src)
        return self.embedding.dropout(self.embedding.tokens(src))

    def forward(self, src: Tensor, pad_mask: Tensor, starts: Tensor, ends: Tensor) -> Tensor:  # type: ignore[override]
        """``src`` (B, S) edge ids + ``</s>``; ``starts``/``ends`` (B, S) spans -> memory (B, S, d)."""
        x = self.embed(src, starts)
        ids = relation_ids(starts, ends) if self.relation_keys is not None else None
        for index, layer in enumerate(self.layers):
            relations = None
            if ids is not None:
                relations = RelationTerms(ids, self.relation_keys[index], self.relation_values[index])
            x = layer(x, pad_mask, relations)
        return self.final_norm(x)


@register_model("lattice_transformer")
class LatticeTransformer(TransformerModel):
    """Lattice encoder (LPE/LSA) + the baseline Transformer decoder."""

    options_class = LatticeOptions

    @classmethod
    def build_encoder(cls, cfg: ModelConfig, embedding: InputEmbedding) -> nn.Module:
        return LatticeEncoder(cfg, embedding, cls.parse_options(cfg.options))

    def encode(self, batch: Batch) -> State:
        missing = [name for name in self.extra_inputs if name not in batch.extras]
        if missing:
            raise ConfigError(f"model family {self.family_name!r} needs the extra inputs {', '.join(missing)} (edge spans)")
        pad_mask = batch.src_pad_mask
        starts, ends = spans_with_eos(batch.extras["starts"], batch.extras["ends"], pad_mask)
        return {"memory": self.encoder(batch.src, pad_mask, starts, ends), "memory_pad_mask": pad_mask}
