"""Scores agree with the sacrebleu command-line tool on the same files."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from sacrebleu.metrics import TER

from nmtmodels.cli.score import main
from nmtmodels.text.scoring import bleu_tokenizer, score_corpus, write_scores_json

HYPS = [
    "The cat sat on the mat.",
    "It was a sunny day, and we went out.",
    "He said that the results are good!",
    "Nobody knows why.",
]
REFS_A = [
    "The cat sat on a mat.",
    "It was a sunny day and we went outside.",
    "He said the results were good!",
    "No one knows why.",
]
REFS_B = [
    "A cat was sitting on the mat.",
    "The day was sunny, so we went out.",
    "He said that the results are very good.",
    "Nobody knows the reason.",
]
ZH_HYPS = ["我爱北京天安门。", "今天天气很好，我们去公园。"]
ZH_REFS = ["我爱北京的天安门。", "今天天气不错，我们去公园吧。"]


def cli_scores(tmp_path, hyps, refs, *options):
    """sacrebleu REF... -i HYP -m bleu chrf ter --format json, 4 decimals."""
    hyp_file = tmp_path / "cli.hyp"
    hyp_file.write_text("\n".join(hyps) + "\n", encoding="utf-8")
    ref_files = []
    for number, stream in enumerate(refs):
        ref_files.append(tmp_path / f"cli.ref{number}")
        ref_files[-1].write_text("\n".join(stream) + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "sacrebleu", *map(str, ref_files), "-i", str(hyp_file),
               "-m", "bleu", "chrf", "ter", "--format", "json", "-w", "4", *options]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return {entry["name"]: entry for entry in json.loads(output)}


@pytest.mark.parametrize("refs", [[REFS_A], [REFS_A, REFS_B]], ids=["one-ref", "two-refs"])
def test_bleu_chrf_and_ter_match_the_cli(tmp_path, refs):
    scores = score_corpus(HYPS, refs, "en")
    cli = cli_scores(tmp_path, HYPS, refs)
    assert scores["bleu"]["score"] == pytest.approx(cli["BLEU"]["score"], abs=1e-4)
    assert scores["bleu"]["signature"] == cli["BLEU"]["signature"]
    assert scores["chrf"]["score"] == pytest.approx(cli["chrF2"]["score"], abs=1e-4)
    assert scores["chrf"]["signature"] == cli["chrF2"]["signature"]
    assert scores["ter"]["score"] == pytest.approx(cli["TER"]["score"], abs=1e-4)
    assert scores["ter"]["signature"] == cli["TER"]["signature"]
    assert scores["num_sentences"] == 4 and scores["num_references"] == len(refs)
    assert f"nrefs:{len(refs)}" in scores["bleu"]["signature"] and "tok:13a" in scores["bleu"]["signature"]


def test_chinese_uses_the_zh_tokenizer(tmp_path):
    scores = score_corpus(ZH_HYPS, [ZH_REFS], "zh")
    cli = cli_scores(tmp_path, ZH_HYPS, [ZH_REFS], "-tok", "zh")
    assert "tok:zh" in scores["bleu"]["signature"]
    assert scores["bleu"]["score"] == pytest.approx(cli["BLEU"]["score"], abs=1e-4)
    assert scores["bleu"]["score"] != pytest.approx(score_corpus(ZH_HYPS, [ZH_REFS], "en")["bleu"]["score"])


def test_ter_by_hand_and_as_sacrebleu_computes_it():
    def ter(hyps, refs, lang="en"):
        entry = score_corpus(hyps, refs, lang)["ter"]
        assert entry["score"] == pytest.approx(TER().corpus_score(hyps, refs).score, rel=1e-12)
        return entry

    assert ter(REFS_A, [REFS_A])["score"] == 0.0  # a perfect hypothesis: no edits
    assert ter(["The Cat sat on the mat."], [["the cat sat on the mat."]])["score"] == 0.0  # case-insensitive
    one = ter(["the cat sat on the mat"], [["the cat sat on a mat"]])  # one substitution in 6 words
    assert (one["num_edits"], one["reference_length"]) == (1, 6) and one["score"] == pytest.approx(100 / 6)
    shifted = ter(["on the mat the cat sat"], [["the cat sat on the mat"]])  # one block shift
    assert shifted["num_edits"] == 1 and shifted["score"] == pytest.approx(100 / 6)
    # Two references: the fewest edits (1, "x" for "c") over the average reference length (6 + 4) / 2.
    two = ter(["a b c d"], [["a b c d e f"], ["a b x d"]])
    assert (two["num_edits"], two["reference_length"], two["score"]) == (1, 5.0, pytest.approx(20.0))
    assert "tok:tercom" in one["signature"] and "case:lc" in one["signature"] and "nrefs:2" in two["signature"]


def test_chinese_and_japanese_ter_count_characters(tmp_path):
    scores = score_corpus(ZH_HYPS[:1], [ZH_REFS[:1]], "zh")  # 我爱北京天安门。 lacks 的 of 9 characters
    assert (scores["ter"]["num_edits"], scores["ter"]["reference_length"]) == (1, 9)
    assert scores["ter"]["score"] == pytest.approx(100 / 9)
    assert "norm:yes" in scores["ter"]["signature"] and "asian:yes" in scores["ter"]["signature"]
    cli = cli_scores(tmp_path, ZH_HYPS, [ZH_REFS], "--ter-normalized", "--ter-asian-support")
    both = score_corpus(ZH_HYPS, [ZH_REFS], "zh")["ter"]
    assert both["score"] == pytest.approx(cli["TER"]["score"], abs=1e-4) and both["signature"] == cli["TER"]["signature"]
    assert score_corpus(["東京に行きます。"], [["東京へ行きます。"]], "ja")["ter"]["score"] < 100.0
    assert score_corpus(["東京に行きます。"], [["東京へ行きます。"]], "en")["ter"]["score"] == 100.0  # one "word" each


def test_japanese_tokenizer_is_in_the_signature():
    expected = "ja-mecab" if bleu_tokenizer("ja") == "ja-mecab" else "char"
    scores = score_corpus(["東京に行きます。"], [["東京へ行きます。"]], "ja")
    assert f"tok:{expected}" in scores["bleu"]["signature"]
    assert bleu_tokenizer("de") == "13a" and bleu_tokenizer("zh-CN") == "zh"


def test_tokenized_bleu_is_multi_bleu_style(tmp_path):
    tok_hyps = ["the cat sat on the mat .", "it was a sunny day , and we went out ."]
    tok_refs = [["the cat sat on a mat .", "it was a sunny day and we went outside ."]]
    scores = score_corpus(HYPS[:2], [REFS_A[:2]], "en", tok_hyps, tok_refs)
    cli = cli_scores(tmp_path, tok_hyps, tok_refs, "-tok", "none", "--force", "-s", "none")
    assert scores["tokenized_bleu"]["score"] == pytest.approx(cli["BLEU"]["score"], abs=1e-4)
    assert "tok:none" in scores["tokenized_bleu"]["signature"] and "smooth:none" in scores["tokenized_bleu"]["signature"]
    # By hand: clipped n-gram matches over both sentences 15/18, 10/16, 6/14, 3/12;
    # 18 hypothesis tokens > 17 reference tokens, so no brevity penalty.
    expected = 100 * math.exp((math.log(15 / 18) + math.log(10 / 16) + math.log(6 / 14) + math.log(3 / 12)) / 4)
    assert scores["tokenized_bleu"]["score"] == pytest.approx(expected, rel=1e-9)
    assert scores["tokenized_bleu"]["hypothesis_length"] == 18 and scores["tokenized_bleu"]["reference_length"] == 17
    assert scores["tokenized_bleu"]["brevity_penalty"] == 1.0


def test_no_smoothing_gives_zero_when_a_precision_is_zero():
    scores = score_corpus(["a b c d e"], [["a b x d e"]], "en", ["a b c d e"], [["a b x d e"]])
    assert scores["tokenized_bleu"]["score"] == 0.0  # no matching 3-gram, as multi-bleu.perl
    assert scores["bleu"]["score"] > 0.0  # sacreBLEU's default exp smoothing


def test_bad_counts_are_value_errors_naming_the_counts():
    with pytest.raises(ValueError, match="0 lines"):
        score_corpus([], [[]], "en")
    with pytest.raises(ValueError, match="4 hypotheses but reference 2 has 3 lines"):
        score_corpus(HYPS, [REFS_A, REFS_B[:3]], "en")
    with pytest.raises(ValueError, match="2 detokenised but 1 tokenised"):
        score_corpus(HYPS[:2], [REFS_A[:2]], "en", ["x"], [["y"]])
    with pytest.raises(ValueError, match="both"):
        score_corpus(HYPS, [REFS_A], "en", tokenized_hypotheses=HYPS)


def test_write_scores_json_is_atomic(tmp_path):
    path = tmp_path / "scores" / "test.json"
    scores = score_corpus(HYPS, [REFS_A], "en")
    write_scores_json(path, scores)
    assert json.loads(path.read_text(encoding="utf-8")) == scores
    with pytest.raises(TypeError):
        write_scores_json(path, {"bad": object()})
    assert json.loads(path.read_text(encoding="utf-8")) == scores  # the old file survives
    assert [p.name for p in path.parent.iterdir()] == ["test.json"]


def test_cli(tmp_path):
    files = {}
    for name, lines in {"hyp": HYPS, "ref1": REFS_A, "ref2": REFS_B, "short": REFS_A[:3]}.items():
        files[name] = tmp_path / name
        files[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "scores.json"
    main(["--lang", "en", "--hyp", str(files["hyp"]), "--ref", str(files["ref1"]), "--ref", str(files["ref2"]), "--output", str(out)])
    assert json.loads(out.read_text())["bleu"] == score_corpus(HYPS, [REFS_A, REFS_B], "en")["bleu"]
    result = subprocess.run(
        [sys.executable, "-m", "nmtmodels.cli", "score", "--lang", "en", "--hyp", str(files["hyp"]), "--ref", str(files["short"]),
         "--output", str(tmp_path / "bad.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "4 hypotheses but reference 1 has 3 lines" in result.stderr and str(files["short"]) in result.stderr
    assert not (tmp_path / "bad.json").exists()


def test_blank_reference_lines_are_counted() -> None:
    """Lines where some reference stream is empty (kept by ``blank_references: warn``)."""
    hyps = ["a cat", "a dog", "", "the end"]
    first, second = ["a cat", "", "x", "the end"], ["a cat", "a dog", "  ", "the end"]
    assert score_corpus(hyps, [first, second], "en")["blank_reference_lines"] == 2  # lines 2 and 3
    assert score_corpus(hyps, [second], "en")["blank_reference_lines"] == 1


def test_chrf_plus_plus_matches_the_cli_and_changes_the_fingerprint(tmp_path, monkeypatch):
    """chrF++ is one registry entry: its score and signature are sacrebleu's (``-m chrf
    --chrf-word-order 2``), and taking it out of the registry changes the fingerprint that makes
    the workflow rescore."""
    from nmtmodels.text import scoring

    scores = score_corpus(HYPS, [REFS_A, REFS_B], "en")
    cli = cli_scores(tmp_path, HYPS, [REFS_A, REFS_B], "--chrf-word-order", "2")
    assert scores["chrf_pp"]["score"] == pytest.approx(cli["chrF2++"]["score"], abs=1e-4)
    assert scores["chrf_pp"]["signature"] == cli["chrF2++"]["signature"] and "nw:2" in scores["chrf_pp"]["signature"]
    with_it = scoring.metrics_fingerprint()
    monkeypatch.setattr(scoring, "METRIC_SPECS", {k: v for k, v in scoring.METRIC_SPECS.items() if k != "chrf_pp"})
    assert scoring.metrics_fingerprint() != with_it
    assert "chrf_pp" not in score_corpus(HYPS, [REFS_A], "en")
