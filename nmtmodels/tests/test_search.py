"""Beam and greedy search against exhaustive search and full-forward rescoring on a toy model."""
from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import Tensor, nn

from nmtmodels.config import ConfigError, from_dict
from nmtmodels.data import Batch
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.scorer import CoveragePenalty, GNMTLengthPenalty, HypothesisScorer
from nmtmodels.decoding.search import beam_search, greedy_search
from nmtmodels.models.base import Seq2SeqModel
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID

VOCAB = 6  # <pad> <s> </s> <unk> a b: the search may emit <unk>, a, b and </s>
OUTPUT_TOKENS = (3, 4, 5)


class ToyModel(Seq2SeqModel):
    """A tiny attentional RNN in float64 that follows the cache protocol.

    Its next-token distribution depends on the whole prefix (through the hidden state) and
    on the source (through masked dot-product attention), so scores are non-trivial.
    ``eos_bias`` shifts the EOS logit to force long or short outputs.
    """

    def __init__(self, seed: int = 0, dim: int = 8, eos_bias: float = 0.0, max_target_positions: int = 1024):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        param = lambda *shape, scale=1.0: nn.Parameter(torch.randn(*shape, generator=g, dtype=torch.float64) * scale)
        self.src_embed = param(VOCAB, dim)
        self.tgt_embed = param(VOCAB, dim)
        self.w_in = param(2 * dim, dim, scale=0.7)
        self.w_hidden = param(dim, dim, scale=0.7)
        self.w_query = param(dim, dim)
        self.w_out = param(dim, VOCAB, scale=1.5)
        self.eos_bias = eos_bias
        self.max_target_positions = max_target_positions
        self.decode_calls = 0

    def max_positions(self) -> tuple[int, int]:
        return (1024, self.max_target_positions)

    def encode(self, batch: Batch) -> dict[str, Tensor]:
        return {"memory": torch.tanh(self.src_embed[batch.src]), "memory_pad_mask": batch.src_pad_mask}

    def decode(self, tgt_in, encoder_out, cache=None, need_attention=False):
        self.decode_calls += 1
        memory, pad_mask = encoder_out["memory"], encoder_out["memory_pad_mask"]
        hidden = cache.get("hidden") if cache is not None else None
        if hidden is None:
            hidden = memory.new_zeros(memory.size(0), memory.size(-1))
        logits, attentions = [], []
        for t in range(tgt_in.size(1)):
            embedded = self.tgt_embed[tgt_in[:, t]]
            query = torch.tanh((embedded + hidden) @ self.w_query)
            energy = torch.einsum("bsd,bd->bs", memory, query).masked_fill(pad_mask, -math.inf)
            attention = energy.softmax(-1)
            context = torch.einsum("bs,bsd->bd", attention, memory)
            hidden = torch.tanh(torch.cat([embedded, context], -1) @ self.w_in + hidden @ self.w_hidden)
            step_logits = hidden @ self.w_out
            step_logits[:, EOS_ID] += self.eos_bias
            logits.append(step_logits)
            attentions.append(attention)
        if cache is not None:
            cache["hidden"] = hidden
            cache["steps"] = cache.get("steps", 0) + tgt_in.size(1)  # a non-tensor entry
        return torch.stack(logits, 1), (torch.stack(attentions, 1) if need_attention else None)


def make_batch(sources: list[list[int]]) -> Batch:
    """Rows get EOS appended and are right-padded."""
    rows = [row + [EOS_ID] for row in sources]
    width = max(map(len, rows))
    src = torch.tensor([row + [PAD_ID] * (width - len(row)) for row in rows])
    return Batch(src=src, src_lengths=torch.tensor([len(row) for row in rows]))


@torch.no_grad()
def rescore(model: ToyModel, batch: Batch, row: int, outputs: list[list[int]]) -> tuple[Tensor, Tensor]:
    """Full teacher-forced pass (no cache): log P(y + EOS | x) and attention (n, T, S) for each output."""
    single = batch.select(torch.tensor([row]))
    n, length = len(outputs), max(map(len, outputs)) + 1
    tgt_in = torch.full((n, length), PAD_ID)
    tgt_out = torch.full((n, length), PAD_ID)
    for i, y in enumerate(outputs):
        tgt_in[i, : len(y) + 1] = torch.tensor([BOS_ID, *y])
        tgt_out[i, : len(y) + 1] = torch.tensor([*y, EOS_ID])
    encoder_out = model.encode(single.select(torch.zeros(n, dtype=torch.long)))
    logits, attention = model.decode(tgt_in, encoder_out, need_attention=True)
    token_lp = logits.log_softmax(-1).gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)
    mask = tgt_out.ne(PAD_ID)
    return token_lp.masked_fill(~mask, 0.0).sum(-1), attention * mask.unsqueeze(-1)


def exhaustive(model, batch, row, max_tokens, *, min_len=1, alpha=0.0, beta=0.0):
    """Every output of min_len..max_tokens tokens, scored by ESC eq. 1, best first."""
    outputs = [list(y) for n in range(min_len, max_tokens + 1) for y in itertools.product(OUTPUT_TOKENS, repeat=n)]
    log_probs, attention = rescore(model, batch, row, outputs)
    lengths = torch.tensor([len(y) + 1 for y in outputs], dtype=torch.float64)
    scores = log_probs / ((5 + lengths) / 6) ** alpha
    if beta:
        real = batch.src_lengths[row]
        coverage = attention.sum(1)[:, :real]
        scores = scores + beta * coverage.clamp(max=1.0).log().sum(-1)
    order = scores.argsort(descending=True)
    return [(outputs[i], float(scores[i]), float(log_probs[i])) for i in order]


SOURCES = [[4, 5, 3, 4], [5, 5], [3, 4, 5, 5, 4, 3, 5]]


@pytest.mark.parametrize("alpha,beta", [(0.0, 0.0), (1.0, 0.0), (0.6, 0.4)])
def test_large_beam_equals_exhaustive_search(alpha, beta):
    model = ToyModel(seed=1)
    batch = make_batch(SOURCES)
    max_tokens, nbest = 4, 10
    cfg = DecodeConfig(beam=130, nbest=nbest, length_penalty=alpha, coverage_penalty=beta, max_len_a=0.0, max_len_b=max_tokens)
    results = beam_search(model, batch, cfg)
    assert len(results) == len(SOURCES)
    for row, hypotheses in enumerate(results):
        reference = exhaustive(model, batch, row, max_tokens, alpha=alpha, beta=beta)[:nbest]
        assert [h.tokens for h in hypotheses] == [y for y, _, _ in reference]
        assert [h.score for h in hypotheses] == pytest.approx([s for _, s, _ in reference], abs=1e-9)
        assert [h.log_prob for h in hypotheses] == pytest.approx([lp for _, _, lp in reference], abs=1e-9)
        assert all(a.score >= b.score for a, b in itertools.pairwise(hypotheses))


def test_the_exhaustive_comparison_is_not_vacuous():
    # With only 10 prefixes kept per step beam search misses part of the exhaustive top 10,
    # so the toy model makes the search problem hard enough for the test above to mean something.
    model = ToyModel(seed=1)
    batch = make_batch(SOURCES)
    cfg = DecodeConfig(beam=10, nbest=10, length_penalty=0.0, max_len_a=0.0, max_len_b=4)
    found = [[h.tokens for h in row] for row in beam_search(model, batch, cfg)]
    top10 = [[y for y, _, _ in exhaustive(model, batch, row, 4)[:10]] for row in range(len(SOURCES))]
    assert found != top10


def test_cached_scores_equal_full_forward_rescoring():
    model = ToyModel(seed=2)
    batch = make_batch(SOURCES)
    cfg = DecodeConfig(beam=4, nbest=4, length_penalty=1.0, max_len_a=1.0, max_len_b=3)
    for row, hypotheses in enumerate(beam_search(model, batch, cfg)):
        log_probs, _ = rescore(model, batch, row, [h.tokens for h in hypotheses])
        for h, log_prob in zip(hypotheses, log_probs.tolist()):
            assert len(h.positional_scores) == len(h.tokens) + 1
            assert h.log_prob == pytest.approx(log_prob, abs=1e-9)
            assert h.score == pytest.approx(log_prob / ((5 + len(h.tokens) + 1) / 6), abs=1e-9)


def test_batched_search_equals_each_row_alone():
    model = ToyModel(seed=3)
    batch = make_batch(SOURCES)
    cfg = DecodeConfig(beam=3, nbest=3, length_penalty=0.8, coverage_penalty=0.2, return_attention=True)
    together = beam_search(model, batch, cfg)
    for row in range(len(SOURCES)):
        alone = beam_search(model, make_batch([SOURCES[row]]), cfg)[0]
        assert [h.tokens for h in together[row]] == [h.tokens for h in alone]
        assert [h.score for h in together[row]] == pytest.approx([h.score for h in alone], abs=1e-9)
        for a, b in zip(together[row], alone):
            assert a.attention.shape == (len(a.tokens) + 1, len(SOURCES[row]) + 1)
            torch.testing.assert_close(a.attention, b.attention)
    greedy_together = greedy_search(model, batch)
    for row in range(len(SOURCES)):
        assert greedy_together[row].tokens == greedy_search(model, make_batch([SOURCES[row]]))[0].tokens


def test_the_log_softmax_in_chunks_of_rows_finds_what_one_chunk_finds(monkeypatch):
    """Chunks of 2 rows (a batch's rows and beams split across chunks, with rows at their length
    limit and EOS blocked at the first step) against one chunk for the whole batch."""
    from nmtmodels.decoding import search

    model, batch = ToyModel(seed=3), make_batch(SOURCES)
    cfg = DecodeConfig(beam=3, nbest=2, length_penalty=0.8, min_len=2, max_len_a=0.5, max_len_b=1)
    found = {}
    for rows in (2, 10**6):
        monkeypatch.setattr(search, "ROWS_PER_CHUNK", rows)
        beams = [[(h.tokens, h.score, h.positional_scores) for h in row] for row in beam_search(model, batch, cfg)]
        greedy = [(h.tokens, h.positional_scores) for h in greedy_search(model, batch, 0.5, 1, min_len=2)]
        found[rows] = beams, greedy
    assert found[2] == found[10**6]
    limits = [int(0.5 * len(source) + 1) for source in SOURCES]  # 3, 2, 4 tokens
    assert any(len(h[0]) == limit for row, limit in zip(found[2][0], limits) for h in row)  # ended by the limit


def test_best_tokens_are_the_restricted_log_softmax_of_whole_rows(monkeypatch):
    from nmtmodels.decoding import search

    monkeypatch.setattr(search, "ROWS_PER_CHUNK", 3)
    logits = torch.randn(7, VOCAB, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    forced = torch.tensor([False, True, False, False, False, True, False])
    values, tokens = search._best_tokens(logits.clone(), 4, 1, 1, forced)
    expected = logits.log_softmax(-1)  # by hand: whole rows, then the restrictions of step 1 with min_len 1
    expected[:, [PAD_ID, BOS_ID, EOS_ID]] = -math.inf
    expected[forced] = -math.inf
    expected[forced, EOS_ID] = logits.log_softmax(-1)[forced, EOS_ID]
    top = expected.topk(4, dim=1)
    torch.testing.assert_close(values, top.values, rtol=0, atol=0)
    assert torch.equal(tokens[~forced], top.indices[~forced]) and tokens[forced, 0].eq(EOS_ID).all()
    best, best_token = search._best_tokens(logits.clone(), 1, 1, 1, forced)
    assert torch.equal(best_token[:, 0][~forced], expected.argmax(-1)[~forced])


@pytest.mark.parametrize("seed", [0, 4, 5])
def test_greedy_equals_beam_one(seed):
    model = ToyModel(seed=seed)
    batch = make_batch(SOURCES)
    greedy = greedy_search(model, batch, 1.5, 2, return_attention=True)
    beam = beam_search(model, batch, DecodeConfig(beam=1, length_penalty=0.0, max_len_a=1.5, max_len_b=2, return_attention=True))
    for g, (b,) in zip(greedy, beam):
        assert g.tokens == b.tokens
        assert g.score == pytest.approx(b.score, abs=1e-9)
        assert g.positional_scores == pytest.approx(b.positional_scores, abs=1e-12)
        torch.testing.assert_close(g.attention, b.attention)
    # greedy picks the arg-max at every step: check against the full-forward distribution
    for row, g in enumerate(greedy):
        prefix = [BOS_ID]
        encoder_out = model.encode(batch.select(torch.tensor([row])))
        for token in g.tokens + [EOS_ID]:
            logits, _ = model.decode(torch.tensor([prefix]), encoder_out)
            allowed = logits[0, -1].clone()
            allowed[[PAD_ID, BOS_ID]] = -math.inf
            if len(prefix) == 1:
                allowed[EOS_ID] = -math.inf  # min_len 1
            if token != EOS_ID or len(prefix) - 1 < int(1.5 * len(SOURCES[row]) + 2):
                assert int(allowed.argmax()) == token
            prefix.append(token)


def test_max_length_is_a_times_source_plus_b():
    model = ToyModel(seed=0, eos_bias=-30.0)  # never wants to stop
    batch = make_batch(SOURCES)
    for a, b in [(1.2, 10), (0.5, 1), (0.0, 3)]:
        for beam in (1, 3):
            cfg = DecodeConfig(beam=beam, nbest=beam, max_len_a=a, max_len_b=b)
            for source, hypotheses in zip(SOURCES, beam_search(model, batch, cfg)):
                expected = math.floor(a * len(source) + b + 1e-9)
                assert [len(h.tokens) for h in hypotheses] == [expected] * beam
        for source, hypothesis in zip(SOURCES, greedy_search(model, batch, a, b)):
            assert len(hypothesis.tokens) == math.floor(a * len(source) + b + 1e-9)


def test_max_length_respects_model_positions():
    model = ToyModel(seed=0, eos_bias=-30.0, max_target_positions=5)
    results = beam_search(model, make_batch(SOURCES), DecodeConfig(beam=2, max_len_a=2.0, max_len_b=10))
    assert [len(h.tokens) for (h,) in results] == [4, 4, 4]  # BOS + 4 tokens = 5 decoder inputs


def test_min_length_is_respected():
    model = ToyModel(seed=0, eos_bias=30.0)  # wants to stop at once
    batch = make_batch(SOURCES)
    for min_len in (0, 1, 3):
        results = beam_search(model, batch, DecodeConfig(beam=3, nbest=2, min_len=min_len))
        assert all(len(h.tokens) == min_len for row in results for h in row[:1])
        assert all(len(h.tokens) >= min_len for row in results for h in row)
        assert [len(h.tokens) for h in greedy_search(model, batch, min_len=min_len)] == [min_len] * len(SOURCES)


@torch.no_grad()
def prefix_log_probs(model: ToyModel, batch: Batch, row: int, outputs: list[list[int]]) -> list[float]:
    """Teacher-forced log P(y | x) of each output without an EOS (all of the same length)."""
    single = batch.select(torch.tensor([row]))
    encoder_out = model.encode(single.select(torch.zeros(len(outputs), dtype=torch.long)))
    tgt_in = torch.tensor([[BOS_ID, *y[:-1]] for y in outputs])
    logits, _ = model.decode(tgt_in, encoder_out)
    lps = logits.log_softmax(-1).gather(-1, torch.tensor(outputs).unsqueeze(-1)).squeeze(-1)
    return lps.sum(-1).tolist()


def test_rows_whose_beams_never_finish_get_their_best_unfinished_hypothesis():
    """EOS has probability 0 (logit -inf), so no beam can finish at the length limit: every
    row still gets one hypothesis, the most probable prefix of the limit's length."""
    model = ToyModel(seed=1, eos_bias=-math.inf)
    batch = make_batch(SOURCES)
    cfg = DecodeConfig(beam=9, length_penalty=1.0, max_len_a=0.0, max_len_b=2)  # 9 = every 2-token prefix
    results = beam_search(model, batch, cfg)
    assert [len(row) for row in results] == [1, 1, 1]
    for row, (hypothesis,) in enumerate(results):
        outputs = [list(y) for y in itertools.product(OUTPUT_TOKENS, repeat=2)]
        scores = prefix_log_probs(model, batch, row, outputs)
        best = max(range(len(outputs)), key=scores.__getitem__)
        assert not hypothesis.finished
        assert hypothesis.tokens == outputs[best]
        assert hypothesis.score == pytest.approx(scores[best], abs=1e-9)  # log P, no length penalty
        assert len(hypothesis.positional_scores) == 2 and hypothesis.log_prob == pytest.approx(scores[best], abs=1e-9)
    assert all(h.finished for row in beam_search(ToyModel(seed=1), batch, cfg) for h in row)


def test_nan_model_still_gives_one_hypothesis_per_row():
    model = ToyModel(seed=1)
    with torch.no_grad():
        model.w_out.fill_(math.nan)
    batch = make_batch(SOURCES)
    for cfg in (DecodeConfig(beam=3, nbest=2), DecodeConfig(beam=2, early_stop="beam"), DecodeConfig(beam=2, early_stop="top")):
        results = beam_search(model, batch, cfg)
        assert [len(row) for row in results] == [1, 1, 1]
        assert all(not row[0].finished for row in results)
    greedy = greedy_search(model, batch, 0.0, 3)
    assert len(greedy) == 3 and all(h is not None and len(h.tokens) <= 3 for h in greedy)


def test_greedy_ends_at_the_limit_even_if_eos_is_impossible():
    model = ToyModel(seed=1, eos_bias=-math.inf)
    decode = model.decode

    def bounded(*args, **kwargs):  # the old search looped for ever here (argmax over -inf picked PAD)
        assert model.decode_calls < 50, "greedy search did not stop at its length limit"
        return decode(*args, **kwargs)

    model.decode = bounded
    hypotheses = greedy_search(model, make_batch(SOURCES), 0.0, 3)
    assert [len(h.tokens) for h in hypotheses] == [3, 3, 3]
    assert all(PAD_ID not in h.tokens for h in hypotheses)


def test_gamma_hard_stop():
    model = ToyModel(seed=0, eos_bias=-30.0)
    batch = make_batch(SOURCES)
    cfg = DecodeConfig(beam=2, max_len_a=2.0, max_len_b=10, max_len_ratio=0.7)
    results = beam_search(model, batch, cfg)
    # |S| = 4, 2, 7 tokens (EOS not counted): floor(0.7 |S|) = 2, 1, 4
    assert [len(h.tokens) for (h,) in results] == [2, 1, 4]
    # the limit wins over min_len: floor(0.3 |S|) = 1, 0, 2 although min_len is 3
    eager = ToyModel(seed=0, eos_bias=30.0)
    results = beam_search(eager, batch, DecodeConfig(beam=2, min_len=3, max_len_ratio=0.3))
    assert [len(h.tokens) for (h,) in results] == [1, 0, 2]


def test_coverage_penalty_matches_hand_computation():
    # attention p[j, i] for 3 target steps over 4 source positions, the last one padding
    attention = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.2, 0.7, 0.1, 0.0], [0.1, 0.6, 0.3, 0.0]])
    pad = torch.tensor([False, False, False, True])
    # sums over j: 0.8, 1.6 -> capped at 1.0, 0.6
    expected = 0.4 * (math.log(0.8) + math.log(1.0) + math.log(0.6))
    value = CoveragePenalty(0.4)(attention.sum(0, keepdim=True), pad.unsqueeze(0))
    assert float(value) == pytest.approx(expected, rel=1e-6)


def test_reported_score_is_esc_equation_1():
    model = ToyModel(seed=6)
    batch = make_batch(SOURCES)
    alpha, beta = 0.7, 0.5
    cfg = DecodeConfig(beam=3, nbest=3, length_penalty=alpha, coverage_penalty=beta, return_attention=True)
    for hypotheses in beam_search(model, batch, cfg):
        for h in hypotheses:
            lp = ((5 + len(h.tokens) + 1) / (5 + 1)) ** alpha
            cp = beta * sum(math.log(min(float(c), 1.0)) for c in h.attention.sum(0))
            assert h.score == pytest.approx(h.log_prob / lp + cp, abs=1e-9)


class NoEarlyStop(HypothesisScorer):
    def bound(self, log_probs, max_lengths):
        return torch.full_like(log_probs, math.inf)


# (2, 0): the exact bound never prunes here, but a heuristic bound (lp of the current
# length instead of the longest possible one) changes this case's result.
@pytest.mark.parametrize("alpha,beta,stops_sooner", [(0.0, 0.0, True), (1.0, 0.0, True), (2.0, 0.0, False), (1.0, 0.1, True)])
def test_early_stopping_is_exact(alpha, beta, stops_sooner):
    cfg = DecodeConfig(beam=3, nbest=2, length_penalty=alpha, coverage_penalty=beta, max_len_a=2.0, max_len_b=5)
    batch = make_batch(SOURCES)
    model = ToyModel(seed=7)
    early = beam_search(model, batch, cfg)
    calls_early, model.decode_calls = model.decode_calls, 0
    full = beam_search(model, batch, cfg, scorer=NoEarlyStop(**vars(HypothesisScorer.from_config(cfg))))
    assert (model.decode_calls > calls_early) == stops_sooner
    for a, b in zip(early, full):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-9)


@torch.no_grad()
def reference_beam_search(model: ToyModel, batch: Batch, row: int, cfg: DecodeConfig) -> tuple[list, int]:
    """One row, plain Python, every prefix rescored from scratch: the module doc's expansion
    and the ``beam`` / ``top`` stop rules.  Returns the nbest (tokens, score) and the steps run."""
    single = batch.select(torch.tensor([row]))
    limit = math.floor(cfg.max_len_a * (int(single.src_lengths[0]) - 1) + cfg.max_len_b + 1e-6)
    lp = lambda n: ((5 + n) / 6) ** cfg.length_penalty
    live, finished, eos_count, top_eos = [([], 0.0)], [], 0, False
    for step in itertools.count(1):
        candidates = []
        for beam, (prefix, log_p) in enumerate(live):
            tgt_in = torch.tensor([[BOS_ID, *prefix]])
            logits, _ = model.decode(tgt_in, model.encode(single))
            next_lp = logits[0, -1].log_softmax(-1)
            for token in (*OUTPUT_TOKENS, EOS_ID):
                if (token == EOS_ID and step <= cfg.min_len and step <= limit) or (token != EOS_ID and step > limit):
                    continue
                candidates.append((log_p + float(next_lp[token]), beam, token))
        candidates.sort(key=lambda c: -c[0])
        candidates = candidates[: 2 * cfg.beam]
        for log_p, beam, token in candidates[: cfg.beam]:
            if token == EOS_ID:
                prefix = live[beam][0]
                finished.append((prefix, log_p / lp(len(prefix) + 1)))
                eos_count += 1
        top_eos = top_eos or candidates[0][2] == EOS_ID
        live = [(live[beam][0] + [token], log_p) for log_p, beam, token in candidates if token != EOS_ID][: cfg.beam]
        stop = eos_count >= cfg.beam if cfg.early_stop == "beam" else top_eos and len(finished) >= cfg.nbest
        if stop or step > limit:
            return sorted(finished, key=lambda h: -h[1])[: cfg.nbest], step


@pytest.mark.parametrize("rule", ["beam", "top"])
@pytest.mark.parametrize("alpha,nbest", [(0.0, 1), (1.0, 2), (0.6, 3)])
def test_heuristic_early_stop_rules_equal_a_reference_search(rule, alpha, nbest):
    cfg = DecodeConfig(beam=3, nbest=nbest, length_penalty=alpha, max_len_a=1.5, max_len_b=3, early_stop=rule)
    batch = make_batch(SOURCES)
    for seed, eos_bias in itertools.product((7, 8), (-0.5, 0.0, 0.5)):
        model = ToyModel(seed=seed, eos_bias=eos_bias)
        results = beam_search(model, batch, cfg)
        for row, hypotheses in enumerate(results):
            reference, _ = reference_beam_search(model, batch, row, cfg)
            assert [h.tokens for h in hypotheses] == [tokens for tokens, _ in reference]
            assert [h.score for h in hypotheses] == pytest.approx([score for _, score in reference], abs=1e-9)


def test_heuristic_rules_stop_sooner_and_can_lose_the_best():
    batch = make_batch(SOURCES)

    def search(eos_bias: float, rule: str) -> tuple[int, list[list[int]]]:
        model = ToyModel(seed=8, eos_bias=eos_bias)
        cfg = DecodeConfig(beam=3, length_penalty=1.0, max_len_a=1.5, max_len_b=3, early_stop=rule)
        results = beam_search(model, batch, cfg)
        return model.decode_calls, [row[0].tokens for row in results]

    calls = {rule: search(0.5, rule)[0] for rule in ("exact", "beam", "top")}
    assert calls["top"] < calls["beam"] < calls["exact"]
    assert search(-0.5, "beam")[1] != search(-0.5, "exact")[1]


def test_search_restores_training_mode_and_uses_eval():
    model = ToyModel(seed=0)
    model.train()
    seen = []
    original = model.decode
    model.decode = lambda *args, **kwargs: (seen.append(model.training), original(*args, **kwargs))[1]
    beam_search(model, make_batch(SOURCES), DecodeConfig(beam=2))
    greedy_search(model, make_batch(SOURCES))
    assert seen and not any(seen)
    assert model.training


def test_attention_is_requested_only_when_needed():
    model = ToyModel(seed=0)
    flags = []
    original = model.decode
    model.decode = lambda *args, **kwargs: (flags.append(kwargs.get("need_attention", False)), original(*args, **kwargs))[1]
    beam_search(model, make_batch(SOURCES), DecodeConfig(beam=2))
    assert flags and not any(flags)
    flags.clear()
    beam_search(model, make_batch(SOURCES), DecodeConfig(beam=2, coverage_penalty=0.2))
    assert flags and all(flags)


def test_model_without_attention_is_a_clear_error():
    model = ToyModel(seed=0)
    original = model.decode
    model.decode = lambda *args, **kwargs: (original(*args, **kwargs)[0], None)
    with pytest.raises(RuntimeError, match="returned no attention"):
        beam_search(model, make_batch(SOURCES), DecodeConfig(coverage_penalty=0.2))


def test_decode_config_validation_names_the_key():
    assert from_dict(DecodeConfig, {"beam": 5, "nbest": 2}, "decode").beam == 5
    with pytest.raises(ConfigError, match=r"decode\.nbest"):
        from_dict(DecodeConfig, {"beam": 2, "nbest": 3}, "decode")
    with pytest.raises(ConfigError, match=r"decode\.length_penalty"):
        from_dict(DecodeConfig, {"length_penalty": -1.0}, "decode")
    with pytest.raises(ConfigError, match=r"decode\.bem.*beam"):
        from_dict(DecodeConfig, {"bem": 4}, "decode")
    with pytest.raises(ConfigError, match=r"decode\.early_stop: must be one of exact, beam, top, got 'fast'"):
        from_dict(DecodeConfig, {"early_stop": "fast"}, "decode")
    with pytest.raises(ConfigError, match=r"decode\.nbest"):  # beam_search on its own checks what it is given
        beam_search(ToyModel(seed=0), make_batch(SOURCES), DecodeConfig(beam=2, nbest=3))


def test_gnmt_length_penalty_values():
    lengths = torch.tensor([1.0, 4.0, 19.0])
    assert GNMTLengthPenalty(1.0)(lengths).tolist() == pytest.approx([1.0, 1.5, 4.0])
    assert GNMTLengthPenalty(0.5)(lengths).tolist() == pytest.approx([1.0, 1.5**0.5, 2.0])


# --- with the real Transformer, in float64 so near-ties cannot flip -----------------------


@pytest.fixture(scope="module")
def transformer():
    registry = pytest.importorskip("nmtmodels.registry")
    config = pytest.importorskip("nmtmodels.config")
    cfg = config.ModelConfig.from_dict(
        {"preset": "tiny", "d_model": 32, "heads": 4, "ffn_dim": 64, "encoder_layers": 2, "decoder_layers": 2, "dropout": 0.0}
    )
    torch.manual_seed(11)
    return registry.build_model(cfg, 13, 11).double().eval()


def transformer_batch() -> Batch:
    return make_batch([[4, 9, 7, 12, 5], [10, 3], [6, 6, 8, 11, 4, 5, 9, 10]])


def test_transformer_cached_beam_scores_equal_full_forward(transformer):
    batch = transformer_batch()
    cfg = DecodeConfig(beam=4, nbest=3, length_penalty=0.6, coverage_penalty=0.3, return_attention=True)
    for row, hypotheses in enumerate(beam_search(transformer, batch, cfg)):
        single = batch.select(torch.tensor([row] * len(hypotheses)))
        length = max(len(h.tokens) for h in hypotheses) + 1
        tgt_in = torch.full((len(hypotheses), length), PAD_ID)
        tgt_out = torch.full((len(hypotheses), length), PAD_ID)
        for i, h in enumerate(hypotheses):
            tgt_in[i, : len(h.tokens) + 1] = torch.tensor([BOS_ID, *h.tokens])
            tgt_out[i, : len(h.tokens) + 1] = torch.tensor([*h.tokens, EOS_ID])
        with torch.no_grad():
            logits, attention = transformer.decode(tgt_in, transformer.encode(single), need_attention=True)
        token_lp = logits.log_softmax(-1).gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)
        for i, h in enumerate(hypotheses):
            n = len(h.tokens) + 1
            assert h.positional_scores == pytest.approx(token_lp[i, :n].tolist(), abs=1e-9)
            torch.testing.assert_close(h.attention, attention[i, :n, : int(batch.src_lengths[row])])


def test_transformer_batched_equals_alone_and_greedy_equals_beam_one(transformer):
    batch = transformer_batch()
    cfg = DecodeConfig(beam=3, nbest=2, length_penalty=1.0)
    together = beam_search(transformer, batch, cfg)
    greedy = greedy_search(transformer, batch)
    beam_one = beam_search(transformer, batch, DecodeConfig(beam=1, length_penalty=0.0))
    for row in range(batch.size):
        alone = batch.select(torch.tensor([row]))
        assert [h.tokens for h in together[row]] == [h.tokens for h in beam_search(transformer, alone, cfg)[0]]
        assert greedy[row].tokens == greedy_search(transformer, alone)[0].tokens == beam_one[row][0].tokens


@pytest.mark.parametrize("settings", [
    {"length_penalty": 0.0, "max_len_ratio": 0.3},
    {"length_penalty": 2.0},
    {"length_penalty": 0.0, "coverage_penalty": 0.5},
    {"length_penalty": 1.0, "coverage_penalty": 0.2, "max_len_ratio": 0.5},
])
def test_beam_one_of_a_data_set_honours_every_setting_of_beam_search(settings):
    """Beam 1 over a data set (the translator, validation, the ESC compressor) gives what
    beam_search with beam 1 gives: the ratio cap, the length and coverage penalties are kept
    (before, greedy search dropped all three)."""
    from nmtmodels.data import ParallelDataset, RaggedBuilder
    from nmtmodels.decoding.search import translate_dataset

    model = ToyModel(seed=1, eos_bias=1.0)
    sources = SOURCES + [[4, 4, 5, 3, 3, 5, 4, 4, 5, 3], [3, 5]]
    builder = RaggedBuilder()
    for row in sources:
        builder.append(row + [EOS_ID])
    dataset = ParallelDataset(builder.build(), None)
    cfg = DecodeConfig(beam=1, max_len_a=1.5, max_len_b=4, **settings)
    searched = [hyps[0].tokens for hyps in translate_dataset(model, dataset, cfg, max_tokens=64)]
    expected = [hyps[0].tokens for hyps in beam_search(model, make_batch(sources), cfg)]
    assert searched == expected
    if "max_len_ratio" in settings:
        assert all(len(tokens) <= int(settings["max_len_ratio"] * len(row)) for tokens, row in zip(searched, sources))
    plain = [hyps[0].tokens for hyps in translate_dataset(model, dataset, DecodeConfig(beam=1, length_penalty=0.0,
                                                                                       max_len_a=1.5, max_len_b=4),
                                                          max_tokens=64)]
    assert plain != searched  # the settings matter for these sentences
