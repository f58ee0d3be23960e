"""char2char and char2word (Johansen et al. 2016): word-end gather, attention, caching, batching."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import Batch, ParallelDataset
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import beam_search, greedy_search
from nmtmodels.models.char2word import (
    AdditiveAttention,
    CharRNNOptions,
    gather_word_states,
    word_end_positions,
)
from nmtmodels.registry import build_model, validate_model_config
from nmtmodels.sampler import BucketBatchSampler
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID, SPACE_SYMBOL
from nmtmodels.vocab import Vocabulary

SPACE = 4  # id of ▁ in the toy source vocabulary below
SRC_VOCAB = Vocabulary([SPACE_SYMBOL, *"abcdefgh"])  # ids 4..12
TGT_SIZE = 11


def make_batch(rows: list[list[int]], tgt: list[list[int]] | None = None) -> Batch:
    """Sources get </s> appended; targets become BOS+y / y+EOS."""
    src_rows = [r + [EOS_ID] for r in rows]
    width = max(map(len, src_rows))
    src = torch.tensor([r + [PAD_ID] * (width - len(r)) for r in src_rows])
    batch = Batch(src=src, src_lengths=torch.tensor([len(r) for r in src_rows]))
    if tgt is not None:
        t = max(map(len, tgt)) + 1
        batch.tgt_in = torch.tensor([[BOS_ID] + y + [PAD_ID] * (t - 1 - len(y)) for y in tgt])
        batch.tgt_out = torch.tensor([y + [EOS_ID] + [PAD_ID] * (t - 1 - len(y)) for y in tgt])
    return batch


SOURCES = [
    [5, 6, SPACE, 7, 8, 9, SPACE, 10],       # three words
    [11],                                    # one word
    [5, SPACE, 6, SPACE, 7, SPACE, 8, 12],   # four words
]
TARGETS = [[5, 6, 7], [8], [9, 10, 5, 6]]


def model(family: str, seed: int = 0):
    cfg = ModelConfig.from_dict({"family": family, "dropout": 0.0, "options": {
        "preset": "tiny", "embedding_dim": 6, "encoder_dim": 5, "decoder_dim": 7, "attention_dim": 4}})
    cfg.validate()
    torch.manual_seed(seed)
    m = build_model(cfg, len(SRC_VOCAB), TGT_SIZE).double().eval()
    m.attach_vocabularies(SRC_VOCAB, None)
    return m


# ----------------------------------------------------------------------------- word ends
def test_word_end_positions_against_a_per_sentence_loop():
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(20):
        n = int(rng.integers(1, 15))
        row = rng.integers(5, 13, size=n).tolist()
        for i in range(1, n - 1):  # single spaces between words, none at the ends
            if rng.random() < 0.3 and row[i - 1] != SPACE:
                row[i] = SPACE
        rows.append(row)
    batch = make_batch(rows)
    positions, pad_mask = word_end_positions(batch.src, SPACE)
    states = torch.randn(*batch.src.shape, 3)
    gathered = gather_word_states(states, positions, pad_mask)
    for b, row in enumerate(rows):
        ends = [i for i, x in enumerate(row + [EOS_ID]) if x in (SPACE, EOS_ID)]
        assert positions[b, : len(ends)].tolist() == ends
        assert pad_mask[b].tolist() == [False] * len(ends) + [True] * (positions.size(1) - len(ends))
        torch.testing.assert_close(gathered[b, : len(ends)], states[b, ends])
        assert gathered[b, len(ends):].abs().sum() == 0
    assert positions.size(1) == max(sum(x == SPACE for x in r) + 1 for r in rows)


def test_char2word_memory_has_one_position_per_word():
    m = model("char2word")
    out = m.encode(make_batch(SOURCES))
    assert out["memory"].shape == (3, 4, 10)
    assert out["memory_pad_mask"].tolist() == [[False] * 3 + [True], [False] + [True] * 3, [False] * 4]


def test_char2word_word_states_are_the_forward_char_states_at_spaces():
    """Naive re-computation: run the char GRU on one sentence, take its states at ▁ and </s>,
    run the bi-GRU over them, compare with the batched encoder."""
    m = model("char2word", seed=3)
    enc = m.encoder
    batch = make_batch(SOURCES)
    memory = m.encode(batch)["memory"]
    for b, row in enumerate(SOURCES):
        src = torch.tensor([row + [EOS_ID]])
        char_states, _ = enc.char_rnn(enc.embedding(src))
        ends = [i for i, x in enumerate(row + [EOS_ID]) if x in (SPACE, EOS_ID)]
        words, _ = enc.word_rnn(char_states[:, ends])
        torch.testing.assert_close(memory[b, : len(ends)], words[0])


@pytest.mark.parametrize("family", ["char2char", "char2word"])
def test_batched_encoding_equals_each_sentence_alone(family):
    m = model(family, seed=1)
    together = m.encode(make_batch(SOURCES))
    for b, row in enumerate(SOURCES):
        alone = m.encode(make_batch([row]))
        n = alone["memory"].size(1)
        torch.testing.assert_close(together["memory"][b, :n], alone["memory"][0])
        assert not together["memory_pad_mask"][b, :n].any() and together["memory_pad_mask"][b, n:].all()


def test_char2word_without_space_id_is_a_clear_error():
    cfg = ModelConfig.from_dict({"family": "char2word", "options": {"preset": "tiny"}})
    m = build_model(cfg, 10, 10)
    with pytest.raises(RuntimeError, match="attach_vocabularies"):
        m.encode(make_batch([[5]]))
    with pytest.raises(ConfigError, match="space_symbol"):
        m.attach_vocabularies(Vocabulary(list("abc")), None)


def test_space_id_is_saved_with_the_weights():
    m = model("char2word")
    fresh = build_model(m.cfg, len(SRC_VOCAB), TGT_SIZE)
    fresh.load_state_dict(m.state_dict())
    assert int(fresh.encoder.space_id) == SRC_VOCAB.index(SPACE_SYMBOL) == SPACE


# ----------------------------------------------------------------------------- attention
def test_additive_attention_matches_hand_computation():
    torch.manual_seed(0)
    att = AdditiveAttention(2, 3, 2).double()
    query = torch.randn(1, 2, dtype=torch.double)
    memory = torch.randn(1, 3, 3, dtype=torch.double)
    pad = torch.tensor([[False, False, True]])
    context, alpha = att(query, att.precompute(memory), memory, pad)
    W, U, u, v = att.query.weight, att.key.weight, att.key.bias, att.score.weight[0]
    with torch.no_grad():
        e = [float(v @ torch.tanh(W @ query[0] + U @ memory[0, j] + u)) for j in range(2)]
    expected = torch.softmax(torch.tensor(e, dtype=torch.double), 0)
    torch.testing.assert_close(alpha[0], torch.cat([expected, torch.zeros(1, dtype=torch.double)]))
    torch.testing.assert_close(context[0], expected[0] * memory[0, 0] + expected[1] * memory[0, 1])


@pytest.mark.parametrize("family", ["char2char", "char2word"])
def test_decoder_attention_ignores_padding(family):
    m = model(family, seed=2)
    batch = make_batch(SOURCES, TARGETS)
    enc = m.encode(batch)
    logits, attention = m.decode(batch.tgt_in, enc, need_attention=True)
    mask = enc["memory_pad_mask"]
    assert attention.shape == (3, batch.tgt_in.size(1), mask.size(1))
    torch.testing.assert_close(attention.sum(-1), torch.ones(attention.shape[:2], dtype=torch.double))
    assert attention.masked_select(mask.unsqueeze(1).expand_as(attention)).abs().max() == 0
    # garbage in the padded memory positions changes nothing
    noisy = dict(enc, memory=enc["memory"].masked_fill(mask.unsqueeze(-1), 1e3))
    logits2, _ = m.decode(batch.tgt_in, noisy, need_attention=True)
    torch.testing.assert_close(logits, logits2)


# ----------------------------------------------------------------------------- decoding
@pytest.mark.parametrize("family", ["char2char", "char2word"])
def test_incremental_decoding_equals_full_forward(family):
    m = model(family, seed=4)
    batch = make_batch(SOURCES, TARGETS)
    enc = m.encode(batch)
    full, full_attention = m.decode(batch.tgt_in, enc, need_attention=True)
    cache: dict = {}
    steps, attentions = [], []
    for t in range(batch.tgt_in.size(1)):
        logits, attention = m.decode(batch.tgt_in[:, t : t + 1], enc, cache, need_attention=True)
        steps.append(logits)
        attentions.append(attention)
    torch.testing.assert_close(torch.cat(steps, 1), full)
    torch.testing.assert_close(torch.cat(attentions, 1), full_attention)
    assert set(cache) == {"hidden", "keys"} and all(v.size(0) == 3 for v in cache.values())


@pytest.mark.parametrize("family", ["char2char", "char2word"])
def test_beam_scores_equal_full_forward_rescoring(family):
    m = model(family, seed=5)
    batch = make_batch(SOURCES)
    cfg = DecodeConfig(beam=3, nbest=3, length_penalty=0.0, max_len_a=1.0, max_len_b=3, return_attention=True)
    for row, hypotheses in enumerate(beam_search(m, batch, cfg)):
        for h in hypotheses:
            single = batch.select(torch.tensor([row]))
            with torch.no_grad():
                logits, _ = m.decode(torch.tensor([[BOS_ID, *h.tokens]]), m.encode(single))
            lp = logits.log_softmax(-1)[0].gather(-1, torch.tensor([*h.tokens, EOS_ID]).unsqueeze(-1)).squeeze(-1)
            assert h.positional_scores == pytest.approx(lp.tolist(), abs=1e-9)
    greedy = greedy_search(m, batch, 1.0, 3)
    for row, g in enumerate(greedy):
        assert g.tokens == greedy_search(m, make_batch([SOURCES[row]]), 1.0, 3)[0].tokens


@pytest.mark.heavy
@pytest.mark.parametrize("family", ["char2char", "char2word"])
def test_model_learns_a_copy_task(family):
    """A few hundred Adam steps fit three pairs: the gradients reach every part."""
    m = model(family, seed=6).float().train()
    batch = make_batch(SOURCES, TARGETS)
    opt = torch.optim.Adam(m.parameters(), lr=0.05)
    for _ in range(60):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(batch).transpose(1, 2), batch.tgt_out, ignore_index=PAD_ID)
        loss.backward()
        opt.step()
    assert loss.item() < 0.1
    hyps = greedy_search(m, batch, 2.0, 3)
    assert [h.tokens for h in hyps] == TARGETS


# ----------------------------------------------------------------------------- options
def test_presets_and_option_errors():
    assert CharRNNOptions.from_options({}, "o") == CharRNNOptions(
        preset="paper", embedding_dim=256, encoder_dim=400, decoder_dim=400, attention_dim=300)  # Tables 1-2
    assert CharRNNOptions.from_options({"preset": "tiny", "encoder_dim": 9}, "o").encoder_dim == 9
    with pytest.raises(ConfigError, match="model.options.preset: unknown preset 'huge'"):
        validate_model_config(ModelConfig.from_dict({"family": "char2word", "options": {"preset": "huge"}}))
    with pytest.raises(ConfigError, match="model.options.attention_dim: must be >= 1"):
        validate_model_config(ModelConfig.from_dict({"family": "char2char", "options": {"attention_dim": 0}}))
    with pytest.raises(ConfigError, match="model.options.hidden"):
        validate_model_config(ModelConfig.from_dict({"family": "char2char", "options": {"hidden": 3}}))


def test_paper_preset_sizes():
    """Table 2's char2word: char RNN 400 forward, spaces RNNs 400+400, attention 300, decoder 400."""
    m = build_model(ModelConfig.from_dict({"family": "char2word"}), 304, 304)
    assert m.encoder.char_rnn.hidden_size == 400 and not m.encoder.char_rnn.bidirectional
    assert m.encoder.word_rnn.hidden_size == 400 and m.encoder.word_rnn.bidirectional
    assert m.encoder.embedding.weight.shape == (304, 256)
    assert m.decoder.cell.hidden_size == 400 and m.decoder.attention.query.out_features == 300


# ----------------------------------------------------------------------------- batching
def test_character_budget_is_never_exceeded():
    """Section 5.2.1: shuffle, stable sort by (source, target) length, pack up to a
    character budget including padding, random batch order."""
    rng = np.random.default_rng(1)
    chars = list("abcdefgh")
    src, tgt = [], []
    for _ in range(300):
        src.append(" ".join(rng.choice(chars, size=int(rng.integers(1, 60)))))
        tgt.append(" ".join(rng.choice(chars, size=int(rng.integers(1, 80)))))
    vocab = Vocabulary(chars)
    data = ParallelDataset._from_line_iterators(
        {"source": "s", "target": "t"}, {"source": iter(src), "target": iter(tgt)}, vocab, vocab, {}, None, "error",
        print, 1)
    budget = 400
    sampler = BucketBatchSampler(data, budget, unit="chars", seed=3)
    assert sampler.oversized == 0
    for epoch in (1, 2):
        batches = sampler.batches(epoch)
        assert sorted(np.concatenate(batches).tolist()) == list(range(300))  # every example once
        for indices in batches:
            batch = data.collate(indices)
            padded = len(indices) * max(batch.src.size(1), batch.tgt_out.size(1))
            assert padded <= budget
    first, second = sampler.batches(1), sampler.batches(2)
    assert [b.tolist() for b in first] != [b.tolist() for b in second]  # reshuffled each epoch


# ----------------------------------------------------------------------------- command line
def test_nmt_train_records_the_space_id_and_nmt_translate_uses_it(tmp_path):
    """nmt-train calls attach_vocabularies; the checkpoint carries the space id to nmt-translate."""
    from nmtmodels.checkpoint import load_model_from_checkpoint
    from nmtmodels.cli import train_main, translate_main

    src = [f"a b {SPACE_SYMBOL} c", f"d {SPACE_SYMBOL} e {SPACE_SYMBOL} f g", "h"] * 4
    (tmp_path / "train.src").write_text("\n".join(src) + "\n", encoding="utf-8")
    (tmp_path / "train.tgt").write_text("\n".join(s.upper() for s in src) + "\n", encoding="utf-8")
    # the space is NOT the first entry of the source vocabulary here, so a wrong id would show
    (tmp_path / "vocab.src").write_text("\n".join(["a", "b", "c", SPACE_SYMBOL, *"defgh"]) + "\n", encoding="utf-8")
    (tmp_path / "vocab.tgt").write_text("\n".join([SPACE_SYMBOL.upper(), *"ABCDEFGH"]) + "\n", encoding="utf-8")
    (tmp_path / "exp.yaml").write_text(
        "model: {family: char2word, dropout: 0.0, options: {preset: tiny, embedding_dim: 8, encoder_dim: 8, "
        "decoder_dim: 8, attention_dim: 8}}\ntrain: {max_updates: 2, batch_unit: chars, max_tokens: 200, "
        "warmup_updates: 1, max_minutes: 0}\n", encoding="utf-8")
    assert train_main(["--config", str(tmp_path / "exp.yaml"), "--train-src", str(tmp_path / "train.src"),
                       "--train-tgt", str(tmp_path / "train.tgt"), "--src-vocab", str(tmp_path / "vocab.src"),
                       "--tgt-vocab", str(tmp_path / "vocab.tgt"), "--out-dir", str(tmp_path / "out"),
                       "--device", "cpu"]) == 0
    checkpoint = tmp_path / "out" / "checkpoint_last.pt"
    model, src_vocab, _, _ = load_model_from_checkpoint(str(checkpoint), torch.device("cpu"))
    assert int(model.encoder.space_id) == src_vocab.index(SPACE_SYMBOL) == 7
    assert translate_main(["--pretokenized", "--checkpoint", str(checkpoint), "--input", str(tmp_path / "train.src"),
                           "--output", str(tmp_path / "hyp"), "--beam", "2", "--max-len-a", "0", "--max-len-b", "3",
                           "--device", "cpu"]) == 0
    assert len((tmp_path / "hyp").read_text(encoding="utf-8").splitlines()) == len(src)


@pytest.mark.parametrize("family", ["char2char", "char2word"])
@torch.no_grad()
def test_features_only_states_projected_by_the_output_layer_are_the_logits(family):
    m = model(family).eval()
    batch = make_batch(SOURCES, TARGETS)
    torch.testing.assert_close(m.output_layer(m(batch, features_only=True)), m(batch))
