"""ESC fusion models (bsfnmt, btfnmt, bbfnmt): incremental decoding, fusion equations, gate."""
from __future__ import annotations

import pytest
import torch

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import Batch
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import beam_search, greedy_search, reorder_state
from nmtmodels.models.esc import BBFNMT, BSFNMT, BTFNMT, ContextGate
from nmtmodels.registry import build_model
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID

FAMILIES = ["bsfnmt", "btfnmt", "bbfnmt"]
SMALL = {"d_model": 32, "heads": 4, "encoder_layers": 2, "decoder_layers": 2, "ffn_dim": 64, "dropout": 0.1, "attention_dropout": 0.1}


def model_of(family: str, vocab: int = 23, **overrides):
    return build_model(ModelConfig.from_dict({**SMALL, "family": family, **overrides}), vocab, vocab + 4)


def padded(rows: list[list[int]]) -> torch.Tensor:
    out = torch.full((len(rows), max(map(len, rows))), PAD_ID)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


def random_batch(src_lengths: list[int], c_lengths: list[int], tgt_len: int, vocab: int = 23, seed: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    src = padded([torch.randint(4, vocab, (n - 1,), generator=g).tolist() + [EOS_ID] for n in src_lengths])
    comp = padded([torch.randint(4, vocab, (n - 1,), generator=g).tolist() + [EOS_ID] for n in c_lengths])
    tgt = torch.randint(4, vocab, (len(src_lengths), tgt_len), generator=g)
    return Batch(src=src, src_lengths=torch.tensor(src_lengths),
                 tgt_in=torch.cat([torch.full((len(src_lengths), 1), BOS_ID), tgt], 1),
                 tgt_out=torch.cat([tgt, torch.full((len(src_lengths), 1), EOS_ID)], 1),
                 extras={"compressed": comp})


@pytest.mark.parametrize("family, gate_after", [*((f, "ffn") for f in FAMILIES), ("btfnmt", "attention"), ("bbfnmt", "attention")])
@pytest.mark.parametrize("normalize_before", [False, True])
@torch.no_grad()
def test_incremental_decoding_equals_full_forward(family: str, gate_after: str, normalize_before: bool) -> None:
    torch.manual_seed(0)
    model = model_of(family, normalize_before=normalize_before, options={"gate_after": gate_after}).eval()
    batch = random_batch([7, 4, 5], [3, 4, 2], tgt_len=6)
    state = model.encode(batch)
    full, full_attention = model.decode(batch.tgt_in, state, need_attention=True)
    cache: dict = {}
    steps, attentions = [], []
    for t in range(batch.tgt_in.size(1)):
        logits, attention = model.decode(batch.tgt_in[:, t : t + 1], state, cache, need_attention=True)
        steps.append(logits)
        attentions.append(attention)
        if t == 0:
            cached = {key: cache["layer0"][key]["k"] for key in cache["layer0"] if key != "self"}
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.cat(attentions, 1), full_attention, atol=1e-6, rtol=1e-5)
    # every memory's keys/values are projected once and reused, not recomputed
    expected = {"memory", "backbone"} if family != "bsfnmt" else {"memory"}
    assert set(cached) == expected
    for key, k in cached.items():
        assert cache["layer0"][key]["k"] is k


@pytest.mark.parametrize("family", FAMILIES)
@torch.no_grad()
def test_beam_search_over_reordered_states_matches_per_sentence_search(family: str) -> None:
    torch.manual_seed(3)
    model = model_of(family).eval()
    batch = random_batch([6, 3, 5], [2, 3, 4], tgt_len=1, seed=4)
    cfg = DecodeConfig(beam=3, max_len_a=0, max_len_b=6, coverage_penalty=0.2)
    together = beam_search(model, batch, cfg)
    for row in range(3):
        one = batch.select(torch.tensor([row]))
        one.src = one.src[:, : int(batch.src_lengths[row])]
        one.extras["compressed"] = one.extras["compressed"][:, : int(one.extras["compressed"].ne(PAD_ID).sum())]
        alone = beam_search(model, one, cfg)[0][0]
        assert alone.tokens == together[row][0].tokens
        assert alone.score == pytest.approx(together[row][0].score, abs=1e-4)
    assert len(greedy_search(model, batch, 0, 5)) == 3


@torch.no_grad()
def test_bsfnmt_memory_is_source_plus_ffn_of_attention_over_backbone() -> None:
    """Eq. 10-11, recomputed with an independent attention over H_c."""
    torch.manual_seed(5)
    model = model_of("bsfnmt").eval()
    batch = random_batch([5, 4], [3, 2], tgt_len=2)
    h_x = model.encoder(batch.src, batch.src_pad_mask)
    c = batch.extras["compressed"]
    h_c = model.encoder(c, c.eq(PAD_ID))
    att = model.fusion.attention
    q = att.q_proj(h_x)
    k, v = att.kv_proj(h_c).chunk(2, dim=-1)
    heads, dh = att.heads, att.head_dim
    split = lambda t: t.view(t.size(0), t.size(1), heads, dh).transpose(1, 2)
    scores = split(q) @ split(k).transpose(-1, -2) / dh**0.5
    scores = scores.masked_fill(c.eq(PAD_ID)[:, None, None, :], float("-inf"))
    mixed = (scores.softmax(-1) @ split(v)).transpose(1, 2).reshape(h_x.shape)
    expected = h_x + model.fusion.ffn(att.out_proj(mixed))
    torch.testing.assert_close(model.encode(batch)["memory"], expected, atol=1e-5, rtol=1e-5)
    # padding of the compressed input changes nothing
    longer = Batch(src=batch.src, src_lengths=batch.src_lengths, extras={"compressed": torch.cat([c, torch.full((2, 3), PAD_ID)], 1)})
    torch.testing.assert_close(model.encode(longer)["memory"], expected, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_bbfnmt_second_attention_reads_fused_source_btfnmt_reads_backbone() -> None:
    torch.manual_seed(6)
    batch = random_batch([5, 4], [3, 2], tgt_len=2)
    bb = model_of("bbfnmt").eval()
    state = bb.encode(batch)
    h_x = bb.encoder(batch.src, batch.src_pad_mask)
    c = batch.extras["compressed"]
    h_c = bb.encoder(c, c.eq(PAD_ID))
    torch.testing.assert_close(state["memory"], h_x)
    torch.testing.assert_close(state["backbone"], bb.fusion(h_x, h_c, c.eq(PAD_ID)))
    assert torch.equal(state["backbone_pad_mask"], batch.src_pad_mask)
    bt = model_of("btfnmt").eval()
    state = bt.encode(batch)
    torch.testing.assert_close(state["backbone"], bt.encoder(c, c.eq(PAD_ID)))
    assert isinstance(bb, BBFNMT) and isinstance(bt, BTFNMT) and bt.fusion is None
    assert isinstance(model_of("bsfnmt"), BSFNMT)


# --- target-side fusion (eq. 12-14), recomputed by hand from a layer's parameters -----------


def ref_norm(norm: torch.nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def ref_attention(att, query: torch.Tensor, memory: torch.Tensor, key_pad: torch.Tensor | None, causal: bool = False):
    """MultiHead(Q, K, V) of Vaswani et al. (eq. 1-3), heads in a Python loop."""
    d = att.head_dim
    q = query @ att.q_proj.weight.T + att.q_proj.bias
    kv = memory @ att.kv_proj.weight.T + att.kv_proj.bias
    k, v = kv[..., : att.heads * d], kv[..., att.heads * d :]
    heads = []
    for h in range(att.heads):
        part = slice(h * d, (h + 1) * d)
        scores = q[..., part] @ k[..., part].transpose(-1, -2) / d**0.5
        if key_pad is not None:
            scores = scores.masked_fill(key_pad[:, None, :], float("-inf"))
        if causal:
            t = scores.size(-1)
            scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        heads.append(scores.softmax(-1) @ v[..., part])
    return torch.cat(heads, -1) @ att.out_proj.weight.T + att.out_proj.bias


def ref_ffn(ffn, x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ ffn.fc1.weight.T + ffn.fc1.bias) @ ffn.fc2.weight.T + ffn.fc2.bias


def ref_sublayer(norm: torch.nn.LayerNorm, pre_norm: bool, x: torch.Tensor, f) -> torch.Tensor:
    """pre-norm x + f(LN(x)); post-norm LN(x + f(x)) (dropout off)."""
    return x + f(ref_norm(norm, x)) if pre_norm else ref_norm(norm, x + f(x))


def ref_gate(gate, c: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """eq. 13-14 with a one-layer MLP: g = sigmoid(W [c; b] + w0), c' = g c + (1 - g) b."""
    g = torch.sigmoid(torch.cat([c, b], -1) @ gate.mlp.weight.T + gate.mlp.bias)
    return g * c + (1 - g) * b


@pytest.mark.parametrize("normalize_before", [False, True])
@pytest.mark.parametrize("gate_after", ["ffn", "attention"])
@torch.no_grad()
def test_backbone_decoder_layer_equals_hand_computation(gate_after: str, normalize_before: bool) -> None:
    """One BTFNMT decoder layer against eq. 7-8 and 12-14 written out with explicit tensor ops.

    ``ffn`` (as printed): c = FFN(MultiHead(H_tgt, H_x, H_x)), b = FFN'(MultiHead'(H_tgt, H_c,
    H_c)), each the stack of an attention and an FFN sub-layer minus H_tgt; g = sigmoid(MLP([c; b]));
    output H_tgt + g c + (1 - g) b.  ``attention``: the gate mixes the two attention outputs,
    then the residual and the one FFN sub-layer."""
    torch.manual_seed(11)
    model = model_of("btfnmt", normalize_before=normalize_before, options={"gate_after": gate_after}).eval()
    layer = model.decoder.layers[0]
    for p in layer.parameters():  # LN weights/biases and gate away from their initial values
        p.add_(0.3 * torch.randn_like(p))
    x, h_x, h_c = torch.randn(2, 4, 32), torch.randn(2, 5, 32), torch.randn(2, 3, 32)
    x_pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    c_pad = torch.tensor([[False] * 3, [False, False, True]])
    pre = normalize_before

    h_tgt = ref_sublayer(layer.self_attn_residual.norm, pre, x, lambda h: ref_attention(layer.self_attn, h, h, None, True))
    if gate_after == "ffn":
        def context(attn, attn_norm, ffn, ffn_norm, memory, pad):  # FFN(MultiHead(H_tgt, M, M)), eq. 7 / 12
            y = ref_sublayer(attn_norm, pre, h_tgt, lambda h: ref_attention(attn, h, memory, pad))
            return ref_sublayer(ffn_norm, pre, y, lambda h: ref_ffn(ffn, h)) - h_tgt
        c = context(layer.cross_attn, layer.cross_attn_residual.norm, layer.ffn, layer.ffn_residual.norm, h_x, x_pad)
        b = context(layer.backbone_attn, layer.backbone_attn_residual.norm, layer.backbone_ffn,
                    layer.backbone_ffn_residual.norm, h_c, c_pad)
        expected = h_tgt + ref_gate(layer.context_gate, c, b)  # eq. 13-14, then eq. 8
    else:
        mixed = ref_sublayer(layer.cross_attn_residual.norm, pre, h_tgt, lambda h: ref_gate(
            layer.context_gate, ref_attention(layer.cross_attn, h, h_x, x_pad), ref_attention(layer.backbone_attn, h, h_c, c_pad)))
        expected = ref_sublayer(layer.ffn_residual.norm, pre, mixed, lambda h: ref_ffn(layer.ffn, h))
    out, _ = layer(x, h_x, x_pad, h_c, c_pad)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_ffn_gate_at_one_is_the_baseline_decoder_layer() -> None:
    """g = 1 in eq. 14 leaves c' = c: the layer is then the baseline Transformer decoder layer
    (eq. 7-8) with the same parameters, whatever the backbone."""
    torch.manual_seed(12)
    model = model_of("btfnmt", normalize_before=True).eval()
    layer = model.decoder.layers[0]
    base = model_of("transformer", normalize_before=True).eval().decoder.layers[0]
    base.load_state_dict({k: v for k, v in layer.state_dict().items() if k in base.state_dict()})
    layer.context_gate.mlp.weight.zero_()
    layer.context_gate.mlp.bias.fill_(100.0)
    x, memory, backbone = torch.randn(2, 4, 32), torch.randn(2, 5, 32), torch.randn(2, 3, 32)
    pad = torch.zeros(2, 5, dtype=torch.bool)
    out, _ = layer(x, memory, pad, backbone, torch.zeros(2, 3, dtype=torch.bool))
    torch.testing.assert_close(out, base(x, memory, pad)[0])


def test_gate_after_parameters_and_config_error() -> None:
    """``ffn`` adds per decoder layer one FFN (2 d f + f + d) and two layer norms (2 x 2 d)
    to ``attention``; an unknown value names the key."""
    def count(model) -> int:
        return sum(p.numel() for p in model.parameters())

    d, f, layers = SMALL["d_model"], SMALL["ffn_dim"], SMALL["decoder_layers"]
    for family in ("btfnmt", "bbfnmt"):
        extra = count(model_of(family, options={"gate_after": "ffn"})) - count(model_of(family, options={"gate_after": "attention"}))
        assert extra == layers * (2 * d * f + f + d + 4 * d)
    assert count(model_of("bsfnmt", options={"gate_after": "attention"})) == count(model_of("bsfnmt"))
    with pytest.raises(ConfigError, match=r"model.options.gate_after: expected one of \['ffn', 'attention'\], got 'both'"):
        model_of("btfnmt", options={"gate_after": "both"})


def test_context_gate_shapes_and_mixture() -> None:
    torch.manual_seed(7)
    for hidden in (0, 16):
        gate = ContextGate(8, hidden)
        c, b = torch.randn(2, 3, 8), torch.randn(2, 3, 8)
        g = gate.gate(c, b)
        assert g.shape == (2, 3, 8)
        assert bool(((g > 0) & (g < 1)).all())
        torch.testing.assert_close(gate(c, b), g * c + (1 - g) * b)
    gate = ContextGate(2)
    with torch.no_grad():
        gate.mlp.weight.zero_()
        gate.mlp.bias.copy_(torch.tensor([0.0, 100.0]))  # g = (0.5, 1)
    c, b = torch.tensor([[[2.0, 3.0]]]), torch.tensor([[[4.0, -1.0]]])
    torch.testing.assert_close(gate(c, b), torch.tensor([[[3.0, 3.0]]]))


def test_missing_compressed_input_and_unknown_option_are_clear_errors() -> None:
    model = model_of("btfnmt")
    batch = random_batch([4], [2], tgt_len=2)
    batch.extras = {}
    with pytest.raises(ConfigError, match="compressed"):
        model.encode(batch)
    with pytest.raises(ConfigError, match="model.options.nope"):
        model_of("bsfnmt", options={"nope": 1})


def test_reorder_state_moves_backbone_with_beams() -> None:
    model = model_of("btfnmt").eval()
    batch = random_batch([4, 3], [2, 3], tgt_len=1)
    state = model.encode(batch)
    moved = reorder_state(dict(state), torch.tensor([1, 1, 0]))
    assert moved["backbone"].shape[0] == 3 and torch.equal(moved["backbone"][2], state["backbone"][0])


# --- length-controlled decoding (eq. 1-3) with the shared beam search's scorers ----------

from nmtmodels.decoding.scorer import CoveragePenalty, GNMTLengthPenalty, HypothesisScorer, RatioLengthLimit  # noqa: E402


def test_length_penalty_and_coverage_penalty_by_hand() -> None:
    # eq. 2: lp = (5 + |S'|)^alpha / 6^alpha; |S'| = 3 tokens + EOS = 4, alpha = 0.6
    assert float(GNMTLengthPenalty(0.6)(torch.tensor(4.0))) == pytest.approx(9**0.6 / 6**0.6)
    assert float(GNMTLengthPenalty(0.6)(torch.tensor(4.0))) == pytest.approx(1.2754245, rel=1e-6)
    # eq. 3: summed attention per source position 0.5, 1.3 (capped at 1), padding ignored
    coverage = torch.tensor([[0.5, 1.3, 0.2]])
    pad = torch.tensor([[False, False, True]])
    assert float(CoveragePenalty(0.2)(coverage, pad)) == pytest.approx(0.2 * -0.6931472, rel=1e-6)
    # eq. 1: s = log P / lp + cp
    scorer = HypothesisScorer(GNMTLengthPenalty(0.6), (CoveragePenalty(0.2),))
    s = scorer.score(torch.tensor([-2.0]), torch.tensor([4]), coverage, pad)
    assert float(s) == pytest.approx(-2.0 / 1.2754245 + 0.2 * -0.6931472, rel=1e-6)


def test_ratio_length_limit_by_hand() -> None:
    limit = RatioLengthLimit(0.5)
    assert limit(torch.tensor([7, 10, 1])).tolist() == [3, 5, 0]
    assert RatioLengthLimit(0.7)(torch.tensor([30])).tolist() == [21]  # float error guarded
    scorer = HypothesisScorer.from_config(DecodeConfig(max_len_a=2, max_len_b=5, max_len_ratio=0.5))
    assert scorer.max_lengths(torch.tensor([7, 40])).tolist() == [3, 20]  # min(2x+5, 0.5x)


@torch.no_grad()
def test_gamma_hard_stop_and_final_scores_recomputed_from_attention() -> None:
    """Beam search with eq. 1-3: no hypothesis passes floor(gamma * |S|) tokens, and each
    score equals log P / lp + cp recomputed from the returned attention."""
    torch.manual_seed(8)
    model = model_of("bsfnmt").eval()
    batch = random_batch([9, 6, 11], [3, 3, 4], tgt_len=1, seed=9)
    # min_len beyond the limit: EOS is blocked, so every output stops exactly at the limit
    cfg = DecodeConfig(beam=3, nbest=2, max_len_a=3, max_len_b=10, min_len=50, max_len_ratio=0.5,
                       length_penalty=0.6, coverage_penalty=0.3, return_attention=True)
    results = beam_search(model, batch, cfg)
    for row, hyps in enumerate(results):
        assert len(hyps) == 2
        for hyp in hyps:
            assert len(hyp.tokens) == (int(batch.src_lengths[row]) - 1) // 2
            lp = ((5 + len(hyp.tokens) + 1) / 6) ** 0.6
            cp = 0.3 * torch.log(hyp.attention.sum(0).clamp(max=1.0)).sum().item()
            assert hyp.score == pytest.approx(hyp.log_prob / lp + cp, abs=1e-4)
    # free decoding is also capped by gamma
    free = beam_search(model, batch, DecodeConfig(beam=2, max_len_a=3, max_len_b=10, max_len_ratio=0.4))
    for row, hyps in enumerate(free):
        assert len(hyps[0].tokens) <= int(0.4 * (int(batch.src_lengths[row]) - 1))


# --- command line: an ESC family with --extra-tokens; --init-from; --max-len-ratio --------


def test_cli_trains_fusion_model_initialises_from_checkpoint_and_caps_by_ratio(tmp_path, capsys) -> None:
    from nmtmodels import cli
    from nmtmodels.checkpoint import load_checkpoint
    from nmtmodels.tests.copy_task_fixtures import LETTERS, copy_task, write_lines

    threads = torch.get_num_threads()
    try:
        src, tgt = copy_task(60, seed=2, tokens=list(LETTERS))
        write_lines(tmp_path / "train.src", src)
        write_lines(tmp_path / "train.tgt", tgt)
        write_lines(tmp_path / "train.c", [" ".join(line.split()[::2]) for line in src])
        (tmp_path / "exp.yaml").write_text(
            "model: {family: bbfnmt, d_model: 16, heads: 2, ffn_dim: 32, encoder_layers: 1, decoder_layers: 1}\n"
            "train: {max_tokens: 300, max_updates: 2, num_threads: 1, warmup_updates: 1}\ndecode: {beam: 2}\n")
        assert cli.vocab_main(["--inputs", str(tmp_path / "train.src"), "--output", str(tmp_path / "vocab")]) == 0
        common = ["--config", str(tmp_path / "exp.yaml"), "--train-src", str(tmp_path / "train.src"),
                  "--train-tgt", str(tmp_path / "train.tgt"), "--src-vocab", str(tmp_path / "vocab"),
                  "--tgt-vocab", str(tmp_path / "vocab"), "--device", "cpu",
                  "--extra-tokens", f"compressed={tmp_path / 'train.c'}:{tmp_path / 'train.c'}"]
        assert cli.train_main([*common, "--out-dir", str(tmp_path / "a")]) == 0
        first = load_checkpoint(str(tmp_path / "a" / "checkpoint_last.pt"))["model"]
        # --init-from and one update at a vanishing learning rate (warm-up of 1e9 updates): the
        # parameters stay those of the first run, not a fresh initialisation (other seed)
        assert cli.train_main([*common, "--out-dir", str(tmp_path / "b"), "--init-from", str(tmp_path / "a" / "checkpoint_last.pt"),
                               "--set", "train.max_updates=1", "--set", "train.warmup_updates=1000000000",
                               "--set", "train.seed=7"]) == 0
        second = load_checkpoint(str(tmp_path / "b" / "checkpoint_last.pt"))["model"]
        for key in first:
            torch.testing.assert_close(second[key], first[key], atol=1e-6, rtol=0)
        # a different family cannot be initialised from it: clear error, exit 2
        assert cli.train_main([*common[:-2], "--out-dir", str(tmp_path / "c"), "--set", "model.family=transformer",
                               "--init-from", str(tmp_path / "a" / "checkpoint_last.pt")]) == 2
        assert "--init-from" in capsys.readouterr().err
        # translation with the compressed input and gamma: every output within floor(0.5 |x|)
        assert cli.translate_main(["--pretokenized", "--checkpoint", str(tmp_path / "a" / "checkpoint_last.pt"),
                                   "--input", str(tmp_path / "train.src"),
                                   "--extra-tokens", f"compressed={tmp_path / 'train.c'}", "--max-len-ratio", "0.5",
                                   "--min-len", "100", "--output", str(tmp_path / "out")]) == 0
        out = (tmp_path / "out").read_text().splitlines()
        assert [len(o.split()) for o in out] == [len(s.split()) // 2 for s in src]
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("family", FAMILIES)
@torch.no_grad()
def test_features_only_states_projected_by_the_output_layer_are_the_logits(family: str) -> None:
    torch.manual_seed(0)
    model = model_of(family).eval()
    batch = random_batch([7, 4], [3, 4], tgt_len=5)
    torch.testing.assert_close(model.output_layer(model(batch, features_only=True)), model(batch))
