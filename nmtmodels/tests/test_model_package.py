"""The subword files of a model package are checked: preprocess.json records their sha256
digests, and a changed or cut file is refused at load in one line naming it; BPE codes with
fewer merges than bpeN asks for are refused at write time (and, in packages written before the
digests, at load)."""
from __future__ import annotations

import hashlib
import json

import pytest
import torch

from nmtmodels import cli
from nmtmodels.checkpoint import save_checkpoint
from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.files import DataError
from nmtmodels.model_package.reader import read_package
from nmtmodels.model_package.settings import PackageSettings
from nmtmodels.model_package.writer import write_package
from nmtmodels.registry import build_model
from nmtmodels.text.bpe_codes import ran_out_line
from nmtmodels.text.preprocessing import LanguageSettings
from nmtmodels.vocab import Vocabulary

WORDS = ["low", "lower", "lowest", "newer", "newest", "wider", "widest"]
# Five merges, and the vocabulary that the codes make of WORDS (every subword is a character or
# a merge's result): "e s", "es t</w>", "l o", "lo w", "e r</w>".
CODES = "#version: 0.2\ne s\nes t</w>\nl o\nlo w\ne r</w>\n"
VOCAB = "w@@ 4\ner 3\nest 3\nlow@@ 2\nn@@ 2\ne@@ 2\ni@@ 2\nd@@ 2\nlo@@ 1\nw 1\n"


def settings(subwords: str) -> PackageSettings:
    return PackageSettings(source=LanguageSettings("en", "whitespace"), target=LanguageSettings("en", "whitespace"),
                           unicode_form="NFKC", subwords=subwords, vocabulary_threshold=1 if subwords.startswith("bpe") else None)


@pytest.fixture()
def files(tmp_path):
    """A checkpoint of an untrained tiny Transformer, the codes and vocabulary, and a stand-in SentencePiece model."""
    tokens = sorted(line.split()[0] for line in VOCAB.splitlines())
    vocab = Vocabulary(tokens)
    config = ModelConfig.from_dict({"family": "transformer", "d_model": 8, "heads": 2, "ffn_dim": 16, "encoder_layers": 1,
                                    "decoder_layers": 1, "dropout": 0.0})
    torch.manual_seed(0)
    model = build_model(config, len(vocab), len(vocab))
    save_checkpoint(tmp_path / "best.pt", {"model": model.state_dict(), "model_config": config.to_dict(),
                                           "decode_config": {"beam": 1, "max_len_b": 3},
                                           "vocab": {"src": vocab.tokens, "tgt": vocab.tokens, "src_fingerprint": vocab.fingerprint(),
                                                     "tgt_fingerprint": vocab.fingerprint()}})
    (tmp_path / "codes").write_text(CODES, encoding="utf-8")
    (tmp_path / "vocab").write_text(VOCAB, encoding="utf-8")
    (tmp_path / "spm").write_bytes(b"a SentencePiece model's bytes")
    (tmp_path / "raw.en").write_text(" ".join(WORDS) + "\n", encoding="utf-8")
    return tmp_path


def bpe_package(files, subwords: str = "bpe5"):
    return write_package(files / "model", files / "best.pt", settings(subwords), files / "codes", files / "vocab")


def test_preprocess_json_records_the_sha256_of_each_subword_file(files):
    directory = bpe_package(files)
    data = json.loads((directory / "preprocess.json").read_text())
    assert data["sha256"] == {name: hashlib.sha256((directory / name).read_bytes()).hexdigest() for name in ("bpe.codes", "bpe.vocab")}
    assert dict(read_package(directory).settings.digests) == data["sha256"]
    spm = write_package(files / "spm_model", files / "best.pt", settings("spm100"), spm_model=files / "spm")
    assert json.loads((spm / "preprocess.json").read_text())["sha256"] == {"spm.model": hashlib.sha256(b"a SentencePiece model's bytes")
                                                                                          .hexdigest()}
    char = write_package(files / "char_model", files / "best.pt", settings("char"))
    assert "sha256" not in json.loads((char / "preprocess.json").read_text())


def test_codes_cut_at_a_line_boundary_are_refused_at_load_in_one_line(files, capsys):
    directory = bpe_package(files)
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(files / "raw.en")]) == 0
    capsys.readouterr()
    (directory / "bpe.codes").write_text(CODES.rsplit("\n", 2)[0] + "\n", encoding="utf-8")  # the last merge gone
    with pytest.raises(DataError, match=r"model/bpe\.codes: content does not match the sha256 that preprocess\.json records"):
        read_package(directory)
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(files / "raw.en")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"nmt-translate: error: {directory / 'bpe.codes'}: content does not match the sha256 that preprocess.json "
                   "records (the file was changed or cut short after the package was written); use another copy of the package"]


def test_a_changed_spm_model_or_vocabulary_is_refused_naming_it(files):
    spm = write_package(files / "spm_model", files / "best.pt", settings("spm100"), spm_model=files / "spm")
    read_package(spm)
    (spm / "spm.model").write_bytes(b"another SentencePiece model's bytes")
    with pytest.raises(DataError, match=r"spm_model/spm\.model: content does not match the sha256"):
        read_package(spm)
    directory = bpe_package(files)
    (directory / "bpe.vocab").write_text(VOCAB.replace("er 3", "er 4"), encoding="utf-8")
    with pytest.raises(DataError, match=r"model/bpe\.vocab: content does not match the sha256"):
        read_package(directory)


def test_a_package_without_digests_still_loads_and_its_codes_get_the_merge_check(files):
    directory = bpe_package(files, "bpe600")  # 5 of 600 merges: every subword of the vocabulary is made by them
    data = json.loads((directory / "preprocess.json").read_text())
    del data["sha256"]
    (directory / "preprocess.json").write_text(json.dumps(data), encoding="utf-8")
    assert read_package(directory).settings.digests == ()
    (directory / "bpe.codes").write_text(CODES.rsplit("\n", 2)[0] + "\n", encoding="utf-8")  # "e r</w>" makes "er"
    with pytest.raises(DataError, match=r"bpe\.codes: 4 merges, fewer than the 600 of bpe600, and its first line records no early "
                                        r"stop, and 1 subwords of .*bpe\.vocab need merges it lacks \('er'\)"):
        read_package(directory)


@pytest.mark.parametrize(("codes", "subwords", "message"), [
    (CODES.rsplit("\n", 3)[0] + "\n", "bpe600", r"codes: 3 merges, fewer than the 600 of bpe600, .* it lacks \('er', 'low@@'\)"),
    (CODES.replace("#version: 0.2", ran_out_line(6, 600)), "bpe600", r"codes: 5 merges, but its first line records that learning made 6"),
    (CODES.replace("#version: 0.2", ran_out_line(5, 600)), "bpe300", r"codes: learned for bpe600 \(its first line\), not bpe300"),
    (CODES, "bpe4", r"codes: 5 merges, more than the 4 of bpe4"),
    (CODES[:-1], "bpe5", r"codes:6: the last line has no newline: the file was cut short \(truncated\) inside a line"),
], ids=["cut", "cut-after-running-out", "other-bpe-n", "more-merges", "cut-inside-a-line"])
def test_codes_without_the_merges_of_bpe_n_are_refused_at_write_time(files, codes, subwords, message):
    (files / "codes").write_text(codes, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        bpe_package(files, subwords)
    assert not (files / "model").exists()


def test_codes_of_a_corpus_that_ran_out_of_pairs_are_packaged(files):
    notes = []
    (files / "codes").write_text(CODES.replace("#version: 0.2", ran_out_line(5, 600)), encoding="utf-8")
    read_package(write_package(files / "model", files / "best.pt", settings("bpe600"), files / "codes", files / "vocab", note=notes.append))
    assert notes == []
    (files / "codes").write_text(CODES, encoding="utf-8")  # learned before the count was recorded: the vocabulary vouches
    write_package(files / "model", files / "best.pt", settings("bpe600"), files / "codes", files / "vocab", note=notes.append)
    assert len(notes) == 1 and "5 merges, fewer than the 600 of bpe600: accepted as codes whose corpus ran out of pairs" in notes[0]


@pytest.mark.parametrize(("sha256", "message"), [
    ({"bpe.codes": "0" * 64}, r"sha256: expected digests of bpe\.codes, bpe\.vocab \(subwords bpe5\), got bpe\.codes"),
    ({"bpe.codes": "0" * 64, "bpe.vocab": "XYZ"}, r"sha256\.bpe\.vocab: expected 64 lowercase hex digits, got 'XYZ'"),
    ([], r"sha256: expected dict"),
], ids=["missing-file", "not-hex", "not-an-object"])
def test_bad_digest_entries_are_a_config_error_naming_the_key(files, sha256, message):
    directory = bpe_package(files)
    data = json.loads((directory / "preprocess.json").read_text()) | {"sha256": sha256}
    (directory / "preprocess.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"preprocess\.json: " + message):
        read_package(directory)


# ---------------------------------------------------------------------- the model files
def test_a_package_checkpoint_holds_no_training_state_and_translates_the_same(files):
    # a training checkpoint: the model and a trainer entry (optimizer moments and the like)
    state = torch.load(files / "best.pt", weights_only=True)
    moments = [{name: torch.randn_like(p) for name, p in state["model"].items()} for _ in range(2)]
    save_checkpoint(files / "last.pt", {**{k: v for k, v in state.items() if k not in ("format", "version")},
                                        "trainer": {"optimizer": {"exp_avg": moments[0], "exp_avg_sq": moments[1]}, "update": 7}})
    directory = write_package(files / "model", files / "last.pt", settings("bpe5"), files / "codes", files / "vocab")
    packaged = torch.load(directory / "checkpoint.pt", weights_only=True)
    assert "trainer" not in packaged
    assert packaged.keys() == torch.load(files / "best.pt", weights_only=True).keys()
    for name, tensor in state["model"].items():
        assert torch.equal(packaged["model"][name], tensor)
    assert (directory / "checkpoint.pt").stat().st_size < 0.5 * (files / "last.pt").stat().st_size
    assert cli.main(["translate", "--checkpoint", str(directory), "--input", str(files / "raw.en"),
                     "--output", str(files / "out.txt")]) == 0


def test_a_package_holding_another_models_checkpoint_is_refused_in_one_line(files, capsys):
    directory = bpe_package(files)
    data = json.loads((directory / "preprocess.json").read_text())
    assert set(data["model_sha256"]) == {"checkpoint.pt"}
    read_package(directory)
    other = build_model(ModelConfig.from_dict({"family": "transformer", "d_model": 8, "heads": 2, "ffn_dim": 16,
                                               "encoder_layers": 1, "decoder_layers": 1, "dropout": 0.0}), 10, 10)
    state = torch.load(files / "best.pt", weights_only=True)
    save_checkpoint(directory / "checkpoint.pt", {**{k: v for k, v in state.items() if k not in ("format", "version")},
                                                  "model": other.state_dict()})
    with pytest.raises(DataError, match=r"checkpoint\.pt: is not the model this package was written with"):
        read_package(directory)
    code = cli.main(["translate", "--checkpoint", str(directory), "--input", str(files / "raw.en")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and "is not the model this package was written with" in err[0]
    assert not (files / "out.txt").exists()
    # a package written before the model digests were recorded loads as before, but nmt-translate
    # says plainly that its checkpoint cannot be checked (before: rc 0 with the swapped model, and
    # an unknown-token warning at most)
    del data["model_sha256"]
    (directory / "preprocess.json").write_text(json.dumps(data), encoding="utf-8")
    read_package(directory)
    torch.manual_seed(1)  # another model that fits the package's vocabulary: the old package cannot tell
    other = build_model(ModelConfig.from_dict(state["model_config"]), len(state["vocab"]["src"]), len(state["vocab"]["tgt"]))
    save_checkpoint(directory / "checkpoint.pt", {**{k: v for k, v in state.items() if k not in ("format", "version")},
                                                  "model": other.state_dict()})
    capsys.readouterr()
    assert cli.main(["translate", "--checkpoint", str(directory), "--input", str(files / "raw.en")]) == 0
    assert (f"nmt-translate: warning: {directory / 'checkpoint.pt'}: cannot be checked against its package: "
            "preprocess.json records no model_sha256 (a package written before model digests were recorded), so "
            "another model's checkpoint copied in would translate all the same; package the model again to record its "
            "digest") in capsys.readouterr().err.splitlines()


def test_a_killed_package_jobs_temporary_directory_is_removed_by_the_next(files):
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer runs
    stale = files / f".model.{gone.pid}.abc123"
    stale.mkdir()
    (stale / "checkpoint.pt").write_bytes(b"half a checkpoint")
    live = files / ".model.1.xyz"  # pid 1 runs: its job may still be writing, so it is kept
    live.mkdir()
    bpe_package(files)
    assert not stale.exists() and live.exists()
    assert sorted(p.name for p in files.glob(".model.*")) == [live.name]


def test_an_ensemble_of_packages_for_two_language_pairs_is_refused_naming_both(files, capsys):
    en_en = bpe_package(files)
    de_en = write_package(files / "de_en", files / "best.pt",
                          PackageSettings(source=LanguageSettings("de", "whitespace"), target=LanguageSettings("en", "whitespace"),
                                          unicode_form="NFKC", subwords="bpe5", vocabulary_threshold=1),
                          files / "codes", files / "vocab")
    code = cli.main(["translate", "--checkpoint", str(en_en), str(de_en), "--input", str(files / "raw.en")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"nmt-translate: error: {de_en / 'checkpoint.pt'}: a model package for de->en, but "
                                 f"{en_en / 'checkpoint.pt'} translates en->en; an ensemble's members must translate the same "
                                 "language pair"]
