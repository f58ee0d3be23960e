"""Model packages in the workflow: which runs of `all` get one (workflow_scripts/dag/packages.py)
and what the rule's command (nmt-package, as python -m nmtmodels.cli package) writes."""
from __future__ import annotations

import copy
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch
import yaml

from nmtmodels.checkpoint import load_checkpoint, save_checkpoint
from nmtmodels.model_package.reader import read_package
from tests.snakemake_runs import snakemake
from workflow_scripts.dag import packages, runs

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
FULL = yaml.safe_load((ROOT / "configs/full.yaml").read_text())
PLAIN_FAMILIES = {"transformer", "reordering", "graph_transformer", "char2char", "char2word"}


def merged(base: dict, extra: dict) -> dict:
    """``extra`` merged over ``base`` key by key, lists replaced (as Snakemake merges --configfile)."""
    out = copy.deepcopy(base)
    for key, value in extra.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@pytest.mark.parametrize("config", [CONFIG, merged(CONFIG, FULL)], ids=["config.yaml", "full.yaml"])
def test_every_run_of_all_gets_a_package_lattice_and_esc_runs_included(config):
    assert packages.package_targets(config) == [f"results/experiments/{e}/{c}/model/preprocess.json"
                                                for e, c in runs.experiment_runs(config)]
    families = {config["experiments"][e]["family"] for e, _ in runs.experiment_runs(config)}
    assert families - PLAIN_FAMILIES, "the config trains no lattice or ESC model: the test shows nothing"


@pytest.mark.parametrize("lattice, unit", [(["jieba", "thulac", "snownlp"], "char"), (["jieba"], "char"),
                                           (["bpe2000", "bpe4000"], "subword")])
def test_a_lattice_run_s_package_takes_its_segmentations_and_the_codes_of_its_bpe_sizes(lattice, unit):
    """The package records what the lattice rules used: the segmentations, the position unit
    of rule lattice_inputs (footnote 1: subword for BPE sizes only) and lattice_vocab_size."""
    from nmtmodels.text.lattice import paper_position_unit

    config = copy.deepcopy(CONFIG)
    config["lattice_vocab_size"] = 5000
    experiment = next(e for e, spec in config["experiments"].items() if spec["family"] == "lattice_transformer")
    config["experiments"][experiment]["lattice"] = lattice
    corpus = config["experiments"][experiment]["corpora"][0]
    settings = json.loads(packages.package_settings_json(config, experiment, corpus))
    assert settings["lattice"] == {"segmentations": lattice, "position_unit": unit, "vocab_limit": 5000}
    assert paper_position_unit(lattice) == unit
    inputs = packages.package_inputs(config, experiment, corpus)
    bpe = [part for part in lattice if part.startswith("bpe")]
    assert set(inputs) == {"checkpoint", *(f"lattice_{part}_{kind}" for part in bpe for kind in ("codes", "vocab"))}
    for part in bpe:
        assert inputs[f"lattice_{part}_codes"] == f"results/data/{corpus}/{part}/codes.zh-en.zh"
    assert ("bpe" in settings) == bool(bpe) and "codes" not in settings.get("bpe", {})  # the source is the lattice
    flags = packages.package_subword_flags(inputs)
    assert flags.count("--lattice-bpe") == len(bpe) and "--codes" not in flags


def test_an_esc_run_s_package_takes_the_compressor_and_the_compress_rule_s_search():
    from workflow_scripts.dag import compression, families

    experiment = next(e for e in CONFIG["experiments"] if families.reads(CONFIG, e, "compressed"))
    corpus = CONFIG["experiments"][experiment]["corpora"][0]
    compressor = CONFIG["experiments"][experiment]["compressor"]
    settings = json.loads(packages.package_settings_json(CONFIG, experiment, corpus))["compression"]
    flags = compression.compressor_decode_flags(CONFIG, compressor).split()
    switches = {flag for flag in flags if flag == "--subsequence"}  # the one option without a value
    flags = [flag for flag in flags if flag not in switches]
    given = dict(zip(flags[::2], flags[1::2]))  # the compress rule's options
    names = {"--beam": "beam", "--lenpen": "length_penalty", "--coverage-penalty": "coverage_penalty",
             "--max-len-a": "max_len_a", "--max-len-b": "max_len_b", "--min-len": "min_len", "--max-len-ratio": "max_len_ratio"}
    assert {names[flag]: float(value) for flag, value in given.items() if flag in names} == {
        key: float(value) for key, value in settings["decode"].items() if value is not None and key != "subsequence"}
    assert settings["decode"]["subsequence"] == ("--subsequence" in switches)
    assert settings["batch_tokens"] == int(given["--batch-tokens"])
    inputs = packages.package_inputs(CONFIG, experiment, corpus)
    assert inputs["compressor"] == f"results/compression/{compressor}/{corpus}/train/checkpoint_best.pt"
    assert "--compressor" in packages.package_subword_flags(inputs) and "--codes" in packages.package_subword_flags(inputs)


def test_package_settings_are_the_corpus_preprocessing_and_the_run_s_units():
    experiment = next(e for e, spec in CONFIG["experiments"].items()
                      if spec["family"] == "transformer" and "multi30k_en_de" in spec["corpora"] and not spec.get("lattice"))
    corpus = CONFIG["corpora"]["multi30k_en_de"]
    settings = json.loads(packages.package_settings_json(CONFIG, experiment, "multi30k_en_de"))
    for side, lang in (("source", corpus["src"]), ("target", corpus["tgt"])):
        assert settings[side]["lang"] == lang and settings[side]["tokenizer"] == corpus["preprocess"][lang]["tokenizer"]
    assert settings["unicode_form"] == CONFIG["unicode_form"]
    assert settings["lowercase"] == corpus.get("lowercase", False)
    assert settings["subwords"] == CONFIG["experiments"][experiment]["subwords"]
    assert settings["bpe"]["vocabulary_threshold"] == corpus["bpe"].get("vocabulary_threshold", 1)
    inputs = packages.package_inputs(CONFIG, experiment, "multi30k_en_de")
    units = CONFIG["experiments"][experiment]["subwords"]
    assert inputs["codes"] == f"results/data/multi30k_en_de/{units}/codes.en-de.en"
    assert inputs["vocab"] == f"results/data/multi30k_en_de/{units}/vocab.en-de.en"
    # another BPE size of the corpus changes nothing the package depends on: no rerun
    other = copy.deepcopy(CONFIG)
    other["corpora"]["multi30k_en_de"]["bpe"]["merges"] = [*corpus["bpe"]["merges"], 700]
    assert packages.package_settings_json(other, experiment, "multi30k_en_de") == json.dumps(settings, sort_keys=True)


def test_character_runs_take_no_codes():
    experiment = next(e for e, spec in CONFIG["experiments"].items() if spec["subwords"] == "char")
    corpus = CONFIG["experiments"][experiment]["corpora"][0]
    assert set(packages.package_inputs(CONFIG, experiment, corpus)) == {"checkpoint"}
    assert "bpe" not in json.loads(packages.package_settings_json(CONFIG, experiment, corpus))


def package_command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nmtmodels.cli", "package", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False)


@pytest.mark.heavy
def test_the_rule_command_writes_a_package_that_reads_back(tmp_path):
    experiment = next(e for e, spec in CONFIG["experiments"].items() if spec["family"] == "transformer" and not spec.get("lattice"))
    settings = packages.package_settings_json(CONFIG, experiment, "multi30k_en_de")
    save_checkpoint(tmp_path / "best.pt", {"model": {"w": torch.ones(2)}, "trainer": {"update": 3}})
    (tmp_path / "codes").write_text("#version: 0.2\nt h\nth e</w>\n")
    (tmp_path / "vocab").write_text("the 3\nt@@ 1\n")
    out = tmp_path / "run" / "model"
    proc = package_command("--checkpoint", str(tmp_path / "best.pt"), "--settings", settings, "--codes", str(tmp_path / "codes"),
                           "--vocab", str(tmp_path / "vocab"), "--out-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    package = read_package(out)
    written = json.loads((out / "preprocess.json").read_text())
    assert written.pop("sha256") == {"bpe.codes": hashlib.sha256((tmp_path / "codes").read_bytes()).hexdigest(),
                                     "bpe.vocab": hashlib.sha256((tmp_path / "vocab").read_bytes()).hexdigest()}
    assert set(written.pop("model_sha256")) == {"checkpoint.pt"}
    assert written == json.loads(settings)
    packaged = load_checkpoint(package.checkpoint)  # the model without the training state
    assert torch.equal(packaged["model"]["w"], torch.ones(2)) and "trainer" not in packaged
    assert os.stat(package.checkpoint).st_ino != os.stat(tmp_path / "best.pt").st_ino  # a file of its own, not a hard link
    assert package.codes.read_text() == (tmp_path / "codes").read_text() and package.vocab.read_text() == "the 3\nt@@ 1\n"
    assert sorted(p.name for p in out.parent.iterdir()) == ["model"]  # no temporary directory left
    # BPE settings without codes, and a bad settings key: one line each, nothing written
    missing = package_command("--checkpoint", str(tmp_path / "best.pt"), "--settings", settings, "--out-dir", str(tmp_path / "x"))
    assert missing.returncode == 2 and "--codes and --vocab are required" in missing.stderr.splitlines()[-1]
    bad = json.loads(settings) | {"subwords": "bpe"}
    proc = package_command("--checkpoint", str(tmp_path / "best.pt"), "--settings", json.dumps(bad), "--out-dir", str(tmp_path / "x"))
    assert proc.returncode == 2 and "--settings: subwords: expected bpeN, spmN or char, got 'bpe'" in proc.stderr.splitlines()[-1]
    assert not (tmp_path / "x").exists()


@pytest.mark.heavy
def test_the_rule_writes_a_package_without_snakemake_s_timestamp_file(tmp_path):
    """Snakemake marks the time of a directory output with a .snakemake_timestamp inside it; the
    rule's outputs are files of the package, so the package holds its own files only, and a
    second run has nothing to do."""
    from nmtmodels.text.bpe_codes import ran_out_line

    run, units = "results/experiments/baseline/multi30k_en_de", "results/data/multi30k_en_de/bpe8000"
    (tmp_path / run / "train").mkdir(parents=True)
    (tmp_path / units).mkdir(parents=True)
    save_checkpoint(tmp_path / run / "train/checkpoint_best.pt", {"model": {"w": torch.ones(2)}})
    (tmp_path / units / "codes.en-de.en").write_text(ran_out_line(2, 8000) + "\nt h\nth e</w>\n")
    (tmp_path / units / "vocab.en-de.en").write_text("the 3\nt@@ 1\n")
    target = f"{run}/model/preprocess.json"
    assert packages.package_targets(CONFIG)[0].endswith("/model/preprocess.json")

    snakemake(tmp_path, "--cores", "1", target, "--allowed-rules", "model_package")
    assert sorted(p.name for p in (tmp_path / run / "model").iterdir()) == ["bpe.codes", "bpe.vocab", "checkpoint.pt",
                                                                           "preprocess.json"]
    assert read_package(tmp_path / run / "model").settings.subwords == "bpe8000"
    again = snakemake(tmp_path, "--cores", "1", target, "--allowed-rules", "model_package")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


PACKAGE_OPTIONS = ("--checkpoint", "--settings", "--codes", "--vocab", "--spm-model", "--lattice-bpe", "--compressor",
                   "--out-dir")


@pytest.mark.heavy
def test_nmt_package_is_a_command_whose_help_is_plain_text_with_every_option():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["nmt-package"] == "nmtmodels.cli.package:main"
    proc = package_command("--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: nmt-package ")
    markup = re.findall(r"``|:(?:func|mod|class|meth|data|attr):|::|\*\*", proc.stdout)
    assert not markup, proc.stdout
    options = proc.stdout.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    described = {}
    for entry in re.split(r"\n(?=  -)", options):  # one entry per option: its flags, then its help
        first, _, rest = entry.partition("\n")
        flags, _, same_line = first.strip().partition("  ")  # argparse puts two spaces or more before the help
        described[flags.split()[0].rstrip(",")] = (same_line + " " + rest).split()
    assert set(described) == {"-h", *PACKAGE_OPTIONS}
    assert all(len(words) >= 3 for words in described.values()), described


@pytest.mark.heavy
def test_settings_is_a_file_such_as_a_package_s_own_preprocess_json(tmp_path):
    experiment = next(e for e, spec in CONFIG["experiments"].items() if spec["family"] == "transformer" and not spec.get("lattice"))
    settings = packages.package_settings_json(CONFIG, experiment, "multi30k_en_de")
    save_checkpoint(tmp_path / "best.pt", {"model": {"w": torch.ones(2)}})
    (tmp_path / "codes").write_text("#version: 0.2\nt h\nth e</w>\n")
    (tmp_path / "vocab").write_text("the 3\nt@@ 1\n")
    (tmp_path / "preprocess.json").write_text(settings)
    subwords = ["--codes", str(tmp_path / "codes"), "--vocab", str(tmp_path / "vocab")]

    def package(settings_arg: str, out: str) -> subprocess.CompletedProcess:
        return package_command("--checkpoint", str(tmp_path / "best.pt"), "--settings", settings_arg, *subwords,
                               "--out-dir", str(tmp_path / out))

    assert package(str(tmp_path / "preprocess.json"), "from_file").returncode == 0
    assert package(settings, "inline").returncode == 0  # the rule's inline JSON
    again = package(str(tmp_path / "from_file" / "preprocess.json"), "again")  # with its sha256 records
    assert again.returncode == 0, again.stderr
    written = {name: json.loads((tmp_path / name / "preprocess.json").read_text()) for name in ("from_file", "inline", "again")}
    assert written["from_file"] == written["inline"] == written["again"]
    assert {k: v for k, v in written["from_file"].items() if k not in ("sha256", "model_sha256")} == json.loads(settings)
    missing = package(str(tmp_path / "nothing.json"), "x")
    assert missing.returncode == 2 and missing.stderr.splitlines()[-1] == (
        f"nmt-package: error: --settings {tmp_path / 'nothing.json'}: No such file or directory")
    (tmp_path / "bad.json").write_text(json.dumps(json.loads(settings) | {"subwords": "bpe"}))
    bad = package(str(tmp_path / "bad.json"), "x")
    assert bad.returncode == 2 and bad.stderr.splitlines()[-1] == (
        f"nmt-package: error: --settings {tmp_path / 'bad.json'}: subwords: expected bpeN, spmN or char, got 'bpe'")
    (tmp_path / "cut.json").write_text(settings[:-5])
    cut = package(str(tmp_path / "cut.json"), "x")
    assert cut.returncode == 2 and f"--settings {tmp_path / 'cut.json'}: not JSON (" in cut.stderr.splitlines()[-1]
    assert not (tmp_path / "x").exists()


@pytest.mark.heavy
def test_the_rule_command_refuses_codes_with_fewer_merges_than_bpe_n_in_one_line(tmp_path):
    """bpe600 with 299 merges: refused unless the codes record that the corpus ran out of pairs."""
    from nmtmodels.text.bpe_codes import ran_out_line

    experiment = next(e for e, spec in CONFIG["experiments"].items() if spec["family"] == "transformer" and not spec.get("lattice"))
    settings = json.dumps(json.loads(packages.package_settings_json(CONFIG, experiment, "multi30k_en_de")) | {"subwords": "bpe600"})
    save_checkpoint(tmp_path / "best.pt", {"model": {}})
    merges = [f"a{i} b{i}</w>" for i in range(299)]  # made "a0b0": the vocabulary has all 300 words
    (tmp_path / "vocab").write_text("".join(f"a{i}b{i} 2\n" for i in range(300)))

    def package(first_line: str) -> subprocess.CompletedProcess:
        (tmp_path / "codes").write_text("".join(line + "\n" for line in [first_line, *merges]))
        return package_command("--checkpoint", str(tmp_path / "best.pt"), "--settings", settings, "--codes", str(tmp_path / "codes"),
                               "--vocab", str(tmp_path / "vocab"), "--out-dir", str(tmp_path / "model"))

    proc = package("#version: 0.2")
    assert proc.returncode == 1 and proc.stderr.splitlines() == [
        f"nmt-package: error: {tmp_path / 'codes'}: 299 merges, fewer than the 600 of bpe600, and its first line "
        f"records no early stop, and 1 subwords of {tmp_path / 'vocab'} need merges it lacks ('a299b299'): the file was cut short "
        "(truncated); learn the codes again"]
    assert not (tmp_path / "model").exists()
    proc = package(ran_out_line(300, 600))
    assert proc.returncode == 1 and "299 merges, but its first line records that learning made 300" in proc.stderr
    proc = package(ran_out_line(299, 600))
    assert proc.returncode == 0, proc.stderr
    assert read_package(tmp_path / "model").settings.subwords == "bpe600"


def raw_pairs(corpus: str, count: int) -> dict[str, list[str]]:
    """The first ``count`` raw sentence pairs of a corpus in the mirror (skip when absent)."""
    mirror = Path(os.environ.get("NMT_DATA_MIRROR") or ROOT.parent / "shared" / "data")
    if corpus == "multi30k_en_de":
        files = {lang: mirror / "multi30k" / f"val.{lang}.gz" for lang in ("en", "de")}
        if not all(path.is_file() for path in files.values()):
            pytest.skip(f"no Multi30k in the mirror {mirror}")
        return {lang: gzip.open(path, "rt", encoding="utf-8").read().splitlines()[:count] for lang, path in files.items()}
    path = mirror / "zh-en" / "cmn.txt.gz"
    if not path.is_file():
        pytest.skip(f"no Tatoeba cmn.txt in the mirror {mirror}")
    rows = [line.split("\t") for line in gzip.open(path, "rt", encoding="utf-8").read().splitlines()[:count]]
    return {"en": [row[0] for row in rows], "zh": [row[1] for row in rows]}


@pytest.mark.parametrize("corpus, subwords", [("multi30k_en_de", "bpe300"), ("tatoeba_zh_en", "bpe300"),
                                              ("multi30k_en_de", "char"), ("tatoeba_zh_en", "spm300")])
def test_a_package_reads_raw_text_as_the_workflow_rules_made_the_source(tmp_path, corpus, subwords):
    """The package's source encoder equals the workflow's preprocess + apply_bpe (or
    char_encode, or apply_spm) files line by line, on real sentences, with a vocabulary threshold of 2."""
    from nmtmodels.model_package.settings import settings_from_corpus
    from nmtmodels.model_package.writer import write_package
    from nmtmodels.text.preprocessing import language_settings
    from workflow_scripts.data import bpe, chars, spm
    from workflow_scripts.data.preprocess import preprocess_files

    spec = copy.deepcopy(CONFIG["corpora"][corpus]) | {"bpe": {"merges": [300], "joint": True, "vocabulary_threshold": 2}}
    src, tgt = spec["src"], spec["tgt"]
    raw = raw_pairs(corpus, 150)
    for lang in (src, tgt):
        (tmp_path / f"raw.{lang}").write_text("".join(line + "\n" for line in raw[lang]), encoding="utf-8")
    tok = (str(tmp_path / f"tok.{src}"), str(tmp_path / f"tok.{tgt}"), str(tmp_path / "norm.src"), str(tmp_path / "norm.tgt"))
    raw_files = (str(tmp_path / f"raw.{src}"), str(tmp_path / f"raw.{tgt}"))
    preprocess_files(language_settings(spec, src), language_settings(spec, tgt), raw_files, tok, unicode_form=CONFIG["unicode_form"])
    save_checkpoint(tmp_path / "best.pt", {"model": {}})
    settings = settings_from_corpus(spec, subwords, CONFIG["unicode_form"], where=f"corpora.{corpus}")
    if subwords == "char":
        chars.build_vocabulary(tok[0], 300, tmp_path / "chars")
        chars.apply(str(tmp_path / "chars"), tok[0], str(tmp_path / "encoded"))
        directory = write_package(tmp_path / "model", tmp_path / "best.pt", settings)
    elif subwords.startswith("spm"):
        outputs = [str(tmp_path / name) for name in ("spm.src", "spm.tgt", "vocab.src", "vocab.tgt")]
        spm.main(["learn", "--vocab-size", "300", "--model-type", "unigram", "--separate", "--src-in", tok[0], "--tgt-in", tok[1],
                  "--src-model-out", outputs[0], "--tgt-model-out", outputs[1], "--src-vocab-out", outputs[2],
                  "--tgt-vocab-out", outputs[3]])
        spm.main(["apply", "--model", outputs[0], "--input", tok[0], "--output", str(tmp_path / "encoded")])
        directory = write_package(tmp_path / "model", tmp_path / "best.pt", settings, spm_model=outputs[0])
    else:
        outputs = [str(tmp_path / name) for name in ("codes.src", "codes.tgt", "vocab.src", "vocab.tgt")]
        bpe.learn(300, True, tok[:2], outputs[:2], outputs[2:])
        bpe.apply(outputs[0], outputs[2], 2, tok[0], str(tmp_path / "encoded"))
        directory = write_package(tmp_path / "model", tmp_path / "best.pt", settings, outputs[0], outputs[2])
    package = read_package(directory)
    encode = package.source_encoder()
    expected = (tmp_path / "encoded").read_text(encoding="utf-8").splitlines()
    assert [encode(line) for line in raw[src]] == expected
    assert any(line != encoded for line, encoded in zip(raw[src], expected))  # the encoding did something
