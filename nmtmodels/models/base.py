"""The interface shared by every model family (the trainer and beam search rely on it).

A family subclasses :class:`Seq2SeqModel`, registers itself by name
(:func:`register_model`, also importable from :mod:`nmtmodels.registry`) and implements
``from_config`` and, where the defaults do not fit, ``encode`` and ``decode``.

The family contract
-------------------
Every family declares, on its class (:class:`Seq2SeqModel` holds the defaults):

``extra_inputs``
    ``{name: pad value}`` of the inputs it reads besides the source tokens (lattice ``starts``
    and ``ends``, ESC's ``compressed``); empty for most.  Data sets read one line per sentence
    for each, batches carry them in ``batch.extras[name]``, padding uses the pad value.  It is
    not written on the class: :func:`register_model` sets it from the ``inputs`` of the
    family's entry in its module's ``FAMILY_NEEDS`` (:mod:`nmtmodels.family_needs`), the one
    literal that the torch-free workflow reads too.
``cpu_bf16``
    False where the family's steps are slower under bf16 autocast on a CPU than in fp32 (the
    GRU families): ``train.amp: bf16`` and ``amp="bf16"`` decoding then compute it in fp32 on
    the CPU and say so once (:func:`nmtmodels.precision.model_amp`); True by default.
``options_class``
    the dataclass of its ``model.options`` (None: the family takes no options).  Its fields
    are read by :func:`nmtmodels.config.from_dict`: an enum is a ``typing.Literal``, and an
    optional ``validate(self, where)`` method checks what types cannot (ranges, combinations),
    raising :class:`~nmtmodels.config.ConfigError` naming ``where.FIELD``.
``parse_options(options, where)``
    ``model.options`` as an ``options_class`` instance (the default reads it with
    ``from_dict``; a family with presets of options overrides it).
``from_config(cfg, src_vocab_size, tgt_vocab_size)``
    builds the model.  Transformer-based families
    (:class:`nmtmodels.models.transformer.TransformerModel`) inherit one that calls the
    hooks ``build_embeddings``, ``build_encoder(cfg, embedding)`` and
    ``build_decoder(cfg, embedding, vocab_size)``; a family overrides only the hook whose part
    it changes.

State dictionaries
------------------
``encode`` returns a dict of tensors, every one batch-first (dim 0 = batch); it must hold
``"memory_pad_mask"`` (B, S) bool, True at padding.  The incremental-decoding ``cache``
is a dict the decoder fills on its first call and mutates in place on later calls;
every tensor in it is batch-first too, so :func:`nmtmodels.decoding.search.reorder_state` can reorder any
family's encoder output and cache for beam search without family-specific code
(non-tensor values, e.g. a step counter, are left as they are).  A cache dict marked
:data:`~nmtmodels.modules.attention.STATIC_CACHE` depends on the source sentence only and is
not reordered when beams move within their sentences, and beam search keeps it once per
sentence for all the sentence's hypotheses (:func:`~nmtmodels.decoding.search.reorder_state`).
"""
from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import torch
from torch import Tensor, nn

from nmtmodels.config import ConfigError, ModelConfig, from_dict
from nmtmodels.data import Batch
from nmtmodels.family_needs import DECLARATION, family_inputs

State = dict[str, Any]


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

    The defaults below fit a family with an ``encoder`` module mapping (source ids, padding
    mask) to the memory, a ``decoder`` module taking ``(tgt_in, memory, memory_pad_mask,
    cache, need_attention, features_only)``, and its :class:`~nmtmodels.config.ModelConfig`
    in ``cfg``; a family with other inputs overrides them.  The class attributes and
    classmethods below are the family contract (module docstring).
    """

    extra_inputs: ClassVar[Mapping[str, int]] = {}
    cpu_bf16: ClassVar[bool] = True
    options_class: ClassVar[type | None] = None
    family_name: ClassVar[str]  # set by register_model

    @classmethod
    def parse_options(cls, options: dict[str, Any], where: str = "model.options") -> Any:
        """``options`` as an ``options_class`` instance (None for a family without options)."""
        if cls.options_class is None:
            if options:
                raise ConfigError(f"{where}.{next(iter(options))}: family {cls.family_name!r} takes no options")
            return None
        return from_dict(cls.options_class, options, where)

    @classmethod
    def from_config(cls, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> Seq2SeqModel:
        """The model of ``cfg`` for vocabularies of these sizes (every family implements it)."""
        raise NotImplementedError(f"{cls.__qualname__}.from_config")

    def encode(self, batch: Batch) -> State:
        """``{"memory": encoder(src, pad_mask), "memory_pad_mask": pad_mask}``, checked batch-first
        (:func:`check_encoder_output`)."""
        pad_mask = batch.src_pad_mask
        return check_encoder_output(self, {"memory": self.encoder(batch.src, pad_mask), "memory_pad_mask": pad_mask},
                                    batch.src.size(0))

    def decode(
        self, tgt_in: Tensor, encoder_out: State, cache: State | None = None, need_attention: bool = False,
        features_only: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """The decoder over ``encoder_out``'s memory; the attention (B, T, S) is computed only
        if ``need_attention``."""
        return self.decoder(tgt_in, encoder_out["memory"], encoder_out["memory_pad_mask"], cache, need_attention,
                            features_only)

    def forward(self, batch: Batch, features_only: bool = False) -> Tensor:
        """Teacher-forced logits (B, T, V) for ``batch.tgt_in`` (the decoder states (B, T, d)
        with ``features_only``)."""
        out, _ = self.decode(batch.tgt_in, check_encoder_output(self, self.encode(batch), batch.src.size(0)),
                             features_only=features_only)
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
        """Longest source and target the model accepts (token ids incl. EOS/BOS): the config's
        ``max_source_positions`` and ``max_target_positions``."""
        return (self.cfg.max_source_positions, self.cfg.max_target_positions)

    @torch.no_grad()
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


BATCH_FIRST = ("every tensor of encode()'s state is batch-first (dim 0 = batch): memory (B, S, d) and "
               "memory_pad_mask (B, S), True at padding (the family contract, nmtmodels/models/base.py)")


def check_encoder_output(model: nn.Module, state: State, batch_size: int) -> State:
    """``state`` (what ``encode`` returned for ``batch_size`` sentences) when it keeps the
    batch-first contract (module docstring); else a ValueError in one line naming the family,
    the tensor, its shape and the contract, instead of a shape error deep in the attention
    (a time-first (S, B, d) memory from a recurrent or fairseq-style encoder).  Shapes only:
    no computation, no device synchronisation."""
    family = getattr(model, "family_name", type(model).__qualname__)
    mask = state.get("memory_pad_mask")
    if not isinstance(mask, Tensor) or mask.dim() != 2 or mask.size(0) != batch_size:
        got = tuple(mask.shape) if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(f"model family {family!r}: encode() gave memory_pad_mask {got} for {batch_size} sentences; "
                         + BATCH_FIRST)
    for key, value in state.items():
        if not isinstance(value, Tensor) or value.dim() == 0:
            continue
        time_first = key == "memory" and value.dim() == 3 and value.shape[:2] != mask.shape
        if value.size(0) != batch_size or time_first:
            hint = (f" (it looks time-first: (S, B, d) = {tuple(value.shape)}; transpose it with .transpose(0, 1))"
                    if value.dim() >= 2 and value.size(1) == batch_size and value.size(0) != batch_size else "")
            raise ValueError(f"model family {family!r}: encode() gave {key} of shape {tuple(value.shape)} for "
                             f"{batch_size} sentences of {mask.size(1)} source positions{hint}; " + BATCH_FIRST)
    return state


# ---------------------------------------------------------------------- registration
# name -> family class; nmtmodels.registry looks families up here.
_FAMILIES: dict[str, type] = {}
ModelClass = TypeVar("ModelClass", bound=type)


def register_model(name: str) -> Callable[[ModelClass], ModelClass]:
    """Class decorator registering a model family under ``name``: sets ``cls.family_name``, and
    ``cls.extra_inputs`` from ``FAMILY_NEEDS[name]["inputs"]`` of the class's module (defined
    above the class; none declared: no extra inputs)."""

    def register(cls: ModelClass) -> ModelClass:
        taken = _FAMILIES.get(name)
        if taken is cls:
            return cls
        if taken is not None and _defined_at(taken) != _defined_at(cls):
            raise ValueError(f"model family {name!r} is already registered by {taken.__qualname__} "
                             f"({_defined_at(taken)[1]}); a different class ({cls.__qualname__}, {_defined_at(cls)[1]}) "
                             "cannot take its name")
        if not (isinstance(cls, type) and issubclass(cls, Seq2SeqModel)):
            raise TypeError(f"model family {name!r}: {getattr(cls, '__qualname__', cls)!r} is not a Seq2SeqModel")
        if cls.from_config.__func__ is Seq2SeqModel.from_config.__func__:  # type: ignore[attr-defined]
            raise TypeError(f"model family {name!r}: {cls.__qualname__} lacks classmethod from_config()")
        if "extra_inputs" in vars(cls):
            raise TypeError(f"model family {name!r}: {cls.__qualname__} sets extra_inputs; declare them as "
                            f"{DECLARATION}[{name!r}]['inputs'] = {{name: pad value}} in its module, which the class's "
                            "extra_inputs is set from (nmtmodels/family_needs.py)")
        cls.extra_inputs = family_inputs(sys.modules.get(cls.__module__), name)
        cls.family_name = name
        if taken is None:  # else the same class, its module imported twice: the first one stays registered
            _FAMILIES[name] = cls
        return cls

    return register


def _defined_at(cls: type) -> tuple[str, str]:
    """(qualified name, resolved source file) of a class: what makes two class objects the same
    family when one module was imported twice under two names (an installed entry point and
    ``user_modules``, or a copy of the project's metadata in the working directory)."""
    try:
        source = os.path.realpath(inspect.getfile(cls))
    except (TypeError, OSError):  # a class made at run time (no file): only itself is itself
        source = f"<{cls.__module__} at {id(cls):#x}>"
    return cls.__qualname__, source
