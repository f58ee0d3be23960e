"""Ensembles: several checkpoints decoded as one model.

:class:`Ensemble` has the interface the search uses (``encode``, ``decode``,
``max_positions``), so greedy and beam search run over it unchanged: each member encodes the
batch and keeps its own decoder cache, and the next-token log-probabilities of a step are the
mean of the members' log-probabilities (what issue 23 asks for), which the search normalises
again with its log-softmax.  The attention, when asked for, is the members' mean.

Members must share the source and target vocabularies (checked by their fingerprints) and
take the same extra inputs; any family can be a member, since the search only calls the
three methods above.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from nmtmodels.checkpoint import CheckpointError
from nmtmodels.data import Batch
from nmtmodels.models.base import Seq2SeqModel


class Ensemble(torch.nn.Module):
    """Several models with one vocabulary pair, decoded as one (module docstring)."""

    def __init__(self, models: Sequence[Seq2SeqModel]):
        super().__init__()
        if len(models) < 2:
            raise ValueError(f"an ensemble needs at least 2 models, got {len(models)}")
        self.members = torch.nn.ModuleList(models)

    @property
    def extra_inputs(self) -> dict[str, int]:
        """The members' extra inputs (equal for all: :func:`check_members`)."""
        return dict(self.members[0].extra_inputs)

    def max_positions(self) -> tuple[int, int]:
        limits = [member.max_positions() for member in self.members]
        return min(src for src, _ in limits), min(tgt for _, tgt in limits)

    def encode(self, batch: Batch) -> dict[str, Any]:
        members = {str(i): member.encode(batch) for i, member in enumerate(self.members)}
        return {"members": members, "memory_pad_mask": members["0"]["memory_pad_mask"]}

    def decode(self, tgt_in: Tensor, encoder_out: dict[str, Any], cache: dict[str, Any] | None = None,
               need_attention: bool = False) -> tuple[Tensor, Tensor | None]:
        """The mean of the members' log-probabilities (B, T, V), and of their attention if asked for."""
        lprobs, attentions = [], []
        for i, member in enumerate(self.members):
            member_cache = None if cache is None else cache.setdefault(str(i), {})
            logits, attention = member.decode(tgt_in, encoder_out["members"][str(i)], member_cache, need_attention)
            lprobs.append(torch.log_softmax(logits, dim=-1, dtype=torch.promote_types(logits.dtype, torch.float32)))
            attentions.append(attention)
        mean = torch.stack(lprobs).mean(0)
        if not need_attention:
            return mean, None
        return mean, torch.stack([attention.to(mean.dtype) for attention in attentions]).mean(0)


def check_members(states: Sequence[dict[str, Any]], models: Sequence[Seq2SeqModel], paths: Sequence[str]) -> None:
    """CheckpointError naming the first checkpoint that cannot join the first one's ensemble."""
    first = states[0]["vocab"]
    wanted = set(models[0].extra_inputs)
    first_family = _family(states[0])
    for state, model, path in zip(states[1:], models[1:], paths[1:]):
        extras = set(model.extra_inputs)
        if extras != wanted:
            raise CheckpointError(f"{path}: model family {_family(state)!r} reads {_inputs(extras)} but {paths[0]}'s family "
                                  f"{first_family!r} reads {_inputs(wanted)}; an ensemble's members must read the same inputs")
        for side in ("src", "tgt"):
            if state["vocab"][f"{side}_fingerprint"] != first[f"{side}_fingerprint"]:
                raise CheckpointError(f"{path}: its {side} vocabulary (model family {_family(state)!r}) differs from that of "
                                      f"{paths[0]} (model family {first_family!r}); an ensemble's members must share both "
                                      "vocabularies")


def _family(state: dict[str, Any]) -> str:
    return (state.get("model_config") or {}).get("family", "?")


def _inputs(extras: set[str]) -> str:
    return "the source and the extra inputs " + ", ".join(sorted(extras)) if extras else "the source alone"
