"""Model-side lattice helpers (Xiao et al. 2019, "Lattice-Based Transformer Encoder"):
edge spans of a batch, lattice positions (LPE) and edge relations (LSA, Table 1).

Node v_i is the gap after element i; edge e_{i:j} (i < j) covers elements c_{i+1}..c_j and
is given by ``start = i`` and ``end = j``.  The elements are the lattice's *position unit*
(footnote 1): characters for a word lattice, minimum subword units for a subword lattice;
the unit is chosen when the inputs are written (``workflow_scripts/lattice.py``,
``--position-unit``), so the model reads the numbers as they come.  A batch carries the
edges of each sentence as the extra integer inputs ``starts`` and ``ends`` (B, M), one entry
per edge token; the source row has one more token, ``</s>``, which is treated as the edge
e_{N:N+1} after the last element (so it succeeds every edge and is right-adjacent to those
ending at v_N).

Pure tensor functions, batched and on the tensors' device; no workflow imports.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

# Relation r(e_{i:j}, e_{p:q}) of a query edge e_{i:j} to a key edge e_{p:q} (Table 1, plus
# "self" for an edge with itself).  Every pair of edges has exactly one of them.
RELATIONS = ("self", "left_adjacent", "right_adjacent", "includes", "included", "intersects", "preceding", "succeeding")
SELF, LEFT_ADJACENT, RIGHT_ADJACENT, INCLUDES, INCLUDED, INTERSECTS, PRECEDING, SUCCEEDING = range(len(RELATIONS))
NUM_RELATIONS = len(RELATIONS)
SPAN_PAD = -1  # pad value of the ``starts`` / ``ends`` extra inputs


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
