"""Reordering embeddings (eq. 6-9), the additional-PE control and the relative-PE baseline,
checked against plain re-computations from the modules' weights."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import Batch
from nmtmodels.models.reordering import ReorderingModel
from nmtmodels.models.transformer import TransformerDecoder, TransformerEncoder
from nmtmodels.modules.relative import relative_position_ids
from nmtmodels.registry import build_model
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID

SMALL = dict(d_model=32, heads=4, encoder_layers=2, decoder_layers=2, ffn_dim=64, dropout=0.1, attention_dropout=0.1)
CONTROLS = ["none", "additional_pe", "relative_pe"]


def model_of(side: str = "both", control: str = "none", vocab: int = 23, **overrides) -> ReorderingModel:
    options = {"side": side, "control": control, "max_relative_position": 2, **overrides.pop("options", {})}
    cfg = ModelConfig.from_dict({**SMALL, "family": "reordering", "options": options, **overrides})
    return build_model(cfg, vocab, vocab + 4)


def random_batch(lengths: list[int], tgt_len: int, vocab: int = 23, seed: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths)), PAD_ID)
    for row, length in enumerate(lengths):
        src[row, : length - 1] = torch.randint(4, vocab, (length - 1,), generator=g)
        src[row, length - 1] = EOS_ID
    tgt = torch.randint(4, vocab, (len(lengths), tgt_len), generator=g)
    return Batch(src=src, src_lengths=torch.tensor(lengths), tgt_in=torch.cat([torch.full((len(lengths), 1), BOS_ID), tgt], 1),
                 tgt_out=torch.cat([tgt, torch.full((len(lengths), 1), EOS_ID)], 1))


# --- plain re-computations -------------------------------------------------------------------


def sinusoid(length: int, d: int, start: int = 0) -> torch.Tensor:
    """pe(j, 2i) = sin(j / 10000^(2i/d)), pe(j, 2i+1) = cos(...) (paper eq. 1), element by element."""
    pe = torch.zeros(length, d)
    for j in range(start, start + length):
        for i in range(d // 2):
            angle = j / 10000 ** (2 * i / d)
            pe[j - start, 2 * i], pe[j - start, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return pe


def layer_norm(norm, x):
    return F.layer_norm(x, (x.size(-1),), norm.weight, norm.bias, norm.eps)


def attention(att, query, key_value, allowed, relative=None, ids=None):
    """softmax(q (k_j + a^K_ij)^T / sqrt(d)) (v_j + a^V_ij), with a (Tq, Tk, d_head) relation tensor."""
    b, tq, _ = query.shape
    h, dh = att.heads, att.head_dim
    q = (query @ att.q_proj.weight.t() + att.q_proj.bias).view(b, tq, h, dh).transpose(1, 2)
    k, v = (key_value @ att.kv_proj.weight.t() + att.kv_proj.bias).chunk(2, dim=-1)
    k, v = (t.view(b, -1, h, dh).transpose(1, 2) for t in (k, v))
    scores = q @ k.transpose(-1, -2)
    if relative is not None:
        a_k, a_v = relative.keys[ids], relative.values[ids]  # (Tq, Tk, d_head)
        scores = scores + torch.einsum("bhqd,qkd->bhqk", q, a_k)
    probs = (scores / math.sqrt(dh)).masked_fill(~allowed[:, None], float("-inf")).softmax(-1)
    out = probs @ v
    if relative is not None:
        out = out + torch.einsum("bhqk,qkd->bhqd", probs, a_v)
    return out.transpose(1, 2).reshape(b, tq, -1) @ att.out_proj.weight.t() + att.out_proj.bias


def ffn(layer, x):
    return F.linear(F.relu(F.linear(x, layer.ffn.fc1.weight, layer.ffn.fc1.bias)), layer.ffn.fc2.weight, layer.ffn.fc2.bias)


def penalty(module, prev, hat):
    """eq. 6: sigmoid(V tanh(W H^{n-1} + W' H_hat))."""
    return torch.sigmoid(torch.tanh(prev @ module.w_input.weight.t() + hat @ module.w_attended.weight.t()) @ module.v.weight.t())


def plain_layer(layer, x, pe, allowed, pre_norm, memory=None, memory_allowed=None, ids=None):
    """One encoder (``memory`` None) or decoder layer, eq. 4 and 6-9, written out."""
    self_norm, next_rn = layer.self_attn_residual.norm, (layer.ffn_residual if memory is None else layer.cross_attn_residual)
    sub_in = layer_norm(self_norm, x) if pre_norm else x
    attended = x + attention(layer.self_attn, sub_in, sub_in, allowed, layer.relative, ids)
    if not pre_norm:
        attended = layer_norm(self_norm, attended)  # H_hat = LN(SelfAtt(H) + H)
    reordering = layer.reordering
    if reordering is None:
        c = layer_norm(next_rn.norm, attended) if pre_norm else attended
    else:
        if reordering.penalty is None:
            embedding = pe  # additional PE
        else:
            embedding = pe * penalty(reordering.penalty, sub_in, layer_norm(next_rn.norm, attended) if pre_norm else attended)
        c = layer_norm(next_rn.norm if pre_norm else reordering.norm, attended + embedding)  # eq. 8
    if memory is None:
        out = attended + ffn(layer, c)  # eq. 9
        return out if pre_norm else layer_norm(layer.ffn_residual.norm, out)
    x = attended + attention(layer.cross_attn, c, memory, memory_allowed)
    if not pre_norm:
        x = layer_norm(layer.cross_attn_residual.norm, x)
    out = x + ffn(layer, layer_norm(layer.ffn_residual.norm, x) if pre_norm else x)
    return out if pre_norm else layer_norm(layer.ffn_residual.norm, out)


def plain_stack(stack, tokens, pre_norm, memory=None, memory_pad_mask=None, k=2):
    b, t = tokens.shape
    d = stack.embedding.tokens.embedding_dim
    pe = sinusoid(t, d)
    x = stack.embedding.tokens.weight[tokens] * math.sqrt(d) + pe
    ids = torch.tensor([[min(max(j - i, -k), k) + k for j in range(t)] for i in range(t)])
    if memory is None:
        allowed = (tokens != PAD_ID)[:, None, :].expand(b, t, t)
        memory_allowed = None
    else:
        allowed = torch.ones(t, t, dtype=torch.bool).tril()[None].expand(b, t, t)
        memory_allowed = (~memory_pad_mask)[:, None, :].expand(b, t, memory.size(1))
    for layer in stack.layers:
        x = plain_layer(layer, x, pe, allowed, pre_norm, memory, memory_allowed, ids)
    return layer_norm(stack.final_norm, x) if pre_norm else x


# --- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("control", CONTROLS)
@pytest.mark.parametrize("normalize_before", [False, True])
@torch.no_grad()
def test_encoder_and_decoder_follow_eq_6_to_9(control: str, normalize_before: bool) -> None:
    torch.manual_seed(0)
    model = model_of("both", control, normalize_before=normalize_before).eval()
    batch = random_batch([6, 4, 5], tgt_len=5)
    state = model.encode(batch)
    expected_memory = plain_stack(model.encoder, batch.src, normalize_before)
    real = ~batch.src_pad_mask
    torch.testing.assert_close(state["memory"][real], expected_memory[real], atol=1e-5, rtol=1e-5)
    logits, _ = model.decode(batch.tgt_in, state)
    hidden = plain_stack(model.decoder, batch.tgt_in, normalize_before, state["memory"], batch.src_pad_mask)
    torch.testing.assert_close(logits, hidden @ model.decoder.output_projection.weight.t(), atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_positional_penalty_is_a_probability_and_scales_pe() -> None:
    torch.manual_seed(1)
    layer = model_of("encoder").encoder.layers[0]
    prev, hat = torch.randn(2, 3, 32) * 5, torch.randn(2, 3, 32) * 5
    pp = layer.reordering.penalty(prev, hat)
    assert bool(((pp > 0) & (pp < 1)).all())
    torch.testing.assert_close(pp, penalty(layer.reordering.penalty, prev, hat))
    with torch.no_grad():  # V = 0: PP = 1/2 everywhere, so RE = PE / 2 (eq. 7)
        layer.reordering.penalty.v.weight.zero_()
    pe = sinusoid(3, 32)
    c = layer.reordering(prev, hat, pe, layer.ffn_residual)
    torch.testing.assert_close(c, layer_norm(layer.reordering.norm, hat + pe / 2))


@pytest.mark.parametrize("side", ["encoder", "decoder"])
def test_one_side_leaves_the_other_a_plain_transformer(side: str) -> None:
    model = model_of(side)
    other = model.decoder if side == "encoder" else model.encoder
    assert type(other) in (TransformerEncoder, TransformerDecoder)
    assert all(layer.reordering is not None for layer in (model.encoder if side == "encoder" else model.decoder).layers)


@pytest.mark.parametrize("control", CONTROLS)
@pytest.mark.parametrize("normalize_before", [False, True])
@torch.no_grad()
def test_appending_source_padding_changes_no_real_position(control: str, normalize_before: bool) -> None:
    torch.manual_seed(2)
    model = model_of("both", control, normalize_before=normalize_before).eval()
    batch = random_batch([5, 3], tgt_len=4)
    state = model.encode(batch)
    longer = Batch(src=torch.cat([batch.src, torch.full((2, 4), PAD_ID)], 1), src_lengths=batch.src_lengths,
                   tgt_in=batch.tgt_in, tgt_out=batch.tgt_out)
    padded_state = model.encode(longer)
    real = ~batch.src_pad_mask
    torch.testing.assert_close(padded_state["memory"][:, :5][real], state["memory"][real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model.decode(longer.tgt_in, padded_state)[0], model.decode(batch.tgt_in, state)[0],
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("control", ["none", "additional_pe"])
@torch.no_grad()
def test_explicit_encoder_positions_reach_the_reordering_embedding(control: str, monkeypatch) -> None:
    """Positions 3, 4, ... given explicitly = the default positions shifted by 3, in the
    input embedding and in every layer's PE alike."""
    torch.manual_seed(4)
    encoder = model_of("encoder", control).eval().encoder
    batch = random_batch([5, 5], tgt_len=2)
    explicit = encoder(batch.src, batch.src_pad_mask, positions=torch.arange(3, 8).expand(2, 5))
    default_encoding = encoder.embedding.position_encoding
    monkeypatch.setattr(encoder.embedding, "position_encoding",
                        lambda length, start, device: default_encoding(length, start + 3, device))
    torch.testing.assert_close(explicit, encoder(batch.src, batch.src_pad_mask))


@pytest.mark.parametrize("side", ["decoder", "both"])
@pytest.mark.parametrize("control", CONTROLS)
@pytest.mark.parametrize("normalize_before", [False, True])
@torch.no_grad()
def test_incremental_decoding_equals_full_forward(side: str, control: str, normalize_before: bool) -> None:
    torch.manual_seed(3)
    model = model_of(side, control, normalize_before=normalize_before).eval()
    batch = random_batch([7, 4, 5], tgt_len=6)
    state = model.encode(batch)
    full, full_attention = model.decode(batch.tgt_in, state, need_attention=True)
    cache: dict = {}
    steps, attentions = [], []
    for t in range(batch.tgt_in.size(1)):
        logits, attention_t = model.decode(batch.tgt_in[:, t : t + 1], state, cache, need_attention=True)
        steps.append(logits)
        attentions.append(attention_t)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.cat(attentions, 1), full_attention, atol=1e-6, rtol=1e-5)
    assert cache["step"] == batch.tgt_in.size(1)


def test_relative_position_ids_by_hand() -> None:
    # k = 2, four positions: clip(j - i, -2, 2) + 2
    expected = torch.tensor([[2, 3, 4, 4],
                             [1, 2, 3, 4],
                             [0, 1, 2, 3],
                             [0, 0, 1, 2]])
    assert torch.equal(relative_position_ids(4, 4, 2, torch.device("cpu")), expected)
    # decoding step 3 (cached): the one query is position 3, the keys 0..3
    assert torch.equal(relative_position_ids(1, 4, 2, torch.device("cpu")), expected[3:])
    assert torch.equal(relative_position_ids(2, 3, 1, torch.device("cpu")), torch.tensor([[0, 1, 2], [0, 0, 1]]))


def reordering_parameters(d: int, layers: int, post_norm: bool, penalty_dim: int = 0) -> int:
    """W, W' (d x r) and V (r x d) without biases, plus eq. 8's own LayerNorm (post-norm)."""
    r = penalty_dim or d
    return layers * (3 * d * r + (2 * d if post_norm else 0))


@pytest.mark.parametrize("preset, d, layers", [("base", 512, 6), ("big", 1024, 6)])
def test_parameter_overhead_matches_the_shapes(preset: str, d: int, layers: int, capsys) -> None:
    vocab = 37000
    counts = {}
    for name, options in (("Transformer", None), ("+Encoder REs", "encoder"), ("+Decoder REs", "decoder"),
                          ("+Both REs", "both"), ("+Additional PEs", "additional_pe"), ("+Relative PEs", "relative_pe")):
        family = {"family": "transformer"} if options is None else {
            "family": "reordering",
            "options": {"side": "both", "control": options} if options in ("additional_pe", "relative_pe") else {"side": options}}
        cfg = ModelConfig.from_dict({"preset": preset, "share_embeddings": True, **family})
        with torch.device("meta"):
            counts[name] = build_model(cfg, vocab, vocab).num_parameters()
    base = counts["Transformer"]
    side = reordering_parameters(d, layers, post_norm=True)
    assert counts["+Encoder REs"] - base == side and counts["+Decoder REs"] - base == side
    assert counts["+Both REs"] - base == 2 * side
    assert counts["+Additional PEs"] - base == 2 * layers * 2 * d  # only eq. 8's LayerNorm
    assert counts["+Relative PEs"] - base == 2 * layers * 2 * (2 * 16 + 1) * 64  # a^K, a^V: (2k+1) x d_head, k = 16
    with capsys.disabled():
        print(f"\n{preset} (shared vocabulary {vocab}): " + ", ".join(
            f"{name} {count / 1e6:.1f}M ({(count - base) / base:+.1%})" for name, count in counts.items()))
    assert 0.05 <= (counts["+Encoder REs"] - base) / base <= 0.10  # paper: about 5-10% more parameters


def test_options_are_validated() -> None:
    with pytest.raises(ConfigError, match="options.side"):
        model_of("left")
    with pytest.raises(ConfigError, match="max_relative_position"):
        model_of("both", "relative_pe", options={"max_relative_position": 0})
    with pytest.raises(ConfigError, match="penalty_dim"):
        model_of("both", options={"penalty_dim": -1})


@torch.no_grad()
def test_low_rank_penalty_has_the_given_size() -> None:
    model = model_of("encoder", options={"penalty_dim": 8})
    penalty_module = model.encoder.layers[0].reordering.penalty
    assert penalty_module.w_input.weight.shape == (8, 32) and penalty_module.v.weight.shape == (32, 8)


@pytest.mark.parametrize("normalize_before", [False, True])
@torch.no_grad()
def test_additional_pe_control_adds_the_original_pe_in_every_layer(normalize_before: bool) -> None:
    """Brute check with hooks: in each layer the sub-layer after self-attention reads LN(H_hat + PE)."""
    torch.manual_seed(5)
    model = model_of("both", "additional_pe", normalize_before=normalize_before).eval()
    batch = random_batch([6, 4], tgt_len=5)
    seen: dict[str, list] = {"layer_in": [], "attn_out": [], "next_in": []}
    hooks = []
    for layers, next_name in ((model.encoder.layers, "ffn"), (model.decoder.layers, "cross_attn")):
        for layer in layers:
            hooks.append(layer.register_forward_pre_hook(lambda m, args: seen["layer_in"].append(args[0])))
            hooks.append(layer.self_attn.register_forward_hook(lambda m, args, out: seen["attn_out"].append(out[0])))
            hooks.append(getattr(layer, next_name).register_forward_pre_hook(lambda m, args: seen["next_in"].append(args[0])))
    model.decode(batch.tgt_in, model.encode(batch))
    for hook in hooks:
        hook.remove()
    layers = [*model.encoder.layers, *model.decoder.layers]
    assert len(seen["next_in"]) == len(layers) == 4
    for layer, x, a, c in zip(layers, seen["layer_in"], seen["attn_out"], seen["next_in"]):
        pe = sinusoid(x.size(1), 32)
        next_norm = (layer.ffn_residual if layer in model.encoder.layers else layer.cross_attn_residual).norm
        if normalize_before:
            attended, expected = x + a, layer_norm(next_norm, x + a + pe)
            without_pe = layer_norm(next_norm, attended)
        else:
            attended = layer_norm(layer.self_attn_residual.norm, x + a)
            expected = layer_norm(layer.reordering.norm, attended + pe)
            without_pe = attended
        torch.testing.assert_close(c, expected, atol=1e-5, rtol=1e-5)
        assert not torch.allclose(c, without_pe, atol=1e-3)  # the PE made a difference here


@pytest.mark.heavy
@pytest.mark.parametrize("control", CONTROLS)
def test_a_few_updates_fit_a_reversal_batch_and_every_parameter_learns(control: str) -> None:
    """Gradients reach W, W', V (and a^K, a^V) of every layer; a small model memorises reversals."""
    torch.manual_seed(6)
    model = model_of("both", control, dropout=0.0, attention_dropout=0.0)
    src = random_batch([7, 7, 7, 7], tgt_len=1).src
    reversed_body = src[:, :-1].flip(1)
    batch = Batch(src=src, src_lengths=torch.full((4,), 7),
                  tgt_in=torch.cat([torch.full((4, 1), BOS_ID), reversed_body], 1),
                  tgt_out=torch.cat([reversed_body, torch.full((4, 1), EOS_ID)], 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    def loss() -> torch.Tensor:
        return F.cross_entropy(model(batch).flatten(0, 1), batch.tgt_out.flatten())

    initial = loss().item()
    for _ in range(40):
        optimizer.zero_grad()
        value = loss()
        value.backward()
        optimizer.step()
    assert value.item() < 0.1 * initial
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and bool(parameter.grad.abs().sum() > 0), name
