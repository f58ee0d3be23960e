"""BPE learn/apply: byte-identical with the subword-nmt command line, joint codes, threshold."""
from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nmtmodels.files import DataError
from workflow_scripts.data import bpe, parallel

# The `subword-nmt` console script of this interpreter, run exactly as installed.
SUBWORD_NMT = [sys.executable, "-c", "from subword_nmt.subword_nmt import main; main()"]

STEMS = ["play", "walk", "talk", "jump", "read", "paint", "climb", "look", "turn", "open"]
SUFFIXES = ["", "s", "ed", "ing", "er", "ers"]
GERMAN_STEMS = ["spiel", "lauf", "sprech", "spring", "les", "mal", "kletter", "schau", "dreh", "öffn"]
GERMAN_SUFFIXES = ["en", "t", "te", "end", "er", "ern"]


def make_corpus(path: Path, stems: list[str], suffixes: list[str], lines: int, seed: int) -> str:
    rng = random.Random(seed)
    text = "".join(
        " ".join(rng.choice(stems) + rng.choice(suffixes) for _ in range(rng.randint(1, 8))) + " .\n"
        for _ in range(lines)
    )
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture()
def corpus(tmp_path) -> tuple[str, str]:
    return (
        make_corpus(tmp_path / "train.en", STEMS, SUFFIXES, 300, seed=1),
        make_corpus(tmp_path / "train.de", GERMAN_STEMS, GERMAN_SUFFIXES, 300, seed=2),
    )


def learn(tmp_path: Path, corpus: tuple[str, str], merges: int, joint: bool) -> dict[str, Path]:
    paths = {name: tmp_path / name for name in ("codes.en", "codes.de", "vocab.en", "vocab.de")}
    mode = "--joint" if joint else "--separate"
    bpe.main(["learn", "--merges", str(merges), mode, "--vocabulary-threshold", "2",
              "--src-in", corpus[0], "--tgt-in", corpus[1],
              "--src-codes-out", str(paths["codes.en"]), "--tgt-codes-out", str(paths["codes.de"]),
              "--src-vocab-out", str(paths["vocab.en"]), "--tgt-vocab-out", str(paths["vocab.de"])])
    return paths


def run_cli(*args: str) -> None:
    subprocess.run([*SUBWORD_NMT, *args], check=True, capture_output=True)


def test_joint_learning_matches_learn_joint_bpe_and_vocab(tmp_path, corpus):
    ours = learn(tmp_path, corpus, 60, joint=True)
    run_cli("learn-joint-bpe-and-vocab", "--input", *corpus, "-s", "60", "-o", str(tmp_path / "ref.codes"),
            "--write-vocabulary", str(tmp_path / "ref.vocab.en"), str(tmp_path / "ref.vocab.de"))
    assert ours["codes.en"].read_bytes() == ours["codes.de"].read_bytes() == (tmp_path / "ref.codes").read_bytes()
    assert ours["vocab.en"].read_bytes() == (tmp_path / "ref.vocab.en").read_bytes()
    assert ours["vocab.de"].read_bytes() == (tmp_path / "ref.vocab.de").read_bytes()
    assert len(ours["codes.en"].read_text().splitlines()) == 61  # version line + 60 merges


def test_separate_learning_matches_the_cli_per_language(tmp_path, corpus):
    ours = learn(tmp_path, corpus, 40, joint=False)
    for lang, path in zip(("en", "de"), corpus):
        run_cli("learn-joint-bpe-and-vocab", "--input", path, "-s", "40", "-o", str(tmp_path / f"ref.codes.{lang}"),
                "--write-vocabulary", str(tmp_path / f"ref.vocab.{lang}"))
        assert ours[f"codes.{lang}"].read_bytes() == (tmp_path / f"ref.codes.{lang}").read_bytes()
        assert ours[f"vocab.{lang}"].read_bytes() == (tmp_path / f"ref.vocab.{lang}").read_bytes()
    assert ours["codes.en"].read_bytes() != ours["codes.de"].read_bytes()


@pytest.mark.parametrize("threads", [1, 2])
def test_apply_is_byte_identical_with_apply_bpe(tmp_path, corpus, monkeypatch, threads):
    learned = learn(tmp_path, corpus, 60, joint=True)
    text = tmp_path / "test.en"
    # Unseen words, double and edge spaces, an empty line: apply-bpe keeps edge spaces.
    # Threshold 25 reverts merges in this corpus (several subwords occur 18-24 times).
    text.write_text(Path(corpus[0]).read_text() + "playingly  unseenwords\n\n  walkers jumped \n", encoding="utf-8")
    monkeypatch.setattr(parallel, "CHUNK_SIZE", 50)
    bpe.main(["apply", "--codes", str(learned["codes.en"]), "--vocab", str(learned["vocab.en"]),
              "--vocabulary-threshold", "25", "--input", str(text), "--output", str(tmp_path / "ours"),
              "--threads", str(threads)])
    run_cli("apply-bpe", "-c", str(learned["codes.en"]), "--vocabulary", str(learned["vocab.en"]),
            "--vocabulary-threshold", "25", "-i", str(text), "-o", str(tmp_path / "ref"))
    ours, ref = (tmp_path / "ours").read_bytes(), (tmp_path / "ref").read_bytes()
    assert ours == ref
    assert b"@@ " in ours


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_vocabulary_threshold_splits_a_rare_merged_word(tmp_path):
    # "low" is built by merging l+o, then lo+w (word-final).  In the vocabulary it occurs
    # once; its parts "lo@@" and "w" occur 5 times each.
    codes = write(tmp_path / "codes", "#version: 0.2\nl o\nlo w</w>\n")
    vocab = write(tmp_path / "vocab", "lo@@ 5\nw 5\nlow 1\n")
    assert bpe.load_bpe(codes, vocab, 1).process_line("low") == "low"
    assert bpe.load_bpe(codes, vocab, 2).process_line("low") == "lo@@ w"


@pytest.mark.parametrize(("codes", "vocab", "where"), [
    ("#version: 0.2\nl o\nlo w x\n", "lo@@ 5\n", r"codes:3: expected a merge"),
    ("#version: 0.2\n", "lo@@ 5\n", r"codes: contains no merge operations"),
    ("#version: 0.2\nl o\n", "lo@@ 5\nw five\n", r"vocab:2: expected 'subword count'"),
])
def test_bad_codes_or_vocabulary_name_file_and_line_and_leave_no_output(tmp_path, capsys, codes, vocab, where):
    write(tmp_path / "codes", codes)
    write(tmp_path / "vocab", vocab)
    write(tmp_path / "input", "low\n")
    with pytest.raises(SystemExit) as exit_info:
        bpe.main(["apply", "--codes", str(tmp_path / "codes"), "--vocab", str(tmp_path / "vocab"),
                  "--vocabulary-threshold", "1", "--input", str(tmp_path / "input"), "--output", str(tmp_path / "out")])
    assert exit_info.value.code == 1
    assert re.search(where, capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["codes", "input", "vocab"]


def test_invalid_utf8_in_training_text_leaves_no_output(tmp_path, corpus):
    Path(corpus[1]).write_bytes(Path(corpus[1]).read_bytes() + b"bad \xc3(\n")
    with pytest.raises(DataError, match=r"train\.de:301: invalid UTF-8"):
        bpe.learn(20, True, corpus, (str(tmp_path / "c1"), str(tmp_path / "c2")), (str(tmp_path / "v1"), str(tmp_path / "v2")))
    assert not any((tmp_path / name).exists() for name in ("c1", "c2", "v1", "v2"))


def learn_in(directory: Path, corpus: tuple[str, str], merges: int, capsys) -> tuple[dict[str, Path], str]:
    """Learn joint codes into ``directory`` (named bpeN as in the workflow); (outputs, the learn log)."""
    directory.mkdir()
    paths = learn(directory, corpus, merges, joint=True)
    return paths, capsys.readouterr().err


def apply_cli(codes: Path, vocab: Path, text: str, output: Path, *extra: str) -> None:
    bpe.main(["apply", "--codes", str(codes), "--vocab", str(vocab), "--vocabulary-threshold", "1", "--input", text,
              "--output", str(output), *extra])


def test_a_corpus_that_runs_out_of_pairs_says_so_in_the_log_and_the_codes(tmp_path, corpus, capsys):
    """Fewer merges than bpeN when no pair occurs twice more: the learn log and the codes' first
    line say how many; subword-nmt reads such codes as version 0.2, and apply takes them."""
    paths, log = learn_in(tmp_path / "bpe600", corpus, 600, capsys)
    lines = paths["codes.en"].read_text().splitlines()
    learned = len(lines) - 1
    assert 60 < learned < 600
    assert lines[0] == f"#version: (learned {learned} of 600 merges: the corpus ran out of pairs) 0.2"
    assert f"bpe learn: {paths['codes.en']}: the corpus ran out of pairs after {learned} of 600 merges" in log
    assert f"bpe learn: {paths['codes.de']}: the corpus ran out of pairs after {learned} of 600 merges" in log
    apply_cli(paths["codes.en"], paths["vocab.en"], corpus[0], tmp_path / "ours")
    assert "note" not in capsys.readouterr().err
    run_cli("apply-bpe", "-c", str(paths["codes.en"]), "--vocabulary", str(paths["vocab.en"]), "-i", corpus[0], "-o", str(tmp_path / "ref"))
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "ref").read_bytes()
    # all 60 merges: no record, the log says nothing of pairs (the codes are subword-nmt's, test above)
    paths, log = learn_in(tmp_path / "bpe60", corpus, 60, capsys)
    assert paths["codes.en"].read_text().startswith("#version: 0.2\n") and "ran out of pairs" not in log


@pytest.mark.parametrize("joint", [True, False], ids=["joint", "separate"])
def test_a_corpus_without_a_pair_seen_twice_is_refused_at_learning_in_one_line(tmp_path, capsys, joint):
    """Two lines whose symbol pairs all differ: no merge can be learned (subword-nmt could not
    even read such codes back), so learn names the corpus in one line and writes nothing."""
    source, target = tmp_path / "tiny.zh", tmp_path / "tiny.en"
    source.write_text("你好\n我们\n", encoding="utf-8")
    target.write_text("hello\nwe\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        learn(tmp_path, (str(source), str(target)), 50, joint)
    assert exit_info.value.code == 1
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    learned_on = f"{source} and {target}" if joint else str(source)
    assert err == [f"python -m workflow_scripts.data.bpe: error: {source}: too little text to learn BPE: no pair of symbols "
                   f"occurs twice in {learned_on} (subword-nmt's minimum frequency 2), so no merge was learned; "
                   "use a larger corpus or character units"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["tiny.en", "tiny.zh"]


def test_apply_names_missing_codes_in_one_line(tmp_path, corpus, capsys):
    with pytest.raises(SystemExit) as exit_info:
        apply_cli(tmp_path / "bpe60" / "codes", tmp_path / "vocab", corpus[0], tmp_path / "out")
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == (f"python -m workflow_scripts.data.bpe: error: {tmp_path / 'bpe60' / 'codes'}: "
                                       "cannot open (No such file or directory)\n")
    assert not (tmp_path / "out").exists()


def cut(codes: Path, lines: int) -> None:
    """Drop the last ``lines`` lines, at a line boundary."""
    codes.write_text("".join(codes.read_text().splitlines(True)[:-lines]))


@pytest.mark.parametrize(("merges", "damage", "message"), [
    (600, lambda codes: cut(codes, 1), r"codes.en: \d+ merges, but its first line records that learning made \d+: the file was cut"),
    (60, lambda codes: cut(codes, 1), r"codes.en: 59 merges, fewer than the 60 of bpe60, and its first line records no early stop, "
                                      r"and \d+ subwords of .*vocab.en need merges it lacks \('"),
    (60, lambda codes: cut(codes, 30), r"codes.en: 30 merges, fewer than the 60 of bpe60"),
    (60, lambda codes: codes.write_bytes(codes.read_bytes()[:-3]), r"codes.en:61: the last line has no newline: the file was cut short"),
], ids=["ran-out-cut", "cut-one-line", "cut-half", "cut-inside-a-line"])
def test_apply_refuses_cut_codes_in_one_line_naming_them_and_writes_nothing(tmp_path, corpus, capsys, merges, damage, message):
    paths, _ = learn_in(tmp_path / f"bpe{merges}", corpus, merges, capsys)
    damage(paths["codes.en"])
    with pytest.raises(SystemExit) as exit_info:
        apply_cli(paths["codes.en"], paths["vocab.en"], corpus[0], tmp_path / "out")
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"python -m workflow_scripts.data.bpe: error: {paths['codes.en']}")
    assert re.search(message, err[0]), err[0]
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))


def test_apply_checks_the_merges_against_bpe_n(tmp_path, corpus, capsys):
    """N comes from the codes' bpeN directory (the workflow's layout) or --merges; codes learned
    before the count was recorded, with fewer merges, pass when the vocabulary needs no other merge."""
    paths, _ = learn_in(tmp_path / "bpe60", corpus, 60, capsys)
    apply_cli(paths["codes.en"], paths["vocab.en"], corpus[0], tmp_path / "out", "--merges", "60")
    with pytest.raises(SystemExit):
        apply_cli(paths["codes.en"], paths["vocab.en"], corpus[0], tmp_path / "out2", "--merges", "50")
    assert "codes.en: 60 merges, more than the 50 of bpe50: codes of another merge count?" in capsys.readouterr().err
    moved = tmp_path / "bpe600"
    moved.mkdir()
    ran_out, _ = learn_in(tmp_path / "bpe700", corpus, 700, capsys)
    (moved / "codes").write_bytes(ran_out["codes.en"].read_bytes())  # learned for bpe700, where bpe600 asks
    with pytest.raises(SystemExit):
        apply_cli(moved / "codes", ran_out["vocab.en"], corpus[0], tmp_path / "out2")
    assert "codes: learned for bpe700 (its first line), not bpe600" in capsys.readouterr().err
    legacy = ran_out["codes.en"].read_text().splitlines(True)
    (moved / "codes").write_text("#version: 0.2\n" + "".join(legacy[1:]))  # as learned before the record
    apply_cli(moved / "codes", ran_out["vocab.en"], corpus[0], tmp_path / "out3")
    err = capsys.readouterr().err
    assert f"bpe apply: note: {moved / 'codes'}: {len(legacy) - 1} merges, fewer than the 600 of bpe600: accepted as codes whose " \
           "corpus ran out of pairs" in err
    apply_cli(ran_out["codes.en"], ran_out["vocab.en"], corpus[0], tmp_path / "out4")
    assert (tmp_path / "out3").read_bytes() == (tmp_path / "out4").read_bytes()
