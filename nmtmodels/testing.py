"""The conformance suite that every model family passes: the behaviour the trainer, the beam
search and the compiled paths rely on, checked on one small model and batch of the family.

* :func:`check_encoder_layout`: every tensor of ``encode``'s state is batch-first (the error
  names the contract, and a time-first memory is said to be one).
* :func:`check_padding`: padding appended to the source changes no logit of the decoder.
* :func:`check_incremental_decoding`: decoding step by step with the cache gives the logits
  and attention of the full (teacher-forced) pass.
* :func:`check_batched_beam_search`: beam search over a batch finds, for each sentence, the
  hypothesis that it finds for that sentence alone, with the same score.
* :func:`check_every_parameter_learns`: one loss reaches every parameter with a finite gradient.
* :func:`check_options`: the default options parse, and an unknown option is a ConfigError
  naming ``model.options.KEY``.
* :func:`check_bucket_padding`: padding a batch to shape buckets (what compiled training does,
  :func:`nmtmodels.data.pad_to_buckets`) changes neither the loss nor any gradient.
* :func:`check_page_names_options`: the family's page names each of its options (the template's
  tests run it on ``NAME.md``).
* :func:`check_declaration`: what the workflow and ``nmt-export`` read of its module's
  ``FAMILY_NEEDS`` without importing it (:mod:`nmtmodels.family_needs`) gives the extra inputs
  the class reads (its ``extra_inputs``, set from the same literal when it registers).

It needs no test framework (plain ``assert``); the class below is collected by pytest.
The built-in families run it in ``nmtmodels/tests/test_conformance.py`` (every registered
family must have a case there, or that test fails).  A family from outside the package runs
the same suite with one class in its own tests::

    from nmtmodels.testing import FamilyConformance

    class TestMyFamily(FamilyConformance):
        family = "my_family"          # options = {...} for other than the default options

The default :meth:`FamilyConformance.case` builds a small model of the family and a random
batch; a family with ``extra_inputs`` overrides it to give them.
"""
from __future__ import annotations

import dataclasses
import inspect
import math
import re
from typing import Any, ClassVar

import torch

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import Batch, pad_to_buckets
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import beam_search
from nmtmodels.family_needs import DECLARATION, FamilyNeeds, read_declaration
from nmtmodels.models.base import Seq2SeqModel, check_encoder_output
from nmtmodels.registry import build_model, get_model_class
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID
from nmtmodels.training.loss import label_smoothed_nll_loss

SMALL = {"d_model": 32, "heads": 4, "encoder_layers": 2, "decoder_layers": 2, "ffn_dim": 64, "dropout": 0.1,
         "attention_dropout": 0.1}
LENGTHS = [6, 3, 5]  # source lengths (</s> included) of the default batch
TOLERANCE = {"atol": 1e-5, "rtol": 1e-5}


def random_batch(src_lengths: list[int], tgt_len: int, vocab: int = 23, seed: int = 0) -> Batch:
    """Random source rows of ``src_lengths`` tokens (``</s>`` last, then padding) and random
    targets of ``tgt_len`` tokens, ids from 4 to ``vocab - 1``."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.full((len(src_lengths), max(src_lengths)), PAD_ID)
    for row, length in enumerate(src_lengths):
        src[row, : length - 1] = torch.randint(4, vocab, (length - 1,), generator=generator)
        src[row, length - 1] = EOS_ID
    tgt = torch.randint(4, vocab, (len(src_lengths), tgt_len), generator=generator)
    rows = len(src_lengths)
    return Batch(src=src, src_lengths=torch.tensor(src_lengths), tgt_in=torch.cat([torch.full((rows, 1), BOS_ID), tgt], 1),
                 tgt_out=torch.cat([tgt, torch.full((rows, 1), EOS_ID)], 1))


@torch.no_grad()
def check_encoder_layout(model: Seq2SeqModel, batch: Batch) -> None:
    """``encode`` returns batch-first tensors with a (B, S) ``memory_pad_mask`` that fits the
    memory (:func:`nmtmodels.models.base.check_encoder_output`, which the base ``encode`` and
    ``forward`` run too): a ValueError naming the tensor and the batch-first contract."""
    model.eval()
    check_encoder_output(model, model.encode(batch), batch.src.size(0))


def check_page_names_options(family: str, page: str) -> None:
    """Every option of the family (a field of its ``options_class``) is named on its page
    (``page``: the page's text), in backquotes as in an options table."""
    options = get_model_class(family).options_class
    missing = [f.name for f in dataclasses.fields(options) if f"`{f.name}`" not in page] if options is not None else []
    assert not missing, f"the page of {family!r} does not name the option(s) {', '.join(missing)}"


@torch.no_grad()
def check_padding(model: Seq2SeqModel, batch: Batch) -> None:
    """Three more padding columns on the source (and on each extra input, with its pad value)
    leave every decoder logit as it was."""
    model.eval()
    padded = pad_to_buckets(batch, batch.src.size(1) + 3, 1, model.extra_inputs)
    padded = dataclasses.replace(padded, tgt_in=batch.tgt_in, tgt_out=batch.tgt_out)
    assert padded.src.size(1) == batch.src.size(1) + 3
    expected = model.decode(batch.tgt_in, model.encode(batch))[0]
    torch.testing.assert_close(model.decode(batch.tgt_in, model.encode(padded))[0], expected, **TOLERANCE)


@torch.no_grad()
def check_incremental_decoding(model: Seq2SeqModel, batch: Batch) -> None:
    """Step-by-step decoding with the cache equals the full pass, logits and attention."""
    model.eval()
    state = model.encode(batch)
    full, full_attention = model.decode(batch.tgt_in, state, need_attention=True)
    cache: dict[str, Any] = {}
    steps, attentions = [], []
    for t in range(batch.tgt_in.size(1)):
        logits, attention = model.decode(batch.tgt_in[:, t : t + 1], state, cache, need_attention=True)
        steps.append(logits)
        attentions.append(attention)
    torch.testing.assert_close(torch.cat(steps, 1), full, **TOLERANCE)
    assert full_attention is not None and all(a is not None for a in attentions), "need_attention gave no attention"
    torch.testing.assert_close(torch.cat(attentions, 1), full_attention, **TOLERANCE)


def alone(batch: Batch, row: int, extra_pads: dict[str, int]) -> Batch:
    """Row ``row`` of ``batch`` as a batch of its own, without the columns that are padding in
    that row (source and every extra input)."""
    one = batch.select(torch.tensor([row]))
    one.src = one.src[:, : int(batch.src_lengths[row])]
    for name, tensor in one.extras.items():
        real = (tensor[0] != extra_pads[name]).nonzero()
        one.extras[name] = tensor[:, : int(real.max()) + 1 if len(real) else 0]
    return one


@torch.no_grad()
def check_batched_beam_search(model: Seq2SeqModel, batch: Batch) -> None:
    """Beam search over the batch finds each sentence's best hypothesis alone, same score."""
    model.eval()
    source = dataclasses.replace(batch, tgt_in=None, tgt_out=None)
    cfg = DecodeConfig(beam=3, max_len_a=0, max_len_b=6)
    together = beam_search(model, source, cfg)
    for row in range(source.size):
        best = beam_search(model, alone(source, row, dict(model.extra_inputs)), cfg)[0][0]
        assert best.tokens == together[row][0].tokens, f"row {row}: {best.tokens} alone, {together[row][0].tokens} in the batch"
        assert math.isclose(best.score, together[row][0].score, abs_tol=1e-4), (row, best.score, together[row][0].score)


def _loss_and_grads(model: Seq2SeqModel, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    states = model(batch, features_only=True)
    loss, nll = label_smoothed_nll_loss(states, model.output_layer, batch.tgt_out, 0.1)
    loss.backward()
    return loss.detach(), nll.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def check_every_parameter_learns(model: Seq2SeqModel, batch: Batch) -> None:
    """One training loss (dropout on) gives every trainable parameter a finite gradient."""
    model.train()
    torch.manual_seed(0)
    _, _, grads = _loss_and_grads(model, batch)
    missing = [name for name, p in model.named_parameters() if p.requires_grad and name not in grads]
    assert not missing, f"parameters without a gradient: {missing}"
    bad = [name for name, grad in grads.items() if not torch.isfinite(grad).all()]
    assert not bad, f"non-finite gradients: {bad}"
    model.zero_grad(set_to_none=True)
    model.eval()


def check_options(family: str) -> None:
    """The family's default options parse; an unknown option is a ConfigError naming it."""
    cls = get_model_class(family)
    cls.parse_options({})
    try:
        cls.parse_options({"no_such_option": 1})
    except ConfigError as exc:
        assert re.match(r"model\.options\.no_such_option\b", str(exc)), f"the error does not name the option: {exc}"
    else:
        raise AssertionError(f"model family {family!r} accepted an unknown option")


def check_declaration(family: str) -> None:
    """The workflow's reading of the family's ``FAMILY_NEEDS`` entry (with :mod:`ast`, from the
    file that defines its class) gives the extra inputs and pad values the class reads: the
    class's ``extra_inputs`` come from the same entry, read from the module object, so they
    differ only when ``FAMILY_NEEDS`` is not a plain literal, comes after the class, or is
    changed after it."""
    cls = get_model_class(family)
    path = inspect.getfile(cls)
    planned = dict((read_declaration(path).get(family) or FamilyNeeds(family)).inputs)
    read = dict(cls.extra_inputs)
    assert planned == read, (f"model family {family!r}: the workflow reads {DECLARATION}[{family!r}]['inputs'] in {path} "
                             f"as {planned or 'none'}, but the class {cls.__qualname__} reads {read or 'none'} "
                             f"(its extra_inputs): define {DECLARATION} as a literal above the class")


def check_bucket_padding(model: Seq2SeqModel, batch: Batch) -> None:
    """Padding to shape buckets (lengths to multiples of 8, rows to multiples of 4) changes
    no loss and no gradient (eval mode: both passes see one function)."""
    model.eval()
    padded = pad_to_buckets(batch, 8, 4, model.extra_inputs)
    assert padded.src.size(1) > batch.src.size(1) and padded.size > batch.size, "the case's batch is already bucketed"
    loss, nll, grads = _loss_and_grads(model, batch)
    padded_loss, padded_nll, padded_grads = _loss_and_grads(model, padded)
    torch.testing.assert_close(padded_loss, loss, **TOLERANCE)
    torch.testing.assert_close(padded_nll, nll, **TOLERANCE)
    assert padded_grads.keys() == grads.keys()
    for name in grads:
        torch.testing.assert_close(padded_grads[name], grads[name], rtol=1e-4, atol=1e-6, msg=name)
    model.zero_grad(set_to_none=True)


MODEL_CHECKS = (check_encoder_layout, check_padding, check_incremental_decoding, check_batched_beam_search,
                check_every_parameter_learns, check_bucket_padding)


class FamilyConformance:
    """The conformance suite as a pytest class: subclass it as ``TestNAME`` with ``family``
    (and ``options``), and override :meth:`case` for a family with extra inputs."""

    family: ClassVar[str]
    options: ClassVar[dict[str, Any]] = {}

    def case(self) -> tuple[Seq2SeqModel, Batch]:
        """(a small model of the family in eval mode, a batch of three sentences)."""
        torch.manual_seed(0)
        model = build_model(ModelConfig.from_dict({**SMALL, "family": self.family, "options": dict(self.options)}), 23, 27)
        if model.extra_inputs:
            raise AssertionError(f"model family {self.family!r} reads the extra inputs {', '.join(sorted(model.extra_inputs))}: "
                                 f"override case() to give the batch them")
        return model.eval(), random_batch(LENGTHS, 4)

    def test_encoder_layout(self) -> None:
        check_encoder_layout(*self.case())

    def test_padding(self) -> None:
        check_padding(*self.case())

    def test_incremental_decoding(self) -> None:
        check_incremental_decoding(*self.case())

    def test_batched_beam_search(self) -> None:
        check_batched_beam_search(*self.case())

    def test_every_parameter_learns(self) -> None:
        check_every_parameter_learns(*self.case())

    def test_bucket_padding(self) -> None:
        check_bucket_padding(*self.case())

    def test_options(self) -> None:
        check_options(self.family)

    def test_declaration(self) -> None:
        check_declaration(self.family)
