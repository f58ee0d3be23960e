"""The arithmetic and rules of the GPU benchmarks (benchmarks/throughput.py, profile_train.py,
search_gpu.py): the FLOP model against the model's own parameters and a hand count, MFU
against a peak, the profile's grouping of kernel and operator names, and the fixed-length
search that search_gpu.py's "fixed" mode relies on."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._flops import FlopModel, mfu  # noqa: E402
from benchmarks._ours import OursOptions, our_model_config  # noqa: E402
from benchmarks._setup import DecodeSpeed, Setup, median_decode  # noqa: E402
from benchmarks._venvs import PeerError  # noqa: E402
from benchmarks.profile_train import IDLE, OTHER, classify, group_times  # noqa: E402
from benchmarks.throughput import Row, mfu_cells, render_table, shape_fields  # noqa: E402


def _setup(shape: str) -> Setup:
    path = Path("unused")
    return Setup(train_src=path, train_tgt=path, test_src=path, dev_src=path, dev_tgt=path, src_lang="en", tgt_lang="de",
                 **shape_fields(shape))


def test_flop_model_of_base_by_hand() -> None:
    flops = FlopModel.of(_setup("base"), 8000)
    # d 512, FFN 2048: attention 4d^2 + 4d, FFN 2df + d + f, a layer norm 2d
    attention, ffn, norm = 4 * 512 * 512 + 4 * 512, 2 * 512 * 2048 + 512 + 2048, 2 * 512
    assert flops.encoder == 6 * (attention + ffn + 2 * norm) == 18_914_304
    assert flops.decoder == 6 * (2 * attention + ffn + 3 * norm) == 25_224_192
    assert flops.output == 512 * 8000
    assert flops.train_flops(1000, 2000) == 6 * (18_914_304 * 1000 + (25_224_192 + 4_096_000) * 2000)


@pytest.mark.parametrize("shape", ["tiny", "big"])
def test_flop_model_counts_the_layers_parameters(shape: str) -> None:
    """P_enc and P_dec are the parameters of our model's encoder and decoder layers (the tied
    embedding is d*V, counted once as the output projection)."""
    from nmtmodels.registry import build_model

    setup = _setup(shape)
    with torch.device("meta"):
        model = build_model(our_model_config(setup), 1000, 1000)
    flops = FlopModel.of(setup, 1000)
    assert sum(p.numel() for p in model.encoder.layers.parameters()) == flops.encoder
    assert sum(p.numel() for p in model.decoder.layers.parameters()) == flops.decoder
    assert model.output_layer.weight.numel() == flops.output


def test_mfu_against_measured_and_datasheet_peaks() -> None:
    assert mfu(247.35e12, 989.4e3) == pytest.approx(0.25)
    cells = mfu_cells(100e12, "bf16", {"fp32": 50e3, "bf16": 500e3}, 989.4)
    assert cells == ["100,000.0 (20% of bf16)", "10.1%"]
    assert mfu_cells(100e12, "fp32", {"fp32": 50e3}, None) == ["100,000.0 (200% of fp32)"]
    assert mfu_cells(None, "fp32", {"fp32": 50e3}, 989.4) == ["n/a", "n/a"]


def test_decode_rounds_give_the_median_round_and_a_failed_round_fails_the_row() -> None:
    rounds = [DecodeSpeed(100, seconds, 1000, "t") for seconds in (0.5, 0.8, 0.4)]
    assert median_decode(rounds).seconds == 0.5
    assert median_decode(rounds[:2]).seconds == 0.8  # of two, the slower
    failure = PeerError("crashed")
    assert median_decode([*rounds, failure]) is failure
    row = Row("ours", None, median_decode(rounds), decode_rounds=rounds)
    table = render_table([row], FlopModel(1, 1, 1), {"fp32": 1.0})
    assert "| 200.0 |" in table and "decode sent/s by round: 200.0, 125.0, 250.0 (the median in the table)" in table


def test_compile_settings_pass_through_to_the_trainer() -> None:
    from nmtmodels.config import from_dict
    from nmtmodels.training.config import TrainConfig

    settings = OursOptions(compile="reduce-overhead", pad_to_multiple=8, pad_rows_to_multiple=8).train_settings()
    assert settings == {"compile": "reduce-overhead", "pad_to_multiple": 8, "pad_rows_to_multiple": 8}
    assert from_dict(TrainConfig, {"max_updates": 1, **settings}).compile == "reduce-overhead"
    assert OursOptions().train_settings() == {}


@pytest.mark.parametrize(("name", "group"), [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", "matmul / GEMM"),
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopB_TNT", "matmul / GEMM"),
    ("aten::addmm", "matmul / GEMM"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>", "attention"),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", "attention"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "attention"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>", "softmax / layernorm / elementwise"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor>", "softmax / layernorm / elementwise"),
    ("triton_per_fused_add_native_layer_norm_0", "softmax / layernorm / elementwise"),
    ("aten::native_layer_norm", "softmax / layernorm / elementwise"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>", "optimizer"),
    ("aten::_fused_adamw_", "optimizer"),
    ("Optimizer.step#AdamW.step", "optimizer"),
    ("Memcpy HtoD (Pageable -> Device)", "memcpy / copies"),
    ("Memset (Device)", "memcpy / copies"),
    ("aten::copy_", "memcpy / copies"),
    ("cudaLaunchKernel", OTHER),
])
def test_profile_groups(name: str, group: str) -> None:
    assert classify(name) == group


def test_profile_breakdown_sums_to_the_wall_time() -> None:
    events = [("sm90_xmma_gemm", 500.0), ("nvjet_tst", 100.0), ("flash_fwd_kernel", 80.0),
              ("vectorized_elementwise_kernel", 50.0), ("FusedAdam multi_tensor_apply_kernel", 30.0),
              ("Memcpy HtoD", 10.0), ("unknown_kernel", 5.0)]
    groups = {name: (us, share) for name, us, share in group_times(events, 1000.0)}
    assert groups["matmul / GEMM"] == (600.0, 0.6)
    assert groups["attention"][0] == 80.0 and groups["optimizer"][0] == 30.0 and groups["memcpy / copies"][0] == 10.0
    assert groups[OTHER][0] == 5.0
    assert groups[IDLE] == (225.0, 0.225)
    assert sum(us for us, _ in groups.values()) == 1000.0
    assert group_times(events, 100.0)[-1][1] == 0.0  # more event time than wall (overlap): no negative idle


def test_fixed_length_search_does_the_same_work_for_every_sentence() -> None:
    """search_gpu.py's fixed mode: min_len = L, max_len_a = 0, max_len_b = L gives exactly L tokens
    (then EOS) for every sentence, whatever the model prefers, under OpenNMT-py's stop rule."""
    from nmtmodels.config import ModelConfig
    from nmtmodels.data import Batch
    from nmtmodels.decoding.config import DecodeConfig
    from nmtmodels.decoding.search import beam_search
    from nmtmodels.registry import build_model
    from nmtmodels.symbols import EOS_ID, PAD_ID

    torch.manual_seed(0)
    model = build_model(ModelConfig.from_dict({"preset": "tiny", "d_model": 16, "heads": 2, "ffn_dim": 32,
                                               "encoder_layers": 1, "decoder_layers": 1}), 30, 30).eval()
    src = torch.tensor([[5, 6, 7, EOS_ID], [8, 9, EOS_ID, PAD_ID], [10, EOS_ID, PAD_ID, PAD_ID]])
    batch = Batch(src=src, src_lengths=src.ne(PAD_ID).sum(1))
    with torch.no_grad():
        rows = beam_search(model, batch, DecodeConfig(beam=4, early_stop="top", min_len=7, max_len_a=0.0, max_len_b=7))
    assert [len(row[0].tokens) for row in rows] == [7, 7, 7]
    assert all(len(row[0].positional_scores) == 8 for row in rows)  # 7 tokens + EOS: 8 decoder steps
