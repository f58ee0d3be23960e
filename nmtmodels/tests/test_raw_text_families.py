"""Raw text for the lattice and ESC families: model packages that make the extra inputs.

The expected model inputs are made by hand, independently of nmtmodels.text.lattice and
nmtmodels.text.preprocessing: NFKC and whitespace collapse with unicodedata, each Chinese
segmenter called through its own library, BPE with subword-nmt, Moses with sacremoses, and the
lattice as a dict of character spans.  The expected search results come from
nmtmodels.decoding.search.translate_dataset over datasets read from files, as the workflow's
rules read them.  The models are tiny and random: what is checked is that both paths agree."""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import itertools
import logging
import os
import re
import shutil
import sys
import unicodedata
from pathlib import Path

import pytest
import torch
from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer
from subword_nmt import apply_bpe, learn_bpe

from nmtmodels import cli
from nmtmodels.checkpoint import CheckpointError, load_model_from_checkpoint, save_checkpoint
from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import ExtraField, ParallelDataset
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import translate_dataset
from nmtmodels.decoding.translator import Translator, raw_text_refusal
from nmtmodels.files import DataError
from nmtmodels.model_package.reader import EncodedSource, read_package
from nmtmodels.model_package.settings import CompressionSettings, LatticeSettings, PackageSettings
from nmtmodels.model_package.writer import write_package
from nmtmodels.models.lattice import SPAN_PAD
from nmtmodels.registry import build_model
from nmtmodels.symbols import PAD_ID
from nmtmodels.text import preprocessing
from nmtmodels.text.preprocessing import LanguageSettings
from nmtmodels.vocab import Vocabulary

REPO = Path(__file__).resolve().parents[2]
MIRROR = Path(os.environ.get("NMT_DATA_MIRROR") or REPO.parent / "shared" / "data")
TINY = {"d_model": 16, "heads": 2, "ffn_dim": 32, "encoder_layers": 1, "decoder_layers": 1, "dropout": 0.0,
        "max_source_positions": 64, "max_target_positions": 64}
DECODE = {"beam": 2, "max_len_a": 0.5, "max_len_b": 3}
# Tatoeba rows: Latin words, a space, full-width "？" (NFKC makes it "?"), segmenters that disagree
ZH_ROWS = [176, 3950, 4208, 4237, 4419, 3653, *range(3000, 3012)]
ZH_SEGMENTERS = ("jieba", "thulac", "snownlp")
EN_WORDS = "I am a good man . Tom is here ? you".split()
DE_WORDS = "ein Mann ist hier . zwei Hunde spielen im Schnee".split()
COMPRESSION = {"beam": 2, "length_penalty": 0.6, "coverage_penalty": 0.2, "max_len_a": 0.8, "max_len_b": 2, "min_len": 1,
               "max_len_ratio": 0.9}
FAMILY_INPUTS = {"lattice_transformer": ("starts", "ends"), "bbfnmt": ("compressed",)}
ZH_EN = dict(source=LanguageSettings("zh", "jieba"), target=LanguageSettings("en", "moses"), unicode_form="NFKC")

pytestmark = pytest.mark.usefixtures("one_thread")


def tatoeba_rows() -> list[list[str]]:
    path = MIRROR / "zh-en" / "cmn.txt.gz"
    if not path.is_file():
        pytest.skip(f"no Tatoeba cmn.txt in the mirror {MIRROR} (set NMT_DATA_MIRROR)")
    return [line.split("\t") for line in gzip.open(path, "rt", encoding="utf-8").read().splitlines()]


def save_model(path: Path, family: str, src: list[str], tgt: list[str], *, decode=DECODE, seed: int = 0, **config) -> Path:
    """A random tiny model of ``family`` with the vocabularies ``src``/``tgt`` as a checkpoint."""
    torch.manual_seed(seed)
    src_vocab, tgt_vocab = Vocabulary(dict.fromkeys(src)), Vocabulary(dict.fromkeys(tgt))
    model_config = ModelConfig.from_dict({**TINY, **config, "family": family})
    model = build_model(model_config, len(src_vocab), len(tgt_vocab))
    save_checkpoint(path, {"model": model.state_dict(), "model_config": model_config.to_dict(), "decode_config": dict(decode),
                           "vocab": {"src": src_vocab.tokens, "tgt": tgt_vocab.tokens, "src_fingerprint": src_vocab.fingerprint(),
                                     "tgt_fingerprint": tgt_vocab.fingerprint()}})
    return path


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def normalised(line: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", line).split())


def hand_lattice(segmentations: list[list[str]], unit: str) -> EncodedSource:
    """Edges keyed by their character span ("@@" not counted), sorted by (start, end); nodes as
    characters, or (subword) as their rank among the lattice's nodes."""
    spans: dict[tuple[int, int], str] = {}
    for tokens in segmentations:
        node = 0
        for token in tokens:
            span = (node, node + len(token.removesuffix("@@")))
            assert spans.setdefault(span, token) == token
            node = span[1]
    nodes = sorted({node for span in spans for node in span})
    number = {node: (rank if unit == "subword" else node) for rank, node in enumerate(nodes)}
    edges = sorted(spans.items())
    return EncodedSource(" ".join(token for _, token in edges), {"starts": " ".join(str(number[s]) for (s, _), _ in edges),
                                                                 "ends": " ".join(str(number[e]) for (_, e), _ in edges)})


@pytest.fixture(scope="module")
def zh():
    """(raw sentences, {segmenter: their words}, words(segmenter, line), the Tatoeba rows), by hand."""
    import jieba
    import thulac
    from snownlp import SnowNLP

    rows = tatoeba_rows()
    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    thu = thulac.thulac(seg_only=True)
    cuts = {"jieba": tokenizer.lcut, "thulac": lambda piece: [w for w, _ in thu.cut(piece)],
            "snownlp": lambda piece: SnowNLP(piece).words}

    def words(name: str, line: str) -> list[str]:
        out = [word for piece in normalised(line).split() for word in cuts[name](piece) if word]
        assert "".join(out) == "".join(normalised(line).split())
        return out

    sentences = [rows[i][1] for i in ZH_ROWS]
    assert normalised(sentences[3]) != sentences[3] and " " in normalised(sentences[0])  # NFKC and spaces matter
    return sentences, {name: [words(name, s) for s in sentences] for name in ZH_SEGMENTERS}, words, rows


@pytest.fixture(scope="module")
def word_lattice(zh, tmp_path_factory):
    """A jieba+thulac+snownlp lattice package, a lattice_transformer that knows the edges of half the sentences."""
    sentences, words, _, _ = zh
    d = tmp_path_factory.mktemp("word_lattice")
    expected = [hand_lattice([words[name][i] for name in ZH_SEGMENTERS], "char") for i in range(len(sentences))]
    known = [token for inputs in expected[: len(sentences) // 2] for token in inputs.tokens.split()]
    save_model(d / "lattice.pt", "lattice_transformer", known, EN_WORDS, options={"positions": "lattice", "lsa": True})
    settings = PackageSettings(**ZH_EN, subwords="bpe300", lattice=LatticeSettings(ZH_SEGMENTERS, "char"))
    return write_package(d / "model", d / "lattice.pt", settings), expected, settings


@pytest.mark.heavy
def test_word_lattice_package_encodes_raw_text_as_the_hand_made_lattice(zh, word_lattice):
    sentences, _, _, _ = zh
    directory, expected, _ = word_lattice
    encode = read_package(directory).input_encoder()
    assert [encode(sentence) for sentence in sentences] == expected
    assert any(len(e.tokens.split()) > len(w) for e, w in zip(expected, zh[1]["jieba"]))  # segmenters disagree somewhere


@pytest.mark.heavy
def test_word_lattice_translation_equals_the_workflow_files_path(zh, word_lattice, tmp_path, monkeypatch, capsys):
    sentences, _, _, _ = zh
    directory, expected, _ = word_lattice
    results = Translator.from_checkpoint(directory).translate(sentences)
    model, src_vocab, tgt_vocab, state = load_model_from_checkpoint(str(directory / "checkpoint.pt"))
    files = {"src": [e.tokens for e in expected], **{k: [e.extras[k] for e in expected] for k in ("starts", "ends")}}
    paths = {key: write_lines(tmp_path / key, lines) for key, lines in files.items()}
    dataset = ParallelDataset.from_files(paths["src"], None, src_vocab, None, max_positions=model.max_positions(),
                                         extras={k: ExtraField(str(paths[k]), SPAN_PAD) for k in ("starts", "ends")})
    searched = translate_dataset(model, dataset, DecodeConfig(**state["decode_config"]), max_tokens=4096)
    sources = [[t if t in src_vocab else "<unk>" for t in e.tokens.split()] for e in expected]
    assert [r.source_tokens for r in results] == sources and "<unk>" in itertools.chain(*sources[len(sources) // 2:])
    assert [[h.tokens for h in r.hypotheses] for r in results] == [[tgt_vocab.decode(h.tokens, keep_unk=True) for h in hyps[:1]]
                                                                   for hyps in searched]
    assert [r.score for r in results] == pytest.approx([hyps[0].score for hyps in searched], abs=1e-5)
    raw = write_lines(tmp_path / "raw.zh", sentences)
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(raw), "--threads", "1"]) == 0
    from_file = capsys.readouterr().out.splitlines()
    monkeypatch.setattr(sys, "stdin", io.StringIO(raw.read_text(encoding="utf-8")))
    assert cli.translate_main(["--checkpoint", str(directory), "--threads", "1"]) == 0
    assert from_file == capsys.readouterr().out.splitlines() == [r.text for r in results]


@pytest.mark.heavy
def test_subword_lattice_package_encodes_raw_text_as_the_hand_made_lattice(zh, tmp_path):
    sentences, _, words, rows = zh
    train = [" ".join(words("jieba", row[1])) for row in rows[2000:2400]]  # the TOK text apply_bpe reads
    sizes, codes, bpes = ("bpe30", "bpe80"), {}, {}
    for part in sizes:
        out = io.StringIO()
        learn_bpe.learn_bpe(train, out, int(part[3:]), 2)
        assert len(out.getvalue().splitlines()) == 1 + int(part[3:])  # the corpus did not run out of pairs
        encoded = [apply_bpe.BPE(io.StringIO(out.getvalue()), separator="@@").process_line(line) for line in train]
        counts = learn_bpe.get_vocabulary(encoded)
        codes[part] = (write_lines(tmp_path / f"codes.{part}", out.getvalue().splitlines()),
                       write_lines(tmp_path / f"vocab.{part}", [f"{w} {c}" for w, c in counts.most_common()]))
        bpes[part] = apply_bpe.BPE(io.StringIO(out.getvalue()), separator="@@",
                                   vocab=apply_bpe.read_vocabulary(codes[part][1].open(encoding="utf-8"), 1))
    segmented = [[bpes[part].process_line(" ".join(words("jieba", s))).split() for part in sizes] for s in sentences]
    expected = [hand_lattice(both, "subword") for both in segmented]
    assert any(both[0] != both[1] for both in segmented)  # the sizes differ: a lattice, not one path
    save_model(tmp_path / "lattice.pt", "lattice_transformer", ["x"], EN_WORDS, options={"positions": "lattice", "lsa": True})
    settings = PackageSettings(**ZH_EN, subwords="bpe80", vocabulary_threshold=1, lattice=LatticeSettings(sizes, "subword"))
    directory = write_package(tmp_path / "model", tmp_path / "lattice.pt", settings, lattice_bpe=codes)
    encode = read_package(directory).input_encoder()
    assert [encode(sentence) for sentence in sentences] == expected
    assert any("@@" in e.tokens for e in expected) and any(e.extras["ends"].split()[-1] != str(len("".join(
        normalised(s).split()))) for e, s in zip(expected, sentences))  # subword positions, not characters


@pytest.fixture(scope="module")
def one_best(zh, tmp_path_factory):
    """A package of the jieba segmentation of a lattice and a plain transformer (the 1-best baseline)."""
    _, words, _, _ = zh
    d = tmp_path_factory.mktemp("one_best")
    save_model(d / "t.pt", "transformer", [w for ws in words["jieba"] for w in ws], EN_WORDS)
    settings = PackageSettings(**ZH_EN, subwords="bpe300", lattice=LatticeSettings(("jieba",), "char"))
    return write_package(d / "model", d / "t.pt", settings)


@pytest.mark.heavy
def test_a_one_best_transformer_reads_the_jieba_words(zh, one_best, tmp_path):
    sentences, words, _, _ = zh
    results = Translator.from_checkpoint(one_best).translate(sentences)
    assert [r.source_tokens for r in results] == words["jieba"]
    model, src_vocab, tgt_vocab, state = load_model_from_checkpoint(str(one_best / "checkpoint.pt"))
    dataset = ParallelDataset.from_files(write_lines(tmp_path / "src", map(" ".join, words["jieba"])), None, src_vocab, None)
    searched = translate_dataset(model, dataset, DecodeConfig(**state["decode_config"]), max_tokens=4096)
    assert [r.hypotheses[0].tokens for r in results] == [tgt_vocab.decode(h[0].tokens, keep_unk=True) for h in searched]


def moses(line: str) -> str:
    """Moses punctuation normalisation and tokenisation (-a, no escaping): Multi30k en's settings."""
    return MosesTokenizer(lang="en").tokenize(" ".join(MosesPunctNormalizer(lang="en").normalize(line).split()),
                                              aggressive_dash_splits=True, escape=False, return_str=True)


@pytest.fixture(scope="module", params=["bsfnmt", "btfnmt", "bbfnmt"])
def esc(tmp_path_factory, request):
    """(ESC package of each ESC family, raw sentences, their encoded source by hand)."""
    path = MIRROR / "multi30k" / "train.en.gz"
    if not path.is_file():
        pytest.skip(f"no Multi30k in the mirror {MIRROR} (set NMT_DATA_MIRROR)")
    d = tmp_path_factory.mktemp("esc")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        raw = [line.rstrip("\n") for line in itertools.islice(handle, 300)]
    tok = [moses(line) for line in raw]
    out = io.StringIO()
    learn_bpe.learn_bpe(tok, out, 300, 2)
    write_lines(d / "codes", out.getvalue().splitlines())
    counts = learn_bpe.get_vocabulary([apply_bpe.BPE(io.StringIO(out.getvalue()), separator="@@").process_line(t) for t in tok])
    write_lines(d / "vocab", [f"{w} {c}" for w, c in counts.most_common()])
    bpe = apply_bpe.BPE(io.StringIO(out.getvalue()), separator="@@",
                        vocab=apply_bpe.read_vocabulary((d / "vocab").open(encoding="utf-8"), 1))
    tokens = list(counts)
    save_model(d / "compressor.pt", "transformer", tokens, tokens, decode={"beam": 5, "early_stop": "top"}, seed=1,
               max_source_positions=16, max_target_positions=16)  # long sources are cut
    save_model(d / "esc.pt", request.param, tokens, DE_WORDS)
    settings = PackageSettings(source=LanguageSettings("en", "moses"), target=LanguageSettings("de", "moses"),
                               unicode_form="NFKC", subwords="bpe300", vocabulary_threshold=1,
                               compression=CompressionSettings(tuple(sorted(COMPRESSION.items())), 4096))
    directory = write_package(d / "model", d / "esc.pt", settings, d / "codes", d / "vocab", compressor=d / "compressor.pt")
    sentences = raw[200:210] + ["Two dogs are playing in the snow."]
    return directory, sentences, [bpe.process_line(moses(s)) for s in sentences], settings, d


def test_esc_package_compresses_then_translates_as_the_workflow_rules(esc, tmp_path, monkeypatch, capsys):
    directory, sentences, encoded, _, d = esc
    compressor, c_src, c_tgt, c_state = load_model_from_checkpoint(str(d / "compressor.pt"))
    assert max(len(line.split()) for line in encoded) >= 16  # some are cut for the compressor
    cut = ParallelDataset.from_lines(encoded, c_src, max_positions=compressor.max_positions(), too_long="truncate")
    decode = DecodeConfig(**{**c_state["decode_config"], **COMPRESSION, "nbest": 1})
    compressed = [" ".join(c_tgt.decode(h[0].tokens, keep_unk=True))
                  for h in translate_dataset(compressor, cut, decode, max_tokens=4096)]
    model, src_vocab, tgt_vocab, state = load_model_from_checkpoint(str(d / "esc.pt"))
    dataset = ParallelDataset.from_files(write_lines(tmp_path / "src", encoded), None, src_vocab, None,
                                         extras={"compressed": ExtraField(str(write_lines(tmp_path / "c", compressed)), PAD_ID,
                                                                          tokens=True)},
                                         max_positions=model.max_positions())
    searched = translate_dataset(model, dataset, DecodeConfig(**state["decode_config"]), max_tokens=4096)
    results = Translator.from_checkpoint(directory).translate(sentences)
    assert [r.source_tokens for r in results] == [line.split() for line in encoded]
    assert [r.compressed_tokens for r in results] == [line.split() for line in compressed]
    detok = MosesDetokenizer(lang="en")
    assert [r.compressed for r in results] == [detok.detokenize(re.sub("@@( |$)", "", line).split()) for line in compressed]
    assert [r.hypotheses[0].tokens for r in results] == [tgt_vocab.decode(h[0].tokens, keep_unk=True) for h in searched]
    lines = [f"{r.compressed}\t{r.text}" for r in results]
    raw = write_lines(tmp_path / "raw.en", sentences)
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(raw), "--show-compressed", "--threads", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == lines
    monkeypatch.setattr(sys, "stdin", io.StringIO(raw.read_text(encoding="utf-8")))
    assert cli.translate_main(["--checkpoint", str(directory), "--show-compressed", "--threads", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == lines


def test_an_identity_esc_package_reads_the_source_as_its_compressed_input(esc, tmp_path, capsys):
    """x^c = x (the ESC control): no compressor in the package; the model reads the encoded
    source twice, as the workflow's identity compressor gives it the encoded source file."""
    _, sentences, encoded, settings, d = esc
    identity = dataclasses.replace(settings, compression=CompressionSettings(identity=True))
    assert identity.to_dict()["compression"] == {"identity": True}
    assert CompressionSettings.from_dict({"identity": True}, "x") == CompressionSettings(identity=True)
    with pytest.raises(ConfigError, match=r"^x\.batch_tokens: an identity compression"):
        CompressionSettings.from_dict({"identity": True, "batch_tokens": 5}, "x")
    with pytest.raises(ValueError, match="only it takes one"):
        write_package(tmp_path / "bad", d / "esc.pt", identity, d / "codes", d / "vocab", compressor=d / "compressor.pt")
    directory = write_package(tmp_path / "model", d / "esc.pt", identity, d / "codes", d / "vocab")
    assert not (directory / "compressor.pt").exists() and read_package(directory).compressor is None
    model, src_vocab, tgt_vocab, state = load_model_from_checkpoint(str(d / "esc.pt"))
    source = write_lines(tmp_path / "src", encoded)
    dataset = ParallelDataset.from_files(source, None, src_vocab, None,
                                         extras={"compressed": ExtraField(str(source), PAD_ID, tokens=True)},
                                         max_positions=model.max_positions())
    searched = translate_dataset(model, dataset, DecodeConfig(**state["decode_config"]), max_tokens=4096)
    results = Translator.from_checkpoint(directory).translate(sentences)
    assert [r.compressed_tokens for r in results] == [line.split() for line in encoded]
    assert [r.hypotheses[0].tokens for r in results] == [tgt_vocab.decode(h[0].tokens, keep_unk=True) for h in searched]
    raw = write_lines(tmp_path / "raw.en", sentences[:2])
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(raw), "--show-compressed", "--threads", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{r.compressed}\t{r.text}" for r in results[:2]]


@pytest.mark.heavy
def test_show_compressed_on_another_package_is_one_line(one_best, tmp_path, capsys):
    directory = one_best
    raw = write_lines(tmp_path / "raw.zh", ["我很好。"])
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(raw), "--show-compressed"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (f"nmt-translate: error: --show-compressed: {directory} is no ESC model "
                                                   "package (model family 'transformer'): it compresses nothing\n")


@pytest.mark.parametrize("family, settings, made", [
    ("lattice_transformer", PackageSettings(**ZH_EN, subwords="char"), ()),
    ("bbfnmt", PackageSettings(**ZH_EN, subwords="char", lattice=LatticeSettings(("jieba",), "char")), ("starts", "ends"))])
def test_a_package_that_lacks_the_model_inputs_is_refused_in_one_line(tmp_path, capsys, family, settings, made):
    save_model(tmp_path / "m.pt", family, ["a"], ["b"])
    directory = write_package(tmp_path / "model", tmp_path / "m.pt", settings)
    missing = sorted(set(FAMILY_INPUTS[family]) - set(made))
    with pytest.raises(ConfigError) as caught:
        Translator.from_checkpoint(directory)
    assert str(caught.value) == f"{directory / 'checkpoint.pt'}: {raw_text_refusal(family, FAMILY_INPUTS[family], made)}"
    assert f"(missing: {', '.join(missing)})" in str(caught.value) and "\n" not in str(caught.value)
    raw = write_lines(tmp_path / "raw", ["我很好。"])
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(raw)]) == 2
    assert capsys.readouterr().err == f"nmt-translate: error: {caught.value}\n"


@pytest.mark.heavy
def test_a_missing_segmenter_names_the_extra_to_install(word_lattice, monkeypatch, tmp_path, capsys):
    def not_installed():
        raise ModuleNotFoundError("No module named 'thulac'", name="thulac")

    monkeypatch.setitem(preprocessing._BACKENDS, "thulac", not_installed)
    directory, _, _ = word_lattice
    message = "the zh segmenter thulac needs the Python package 'thulac': pip install 'structnmt[zh]' (the zh extra)"
    with pytest.raises(ConfigError) as caught:
        read_package(directory).input_encoder()
    assert str(caught.value) == message
    with pytest.raises(ConfigError, match=re.escape(message)):
        Translator.from_checkpoint(directory)
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(write_lines(tmp_path / "raw", ["好。"]))]) == 2
    assert capsys.readouterr().err == f"nmt-translate: error: {message}\n"


def test_an_ensemble_of_a_lattice_and_a_plain_transformer_names_both_families(tmp_path):
    lattice = save_model(tmp_path / "a.pt", "lattice_transformer", ["a"], ["b"])
    plain = save_model(tmp_path / "b.pt", "transformer", ["a"], ["b"])
    with pytest.raises(CheckpointError) as caught:
        Translator.from_checkpoint([lattice, plain], pretokenized=True)
    assert str(caught.value) == (f"{plain}: model family 'transformer' reads the source alone but {lattice}'s family "
                                 "'lattice_transformer' reads the source and the extra inputs ends, starts; an ensemble's "
                                 "members must read the same inputs")


def test_lattice_and_esc_settings_round_trip_with_digests_of_the_lattice_codes(esc, tmp_path):
    directory, _, _, esc_settings, d = esc
    digest = lambda path: hashlib.sha256(Path(path).read_bytes()).hexdigest()
    read = read_package(directory).settings
    assert dict(read.model_digests).keys() == {"checkpoint.pt", "compressor.pt"}  # the model files' own digests
    assert dataclasses.replace(read, model_digests=()) == dataclasses.replace(
        esc_settings, digests=(("bpe.codes", digest(d / "codes")), ("bpe.vocab", digest(d / "vocab"))))
    save_model(tmp_path / "l.pt", "lattice_transformer", ["a"], ["b"])
    settings = PackageSettings(**ZH_EN, subwords="bpe300", vocabulary_threshold=2,
                               lattice=LatticeSettings(("jieba", "bpe300", "thulac"), "char", vocab_limit=7))
    lattice = write_package(tmp_path / "model", tmp_path / "l.pt", settings, lattice_bpe={"bpe300": (d / "codes", d / "vocab")})
    assert dataclasses.replace(read_package(lattice).settings, model_digests=()) == dataclasses.replace(
        settings, digests=(("lattice.bpe300.codes", digest(d / "codes")), ("lattice.bpe300.vocab", digest(d / "vocab"))))
    assert not (lattice / "bpe.codes").exists()
    changed = Path(shutil.copytree(lattice, tmp_path / "changed"))
    with (changed / "lattice.bpe300.codes").open("a", encoding="utf-8") as handle:
        handle.write("x y\n")
    with pytest.raises(DataError) as caught:
        read_package(changed)
    assert str(caught.value).startswith(f"{changed / 'lattice.bpe300.codes'}: content does not match the sha256")
