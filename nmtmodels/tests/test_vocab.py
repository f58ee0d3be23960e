from __future__ import annotations

import io
from collections import Counter

import pytest
from subword_nmt.get_vocab import get_vocab

from nmtmodels.files import DataError
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID, SPECIAL_SYMBOLS, UNK_ID
from nmtmodels.tests.copy_task_fixtures import write_lines
from nmtmodels.vocab import Vocabulary, check_fingerprint


def test_specials_come_first_with_the_batch_ids():
    vocab = Vocabulary(["x", "y"])
    assert [vocab.index(s) for s in SPECIAL_SYMBOLS] == [PAD_ID, BOS_ID, EOS_ID, UNK_ID]
    assert vocab.tokens == ["<pad>", "<s>", "</s>", "<unk>", "x", "y"]
    assert len(vocab) == 6


def test_build_orders_by_count_then_token_and_filters():
    counts = {"b": 3, "a": 3, "c": 5, "d": 1, "<unk>": 100}
    assert Vocabulary.build(counts).tokens[4:] == ["c", "a", "b", "d"]
    assert Vocabulary.build(counts, min_count=2).tokens[4:] == ["c", "a", "b"]
    assert Vocabulary.build(counts, max_size=2).tokens[4:] == ["c", "a"]


def test_encode_decode():
    vocab = Vocabulary(["the", "cat"])
    assert vocab.encode(["the", "dog", "cat"], add_eos=True) == [4, UNK_ID, 5, EOS_ID]
    assert vocab.decode([BOS_ID, 4, UNK_ID, 5, EOS_ID, 4, PAD_ID]) == ["the", "cat"]
    assert vocab.decode([4, UNK_ID, PAD_ID], keep_unk=True) == ["the", "<unk>"]


def test_save_load_round_trip(tmp_path):
    vocab = Vocabulary(["z", "a", "▁", "<"])
    vocab.save(tmp_path / "v.txt")
    loaded = Vocabulary.from_file(tmp_path / "v.txt")
    assert loaded == vocab and loaded.fingerprint() == vocab.fingerprint()
    assert not [p for p in tmp_path.iterdir() if p.name != "v.txt"]  # no temporary file left


def test_subword_nmt_vocab_file_gives_the_corpus_vocabulary(tmp_path):
    lines = ["the cat@@ s sat", "the dog sat on the mat", "a cat"]
    corpus = write_lines(tmp_path / "train.bpe", lines)
    out = io.StringIO()
    get_vocab(io.StringIO("".join(f"{line}\n" for line in lines)), out)  # subword-nmt's own get-vocab
    (tmp_path / "vocab.counts").write_text(out.getvalue(), encoding="utf-8")
    from_counts = Vocabulary.from_file(tmp_path / "vocab.counts", min_count=2)
    from_corpus = Vocabulary.from_corpus([corpus], min_count=2)
    assert from_counts == from_corpus
    assert set(from_counts.tokens[4:]) == {tok for tok, n in Counter(" ".join(lines).split()).items() if n >= 2}


def test_joint_vocabulary_covers_both_sides(tmp_path):
    src = write_lines(tmp_path / "src", ["a b", "a"])
    tgt = write_lines(tmp_path / "tgt", ["x a"])
    joint = Vocabulary.from_corpus([src, tgt])
    assert joint.tokens[4:] == ["a", "b", "x"]  # a: 3, then b and x (count 1) by name


def test_character_vocabulary(tmp_path):
    chars = write_lines(tmp_path / "chars", ["h i ▁ t h e r e", "<unk> h"])
    vocab = Vocabulary.from_corpus([chars])
    assert "▁" in vocab and "h" in vocab
    assert vocab.tokens.count("<unk>") == 1  # the data's <unk> is the special symbol
    assert vocab.encode(["<unk>", "h"]) == [UNK_ID, vocab.index("h")]


def test_fingerprint_detects_any_change():
    base = Vocabulary(["a", "b"])
    assert base.fingerprint() == Vocabulary(["a", "b"]).fingerprint()
    for other in (Vocabulary(["b", "a"]), Vocabulary(["a"]), Vocabulary(["a", "b", "c"])):
        assert other.fingerprint() != base.fingerprint()
        with pytest.raises(ValueError, match="does not match"):
            check_fingerprint(other, base.fingerprint(), "source", "v.txt")
    check_fingerprint(Vocabulary(["a", "b"]), base.fingerprint(), "source")


@pytest.mark.parametrize(
    "content, line, message",
    [
        ("a 3\nb\n", 2, "no count"),
        ("a\nb 2\n", 2, "has a count"),
        ("a\nb\na\n", 3, "repeats line 1"),
        ("a\n\nb\n", 2, "empty line"),
        ("a 1 2\n", 1, "expected"),
    ],
)
def test_bad_vocabulary_files_name_file_and_line(tmp_path, content, line, message):
    path = tmp_path / "bad.vocab"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message) as err:
        Vocabulary.from_file(path)
    assert str(err.value).startswith(f"{path}:{line}:")


def test_empty_inputs_are_errors(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("")
    with pytest.raises(DataError, match="empty vocabulary"):
        Vocabulary.from_file(empty)
    with pytest.raises(DataError, match="no tokens"):
        Vocabulary.from_corpus([empty])


def test_invalid_tokens_rejected():
    with pytest.raises(ValueError, match="duplicate or special"):
        Vocabulary(["a", "a"])
    with pytest.raises(ValueError, match="duplicate or special"):
        Vocabulary(["</s>"])
    with pytest.raises(ValueError, match="whitespace"):
        Vocabulary(["a b"])
