"""Normalisation, tokenisation, Moses-style cleaning and dedupe of workflow_scripts.data.preprocess."""
from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest
import yaml
from sacremoses import MosesPunctNormalizer, MosesTokenizer

from nmtmodels.files import DataError
from nmtmodels.text.preprocessing import LanguageSettings, TextProcessor
from workflow_scripts.data import parallel, preprocess
from workflow_scripts.data.preprocess import CleanSettings, clean_reason, preprocess_files

ROOT = Path(__file__).resolve().parents[1]
WHITESPACE = LanguageSettings("en", "whitespace")


def write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def outputs(tmp_path: Path) -> tuple[str, str, str, str]:
    return tuple(str(tmp_path / name) for name in ("tok.src", "tok.tgt", "norm.src", "norm.tgt"))


def read(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


ENGLISH = [
    'Tom & Jerry\'s "well-known" <tag> costs $5,000.50 -- right?',
    "A  man\tin a blue shirt… is standing on a ladder, cleaning windows.",
    "She said: «It's a so-called \u201cstate-of-the-art\u201d thing» (really).",
    "Mr. Smith's dog isn't here; e.g. it's 3:30 p.m.",
]


@pytest.mark.parametrize("lang", ["en", "de"])
def test_moses_tokenisation_equals_sacremoses_with_dash_splits_and_no_escaping(lang):
    processor = TextProcessor(LanguageSettings(lang, "moses"))
    normalizer, tokenizer = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)
    for line in ENGLISH:
        expected_norm = " ".join(normalizer.normalize(unicodedata.normalize("NFKC", line)).split())
        expected_tok = tokenizer.tokenize(expected_norm, aggressive_dash_splits=True, escape=False, return_str=True)
        assert processor.process(line) == (expected_norm, expected_tok)


def test_moses_tokens_by_hand():
    norm, tok = TextProcessor(LanguageSettings("en", "moses")).process('Tom & Jerry\'s "well-known" <tag>')
    assert norm == 'Tom & Jerry\'s "well-known" <tag>'
    assert tok == 'Tom & Jerry \'s " well @-@ known " < tag >'  # -a on, nothing XML-escaped


def test_unicode_normalisation_and_whitespace_collapse():
    processor = TextProcessor(WHITESPACE, unicode_form="NFKC")
    assert processor.process("  \ufb01ne\u00a0\uff21  b\t\tc ") == ("fine A b c", "fine A b c")
    assert TextProcessor(WHITESPACE, unicode_form="NFC").process("\ufb01ne") == ("\ufb01ne", "\ufb01ne")


def test_join_pretokenized_resegments_japanese():
    processor = TextProcessor(LanguageSettings("ja", "fugashi", join_pretokenized=True))
    assert processor.process("私 は 学生 です 。") == ("私は学生です。", "私 は 学生 です 。")


def test_lowercase_applies_after_tokenisation_to_both_outputs():
    processor = TextProcessor(LanguageSettings("en", "moses", lowercase=True))
    assert processor.process("Mr. Smith IS here.") == ("mr. smith is here.", "mr. smith is here .")


CLEAN = CleanSettings(min_tokens=2, max_tokens=5, max_ratio=2.0)


@pytest.mark.parametrize(
    ("src", "tgt", "reason"),
    [
        ("a b", "x y", None),
        ("", "x y", "empty"),
        ("a b", "", "empty"),
        ("a b c d e f", "x y z", "too_long"),
        ("a b c d e", "x y z v w", None),  # max_tokens is inclusive
        ("a", "x y", "too_short"),
        ("a b c d e", "x y", "ratio"),  # 5 / 2 = 2.5 > 2
        ("x y", "a b c d e", "ratio"),
        ("a b c d", "x y", None),  # 4 / 2 = 2 is not greater than 2
    ],
)
def test_clean_corpus_n_rules(src, tgt, reason):
    assert clean_reason(src, tgt, CLEAN) == reason


def test_cleaning_and_dedupe_on_training_data(tmp_path):
    pairs = [
        ("a b", "x y"),  # kept
        ("", "x y"),  # empty
        ("a b c d e f", "x y z"),  # too long
        ("a", "x y"),  # too short
        ("a b c d e", "x y"),  # ratio
        ("a  b", "x y"),  # duplicate of the first once whitespace is collapsed
        ("a b", "x y z"),  # kept: the target differs
        ("c d", "z w"),  # kept
    ]
    src = write(tmp_path / "raw.src", [s for s, _ in pairs])
    tgt = write(tmp_path / "raw.tgt", [t for _, t in pairs])
    outs = outputs(tmp_path)
    counts = preprocess_files(WHITESPACE, WHITESPACE, (src, tgt), outs, clean=CLEAN, dedupe=True)
    assert read(outs[0]) == ["a b", "a b", "c d"]
    assert read(outs[1]) == ["x y", "x y z", "z w"]
    assert read(outs[2]) == read(outs[0]) and read(outs[3]) == read(outs[1])
    assert dict(counts) == {"read": 8, "kept": 3, "empty": 1, "too_long": 1, "too_short": 1, "ratio": 1, "duplicate": 1}


def test_without_dedupe_duplicates_stay(tmp_path):
    src = write(tmp_path / "raw.src", ["a b", "a b"])
    tgt = write(tmp_path / "raw.tgt", ["x y", "x y"])
    counts = preprocess_files(WHITESPACE, WHITESPACE, (src, tgt), outputs(tmp_path), clean=CLEAN, dedupe=False)
    assert counts["kept"] == 2


def test_dev_and_test_data_keep_every_line(tmp_path):
    src = write(tmp_path / "raw.src", ["a b", "", "a b", "a b c d e f g h"])
    tgt = write(tmp_path / "raw.tgt", ["x y", "x", "x y", "x"])
    outs = outputs(tmp_path)
    counts = preprocess_files(WHITESPACE, WHITESPACE, (src, tgt), outs)
    assert counts["kept"] == counts["read"] == 4
    assert read(outs[0]) == ["a b", "", "a b", "a b c d e f g h"]


def test_mismatched_line_counts_name_both_files_and_leave_nothing(tmp_path):
    src = write(tmp_path / "raw.src", ["a", "b", "c"])
    tgt = write(tmp_path / "raw.tgt", ["x", "y"])
    with pytest.raises(DataError, match=r"raw\.src.* 3 lines but .*raw\.tgt has 2"):
        preprocess_files(WHITESPACE, WHITESPACE, (src, tgt), outputs(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw.src", "raw.tgt"]


def test_invalid_utf8_names_file_and_line_and_leaves_nothing(tmp_path):
    (tmp_path / "raw.src").write_bytes(b"a\nb\nbad \xff byte\n")
    tgt = write(tmp_path / "raw.tgt", ["x", "y", "z"])
    with pytest.raises(DataError, match=r"raw\.src:3: invalid UTF-8"):
        preprocess_files(WHITESPACE, WHITESPACE, (str(tmp_path / "raw.src"), tgt), outputs(tmp_path), threads=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw.src", "raw.tgt"]


def test_two_processes_give_the_same_output_as_one(tmp_path, monkeypatch):
    lines = [f"{line} ({i})" for i in range(30) for line in ENGLISH]
    src, tgt = write(tmp_path / "raw.en", lines), write(tmp_path / "raw.de", lines[::-1])
    settings = (LanguageSettings("en", "moses"), LanguageSettings("de", "moses"))
    single, multi = tmp_path / "single", tmp_path / "multi"
    single.mkdir(), multi.mkdir()
    preprocess_files(*settings, (src, tgt), outputs(single), threads=1)
    monkeypatch.setattr(parallel, "CHUNK_SIZE", 7)  # several chunks per worker
    preprocess_files(*settings, (src, tgt), outputs(multi), threads=2)
    for name in ("tok.src", "tok.tgt", "norm.src", "norm.tgt"):
        assert (multi / name).read_bytes() == (single / name).read_bytes()


def corpus_spec(name: str) -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())["corpora"][name]


def test_cli_with_the_config_spec(tmp_path, capsys):
    src = write(tmp_path / "raw.en", ["A dog runs.", "A dog runs.", "Two well-known cats sleep."])
    tgt = write(tmp_path / "raw.de", ["Ein Hund rennt.", "Ein Hund rennt.", "Zwei bekannte Katzen schlafen."])
    outs = outputs(tmp_path)
    preprocess.main([
        "--src-lang", "en", "--tgt-lang", "de", "--src-in", src, "--tgt-in", tgt,
        "--src-out", outs[0], "--tgt-out", outs[1], "--src-norm-out", outs[2], "--tgt-norm-out", outs[3],
        "--spec", json.dumps(corpus_spec("multi30k_en_de")), "--train",
    ])
    assert read(outs[0]) == ["A dog runs .", "Two well @-@ known cats sleep ."]
    assert read(outs[3]) == ["Ein Hund rennt.", "Zwei bekannte Katzen schlafen."]
    assert "read 3 pairs, kept 2, dropped 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"preprocess": {"en": {"tokenizer": "moses"}}}, r"spec\.preprocess\.de: missing"),
        ({"preprocess": {"en": {"tokenizer": "moses"}, "de": {"tokenizer": "jieba"}}},
         r"spec\.preprocess\.de\.tokenizer: unknown tokenizer 'jieba' for 'de' \(known: moses, whitespace\)"),
        ({"preprocess": {"en": {"tokenizer": "moses"}, "de": {"tokenizer": "moses"}}, "clean": {"min_tokens": 1}},
         r"spec\.clean\.max_tokens: required key is missing"),
    ],
)
def test_cli_rejects_a_bad_spec_naming_the_key(capsys, spec, message):
    with pytest.raises(SystemExit) as exit_info:
        preprocess.main([
            "--src-lang", "en", "--tgt-lang", "de", "--src-in", "a", "--tgt-in", "b", "--src-out", "c", "--tgt-out", "d",
            "--src-norm-out", "e", "--tgt-norm-out", "f", "--spec", json.dumps(spec), "--train",
        ])
    assert exit_info.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def run_dev_cli(tmp_path, src_lines, tgt_lines, policy=None) -> tuple[list[str], Path]:
    src, tgt = write(tmp_path / "raw.en", src_lines), write(tmp_path / "raw.de", tgt_lines)
    outs = outputs(tmp_path)
    spec = corpus_spec("multi30k_en_de") | ({"blank_references": policy} if policy else {})
    preprocess.main([
        "--src-lang", "en", "--tgt-lang", "de", "--src-in", src, "--tgt-in", tgt,
        "--src-out", outs[0], "--tgt-out", outs[1], "--src-norm-out", outs[2], "--tgt-norm-out", outs[3],
        "--spec", json.dumps(spec),
    ])
    return outs, Path(tgt)


def test_blank_references_in_a_dev_set_are_reported_by_line_and_kept(tmp_path, capsys):
    """Default policy warn: every line stays, the log names the count and the line numbers
    of the blank references (a line of spaces is blank too) and records the policy."""
    tgt = ["Ein Hund.", "", "Eine Katze.", "   ", "Ein Vogel."]
    outs, _ = run_dev_cli(tmp_path, ["A dog.", "A man.", "A cat.", "A cow.", "A bird."], tgt)
    assert read(outs[1]) == ["Ein Hund .", "", "Eine Katze .", "", "Ein Vogel ."]
    err = capsys.readouterr().err
    assert "warning:" in err and "2 blank target (de) lines: 2, 4" in err
    assert "blank_references=warn" in err


def test_blank_references_fail_names_file_and_first_line_and_writes_nothing(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_dev_cli(tmp_path, ["A dog.", "A cat.", "", "A cow."], ["Ein Hund.", "", "Kuh.", ""], policy="fail")
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'raw.de'}:2:" in err and "2 blank target (de) lines: 2, 4" in err
    assert "1 blank source (en) line: 3" in err and "blank_references: fail" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw.de", "raw.en"]


def test_blank_reference_line_numbers_are_capped_but_counted(tmp_path):
    tgt = ["x"] + [""] * 30
    blank = {}
    src = write(tmp_path / "raw.src", ["a"] * 31)
    preprocess_files(WHITESPACE, WHITESPACE, (src, write(tmp_path / "raw.tgt", tgt)), outputs(tmp_path),
                     blank_references="warn", blank_lines=blank)
    assert blank == {"source": [], "target": list(range(2, 32))}
    described = preprocess.describe_blank_lines(blank, ("en", "de"))
    assert described.startswith("30 blank target (de) lines: 2, 3,") and described.endswith("21, ...")
