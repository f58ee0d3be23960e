"""The same computations on a CUDA device as on the CPU (skipped where no GPU is visible).

Every model family: fp32 logits on the GPU equal the CPU's; a bf16-autocast training step
(forward, the chunked label-smoothed loss, backward) stays close to fp32 and leaves fp32
gradients; beam search on the GPU finds the CPU's hypotheses.  The trainer: bf16 training on
the GPU learns, its checkpoints load on a CPU, and a resumed fp32 run ends where an
uninterrupted one does.  ``torch.compile`` (Inductor, with and without CUDA graphs) on
bucketed batches gives the eager loss and gradients, in the trainer too, and the compiled
decoder step finds the eager hypotheses.  (Multi-GPU DDP needs two GPUs; the gloo tests in
test_distributed.py cover the same trainer code on the CPU.)

Run on a GPU machine with ``python -m pytest nmtmodels/tests/test_cuda.py -n 0``; the last
run is recorded in benchmarks/README.md ("On a GPU").
"""
from __future__ import annotations

import copy
import csv

import pytest
import torch
import torch._dynamo

from nmtmodels.checkpoint import load_checkpoint
from nmtmodels.compiling import begin_step, compile_module
from nmtmodels.data import pad_to_buckets
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import beam_search, translate_dataset
from nmtmodels.tests.copy_task_fixtures import (
    copy_task_corpus,
    tiny_model,
    train_config,
)
from nmtmodels.tests.family_cases import FAMILIES, family_case
from nmtmodels.training.loss import label_smoothed_nll_loss
from nmtmodels.training.trainer import Trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CUDA = torch.device("cuda")


@pytest.mark.parametrize("family", FAMILIES)
@torch.no_grad()
def test_fp32_logits_on_cuda_equal_the_cpu(family):
    model, batch = family_case(family)
    on_gpu = copy.deepcopy(model).to(CUDA)
    torch.testing.assert_close(on_gpu(batch.to(CUDA)).cpu(), model(batch), atol=1e-4, rtol=1e-4)


def _loss_and_grads(model, batch, autocast: bool):
    model.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        states = model(batch, features_only=True)
    loss, _ = label_smoothed_nll_loss(states, model.output_layer, batch.tgt_out, 0.1)
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("family", FAMILIES)
def test_bf16_training_step_stays_close_to_fp32_with_fp32_gradients(family):
    model, batch = family_case(family)
    model, batch = model.to(CUDA), batch.to(CUDA)  # eval mode: no dropout, so both passes see one function
    if family in ("char2char", "char2word"):
        model.train()  # cuDNN's RNN backward needs training mode; these test models have dropout 0
    loss32, grads32 = _loss_and_grads(model, batch, autocast=False)
    loss16, grads16 = _loss_and_grads(model, batch, autocast=True)
    assert torch.isfinite(loss16)
    assert float(loss16) == pytest.approx(float(loss32), rel=2e-2)
    assert grads16.keys() == grads32.keys()
    assert all(g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads16.values())
    flat16, flat32 = (torch.cat([g[name].flatten() for name in sorted(g)]) for g in (grads16, grads32))
    assert torch.nn.functional.cosine_similarity(flat16, flat32, dim=0) > 0.99


@pytest.mark.parametrize("family", FAMILIES)
def test_beam_search_on_cuda_finds_the_cpu_hypotheses(family):
    model, batch = family_case(family)
    batch.tgt_in = batch.tgt_out = None
    cfg = DecodeConfig(beam=3, max_len_a=0, max_len_b=6)
    on_cpu = beam_search(model, batch, cfg)
    on_gpu = beam_search(copy.deepcopy(model).to(CUDA), batch.to(CUDA), cfg)
    assert [[h.tokens for h in row] for row in on_gpu] == [[h.tokens for h in row] for row in on_cpu]
    for gpu_row, cpu_row in zip(on_gpu, on_cpu):
        assert [h.score for h in gpu_row] == pytest.approx([h.score for h in cpu_row], abs=1e-4)


def test_translation_on_cuda_switches_off_the_per_shape_cudnn_attention(corpus):
    vocab, _, valid = corpus
    model, _ = tiny_model(len(vocab), len(vocab), seed=0, dropout=0.0)
    torch.backends.cuda.enable_cudnn_sdp(True)
    translate_dataset(model.to(CUDA), valid, DecodeConfig(beam=2), max_tokens=256, device=CUDA, amp="bf16")
    assert not torch.backends.cuda.cudnn_sdp_enabled()


# ----------------------------------------------------------------------------- trainer
@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return copy_task_corpus(tmp_path_factory.mktemp("corpus"), 560, 40)


def _trainer(corpus, out_dir, **settings) -> Trainer:
    vocab, train, valid = corpus
    model, model_cfg = tiny_model(len(vocab), len(vocab), seed=0, dropout=0.0)
    return Trainer(model, train_config(**settings), train, valid, out_dir, model_config=model_cfg.to_dict(),
                   src_vocab=vocab, tgt_vocab=vocab, device=CUDA, log=lambda msg: None)


def _losses(out_dir) -> list[float]:
    with open(out_dir / "metrics.csv", newline="") as rows:
        return [float(row["loss"]) for row in csv.DictReader(rows) if row["loss"]]


def test_bf16_training_on_cuda_learns_and_its_checkpoint_loads_on_a_cpu(corpus, tmp_path):
    trainer = _trainer(corpus, tmp_path, max_tokens=256, max_updates=150, lr=3e-3, warmup_updates=10, amp="bf16",
                       log_interval=10)
    assert trainer.train().update == 150
    assert all(p.device.type == CUDA.type and p.dtype == torch.float32 for p in trainer.model.parameters())
    losses = _losses(tmp_path)
    assert losses[-1] < 0.6 * losses[0]
    state = load_checkpoint(tmp_path / "checkpoint_last.pt")
    tensors = list(state["model"].values())
    assert all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)


def test_resumed_fp32_run_on_cuda_ends_where_an_uninterrupted_one_does(corpus, tmp_path):
    settings = dict(max_tokens=128, max_updates=24, save_interval_updates=8, update_freq=2)
    straight = _trainer(corpus, tmp_path / "straight", **settings)
    straight.train()
    _trainer(corpus, tmp_path / "resumed", **{**settings, "max_updates": 9}).train()
    resumed = _trainer(corpus, tmp_path / "resumed", **settings)
    assert resumed.train().update == 24
    for name, value in straight.model.state_dict().items():
        torch.testing.assert_close(resumed.model.state_dict()[name], value, atol=1e-5, rtol=1e-4, msg=name)


# ---------------------------------------------------------------------- torch.compile (nmtmodels.compiling)
# Inductor compiles take seconds to a minute each, so six families stand for all (one of each
# kind of extra input or encoder), under CUDA graphs (Inductor included); plain Inductor once.
COMPILED_FAMILIES = ["transformer", "graph_transformer", "lattice_transformer", "reordering/both", "bbfnmt", "char2word"]


@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize(("family", "mode"), [("transformer", "default")]
                         + [(family, "reduce-overhead") for family in COMPILED_FAMILIES])
def test_compiled_padded_training_step_on_cuda_equals_eager(family, mode, fresh_dynamo):
    """Inductor (and CUDA graphs) on bucketed batches: the eager fp32 loss and gradients, over
    two replays of one shape and a second shape."""
    model, batch = family_case(family)
    model = model.to(CUDA)
    if family == "char2word":
        model.train()  # cuDNN's RNN backward needs training mode; the test model has dropout 0
    extra_pads = model.extra_inputs
    first = pad_to_buckets(batch, 8, 4, extra_pads).to(CUDA)
    second = pad_to_buckets(batch.select(torch.tensor([0, 2])), 16, 8, extra_pads).to(CUDA)
    compiled = compile_module(model, mode)
    for padded in (first, first, second):
        expected_loss, expected_grads = _loss_and_grads(model, padded, autocast=False)
        expected_grads = {name: g.clone() for name, g in expected_grads.items()}
        begin_step(mode, CUDA)
        loss, grads = _compiled_loss_and_grads(model, compiled, padded)
        torch.testing.assert_close(loss, expected_loss, rtol=1e-4, atol=1e-4)
        assert grads.keys() == expected_grads.keys()
        for name in grads:
            torch.testing.assert_close(grads[name], expected_grads[name], rtol=1e-3, atol=1e-5, msg=name)


def _compiled_loss_and_grads(model, compiled, batch):
    model.zero_grad(set_to_none=True)
    states = compiled(batch, features_only=True)
    loss, _ = label_smoothed_nll_loss(states, model.output_layer, batch.tgt_out, 0.1)
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("amp", ["none", "bf16"])
def test_trainer_with_cuda_graphs_and_buckets_logs_the_eager_losses(corpus, tmp_path, amp, fresh_dynamo):
    settings = dict(max_tokens=256, max_updates=40, lr=3e-3, warmup_updates=10, log_interval=5, amp=amp,
                    validate_interval_updates=20, pad_to_multiple=8, pad_rows_to_multiple=8)
    _trainer(corpus, tmp_path / "eager", **settings).train()
    compiled = _trainer(corpus, tmp_path / "compiled", compile="reduce-overhead", **settings)
    assert compiled.train().update == 40
    eager_losses, compiled_losses = _losses(tmp_path / "eager"), _losses(tmp_path / "compiled")
    assert len(compiled_losses) == len(eager_losses) == 8
    tolerance = 1e-3 if amp == "none" else 3e-2  # bf16: other fusion, other rounding
    assert compiled_losses == pytest.approx(eager_losses, rel=tolerance)
    state = load_checkpoint(tmp_path / "compiled" / "checkpoint_last.pt")
    assert state["model"].keys() == compiled.model.state_dict().keys()


@pytest.mark.parametrize("family", ["transformer", "lattice_transformer", "bbfnmt"])
def test_compiled_decoder_step_on_cuda_finds_the_eager_hypotheses(family, fresh_dynamo):
    model, batch = family_case(family)
    model, batch = model.to(CUDA), batch.to(CUDA)
    batch.tgt_in = batch.tgt_out = None
    eager = beam_search(model, batch, DecodeConfig(beam=3, max_len_a=0, max_len_b=6))
    compiled = beam_search(model, batch, DecodeConfig(beam=3, max_len_a=0, max_len_b=6, compile="default"))
    assert [[h.tokens for h in row] for row in compiled] == [[h.tokens for h in row] for row in eager]
    for compiled_row, eager_row in zip(compiled, eager):
        assert [h.score for h in compiled_row] == pytest.approx([h.score for h in eager_row], abs=1e-4)
