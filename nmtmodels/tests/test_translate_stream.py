"""The library's one translation stream (issue 56): ``Translator.stream`` takes any iterable of
lines, keeps memory bounded whatever the input's size, reports progress, and fills the statistics
whose warnings ``nmt-translate`` prints, line numbers and all; its degenerate-output rule; and the
one UTF-8 line decoder that the API, the command line and the workflow's corpus formats share.
The model is the untrained tiny Transformer package of test_model_package.py."""
from __future__ import annotations

import gc
import re
import tracemalloc
from pathlib import Path

import pytest

from nmtmodels import cli
from nmtmodels.decoding.translation_stats import ExtraInput, TranslationStats, repeats
from nmtmodels.decoding.translator import TextHypothesis, Translation, Translator
from nmtmodels.files import DataError, raw_lines, read_lines
from nmtmodels.tests.test_model_package import WORDS, bpe_package
from nmtmodels.tests.test_model_package import files as package_files

files = package_files  # the fixture, under the name the tests take
WARNING = re.compile(r"^nmt-translate: warning: (.*)$")


def varied_lines(count: int) -> list[str]:
    """Lines of the package's words in turn, some with unknown characters (mostly <unk>), some
    long, some of two sentences (for the en splitter: a period and an upper-case word)."""
    lines = []
    for i in range(count):
        words = WORDS[i % 7:] + WORDS[:i % 7]
        if i % 11 == 3:
            words = ["QQQ", "ZZZ", "XXX", *words[:1]]
        elif i % 13 == 5:
            words = words * 4
        elif i % 17 == 7:
            words = [*words[:3], "end.", "Newer", *words[3:]]
        lines.append(" ".join(words))
    return lines


def peak_bytes(translator: Translator, lines: list[str], progress: list[int]) -> tuple[int, TranslationStats, int]:
    """Peak traced memory while streaming ``lines`` (as bytes, as a file gives them), the stats
    and the count of results."""
    gc.collect()
    tracemalloc.start()
    try:
        stream = translator.stream((f"{line}\n".encode() for line in lines), chunk_lines=500, progress=progress.append)
        count = sum(1 for _ in stream)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, stream.stats, count


@pytest.mark.heavy
def test_streaming_12000_lines_has_bounded_memory_progress_and_the_clis_warnings(files, tmp_path, capsys):
    """Before: no stream; translate_lines took a list and kept every result, so memory grew with
    the input.  Now the peak for 12,000 lines is that for 3,000 (chunks of 500), the progress
    callback counts every sentence, and the warnings of the API's stats are the lines that
    nmt-translate prints for the same input."""
    directory = bpe_package(files)
    translator = Translator.from_checkpoint(directory, threads=1)
    small, large = varied_lines(3000), varied_lines(12000)
    progress_small: list[int] = []
    progress_large: list[int] = []
    peak_small, stats_small, count_small = peak_bytes(translator, small, progress_small)
    peak_large, stats_large, count_large = peak_bytes(translator, large, progress_large)
    assert (count_small, count_large) == (3000, 12000)
    assert sum(progress_small) == 3000 and sum(progress_large) == 12000 and len(progress_large) > 24  # batches
    assert stats_large.lines_read == 12000 and stats_large.input_done
    assert peak_large < 1.25 * peak_small, (peak_small, peak_large)  # 4x the lines: not 4x the memory
    # the same warnings, line numbers included, from the API's stats and from nmt-translate
    source = tmp_path / "in.en"
    source.write_text("".join(f"{line}\n" for line in small[:600]), encoding="utf-8")
    stream = translator.stream(raw_lines(source), name=str(source))
    results = list(stream)
    api = stream.stats.messages()
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(source), "--threads", "1",
                               "--log-interval", "1e9"]) == 0
    printed = [m.group(1) for line in capsys.readouterr().err.splitlines() if (m := WARNING.match(line))]
    assert printed == api
    flagged = {flag for line in results for flag in line.flags}
    assert {"unknown", "multi_sentence", "degenerate"} <= flagged, flagged
    multi = [line.number for line in results if "multi_sentence" in line.flags]
    assert multi[:3] == [8, 25, 42] and any(f"(line {', '.join(map(str, multi[:10]))}, ...) hold several sentences" in m
                                            for m in api)
    unknown = [line for line in results if "unknown" in line.flags]
    assert unknown[0].number == 4 and unknown[0].unknown_rate > 0.5
    assert 0 < stream.stats.unknown_rate < 1


def translation(source: list[str], output: list[str]) -> Translation:
    return Translation(source=" ".join(source), source_tokens=source, hypotheses=[TextHypothesis(" ".join(output), 0.0, output)])


def test_the_degenerate_flag_fires_on_repeated_tokens_and_far_off_length_ratios():
    assert repeats(["das"] * 4) and repeats("ein Hund ein Hund ein Hund ein Hund".split())
    assert not repeats(["das"] * 3) and not repeats("ein Hund läuft im Schnee .".split())
    stats = TranslationStats()
    source = "a man is riding a bike on the road".split()
    normal = [translation(source, "ein Mann fährt ein Fahrrad auf der Straße".split()) for _ in range(20)]
    stats.add_sentences(normal)
    assert all(stats.add_line(number, [t]) == frozenset() for number, t in enumerate(normal, start=1))
    looping = translation(source, ["Mann"] * 8)
    long = translation(source, [f"w{i}" for i in range(40)])  # 5x the input's ratio, no repetition
    stats.add_sentences([looping, long])
    assert stats.add_line(21, [looping]) == {"degenerate"} and stats.add_line(22, [long]) == {"degenerate"}
    assert stats.counts["degenerate"] == 2 and stats.lines["degenerate"] == [21, 22]
    assert "2 line(s) (line 21, 22) came out degenerate" in stats.message("degenerate")


def test_a_repeating_model_output_is_flagged_by_the_stream(files, monkeypatch):
    """A search that writes one token again and again: the line is flagged and named."""
    directory = bpe_package(files)
    translator = Translator.from_checkpoint(directory)
    monkeypatch.setattr(Translator, "_target_tokens", lambda self, hypothesis: ["lower"] * 6)
    stream = translator.stream([" ".join(WORDS)], name="in.en")
    [line] = list(stream)
    assert "degenerate" in line.flags and line.text == " ".join(["lower"] * 6)
    assert any(m.startswith("in.en: 1 line(s) (line 1) came out degenerate") for m in stream.stats.messages())


def test_pretokenized_extra_inputs_are_aligned_per_line_and_their_line_counts_checked(files, tmp_path):
    translator = Translator.from_checkpoint(files / "best.pt", pretokenized=True)
    lines = ["low@@ er", "w@@ id@@ est"]
    assert [line.text for line in translator.stream(lines)] == [t.text for t in translator.translate(lines)]
    translator.model.extra_inputs = {"starts": 0}  # a stand-in: the model is not asked for them here
    stream = translator.stream(lines, extras={"starts": ExtraInput(["0 1"], name="starts.txt")})
    with pytest.raises(DataError, match=r"^starts.txt: has 1 lines but <input> has more \(line counts differ\)$"):
        list(stream)
    bad = translator.stream(lines, extras={"starts": ExtraInput(["0 y", "0 x 2"], name="starts.txt")})  # nothing to search
    assert [str(line.error) for line in bad] == ["starts.txt:1: expected space-separated integers, got '0 y'",
                                                 "starts.txt:2: expected space-separated integers, got '0 x 2'"]
    assert bad.stats.failed == [1, 2] and bad.stats.failed_count == 2


def test_one_utf8_line_reader_names_a_bad_line_alike_everywhere(files, tmp_path, capsys):
    """Before, UTF-8 lines were decoded in three places and files opened in a fourth; now
    nmtmodels.files decodes every line: the API and nmt-translate (and the workflow's corpus
    formats, tests/test_line_decoder.py) give the same error for the same bad byte, and the
    other lines translate."""
    directory = bpe_package(files)
    bad = tmp_path / "bad.en"
    bad.write_bytes(b"lower newer\nwid \xff est\nlowest\n")
    expected = f"{bad}:2: invalid UTF-8 (invalid start byte at byte 4)"
    with pytest.raises(DataError) as from_reader:
        list(read_lines(bad))
    results = list(Translator.from_checkpoint(directory).stream(raw_lines(bad), name=str(bad)))
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(bad), "--log-interval", "1e9"]) == 2
    captured = capsys.readouterr()
    assert str(from_reader.value) == str(results[1].error) == expected  # the workflow's: tests/test_line_decoder.py
    assert f"nmt-translate: error: {expected}" in captured.err.splitlines()
    assert results[0].text and results[2].text and len(captured.out.splitlines()) == 3
    repo = Path(__file__).resolve().parents[2]
    sources = [path for root in ("nmtmodels", "workflow_scripts") for path in (repo / root).rglob("*.py")
               if "tests" not in path.relative_to(repo).parts]
    decoders = sorted(path.relative_to(repo).as_posix() for path in sources
                      if "invalid UTF-8 ({exc.reason}" in path.read_text(encoding="utf-8"))
    assert decoders == ["nmtmodels/files.py"]
