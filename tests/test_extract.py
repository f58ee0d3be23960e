"""Tests of workflow_scripts.data.corpus_spec (spec checks, holdout), the readers of workflow_scripts.data.formats, and the extract CLI."""
from __future__ import annotations

import collections
import gzip
import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from workflow_scripts.data import extract
from workflow_scripts.data.corpus_spec import (
    check_corpus_spec,
    downloads_for,
    extraction_part,
    holdout_assignment,
    reference_count,
    splits_of,
)
from workflow_scripts.data.fetch import fetch

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_mirror = pytest.mark.skipif(not MIRROR.is_dir(), reason="no data mirror at ../shared/data")


# --------------------------------------------------------------------------- helpers

def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def tar_bytes(members: dict[str, bytes], mode: str = "w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def make_corpus(tmp_path: Path, files: dict[str, bytes], splits: dict, src: str = "en", tgt: str = "de", **extra) -> tuple[dict, Path]:
    """Write download files into tmp_path/downloads/toy and return (spec, downloads dir)."""
    downloads_dir = tmp_path / "downloads" / "toy"
    downloads_dir.mkdir(parents=True)
    for name, data in files.items():
        (downloads_dir / name).write_bytes(data)
    spec = {"src": src, "tgt": tgt, "downloads": {name: {"url": f"https://example.org/{name}"} for name in files}, "splits": splits,
            **extra}
    return spec, downloads_dir


def run_extract(spec: dict, split: str, lang: str, downloads_dir: Path, output: Path, ref: int | None = None) -> int:
    argv = ["--spec", json.dumps(spec), "--split", split, "--lang", lang, "--downloads-dir", str(downloads_dir), "--output", str(output)]
    if ref is not None:
        argv += ["--ref", str(ref)]
    return extract.main(argv)


def extract_lines(spec: dict, split: str, lang: str, downloads_dir: Path, tmp_path: Path, ref: int | None = None) -> list[str]:
    output = tmp_path / "out" / f"{split}.{lang}.{ref}"
    assert run_extract(spec, split, lang, downloads_dir, output, ref) == 0
    data = output.read_bytes()
    assert data.endswith(b"\n") and b"\r" not in data and not data.startswith(b"\xef\xbb\xbf")
    return data.decode("utf-8").split("\n")[:-1]


def assert_fails(capsys, spec, split, lang, downloads_dir, output, *fragments, ref=None) -> str:
    """The CLI exits 1, prints an error holding every fragment, and leaves no file behind."""
    assert run_extract(spec, split, lang, downloads_dir, output, ref) == 1
    message = capsys.readouterr().err
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert not output.exists()
    leftovers = list(output.parent.glob(f".{output.name}*")) if output.parent.exists() else []
    assert leftovers == []
    return message


PLAIN = {"format": "plain", "files": {"en": "a.en", "de": "a.de"}}


# --------------------------------------------------------------------------- formats

def test_plain_reads_gzip_and_plain_files_and_writes_clean_lines(tmp_path):
    spec, downloads = make_corpus(
        tmp_path,
        {"a.en": gz("\ufeffHello world\r\nline\u2028two\r\n\nlast".encode()), "a.de": b"Hallo\rWelt\nZeile\x0czwei\n\nletzte\n"},
        {"train": [PLAIN]},
    )
    assert extract_lines(spec, "train", "en", downloads, tmp_path) == ["Hello world", "line two", "", "last"]
    assert extract_lines(spec, "train", "de", downloads, tmp_path) == ["Hallo Welt", "Zeile zwei", "", "letzte"]


def test_parts_are_concatenated_in_order(tmp_path):
    spec, downloads = make_corpus(
        tmp_path,
        {"a.en": b"one\ntwo\n", "a.de": b"eins\nzwei\n", "b.en": b"three\n", "b.de": b"drei\n"},
        {"train": [PLAIN, {"format": "plain", "files": {"en": "b.en", "de": "b.de"}}]},
    )
    assert extract_lines(spec, "train", "en", downloads, tmp_path) == ["one", "two", "three"]


def test_tsv_removes_bom_and_ignores_trailing_empty_lines(tmp_path):
    data = "\ufeffHi.\t嗨。\tCC-BY #1\nRun!\t跑！\tCC-BY #2\n\n\n".encode()
    part = {"format": "tsv", "file": "cmn.txt", "num_fields": 3, "columns": {"en": 0, "zh": 1}}
    spec, downloads = make_corpus(tmp_path, {"cmn.txt": gz(data)}, {"train": [part]}, src="zh", tgt="en")
    assert extract_lines(spec, "train", "zh", downloads, tmp_path) == ["嗨。", "跑！"]
    assert extract_lines(spec, "train", "en", downloads, tmp_path) == ["Hi.", "Run!"]


def test_tsv_wrong_field_count_names_file_and_line(tmp_path, capsys):
    part = {"format": "tsv", "file": "cmn.txt", "num_fields": 3, "columns": {"en": 0, "zh": 1}}
    spec, downloads = make_corpus(tmp_path, {"cmn.txt": b"a\tb\tc\nd\te\n"}, {"train": [part]}, src="zh", tgt="en")
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", f"{downloads / 'cmn.txt'}:2", "expected 3 fields", "found 2")


def test_tsv_empty_line_inside_the_file_is_an_error(tmp_path, capsys):
    part = {"format": "tsv", "file": "cmn.txt", "num_fields": 2, "columns": {"en": 0, "zh": 1}}
    spec, downloads = make_corpus(tmp_path, {"cmn.txt": b"a\tb\n\nc\td\n"}, {"train": [part]}, src="zh", tgt="en")
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", f"{downloads / 'cmn.txt'}:2", "empty line")


def test_aspec_columns_and_short_line(tmp_path, capsys):
    train = "0.9 ||| doc-1 ||| 1 ||| 猫 が いる 。 ||| There is a cat.\n0.8 ||| doc-1 ||| 2 ||| 犬 ||| A dog\n"
    part = {"format": "aspec", "file": "train-1.txt", "columns": {"ja": 3, "en": 4}}
    spec, downloads = make_corpus(tmp_path, {"train-1.txt": train.encode(), "bad.txt": b"1 ||| 2 ||| only ja\n"}, {"train": [part]},
                                  src="ja", tgt="en")
    assert extract_lines(spec, "train", "ja", downloads, tmp_path) == ["猫 が いる 。", "犬"]
    assert extract_lines(spec, "train", "en", downloads, tmp_path) == ["There is a cat.", "A dog"]
    spec["splits"]["train"] = [{"format": "aspec", "file": "bad.txt", "columns": {"ja": 2, "en": 3}}]
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "o.en", f"{downloads / 'bad.txt'}:1", "no field 3")


SGM_EN = b"""<srcset setid="newstest2012" srclang="any">
<doc sysid="ref" docid="d1" genre="news" origlang="en">
<hl>
<seg id="1">AT&T &amp; R&amp;D say &quot;hi&quot;  &#8211;  now</seg>
</hl>
<p>
<seg id="2">  second\tsentence  </seg>
</p>
</doc>
</srcset>
"""
SGM_DE = b'<srcset>\n<doc docid="d1">\n<seg id="1">eins</seg>\n<seg id="2">zwei</seg>\n</doc>\n</srcset>\n'


def test_sgml_segments_are_unescaped_and_whitespace_collapsed(tmp_path):
    spec, downloads = make_corpus(tmp_path, {"t.tgz": tar_bytes({"test/n-src.en.sgm": SGM_EN, "test/n-src.de.sgm": SGM_DE})},
                                  {"newstest": [{"format": "sgml", "files": {"en": "t.tgz:test/n-src.en.sgm",
                                                                             "de": "t.tgz:test/n-src.de.sgm"}}]})
    assert extract_lines(spec, "newstest", "en", downloads, tmp_path) == ['AT&T & R&D say "hi" \u2013 now', "second sentence"]
    assert extract_lines(spec, "newstest", "de", downloads, tmp_path) == ["eins", "zwei"]


def test_sgml_seg_without_closing_tag_is_an_error(tmp_path, capsys):
    spec, downloads = make_corpus(tmp_path, {"a.en": b'<seg id="1">open\n', "a.de": SGM_DE},
                                  {"t": [{"format": "sgml", "files": {"en": "a.en", "de": "a.de"}}]})
    assert_fails(capsys, spec, "t", "en", downloads, tmp_path / "o", f"{downloads / 'a.en'}:1", "</seg>")


IWSLT_XML = """<?xml version="1.0" encoding="UTF-8"?>
<mteval>
<refset setid="iwslt2014-tst2010" srclang="de" trglang="en" refid="ref">
<doc docid="535" genre="lectures">
<url>http://www.ted.com/talks/x.html</url>
<description>TED Talk Subtitles and Transcript: about R&amp;D</description>
<keywords>talks</keywords>
<talkid>535</talkid>
<title>Some title</title>
<seg id="1"> Last year I showed these  two slides. </seg>
<seg id="2">R&amp;D &lt;works&gt; </seg>
</doc>
</refset>
</mteval>
"""


def test_iwslt_xml_reads_seg_elements_from_a_tgz_member(tmp_path):
    de = IWSLT_XML.replace("Last year I showed these  two slides.", "Letztes Jahr").replace("R&amp;D &lt;works&gt; ", "F&amp;E")
    archive = tar_bytes({"de-en/tst2010.de.xml": de.encode(), "de-en/tst2010.en.xml": IWSLT_XML.encode()})
    spec, downloads = make_corpus(tmp_path, {"de-en.tgz": archive},
                                  {"test": [{"format": "iwslt_xml", "files": {"de": "de-en.tgz:de-en/tst2010.de.xml",
                                                                              "en": "de-en.tgz:de-en/tst2010.en.xml"}}]},
                                  src="de", tgt="en")
    assert extract_lines(spec, "test", "en", downloads, tmp_path) == ["Last year I showed these two slides.", "R&D <works>"]
    assert extract_lines(spec, "test", "de", downloads, tmp_path) == ["Letztes Jahr", "F&E"]


def test_iwslt_xml_malformed_names_file_and_line(tmp_path, capsys):
    broken = IWSLT_XML.replace("<seg id=\"2\">R&amp;D", "<seg id=\"2\">R&D")
    spec, downloads = make_corpus(tmp_path, {"a.en": broken.encode(), "a.de": IWSLT_XML.encode()},
                                  {"t": [{"format": "iwslt_xml", "files": {"en": "a.en", "de": "a.de"}}]})
    assert_fails(capsys, spec, "t", "en", downloads, tmp_path / "o", f"{downloads / 'a.en'}:11", "malformed XML")


TAGS_EN = """<doc docid="1" genre="lectures">
<url>http://www.ted.com/talks/a.html</url>
<keywords>talks, oceans</keywords>
<speaker>David Gallo</speaker>
<talkid>1</talkid>
<title>David Gallo: Underwater astonishments</title>
<description>TED Talk Subtitles and Transcript: David Gallo shows footage.</description>
<reviewer href="x">R</reviewer>
<translator href="y">T</translator>
  This is Bill Lange. I'm Dave Gallo. \x20
And we're going to tell you some stories.
</doc>
"""


def test_iwslt_tags_follow_fairseq_recipe(tmp_path):
    spec, downloads = make_corpus(tmp_path, {"t.en": TAGS_EN.encode(), "t.de": TAGS_EN.encode()},
                                  {"train": [{"format": "iwslt_tags", "files": {"en": "t.en", "de": "t.de"}}]})
    assert extract_lines(spec, "train", "en", downloads, tmp_path) == [
        "David Gallo: Underwater astonishments",
        "TED Talk Subtitles and Transcript: David Gallo shows footage.",
        "This is Bill Lange. I'm Dave Gallo.",
        "And we're going to tell you some stories.",
    ]


def test_json_translation_from_zip_member(tmp_path, capsys):
    records = [{"translation": {"de": "Hallo", "en": "Hello"}}, {"translation": {"de": "Welt\nzwei", "en": "World"}}]
    archive = zip_bytes({"data/validation.json": gz(json.dumps(records, ensure_ascii=False).encode())})
    part = {"format": "json_translation", "file": "hf.zip:data/validation.json"}
    spec, downloads = make_corpus(tmp_path, {"hf.zip": archive, "bad.json": b'[{"translation": {"de": "x"}}]'}, {"dev": [part]}, src="de",
                                  tgt="en")
    assert extract_lines(spec, "dev", "de", downloads, tmp_path) == ["Hallo", "Welt zwei"]
    assert extract_lines(spec, "dev", "en", downloads, tmp_path) == ["Hello", "World"]
    spec["splits"]["dev"] = [{"format": "json_translation", "file": "bad.json"}]
    assert_fails(capsys, spec, "dev", "en", downloads, tmp_path / "o", str(downloads / "bad.json"), "record 1 has no string translation.en")


def test_json_translation_invalid_json_names_line(tmp_path, capsys):
    spec, downloads = make_corpus(tmp_path, {"bad.json": b'[\n{"translation": {"de": "x", "en": "y"}},\n{oops}\n]'},
                                  {"dev": [{"format": "json_translation", "file": "bad.json"}]}, src="de", tgt="en")
    assert_fails(capsys, spec, "dev", "de", downloads, tmp_path / "o", f"{downloads / 'bad.json'}:3", "invalid JSON")


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2"])
def test_tar_members_including_gzipped_ones(tmp_path, mode):
    archive = tar_bytes({"./giga.en.gz": gz(b"one\ntwo\n"), "giga.fr": b"un\ndeux\n", "dir/other": b"x\n"}, mode=mode)
    spec, downloads = make_corpus(tmp_path, {"giga.tar": archive},
                                  {"train": [{"format": "plain", "files": {"en": "giga.tar:giga.en.gz", "fr": "giga.tar:giga.fr"}}]},
                                  tgt="fr")
    assert extract_lines(spec, "train", "en", downloads, tmp_path) == ["one", "two"]
    assert extract_lines(spec, "train", "fr", downloads, tmp_path) == ["un", "deux"]


def test_references_below_a_directory_download(tmp_path, capsys):
    tree = tmp_path / "licensed" / "ASPEC-JE"
    (tree / "dev").mkdir(parents=True)
    (tree / "dev" / "dev.txt").write_bytes("1 ||| d ||| 猫 ||| cat\n".encode())
    spec, downloads = make_corpus(tmp_path, {}, {"dev": [{"format": "aspec", "file": "aspec:dev/dev.txt", "columns": {"ja": 2, "en": 3}}]},
                                  src="ja", tgt="en")
    spec["downloads"]["aspec"] = {"local": "ASPEC-JE"}
    (downloads / "aspec").symlink_to(tree, target_is_directory=True)
    assert extract_lines(spec, "dev", "ja", downloads, tmp_path) == ["猫"]
    spec["splits"]["dev"][0]["file"] = "aspec:test/test.txt"
    assert_fails(capsys, spec, "dev", "en", downloads, tmp_path / "o", str(downloads / "aspec" / "test" / "test.txt"),
                 "not found below the directory download")


# --------------------------------------------------------------------------- bad input

def test_truncated_gzip_is_an_error(tmp_path, capsys):
    data = gz(b"".join(b"sentence %d\n" % i for i in range(2000)))
    spec, downloads = make_corpus(tmp_path, {"a.en": data[: len(data) // 2], "a.de": b"x\n"}, {"train": [PLAIN]})
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out" / "train.en", str(downloads / "a.en"), "truncated")


def test_truncated_tgz_member_is_an_error(tmp_path, capsys):
    archive = tar_bytes({"a.en": b"".join(b"s%d\n" % i for i in range(5000)), "a.de": b"x\n"})
    spec, downloads = make_corpus(tmp_path, {"t.tgz": archive[: len(archive) // 2]},
                                  {"train": [{"format": "plain", "files": {"en": "t.tgz:a.en", "de": "t.tgz:a.de"}}]})
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "o", f"{downloads / 't.tgz'}:a", "corrupt or truncated")


def test_line_count_mismatch_names_both_files_and_counts(tmp_path, capsys):
    spec, downloads = make_corpus(tmp_path, {"a.en": b"1\n2\n3\n", "a.de": b"1\n2\n"}, {"train": [PLAIN]})
    for lang, mine, other in (("en", "a.en", "a.de"), ("de", "a.de", "a.en")):
        message = assert_fails(capsys, spec, "train", lang, downloads, tmp_path / "out" / f"train.{lang}", str(downloads / mine),
                               str(downloads / other))
        assert ("3 en sentences" in message and "has 2 de" in message) or ("2 de sentences" in message and "has 3 en" in message)


def test_max_train_pairs_still_checks_line_counts_and_every_line(tmp_path, capsys):
    """The limit keeps the first N pairs, but a corpus whose sides differ in length (or that
    is bad past the limit) is still an error: the whole corpus is read."""
    spec, downloads = make_corpus(tmp_path, {"a.en": b"1\n2\n3\n4\n", "a.de": b"1\n2\n3\n"}, {"train": [PLAIN]},
                                  max_train_pairs=2)
    message = assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out" / "train.en",
                           str(downloads / "a.en"), str(downloads / "a.de"))
    assert "4 en sentences" in message and "has 3 de" in message
    tsv = {"format": "tsv", "file": "t.tsv", "num_fields": 2, "columns": {"en": 0, "de": 1}}
    spec, downloads = make_corpus(tmp_path / "tsv", {"t.tsv": b"a\tb\nc\td\ne\n"}, {"train": [tsv]}, max_train_pairs=1)
    assert_fails(capsys, spec, "train", "de", downloads, tmp_path / "out" / "train.de", f"{downloads / 't.tsv'}:3", "expected 2 fields")
    spec, downloads = make_corpus(tmp_path / "ok", {"a.en": b"1\n2\n3\n", "a.de": b"x\ny\nz\n"}, {"train": [PLAIN]},
                                  max_train_pairs=2)
    assert extract_lines(spec, "train", "de", downloads, tmp_path) == ["x", "y"]


def test_extraction_part_of_a_split_ignores_other_splits_and_downloads(tmp_path):
    """What extracting a split reads does not change when a test set (its split, downloads
    and test_sets entry) is added, and it extracts the same lines as the whole spec."""
    files = {"a.en": b"1\n2\n3\n4\n", "a.de": b"w\nx\ny\nz\n", "t.en": b"t\n", "t.de": b"T\n"}
    holdout = {"from": "train", "every_nth": 2, "into": "dev"}
    spec, downloads = make_corpus(tmp_path, files, {"train": [PLAIN], "test": [{"format": "plain", "files": {"en": "t.en", "de": "t.de"}}]},
                                  holdout=holdout, test_sets=["test"], max_train_pairs=1)
    grown = json.loads(json.dumps(spec))
    grown["downloads"].update({"n.en": {"local": "/abs/n.en"}, "n.de": {"local": "n.de"}})
    grown["splits"]["new"] = [{"format": "plain", "files": {"en": "n.en", "de": "n.de"}}]
    grown["test_sets"].append("new")
    for split in ("train", "dev", "test"):
        assert extraction_part(grown, split) == extraction_part(spec, split)
        for lang in ("en", "de"):
            assert extract_lines(extraction_part(spec, split), split, lang, downloads, tmp_path / "part") == \
                extract_lines(spec, split, lang, downloads, tmp_path / "whole")
    assert set(extraction_part(spec, "test")) == {"src", "tgt", "downloads", "splits"}
    assert set(extraction_part(spec, "test")["downloads"]) == {"t.en", "t.de"}
    assert extraction_part(spec, "train")["max_train_pairs"] == 1 and "max_train_pairs" not in extraction_part(spec, "dev")


def test_errors_about_a_fetched_download_name_where_it_came_from(tmp_path, capsys):
    """A mirror copy with bad text: the error names the copy's line and the mirror file."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "a.en.gz").write_bytes(gz(b"ok\nbad \xff byte\n"))
    (mirror / "a.de").write_bytes(b"1\n2\n")
    downloads = tmp_path / "downloads" / "toy"
    entries = {"a.en": {"mirror": "a.en.gz"}, "a.de": {"mirror": "a.de"}}
    for name, entry in entries.items():
        fetch(entry, name, downloads / name, mirror_dir=mirror)
    spec = {"src": "en", "tgt": "de", "downloads": entries, "splits": {"train": [PLAIN]}}
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", f"{downloads / 'a.en'}:2", "invalid UTF-8",
                 f"(a copy of {mirror / 'a.en.gz'})")


def test_invalid_utf8_names_file_and_line(tmp_path, capsys):
    spec, downloads = make_corpus(tmp_path, {"a.en": b"ok\nbad \xff byte\n", "a.de": b"1\n2\n"}, {"train": [PLAIN]})
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", f"{downloads / 'a.en'}:2", "invalid UTF-8")
    archive = tar_bytes({"m.en": b"\xc3\x28\n", "m.de": b"x\n"})
    spec, downloads = make_corpus(tmp_path / "z", {"t.tgz": archive}, {"train": [{"format": "plain", "files": {"en": "t.tgz:m.en",
                                                                                                               "de": "t.tgz:m.de"}}]})
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", f"{downloads / 't.tgz'}:m.en:1", "invalid UTF-8")


def test_empty_file_is_an_error(tmp_path, capsys):
    spec, downloads = make_corpus(tmp_path, {"a.en": gz(b""), "a.de": b"x\n"}, {"train": [PLAIN]})
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", f"{downloads / 'a.en'}: empty file")
    assert_fails(capsys, spec, "train", "de", downloads, tmp_path / "out.de", f"{downloads / 'a.en'}: empty file")


def test_unknown_format_names_the_key_path(tmp_path, capsys):
    spec, downloads = make_corpus(tmp_path, {"a.en": b"x\n", "a.de": b"y\n"}, {"train": [{"format": "moses", "files": {"en": "a.en",
                                                                                                                       "de": "a.de"}}]})
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", "corpora.toy.splits.train[0].format",
                 "unknown format 'moses'")


def test_missing_archive_member_lists_what_is_there(tmp_path, capsys):
    spec, downloads = make_corpus(tmp_path, {"t.tgz": tar_bytes({"dev/a.en": b"x\n", "dev/a.de": b"y\n"}),
                                             "z.zip": zip_bytes({"a.en": b"x\n"})},
                                  {"train": [{"format": "plain", "files": {"en": "t.tgz:dev/b.en", "de": "t.tgz:dev/a.de"}}]})
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", f"{downloads / 't.tgz'}:dev/b.en", "no such member",
                 "dev/a.en")
    spec["splits"]["train"] = [{"format": "plain", "files": {"en": "z.zip:b.en", "de": "z.zip:a.en"}}]
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", f"{downloads / 'z.zip'}:b.en", "no such member")


@pytest.mark.parametrize("mode", ["w", "w:gz"])
def test_a_damaged_member_header_says_the_archive_is_damaged(tmp_path, capsys, mode):
    """A flipped byte in the second member's header (its name).  Before: tarfile took the bad
    header for the archive's end and extract said "no such member in the tar archive (it has 1
    members: dev/a.en)", as if the config named a member the archive lacks."""
    data = bytearray(tar_bytes({"dev/a.en": b"x\n", "dev/a.de": b"y\n"}, mode="w"))
    data[2 * tarfile.BLOCKSIZE + 5] ^= 0x20  # header, data block, then the second header: 'dev/a.de' -> 'dev/A.de'
    archive = bytes(data) if mode == "w" else gz(bytes(data))
    spec, downloads = make_corpus(tmp_path, {"t.tgz": archive},
                                  {"train": [{"format": "plain", "files": {"en": "t.tgz:dev/a.en", "de": "t.tgz:dev/a.de"}}]})
    message = assert_fails(capsys, spec, "train", "de", downloads, tmp_path / "out.de", f"{downloads / 't.tgz'}:dev/a.de: ",
                           "corrupt or truncated file", "damaged tar archive: the member header at byte 1,024 is invalid")
    assert "no such member" not in message and len(message.strip().splitlines()) == 1


def test_download_not_fetched_is_an_error(tmp_path, capsys):
    spec, downloads = make_corpus(tmp_path, {"a.en": b"x\n"}, {"train": [PLAIN]})
    spec["downloads"]["a.de"] = {"url": "https://example.org/a.de"}
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", str(downloads / "a.de"), "has not been fetched")


@pytest.mark.parametrize(
    "mutate, key",
    [
        (lambda s: s["splits"]["train"][0]["files"].update(en="nope"), "corpora.toy.splits.train[0].files.en"),
        (lambda s: s["splits"]["train"][0].update(file="a.en"), "corpora.toy.splits.train[0].file"),
        (lambda s: s.update(test_sets=["tst"]), "corpora.toy.test_sets[0]"),
        (lambda s: s["downloads"]["a.en"].update(sha256="abc"), "corpora.toy.downloads.a.en.sha256"),
        (lambda s: s.update(holdout={"from": "train", "group_by": "fr", "sizes": {"dev": 1}, "seed": 1}), "corpora.toy.holdout.group_by"),
        (lambda s: s.update(holdout={"from": "train", "every_nth": 2, "into": "train"}), "corpora.toy.holdout"),
    ],
)
def test_bad_spec_keys_are_named(tmp_path, capsys, mutate, key):
    spec, downloads = make_corpus(tmp_path, {"a.en": b"x\n", "a.de": b"y\n"}, {"train": [dict(PLAIN, files=dict(PLAIN["files"]))]})
    mutate(spec)
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "out.en", key)


def test_unknown_split_and_language(tmp_path, capsys):
    spec, downloads = make_corpus(tmp_path, {"a.en": b"x\n", "a.de": b"y\n"}, {"train": [PLAIN]})
    assert_fails(capsys, spec, "test", "en", downloads, tmp_path / "o", "no split 'test'")
    assert_fails(capsys, spec, "train", "fr", downloads, tmp_path / "o", "'fr' is neither src")


# --------------------------------------------------------------------------- holdout

def grouped_corpus(tmp_path: Path) -> tuple[dict, Path, list[tuple[str, str]]]:
    """40 pairs; English sentences e0..e24, with e0..e4 translated three times and e5..e9 twice."""
    pairs = []
    for i in range(25):
        copies = 3 if i < 5 else 2 if i < 10 else 1
        pairs += [(f"e{i}", f"z{i}-{k}") for k in range(copies)]
    data = "".join(f"{en}\t{zh}\n" for en, zh in pairs).encode()
    holdout = {"from": "train", "group_by": "en", "sizes": {"dev": 6, "test": 5}, "seed": 7}
    spec, downloads = make_corpus(tmp_path, {"pairs.tsv": data}, {"train": [{"format": "tsv", "file": "pairs.tsv", "num_fields": 2,
                                                                             "columns": {"en": 0, "zh": 1}}]},
                                  src="zh", tgt="en", holdout=holdout, test_sets=["test"])
    return spec, downloads, pairs


def test_group_holdout_is_exact_disjoint_aligned_and_keeps_order(tmp_path):
    spec, downloads, pairs = grouped_corpus(tmp_path)
    assert splits_of(spec) == ["train", "dev", "test"]
    got = {split: list(zip(extract_lines(spec, split, "en", downloads, tmp_path), extract_lines(spec, split, "zh", downloads,
                                                                                                tmp_path))) for split in ("train", "dev",
                                                                                                                          "test")}
    assert [len(got[s]) for s in ("train", "dev", "test")] == [29, 6, 5]
    assert collections.Counter(got["train"] + got["dev"] + got["test"]) == collections.Counter(pairs)
    english = {split: {en for en, _ in rows} for split, rows in got.items()}
    assert not english["train"] & english["dev"] and not english["train"] & english["test"] and not english["dev"] & english["test"]
    for rows in got.values():  # each split keeps corpus order
        assert rows == sorted(rows, key=pairs.index)


def test_group_holdout_depends_on_seed_only(tmp_path):
    spec, downloads, _ = grouped_corpus(tmp_path)
    first = extract_lines(spec, "dev", "en", downloads, tmp_path)
    assert extract_lines(spec, "dev", "en", downloads, tmp_path) == first
    spec["holdout"]["seed"] = 8
    assert extract_lines(spec, "dev", "en", downloads, tmp_path) != first


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=40),
    dev=st.integers(min_value=1, max_value=15),
    test=st.integers(min_value=1, max_value=15),
    seed=st.integers(min_value=0, max_value=3),
)
def test_holdout_assignment_properties(counts, dev, test, seed):
    keys = [f"k{group}" for group, count in enumerate(counts) for _ in range(count)]
    try:
        assignment = holdout_assignment(keys, {"dev": dev, "test": test}, seed)
    except ValueError:
        singletons = sum(1 for count in counts if count == 1)
        assert singletons < dev + test or dev + test >= len(keys)
        return
    assert assignment.count("dev") == dev and assignment.count("test") == test and assignment.count(None) > 0
    for key in set(keys):
        assert len({target for k, target in zip(keys, assignment) if k == key}) == 1
    assert holdout_assignment(list(reversed(keys)), {"dev": dev, "test": test}, seed) == list(reversed(assignment))


def test_every_nth_holdout_matches_fairseq_awk_rule(tmp_path):
    english = b"".join(b"en %d\n" % n for n in range(1, 51))
    german = b"".join(b"de %d\n" % n for n in range(1, 51))
    spec, downloads = make_corpus(tmp_path, {"a.en": english, "a.de": german}, {"train": [PLAIN]}, holdout={"from": "train",
                                                                                                            "every_nth": 23, "into": "dev"})
    assert splits_of(spec) == ["train", "dev"]
    assert extract_lines(spec, "dev", "de", downloads, tmp_path) == ["de 23", "de 46"]  # awk 'NR%23 == 0'
    train = extract_lines(spec, "train", "en", downloads, tmp_path)
    assert train == [f"en {n}" for n in range(1, 51) if n % 23] and len(train) == 48


def test_holdout_that_cannot_be_filled_is_an_error(tmp_path, capsys):
    spec, downloads, _ = grouped_corpus(tmp_path)
    spec["holdout"]["sizes"] = {"dev": 41, "test": 1}
    assert_fails(capsys, spec, "dev", "en", downloads, tmp_path / "o", "corpora.toy.holdout.sizes", "cannot carve exactly 41 pairs")
    spec["holdout"]["sizes"] = {"dev": 30, "test": 10}
    assert_fails(capsys, spec, "train", "en", downloads, tmp_path / "o", "corpora.toy.holdout.sizes", "leave no pairs")


# --------------------------------------------------------------------------- multi-reference, pure helpers

def nist_corpus(tmp_path: Path, third_reference: bytes = b"r2a\nr2b\n") -> tuple[dict, Path]:
    files = {"mt02.zh": "甲\n乙\n".encode(), "mt02.en0": b"r0a\nr0b\n", "mt02.en1": b"r1a\nr1b\n", "mt02.en2": third_reference,
             "train.zh": "一\n".encode(), "train.en": b"one\n"}
    splits = {"train": [{"format": "plain", "files": {"zh": "train.zh", "en": "train.en"}}],
              "mt02": [{"format": "plain", "files": {"zh": "mt02.zh"}, "refs": {"en": ["mt02.en0", "mt02.en1", "mt02.en2"]}}]}
    return make_corpus(tmp_path, files, splits, src="zh", tgt="en", test_sets=["mt02"])


def test_multi_reference_extraction(tmp_path, capsys):
    spec, downloads = nist_corpus(tmp_path)
    assert reference_count(spec, "mt02", "en") == 3 and reference_count(spec, "mt02", "zh") == 1
    assert extract_lines(spec, "mt02", "en", downloads, tmp_path) == ["r0a", "r0b"]
    assert extract_lines(spec, "mt02", "en", downloads, tmp_path, ref=2) == ["r2a", "r2b"]
    assert extract_lines(spec, "mt02", "zh", downloads, tmp_path) == ["甲", "乙"]
    assert_fails(capsys, spec, "mt02", "en", downloads, tmp_path / "o", "no en reference 3", ref=3)


def test_multi_reference_count_mismatch(tmp_path, capsys):
    spec, downloads = nist_corpus(tmp_path, third_reference=b"r2a\n")
    assert_fails(capsys, spec, "mt02", "en", downloads, tmp_path / "o", str(downloads / "mt02.en2"), str(downloads / "mt02.zh"), ref=2)


def test_downloads_for_lists_own_and_other_language_and_holdout_source(tmp_path):
    spec, _ = nist_corpus(tmp_path)
    assert downloads_for(spec, "mt02", "en") == ["mt02.en0", "mt02.en1", "mt02.en2", "mt02.zh"]
    assert downloads_for(spec, "mt02", "zh") == ["mt02.zh", "mt02.en0"]
    spec, _, _ = grouped_corpus(tmp_path / "g")
    assert downloads_for(spec, "test", "zh") == ["pairs.tsv"] and reference_count(spec, "test", "en") == 1
    archive_spec = {"src": "en", "tgt": "de", "downloads": {"t.tgz": {"url": "u"}, "n.en": {"url": "u"}, "n.de": {"url": "u"}},
                    "splits": {"train": [{"format": "plain", "files": {"en": "t.tgz:a/x.en", "de": "t.tgz:a/x.de"}}],
                               "dev": [{"format": "sgml", "files": {"en": "t.tgz:d.en.sgm", "de": "t.tgz:d.de.sgm"}},
                                       {"format": "plain", "files": {"en": "n.en", "de": "n.de"}}]}}
    assert downloads_for(archive_spec, "train", "de") == ["t.tgz"]
    assert downloads_for(archive_spec, "dev", "de") == ["t.tgz", "n.de", "n.en"]


def test_cli_runs_as_a_module(tmp_path):
    spec, downloads = make_corpus(tmp_path, {"a.en": b"x\n", "a.de": b"y\n"}, {"train": [PLAIN]})
    output = tmp_path / "deep" / "dir" / "train.de"
    command = [sys.executable, "-m", "workflow_scripts.data.extract", "--spec", json.dumps(spec), "--split", "train", "--lang", "de",
               "--downloads-dir", str(downloads), "--output", str(output)]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert output.read_bytes() == b"y\n"
    command[command.index("--split") + 1] = "nosuch"
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "extract: error:" in result.stderr and "no split 'nosuch'" in result.stderr


# --------------------------------------------------------------------------- registries and the real mirror

def load_config(name: str) -> dict:
    return yaml.safe_load((REPO / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("config", ["config.yaml", "configs/full.yaml"])
def test_registered_corpora_are_valid(config):
    data = load_config(config)
    assert set(data["active_corpora"]) <= set(data["corpora"])
    for name, spec in data["corpora"].items():
        check_corpus_spec(spec, f"corpora.{name}")
        assert spec.get("test_sets"), name
        for entry in spec["downloads"].values():
            assert entry.get("url") or entry.get("local")
        for split in splits_of(spec):
            for lang in (spec["src"], spec["tgt"]):
                assert set(downloads_for(spec, split, lang)) <= set(spec["downloads"])


def test_full_registry_covers_the_papers_corpora():
    full = load_config("configs/full.yaml")
    assert {"active_corpora", "corpora"} <= set(full)
    assert full["active_corpora"] == list(full["corpora"])
    nist = full["corpora"]["nist_zh_en"]
    assert [reference_count(nist, split, "en") for split in splits_of(nist)] == [1, 4, 4, 4, 4, 4, 4, 4]
    # The dev set is also scored under the name of the paper's dev column (MT05, tst2012, newstest2013).
    assert nist["test_sets"] == ["mt05", "mt02", "mt03", "mt04", "mt06", "mt08"]
    assert full["corpora"]["iwslt16_en_de"]["test_sets"] == ["tst2012", "tst2013", "tst2014"]
    assert full["corpora"]["wmt15_en_de"]["test_sets"] == ["newstest2013", "newstest2014", "newstest2015"]
    for corpus, dev_column in (("nist_zh_en", "mt05"), ("iwslt16_en_de", "tst2012"), ("wmt15_en_de", "newstest2013")):
        splits = full["corpora"][corpus]["splits"]
        assert splits[dev_column] == splits["dev"], corpus


def fetch_from_mirror(spec: dict, root: Path, split: str) -> Path:
    downloads_dir = root / "downloads"
    for name in {n for lang in (spec["src"], spec["tgt"]) for n in downloads_for(spec, split, lang)}:
        assert fetch(spec["downloads"][name], name, downloads_dir / name, mirror_dir=MIRROR) == "mirror"
    return downloads_dir


@needs_mirror
@pytest.mark.parametrize(
    "corpus, sizes",
    [("multi30k_en_de", {"train": 29000, "dev": 1014, "test_2016_flickr": 1000}),
     ("tanaka_ja_en", {"train": 50000, "dev": 500, "test": 500})],
)
def test_embedded_corpora_extract_to_the_mirror_text(tmp_path, corpus, sizes):
    spec = load_config("config.yaml")["corpora"][corpus]
    for split, size in sizes.items():
        downloads_dir = fetch_from_mirror(spec, tmp_path, split)
        for lang in (spec["src"], spec["tgt"]):
            output = tmp_path / f"{split}.{lang}"
            assert run_extract(spec, split, lang, downloads_dir, output) == 0
            part = spec["splits"][split][0]["files"][lang]
            assert output.read_bytes() == gzip.decompress((MIRROR / spec["downloads"][part]["mirror"]).read_bytes())
            assert output.read_bytes().count(b"\n") == size


@pytest.mark.heavy
@needs_mirror
def test_tatoeba_holdout_on_the_mirror(tmp_path):
    spec = load_config("config.yaml")["corpora"]["tatoeba_zh_en"]
    downloads_dir = fetch_from_mirror(spec, tmp_path, "train")
    got = {split: list(zip(extract_lines(spec, split, "en", downloads_dir, tmp_path), extract_lines(spec, split, "zh", downloads_dir,
                                                                                                    tmp_path)))
           for split in ("train", "dev", "test")}
    assert {split: len(rows) for split, rows in got.items()} == {"train": 27155, "dev": 1000, "test": 1000}
    upstream = gzip.decompress((MIRROR / "zh-en/cmn.txt.gz").read_bytes()).decode("utf-8-sig").split("\n")
    pairs = [tuple(line.split("\t")[:2]) for line in upstream if line]
    assert len(pairs) == 29155
    assert collections.Counter(got["train"] + got["dev"] + got["test"]) == collections.Counter(pairs)
    english = {split: {en for en, _ in rows} for split, rows in got.items()}
    assert not (english["train"] & english["dev"]) and not (english["train"] & english["test"]) and not (english["dev"] & english["test"])


@needs_mirror
def test_full_registry_mirror_test_sets(tmp_path):
    spec = load_config("configs/full.yaml")["corpora"]["wmt15_en_de"]
    for split, test_set, size in (("dev", "newstest2013", 3000), ("newstest2014", "newstest2014", 3003)):
        downloads_dir = fetch_from_mirror(spec, tmp_path, split)
        for lang in ("en", "de"):
            lines = extract_lines(spec, split, lang, downloads_dir, tmp_path)
            assert len(lines) == size
            assert lines == (MIRROR / "wmt14-en-de-test" / f"{test_set}.{lang}").read_text(encoding="utf-8").split("\n")[:-1]


@needs_mirror
def test_hugging_face_iwslt2017_json_on_the_mirror(tmp_path):
    spec = {"src": "de", "tgt": "en", "downloads": {"validation.json": {"mirror": "iwslt14-de-en/iwslt2017-de-en-hf/validation.json.gz"}},
            "splits": {"dev": [{"format": "json_translation", "file": "validation.json"}]}}
    downloads_dir = fetch_from_mirror(spec, tmp_path, "dev")
    german, english = (extract_lines(spec, "dev", lang, downloads_dir, tmp_path) for lang in ("de", "en"))
    records = json.loads(gzip.decompress((MIRROR / spec["downloads"]["validation.json"]["mirror"]).read_bytes()))
    assert len(german) == len(english) == len(records) == 888
    assert english[5] == records[5]["translation"]["en"].replace("\n", " ")


def test_a_download_dated_in_the_future_is_dated_now_and_extracted(tmp_path, capsys):
    """Snakemake fails a job whose input is newer than its outputs ('older modification time
    ... than input', issue 34) and deletes them: extract dates such a download now first."""
    import os
    import time

    spec, downloads_dir = make_corpus(tmp_path, {"a.en": b"one\ntwo\n", "a.de": b"eins\nzwei\n", "b.en": b"x\n"},
                                      {"train": [PLAIN]})
    future = time.time() + 86400
    for name in ("a.en", "a.de", "b.en"):
        os.utime(downloads_dir / name, (future, future))
    assert extract_lines(spec, "train", "de", downloads_dir, tmp_path) == ["eins", "zwei"]
    assert f"{downloads_dir / 'a.de'} was dated in the future" in capsys.readouterr().err
    assert os.stat(downloads_dir / "a.de").st_mtime <= time.time() and os.stat(downloads_dir / "a.en").st_mtime <= time.time()
    assert os.stat(downloads_dir / "b.en").st_mtime == pytest.approx(future)  # not read by this split: left alone
    assert extract.date_inputs_now([downloads_dir / "a.de", downloads_dir / "missing"]) == []  # dated already
