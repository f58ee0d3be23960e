"""Shape buckets and ``torch.compile`` (``train.compile``, ``train.pad_to_multiple``,
``train.pad_rows_to_multiple``, ``decode.compile``; :mod:`nmtmodels.compiling`).

Padding a batch to shape buckets must not change its loss, token count or gradient, in any
model family: the conformance suite checks it for every family
(:func:`nmtmodels.testing.check_bucket_padding`). The compiled training and decoding paths
must give the eager results: here with the tracing-only ``aot_eager`` backend (the graphs
Dynamo and AOTAutograd capture, run eagerly), on a GPU with Inductor and CUDA graphs in
test_cuda.py.
"""
from __future__ import annotations

import copy
import csv

import pytest
import torch
import torch._dynamo

from nmtmodels import compiling
from nmtmodels.config import ConfigError, from_dict
from nmtmodels.data import Batch, pad_to_buckets
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import beam_search, greedy_search
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID
from nmtmodels.tests.copy_task_fixtures import copy_task_corpus, tiny_model, train_config
from nmtmodels.tests.family_cases import family_case
from nmtmodels.training.trainer import Trainer

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def tracing_backend(monkeypatch):
    """Compile with aot_eager (no C++ code generation on the CPU) and count the graphs."""
    monkeypatch.setattr(compiling, "BACKEND", "aot_eager")
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield lambda: torch._dynamo.utils.counters["stats"]["unique_graphs"]
    torch._dynamo.reset()


def test_pad_to_buckets_pads_lengths_with_each_fields_pad_and_adds_label_free_rows():
    batch = Batch(src=torch.tensor([[5, 6, EOS_ID], [7, EOS_ID, PAD_ID]]), src_lengths=torch.tensor([3, 2]),
                  tgt_in=torch.tensor([[BOS_ID, 8], [BOS_ID, PAD_ID]]), tgt_out=torch.tensor([[8, EOS_ID], [EOS_ID, PAD_ID]]),
                  extras={"starts": torch.tensor([[0, 1, 2, 3, 4], [0, 1, -1, -1, -1]])}, ids=torch.tensor([10, 11]))
    padded = pad_to_buckets(batch, length_multiple=4, row_multiple=3, extra_pads={"starts": -1})
    assert padded.src.tolist() == [[5, 6, EOS_ID, PAD_ID], [7, EOS_ID, PAD_ID, PAD_ID], [5, 6, EOS_ID, PAD_ID]]
    assert padded.src_lengths.tolist() == [3, 2, 3]
    assert padded.tgt_in.tolist() == [[BOS_ID, 8, PAD_ID, PAD_ID], [BOS_ID, PAD_ID, PAD_ID, PAD_ID],
                                      [BOS_ID, 8, PAD_ID, PAD_ID]]
    assert padded.tgt_out.tolist() == [[8, EOS_ID, PAD_ID, PAD_ID], [EOS_ID, PAD_ID, PAD_ID, PAD_ID], [PAD_ID] * 4]
    # a family field gets the source's added columns (one here), whatever its own width
    assert padded.extras["starts"].tolist() == [[0, 1, 2, 3, 4, -1], [0, 1, -1, -1, -1, -1], [0, 1, 2, 3, 4, -1]]
    assert padded.ids.tolist() == [10, 11, 10]
    assert padded.num_target_tokens == batch.num_target_tokens == 3
    assert batch.tgt_out.tolist() == [[8, EOS_ID], [EOS_ID, PAD_ID]]  # the input batch is left as it was
    assert pad_to_buckets(batch, 2, 2, {"starts": -1}).src.shape == (2, 4)  # already a multiple of 2 rows
    assert pad_to_buckets(batch, 2, 2, {"starts": -1}).extras["starts"].shape == (2, 6)
    with pytest.raises(KeyError, match="starts"):
        pad_to_buckets(batch, 4, 1, {})


def _trainer(corpus, out_dir, **settings) -> Trainer:
    vocab, train, valid = corpus
    model, model_cfg = tiny_model(len(vocab), len(vocab), dropout=0.0)
    cfg = train_config(**{"max_updates": 6, "validate_interval_updates": 3, "save_interval_updates": 3, **settings})
    return Trainer(model, cfg, train, valid, out_dir, model_config=model_cfg.to_dict(), src_vocab=vocab,
                   tgt_vocab=vocab, device="cpu", log=lambda msg: None)


def _metrics(out_dir):
    with open(out_dir / "metrics.csv", newline="", encoding="utf-8") as f:
        return [{k: v for k, v in row.items() if k in ("update", "loss", "nll", "valid_loss", "valid_nll")}
                for row in csv.DictReader(f)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return copy_task_corpus(tmp_path_factory.mktemp("corpus"), train_size=60, valid_size=12)


@pytest.mark.heavy
def test_compiled_padded_training_logs_the_eager_numbers_and_saves_plain_weights(corpus, tmp_path, tracing_backend):
    eager = _trainer(corpus, tmp_path / "eager", log_interval=1)
    eager.train()
    buckets = {"pad_to_multiple": 8, "pad_rows_to_multiple": 4, "log_interval": 1}
    padded = _trainer(corpus, tmp_path / "padded", **buckets)
    padded.train()
    compiled = _trainer(corpus, tmp_path / "compiled", compile="default", **buckets)
    assert isinstance(compiled.forward, torch._dynamo.eval_frame.OptimizedModule)
    compiled.train()
    assert tracing_backend() > 0  # graphs were captured and run
    reference = _metrics(tmp_path / "eager")
    assert len(reference) >= 6
    for run in ("padded", "compiled"):
        rows = _metrics(tmp_path / run)
        assert [row["update"] for row in rows] == [row["update"] for row in reference]
        for row, expected in zip(rows, reference):
            for key, value in expected.items():
                if value:
                    assert float(row[key]) == pytest.approx(float(value), rel=1e-4), (run, row["update"], key)
    state = torch.load(tmp_path / "compiled" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["model"].keys() == eager.model.state_dict().keys()  # no "_orig_mod." prefixes


def test_compile_and_padding_settings_are_checked_and_may_change_on_resume(corpus, tmp_path):
    with pytest.raises(ConfigError, match=r"train.compile"):
        train_config(compile="graphs")
    with pytest.raises(ConfigError, match=r"train.pad_to_multiple: must be >= 1"):
        train_config(pad_to_multiple=0)
    with pytest.raises(ConfigError, match=r"decode.compile"):
        from_dict(DecodeConfig, {"compile": "reduce-overhead"}, "decode")
    first = _trainer(corpus, tmp_path, max_updates=3)
    first.train()
    resumed = _trainer(corpus, tmp_path, pad_to_multiple=8)
    assert resumed.train().update == 6  # went on from update 3 (a changed setting that shapes the run is an error)


@pytest.mark.heavy
@pytest.mark.parametrize("search", ["beam", "greedy"])
def test_compiled_decoder_step_finds_the_eager_hypotheses(search, tracing_backend):
    model, batch = family_case("transformer")
    batch.tgt_in = batch.tgt_out = None
    if search == "beam":
        run = lambda m, mode: beam_search(m, batch, DecodeConfig(beam=3, nbest=2, max_len_a=0, max_len_b=6, compile=mode))
    else:
        run = lambda m, mode: [[h] for h in greedy_search(m, batch, 0, 6, compile=mode)]
    eager = run(model, "none")
    compiled = run(copy.deepcopy(model), "default")
    assert tracing_backend() > 0
    assert [[h.tokens for h in row] for row in compiled] == [[h.tokens for h in row] for row in eager]
    for compiled_row, eager_row in zip(compiled, eager):
        assert [h.score for h in compiled_row] == pytest.approx([h.score for h in eager_row], abs=1e-5)


@pytest.mark.parametrize("mode", ["default", "reduce-overhead", "max-autotune"])
def test_inductor_gets_the_modes_own_options_and_no_tiling_analysis_before_torch_2_13(mode, monkeypatch):
    """The options compile_module gives Inductor are those torch itself applies for the mode
    (its own compile wrapper's config), plus the coalesced-tiling analysis switched off on
    torch 2.11, whose Inductor fails on the lattice Transformer (docs/compilation.md)."""
    def config(mode=None, options=None):
        return torch._TorchCompileInductorWrapper(mode, options, None).config

    by_mode = config(mode=None if mode == "default" else mode)
    assert config(options=compiling.inductor_options(mode, "2.13.0+cpu")) == by_mode
    assert config(options=compiling.inductor_options(mode, "2.11.0+cu130")) == {
        **by_mode, "triton.coalesce_tiling_analysis": False}
    seen = {}
    monkeypatch.setattr(compiling.torch, "compile", lambda module, **kwargs: seen.update(kwargs) or module)
    monkeypatch.setattr(compiling.torch, "__version__", "2.11.0+cu130")
    compiling.compile_module(torch.nn.Linear(2, 2), mode)
    assert seen == {"backend": "inductor", "options": {**by_mode, "triton.coalesce_tiling_analysis": False}}
