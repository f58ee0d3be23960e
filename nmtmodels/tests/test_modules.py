"""Attention, embeddings and layers against independent references.

References: a per-head loop that materialises the (B, Tq, Tk, d_head) relation tensors
(Shaw et al. 2018, eq. 3-4), the sinusoid formula of Vaswani et al. (2017, section 3.5),
and PyTorch's own ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer``.
"""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from nmtmodels.modules.attention import MultiheadAttention, RelationTerms, allowed_keys
from nmtmodels.modules.dropout import Dropout
from nmtmodels.modules.embedding import InputEmbedding, LearnedPositions, SinusoidalPositions, TokenEmbedding
from nmtmodels.modules.layers import FeedForward, ResidualNorm, TransformerDecoderLayer, TransformerEncoderLayer


def reference_attention(
    attn: MultiheadAttention,
    query: torch.Tensor,
    key_value: torch.Tensor,
    key_padding_mask: torch.Tensor | None = None,
    causal: bool = False,
    relations: RelationTerms | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Head by head, with relation vectors gathered into full (B, Tq, Tk, d_head) tensors."""
    inner, dh = attn.inner_dim, attn.head_dim
    w_k, w_v = attn.kv_proj.weight[:inner], attn.kv_proj.weight[inner:]
    b_k, b_v = attn.kv_proj.bias[:inner], attn.kv_proj.bias[inner:]
    q_all = query @ attn.q_proj.weight.T + attn.q_proj.bias
    k_all = key_value @ w_k.T + b_k
    v_all = key_value @ w_v.T + b_v
    tq, tk = query.size(1), key_value.size(1)
    blocked = torch.zeros(query.size(0), tq, tk, dtype=torch.bool)
    if key_padding_mask is not None:
        blocked |= key_padding_mask[:, None, :]
    if causal:
        blocked |= torch.triu(torch.ones(tq, tk, dtype=torch.bool), diagonal=1 + tk - tq)
    heads_out, heads_probs = [], []
    for head in range(attn.heads):
        cols = slice(head * dh, (head + 1) * dh)
        q, k, v = q_all[..., cols], k_all[..., cols], v_all[..., cols]
        if relations is None:
            logits = q @ k.transpose(1, 2)
        else:
            rel_k = relations.keys[relations.ids]  # (B, Tq, Tk, dh), materialised on purpose
            logits = torch.einsum("bid,bijd->bij", q, k[:, None] + rel_k)
        probs = torch.softmax((logits / math.sqrt(dh)).masked_fill(blocked, float("-inf")), dim=-1)
        if relations is None:
            out = probs @ v
        else:
            rel_v = relations.values[relations.ids]
            out = torch.einsum("bij,bijd->bid", probs, v[:, None] + rel_v)
        heads_out.append(out)
        heads_probs.append(probs)
    out = torch.cat(heads_out, dim=-1) @ attn.out_proj.weight.T + attn.out_proj.bias
    return out, torch.stack(heads_probs, dim=1).mean(dim=1)


def padding_mask(lengths: list[int], total: int) -> torch.Tensor:
    return torch.arange(total)[None, :] >= torch.tensor(lengths)[:, None]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("with_padding", [False, True])
def test_attention_fast_and_weights_paths_match_reference(causal: bool, with_padding: bool) -> None:
    torch.manual_seed(0)
    attn = MultiheadAttention(16, 4, dropout=0.3).eval()  # dropout must be off in eval
    x = torch.randn(3, 7, 16)
    mask = padding_mask([7, 5, 2], 7) if with_padding else None
    expected, expected_weights = reference_attention(attn, x, x, mask, causal)
    fast, no_weights = attn(x, key_padding_mask=mask, causal=causal)
    explicit, weights = attn(x, key_padding_mask=mask, causal=causal, need_weights=True)
    assert no_weights is None
    torch.testing.assert_close(fast, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(explicit, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=1e-5)
    if with_padding:
        assert weights[2, :, 2:].abs().max() == 0


def test_cross_attention_with_other_key_value_size_and_inner_dim() -> None:
    torch.manual_seed(1)
    attn = MultiheadAttention(12, 2, kv_dim=20, inner_dim=8).eval()
    query, memory = torch.randn(2, 3, 12), torch.randn(2, 5, 20)
    mask = padding_mask([5, 3], 5)
    expected, _ = reference_attention(attn, query, memory, mask)
    out, _ = attn(query, memory, key_padding_mask=mask)
    assert out.shape == (2, 3, 12)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_attention_dropout_only_in_training() -> None:
    torch.manual_seed(2)
    attn = MultiheadAttention(16, 4, dropout=0.5)
    x = torch.randn(2, 6, 16)
    attn.train()
    first, _ = attn(x)
    second, _ = attn(x)
    assert not torch.allclose(first, second)
    attn.eval()
    torch.testing.assert_close(attn(x)[0], reference_attention(attn, x, x)[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_relation_path_matches_materialised_reference_forward_and_backward(causal: bool) -> None:
    torch.manual_seed(3)
    batch, length, heads, d_model, num_relations = 2, 6, 2, 8, 5
    attn = MultiheadAttention(d_model, heads).double().eval()
    x = torch.randn(batch, length, d_model, dtype=torch.float64, requires_grad=True)
    rel_keys = torch.randn(num_relations, attn.head_dim, dtype=torch.float64, requires_grad=True)
    rel_values = torch.randn(num_relations, attn.head_dim, dtype=torch.float64, requires_grad=True)
    ids = torch.randint(0, num_relations, (batch, length, length))
    relations = RelationTerms(ids, rel_keys, rel_values)
    mask = padding_mask([6, 4], length)
    upstream = torch.randn(batch, length, d_model, dtype=torch.float64)

    def grads(out: torch.Tensor) -> list[torch.Tensor]:
        inputs = [x, rel_keys, rel_values, *attn.parameters()]
        return list(torch.autograd.grad((out * upstream).sum(), inputs))

    out, weights = attn(x, key_padding_mask=mask, causal=causal, relations=relations, need_weights=True)
    expected, expected_weights = reference_attention(attn, x, x, mask, causal, relations)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights, expected_weights)
    for got, want in zip(grads(out), grads(expected)):
        torch.testing.assert_close(got, want)
    # The relation terms matter: without them the output changes.
    assert not torch.allclose(out, attn(x, key_padding_mask=mask, causal=causal)[0])


def test_relation_path_with_cache_and_fewer_queries_than_keys() -> None:
    torch.manual_seed(4)
    attn = MultiheadAttention(8, 2).double().eval()
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    ids = torch.randint(0, 3, (1, 5, 5))
    relations = RelationTerms(ids, torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64))
    full, _ = attn(x, causal=True, relations=relations)
    cache: dict[str, torch.Tensor] = {}
    steps = [
        attn(x[:, t : t + 1], causal=True, cache=cache, relations=RelationTerms(ids[:, t : t + 1, : t + 1], *relations[1:]))[0]
        for t in range(5)
    ]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)


def test_allowed_keys_causal_offset_and_padding() -> None:
    pad = torch.tensor([[False, False, False, True]])
    mask = allowed_keys(2, 4, pad, causal=True, device=torch.device("cpu"))
    # Queries are the last two of four positions: they see keys up to 2 and 3; key 3 is padding.
    expected = torch.tensor([[[[True, True, True, False], [True, True, True, False]]]])
    assert torch.equal(mask, expected)
    assert allowed_keys(1, 4, None, causal=True, device=torch.device("cpu")) is None


def test_incremental_self_attention_matches_full_causal_pass() -> None:
    torch.manual_seed(5)
    attn = MultiheadAttention(16, 4).eval()
    x = torch.randn(2, 6, 16)
    full, _ = attn(x, causal=True)
    cache: dict[str, torch.Tensor] = {}
    first, _ = attn(x[:, :1], causal=True, cache=cache)
    chunk, _ = attn(x[:, 1:3], causal=True, cache=cache)  # two new tokens at once
    rest = [attn(x[:, t : t + 1], causal=True, cache=cache)[0] for t in range(3, 6)]
    torch.testing.assert_close(torch.cat([first, chunk, *rest], dim=1), full, atol=1e-5, rtol=1e-5)
    assert cache["k"].shape == (2, 4, 6, 4)


def test_static_memory_is_projected_once() -> None:
    torch.manual_seed(6)
    attn = MultiheadAttention(16, 4).eval()
    query, memory = torch.randn(2, 1, 16), torch.randn(2, 5, 16)
    cache: dict[str, torch.Tensor] = {}
    first, _ = attn(query, memory, cache=cache, static_kv=True)
    projected = cache["k"]
    second, _ = attn(query, None, cache=cache, static_kv=True)
    assert cache["k"] is projected
    torch.testing.assert_close(first, second)


@pytest.mark.parametrize("queries", [1, 2])
@pytest.mark.parametrize("need_weights", [False, True])
@torch.no_grad()
def test_hypotheses_of_a_sentence_share_its_memory_keys(queries: int, need_weights: bool) -> None:
    """Beam search keeps a sentence's projected memory once for its hypotheses (cache rows = sentences,
    queries = sentences x hypotheses): each hypothesis attends as if it had its own copy."""
    torch.manual_seed(8)
    attn = MultiheadAttention(16, 4).eval()
    memory, hypotheses = torch.randn(2, 5, 16), 3
    mask = padding_mask([5, 3], 5).repeat_interleave(hypotheses, 0)
    query = torch.randn(2 * hypotheses, queries, 16)
    cache: dict[str, torch.Tensor] = {}
    attn(query[::hypotheses], memory, key_padding_mask=mask[::hypotheses], cache=cache, static_kv=True)
    assert cache["k"].size(0) == 2
    out, weights = attn(query, None, key_padding_mask=mask, need_weights=need_weights, cache=cache, static_kv=True)
    expected, expected_weights = reference_attention(attn, query, memory.repeat_interleave(hypotheses, 0), mask)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    if need_weights:
        torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="5 queries cannot share the memory of 2 sentences"):
        attn(query[:5], None, key_padding_mask=mask[:5], cache=cache, static_kv=True)


def test_sinusoidal_positions_follow_the_paper_formula() -> None:
    d = 10
    encoder = SinusoidalPositions(d)
    positions = torch.tensor([[0, 1, 7], [3, 50, 999]])
    table = encoder(positions)
    for p in (0, 1, 7, 3, 50, 999):
        row = table[positions == p][0]
        for i in range(d // 2):
            angle = p / 10000 ** (2 * i / d)
            assert row[2 * i].item() == pytest.approx(math.sin(angle), abs=1e-4)
            assert row[2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-4)
    with pytest.raises(ValueError, match="even"):
        SinusoidalPositions(7)


def test_token_embedding_scale_init_and_padding_row() -> None:
    torch.manual_seed(7)
    emb = TokenEmbedding(2000, 64)
    assert emb.weight[0].abs().max() == 0
    assert emb.weight[1:].std().item() == pytest.approx(64**-0.5, rel=0.05)
    ids = torch.tensor([[5, 0, 9]])
    torch.testing.assert_close(emb(ids), emb.weight[ids] * 8.0)


def test_input_embedding_positions_start_and_explicit_positions() -> None:
    torch.manual_seed(8)
    emb = InputEmbedding(TokenEmbedding(30, 8), LearnedPositions(6, 8), dropout=0.0, max_positions=6)
    tokens = torch.tensor([[4, 5, 6]])
    default = emb(tokens)
    torch.testing.assert_close(default, emb.tokens(tokens) + emb.positions.weight[:3])
    shifted = emb(tokens[:, :1], start=4)
    torch.testing.assert_close(shifted, emb.tokens(tokens[:, :1]) + emb.positions.weight[4])
    explicit = emb(tokens, positions=torch.tensor([[2, 2, 0]]))
    torch.testing.assert_close(explicit, emb.tokens(tokens) + emb.positions.weight[[2, 2, 0]])
    with pytest.raises(ValueError, match="maximum of 6"):
        emb(torch.tensor([[4, 5, 6, 7, 8, 9, 10]]))


@pytest.mark.parametrize("normalize_before", [False, True])
def test_residual_norm_pre_and_post(normalize_before: bool) -> None:
    torch.manual_seed(9)
    block = ResidualNorm(6, dropout=0.0, normalize_before=normalize_before)
    nn.init.normal_(block.norm.weight)
    x = torch.randn(2, 3, 6)
    f = lambda t: 2 * t + 1
    out = block.merge(x, f(block.prepare(x)))
    expected = x + f(block.norm(x)) if normalize_before else block.norm(x + f(x))
    torch.testing.assert_close(out, expected)


def test_feed_forward_gelu() -> None:
    torch.manual_seed(10)
    ffn = FeedForward(6, 12, activation="gelu")
    x = torch.randn(4, 6)
    torch.testing.assert_close(ffn(x), ffn.fc2(torch.nn.functional.gelu(ffn.fc1(x))))
    with pytest.raises(ValueError, match="unknown activation"):
        FeedForward(6, 12, activation="tanh")


def copy_attention(ours: MultiheadAttention, theirs: nn.MultiheadAttention) -> None:
    theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.kv_proj.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.kv_proj.bias]))
    theirs.out_proj.weight.copy_(ours.out_proj.weight)
    theirs.out_proj.bias.copy_(ours.out_proj.bias)


def copy_common(ours: nn.Module, theirs: nn.Module, norms: list[tuple[ResidualNorm, nn.LayerNorm]]) -> None:
    copy_attention(ours.self_attn, theirs.self_attn)
    for mine, torch_linear in ((ours.ffn.fc1, theirs.linear1), (ours.ffn.fc2, theirs.linear2)):
        torch_linear.weight.copy_(mine.weight)
        torch_linear.bias.copy_(mine.bias)
    for residual, torch_norm in norms:
        nn.init.normal_(residual.norm.weight)
        nn.init.normal_(residual.norm.bias)
        torch_norm.weight.copy_(residual.norm.weight)
        torch_norm.bias.copy_(residual.norm.bias)


@pytest.mark.parametrize("normalize_before", [False, True])
@torch.no_grad()
def test_encoder_layer_matches_torch_encoder_layer(normalize_before: bool) -> None:
    torch.manual_seed(11)
    ours = TransformerEncoderLayer(16, 4, 32, dropout=0.1, normalize_before=normalize_before).eval()
    theirs = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True, norm_first=normalize_before).eval()
    copy_common(ours, theirs, [(ours.self_attn_residual, theirs.norm1), (ours.ffn_residual, theirs.norm2)])
    x = torch.randn(3, 5, 16)
    mask = padding_mask([5, 3, 1], 5)
    expected = theirs(x, src_key_padding_mask=mask)
    got = ours(x, mask)
    keep = ~mask
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("normalize_before", [False, True])
@torch.no_grad()
def test_decoder_layer_matches_torch_decoder_layer(normalize_before: bool) -> None:
    torch.manual_seed(12)
    ours = TransformerDecoderLayer(16, 4, 32, dropout=0.1, normalize_before=normalize_before).eval()
    theirs = nn.TransformerDecoderLayer(16, 4, 32, dropout=0.1, batch_first=True, norm_first=normalize_before).eval()
    copy_common(
        ours,
        theirs,
        [(ours.self_attn_residual, theirs.norm1), (ours.cross_attn_residual, theirs.norm2), (ours.ffn_residual, theirs.norm3)],
    )
    copy_attention(ours.cross_attn, theirs.multihead_attn)
    x, memory = torch.randn(3, 4, 16), torch.randn(3, 6, 16)
    memory_mask = padding_mask([6, 2, 4], 6)
    expected = theirs(
        x, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4), tgt_is_causal=True,
        memory_key_padding_mask=memory_mask,
    )
    got, attention = ours(x, memory, memory_mask, need_attention=True)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert attention.shape == (3, 4, 6)
    torch.testing.assert_close(attention.sum(-1), torch.ones(3, 4))
    assert attention[1, :, 2:].abs().max() == 0


# ---------------------------------------------------------------------- dropout
def test_dropout_keeps_each_element_with_probability_one_minus_p_scaled():
    torch.manual_seed(0)
    x = torch.ones(1_000_000, requires_grad=True)
    out = Dropout(0.1).train()(x)
    kept = out != 0
    # binomial(1e6, 0.9): standard deviation 300 elements, so 5 sigma is 0.0015
    assert abs(kept.float().mean().item() - 0.9) < 0.0015
    torch.testing.assert_close(out[kept], torch.full((int(kept.sum()),), 1 / 0.9))
    weights = torch.randn(1_000_000)
    (out * weights).sum().backward()
    torch.testing.assert_close(x.grad, out.detach() * weights)  # the same mask, the same scale


def test_dropout_is_the_identity_in_eval_mode_and_at_p_zero_and_empties_at_p_one():
    x = torch.randn(50, 7)
    assert Dropout(0.3).eval()(x) is x
    assert Dropout(0.0).train()(x) is x
    assert not Dropout(1.0).train()(x).any()


def test_dropout_masks_follow_the_seed():
    x = torch.randn(40, 9)
    torch.manual_seed(5)
    first = Dropout(0.5).train()(x)
    torch.manual_seed(5)
    assert torch.equal(Dropout(0.5).train()(x), first)


def test_dropout_keep_rate_is_unbiased_for_bfloat16_inputs():
    torch.manual_seed(0)
    out = Dropout(0.1).train()(torch.ones(4_000_000, dtype=torch.bfloat16))
    assert out.dtype == torch.bfloat16
    # binomial standard deviation 0.00015: 5 sigma is 0.0008, while a bf16 uniform would keep
    # 230/256 = 0.8984 (10 sigma off)
    assert abs(out.ne(0).float().mean().item() - 0.9) < 0.0008
