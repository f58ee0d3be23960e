"""The same computations on a CUDA device as on the CPU (skipped where no GPU is visible).

Every model family: fp32 logits on the GPU equal the CPU's; a bf16-autocast training step
(forward, the chunked label-smoothed loss, backward) stays close to fp32 and leaves fp32
gradients; beam search on the GPU finds the CPU's hypotheses.  The trainer: bf16 training on
the GPU learns, its checkpoints load on a CPU, and a resumed fp32 run ends where an
uninterrupted one does.  (Multi-GPU DDP needs two GPUs; the gloo tests in
test_distributed.py cover the same trainer code on the CPU.)

Run on a GPU machine with ``python -m pytest nmtmodels/tests/test_cuda.py -n 0``; the last
run is recorded in benchmarks/README.md ("On a GPU").
"""
from __future__ import annotations

import copy
import csv

import pytest
import torch

from nmtmodels.checkpoint import load_checkpoint
from nmtmodels.config import ModelConfig
from nmtmodels.inference import translate_dataset
from nmtmodels.loss import label_smoothed_nll_loss
from nmtmodels.registry import build_model
from nmtmodels.search import DecodeConfig, beam_search
from nmtmodels.tests import (
    test_char2word,
    test_esc,
    test_graph,
    test_lattice,
    test_reordering,
)
from nmtmodels.tests.copy_task_fixtures import (
    copy_task_corpus,
    tiny_model,
    train_config,
)
from nmtmodels.train import Trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CUDA = torch.device("cuda")
LENGTHS = [6, 3, 5]
LATTICE_ROWS = [[(0, 1), (0, 2), (1, 2), (2, 3)], [(0, 1)], [(0, 2), (2, 3), (0, 1), (1, 3)]]


def _case(family: str):
    """(model in eval mode, batch) of one family, from that family's own test builders."""
    torch.manual_seed(0)
    if family == "transformer":
        cfg = ModelConfig.from_dict({**test_esc.SMALL, "family": "transformer"})
        return build_model(cfg, 23, 27).eval(), test_graph.random_batch(LENGTHS, 4)
    if family.startswith("graph_transformer"):
        options = {"graph_transformer": {}, "graph_transformer/gate+half_dim": {"fusion": "gate", "half_dim": True},
                   "graph_transformer/self_gate": {"fusion": "self_gate"}}[family]
        return test_graph.model_of(options).eval(), test_graph.random_batch(LENGTHS, 4)
    if family == "lattice_transformer":
        model = test_lattice.model_of(positions="lattice", lsa=True)
        test_lattice.randomise_relations(model)
        return model.eval(), test_lattice.lattice_batch(LATTICE_ROWS)
    if family.startswith("reordering"):
        side = family.split("/")[1]
        return test_reordering.model_of(side).eval(), test_reordering.random_batch(LENGTHS, 4)
    if family in test_esc.FAMILIES:
        return test_esc.model_of(family).eval(), test_esc.random_batch(LENGTHS, [3, 2, 4], 4)
    if family in ("char2char", "char2word"):
        model = test_char2word.model(family).float()
        return model, test_char2word.make_batch(test_char2word.SOURCES, test_char2word.TARGETS)
    raise AssertionError(family)


FAMILIES = ["transformer", "graph_transformer", "graph_transformer/gate+half_dim", "graph_transformer/self_gate",
            "lattice_transformer", "reordering/both", "reordering/encoder", *test_esc.FAMILIES, "char2char", "char2word"]


@pytest.mark.parametrize("family", FAMILIES)
@torch.no_grad()
def test_fp32_logits_on_cuda_equal_the_cpu(family):
    model, batch = _case(family)
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
    model, batch = _case(family)
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
    model, batch = _case(family)
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
