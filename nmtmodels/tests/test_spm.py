"""SentencePiece subwords (nmtmodels.text.spm): pieces made and undone as the sentencepiece library
does, and a model package of an spmN model that reads raw text and writes detokenised text.

The expectations use sentencepiece and sacremoses directly (not nmtmodels.text.preprocessing)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sentencepiece
import torch
from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer

from nmtmodels import cli
from nmtmodels.checkpoint import save_checkpoint
from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.decoding.translator import Translator
from nmtmodels.files import DataError
from nmtmodels.model_package.reader import read_package
from nmtmodels.model_package.settings import SPM_MODEL_FILE, PackageSettings
from nmtmodels.model_package.writer import write_package
from nmtmodels.registry import build_model
from nmtmodels.text.postprocess import format_options, postprocess, remove_spm
from nmtmodels.text.preprocessing import LanguageSettings
from nmtmodels.text.spm import SentencePieceEncoder, SentencePieceSettings, piece_counts, train_model
from nmtmodels.vocab import Vocabulary

REPO = Path(__file__).resolve().parents[2]
EN = [
    "Two dogs are playing in the snow.",
    "A man in a blue shirt is riding a bike down the street.",
    "The committee's decision, announced on Monday, was \"final\" & binding.",
    "Prices rose by 3.5% in the first quarter (compared with last year).",
    "A girl isn't wearing her well-known red hat; she's running!",
    "Three children are sitting on a bench near the water.",
]
DE = [
    "Zwei Hunde spielen im Schnee.",
    "Ein Mann in einem blauen Hemd fährt mit dem Fahrrad die Straße hinunter.",
    "Die Entscheidung des Ausschusses war „endgültig“ und verbindlich.",
    "Die Preise stiegen im ersten Quartal um 3,5 %.",
    "Ein Mädchen trägt ihren roten Hut nicht; sie rennt!",
    "Drei Kinder sitzen auf einer Bank am Wasser.",
]


pytestmark = pytest.mark.usefixtures("one_thread")


def moses(lines: list[str], lang: str) -> list[str]:
    """The workflow's TOK text for ``tokenizer: moses`` (punctuation normalised, -a, no escaping)."""
    normaliser, tokenizer = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)
    return [tokenizer.tokenize(" ".join(normaliser.normalize(line).split()), aggressive_dash_splits=True, escape=False,
                               return_str=True) for line in lines]


@pytest.fixture(scope="module")
def tok(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("tok")
    paths = {}
    for lang, lines in (("en", EN), ("de", DE)):
        paths[lang] = d / f"train.{lang}"
        paths[lang].write_text("".join(line + "\n" for line in moses(lines, lang) * 4), encoding="utf-8")
    return paths


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_pieces_are_sentencepiece_s_and_undo_like_its_decode(tok, model_type):
    model = train_model([tok["en"], tok["de"]], 120, SentencePieceSettings(model_type=model_type))
    reference = sentencepiece.SentencePieceProcessor(model_proto=model)
    assert reference.get_piece_size() > 3 and reference.id_to_piece(0) == "<unk>"
    encoder = SentencePieceEncoder(model)
    lines = [*moses(EN, "en"), *moses(DE, "de"), "unseen wörds : ünd Ωmega", ""]
    assert list(encoder.encode_lines(lines, threads=2)) == [encoder.encode_line(line) for line in lines]
    split = 0
    for line in lines:
        pieces = encoder.encode_line(line).split()
        assert pieces == reference.encode(line, out_type=str)
        split += len(pieces) > len(line.split())
        # identity normalisation: decoding gives the tokenised text back, as sentencepiece's own decode does
        assert remove_spm(" ".join(pieces)) == reference.decode_pieces(pieces) == line
    assert split > len(lines) // 2  # 120 pieces leave most lines split into more pieces than words
    counts = piece_counts(encoder.encode_lines(moses(EN, "en")))
    assert counts["▁."] == sum(line.split().count(".") for line in moses(EN, "en")) == 5
    assert all(" " not in piece for piece in counts)


def test_postprocessing_removes_pieces_then_detokenises():
    assert remove_spm("▁Zwei ▁Hund e ▁spiel en ▁im ▁Schnee ▁.") == "Zwei Hunde spielen im Schnee ."
    assert remove_spm("e ▁Hund ▁ ▁.") == "e Hund ."  # a hypothesis may start inside a word or repeat ▁
    assert remove_spm("") == ""
    assert postprocess("▁Zwei ▁Hund e ▁, ▁\" ▁ja ▁\" ▁.", "de", spm=True) == MosesDetokenizer("de").detokenize(
        'Zwei Hunde , " ja " .'.split()) == 'Zwei Hunde, "ja".'
    assert postprocess("▁我 ▁爱 ▁New ▁York ▁。", "zh", **format_options("spm")) == "我爱New York。"
    # not BPE's joiner: "@@" stays, and BPE removal leaves ▁ alone
    assert postprocess("▁a@@ ▁b", "en", detokenize=False, **format_options("spm")) == "a@@ b"
    assert postprocess("▁a@@ ▁b", "en", detokenize=False, **format_options("bpe")) == "▁a▁b"
    with pytest.raises(ValueError, match="unknown text format 'sp'"):
        format_options("sp")


def test_postprocess_cli_takes_spm(tmp_path):
    (tmp_path / "out").write_text("▁Zwei ▁Hund e ▁.\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "nmtmodels.cli", "postprocess", "--lang", "de", "--spm", str(tmp_path / "out"),
                          str(tmp_path / "hyp")], cwd=REPO, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "hyp").read_text(encoding="utf-8") == "Zwei Hunde.\n"


@pytest.mark.parametrize(("section", "message"), [
    ({"vocab_sizes": [8000], "model_type": "wordpiece"}, "s.model_type: expected unigram or bpe, got 'wordpiece'"),
    ({"vocab_sizes": []}, "s.vocab_sizes: expected a non-empty list of distinct integers >= 1 (e.g. [8000]), got []"),
    ({"vocab_sizes": [8000, 0]}, "s.vocab_sizes[1]: expected an integer >= 1, got 0"),
    ({"vocab_sizes": [8000, 8000]}, "s.vocab_sizes[1]: 8000 is listed twice"),
    ({"model_type": "bpe"}, "s.vocab_sizes: expected a non-empty list of distinct integers >= 1 (e.g. [8000]), got None"),
    ({"vocab_sizes": [8000], "character_coverage": 1.5}, "s.character_coverage: expected a number in (0, 1], got 1.5"),
    ({"vocab_sizes": [8000], "joint": "yes"}, "s.joint: expected true or false, got 'yes'"),
    ({"vocab_sizes": [8000], "input_sentence_size": -1}, "s.input_sentence_size: expected an integer >= 0 (0: every sentence), got -1"),
    ({"vocab_sizes": [8000], "vocab_size": 8000}, "s.vocab_size: unknown key (known: character_coverage, input_sentence_size, "
                                                  "joint, model_type, vocab_sizes)"),
])
def test_bad_settings_are_one_line_naming_the_key(section, message):
    with pytest.raises(ConfigError) as error:
        SentencePieceSettings.from_dict(section, where="s")
    assert str(error.value) == message


def test_what_sentencepiece_cannot_do_is_one_error_naming_the_input(tok, tmp_path):
    with pytest.raises(ValueError, match=r"cannot learn 5 unigram pieces from .*train\.en: .*Vocabulary size is smaller"):
        train_model([tok["en"]], 5, SentencePieceSettings())
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(DataError, match="empty: no text to learn SentencePiece pieces from"):
        train_model([tmp_path / "empty"], 100, SentencePieceSettings())
    (tmp_path / "latin1").write_bytes("ok\nna\xefve\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin1:2: invalid UTF-8"):
        train_model([tok["en"], tmp_path / "latin1"], 100, SentencePieceSettings())
    (tmp_path / "bad.model").write_bytes(b"not a model")
    with pytest.raises(DataError, match=r"bad\.model: not a SentencePiece model"):
        SentencePieceEncoder(tmp_path / "bad.model")


@pytest.fixture(scope="module")
def spm_package(tok, tmp_path_factory):
    """A package of an untrained tiny Transformer over joint unigram pieces (its vocabularies
    are the pieces of the training text), with the source model: (directory, sentencepiece processor)."""
    d = tmp_path_factory.mktemp("spm_package")
    model_bytes = train_model([tok["en"], tok["de"]], 150, SentencePieceSettings())
    (d / "spm.en-de.en.model").write_bytes(model_bytes)
    encoder = SentencePieceEncoder(model_bytes)
    vocabs = {lang: Vocabulary(sorted(piece_counts(encoder.encode_lines(tok[lang].read_text(encoding="utf-8").splitlines()))))
              for lang in ("en", "de")}
    config = ModelConfig.from_dict({"family": "transformer", "d_model": 16, "heads": 2, "ffn_dim": 32, "encoder_layers": 1,
                                    "decoder_layers": 1, "dropout": 0.0})
    torch.manual_seed(3)
    model = build_model(config, len(vocabs["en"]), len(vocabs["de"]))
    state = {"model": model.state_dict(), "model_config": config.to_dict(), "decode_config": {"beam": 2, "max_len_b": 6},
             "vocab": {"src": vocabs["en"].tokens, "tgt": vocabs["de"].tokens, "src_fingerprint": vocabs["en"].fingerprint(),
                       "tgt_fingerprint": vocabs["de"].fingerprint()}}
    save_checkpoint(d / "checkpoint_best.pt", state)
    settings = PackageSettings(source=LanguageSettings("en", "moses"), target=LanguageSettings("de", "moses"),
                               unicode_form="NFKC", subwords="spm150")
    directory = write_package(d / "model", d / "checkpoint_best.pt", settings, spm_model=d / "spm.en-de.en.model")
    return directory, sentencepiece.SentencePieceProcessor(model_proto=model_bytes)


def test_a_package_of_an_spm_model_reads_raw_text_and_writes_detokenised_text(spm_package):
    directory, reference = spm_package
    package = read_package(directory)
    assert package.settings.is_spm and not package.settings.is_bpe and package.spm_model.is_file()
    assert package.settings.to_dict()["sentencepiece"] == {"model": SPM_MODEL_FILE} and "bpe" not in package.settings.to_dict()
    translator = Translator.from_checkpoint(directory)
    translations = translator.translate(EN, beam=2, nbest=2)
    detokenizer = MosesDetokenizer("de")
    checked = 0
    for tokenised, translation in zip(moses(EN, "en"), translations):
        assert translation.source_tokens == reference.encode(tokenised, out_type=str)  # raw text in: Moses, then the pieces
        for hypothesis in translation.hypotheses:
            assert "▁" not in hypothesis.text and hypothesis.tokens
            if "<unk>" not in hypothesis.tokens:  # sentencepiece decodes <unk> as " ⁇ "; the pipeline keeps the token
                assert hypothesis.text == detokenizer.detokenize(reference.decode_pieces(hypothesis.tokens).split())
                checked += 1
    assert checked >= len(EN)


def test_nmt_translate_raw_output_is_the_pretokenized_output_postprocessed_as_spm(spm_package, tmp_path, capsys):
    directory, reference = spm_package
    (tmp_path / "raw.en").write_text("".join(line + "\n" for line in EN), encoding="utf-8")
    (tmp_path / "enc.en").write_text("".join(" ".join(reference.encode(line, out_type=str)) + "\n" for line in moses(EN, "en")),
                                     encoding="utf-8")
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(tmp_path / "raw.en")]) == 0
    raw = capsys.readouterr().out.splitlines()
    assert cli.translate_main(["--pretokenized", "--checkpoint", str(directory / "checkpoint.pt"), "--input", str(tmp_path / "enc.en"),
                               "--postprocess", "de", "--tgt-format", "spm"]) == 0
    assert capsys.readouterr().out.splitlines() == raw and len(raw) == len(EN)
    assert not any("▁" in line for line in raw)


def test_an_spm_package_without_its_model_is_refused_naming_the_file(spm_package, tmp_path):
    directory, _ = spm_package
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("checkpoint.pt", "preprocess.json"):
        (copy / name).write_bytes((directory / name).read_bytes())
    with pytest.raises(ConfigError, match=r"preprocess\.json: subwords spm150 need spm\.model beside it; it is missing"):
        read_package(copy)
    settings = read_package(directory).settings
    with pytest.raises(ValueError, match="subwords spm150: need SentencePiece model"):
        write_package(tmp_path / "other", directory / "checkpoint.pt", settings)
