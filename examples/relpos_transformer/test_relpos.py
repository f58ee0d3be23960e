"""The outside family ``relpos_transformer`` passes the conformance suite that every built-in
family passes, loaded the way the commands load it (``NMT_USER_MODULES``), and its relative
terms are what Shaw et al.'s eq. 3-4 say, recomputed by hand."""
from __future__ import annotations

import math
from pathlib import Path

import torch

from nmtmodels.config import ModelConfig
from nmtmodels.registry import build_model, load_user_modules
from nmtmodels.testing import SMALL, FamilyConformance, random_batch

load_user_modules(str(Path(__file__).with_name("relpos.py")))


class TestRelPosTransformer(FamilyConformance):
    family = "relpos_transformer"
    options = {"max_relative_position": 2}


class TestRelPosTransformerWithoutAbsolutePositions(FamilyConformance):
    family = "relpos_transformer"
    options = {"max_relative_position": 2, "absolute_positions": False}


@torch.no_grad()
def test_first_layer_self_attention_adds_the_clipped_distance_terms_by_hand() -> None:
    """e_ij = q_i (k_j + a^K_{clip(j-i)})^T / sqrt(d_h), z_i = sum_j softmax(e)_ij (v_j + a^V_{clip(j-i)}),
    one head at a time, against the first encoder layer's self-attention output."""
    torch.manual_seed(1)
    cfg = ModelConfig.from_dict({**SMALL, "family": "relpos_transformer", "dropout": 0.0, "attention_dropout": 0.0,
                                 "options": {"max_relative_position": 2}})
    model = build_model(cfg, 23, 27).eval()
    batch = random_batch([5], 2)
    encoder, layer = model.encoder, model.encoder.layers[0]
    seen = {}
    layer.self_attn.register_forward_hook(lambda module, args, out: seen.update(out=out[0]))  # returns None: output kept
    encoder(batch.src, batch.src_pad_mask)
    x = layer.self_attn_residual.prepare(encoder.embedding(batch.src))[0]
    attn, k = layer.self_attn, 2
    heads, d_head = attn.heads, attn.head_dim
    q = attn.q_proj(x)
    key, value = attn.kv_proj(x).view(5, 2, heads * d_head).unbind(1)  # kv_proj: [k | v] per position
    table_k, table_v = encoder.relative[0].keys, encoder.relative[0].values
    out = torch.zeros(5, heads * d_head)
    for h in range(heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        for i in range(5):
            ids = [min(max(j - i, -k), k) + k for j in range(5)]
            scores = torch.stack([q[i, cols] @ (key[j, cols] + table_k[ids[j]]) / math.sqrt(d_head) for j in range(5)])
            weights = scores.softmax(0)
            out[i, cols] = sum(weights[j] * (value[j, cols] + table_v[ids[j]]) for j in range(5))
    expected = torch.nn.functional.linear(out, attn.out_proj.weight, attn.out_proj.bias)
    torch.testing.assert_close(seen["out"][0], expected, atol=1e-5, rtol=1e-5)
