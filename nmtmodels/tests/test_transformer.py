"""The Transformer baseline: incremental decoding, padding invariance, shapes, parameter counts."""
from __future__ import annotations

import pytest
import torch

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import Batch
from nmtmodels.decoding.search import reorder_state
from nmtmodels.models.transformer import TransformerModel
from nmtmodels.registry import build_model
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID

SMALL = dict(d_model=32, heads=4, encoder_layers=2, decoder_layers=2, ffn_dim=64, dropout=0.1, attention_dropout=0.1)


def small_model(vocab: int = 23, **overrides) -> TransformerModel:
    return build_model(ModelConfig.from_dict({**SMALL, **overrides}), vocab, vocab + 4)


def random_batch(lengths: list[int], tgt_len: int, vocab: int = 23, seed: int = 0) -> Batch:
    generator = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths)), PAD_ID)
    for row, length in enumerate(lengths):
        src[row, : length - 1] = torch.randint(4, vocab, (length - 1,), generator=generator)
        src[row, length - 1] = EOS_ID
    tgt = torch.randint(4, vocab, (len(lengths), tgt_len), generator=generator)
    tgt_in = torch.cat([torch.full((len(lengths), 1), BOS_ID), tgt], dim=1)
    tgt_out = torch.cat([tgt, torch.full((len(lengths), 1), EOS_ID)], dim=1)
    return Batch(src=src, src_lengths=torch.tensor(lengths), tgt_in=tgt_in, tgt_out=tgt_out)


@pytest.mark.parametrize("normalize_before", [False, True])
@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
@torch.no_grad()
def test_incremental_decoding_matches_teacher_forcing(normalize_before: bool, positional: str) -> None:
    torch.manual_seed(0)
    model = small_model(normalize_before=normalize_before, positional=positional).eval()
    batch = random_batch([7, 4, 5], tgt_len=6)
    encoder_out = model.encode(batch)
    full_logits, full_attention = model.decode(batch.tgt_in, encoder_out, need_attention=True)
    cache: dict = {}
    step_logits, step_attention = [], []
    for t in range(batch.tgt_in.size(1)):
        logits, attention = model.decode(batch.tgt_in[:, t : t + 1], encoder_out, cache, need_attention=True)
        step_logits.append(logits)
        step_attention.append(attention)
    torch.testing.assert_close(torch.cat(step_logits, 1), full_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.cat(step_attention, 1), full_attention, atol=1e-6, rtol=1e-5)
    assert cache["step"] == batch.tgt_in.size(1)
    # logits do not depend on whether attention was asked for (explicit vs SDPA path)
    torch.testing.assert_close(model.decode(batch.tgt_in, encoder_out)[0], full_logits, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_attention_output_is_a_distribution_over_real_source_tokens() -> None:
    torch.manual_seed(1)
    model = small_model().eval()
    batch = random_batch([6, 3], tgt_len=4)
    logits, attention = model.decode(batch.tgt_in, model.encode(batch), need_attention=True)
    assert logits.shape == (2, 5, 27)
    assert attention.shape == (2, 5, 6)
    torch.testing.assert_close(attention.sum(-1), torch.ones(2, 5))
    assert attention[1, :, 3:].abs().max() == 0
    assert model.decode(batch.tgt_in, model.encode(batch))[1] is None


@pytest.mark.parametrize("normalize_before", [False, True])
@torch.no_grad()
def test_appending_source_padding_changes_nothing(normalize_before: bool) -> None:
    torch.manual_seed(2)
    model = small_model(normalize_before=normalize_before).eval()
    batch = random_batch([5, 3], tgt_len=4)
    padded_src = torch.cat([batch.src, torch.full((2, 4), PAD_ID)], dim=1)
    padded = Batch(src=padded_src, src_lengths=batch.src_lengths, tgt_in=batch.tgt_in, tgt_out=batch.tgt_out)
    out, out_padded = model.encode(batch), model.encode(padded)
    keep = ~batch.src_pad_mask
    torch.testing.assert_close(out_padded["memory"][:, :5][keep], out["memory"][keep], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model(padded), model(batch), atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_reordered_cache_continues_like_decoding_the_reordered_batch() -> None:
    """Beam search reorders encoder output and cache with reorder_state between steps."""
    torch.manual_seed(3)
    model = small_model().eval()
    batch = random_batch([6, 4], tgt_len=3)
    encoder_out, cache = model.encode(batch), {}
    model.decode(batch.tgt_in[:, :2], encoder_out, cache)
    index = torch.tensor([1, 0, 1])
    reorder_state(encoder_out, index)
    reorder_state(cache, index)
    step, _ = model.decode(batch.tgt_in[index, 2:3], encoder_out, cache)
    expected = model(batch.select(index))[:, 2:3]
    torch.testing.assert_close(step, expected, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_beam_reordering_within_sentences_keeps_the_projected_memory() -> None:
    """Beams of one sentence share its memory keys/values: reordering them copies only the
    self-attention cache, and decoding continues like the reordered batch from scratch."""
    torch.manual_seed(3)
    model = small_model().eval()
    batch = random_batch([6, 4], tgt_len=3).select(torch.tensor([0, 0, 1, 1]))  # two beams per sentence
    batch.tgt_in[:, 1] = torch.tensor([5, 6, 7, 8])
    encoder_out, cache = model.encode(batch), {}
    model.decode(batch.tgt_in[:, :2], encoder_out, cache)
    memory_keys, self_keys = cache["layer0"]["memory"]["k"], cache["layer0"]["self"]["k"]
    index = torch.tensor([1, 1, 3, 2])
    reorder_state(cache, index, within_sentences=True)
    assert cache["layer0"]["memory"]["k"] is memory_keys
    assert cache["layer0"]["self"]["k"] is not self_keys
    step, _ = model.decode(batch.tgt_in[index, 2:3], encoder_out, cache)
    expected = model(batch.select(index))[:, 2:3]
    torch.testing.assert_close(step, expected, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_sentences_keep_one_memory_row_while_beams_copy_and_rows_leave() -> None:
    """Beam search copies each sentence to its beams and later drops finished sentences: the
    projected memory keeps one row per sentence throughout, and decoding continues like the
    selected hypotheses decoded from scratch."""
    torch.manual_seed(3)
    model = small_model().eval()
    batch = random_batch([6, 4], tgt_len=3)
    encoder_out, cache = model.encode(batch), {}
    model.decode(batch.tgt_in[:, :1], encoder_out, cache)
    copies = torch.tensor([0, 0, 0, 1, 1, 1])  # three beams per sentence
    reorder_state(encoder_out, copies)
    reorder_state(cache, copies, sentences=(2, torch.arange(2)))
    assert cache["layer0"]["memory"]["k"].size(0) == 2 and cache["layer0"]["self"]["k"].size(0) == 6
    beams = batch.select(copies)
    beams.tgt_in[:, 1] = torch.tensor([5, 6, 7, 8, 9, 10])
    step, _ = model.decode(beams.tgt_in[:, 1:2], encoder_out, cache)
    torch.testing.assert_close(step, model(beams)[:, 1:2], atol=1e-5, rtol=1e-5)
    index = torch.tensor([5, 3, 3])  # the first sentence has finished; beams reorder in the same index
    reorder_state(encoder_out, index)
    reorder_state(cache, index, sentences=(2, torch.tensor([1])))
    assert cache["layer1"]["memory"]["v"].size(0) == 1
    step, _ = model.decode(beams.tgt_in[index, 2:3], encoder_out, cache)
    torch.testing.assert_close(step, model(beams.select(index))[:, 2:3], atol=1e-5, rtol=1e-5)


def test_training_mode_is_stochastic_and_eval_is_not() -> None:
    torch.manual_seed(4)
    model = small_model()
    batch = random_batch([5, 5], tgt_len=4)
    model.train()
    assert not torch.allclose(model(batch), model(batch))
    model.eval()
    torch.testing.assert_close(model(batch), model(batch))


def test_a_few_updates_fit_a_copy_batch() -> None:
    """Gradients reach every part: a small model memorises one batch of copy pairs."""
    torch.manual_seed(5)
    model = small_model(dropout=0.0, attention_dropout=0.0)
    src = random_batch([6, 6, 6, 6], tgt_len=1).src
    body = src[:, :-1]
    batch = Batch(
        src=src,
        src_lengths=torch.full((4,), 6),
        tgt_in=torch.cat([torch.full((4, 1), BOS_ID), body], 1),
        tgt_out=src,
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    def loss() -> torch.Tensor:
        logits = model(batch)
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten())

    initial = loss().item()
    for _ in range(30):
        optimizer.zero_grad()
        value = loss()
        value.backward()
        optimizer.step()
    assert value.item() < 0.1 * initial
    assert all(p.grad is not None for p in model.parameters())


def test_embedding_sharing_and_tying() -> None:
    shared = build_model(ModelConfig.from_dict({**SMALL, "share_embeddings": True}), 30, 30)
    assert shared.encoder.embedding.tokens is shared.decoder.embedding.tokens
    assert shared.decoder.output_projection.weight is shared.decoder.embedding.tokens.weight
    untied = build_model(ModelConfig.from_dict({**SMALL, "tie_output": False}), 30, 40)
    assert untied.encoder.embedding.tokens is not untied.decoder.embedding.tokens
    assert untied.decoder.output_projection.weight is not untied.decoder.embedding.tokens.weight
    assert untied.decoder.output_projection.weight.shape == (40, 32)
    with pytest.raises(ConfigError, match="share_embeddings.*30.*40"):
        build_model(ModelConfig.from_dict({**SMALL, "share_embeddings": True}), 30, 40)
    with pytest.raises(ValueError, match="smaller than the 4 special symbols"):
        build_model(ModelConfig.from_dict(SMALL), 3, 30)


def test_max_positions_and_learned_position_limit() -> None:
    model = small_model(positional="learned", max_source_positions=8, max_target_positions=6).eval()
    assert model.max_positions() == (8, 6)
    batch = random_batch([8], tgt_len=5)
    assert model(batch).shape == (1, 6, 27)
    with pytest.raises(ValueError, match="maximum of 8"):
        model.encode(random_batch([9], tgt_len=2))


def expected_parameters(
    d: int, ffn: int, enc: int, dec: int, src_vocab: int, tgt_vocab: int, *, shared: bool, tied: bool, pre_norm: bool
) -> int:
    """Hand count: attention = 4 d x d weights + 4 d biases; FFN = 2 d f + f + d; LayerNorm = 2 d."""
    attention = 4 * d * d + 4 * d
    feed_forward = 2 * d * ffn + ffn + d
    norm = 2 * d
    encoder = enc * (attention + feed_forward + 2 * norm)
    decoder = dec * (2 * attention + feed_forward + 3 * norm)
    embeddings = src_vocab * d + (0 if shared else tgt_vocab * d)
    output = 0 if tied else tgt_vocab * d
    final_norms = 2 * norm if pre_norm else 0
    return encoder + decoder + embeddings + output + final_norms


@pytest.mark.parametrize(
    "preset, d, ffn, layers, paper_millions",
    [("tiny", 256, 1024, 3, None), ("small", 512, 1024, 6, None), ("base", 512, 2048, 6, 65), ("big", 1024, 4096, 6, 213)],
)
def test_parameter_counts_match_hand_computation(preset: str, d: int, ffn: int, layers: int, paper_millions) -> None:
    vocab = 37000  # shared BPE vocabulary of Vaswani et al. (2017) for EN-DE
    cfg = ModelConfig.from_dict({"preset": preset, "share_embeddings": True})
    with torch.device("meta"):  # shapes only, no memory
        count = build_model(cfg, vocab, vocab).num_parameters()
    assert count == expected_parameters(d, ffn, layers, layers, vocab, vocab, shared=True, tied=True, pre_norm=False)
    if paper_millions is not None:  # Table 3 of the paper reports 65M (base) and 213M (big)
        assert abs(count / 1e6 - paper_millions) / paper_millions < 0.05


def test_parameter_count_untied_pre_norm() -> None:
    cfg = ModelConfig.from_dict({"preset": "tiny", "tie_output": False, "normalize_before": True})
    with torch.device("meta"):
        count = build_model(cfg, 1000, 1200).num_parameters()
    assert count == expected_parameters(256, 1024, 3, 3, 1000, 1200, shared=False, tied=False, pre_norm=True)


@torch.no_grad()
def test_bfloat16_autocast_runs_and_stays_close() -> None:
    torch.manual_seed(6)
    model = small_model().eval()
    batch = random_batch([6, 4], tgt_len=5)
    reference, reference_attention = model.decode(batch.tgt_in, model.encode(batch), need_attention=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits, attention = model.decode(batch.tgt_in, model.encode(batch), need_attention=True)
    assert logits.dtype == torch.bfloat16
    torch.testing.assert_close(logits.float(), reference, atol=0.1, rtol=0.05)
    torch.testing.assert_close(attention.float(), reference_attention, atol=0.02, rtol=0.05)


@pytest.mark.parametrize("tie_output", [False, True])
@torch.no_grad()
def test_features_only_states_projected_by_the_output_layer_are_the_logits(tie_output: bool) -> None:
    torch.manual_seed(0)
    model = small_model(tie_output=tie_output).eval()
    batch = random_batch([5, 3], tgt_len=4)
    states = model(batch, features_only=True)
    assert states.shape == (2, 5, SMALL["d_model"])
    torch.testing.assert_close(model.output_layer(states), model(batch))
