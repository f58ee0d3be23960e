"""Relative position representations (Shaw, Uszkoreit and Vaswani 2018), a building block of
self-attention: the key and value terms a^K_{ij}, a^V_{ij} of the distance ``j - i`` clipped to
``[-k, k]`` (their section 3), which :class:`nmtmodels.modules.attention.MultiheadAttention` adds
through :class:`~nmtmodels.modules.attention.RelationTerms` without materialising a
(batch, M, M, d) tensor.  The reordering paper's relative-PE control uses it
(:mod:`nmtmodels.models.reordering`); a family of relative-position Transformers would too.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from nmtmodels.modules.attention import RelationTerms


def relative_position_ids(num_queries: int, num_keys: int, max_distance: int, device: torch.device) -> Tensor:
    """(Tq, Tk) ids ``clip(j - i, -k, k) + k`` where queries are the last ``num_queries`` of
    ``num_keys`` positions (``i = num_keys - num_queries + row``, as in cached decoding)."""
    queries = torch.arange(num_keys - num_queries, num_keys, device=device)
    keys = torch.arange(num_keys, device=device)
    return (keys[None, :] - queries[:, None]).clamp(-max_distance, max_distance) + max_distance


class RelativePositions(nn.Module):
    """Learned a^K, a^V (2k+1, d_head) of one layer's self-attention, shared by heads."""

    def __init__(self, max_distance: int, head_dim: int) -> None:
        super().__init__()
        self.keys = nn.Parameter(torch.empty(2 * max_distance + 1, head_dim))
        self.values = nn.Parameter(torch.empty(2 * max_distance + 1, head_dim))
        for table in (self.keys, self.values):
            nn.init.xavier_uniform_(table)

    def terms(self, ids: Tensor) -> RelationTerms:
        return RelationTerms(ids, self.keys, self.values)


def relation_ids(batch: int, num_queries: int, num_keys: int, max_distance: int, device: torch.device) -> Tensor:
    """:func:`relative_position_ids` broadcast to (B, Tq, Tk) (a view, no copy)."""
    return relative_position_ids(num_queries, num_keys, max_distance, device).expand(batch, -1, -1)
