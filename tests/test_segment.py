"""Chinese/Japanese segmenters: words spell the input, known segmentations, pool == in-process."""
from __future__ import annotations

import gzip
import itertools
import os
from pathlib import Path

import pytest

from nmtmodels.files import DataError
from nmtmodels.text.preprocessing import SegmentationError, WordSegmenter, check_segmenter
from workflow_scripts.data import parallel, segment
from workflow_scripts.data.segment import segment_file

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("NMT_DATA_MIRROR") or ROOT.parent / "shared" / "data")

CHINESE = [
    "我爱北京天安门",
    "他是一个 DJ 。",
    "很大, 不是吗?",
    "“看啊!”她说道。",
    "我在用Python3.10写代码,价格是¥100元。",
    "１２３ＡＢＣ全角和😀表情",
    "",
]
JAPANESE = ["私は学生です。", "東京に住んでいます", "ｶﾀｶﾅと😀とabc 123", ""]


def mirror_lines(relative: str, column: int | None, count: int) -> list[str]:
    """``count`` lines spread over a mirror file (empty when the mirror is absent)."""
    path = MIRROR / relative
    if not path.exists():
        return []
    with gzip.open(path, "rt", encoding="utf-8-sig") as handle:
        lines = [line.rstrip("\n") for line in handle if line.strip()]
    sample = lines[:: max(1, len(lines) // count)][:count]
    return [line.split("\t")[column] for line in sample] if column is not None else sample


@pytest.fixture(scope="module")
def segmenters() -> dict[str, WordSegmenter]:
    return {name: WordSegmenter(lang, name) for lang, names in segment.SEGMENTERS.items() for name in names}


@pytest.mark.parametrize("name", ["jieba", "thulac", "snownlp", "fugashi"])
def test_words_spell_the_input_without_spaces(segmenters, name):
    lang = segmenters[name].lang
    texts = CHINESE + mirror_lines("zh-en/cmn.txt.gz", 1, 200) if lang == "zh" else (
        JAPANESE + ["".join(line.split()) for line in mirror_lines("ja-en/small_parallel_enja/train.ja.gz", None, 200)]
    )
    for text in texts:
        words = segmenters[name].segment(text)
        assert "".join(words) == "".join(text.split())
        assert all(word and not any(c.isspace() for c in word) for word in words)
        assert segmenters[name].segment_line(text) == " ".join(words)


@pytest.mark.parametrize("name", ["jieba", "thulac", "snownlp", "fugashi"])
def test_whitespace_is_always_a_word_boundary(segmenters, name):
    assert segmenters[name].segment("东京") == ["东京"]  # one word without the space
    assert segmenters[name].segment("东 京") == ["东", "京"]


def test_known_segmentations(segmenters):
    # jieba's README example; unidic-lite's analysis of a textbook sentence.
    assert segmenters["jieba"].segment("我爱北京天安门") == ["我", "爱", "北京", "天安门"]
    assert segmenters["fugashi"].segment("私は学生です。") == ["私", "は", "学生", "です", "。"]


def test_a_segmenter_that_changes_the_text_is_an_error(segmenters, monkeypatch):
    jieba = segmenters["jieba"]
    monkeypatch.setattr(jieba, "_cut", lambda text: [text.upper()])
    with pytest.raises(SegmentationError, match="jieba"):
        jieba.segment("abc")


@pytest.mark.parametrize(("lang", "name", "message"), [
    ("zh", "mecab", r"unknown zh segmenter 'mecab' \(known: jieba, thulac, snownlp\)"),
    ("ja", "jieba", r"unknown ja segmenter 'jieba' \(known: fugashi\)"),
    ("ko", "jieba", r"no segmenter for language 'ko' \(known languages: ja, zh\)"),
])
def test_unknown_segmenter_lists_the_known_ones(lang, name, message):
    with pytest.raises(ValueError, match=message):
        check_segmenter(lang, name)


def test_cli_unknown_segmenter_exits_with_the_list(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        segment.main(["--lang", "zh", "--segmenter", "kytea", "--input", "x", "--output", str(tmp_path / "y")])
    assert exit_info.value.code == 2
    assert "known: jieba, thulac, snownlp" in capsys.readouterr().err


@pytest.mark.heavy
def test_two_processes_give_the_same_file_as_one(tmp_path, monkeypatch):
    texts = list(itertools.islice(itertools.cycle(CHINESE + mirror_lines("zh-en/cmn.txt.gz", 1, 100)), 300))
    source = tmp_path / "norm.zh"
    source.write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    assert segment_file("zh", "jieba", str(source), str(tmp_path / "one"), threads=1) == 300
    monkeypatch.setattr(parallel, "CHUNK_SIZE", 16)
    segment.main(["--lang", "zh", "--segmenter", "jieba", "--input", str(source), "--output", str(tmp_path / "two"), "--threads", "2"])
    assert (tmp_path / "two").read_bytes() == (tmp_path / "one").read_bytes()
    assert len((tmp_path / "one").read_text(encoding="utf-8").splitlines()) == 300


def test_invalid_utf8_names_file_and_line_and_leaves_no_output(tmp_path):
    source = tmp_path / "norm.zh"
    source.write_bytes("我爱北京\n".encode() + b"\xe4\xb8\n")
    with pytest.raises(DataError, match=r"norm\.zh:2: invalid UTF-8"):
        segment_file("zh", "jieba", str(source), str(tmp_path / "seg"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["norm.zh"]
