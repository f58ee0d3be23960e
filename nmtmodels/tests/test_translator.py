"""Raw text in, plain text out: a tiny model trained on a real Multi30k sample (the corpus
mirror), packaged with nmtmodels.model_package, translated through Translator and nmt-translate.

The expected model input is made by hand with sacremoses and subword-nmt (not with
nmtmodels.text.preprocessing), and the expected search results with nmtmodels.decoding.search as the
old nmt-translate used it."""
from __future__ import annotations

import gzip
import io
import itertools
import math
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch
from sacremoses import MosesPunctNormalizer, MosesTokenizer
from subword_nmt import apply_bpe, learn_bpe

from nmtmodels import cli
from nmtmodels.checkpoint import load_model_from_checkpoint, save_checkpoint
from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import ParallelDataset
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import translate_dataset
from nmtmodels.decoding.translator import Translator
from nmtmodels.files import DataError
from nmtmodels.model_package.reader import read_package
from nmtmodels.model_package.settings import PackageSettings
from nmtmodels.model_package.writer import write_package
from nmtmodels.registry import build_model
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID
from nmtmodels.text.postprocess import postprocess
from nmtmodels.text.preprocessing import LanguageSettings
from nmtmodels.vocab import Vocabulary

REPO = Path(__file__).resolve().parents[2]
MIRROR = Path(os.environ.get("NMT_DATA_MIRROR") or REPO.parent / "shared" / "data")
TRAIN_PAIRS = 600
MERGES = 600
SENTENCE = "Two dogs are playing in the snow."
EXPERIMENT = """\
model: {preset: tiny, d_model: 32, heads: 2, ffn_dim: 64, encoder_layers: 1, decoder_layers: 1, dropout: 0.0,
        max_source_positions: 128, max_target_positions: 128}
train: {max_tokens: 2000, lr: 0.005, warmup_updates: 5, max_updates: 12, log_interval: 100,
        label_smoothing: 0.0, num_threads: 1, keep_last: 1}
decode: {beam: 2, max_len_a: 0.5, max_len_b: 4}
"""


pytestmark = pytest.mark.usefixtures("one_thread")


def by_hand(line: str, bpe: apply_bpe.BPE) -> str:
    """Moses punctuation normalisation, tokenisation (-a, no escaping) and BPE, as the
    workflow's corpus settings for Multi30k en say (NFKC first; ASCII input is unchanged)."""
    normalised = " ".join(MosesPunctNormalizer(lang="en").normalize(line).split())
    tokens = MosesTokenizer(lang="en").tokenize(normalised, aggressive_dash_splits=True, escape=False, return_str=True)
    return bpe.process_line(tokens)


def head(path: Path, count: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in itertools.islice(handle, count)]


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """(package directory, subword-nmt BPE of the source, run directory)."""
    if not (MIRROR / "multi30k" / "train.en.gz").is_file():
        pytest.skip(f"no corpus mirror at {MIRROR} (set NMT_DATA_MIRROR)")
    d = tmp_path_factory.mktemp("raw")
    raw = {lang: head(MIRROR / "multi30k" / f"train.{lang}.gz", TRAIN_PAIRS) for lang in ("en", "de")}
    tokenizers = {lang: MosesTokenizer(lang=lang) for lang in raw}
    normalisers = {lang: MosesPunctNormalizer(lang=lang) for lang in raw}
    tok = {lang: [tokenizers[lang].tokenize(" ".join(normalisers[lang].normalize(line).split()),
                                            aggressive_dash_splits=True, escape=False, return_str=True) for line in lines]
           for lang, lines in raw.items()}
    codes = {}
    for lang, lines in tok.items():  # separate BPE per side, subword-nmt's own functions
        out = io.StringIO()
        learn_bpe.learn_bpe(lines, out, MERGES, 2)
        codes[lang] = out.getvalue()
        (d / f"codes.{lang}").write_text(codes[lang], encoding="utf-8")
    for lang, lines in tok.items():
        encoded = [apply_bpe.BPE(io.StringIO(codes[lang]), separator="@@").process_line(line) for line in lines]
        (d / f"train.{lang}").write_text("".join(line + "\n" for line in encoded), encoding="utf-8")
        counts = learn_bpe.get_vocabulary(encoded)
        (d / f"vocab.{lang}").write_text("".join(f"{w} {c}\n" for w, c in counts.most_common()), encoding="utf-8")
    (d / "exp.yaml").write_text(EXPERIMENT)
    threads = torch.get_num_threads()
    try:
        for lang in ("en", "de"):
            assert cli.vocab_main(["--inputs", str(d / f"vocab.{lang}"), "--from-counts", "--output", str(d / f"dict.{lang}")]) == 0
        assert cli.train_main(["--config", str(d / "exp.yaml"), "--train-src", str(d / "train.en"), "--train-tgt", str(d / "train.de"),
                               "--src-vocab", str(d / "dict.en"), "--tgt-vocab", str(d / "dict.de"), "--out-dir", str(d / "train"),
                               "--device", "cpu"]) == 0
    finally:
        torch.set_num_threads(threads)
    settings = PackageSettings(source=LanguageSettings("en", "moses"), target=LanguageSettings("de", "moses"),
                               unicode_form="NFKC", subwords=f"bpe{MERGES}", vocabulary_threshold=1)
    directory = write_package(d / "model", d / "train" / "checkpoint_last.pt", settings, d / "codes.en", d / "vocab.en")
    bpe = apply_bpe.BPE(io.StringIO(codes["en"]), separator="@@",
                        vocab=apply_bpe.read_vocabulary((d / "vocab.en").open(encoding="utf-8"), 1))
    return directory, bpe, d


def run_cli(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nmtmodels.cli", "translate", *args], cwd=REPO, input=stdin,
                          capture_output=True, text=True, timeout=300, check=False, env={**os.environ, "OMP_NUM_THREADS": "1"})


def test_package_round_trips_its_settings(package):
    directory, _, _ = package
    read = read_package(directory)
    assert read.settings.source == LanguageSettings("en", "moses") and read.settings.target.lang == "de"
    assert read.settings.subwords == f"bpe{MERGES}" and read.settings.vocabulary_threshold == 1
    assert read.checkpoint.is_file() and read.codes.is_file() and read.vocab.is_file()


def test_raw_sentence_is_read_like_the_training_source_without_unknown_words(package):
    directory, bpe, _ = package
    translator = Translator.from_checkpoint(directory / "checkpoint.pt")
    expected = by_hand(SENTENCE, bpe).split()
    assert expected[-2:] == ["snow", "."]  # the trailing period is its own token, "snow" a word of the sample
    assert all(token in translator.src_vocab for token in expected)
    [translation] = translator.translate([SENTENCE], beam=2)
    assert translation.source_tokens == expected and "<unk>" not in translation.source_tokens
    # the old behaviour, kept with pretokenized: the untokenised "snow." is not a word the model knows
    raw = Translator.from_checkpoint(directory / "checkpoint.pt", pretokenized=True)
    [untokenised] = raw.translate([SENTENCE], beam=2)
    assert untokenised.source_tokens[-1] == "<unk>"


def test_translate_returns_scored_nbest_lists_and_attention(package):
    directory, _, _ = package
    translator = Translator.from_checkpoint(directory)  # the directory itself
    sentences = [SENTENCE, "A man is riding a bike.", "A little girl in a pink dress."]
    results = translator.translate(sentences, beam=3, nbest=3, return_attention=True)
    assert [r.source for r in results] == sentences
    for result in results:
        assert len(result.hypotheses) == 3
        scores = [h.score for h in result.hypotheses]
        assert scores == sorted(scores, reverse=True) and result.score == scores[0]
        for hyp in result.hypotheses:
            assert "@@" not in hyp.text and hyp.text == postprocess(" ".join(hyp.tokens), "de")
            assert hyp.attention.shape == (len(hyp.tokens) + 1, len(result.source_tokens) + 1)
    with pytest.raises(TypeError):
        translator.translate(SENTENCE)


def test_search_settings_of_ones_own_are_checked_before_the_first_line_is_read(package):
    """The search takes checked settings (it no longer checks them batch by batch): a
    DecodeConfig made by hand is checked as the stream starts, greedy (beam 1) included."""
    directory, _, _ = package
    translator = Translator.from_checkpoint(directory)
    read: list[str] = []

    def lines():
        read.append(SENTENCE)
        yield SENTENCE

    for bad, key in ((DecodeConfig(beam=1, length_penalty=-1.0), "length_penalty"), (DecodeConfig(beam=2, nbest=3), "nbest")):
        with pytest.raises(ConfigError, match=rf"^decode\.{key}: "):
            translator.stream(lines(), decode=bad)
    assert read == []
    assert translator.translate_lines([SENTENCE], decode=DecodeConfig(beam=2))[0].text


@pytest.mark.heavy
def test_cli_raw_output_is_the_pretokenized_output_of_the_hand_pipeline_postprocessed(package, tmp_path):
    directory, bpe, _ = package
    sentences = head(MIRROR / "multi30k" / "val.en.gz", 12) + [SENTENCE]
    (tmp_path / "raw.en").write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    (tmp_path / "enc.en").write_text("".join(by_hand(s, bpe) + "\n" for s in sentences), encoding="utf-8")
    raw = run_cli(["--checkpoint", str(directory / "checkpoint.pt"), "--input", str(tmp_path / "raw.en")])
    assert raw.returncode == 0, raw.stderr
    old = run_cli(["--pretokenized", "--checkpoint", str(directory / "checkpoint.pt"), "--input", str(tmp_path / "enc.en"),
                   "--postprocess", "de"])
    assert old.returncode == 0, old.stderr
    assert raw.stdout.splitlines() == old.stdout.splitlines() and len(raw.stdout.splitlines()) == len(sentences)
    assert "@@" not in raw.stdout


@pytest.mark.heavy
def test_pretokenized_output_is_what_the_search_returns_as_before(package, tmp_path):
    """--pretokenized writes the search's best tokens joined by spaces, as nmt-translate always did."""
    _, _, d = package
    checkpoint = d / "model" / "checkpoint.pt"
    encoded = tmp_path / "encoded.en"
    encoded.write_text("".join(line + "\n" for line in (d / "train.en").read_text(encoding="utf-8").splitlines()[:60]))
    out = run_cli(["--pretokenized", "--checkpoint", str(checkpoint), "--input", str(encoded), "--beam", "2"])
    assert out.returncode == 0, out.stderr
    model, src_vocab, tgt_vocab, state = load_model_from_checkpoint(str(checkpoint))
    dataset = ParallelDataset.from_files(encoded, None, src_vocab, None, max_positions=model.max_positions())
    decode = DecodeConfig(**{**state["decode_config"], "beam": 2})
    expected = [" ".join(tgt_vocab.decode(hyps[0].tokens, keep_unk=True))
                for hyps in translate_dataset(model, dataset, decode, max_tokens=4096)]
    assert out.stdout.splitlines() == expected and len(expected) == 60


@pytest.mark.heavy
def test_piped_stdin_is_batched_and_equals_input_line_by_line_with_progress(package, tmp_path):
    directory, _, _ = package
    sentences = head(MIRROR / "multi30k" / "val.en.gz", 40)
    (tmp_path / "raw.en").write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    common = ["--checkpoint", str(directory), "--batch-tokens", "200", "--log-interval", "0"]
    from_file = run_cli([*common, "--input", str(tmp_path / "raw.en")])
    piped = run_cli(common, stdin="".join(s + "\n" for s in sentences))
    assert from_file.returncode == piped.returncode == 0, piped.stderr
    assert piped.stdout.splitlines() == from_file.stdout.splitlines() and len(piped.stdout.splitlines()) == 40
    for err in (from_file.stderr, piped.stderr):
        progress = re.findall(r"nmt-translate: ([\d,]+) of 40 sentences, [\d.]+ sentences/s", err)
        assert progress and [int(n) for n in progress] == sorted(int(n) for n in progress)  # several batches, counted up
        assert re.search(r"nmt-translate: translated 40 sentences in [\d.]+ s \([\d.]+ sentences/s\)\n$", err), err


@pytest.mark.heavy
def test_a_bad_line_in_input_and_on_stdin_gives_the_same_output_and_exit_status(package, tmp_path):
    # invalid UTF-8 on line 2, a line over the model's 1024 positions on line 4: each costs its
    # own output line only, with an error naming the line, in both; the exit status is 2
    directory, _, _ = package
    good = head(MIRROR / "multi30k" / "val.en.gz", 3)
    data = (good[0] + "\n").encode() + b"a \xff\xfe b\n" + (good[1] + "\n").encode() + ("x " * 1100 + "\n").encode() \
        + (good[2] + "\n").encode()
    (tmp_path / "bad.en").write_bytes(data)
    common = ["--checkpoint", str(directory), "--log-interval", "0"]
    from_file = run_cli([*common, "--input", str(tmp_path / "bad.en"), "--output", str(tmp_path / "out.de")])
    piped = subprocess.run([sys.executable, "-m", "nmtmodels.cli", "translate", *common], cwd=REPO, input=data,
                           capture_output=True, timeout=300, check=False, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert from_file.returncode == piped.returncode == 2
    lines = (tmp_path / "out.de").read_text(encoding="utf-8").splitlines()
    assert lines == piped.stdout.decode().splitlines() and len(lines) == 5
    assert lines[1] == lines[3] == "" and all(lines[i] for i in (0, 2, 4))
    for err, name in ((from_file.stderr, str(tmp_path / "bad.en")), (piped.stderr.decode(), "<stdin>")):
        assert f"nmt-translate: error: {name}:2: invalid UTF-8" in err
        assert f"nmt-translate: error: {name}:4: source has" in err
        assert "nmt-translate: error: 2 of 5 input lines could not be translated" in err


def test_piped_stdin_is_read_whole_before_answering(package, monkeypatch, capsys):
    """One search over all lines (batched like --input), not one per line."""
    import nmtmodels.decoding.search

    directory, _, _ = package
    calls = []
    real = nmtmodels.decoding.search.translate_dataset
    monkeypatch.setattr(nmtmodels.decoding.search, "translate_dataset", lambda model, data, cfg, **kw: calls.append(len(data)) or
                        real(model, data, cfg, **kw))
    monkeypatch.setattr(sys, "stdin", io.StringIO("A dog.\nTwo men.\nA girl is running.\n"))
    assert cli.translate_main(["--checkpoint", str(directory)]) == 0
    assert calls == [3] and len(capsys.readouterr().out.splitlines()) == 3
    monkeypatch.setattr(sys, "stdin", io.StringIO("A dog.\nTwo men.\nA girl is running.\n"))
    calls.clear()
    assert cli.translate_main(["--checkpoint", str(directory), "--interactive"]) == 0
    assert calls == [1, 1, 1]


def test_large_input_is_translated_in_bounded_chunks_in_order(package, monkeypatch, capsys, tmp_path):
    """Memory does not grow with the input: no search sees more than CHUNK_LINES sentences, each
    chunk's lines are written before the next chunk is read, and the output equals one search
    over everything, line for line, through a file and a pipe alike."""
    import nmtmodels.decoding.search
    import nmtmodels.decoding.translator as translator_module
    from nmtmodels.cli import translate as translate_cli

    directory, _, _ = package
    sentences = head(MIRROR / "multi30k" / "val.en.gz", 11)
    (tmp_path / "in.en").write_text("".join(f"{line}\n" for line in sentences), encoding="utf-8")
    whole = run_cli(["--checkpoint", str(directory), "--input", str(tmp_path / "in.en"), "--log-interval", "0"])
    assert whole.returncode == 0
    calls = []
    real = nmtmodels.decoding.search.translate_dataset
    monkeypatch.setattr(nmtmodels.decoding.search, "translate_dataset", lambda model, data, cfg, **kw: calls.append(len(data)) or
                        real(model, data, cfg, **kw))
    monkeypatch.setattr(translator_module, "CHUNK_LINES", 4)
    read = []  # searches made when each chunk's last output line was written
    real_write = translate_cli._Writer.write
    monkeypatch.setattr(translate_cli._Writer, "write", lambda self, lines, chunk_done=False:
                        (chunk_done and read.append(len(calls))) or real_write(self, lines, chunk_done=chunk_done))
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(tmp_path / "in.en"), "--log-interval", "0"]) == 0
    captured = capsys.readouterr()
    assert calls == [4, 4, 3] and read == [1, 2, 3]
    assert captured.out.splitlines() == whole.stdout.splitlines() and len(whole.stdout.splitlines()) == 11
    assert "translated 11 sentences" in captured.err  # one closing line for the run, not one per chunk
    calls.clear()
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(f"{line}\n" for line in sentences)))
    assert cli.translate_main(["--checkpoint", str(directory), "--output", str(tmp_path / "out.de")]) == 0
    assert calls == [4, 4, 3] and (tmp_path / "out.de").read_text(encoding="utf-8").splitlines() == whole.stdout.splitlines()


@pytest.mark.heavy
def test_split_sentences_translates_each_sentence_and_joins_them(package, tmp_path):
    directory, _, _ = package
    sentences = [s.rstrip(".") + "." for s in head(MIRROR / "multi30k" / "val.en.gz", 6)]  # some end without a period
    (tmp_path / "one.en").write_text("".join(f"{s}\n" for s in sentences), encoding="utf-8")
    (tmp_path / "para.en").write_text(" ".join(sentences[:3]) + "\n" + " ".join(sentences[3:]) + "\n", encoding="utf-8")
    common = ["--checkpoint", str(directory), "--log-interval", "0"]
    alone = run_cli([*common, "--input", str(tmp_path / "one.en")]).stdout.splitlines()
    split = run_cli([*common, "--input", str(tmp_path / "para.en"), "--split-sentences"])
    assert split.returncode == 0, split.stderr
    assert split.stdout.splitlines() == [" ".join(alone[:3]), " ".join(alone[3:])]
    refused = run_cli([*common, "--input", str(tmp_path / "para.en"), "--split-sentences", "--nbest", "2", "--beam", "2"])
    assert refused.returncode == 2 and "--split-sentences goes with raw text and one translation per line" in refused.stderr


def test_outputs_far_shorter_than_their_source_are_named_in_one_warning(package, monkeypatch, capsys, tmp_path):
    from nmtmodels.decoding import translation_stats

    directory, _, _ = package
    sentences = head(MIRROR / "multi30k" / "val.en.gz", 8)
    lines = [sentences[0], " ".join(sentences[1:6]), sentences[6], " ".join(sentences[:4])]  # lines 2 and 4: 20+ tokens
    (tmp_path / "in.en").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    monkeypatch.setattr(translation_stats, "SHORT_RATIO", 100.0)  # every output counts as short here
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(tmp_path / "in.en"), "--log-interval", "0"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "came out less than" in line]
    assert len(warnings) == 1 and f"{tmp_path / 'in.en'}: 2 line(s) (line 2, 4) came out less than" in warnings[0]
    assert "--split-sentences translates them one by one" in warnings[0]


def test_a_checkpoint_without_package_needs_pretokenized(package, capsys):
    _, _, d = package
    assert cli.translate_main(["--checkpoint", str(d / "train" / "checkpoint_last.pt"), "--input", str(d / "train.en")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("nmt-translate: error: ") and "no preprocess.json beside the checkpoint" in line
    assert "--pretokenized" in line


@pytest.mark.parametrize("family, needs", [("lattice_transformer", "ends, starts"), ("bsfnmt", "compressed"),
                                           ("bbfnmt", "compressed")])
def test_lattice_and_esc_checkpoints_refuse_raw_text_in_one_line(tmp_path, capsys, family, needs):
    """Without a package: the one-line error of any bare checkpoint.  In a package that does not
    make the family's extra inputs (a plain character package): one line naming them."""
    vocab = Vocabulary(["a", "b", "c"])
    config = ModelConfig.from_dict({"family": family, "d_model": 16, "heads": 2, "ffn_dim": 32, "encoder_layers": 1,
                                    "decoder_layers": 1})
    model = build_model(config, len(vocab), len(vocab))
    state = {"model": model.state_dict(), "model_config": config.to_dict(), "decode_config": {},
             "vocab": {"src": vocab.tokens, "tgt": vocab.tokens, "src_fingerprint": vocab.fingerprint(),
                       "tgt_fingerprint": vocab.fingerprint()}}
    save_checkpoint(tmp_path / "bare" / "checkpoint.pt", state)
    (tmp_path / "in.txt").write_text("a b\n")
    assert cli.translate_main(["--checkpoint", str(tmp_path / "bare" / "checkpoint.pt"), "--input", str(tmp_path / "in.txt")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"nmt-translate: error: {tmp_path / 'bare' / 'checkpoint.pt'}: no preprocess.json beside the checkpoint")
    assert "--pretokenized" in line
    with pytest.raises(ConfigError, match="no preprocess.json beside the checkpoint"):
        Translator.from_checkpoint(tmp_path / "bare")
    settings = PackageSettings(source=LanguageSettings("en", "whitespace"), target=LanguageSettings("de", "whitespace"),
                               unicode_form="NFKC", subwords="char")
    directory = write_package(tmp_path / "model", tmp_path / "bare" / "checkpoint.pt", settings)
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(tmp_path / "in.txt")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == (f"nmt-translate: error: {directory / 'checkpoint.pt'}: model family '{family}' reads the extra inputs "
                    f"{needs} and the model package makes none of them from raw text (missing: {needs}); rebuild the package "
                    "with the workflow's rule model_package, or translate the workflow's encoded source with --pretokenized "
                    "--input FILE and the --extra/--extra-tokens files of its translate rule")
    with pytest.raises(ConfigError, match=rf"model family '{family}' reads the extra inputs {needs} .*\(missing: {needs}\)"):
        Translator.from_checkpoint(directory)


@pytest.fixture(scope="module")
def second_model(package):
    """Another model on the same data and vocabularies (another seed): an ensemble member."""
    _, _, d = package
    threads = torch.get_num_threads()
    try:
        assert cli.train_main(["--config", str(d / "exp.yaml"), "--train-src", str(d / "train.en"), "--train-tgt", str(d / "train.de"),
                               "--src-vocab", str(d / "dict.en"), "--tgt-vocab", str(d / "dict.de"), "--out-dir", str(d / "train2"),
                               "--set", "train.seed=7", "--device", "cpu"]) == 0
    finally:
        torch.set_num_threads(threads)
    return d / "train2" / "checkpoint_last.pt"


@torch.no_grad()
def greedy_by_hand(models, encoded: str, src_vocab, a: float, b: int) -> tuple[list[int], float]:
    """Greedy search over the mean of the models' log-probabilities, renormalised, each step
    recomputed from the whole prefix without a cache (nmtmodels.decoding.search.greedy_search's rules:
    no PAD/BOS, no EOS at step 1, EOS forced after floor(a * |x| + b) tokens)."""
    batch = ParallelDataset.from_lines([encoded], src_vocab).collate(torch.tensor([0]))
    source_length = len(encoded.split())
    limit = min(math.floor(a * source_length + b), min(m.max_positions()[1] for m in models) - 1)
    encoded_out = [model.encode(batch) for model in models]
    prefix, score = [BOS_ID], 0.0
    for step in itertools.count(1):
        mean = torch.stack([torch.log_softmax(model.decode(torch.tensor([prefix]), out)[0][0, -1].float(), -1)
                            for model, out in zip(models, encoded_out)]).mean(0)
        lprobs = torch.log_softmax(mean, -1)
        lprobs[[PAD_ID, BOS_ID]] = -math.inf
        if step == 1:
            lprobs[EOS_ID] = -math.inf
        choice = EOS_ID if step > limit else int(lprobs.argmax())
        score += float(lprobs[choice])
        if choice == EOS_ID:
            return prefix[1:], score
        prefix.append(choice)


def test_an_ensemble_decodes_the_mean_of_its_members_log_probabilities(package, second_model):
    directory, bpe, _ = package
    translator = Translator.from_checkpoint([directory / "checkpoint.pt", second_model])
    members = [load_model_from_checkpoint(str(path))[0] for path in (directory / "checkpoint.pt", second_model)]
    sentences = head(MIRROR / "multi30k" / "val.en.gz", 6)
    results = translator.translate(sentences, beam=1, length_penalty=0.0, max_len_a=0.5, max_len_b=4)  # greedy
    for sentence, result in zip(sentences, results):
        tokens, score = greedy_by_hand(members, by_hand(sentence, bpe), translator.src_vocab, 0.5, 4)
        assert result.hypotheses[0].tokens == translator.tgt_vocab.decode(tokens + [EOS_ID], keep_unk=True)
        assert result.score == pytest.approx(score, abs=1e-4)


def test_an_ensemble_of_one_model_twice_equals_the_model_in_beam_search(package):
    directory, _, _ = package
    sentences = head(MIRROR / "multi30k" / "val.en.gz", 8)
    single = Translator.from_checkpoint(directory).translate(sentences, beam=3, nbest=3)
    double = Translator.from_checkpoint([directory, directory]).translate(sentences, beam=3, nbest=3)
    for one, two in zip(single, double):
        assert [h.text for h in one.hypotheses] == [h.text for h in two.hypotheses]
        assert [h.score for h in one.hypotheses] == pytest.approx([h.score for h in two.hypotheses], abs=1e-4)


@pytest.mark.heavy
def test_cli_takes_several_checkpoints_and_refuses_other_vocabularies(package, second_model, tmp_path, capsys):
    directory, _, _ = package
    (tmp_path / "in.en").write_text("A dog runs.\nTwo men.\n")
    out = run_cli(["--checkpoint", str(directory), str(second_model), "--input", str(tmp_path / "in.en"), "--beam", "2"])
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 2
    vocab = Vocabulary(["a", "b"])
    config = ModelConfig.from_dict({"family": "transformer", "d_model": 16, "heads": 2, "ffn_dim": 32, "encoder_layers": 1,
                                    "decoder_layers": 1})
    model = build_model(config, len(vocab), len(vocab))
    save_checkpoint(tmp_path / "other.pt", {"model": model.state_dict(), "model_config": config.to_dict(), "decode_config": {},
                                            "vocab": {"src": vocab.tokens, "tgt": vocab.tokens, "src_fingerprint": vocab.fingerprint(),
                                                      "tgt_fingerprint": vocab.fingerprint()}})
    assert cli.translate_main(["--checkpoint", str(directory), str(tmp_path / "other.pt"), "--input", str(tmp_path / "in.en")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == (f"nmt-translate: error: {tmp_path / 'other.pt'}: its src vocabulary (model family 'transformer') differs "
                    f"from that of {directory / 'checkpoint.pt'} (model family 'transformer'); an ensemble's members must "
                    "share both vocabularies")


def test_devices_resolve_or_fail_in_one_line(package):
    """``device="auto"`` (the CLI's default) works in the API too; a device this torch cannot
    use is one line naming it, before any file is read."""
    import torch

    from nmtmodels.config import ConfigError

    directory, _, _ = package
    translator = Translator.from_checkpoint(directory, device="auto")
    assert translator.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ConfigError, match=r"^device 'gpu0': not a device name \(auto, cpu, cuda or cuda:N\)$"):
        Translator.from_checkpoint(directory, device="gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match=r"^device 'cuda': (this torch build .* has no CUDA support|no CUDA device is visible)"):
            Translator.from_checkpoint(directory / "no-such-dir", device="cuda")


def test_an_empty_line_gets_an_empty_translation(package, tmp_path):
    """As CTranslate2: an empty (or blank) input line is not decoded and gives an empty line,
    and the line count is kept, in the API and in nmt-translate."""
    from nmtmodels import cli

    directory, _, _ = package
    translator = Translator.from_checkpoint(directory)
    results = translator.translate(["A dog.", "", "   ", "Two men."])
    assert [r.text for r in results][1:3] == ["", ""]
    assert results[0].text and results[3].text
    assert results[0].text == translator.translate(["A dog."])[0].text
    source = tmp_path / "in.txt"
    source.write_text("A dog.\n\nTwo men.\n", encoding="utf-8")
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(source), "--output", str(tmp_path / "out.txt")]) == 0
    lines = (tmp_path / "out.txt").read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == "" and lines[0] and lines[2]


def test_bf16_decoding_gives_the_fp32_translation_of_most_sentences(package, monkeypatch):
    """``amp="bf16"`` on a CPU with native bf16 (faked where it only emulates bf16: the same
    numbers) runs the model under bf16 autocast.  Its 8-bit mantissa can flip a close choice
    of the search, so most sentences, not all, must come out as in fp32."""
    from nmtmodels import precision

    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)
    directory, _, _ = package
    translator = Translator.from_checkpoint(directory)
    sentences = head(MIRROR / "multi30k" / "val.en.gz", 12)
    logits: list[torch.dtype] = []
    translator.model.output_layer.register_forward_hook(lambda module, args, out: logits.append(out.dtype))
    fp32 = [r.text for r in translator.translate(sentences, beam=2)]
    assert set(logits) == {torch.float32}
    logits.clear()
    bf16 = translator.translate(sentences, beam=2, amp="bf16")
    assert set(logits) == {torch.bfloat16}
    assert len(bf16) == len(fp32) == 12 and all(r.text for r in bf16)
    assert sum(r.text == text for r, text in zip(bf16, fp32)) >= 8, [r.text for r in bf16]


def test_bf16_decoding_on_a_cpu_without_it_is_fp32_with_one_warning(package, monkeypatch, capsys, tmp_path):
    from nmtmodels import precision

    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: False)
    monkeypatch.setattr(precision, "_REPORTED", set())
    directory, _, _ = package
    source = tmp_path / "in.en"
    source.write_text("".join(f"{line}\n" for line in head(MIRROR / "multi30k" / "val.en.gz", 6)), encoding="utf-8")
    common = ["--checkpoint", str(directory), "--input", str(source), "--log-interval", "0"]
    assert cli.translate_main(common) == 0
    fp32 = capsys.readouterr().out
    assert cli.translate_main([*common, "--amp", "bf16"]) == 0
    captured = capsys.readouterr()
    assert captured.out == fp32 and len(fp32.splitlines()) == 6
    assert [line for line in captured.err.splitlines() if "amp bf16" in line] == [f"nmt-translate: warning: {precision.CPU_FALLBACK}"]
    monkeypatch.setattr(precision, "_REPORTED", set())
    translator = Translator.from_checkpoint(directory)
    with pytest.warns(RuntimeWarning, match="no native bf16") as caught:
        results = [translator.translate(["A dog.", SENTENCE], amp="bf16") for _ in range(2)]
    assert len(caught) == 1
    expected = translator.translate(["A dog.", SENTENCE])
    for result in results:
        assert [(r.text, r.score) for r in result] == [(r.text, r.score) for r in expected]


def test_threads_are_asked_for_or_bounded(package, monkeypatch):
    """``threads`` sets torch's intra-op threads (as CTranslate2's intra_threads); the CLI's
    default leaves an OMP_NUM_THREADS setting alone (the workflow's jobs) and otherwise takes
    half the usable cores (at most DEFAULT_THREADS), not every core of a shared machine."""
    import torch

    from nmtmodels import devices

    directory, _, _ = package
    before = torch.get_num_threads()
    try:
        Translator.from_checkpoint(directory, threads=1)
        assert torch.get_num_threads() == 1
        for cores, expected in ((64, devices.DEFAULT_THREADS), (6, 3), (2, 1), (1, 1)):  # half the cores, 1 to 4
            monkeypatch.setattr(devices, "usable_cores", lambda cores=cores: cores)
            assert devices.default_threads({}) == expected
        assert devices.default_threads({"OMP_NUM_THREADS": "3"}) is None
        with pytest.raises(ConfigError, match="threads: must be >= 1"):
            Translator.from_checkpoint(directory, threads=0)
    finally:
        torch.set_num_threads(before)


def stays(calls: Sequence[str]) -> list[str]:
    """The files a path stays in, in order: consecutive calls in one file are one stay, and a
    loop (a run of stays repeated back to back, as the beam search's steps) counts once."""
    seq = [f for i, f in enumerate(calls) if i == 0 or calls[i - 1] != f]
    changed = True
    while changed:
        changed = False
        for size in range(1, len(seq) // 2 + 1):
            out, i = [], 0
            while i < len(seq):
                j = i + size
                while j + size <= len(seq) and seq[j:j + size] == seq[i:i + size]:
                    j += size
                if j > i + size:  # seq[i:i+size] repeated back to back: keep it once
                    out += seq[i:i + size]
                    i, changed = j, True
                else:
                    out.append(seq[i])
                    i += 1
            seq = [f for k, f in enumerate(out) if k == 0 or out[k - 1] != f]
    return seq


def returns(path: Sequence[str]) -> int:
    """How many stays of ``path`` are in a file the path was in before."""
    return sum(f in path[:i] for i, f in enumerate(path))


def test_stays_and_returns_by_hand():
    calls = ["t", "t", "f", "t", "s", "d", "s", "d", "s", "d", "s", "c", "t", "f"]
    assert stays(calls) == ["t", "f", "t", "s", "d", "s", "c", "t", "f"]  # the s>d loop once
    assert returns(stays(calls)) == 4  # t, s, t, f again
    assert stays(["a", "b", "a", "b", "c"]) == ["a", "b", "c"] and returns(["a", "b", "c"]) == 0


def test_a_raw_sentence_goes_one_way_through_at_most_twelve_files(package, monkeypatch, capsys, tmp_path):
    """nmt-translate on raw text: while it runs, no library module imports the CLI, the library
    calls back into the CLI only through the progress callback it was given, and the code that a
    sentence passes from the library's stream to its output line (the model's own layers aside;
    argument parsing, loading, the output file and the run's settings before it) lies in at most
    12 files of nmtmodels, the CLI's included, with at most 14 returns to a file already visited
    (:func:`stays`, :func:`returns`).  Measured with this tracer: 15 returns of 25 stays in 10
    files at 9b82f30, before the stream of issue 56 (the CLI read the line, translator.py had a
    decoder of its own); 22 of 35 in 13 files at 39a39d5, the stream's first version; 14 of 26
    in 12 files now (the one UTF-8 decoder, files.py, is on the path: the extra file)."""
    import builtins

    import nmtmodels

    directory, _, _ = package
    (tmp_path / "in.en").write_text(SENTENCE + "\n", encoding="utf-8")
    root = Path(nmtmodels.__file__).parent
    model_code = (root / "models", root / "modules")
    files: list[str] = []
    back_edges: list[str] = []
    imports: list[str] = []

    def room(filename: str) -> str | None:
        path = Path(filename)
        if root not in path.parents or any(part in path.parents for part in (*model_code, root / "tests")):
            return None
        return path.relative_to(root).as_posix()

    def tracer(frame, event, arg):
        if event == "call" and (here := room(frame.f_code.co_filename)) is not None:
            files.append(f"{here}:write" if frame.f_code.co_name == "write" else here)
            caller = room(frame.f_back.f_code.co_filename) if frame.f_back else None
            if here.startswith("cli/") and caller and not caller.startswith("cli/") and frame.f_code.co_name != "update":
                back_edges.append(f"{caller} -> {here}:{frame.f_code.co_name}")
        return None

    real_import, real_load = builtins.__import__, Translator.from_checkpoint.__func__

    def recording_import(name, globals=None, locals=None, fromlist=(), level=0):
        importer = (globals or {}).get("__name__", "")
        if name.startswith("nmtmodels.cli") and importer.startswith("nmtmodels") and not importer.startswith("nmtmodels.cli"):
            imports.append(f"{importer} imports {name}")
        return real_import(name, globals, locals, fromlist, level)

    def load_untraced(cls, *args, **kwargs):  # loading the model is not the sentence's path
        sys.settrace(None)
        try:
            return real_load(cls, *args, **kwargs)
        finally:
            sys.settrace(tracer)

    real_lines = Translator.stream

    def lines_from_here(self, *args, **kwargs):  # the sentence's path: from the library's loop to the output line
        stream = real_lines(self, *args, **kwargs)
        if not started:
            files.clear()  # argument parsing, loading and the run's search settings (checked as the stream starts) came before
            started.append(True)
        return stream

    started: list[bool] = []

    monkeypatch.setattr(builtins, "__import__", recording_import)
    monkeypatch.setattr(Translator, "from_checkpoint", classmethod(load_untraced))
    monkeypatch.setattr(Translator, "stream", lines_from_here)
    sys.settrace(tracer)
    try:
        rc = cli.translate_main(["--checkpoint", str(directory), "--input", str(tmp_path / "in.en"), "--log-interval", "0"])
    finally:
        sys.settrace(None)
    assert rc == 0 and capsys.readouterr().out.strip()
    assert not imports and not back_edges, (imports, back_edges)
    assert "decoding/translator.py" in files and "text/postprocess.py" in files and "decoding/search.py" in files
    end = next(i for i, f in enumerate(files) if f.endswith(":write")) + 1  # the output line written
    path = stays([f.removesuffix(":write") for f in files[:end]])
    assert len(set(path)) <= 12 and returns(path) <= 14, " > ".join(path)


def test_translate_lines_keeps_each_bad_line_error_and_translates_the_others_as_translate_does(package, tmp_path):
    """The library's loop: bytes or text in, one result per line; invalid UTF-8 and an over-long
    line each cost their own line only, and the good lines equal ``translate``'s translations.
    A vocabulary file that is not the checkpoint's is refused by ``from_checkpoint``."""
    directory, _, d = package
    translator = Translator.from_checkpoint(directory, src_vocab=d / "dict.en", tgt_vocab=d / "dict.de")
    good = head(MIRROR / "multi30k" / "val.en.gz", 2)
    lines = [good[0].encode() + b"\r\n", b"a \xff b\n", "x " * 200, good[1]]
    results = translator.translate_lines(lines, name="in.en", first_line=7)
    assert [line.number for line in results] == [7, 8, 9, 10]
    assert str(results[1].error) == "in.en:8: invalid UTF-8 (invalid start byte at byte 2)"
    assert "in.en:9: source has 201 tokens" in str(results[2].error) and not results[2].translations
    expected = translator.translate(good)
    assert [results[0].text, results[3].text] == [t.text for t in expected] and results[0].translations[0].source == good[0]
    with pytest.raises(DataError, match="in.en:8: invalid UTF-8"):
        translator.translate_lines(lines, name="in.en", first_line=7, errors="raise")
    with pytest.raises(ConfigError, match=r"^tgt vocabulary \(.*dict\.en\) does not match the checkpoint's"):
        Translator.from_checkpoint(directory, tgt_vocab=d / "dict.en")
