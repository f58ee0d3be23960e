"""CTranslate2 export (nmtmodels/decoding/export.py, nmt-export): tiny Transformers trained for a few
seconds on a copy task, exported, then decoded greedily by ctranslate2.Translator and by our
greedy search, which must write the same tokens; the per-sentence length limit that export.json
carries and translate_with_limits applies; the refusals of other families."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from nmtmodels import cli
from nmtmodels.checkpoint import load_checkpoint, save_checkpoint
from nmtmodels.config import ConfigError
from nmtmodels.data import ParallelDataset
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.scorer import LinearLengthLimit
from nmtmodels.decoding.search import translate_dataset
from nmtmodels.model_package.reader import read_package
from nmtmodels.model_package.settings import PackageSettings
from nmtmodels.model_package.writer import write_package
from nmtmodels.tests.copy_task_fixtures import LETTERS, copy_task, tiny_model, write_lines
from nmtmodels.text.preprocessing import LanguageSettings
from nmtmodels.vocab import Vocabulary

ctranslate2 = pytest.importorskip("ctranslate2")

from nmtmodels.choices import QUANTIZATIONS  # noqa: E402
from nmtmodels.decoding.export import (  # noqa: E402
    SUPPRESSED,
    ExportError,
    TargetLengthLimit,
    build_spec,
    decode_options,
    export_ctranslate2,
    translate_with_limits,
)

TARGET_LETTERS = [letter.upper() for letter in LETTERS]
# Our greedy search's settings; the decoded set holds sentences of 3-12 tokens, so the limits
# floor(0.8 |x| + 2) differ between sentences and some sentences end at the limit.
DECODE = DecodeConfig(beam=1, length_penalty=0.0, max_len_a=0.8, max_len_b=2)
# (id, model settings, shared vocabulary): every ModelConfig field the mapping reads changes
# at least once between the three.
MODELS = [
    ("post-norm, separate vocabularies, tied output, sinusoidal, relu",
     dict(normalize_before=False, tie_output=True, positional="sinusoidal", activation="relu"), False),
    ("pre-norm, shared embeddings, learned positions, gelu, 2+1 layers",
     dict(normalize_before=True, share_embeddings=True, positional="learned", activation="gelu", encoder_layers=2,
          max_source_positions=40, max_target_positions=30), True),
    ("pre-norm, separate vocabularies, untied output, 1+2 layers",
     dict(normalize_before=True, tie_output=False, decoder_layers=2, max_target_positions=64), False),
]


pytestmark = pytest.mark.usefixtures("one_thread")


def reversed_upper(lines: list[str]) -> list[str]:
    return [" ".join(reversed(line.upper().split())) for line in lines]


def train_checkpoint(path: Path, overrides: dict, shared: bool, updates: int = 120, seed: int = 0) -> Path:
    """A checkpoint of a tiny Transformer trained ``updates`` Adam steps on reversing and
    upper-casing letter sequences (copying into the same letters with ``shared``): enough for
    outputs of varying length that end with </s>."""
    src, tgt = copy_task(400, seed=seed + 11, max_len=10)
    tgt = src if shared else reversed_upper(src)
    src_vocab = Vocabulary(LETTERS)
    tgt_vocab = src_vocab if shared else Vocabulary([*reversed(TARGET_LETTERS), "X", "Y"])  # another size and order
    model, cfg = tiny_model(len(src_vocab), len(tgt_vocab), seed=seed, dropout=0.0, **overrides)
    data = ParallelDataset.from_files(write_lines(path.with_suffix(".src"), src), write_lines(path.with_suffix(".tgt"), tgt),
                                      src_vocab, tgt_vocab)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(updates):
        batch = data.collate(torch.randperm(len(data), generator=generator)[:32])
        logits = model(batch)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    save_checkpoint(path, {
        "model_config": cfg.to_dict(), "model": model.state_dict(),
        "vocab": {"src": src_vocab.tokens, "tgt": tgt_vocab.tokens,
                  "src_fingerprint": src_vocab.fingerprint(), "tgt_fingerprint": tgt_vocab.fingerprint()},
        "decode_config": {"beam": 4, "max_len_a": DECODE.max_len_a, "max_len_b": DECODE.max_len_b},
    })
    return path


def test_sentences() -> list[str]:
    src, _ = copy_task(40, seed=99, min_len=3, max_len=12)
    return src


test_sentences.__test__ = False  # a helper, not a test


def ours(checkpoint: Path, sentences: list[str]) -> list[list[str]]:
    """Our greedy search's target tokens (DECODE), through nmtmodels.decoding.search as nmt-translate runs it."""
    from nmtmodels.checkpoint import load_model_from_checkpoint

    model, src_vocab, tgt_vocab, _ = load_model_from_checkpoint(str(checkpoint))
    dataset = ParallelDataset.from_lines(sentences, src_vocab, max_positions=model.max_positions())
    return [tgt_vocab.decode(row[0].tokens, keep_unk=True) for row in translate_dataset(model, dataset, DECODE, max_tokens=256)]


def ctranslate2_greedy(model_dir: Path, sentences: list[str]) -> list[list[str]]:
    """ctranslate2.Translator with beam 1 and our per-sentence length limit, through
    translate_with_limits and the export's export.json."""
    translator = ctranslate2.Translator(str(model_dir), device="cpu", intra_threads=1)
    results = translate_with_limits(translator, [line.split() for line in sentences], model_dir, beam_size=1)
    return [result.hypotheses[0] for result in results]


def by_hand(a: float, b: float, source_tokens: int, max_target_tokens: int = 1023) -> int:
    """floor(a * |x| + b) target tokens, capped by the target position table (|x| without </s>)."""
    return min(math.floor(a * source_tokens + b + 1e-9), max_target_tokens)


@pytest.mark.parametrize(("overrides", "shared"), [m[1:] for m in MODELS], ids=[m[0] for m in MODELS])
def test_ctranslate2_greedy_writes_our_greedy_tokens(tmp_path, overrides, shared):
    checkpoint = train_checkpoint(tmp_path / "checkpoint.pt", overrides, shared)
    out = export_ctranslate2(checkpoint, tmp_path / "ct2")
    sentences = test_sentences()
    expected = ours(checkpoint, sentences)
    assert ctranslate2_greedy(out, sentences) == expected
    # a model that has learnt something: not one output repeated, and some end before the limit
    assert len({" ".join(tokens) for tokens in expected}) > 10
    limits = LinearLengthLimit(DECODE.max_len_a, DECODE.max_len_b)(torch.tensor([len(s.split()) for s in sentences]))
    assert any(len(tokens) < limit for tokens, limit in zip(expected, limits.tolist()))
    config = json.loads((out / "config.json").read_text())
    assert (config["decoder_start_token"], config["add_source_eos"], config["layer_norm_epsilon"]) == ("<s>", True, 1e-5)
    vocabularies = sorted(p.name for p in out.glob("*vocabulary*"))
    assert vocabularies == (["shared_vocabulary.json"] if shared else ["source_vocabulary.json", "target_vocabulary.json"])
    target = json.loads((out / vocabularies[-1]).read_text())
    assert target[:4] == ["<pad>", "<s>", "</s>", "<unk>"]


def test_export_json_carries_the_checkpoints_length_limit(tmp_path):
    """length_limit holds the checkpoint's max_len_a / max_len_b (0.8, 2; DecodeConfig's defaults are
    1.2, 10), the unset max_len_ratio and the default min_len, and the token caps of this model's
    position tables (40 and 30 positions, </s> and <s> included); translate_options no longer
    recommend one max_decoding_length, and max_input_length counts the </s> CTranslate2 appends."""
    overrides = MODELS[1][1]
    out = export_ctranslate2(train_checkpoint(tmp_path / "checkpoint.pt", overrides, shared=True, updates=1), tmp_path / "ct2")
    info = json.loads((out / "export.json").read_text())
    limit = info["length_limit"]
    assert {key: limit[key] for key in limit if key != "formula"} == {
        "max_len_a": 0.8, "max_len_b": 2, "max_len_ratio": None, "min_len": 1, "max_source_tokens": 39,
        "max_target_tokens": 29}
    assert "floor(max_len_a * |x| + max_len_b)" in limit["formula"] and "without </s>" in limit["formula"]
    assert info["format"] == 2 and "max_decoding_length" not in info["translate_options"]
    assert info["translate_options"] == {"suppress_sequences": SUPPRESSED, "max_input_length": 40}
    # the limits it gives, against floor(0.8 |x| + 2) by hand; 33 (from 39 tokens, the longest source) caps at 29
    lengths = [0, 1, 3, 5, 10, 12, 33, 34, 39, 45]
    assert TargetLengthLimit.from_export(out)(lengths) == [2, 2, 4, 6, 10, 11, 28, 29, 29, 29]
    assert TargetLengthLimit.from_export(info)(lengths) == [by_hand(0.8, 2, min(n, 39), 29) for n in lengths]


def test_a_max_len_ratio_and_min_len_of_the_checkpoint_are_carried(tmp_path):
    checkpoint = train_checkpoint(tmp_path / "checkpoint.pt", MODELS[0][1], shared=False, updates=1)
    state = load_checkpoint(checkpoint)
    state["decode_config"] = {"max_len_a": 1.5, "max_len_b": 3, "max_len_ratio": 1.2, "min_len": 2}
    save_checkpoint(checkpoint, state)
    limit = TargetLengthLimit.from_export(export_ctranslate2(checkpoint, tmp_path / "ct2"))
    assert (limit.max_len_a, limit.max_len_b, limit.max_len_ratio, limit.min_len) == (1.5, 3, 1.2, 2)
    # min(floor(1.5 |x| + 3), floor(1.2 |x|)): the ratio is the smaller from |x| = 1 on
    assert limit([0, 1, 4, 10]) == [0, 1, 4, 12]
    # a source longer than the position table is cut to max_source_tokens first
    cut = TargetLengthLimit(max_len_a=1.0, max_len_b=0, max_len_ratio=None, min_len=1, max_source_tokens=10,
                            max_target_tokens=100)
    assert cut([9, 10, 11, 50]) == [9, 10, 10, 10]


def test_ctranslate2_beam_search_stays_within_our_per_sentence_limit(tmp_path):
    """Issue 33: beam search with one call-wide max_decoding_length writes outputs longer than
    floor(a |x| + b) for short sentences; translate_with_limits never does, and each sentence's
    result is the one CTranslate2 gives that sentence alone with its own limit (order kept)."""
    checkpoint = train_checkpoint(tmp_path / "checkpoint.pt", MODELS[0][1], shared=False, updates=30)
    out = export_ctranslate2(checkpoint, tmp_path / "ct2")
    info = json.loads((out / "export.json").read_text())
    translator = ctranslate2.Translator(str(out), device="cpu", intra_threads=1)
    tokens = [line.split() for line in test_sentences()]
    limits = [by_hand(0.8, 2, len(t)) for t in tokens]  # the checkpoint's decode settings
    assert len(set(limits)) > 4

    unlimited = translator.translate_batch(tokens, beam_size=4, **info["translate_options"])
    assert any(len(result.hypotheses[0]) > limit for result, limit in zip(unlimited, limits))  # the runaway

    results = translate_with_limits(translator, tokens, out, beam_size=4, num_hypotheses=2, max_batch_size=64,
                                    batch_type="tokens")
    assert len(results) == len(tokens)
    assert all(len(hypothesis) <= limit for result, limit in zip(results, limits) for hypothesis in result.hypotheses)
    assert sum(len(result.hypotheses[0]) == limit for result, limit in zip(results, limits)) > 0
    for sentence, limit, result in zip(tokens, limits, results):
        alone = translator.translate_batch([sentence], beam_size=4, num_hypotheses=2, max_decoding_length=limit,
                                           suppress_sequences=SUPPRESSED)[0]
        assert result.hypotheses == alone.hypotheses


def test_translate_with_limits_searches_with_the_runs_decode_settings_by_default(tmp_path):
    # issue 44: without them CTranslate2 searched with its own length penalty (1.0) and beam (2)
    checkpoint = train_checkpoint(tmp_path / "checkpoint.pt", MODELS[0][1], shared=False, updates=30)
    state = load_checkpoint(checkpoint)
    state["decode_config"] = {**state["decode_config"], "beam": 3, "length_penalty": 0.6, "nbest": 2}
    save_checkpoint(checkpoint, state)
    out = export_ctranslate2(checkpoint, tmp_path / "ct2")
    assert decode_options(out) == {"beam_size": 3, "length_penalty": 0.6, "coverage_penalty": 0.0, "num_hypotheses": 2}
    translator = ctranslate2.Translator(str(out), device="cpu", intra_threads=1)
    tokens = [line.split() for line in test_sentences()]
    limit = TargetLengthLimit.from_export(out)
    results = translate_with_limits(translator, tokens, out)
    for sentence, result, cap in zip(tokens, results, limit([len(t) for t in tokens])):
        alone = translator.translate_batch([sentence], beam_size=3, length_penalty=0.6, num_hypotheses=2,
                                           max_decoding_length=cap, suppress_sequences=SUPPRESSED)[0]
        assert result.hypotheses == alone.hypotheses and len(result.hypotheses) == 2
    greedy = translate_with_limits(translator, tokens, out, beam_size=1, num_hypotheses=1)  # given options win
    assert all(len(result.hypotheses) == 1 for result in greedy)


def test_translate_with_limits_leaves_a_zero_limit_empty_and_refuses_the_options_it_sets(tmp_path):
    out = export_ctranslate2(train_checkpoint(tmp_path / "checkpoint.pt", MODELS[0][1], shared=False, updates=1),
                             tmp_path / "ct2")
    translator = ctranslate2.Translator(str(out), device="cpu", intra_threads=1)
    # floor(0.5 |x|) is 0 for one token and 1 for two: CTranslate2 is not asked about the first
    limit = TargetLengthLimit(max_len_a=0.5, max_len_b=0, max_len_ratio=None, min_len=1, max_source_tokens=1023,
                              max_target_tokens=1023)
    results = translate_with_limits(translator, [["a"], ["a", "b"], ["c"]], limit, beam_size=2)
    assert [len(r.hypotheses[0]) for r in results] == [0, 1, 0]
    with pytest.raises(TypeError, match="sets max_decoding_length per group"):
        translate_with_limits(translator, [["a"]], out, max_decoding_length=5)
    legacy = tmp_path / "legacy.json"
    legacy.write_text(json.dumps({"format": 1, "translate_options": {"max_decoding_length": 1023}}))
    with pytest.raises(ExportError, match="no length_limit"):
        TargetLengthLimit.from_export(legacy)


def test_package_export_carries_the_preprocessing_and_translates_raw_text(tmp_path):
    """A package's preprocess.json and BPE files come along; read_package on the export gives
    the raw-text encoder, and CTranslate2 on its output equals Translator (beam 1)."""
    from nmtmodels.decoding.translator import Translator

    checkpoint = train_checkpoint(tmp_path / "checkpoint.pt", MODELS[0][1], shared=False, updates=100)
    write_lines(tmp_path / "codes", ["#version: 0.2", "x y"])  # a merge no input has: every token stays whole
    write_lines(tmp_path / "vocab", [f"{letter} 5" for letter in LETTERS])
    settings = PackageSettings(source=LanguageSettings("en", "whitespace"), target=LanguageSettings("en", "whitespace"),
                               unicode_form="NFKC", subwords="bpe10", vocabulary_threshold=1)
    package = write_package(tmp_path / "package", checkpoint, settings, tmp_path / "codes", tmp_path / "vocab")
    assert cli.main(["export", "--checkpoint", str(package), "--output-dir", str(tmp_path / "ct2")]) == 0
    out = tmp_path / "ct2"
    for name in ("bpe.codes", "bpe.vocab"):
        assert (out / name).read_bytes() == (package / name).read_bytes()
    # the package's settings, less the digest of its checkpoint, which the export does not hold
    packaged = json.loads((package / "preprocess.json").read_text())
    assert set(packaged.pop("model_sha256")) == {"checkpoint.pt"}
    assert json.loads((out / "preprocess.json").read_text()) == packaged
    assert not (out / "checkpoint.pt").exists()
    info = json.loads((out / "export.json").read_text())
    assert info["preprocessing"] == "preprocess.json" and info["translate_options"]["suppress_sequences"] == SUPPRESSED
    raw = ["a b  c d e", "j i h", "a a b b c c d"]
    encode = read_package(out).source_encoder()
    translator = ctranslate2.Translator(str(out), device="cpu", intra_threads=1)
    results = translator.translate_batch([encode(line).split() for line in raw], beam_size=1, max_decoding_length=6,
                                         suppress_sequences=SUPPRESSED)
    ours_ = Translator.from_checkpoint(package).translate(raw, beam=1, max_len_a=0.0, max_len_b=6)
    assert [r.hypotheses[0] for r in results] == [t.hypotheses[0].tokens for t in ours_]


def test_the_documented_ctranslate2_recipe_takes_nmt_translate_s_threads(tmp_path, monkeypatch):
    """docs/translate.md's CTranslate2 recipe, run on an export of a package: it translates, and
    its intra_threads are nmt-translate's default threads (nmtmodels.devices.intra_threads), not
    a number of its own."""
    from nmtmodels import devices

    docs = (Path(__file__).resolve().parents[2] / "docs" / "translate.md").read_text(encoding="utf-8")
    recipe = next(block for block in docs.split("```python\n")[1:] if "ctranslate2.Translator(" in block).split("```")[0]
    checkpoint = train_checkpoint(tmp_path / "checkpoint.pt", MODELS[0][1], shared=False, updates=10)
    write_lines(tmp_path / "codes", ["#version: 0.2", "x y"])
    write_lines(tmp_path / "vocab", [f"{letter} 5" for letter in LETTERS])
    settings = PackageSettings(source=LanguageSettings("en", "whitespace"), target=LanguageSettings("en", "whitespace"),
                               unicode_form="NFKC", subwords="bpe10", vocabulary_threshold=1)
    package = write_package(tmp_path / "package", checkpoint, settings, tmp_path / "codes", tmp_path / "vocab")
    export_ctranslate2(package, tmp_path / "ct2")
    made = []
    real = ctranslate2.Translator

    def translator(*args, **kwargs):
        made.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ctranslate2, "Translator", translator)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what the rule gives; one thread on the test machine
    printed = []
    exec(recipe.replace('"baseline-ct2"', repr(str(tmp_path / "ct2"))), {"print": printed.append})
    assert [kwargs["intra_threads"] for kwargs in made] == [devices.intra_threads()] == [1]
    assert len(printed) == 2  # one translation per source sentence


@pytest.mark.parametrize(("environ", "cores", "expected"), [
    ({}, 64, 4), ({}, 6, 3), ({}, 1, 1),  # nmt-translate's default: half the usable cores, 1 to 4
    ({"OMP_NUM_THREADS": "1"}, 64, 1), ({"OMP_NUM_THREADS": "6,2"}, 2, 6),  # the setting the jobs give
    ({"OMP_NUM_THREADS": "many"}, 6, 3),
])
def test_intra_threads_is_the_number_of_nmt_translate_s_default_threads(environ, cores, expected, monkeypatch):
    from nmtmodels import devices

    monkeypatch.setattr(devices, "usable_cores", lambda: cores)
    assert devices.intra_threads(environ) == expected
    assert devices.default_threads(environ) in (None, expected)  # None: torch reads OMP_NUM_THREADS itself
    assert (devices.default_threads(environ) is None) == bool(environ)


def test_int8_export_loads_and_translates(tmp_path):
    checkpoint = train_checkpoint(tmp_path / "checkpoint.pt", MODELS[0][1], shared=False, updates=20)
    assert cli.export_main(["--checkpoint", str(checkpoint), "--output-dir", str(tmp_path / "ct2"),
                            "--quantization", "int8"]) == 0
    assert json.loads((tmp_path / "ct2" / "export.json").read_text())["quantization"] == "int8"
    assert (tmp_path / "ct2" / "model.bin").stat().st_size < export_ctranslate2(
        checkpoint, tmp_path / "fp32").joinpath("model.bin").stat().st_size  # the position tables stay float32
    translator = ctranslate2.Translator(str(tmp_path / "ct2"), device="cpu", intra_threads=1)
    results = translator.translate_batch([["a", "b"]], beam_size=1, max_decoding_length=4)
    assert len(results[0].hypotheses[0]) <= 4


def test_the_quantizations_offered_are_ctranslate2s():
    from ctranslate2.specs.model_spec import ACCEPTED_MODEL_TYPES

    assert set(QUANTIZATIONS) == set(ACCEPTED_MODEL_TYPES)


@pytest.mark.parametrize(("family", "options", "why"), [
    ("reordering", {}, "reordering embeddings"),
    ("graph_transformer", {}, "attention groups"),
    ("char2char", {"preset": "tiny"}, "GRU encoder-decoder"),
    ("bbfnmt", {}, "compressed source"),
])
def test_other_families_are_refused_in_one_line(tmp_path, capsys, family, options, why):
    vocab = Vocabulary(LETTERS)
    model, cfg = tiny_model(len(vocab), len(vocab), family=family, options=options)
    checkpoint = tmp_path / "checkpoint.pt"
    save_checkpoint(checkpoint, {"model_config": cfg.to_dict(), "model": model.state_dict(),
                                 "vocab": {"src": vocab.tokens, "tgt": vocab.tokens, "src_fingerprint": vocab.fingerprint(),
                                           "tgt_fingerprint": vocab.fingerprint()}})
    with pytest.raises(ExportError, match=f"model family '{family}' cannot be exported to CTranslate2: .*{why}"):
        export_ctranslate2(checkpoint, tmp_path / "ct2")
    assert cli.export_main(["--checkpoint", str(checkpoint), "--output-dir", str(tmp_path / "ct2")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nmt-export: error: {checkpoint}: model family '{family}'") and err.count("\n") == 1
    assert not (tmp_path / "ct2").exists()
    if family == "reordering":  # a model object of another family is refused by the mapping too
        with pytest.raises(ExportError, match="not the baseline's"):
            build_spec(model, vocab.tokens, vocab.tokens)


@pytest.mark.parametrize(("declaration", "reason"), [
    ("", "only the Transformer baseline maps onto CTranslate2's TransformerSpec; FAMILY_NEEDS['mine']['export'] "
         "(declared by no module) does not list 'ctranslate2'"),
    ("FAMILY_NEEDS = {'mine': {'inputs': {'compressed': 0}, 'not_exported': 'it fuses two sources'}}\n",
     "it fuses two sources; FAMILY_NEEDS['mine']['export'] (in {module}) does not list 'ctranslate2'"),
])
def test_a_family_that_declares_no_export_is_refused_naming_it_and_the_key(tmp_path, monkeypatch, capsys, declaration, reason):
    """An outside family is refused by what its module declares (nmtmodels/family_needs.py), in
    one line, before its class is needed (the module imports nothing here)."""
    module = tmp_path / "mine.py"
    module.write_text(declaration)
    monkeypatch.setenv("NMT_USER_MODULES", str(module))
    vocab = Vocabulary(LETTERS)
    model, cfg = tiny_model(len(vocab), len(vocab))
    checkpoint = tmp_path / "checkpoint.pt"
    save_checkpoint(checkpoint, {"model_config": {**cfg.to_dict(), "family": "mine"}, "model": model.state_dict(),
                                 "vocab": {"src": vocab.tokens, "tgt": vocab.tokens, "src_fingerprint": vocab.fingerprint(),
                                           "tgt_fingerprint": vocab.fingerprint()}})
    assert cli.export_main(["--checkpoint", str(checkpoint), "--output-dir", str(tmp_path / "ct2")]) == 2
    err = capsys.readouterr().err
    expected = reason.format(module=module.resolve())
    assert err == f"nmt-export: error: {checkpoint}: model family 'mine' cannot be exported to CTranslate2: {expected}\n"
    assert not (tmp_path / "ct2").exists()


def test_what_the_spec_cannot_express_is_refused(tmp_path):
    vocab = Vocabulary(LETTERS)
    model, _ = tiny_model(len(vocab), len(vocab))
    model.encoder.layers[0].self_attn_residual.norm.eps = 1e-6
    with pytest.raises(ExportError, match="eps 1e-06"):
        build_spec(model, vocab.tokens, vocab.tokens)
    model, _ = tiny_model(len(vocab), len(vocab))
    model.decoder.extra = torch.nn.Parameter(torch.zeros(3))
    with pytest.raises(ExportError, match="no place in CTranslate2's TransformerSpec: decoder.extra"):
        build_spec(model, vocab.tokens, vocab.tokens)


def test_an_existing_output_directory_is_replaced_only_with_force(tmp_path):
    checkpoint = train_checkpoint(tmp_path / "checkpoint.pt", MODELS[0][1], shared=False, updates=1)
    (tmp_path / "ct2").mkdir()
    (tmp_path / "ct2" / "keep").write_text("x")
    with pytest.raises(ConfigError, match="exists and is not empty; pass --force"):
        export_ctranslate2(checkpoint, tmp_path / "ct2")
    assert (tmp_path / "ct2" / "keep").exists()
    export_ctranslate2(checkpoint, tmp_path / "ct2", force=True)
    assert not (tmp_path / "ct2" / "keep").exists() and (tmp_path / "ct2" / "model.bin").is_file()
