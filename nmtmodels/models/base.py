"""The interface shared by every model family (the trainer and beam search rely on it).

A family subclasses :class:`Seq2SeqModel`, registers itself by name
(:func:`register_model`, also importable from :mod:`nmtmodels.registry`) and implements
``encode`` and ``decode``.

State dictionaries
------------------
``encode`` returns a dict of tensors, every one batch-first (dim 0 = batch); it must hold
``"memory_pad_mask"`` (B, S) bool, True at padding.  The incremental-decoding ``cache``
is a dict the decoder fills on its first call and mutates in place on later calls;
every tensor in it is batch-first too, so :func:`reorder_state` can reorder any
family's encoder output and cache for beam search without family-specific code
(non-tensor values, e.g. a step counter, are left as they are).  A cache dict marked
:data:`~nmtmodels.modules.attention.STATIC_CACHE` depends on the source sentence only and is
not reordered when beams move within their sentences.
"""
from __future__ import annotations

from typing import Any, Callable, TypeVar

import torch
from torch import Tensor, nn

from nmtmodels.batch import Batch
from nmtmodels.modules.attention import STATIC_CACHE

State = dict[str, Any]


def reorder_state(state: State, index: Tensor, *, within_sentences: bool = False) -> State:
    """Select rows ``index`` (dim 0) of every tensor in a (nested) state dict, in place.

    ``within_sentences``: ``index`` keeps every sentence's hypotheses in the rows of that
    sentence (beam reordering, no sentence leaves), so dicts marked ``STATIC_CACHE`` stay.
    """
    if within_sentences and state.get(STATIC_CACHE):
        return state
    for key, value in state.items():
        if isinstance(value, Tensor):
            state[key] = value.index_select(0, index.to(value.device))
        elif isinstance(value, dict):
            reorder_state(value, index, within_sentences=within_sentences)
        elif isinstance(value, (tuple, list)) and value and all(isinstance(v, Tensor) for v in value):
            state[key] = type(value)(v.index_select(0, index.to(v.device)) for v in value)
    return state


class Seq2SeqModel(nn.Module):
    """Encoder-decoder base class.

    ``decode(tgt_in, encoder_out, cache=None, need_attention=False, features_only=False)``
    returns ``(logits, attention)``. The logits (B, T, V) are un-normalised; with
    ``features_only`` they are replaced by the decoder's output states (B, T, d), which
    :attr:`output_layer` maps to the logits (the trainer's loss projects them chunk by chunk,
    like fairseq's ``features_only``). The attention (B, T, S) over the source memory (the
    average over heads of the last decoder layer's cross-attention) is returned
    when ``need_attention`` (beam-search coverage penalties, attention plots), else None.
    With ``cache`` given, ``tgt_in`` holds only the new token(s) (B, 1) and the cache
    carries everything earlier steps computed (self-attention keys/values and the
    projected keys/values of every memory, computed once).
    """

    def encode(self, batch: Batch) -> State:  # pragma: no cover - interface
        raise NotImplementedError

    def decode(
        self, tgt_in: Tensor, encoder_out: State, cache: State | None = None, need_attention: bool = False,
        features_only: bool = False,
    ) -> tuple[Tensor, Tensor | None]:  # pragma: no cover - interface
        raise NotImplementedError

    def forward(self, batch: Batch, features_only: bool = False) -> Tensor:
        """Teacher-forced logits (B, T, V) for ``batch.tgt_in`` (the decoder states (B, T, d)
        with ``features_only``)."""
        out, _ = self.decode(batch.tgt_in, self.encode(batch), features_only=features_only)
        return out

    @property
    def output_layer(self) -> nn.Linear:
        """The linear map from the decoder states to the logits."""
        return self.decoder.output_projection

    def attach_vocabularies(self, src_vocab: Any, tgt_vocab: Any) -> None:
        """Hook called by ``nmt-train`` once the vocabularies are known (default: nothing).

        A family that needs vocabulary facts (e.g. char2word: the id of the space symbol)
        records them here in buffers, so they are saved with the weights."""

    def max_positions(self) -> tuple[int, int]:
        """Longest source and target the model accepts (token ids incl. EOS/BOS)."""
        return (1024, 1024)

    @torch.no_grad()
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


# ---------------------------------------------------------------------- registration
# name -> family class; nmtmodels.registry looks families up here.
_FAMILIES: dict[str, type] = {}
ModelClass = TypeVar("ModelClass", bound=type)


def register_model(name: str) -> Callable[[ModelClass], ModelClass]:
    """Class decorator registering a model family under ``name`` (sets ``cls.family_name``)."""

    def register(cls: ModelClass) -> ModelClass:
        if name in _FAMILIES and _FAMILIES[name] is not cls:
            raise ValueError(f"model family {name!r} is already registered by {_FAMILIES[name].__qualname__}")
        for method in ("from_config", "parse_options"):
            if not callable(getattr(cls, method, None)):
                raise TypeError(f"model family {name!r}: {cls.__qualname__} lacks classmethod {method}()")
        cls.family_name = name
        _FAMILIES[name] = cls
        return cls

    return register
