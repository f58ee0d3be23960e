"""The source-subsequence constraint (deletion-based compression) against exhaustive search over
every subset of the source's words, on the toy model of test_search."""
from __future__ import annotations

import itertools

import pytest
import torch

from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.constraints import SourceSubsequence
from nmtmodels.decoding.scorer import HypothesisScorer
from nmtmodels.decoding.search import beam_search
from nmtmodels.symbols import EOS_ID
from nmtmodels.tests.test_search import ToyModel, make_batch, rescore
from nmtmodels.vocab import Vocabulary

# ids 4 and 5 of the toy model: "a@@" continues into the next piece, "b" ends a word
BPE = Vocabulary(["a@@", "b"])
# SentencePiece: "▁a" starts a word, "b" continues one
SPM = Vocabulary(["\u2581a", "b"])


def words_bpe(source: list[int]) -> list[list[int]]:
    words, word = [], []
    for token in source:
        word.append(token)
        if token != 4:
            words.append(word)
            word = []
    return words


def words_spm(source: list[int]) -> list[list[int]]:
    words: list[list[int]] = []
    for token in source:
        if token == 4 or not words:
            words.append([token])
        else:
            words[-1].append(token)
    return words


def subsequences(words: list[list[int]], max_tokens: int) -> list[list[int]]:
    """Every output of whole words in source order (at least one token, at most max_tokens), once."""
    found = {tuple(t for w in chosen for t in w) for n in range(1, len(words) + 1)
             for chosen in itertools.combinations(words, n)}
    return [list(y) for y in sorted(found) if len(y) <= max_tokens]


@pytest.mark.parametrize("vocab,split", [(BPE, words_bpe), (SPM, words_spm)], ids=["bpe", "spm"])
@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_large_beam_under_the_constraint_equals_exhaustive_search_over_word_subsets(vocab, split, alpha):
    sources = [[4, 5, 5, 4, 5], [5, 4, 4, 5, 5], [4, 4, 5, 5, 4, 5]]
    model, batch, max_tokens = ToyModel(seed=3, eos_bias=-1.0), make_batch(sources), 5
    cfg = DecodeConfig(beam=40, nbest=5, length_penalty=alpha, max_len_a=0.0, max_len_b=max_tokens, subsequence=True)
    scorer = HypothesisScorer.from_config(cfg, SourceSubsequence.from_vocabs(vocab, vocab))
    results = beam_search(model, batch, cfg, scorer)
    for row, source in enumerate(sources):
        outputs = subsequences(split(source), max_tokens)
        log_probs, _ = rescore(model, batch, row, outputs)
        lengths = torch.tensor([len(y) + 1 for y in outputs], dtype=torch.float64)
        scores = log_probs / ((5 + lengths) / 6) ** alpha
        best = scores.argsort(descending=True)[:5].tolist()
        assert [h.tokens for h in results[row]] == [outputs[i] for i in best]
        assert [h.score for h in results[row]] == pytest.approx([float(scores[i]) for i in best], abs=1e-9)
        # the constraint only removes candidates: each token's score is still the model's own
        assert [h.log_prob for h in results[row]] == pytest.approx([float(log_probs[i]) for i in best], abs=1e-9)


def test_the_unconstrained_search_leaves_the_source_and_the_constraint_is_what_stops_it():
    # not vacuous: without the constraint the best outputs of these rows are no subsequences of their words
    sources = [[4, 5, 5, 4, 5], [5, 4, 4, 5, 5]]
    model, batch = ToyModel(seed=3, eos_bias=-1.0), make_batch(sources)
    free = beam_search(model, batch, DecodeConfig(beam=4, max_len_a=0.0, max_len_b=5))
    allowed = [subsequences(words_bpe(s), 5) for s in sources]
    assert any(row[0].tokens not in ok for row, ok in zip(free, allowed))


def _state(src, *last):
    state = torch.zeros(1, src.size(1) + 1, dtype=torch.bool)
    state[0, [p + 1 for p in last]] = True
    return state


def test_positions_follow_an_open_word_and_end_only_at_a_words_end():
    constraint = SourceSubsequence.from_vocabs(BPE, BPE)
    src = torch.tensor([[4, 5, 5, 4, 5, EOS_ID]])  # words: a@@ b | b | a@@ b
    cases = {(-1,): ([1, 0, 1, 1, 0, 0], True), (0,): ([0, 1, 0, 0, 0, 0], False), (1,): ([0, 0, 1, 1, 0, 0], True),
             (3,): ([0, 0, 0, 0, 1, 0], False), (4,): ([0, 0, 0, 0, 0, 0], True),
             (0, 3): ([0, 1, 0, 0, 1, 0], False), (0, 2): ([0, 1, 0, 1, 0, 0], True), (): ([0] * 6, False)}
    for last, (positions, may_end) in cases.items():
        allowed, end = constraint.positions(src, _state(src, *last))
        assert allowed.int().tolist() == [positions] and end.tolist() == [may_end], last
    # "a@@" at the start may be either word's first piece; "b" after it, either word's end
    assert constraint.advance(src, _state(src, -1), torch.tensor([4])).tolist() == _state(src, 0, 3).tolist()
    assert constraint.advance(src, _state(src, 0, 3), torch.tensor([5])).tolist() == _state(src, 1, 4).tolist()
    # a token it does not allow leaves no position, and then nothing is allowed
    assert not constraint.advance(src, _state(src, 1), torch.tensor([EOS_ID])).any()


def test_a_source_piece_missing_from_the_target_vocabulary_maps_to_unk():
    constraint = SourceSubsequence.from_vocabs(Vocabulary(["a@@", "b", "c"]), Vocabulary(["b", "a@@"]))
    assert constraint.to_target.tolist()[4:] == [5, 4, 3]


def test_the_subsequence_setting_needs_the_vocabularies():
    with pytest.raises(ValueError, match="decode.subsequence needs the vocabularies"):
        beam_search(ToyModel(), make_batch([[4, 5]]), DecodeConfig(subsequence=True))
