"""Character vocabulary, character data and length filter for the char2word model."""
from __future__ import annotations

import collections
from pathlib import Path

import pytest

from nmtmodels.files import DataError
from nmtmodels.symbols import SPACE_SYMBOL as SPACE
from nmtmodels.symbols import UNK
from workflow_scripts.data import chars, parallel
from workflow_scripts.data.chars import build_vocabulary, encode_line, filter_pairs, read_vocabulary


def write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def read(path: Path | str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def test_vocabulary_by_hand(tmp_path):
    # Characters: a b ▁ a | b ▁ c (a run of whitespace is one ▁, none at the ends)
    # -> a 2, b 2, ▁ 2, c 1; ties keep the order of first occurrence.
    source = write(tmp_path / "tok", ["ab a", " b \t c "])
    build_vocabulary(source, 3, tmp_path / "vocab")
    assert read(tmp_path / "vocab") == ["a 2", "b 2", f"{SPACE} 2"]


def test_vocabulary_counts_and_order_match_counter(tmp_path):
    lines = ["Zwei junge Männer .", "Ein Mädchen klettert , über 2 Zäune .", "Ünïcödé ☃ ."] * 3 + ["x y z"]
    source = write(tmp_path / "tok", lines)
    entries = build_vocabulary(source, 10, tmp_path / "vocab")
    expected = collections.Counter("\n".join(lines).replace(" ", SPACE).replace("\n", ""))
    assert entries == sorted(expected.items(), key=lambda item: -item[1])[:10]
    assert read(tmp_path / "vocab") == [f"{character} {count}" for character, count in entries]
    assert set(read_vocabulary(tmp_path / "vocab")) == {character for character, _ in entries}


def test_encoding_spaces_and_unknown_characters():
    vocabulary = frozenset({"a", "b", SPACE})
    assert encode_line("ab  ca", vocabulary) == f"a b {SPACE} {UNK} a"
    assert encode_line("", vocabulary) == ""


def test_apply_in_two_processes_equals_one(tmp_path, monkeypatch):
    lines = [f"line {i} mit Ümlauten , ☃ und {'x' * (i % 7)}" for i in range(200)]
    source = write(tmp_path / "tok", lines)
    build_vocabulary(source, 15, tmp_path / "vocab")
    chars.apply(str(tmp_path / "vocab"), source, str(tmp_path / "one"), threads=1)
    monkeypatch.setattr(parallel, "CHUNK_SIZE", 9)
    chars.main(["apply", "--vocab", str(tmp_path / "vocab"), "--input", source, "--output", str(tmp_path / "two"), "--threads", "2"])
    assert (tmp_path / "two").read_bytes() == (tmp_path / "one").read_bytes()
    vocabulary = read_vocabulary(tmp_path / "vocab")
    assert read(tmp_path / "one") == [encode_line(line, vocabulary) for line in lines]


def test_filter_keeps_pairs_within_both_limits(tmp_path):
    def characters(n: int) -> str:
        return " ".join(["a", SPACE] * (n // 2) + ["a"] * (n % 2))

    src = write(tmp_path / "c.src", [characters(n) for n in (4, 5, 4, 2, 0)])
    tgt = write(tmp_path / "c.tgt", [characters(n) for n in (6, 6, 7, 1, 3)])
    read_count, kept = filter_pairs((src, tgt), 4, 6, (str(tmp_path / "f.src"), str(tmp_path / "f.tgt")))
    assert (read_count, kept) == (5, 3)
    assert [len(line.split()) for line in read(tmp_path / "f.src")] == [4, 2, 0]
    assert [len(line.split()) for line in read(tmp_path / "f.tgt")] == [6, 1, 3]


def test_filter_mismatched_line_counts_leave_no_output(tmp_path):
    src = write(tmp_path / "c.src", ["a", "b"])
    tgt = write(tmp_path / "c.tgt", ["a"])
    with pytest.raises(DataError, match=r"c\.src.* 2 lines but .*c\.tgt has 1"):
        filter_pairs((src, tgt), 4, 6, (str(tmp_path / "f.src"), str(tmp_path / "f.tgt")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.src", "c.tgt"]


@pytest.mark.parametrize("line", ["ab 3", "  4", "a three", "a"])
def test_bad_vocabulary_line_names_file_and_line(tmp_path, line):
    write(tmp_path / "vocab", ["x 5", line])
    with pytest.raises(DataError, match=r"vocab:2: expected 'character count'"):
        read_vocabulary(tmp_path / "vocab")


def test_invalid_utf8_leaves_no_vocabulary(tmp_path):
    (tmp_path / "tok").write_bytes(b"abc\n\xfe\n")
    with pytest.raises(DataError, match=r"tok:2: invalid UTF-8"):
        build_vocabulary(tmp_path / "tok", 300, tmp_path / "vocab")
    assert not (tmp_path / "vocab").exists()
