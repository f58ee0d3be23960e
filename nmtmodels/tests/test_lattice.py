"""Lattice-based Transformer encoder: relations (Table 1), LPE, LSA (eq. 4-5), parameters."""
from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import Batch
from nmtmodels.models.lattice import (
    RELATIONS,
    SPAN_PAD,
    lattice_positions,
    relation_ids,
    spans_with_eos,
)
from nmtmodels.modules.attention import MultiheadAttention, RelationTerms
from nmtmodels.registry import build_model
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID

R = {name: index for index, name in enumerate(RELATIONS)}
SMALL = {"d_model": 32, "heads": 4, "encoder_layers": 2, "decoder_layers": 2, "ffn_dim": 64, "dropout": 0.0}

# Figure 1/3: "mao yi fa zhan ju fu zong cai" (8 characters) segmented three ways:
# mao-yi | fa-zhan-ju | fu-zong-cai;  mao-yi | fa-zhan | ju | fu | zong-cai;
# mao-yi-fa-zhan-ju | fu-zong-cai.  Identical edges merged, ordered by (start, end):
FIGURE_EDGES = [(0, 2), (0, 5), (2, 4), (2, 5), (4, 5), (5, 6), (5, 8), (6, 8)]


def test_relations_of_figure_3_by_hand() -> None:
    starts = torch.tensor([[s for s, _ in FIGURE_EDGES]])
    ends = torch.tensor([[e for _, e in FIGURE_EDGES]])
    ids = relation_ids(starts, ends)[0]
    # fa-zhan-ju = e_{2:5}: right-adjacent to mao-yi, included in mao-yi-fa-zhan-ju, includes
    # fa-zhan and ju, left-adjacent to fu and fu-zong-cai, preceding zong-cai.
    fa_zhan_ju = ["right_adjacent", "included", "includes", "self", "includes", "left_adjacent", "left_adjacent", "preceding"]
    # fu = e_{5:6}
    fu = ["succeeding", "right_adjacent", "succeeding", "right_adjacent", "right_adjacent", "self", "included", "left_adjacent"]
    assert ids[3].tolist() == [R[name] for name in fa_zhan_ju]
    assert ids[5].tolist() == [R[name] for name in fu]
    # intersecting edges (not in the figure): e_{0:2} and e_{1:3} both ways
    crossing = relation_ids(torch.tensor([[0, 1]]), torch.tensor([[2, 3]]))[0]
    assert crossing.tolist() == [[R["self"], R["intersects"]], [R["intersects"], R["self"]]]


def test_relations_are_mirrored() -> None:
    """r(a, b) and r(b, a) are converse relations for every pair (here: all spans of 6 nodes)."""
    spans = [(i, j) for i in range(6) for j in range(i + 1, 7)]
    starts, ends = torch.tensor([[s for s, _ in spans]]), torch.tensor([[e for _, e in spans]])
    ids = relation_ids(starts, ends)[0]
    converse = {"self": "self", "left_adjacent": "right_adjacent", "right_adjacent": "left_adjacent",
                "includes": "included", "included": "includes", "intersects": "intersects",
                "preceding": "succeeding", "succeeding": "preceding"}
    for a, b in itertools.combinations(range(len(spans)), 2):
        assert RELATIONS[ids[b, a]] == converse[RELATIONS[ids[a, b]]]
    assert set(ids.flatten().tolist()) == set(range(len(RELATIONS)))


@st.composite
def lattices(draw) -> list[tuple[int, int]]:
    """Edges of a random lattice: 1-4 random segmentations of N characters, merged."""
    length = draw(st.integers(1, 9))
    edges = set()
    for _ in range(draw(st.integers(1, 4))):
        cuts = draw(st.sets(st.integers(1, length - 1), max_size=length - 1)) if length > 1 else set()
        nodes = [0, *sorted(cuts), length]
        edges.update(itertools.pairwise(nodes))
    return sorted(edges)


def paths(edges: list[tuple[int, int]], node: int, last: int) -> list[list[int]]:
    """Every path from ``node`` to ``last`` as a list of edge indices."""
    if node == last:
        return [[]]
    return [[k, *rest] for k, (s, e) in enumerate(edges) if s == node for rest in paths(edges, e, last)]


@settings(max_examples=60, deadline=None)
@given(lattices())
def test_lattice_positions_increase_along_every_path(edges: list[tuple[int, int]]) -> None:
    length = max(e for _, e in edges)
    src_pad = torch.zeros(1, len(edges) + 1, dtype=torch.bool)
    starts, _ = spans_with_eos(torch.tensor([[s for s, _ in edges]]), torch.tensor([[e for _, e in edges]]), src_pad)
    positions = lattice_positions(starts)[0].tolist()
    eos = len(edges)
    all_paths = paths(edges, 0, length)
    assert all_paths
    for path in all_paths:
        along = [positions[k] for k in [*path, eos]]
        assert all(a < b for a, b in itertools.pairwise(along)), (edges, path, along)


def test_spans_with_eos_padding() -> None:
    starts = torch.tensor([[0, 0, 1], [0, SPAN_PAD, SPAN_PAD]])
    ends = torch.tensor([[1, 2, 2], [3, SPAN_PAD, SPAN_PAD]])
    pad = torch.tensor([[False] * 4, [False, False, True, True]])
    s, e = spans_with_eos(starts, ends, pad)
    assert s.tolist() == [[0, 0, 1, 2], [0, 3, 0, 0]]
    assert e.tolist() == [[1, 2, 2, 3], [3, 4, 0, 0]]
    with pytest.raises(ValueError, match="truncated"):
        spans_with_eos(starts[:, :2], ends[:, :2], pad)


def naive_relation_attention(attn: MultiheadAttention, x: torch.Tensor, pad: torch.Tensor, rel: RelationTerms) -> torch.Tensor:
    """Eq. 4-5 with explicit (B, M, M, d_head) r^K, r^V tensors, looping over heads."""
    b, m, _ = x.shape
    h, d = attn.heads, attn.head_dim
    q = attn.q_proj(x).view(b, m, h, d)
    k, v = attn.kv_proj(x).view(b, m, 2, h, d).unbind(2)
    r_k, r_v = rel.keys[rel.ids], rel.values[rel.ids]  # (B, M, M, d)
    heads = []
    for head in range(h):
        qh, kh, vh = q[:, :, head], k[:, :, head], v[:, :, head]
        scores = torch.einsum("bid,bijd->bij", qh, kh.unsqueeze(1) + r_k) / math.sqrt(d)
        scores = scores.masked_fill(pad.unsqueeze(1), float("-inf"))
        alpha = scores.softmax(-1)
        heads.append(torch.einsum("bij,bijd->bid", alpha, vh.unsqueeze(1) + r_v))
    return attn.out_proj(torch.cat(heads, dim=-1))


def test_efficient_lsa_equals_naive_reference_forward_and_backward() -> None:
    torch.manual_seed(0)
    attn = MultiheadAttention(16, 4).double()
    edges = [FIGURE_EDGES, [(0, 1), (0, 3), (1, 3), (3, 4)]]
    width = max(map(len, edges))
    starts = torch.tensor([[s for s, _ in row] + [0] * (width - len(row)) for row in edges])
    ends = torch.tensor([[e for _, e in row] + [0] * (width - len(row)) for row in edges])
    pad = torch.tensor([[False] * len(row) + [True] * (width - len(row)) for row in edges])
    x = torch.randn(2, width, 16, dtype=torch.double, requires_grad=True)
    keys = torch.randn(8, 4, dtype=torch.double, requires_grad=True)
    values = torch.randn(8, 4, dtype=torch.double, requires_grad=True)
    rel = RelationTerms(relation_ids(starts, ends), keys, values)
    grad_out = torch.randn(2, width, 16, dtype=torch.double) * (~pad).unsqueeze(-1)

    def outputs_and_grads(fn):
        out = fn()
        params = [x, keys, values, *attn.parameters()]
        return out, torch.autograd.grad((out * grad_out).sum(), params)

    fast, fast_grads = outputs_and_grads(lambda: attn(x, key_padding_mask=pad, relations=rel)[0])
    slow, slow_grads = outputs_and_grads(lambda: naive_relation_attention(attn, x, pad, rel))
    keep = ~pad
    torch.testing.assert_close(fast[keep], slow[keep])
    for a, b in zip(fast_grads, slow_grads):
        torch.testing.assert_close(a, b)


def model_of(**options):
    return build_model(ModelConfig.from_dict({**SMALL, "family": "lattice_transformer", "options": options}), 30, 30)


def test_parameter_overhead() -> None:
    base = build_model(ModelConfig.from_dict({**SMALL, "family": "transformer"}), 30, 30)
    count = lambda model: sum(p.numel() for p in model.parameters())
    assert count(model_of(positions="lattice", lsa=False)) == count(base)  # LPE adds nothing
    head_dim = SMALL["d_model"] // SMALL["heads"]
    lsa_overhead = 2 * len(RELATIONS) * head_dim * SMALL["encoder_layers"]  # a^K, a^V per layer
    assert count(model_of(positions="lattice", lsa=True)) - count(base) == lsa_overhead
    assert count(model_of(positions="none", lsa=True)) - count(base) == lsa_overhead


def test_unknown_position_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="options.positions"):
        model_of(positions="absolute")


def lattice_batch(rows: list[list[tuple[int, int]]], seed: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    width = max(map(len, rows)) + 1
    src = torch.full((len(rows), width), PAD_ID)
    starts = torch.full((len(rows), width - 1), SPAN_PAD)
    ends = torch.full((len(rows), width - 1), SPAN_PAD)
    for b, row in enumerate(rows):
        src[b, : len(row)] = torch.randint(4, 30, (len(row),), generator=g)
        src[b, len(row)] = EOS_ID
        starts[b, : len(row)] = torch.tensor([s for s, _ in row])
        ends[b, : len(row)] = torch.tensor([e for _, e in row])
    tgt = torch.randint(4, 30, (len(rows), 5), generator=g)
    return Batch(src=src, src_lengths=(src != PAD_ID).sum(1),
                 tgt_in=torch.cat([torch.full((len(rows), 1), BOS_ID), tgt], 1),
                 tgt_out=torch.cat([tgt, torch.full((len(rows), 1), EOS_ID)], 1),
                 extras={"starts": starts, "ends": ends})


def randomise_relations(model) -> None:
    with torch.no_grad():
        model.encoder.relation_keys.normal_()
        model.encoder.relation_values.normal_()


@pytest.mark.parametrize("positions", ["lattice", "sequence", "none"])
@torch.no_grad()
def test_batched_encoding_equals_one_sentence_at_a_time(positions: str) -> None:
    """Padding, the </s> span and batched relation ids leave every sentence's memory unchanged."""
    torch.manual_seed(0)
    model = model_of(positions=positions, lsa=True).eval()
    randomise_relations(model)
    rows = [FIGURE_EDGES, [(0, 1), (0, 2), (1, 2)], [(0, 4)]]
    batch = lattice_batch(rows)
    memory = model.encode(batch)["memory"]
    for b in range(len(rows)):
        alone = model.encode(batch.select(torch.tensor([b])))["memory"]
        n = len(rows[b]) + 1
        torch.testing.assert_close(memory[b, :n], alone[0, :n], atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_single_character_path_with_lpe_is_the_baseline_encoder() -> None:
    """A lattice of one path of one-character edges has positions 0..N-1 (and </s> at N): LPE
    then equals the normal positional encoding, and without LSA the baseline encoder."""
    torch.manual_seed(0)
    lattice = model_of(positions="lattice", lsa=False).eval()
    base = build_model(ModelConfig.from_dict({**SMALL, "family": "transformer"}), 30, 30).eval()
    base.load_state_dict(lattice.state_dict())
    batch = lattice_batch([[(i, i + 1) for i in range(6)], [(i, i + 1) for i in range(3)]])
    keep = ~batch.src_pad_mask
    torch.testing.assert_close(lattice.encode(batch)["memory"][keep], base.encode(batch)["memory"][keep])
    # with a coarser path (edges of 2 characters) the positions differ from 0..M-1
    coarse = lattice_batch([[(0, 2), (2, 4), (4, 6)]])
    assert not torch.allclose(lattice.encode(coarse)["memory"], base.encode(coarse)["memory"])


@torch.no_grad()
def test_lpe_of_the_subword_example_uses_minimum_unit_positions() -> None:
    """Footnote 1: "th@@ e / the / hous@@ e / house" in minimum subword units (as
    ``workflow_scripts/data/lattice.py inputs --position-unit subword`` writes it): edges th@@ the e
    hous@@ house e start after 0 0 1 2 2 3 units and </s> after all 4, so the encoder's input is
    the scaled token embedding plus PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...)
    at p = 0 0 1 2 2 3 4 (section 3.2 / Vaswani et al.), computed here by hand."""
    model = model_of(positions="lattice", lsa=False).eval()
    edges = [(0, 1), (0, 2), (1, 2), (2, 3), (2, 4), (3, 4)]
    batch = lattice_batch([edges])
    pad = batch.src_pad_mask
    starts, _ = spans_with_eos(batch.extras["starts"], batch.extras["ends"], pad)
    embedded = model.encoder.embed(batch.src, starts)[0]
    d = SMALL["d_model"]
    expected = torch.empty(len(edges) + 1, d)
    for row, p in enumerate([0, 0, 1, 2, 2, 3, 4]):
        for i in range(d // 2):
            expected[row, 2 * i] = math.sin(p / 10000 ** (2 * i / d))
            expected[row, 2 * i + 1] = math.cos(p / 10000 ** (2 * i / d))
    expected += model.encoder.embedding.tokens.weight[batch.src[0]] * math.sqrt(d)
    torch.testing.assert_close(embedded, expected, atol=1e-5, rtol=1e-5)


def test_relation_embeddings_get_gradients_and_training_step_runs() -> None:
    torch.manual_seed(0)
    model = model_of(positions="lattice", lsa=True)
    batch = lattice_batch([FIGURE_EDGES, [(0, 1), (0, 2), (1, 2)]])
    logits, _ = model.decode(batch.tgt_in, model.encode(batch))
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD_ID)
    loss.backward()
    assert model.encoder.relation_keys.grad.abs().sum() > 0
    assert model.encoder.relation_values.grad.abs().sum() > 0


def test_missing_spans_are_an_error() -> None:
    batch = lattice_batch([FIGURE_EDGES])
    batch.extras.pop("ends")
    with pytest.raises(ConfigError, match="ends"):
        model_of().encode(batch)
