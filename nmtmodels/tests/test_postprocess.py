"""Post-processing undoes what the real tools (subword-nmt, sacremoses, jieba, fugashi) did."""
from __future__ import annotations

import io

import pytest
from sacremoses import MosesTokenizer
from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe

from nmtmodels.cli.postprocess import main
from nmtmodels.files import DataError
from nmtmodels.text.postprocess import chars_to_text, join_cjk, postprocess, remove_bpe

EN = [
    "The committee's decision, announced on Monday, was \"final\" & binding.",
    "Prices rose by 3.5% in the first quarter (compared with last year).",
    "Is this a well-known problem? Yes: it is!",
]
DE = ["Das ist ein Versuch, oder? Er sagte: \"Ja\".", "Die Bundesregierung hat 12,5 Millionen Euro bereitgestellt."]


def subword_nmt_bpe(corpus: list[str], merges: int) -> BPE:
    codes = io.StringIO()
    learn_bpe(io.StringIO("\n".join(corpus * 3) + "\n"), codes, merges)
    codes.seek(0)
    return BPE(codes)


def test_bpe_removal_inverts_subword_nmt():
    tokenized = [" ".join(MosesTokenizer("en").tokenize(line, escape=False)) for line in EN]
    bpe = subword_nmt_bpe(tokenized, merges=40)
    for line in tokenized:
        segmented = bpe.process_line(line)
        assert "@@ " in segmented  # 40 merges leave most words split
        assert remove_bpe(segmented) == line


def test_bpe_removal_drops_a_final_joiner():
    assert remove_bpe("ein Ver@@ such@@") == "ein Versuch"
    assert remove_bpe("ein Ver@@ such@@ ") == "ein Versuch"
    assert remove_bpe("e-@@ mail") == "e-mail"
    assert remove_bpe("no joiners here") == "no joiners here"


@pytest.mark.parametrize("lang,lines", [("en", EN), ("de", DE)])
def test_moses_round_trip(lang, lines):
    tokenizer = MosesTokenizer(lang)
    for line in lines:
        tokenized = tokenizer.tokenize(line, escape=True, return_str=True)
        assert tokenized != line
        assert postprocess(tokenized, lang, bpe=False) == line


def test_bpe_then_moses():
    tokenizer = MosesTokenizer("en")
    tokenized = [tokenizer.tokenize(line, escape=True, return_str=True) for line in EN]
    bpe = subword_nmt_bpe(tokenized, merges=60)
    for original, line in zip(EN, tokenized):
        assert postprocess(bpe.process_line(line), "en") == original


def test_chinese_segmentation_round_trip():
    import jieba

    segmenter = jieba.Tokenizer()
    sentences = ["我爱北京天安门，天安门上太阳升。", "他在2019年用iPhone拍了照片。", "我们说“你好”：欢迎来到New York！"]
    for sentence in sentences:
        segmented = " ".join(segmenter.lcut(sentence))
        assert segmented.count(" ") >= 3
        assert postprocess(segmented, "zh", bpe=False) == sentence


def test_japanese_segmentation_round_trip():
    import fugashi
    import unidic_lite

    tagger = fugashi.Tagger(f'-d "{unidic_lite.DICDIR}"')
    for sentence in ["東京に行きます。", "私はiPhoneを買いました。", "今日は「いい天気」ですね！"]:
        segmented = " ".join(word.surface for word in tagger(sentence))
        assert postprocess(segmented, "ja", bpe=False) == sentence


def test_cjk_rule_keeps_spaces_between_latin_words():
    assert join_cjk("我 爱 New York 。") == "我爱New York。"
    assert join_cjk("使用 Python 3 编程") == "使用Python 3编程"
    assert join_cjk("数据 ， 模型 ： 结果") == "数据，模型：结果"
    assert postprocess("北@@ 京 是 中国 的 首@@ 都", "zh-cn") == "北京是中国的首都"
    assert join_cjk("   ") == ""


def test_character_level_format():
    assert chars_to_text("D a s ▁ i s t ▁ g u t .") == "Das ist gut."
    assert chars_to_text("a <unk> b ▁ c") == "a<unk>b c"
    assert chars_to_text("a <unk> b", unk="?") == "a?b"
    assert postprocess("▁ H i ▁ ! ▁", "en", char_level=True, detokenize=False) == "Hi !"
    assert postprocess("你 好 ▁ w o r l d", "zh", char_level=True) == "你好world"


def test_cli_writes_output_atomically(tmp_path):
    source = tmp_path / "hyp.bpe"
    source.write_text("Das ist ein Ver@@ such , oder ?\nJa .\n", encoding="utf-8")
    target = tmp_path / "out" / "hyp.txt"
    main(["--lang", "de", str(source), str(target)])
    assert target.read_text(encoding="utf-8") == "Das ist ein Versuch, oder?\nJa.\n"
    with pytest.raises(DataError, match="missing"):
        main(["--lang", "de", str(tmp_path / "missing"), str(tmp_path / "never.txt")])
    assert not (tmp_path / "never.txt").exists()
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["hyp.txt"]
