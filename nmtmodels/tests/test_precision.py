"""bf16 autocast on the CPU (nmtmodels.precision, issue 55): which device and ``amp`` setting
computes in bf16, the fallback to fp32 on a CPU without native bf16 (said once), every model
family's bf16 training step on the CPU against fp32, and bf16 decoding against fp32.  The
trainer's bf16 steps: test_train.py; the Translator and nmt-translate: test_translator.py."""
from __future__ import annotations

import contextlib

import pytest
import torch

from nmtmodels import precision
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import translate_dataset
from nmtmodels.tests.copy_task_fixtures import copy_task_corpus, tiny_model
from nmtmodels.tests.family_cases import FAMILIES, family_case
from nmtmodels.training.loss import label_smoothed_nll_loss

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def native_bf16(monkeypatch):
    """This CPU computes bf16 natively (also where it only emulates it: the results are the same,
    only slower); no fallback message given yet in this process."""
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setattr(precision, "_REPORTED", set())


@pytest.fixture
def no_native_bf16(monkeypatch):
    """This CPU lacks native bf16; no fallback message given yet in this process."""
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: False)
    monkeypatch.setattr(precision, "_REPORTED", set())


def test_the_hardware_check_answers_with_a_bool():
    assert isinstance(precision.cpu_has_native_bf16(), bool)


def test_bf16_runs_on_cuda_and_on_a_cpu_with_native_bf16(native_bf16):
    messages: list[str] = []
    assert precision.uses_bf16("bf16", "cpu", messages.append)
    assert precision.uses_bf16("bf16", torch.device("cuda"), messages.append)  # no GPU needed to decide
    assert not precision.uses_bf16("none", "cpu", messages.append)
    assert messages == []
    assert isinstance(precision.bf16_autocast("bf16", "cpu"), torch.autocast)
    assert isinstance(precision.bf16_autocast("none", "cpu"), contextlib.nullcontext)


def test_a_cpu_without_native_bf16_computes_in_fp32_and_says_so_once(no_native_bf16):
    messages: list[str] = []
    assert not precision.uses_bf16("bf16", "cpu", messages.append)
    assert isinstance(precision.bf16_autocast("bf16", "cpu", messages.append), contextlib.nullcontext)
    assert not precision.uses_bf16("bf16", "cpu", messages.append)
    assert messages == [precision.CPU_FALLBACK]
    assert "\n" not in precision.CPU_FALLBACK and "fp32" in precision.CPU_FALLBACK
    assert not precision.uses_bf16("none", "cpu", messages.append) and len(messages) == 1


def test_the_fallback_message_is_a_runtime_warning_without_a_reporter(no_native_bf16):
    with pytest.warns(RuntimeWarning, match="no native bf16"):
        assert not precision.uses_bf16("bf16", "cpu")


def test_gru_families_compute_in_fp32_on_the_cpu_and_say_so_once(monkeypatch):
    """model_amp: a family with ``cpu_bf16 = False`` (char2char, char2word) gets fp32 on the CPU,
    one message per family; on CUDA, and for the other families, ``amp`` stays as asked."""
    monkeypatch.setattr(precision, "_REPORTED", set())
    char, _ = family_case("char2char")
    transformer, _ = family_case("transformer")
    messages: list[str] = []
    assert precision.model_amp("bf16", "cpu", char, messages.append) == "none"
    assert precision.model_amp("bf16", "cpu", char, messages.append) == "none"
    assert len(messages) == 1 and "model family char2char computes in fp32 on the CPU" in messages[0]
    assert precision.model_amp("bf16", "cuda", char, messages.append) == "bf16"
    assert precision.model_amp("bf16", "cpu", transformer, messages.append) == "bf16"
    assert precision.model_amp("none", "cpu", char, messages.append) == "none"
    ensemble = torch.nn.Module()
    ensemble.members = torch.nn.ModuleList([transformer, char])  # one slower member: the ensemble in fp32
    assert precision.model_amp("bf16", "cpu", ensemble, messages.append) == "none" and len(messages) == 1


def _loss_and_grads(model, batch, autocast: bool):
    model.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):  # as the Trainer does
        states = model(batch, features_only=True)
        loss, _ = label_smoothed_nll_loss(states, model.output_layer, batch.tgt_out, 0.1)
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("family", FAMILIES)
def test_bf16_training_step_on_the_cpu_stays_close_to_fp32_with_fp32_gradients(family):
    """test_cuda.py's check on the CPU.  bf16 keeps 8 significant bits (relative rounding 2^-9 =
    0.2% per operation); over a few layers of sums the loss moves well under 2%, while a layer
    computed wrongly (an op left in bf16 without fp32 accumulation, a dtype mixed up) moves it
    far more; the gradient's direction (cosine) must stay within 1% of fp32's."""
    model, batch = family_case(family)  # eval mode: no dropout, so both passes see one function
    loss32, grads32 = _loss_and_grads(model, batch, autocast=False)
    loss16, grads16 = _loss_and_grads(model, batch, autocast=True)
    assert torch.isfinite(loss16) and loss16.dtype == torch.float32
    assert float(loss16) == pytest.approx(float(loss32), rel=2e-2)
    assert float(loss16) != float(loss32)  # bf16 did compute something
    assert grads16.keys() == grads32.keys()
    assert all(g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads16.values())
    assert all(p.dtype == torch.float32 for p in model.parameters())
    flat16, flat32 = (torch.cat([g[name].flatten() for name in sorted(g)]) for g in (grads16, grads32))
    assert torch.nn.functional.cosine_similarity(flat16, flat32, dim=0) > 0.99


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return copy_task_corpus(tmp_path_factory.mktemp("corpus"), 20, 24)


def _tokens(hypotheses) -> list[list[int]]:
    return [row[0].tokens for row in hypotheses]


def _spread_model(vocab_size: int):
    """A random tiny model with its matrices scaled by 3: its logits are no longer near-uniform,
    so its translations differ from sentence to sentence (an unscaled one repeats one token)."""
    model, _ = tiny_model(vocab_size, vocab_size, seed=0, dropout=0.0)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() == 2:
                parameter.mul_(3.0)
    return model


def test_bf16_decoding_on_the_cpu_runs_in_bf16_and_mostly_agrees_with_fp32(corpus, native_bf16):
    """bf16's 8-bit mantissa can flip a close choice of the search (and all that follows it), so
    most sentences, not all, come out as in fp32 (23 of 24 here when written)."""
    vocab, _, valid = corpus
    model = _spread_model(len(vocab))
    logits: list[torch.dtype] = []
    model.output_layer.register_forward_hook(lambda module, args, out: logits.append(out.dtype))
    cfg = DecodeConfig(beam=2, max_len_a=0, max_len_b=8)
    fp32 = translate_dataset(model, valid, cfg, max_tokens=256, device="cpu")
    assert logits and set(logits) == {torch.float32}
    logits.clear()
    bf16 = translate_dataset(model, valid, cfg, max_tokens=256, device="cpu", amp="bf16")
    assert logits and set(logits) == {torch.bfloat16}  # search's log-probabilities and scores stay fp32
    assert len(bf16) == len(fp32) == len(valid) == 24
    assert len({tuple(tokens) for tokens in _tokens(fp32)}) >= 5  # the outputs depend on the input
    assert sum(a == b for a, b in zip(_tokens(bf16), _tokens(fp32))) >= 16
    assert all(isinstance(row[0].score, float) and row[0].score <= 0 for row in bf16)


def test_bf16_decoding_on_a_cpu_without_it_is_fp32_exactly(corpus, no_native_bf16):
    vocab, _, valid = corpus
    model = _spread_model(len(vocab))
    cfg = DecodeConfig(beam=2, max_len_a=0, max_len_b=8)
    fp32 = translate_dataset(model, valid, cfg, max_tokens=256, device="cpu")
    with pytest.warns(RuntimeWarning, match="no native bf16") as caught:
        fallback = translate_dataset(model, valid, cfg, max_tokens=256, device="cpu", amp="bf16")
        again = translate_dataset(model, valid, cfg, max_tokens=256, device="cpu", amp="bf16")
    assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == 1
    assert _tokens(fallback) == _tokens(again) == _tokens(fp32)
    assert [row[0].score for row in fallback] == [row[0].score for row in fp32]


def _kernel_dtypes(monkeypatch, grad: bool) -> list[torch.dtype]:
    """The dtypes that reach torch's attention kernel from a MultiHeadAttention under CPU bf16
    autocast, with gradients (a training step) or without (decoding)."""
    from nmtmodels.modules import attention

    seen: list[torch.dtype] = []
    kernel = torch.nn.functional.scaled_dot_product_attention

    def spy(q, k, v, **kwargs):
        seen.append(q.dtype)
        return kernel(q, k, v, **kwargs)

    monkeypatch.setattr(attention.F, "scaled_dot_product_attention", spy)
    layer = attention.MultiheadAttention(16, 2)
    x = torch.randn(2, 5, 16)
    with torch.set_grad_enabled(grad), torch.autocast("cpu", dtype=torch.bfloat16):
        out, _ = layer(x, causal=True)
    assert out.dtype == torch.bfloat16  # the output projection stays in bf16
    return seen


def test_cpu_bf16_training_attention_runs_in_fp32_and_decoding_in_bf16(monkeypatch):
    """torch 2.13's CPU flash-attention backward is ~4x slower in bf16 than in fp32 (module
    docstring of nmtmodels.modules.attention): with gradients the kernel gets fp32 inputs."""
    assert _kernel_dtypes(monkeypatch, grad=True) == [torch.float32]
    assert _kernel_dtypes(monkeypatch, grad=False) == [torch.bfloat16]


def test_the_loss_under_autocast_projects_in_bf16_and_reduces_in_fp32():
    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 50)
    states = torch.randn(12, 8, requires_grad=True)
    target = torch.randint(1, 50, (12,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss16, nll16 = label_smoothed_nll_loss(states, layer, target, 0.1)
    loss32, _ = label_smoothed_nll_loss(states, layer, target, 0.1)
    # the reference: the same products rounded to bf16 first, log-softmax in fp32
    logits = torch.nn.functional.linear(states.bfloat16(), layer.weight.bfloat16(), layer.bias.bfloat16()).float()
    expected = torch.nn.functional.cross_entropy(logits, target, label_smoothing=0.1, reduction="sum")
    assert loss16.dtype == nll16.dtype == torch.float32
    assert float(loss16) == pytest.approx(float(expected), rel=1e-5)
    assert float(loss16) != float(loss32) and float(loss16) == pytest.approx(float(loss32), rel=1e-2)
    loss16.backward()
    assert layer.weight.grad.dtype == torch.float32 and states.grad.dtype == torch.float32
