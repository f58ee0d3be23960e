"""SentencePiece subwords in the workflow: the learn/apply script (workflow_scripts/data/spm.py),
the config checks of `corpora.C.sentencepiece` and `subwords: spmN`, and the DAG of a corpus
configured with SentencePiece (a dry run)."""
from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import sentencepiece
import yaml

from nmtmodels.vocab import Vocabulary
from workflow_scripts.dag import WorkflowConfigError, checks, corpus_data, packages, runs, sources
from workflow_scripts.dag.keys import check_keys
from workflow_scripts.data import spm

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
CORPUS = "multi30k_en_de"
# A corpus with SentencePiece beside its BPE, and a compared pair of systems on its pieces.
SPM_CONFIG = {
    "active_corpora": [CORPUS],
    "active_experiments": ["spm_base", "spm_system"],
    "corpora": {CORPUS: {"sentencepiece": {"vocab_sizes": [4000], "model_type": "bpe"}}},
    "experiments": {
        "spm_base": {"family": "transformer", "corpora": [CORPUS], "subwords": "spm4000",
                     "model": {"preset": "tiny", "share_embeddings": True}},
        "spm_system": {"family": "reordering", "corpora": [CORPUS], "subwords": "spm4000", "baseline": "spm_base",
                       "model": {"preset": "tiny", "share_embeddings": True, "options": {"side": "both"}}},
    },
}
EN = ["two dogs are playing in the snow .", "a man is riding a bike down the street .", "the dogs are running ."] * 5
DE = ["zwei hunde spielen im schnee .", "ein mann fährt mit dem fahrrad die straße hinunter .", "die hunde rennen ."] * 5


def merged(base: dict, extra: dict) -> dict:
    """``extra`` merged over ``base`` key by key, lists replaced (as Snakemake merges --configfile)."""
    out = copy.deepcopy(base)
    for key, value in extra.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def spm_config(**changes) -> dict:
    return merged(merged(CONFIG, SPM_CONFIG), changes)


# ----------------------------------------------------------------------------- learn and apply
def learn(tmp_path: Path, mode: str) -> dict[str, Path]:
    for lang, lines in (("en", EN), ("de", DE)):
        (tmp_path / f"train.{lang}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    out = {name: tmp_path / mode / name for name in ("spm.en.model", "spm.de.model", "vocab.en", "vocab.de")}
    spm.main(["learn", "--vocab-size", "40", "--model-type", "unigram", mode, "--src-in", str(tmp_path / "train.en"),
              "--tgt-in", str(tmp_path / "train.de"), "--src-model-out", str(out["spm.en.model"]), "--tgt-model-out",
              str(out["spm.de.model"]), "--src-vocab-out", str(out["vocab.en"]), "--tgt-vocab-out", str(out["vocab.de"])])
    return out


@pytest.mark.parametrize("mode", ["--joint", "--separate"])
def test_learn_writes_models_and_piece_counts_of_the_encoded_training_text(tmp_path, mode):
    out = learn(tmp_path, mode)
    models = [sentencepiece.SentencePieceProcessor(model_file=str(out[f"spm.{lang}.model"])) for lang in ("en", "de")]
    same = out["spm.en.model"].read_bytes() == out["spm.de.model"].read_bytes()
    assert same == (mode == "--joint")
    for lang, model in zip(("en", "de"), models):
        spm.apply(str(out[f"spm.{lang}.model"]), str(tmp_path / f"train.{lang}"), str(tmp_path / f"enc.{lang}"))
        encoded = (tmp_path / f"enc.{lang}").read_text(encoding="utf-8").splitlines()
        lines = EN if lang == "en" else DE
        assert encoded == [" ".join(model.encode(line, out_type=str)) for line in lines]
        counts: dict[str, int] = {}
        for line in encoded:
            for piece in line.split():
                counts[piece] = counts.get(piece, 0) + 1
        vocab_lines = out[f"vocab.{lang}"].read_text(encoding="utf-8").splitlines()
        assert {piece: int(count) for piece, count in map(str.split, vocab_lines)} == counts
        assert [int(line.split()[1]) for line in vocab_lines] == sorted(counts.values(), reverse=True)
        assert set(Vocabulary.from_file(out[f"vocab.{lang}"]).tokens) >= set(counts)  # nmt-train reads it as a BPE vocabulary


def test_a_failed_learn_writes_nothing_and_says_why_in_one_line(tmp_path, capsys):
    (tmp_path / "train.en").write_text("".join(line + "\n" for line in EN), encoding="utf-8")
    (tmp_path / "train.de").write_text("\n\n", encoding="utf-8")
    args = ["learn", "--vocab-size", "40", "--model-type", "bpe", "--separate", "--src-in", str(tmp_path / "train.en"),
            "--tgt-in", str(tmp_path / "train.de"), *(arg for name in ("src-model", "tgt-model", "src-vocab", "tgt-vocab")
                                                       for arg in (f"--{name}-out", str(tmp_path / "out" / name)))]
    with pytest.raises(SystemExit) as exit_:
        spm.main(args)
    assert exit_.value.code == 1
    assert capsys.readouterr().err.splitlines()[-1].endswith("train.de: no text to learn SentencePiece pieces from")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# ----------------------------------------------------------------------------- config checks
def test_the_spm_config_passes_the_schema_and_every_start_up_check():
    from jsonschema import Draft202012Validator

    config = spm_config()
    check_keys(config, ROOT / "schemas" / "config.schema.yaml")
    schema = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))
    assert not list(Draft202012Validator(schema).iter_errors(config))
    checks.check_subword_values(config)
    checks.check_config(config)
    checks.check_experiments(config)  # sizes prepared, joint pieces for shared embeddings, a fair pair


@pytest.mark.parametrize(("change", "message"), [
    ({"corpora": {CORPUS: {"sentencepiece": {"vocab_sizes": [4000], "model_type": "wordpiece"}}}},
     f"corpora.{CORPUS}.sentencepiece.model_type: expected unigram or bpe, got 'wordpiece'"),
    ({"corpora": {CORPUS: {"sentencepiece": {"vocab_sizes": [4000], "character_coverage": 0}}}},
     f"corpora.{CORPUS}.sentencepiece.character_coverage: expected a number in (0, 1], got 0"),
    ({"experiments": {"spm_base": {"subwords": "unigram4000"}}},
     "experiments.spm_base.subwords: expected bpeN (subword-nmt BPE, N in corpora.C.bpe.merges), spmN (SentencePiece, "
     "N in corpora.C.sentencepiece.vocab_sizes) or char, got 'unigram4000'"),
])
def test_a_bad_value_is_one_line_naming_the_key(change, message):
    with pytest.raises(WorkflowConfigError) as error:
        checks.check_subword_values(spm_config(**change))
    assert str(error.value) == message


@pytest.mark.parametrize(("change", "message"), [
    ({"corpora": {CORPUS: {"sentencepiece": {"vocab_sizes": [2000]}}}},
     f"experiments.spm_base.subwords: spm4000 is not among corpora.{CORPUS}.sentencepiece.vocab_sizes [2000]"),
    ({"experiments": {"spm_base": {"corpora": ["tatoeba_zh_en"]}}, "active_corpora": ["tatoeba_zh_en"]},
     "experiments.spm_base.subwords: spm4000 needs SentencePiece subwords of corpus 'tatoeba_zh_en', but "
     "corpora.tatoeba_zh_en has no sentencepiece section (e.g. sentencepiece: {vocab_sizes: [4000], model_type: unigram})"),
    ({"corpora": {CORPUS: {"sentencepiece": {"vocab_sizes": [4000], "joint": False}}}},
     f"experiments.spm_base.model.share_embeddings: needs one joint vocabulary, but corpora.{CORPUS}.sentencepiece.joint "
     "is false (separate SentencePiece model per language)"),
    ({"experiments": {"spm_system": {"subwords": "bpe8000"}}},
     "experiments.spm_system: differs from its baseline experiments.spm_base in subwords ('bpe8000' vs 'spm4000'); a compared "
     "system may differ only by its method (model.family, model.options, its inputs), or name the key with a reason in "
     "experiments.spm_system.differs_from_baseline"),
])
def test_an_spm_run_must_be_prepared_joint_when_shared_and_compared_on_the_same_subwords(change, message):
    with pytest.raises(WorkflowConfigError) as error:
        checks.check_experiments(spm_config(**change))
    assert str(error.value) == message


@pytest.mark.heavy
def test_snakemake_stops_on_a_bad_model_type_with_one_line(tmp_path):
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(
        {"corpora": {CORPUS: {"sentencepiece": {"vocab_sizes": [4000], "model_type": "char"}}}}), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path), "-n",
                             "--cores", "1", "--configfile", str(tmp_path / "bad.yaml")],
                            capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"corpora.{CORPUS}.sentencepiece.model_type: expected unigram or bpe, got 'char'" in output
    assert len(output.splitlines()) < 30, output


# ----------------------------------------------------------------------------- the DAG
def test_runs_read_the_spm_files_with_the_roles_of_the_bpe_ones():
    config = spm_config()
    spm_dir = f"results/data/{CORPUS}/spm4000"
    inputs = sources.model_inputs(config, "spm_system", CORPUS)
    assert inputs["train_src"] == f"{spm_dir}/train.en-de.en" and inputs["valid_tgt"] == f"{spm_dir}/dev.en-de.de"
    assert inputs["src_vocab"] == inputs["tgt_vocab"] == f"{spm_dir}/vocab.en-de.joint"
    assert f"{spm_dir}/test_2016_flickr.en-de.de" in corpus_data.data_targets(config)
    assert runs.target_format(config, "spm_system") == "spm" and runs.postprocess_flag(config, "spm_system") == "--spm"
    assert runs.target_format(CONFIG, "baseline") == "bpe" and runs.postprocess_flag(CONFIG, "char2char") == "--char-level"
    assert packages.package_inputs(config, "spm_system", CORPUS)["spm_model"] == f"{spm_dir}/spm.en-de.en.model"
    assert packages.package_subword_flags({"checkpoint": "c", "spm_model": "a b"}) == "--spm-model 'a b'"
    assert corpus_data.sentencepiece_flags(config, CORPUS) == ("--model-type bpe --joint --character-coverage 1.0 "
                                                                "--input-sentence-size 0")


@pytest.mark.heavy
def test_dry_run_trains_on_spm_rules_output(tmp_path):
    """`snakemake -n -p` of one spm system's package and hypotheses: the spm rules make its
    inputs, training and decoding read them, postprocessing undoes pieces."""
    (tmp_path / "spm.yaml").write_text(yaml.safe_dump(SPM_CONFIG), encoding="utf-8")
    package = f"results/experiments/spm_system/{CORPUS}/model/preprocess.json"
    hypotheses = f"results/experiments/spm_system/{CORPUS}/test_2016_flickr.hyp"
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path), "-n", "-p",
                             "--cores", "1", package, hypotheses, "--configfile", str(tmp_path / "spm.yaml")],
                            capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.M))
    # one joint model; train, dev and test of both sides encoded (test_2016_flickr: the source only)
    assert (counts["learn_spm"], counts["apply_spm"], counts["joint_vocab_spm"]) == ("1", "5", "1")
    assert "learn_bpe" not in counts and "apply_bpe" not in counts
    spm_dir = f"results/data/{CORPUS}/spm4000"
    assert "learn --vocab-size 4000 --model-type bpe --joint" in out
    [train] = [line for line in out.splitlines() if "nmtmodels.cli train" in line]
    for flag in (f"--train-src {spm_dir}/train.en-de.en", f"--train-tgt {spm_dir}/train.en-de.de",
                 f"--src-vocab {spm_dir}/vocab.en-de.joint", "--tgt-format spm"):
        assert flag in train
    assert f"--input {spm_dir}/test_2016_flickr.en-de.en" in out
    assert f"--spm-model {spm_dir}/spm.en-de.en.model" in out
    assert "nmtmodels.cli postprocess --lang de --spm" in out
