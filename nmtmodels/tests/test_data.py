from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nmtmodels.config import ConfigError
from nmtmodels.data import ExtraField, ParallelDataset, collate
from nmtmodels.files import DataError
from nmtmodels.sampler import BucketBatchSampler
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from nmtmodels.tests.copy_task_fixtures import write_lines
from nmtmodels.vocab import Vocabulary

VOCAB = Vocabulary(["a", "b", "c", "d"])  # a=4 b=5 c=6 d=7


@pytest.fixture
def files(tmp_path):
    src = write_lines(tmp_path / "train.src", ["a b", "c", "d d d"])
    tgt = write_lines(tmp_path / "train.tgt", ["b", "a x c", "d"])
    return tmp_path, src, tgt


# ---------------------------------------------------------------------- dataset / collate
def test_dataset_and_collate_match_hand_built_tensors(files):
    _, src, tgt = files
    data = ParallelDataset.from_files(src, tgt, VOCAB, VOCAB)
    assert len(data) == 3
    assert data.src[2].tolist() == [7, 7, 7, EOS_ID]
    assert data.tgt[1].tolist() == [4, UNK_ID, 6]
    batch = data.collate([1, 0])
    assert batch.src.tolist() == [[6, EOS_ID, PAD_ID], [4, 5, EOS_ID]]
    assert batch.src_lengths.tolist() == [2, 3]
    assert batch.tgt_in.tolist() == [[BOS_ID, 4, UNK_ID, 6], [BOS_ID, 5, PAD_ID, PAD_ID]]
    assert batch.tgt_out.tolist() == [[4, UNK_ID, 6, EOS_ID], [5, EOS_ID, PAD_ID, PAD_ID]]
    assert batch.ids.tolist() == [1, 0]
    assert batch.num_target_tokens == 6
    assert data.sizes("tokens").tolist() == [[3, 2], [2, 4], [4, 2]]


def test_collate_pads_extras_with_their_pad_value():
    batch = collate([[4, EOS_ID], [5, 5, EOS_ID]], None, extras={"spans": [[1], [2, 3, 4]]}, extra_pads={"spans": -1})
    assert batch.extras["spans"].tolist() == [[1, -1, -1], [2, 3, 4]]
    assert batch.tgt_in is None
    with pytest.raises(KeyError, match="no pad value"):
        collate([[4]], None, extras={"spans": [[1]]})


def test_extra_fields_integers_and_tokens(files):
    tmp_path, src, tgt = files
    ints = write_lines(tmp_path / "ints", ["0 1", "5", "1 2 3"])
    toks = write_lines(tmp_path / "toks", ["a", "", "b c"])
    data = ParallelDataset.from_files(src, tgt, VOCAB, VOCAB, extras={
        "ends": ExtraField(str(ints), pad=-1), "backbone": ExtraField(str(toks), pad=PAD_ID, tokens=True)})
    batch = data.collate([0, 1, 2])
    assert batch.extras["ends"].tolist() == [[0, 1, -1], [5, -1, -1], [1, 2, 3]]
    assert batch.extras["backbone"].tolist() == [[4, EOS_ID, PAD_ID], [EOS_ID, PAD_ID, PAD_ID], [5, 6, EOS_ID]]


def test_non_integer_extra_names_file_and_line(files):
    tmp_path, src, tgt = files
    bad = write_lines(tmp_path / "ints", ["0", "1 x", "2"])
    with pytest.raises(DataError, match=r"ints:2: expected space-separated integers"):
        ParallelDataset.from_files(src, tgt, VOCAB, VOCAB, extras={"e": ExtraField(str(bad), pad=0)})


def test_line_count_mismatch_names_the_short_file(files):
    tmp_path, src, _ = files
    short = write_lines(tmp_path / "short.tgt", ["a", "b"])
    with pytest.raises(DataError, match=r"short.tgt: has 2 lines but .*train.src has more"):
        ParallelDataset.from_files(src, short, VOCAB, VOCAB)
    extra = write_lines(tmp_path / "long.ints", ["1", "2", "3", "4"])
    with pytest.raises(DataError, match=r"train.src: has 3 lines"):
        ParallelDataset.from_files(src, None, VOCAB, extras={"e": ExtraField(str(extra), pad=0)})


def test_empty_file_is_an_error(tmp_path):
    empty = write_lines(tmp_path / "empty.src", [])
    with pytest.raises(DataError, match=r"empty.src: empty file"):
        ParallelDataset.from_files(empty, None, VOCAB)


def test_too_long_policies(files):
    _, src, tgt = files
    # max positions (3, 3): source "d d d" + EOS = 4 tokens (line 3); target "a x c" + EOS = 4 (line 2)
    with pytest.raises(DataError, match=r"train.tgt:2: target has 4 tokens .* limit 3 \(too long\)"):
        ParallelDataset.from_files(src, tgt, VOCAB, VOCAB, max_positions=(3, 3))
    messages = []
    kept = ParallelDataset.from_files(src, tgt, VOCAB, VOCAB, max_positions=(3, 3), too_long="skip", log=messages.append)
    assert len(kept) == 1 and kept.num_skipped == 2 and kept.line_numbers.tolist() == [1]
    assert "skipped 2 of 3" in messages[0] and "first at line 2" in messages[0]
    cut = ParallelDataset.from_files(src, None, VOCAB, max_positions=(3, 3), too_long="truncate")
    assert cut.src[2].tolist() == [7, 7, EOS_ID]
    with pytest.raises(DataError, match="every example"):
        ParallelDataset.from_files(src, tgt, VOCAB, VOCAB, max_positions=(1, 1), too_long="skip", log=lambda m: None)


def test_from_lines_names_the_line():
    with pytest.raises(DataError, match=r"<stdin>:7: source has 4 tokens"):
        ParallelDataset.from_lines(["a b c"], VOCAB, max_positions=(3, 3), name="<stdin>", first_line=7)


def test_character_lengths(tmp_path):
    src = write_lines(tmp_path / "c.src", ["a b ▁ c", "d"])
    tgt = write_lines(tmp_path / "c.tgt", ["a", "b ▁ b"])
    chars = ParallelDataset.from_files(src, tgt, VOCAB, VOCAB)
    assert chars.sizes("chars").tolist() == chars.sizes("tokens").tolist() == [[5, 2], [2, 4]]
    bpe_src = write_lines(tmp_path / "b.src", ["ab@@ cd e", "abc"])
    bpe = ParallelDataset.from_files(bpe_src, tgt, VOCAB, VOCAB)
    assert bpe.sizes("chars")[:, 0].tolist() == [len("ab@@") + len("cd") + len("e") + 1, 4]


# ---------------------------------------------------------------------- sampler
lengths_strategy = st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=120)


def cost(lengths: np.ndarray, batch: np.ndarray) -> int:
    return int(len(batch) * lengths[batch].max())


@settings(max_examples=60, deadline=None)
@given(lengths=lengths_strategy, max_tokens=st.integers(1, 200), seed=st.integers(0, 5), shuffle=st.booleans())
def test_sampler_budget_coverage_and_bucketing(lengths, max_tokens, seed, shuffle):
    lengths = np.array(lengths)
    sampler = BucketBatchSampler(lengths, max_tokens, shuffle=shuffle, seed=seed)
    batches = sampler.batches()
    # the budget holds, except for a single example over it on its own
    for batch in batches:
        assert cost(lengths, batch) <= max_tokens or len(batch) == 1
    assert sampler.oversized == int((lengths.max(axis=1) > max_tokens).sum())
    # every example exactly once
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(lengths)))
    # bucketing: ordered by their first key, the batches concatenate to a (tgt, src)-sorted list
    def key(i):
        return (lengths[i, 1], lengths[i, 0])

    keys = [key(i) for i in np.concatenate(sorted(batches, key=lambda b: (key(b[0]), key(b[-1]))))]
    assert keys == sorted(keys)
    # greedy packing: the next example in sorted order would have broken the budget.  Among
    # batches of equal first and last keys the full ones come first (larger batches first).
    in_order = sorted(batches, key=lambda b: (key(b[0]), key(b[-1]), -len(b)))
    for batch, following in zip(in_order, in_order[1:]):
        assert cost(lengths, np.append(batch, following[0])) > max_tokens
    # deterministic in the seed
    again = BucketBatchSampler(lengths, max_tokens, shuffle=shuffle, seed=seed).batches()
    assert [b.tolist() for b in again] == [b.tolist() for b in batches]


def test_sampler_without_shuffle_is_the_stable_length_sort():
    lengths = np.array([[3, 1], [1, 5], [3, 1], [1, 2], [2, 2]])  # (source, target)
    batches = BucketBatchSampler(lengths, 100, shuffle=False).batches()
    assert [b.tolist() for b in batches] == [[0, 2, 3, 4, 1]]  # target first, ties by source, then input order


def test_sampler_epochs_differ_and_state_restores_the_continuation():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 30, size=(200, 2))
    sampler = BucketBatchSampler(lengths, 120, seed=3)
    first_epoch = [b.tolist() for b in sampler.batches(1)]
    assert first_epoch != [b.tolist() for b in sampler.batches(2)]
    stream = iter(sampler)
    for _ in range(5):
        next(stream)
    state = sampler.state_dict()
    rest = [b.tolist() for b in stream] + [b.tolist() for b in sampler]  # rest of epoch 1, all of epoch 2
    assert sampler.epoch == 3 and sampler.position == 0
    resumed = BucketBatchSampler(lengths, 120, seed=3)
    resumed.load_state_dict(state)
    assert [b.tolist() for b in resumed] + [b.tolist() for b in resumed] == rest
    assert rest[: len(first_epoch) - 5] == first_epoch[5:]
    changed = BucketBatchSampler(lengths, 100, seed=3)
    with pytest.raises(ConfigError, match="max_tokens was 120"):
        changed.load_state_dict(state)


def test_sampler_refuses_a_state_whose_epoch_had_other_batches():
    """Same settings and example count, but other lengths: the saved position would point
    into a different batch list, so resuming would not continue the saved run."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 30, size=(200, 2))
    sampler = BucketBatchSampler(lengths, 120, seed=3)
    next(iter(sampler))
    state = sampler.state_dict()
    assert BucketBatchSampler(lengths.copy(), 120, seed=3).mismatches(state) == []
    other = lengths.copy()
    other[:, [0, 1]] = other[:, [1, 0]]  # the sides swapped: the same multiset of lengths
    with pytest.raises(ConfigError, match="batches of epoch 1 differ"):
        BucketBatchSampler(other, 120, seed=3).load_state_dict(state)
    written_before_the_order_was_saved = {k: v for k, v in state.items() if k != "order"}
    BucketBatchSampler(other, 120, seed=3).load_state_dict(written_before_the_order_was_saved)


def target_tokens_per_update(lengths: np.ndarray, batches: list[np.ndarray]) -> list[int]:
    return [int(lengths[batch, 1].sum()) for batch in batches]


def test_a_target_cost_gives_two_sources_of_the_same_targets_the_same_target_tokens_per_update():
    # a lattice and its 1-best: the same targets, a longer source (here 1.1-2x the 1-best's)
    rng = np.random.default_rng(0)
    one_best = rng.integers(1, 30, size=(500, 2))
    lattice = one_best.copy()
    lattice[:, 0] = np.ceil(one_best[:, 0] * rng.uniform(1.1, 2.0, size=500))
    by_target = [BucketBatchSampler(x, 200, seed=4, cost="target").batches() for x in (one_best, lattice)]
    assert target_tokens_per_update(one_best, by_target[0]) == target_tokens_per_update(lattice, by_target[1])
    for batch in by_target[1]:  # the budget counts the padded target alone
        assert len(batch) * lattice[batch, 1].max() <= 200 or len(batch) == 1
    # the default cost (the longer side) gives the longer source fewer target tokens per update
    by_longer = [BucketBatchSampler(x, 200, seed=4).batches() for x in (one_best, lattice)]
    tokens = [sum(target_tokens_per_update(x, b)) / len(b) for x, b in zip((one_best, lattice), by_longer)]
    assert tokens[1] < 0.95 * tokens[0]


def test_the_batch_cost_is_part_of_the_resumable_state():
    lengths = np.random.default_rng(0).integers(1, 30, size=(100, 2))
    state = BucketBatchSampler(lengths, 120, seed=3).state_dict()
    with pytest.raises(ConfigError, match="cost was 'longer_side'.*is 'target' now"):
        BucketBatchSampler(lengths, 120, seed=3, cost="target").load_state_dict(state)
    older = {k: v for k, v in state.items() if k != "cost"}  # written before the cost was a choice
    BucketBatchSampler(lengths, 120, seed=3).load_state_dict(older)
    with pytest.raises(ValueError, match="needs \\(source, target\\) lengths"):
        BucketBatchSampler(lengths[:, 0], 120, cost="target")


def test_dataset_fingerprint_changes_with_any_example(tmp_path):
    src = write_lines(tmp_path / "s", ["a b", "b"])
    tgt = write_lines(tmp_path / "t", ["a", "b a"])
    swapped = write_lines(tmp_path / "t2", ["b", "b a"])
    data = ParallelDataset.from_files(src, tgt, VOCAB, VOCAB)
    assert data.fingerprint() == ParallelDataset.from_files(src, tgt, VOCAB, VOCAB).fingerprint()
    assert data.fingerprint() != ParallelDataset.from_files(src, swapped, VOCAB, VOCAB).fingerprint()
    assert data.fingerprint() != ParallelDataset.from_files(tgt, src, VOCAB, VOCAB).fingerprint()


def test_sampler_char_unit_uses_character_lengths(tmp_path):
    src = write_lines(tmp_path / "s", ["aaaa b", "a", "b"])
    tgt = write_lines(tmp_path / "t", ["a", "a", "b"])
    data = ParallelDataset.from_files(src, tgt, VOCAB, VOCAB)
    by_tokens = BucketBatchSampler(data, 9, unit="tokens", shuffle=False).batches()
    by_chars = BucketBatchSampler(data, 9, unit="chars", shuffle=False).batches()
    assert [b.tolist() for b in by_tokens] == [[1, 2, 0]]  # 2, 2 and 3 tokens (with </s>): 3 rows x 3 = 9
    assert [b.tolist() for b in by_chars] == [[1, 2], [0]]  # "aaaa b": 5 characters + 1, and 3 x 6 > 9


def test_sampler_distributed_slices_are_disjoint_per_step():
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 20, size=(150, 2))
    single = BucketBatchSampler(lengths, 60, seed=7).global_batches(1)
    ranks = [BucketBatchSampler(lengths, 60, seed=7, num_replicas=3, rank=r) for r in range(3)]
    per_rank = [[b.tolist() for b in s.batches()] for s in ranks]
    assert len({len(p) for p in per_rank}) == 1
    steps = len(per_rank[0])
    assert steps == len(single) // 3
    for k in range(steps):
        for r in range(3):
            assert per_rank[r][k] == single[3 * k + r].tolist()
    seen = [i for p in per_rank for b in p for i in b]
    assert len(seen) == len(set(seen))
