"""Family-specific source inputs reach the train and translate rules' files and flags, from
what each family's module declares (``FAMILY_NEEDS``, nmtmodels/family_needs.py), never from
its name: an outside family that reads ``compressed`` gets a compressor's output, one that reads
an input no stage makes is refused, and planning imports no torch."""
from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workflow_scripts.dag import WorkflowConfigError, families, sources

ROOT = Path(__file__).resolve().parent.parent

CONFIG = yaml.safe_load((Path(__file__).parent.parent / "config.yaml").read_text())


def with_experiment(family: str, **spec) -> dict:
    config = copy.deepcopy(CONFIG)
    config["experiments"] = {"probe": {"family": family, "corpora": ["multi30k_en_de"], "subwords": "bpe8000", **spec}}
    return config


def outside(tmp_path: Path, needs: str, family: str = "mine", **spec) -> dict:
    """A config whose experiment ``probe`` runs ``family``, declared by a module of ``user_modules``
    that imports torch first: planning reads its declaration without running it."""
    module = tmp_path / f"{family}_family.py"
    module.write_text(f"import torch  # planning never runs this module\n\nFAMILY_NEEDS = {{{family!r}: {needs}}}\n")
    config = with_experiment(family, **spec)
    config["user_modules"] = [str(module)]
    return config


def test_plain_family_reads_its_subword_files_and_takes_no_flags():
    config = with_experiment("transformer")
    inputs = sources.model_inputs(config, "probe", "multi30k_en_de")
    assert inputs["train_src"] == "results/data/multi30k_en_de/bpe8000/train.en-de.en"
    assert inputs["src_vocab"] == "results/data/multi30k_en_de/bpe8000/vocab.en-de.en"
    assert not [role for role in inputs if role.startswith("extra_")]
    assert sources.extra_input_flags(config, "probe", "multi30k_en_de", ("train", "dev")) == ""
    assert sources.extra_inputs_of_test_set(config, "probe", "multi30k_en_de", "test_2016_flickr") == []


def test_an_outside_family_that_reads_compressed_gets_its_compressor_output(tmp_path):
    config = outside(tmp_path, '{"inputs": {"compressed": 0}}', compressor="esc_unsup")
    families.check_family_needs(config)
    inputs = sources.model_inputs(config, "probe", "multi30k_en_de")
    assert inputs["train_src"] == "results/data/multi30k_en_de/bpe8000/train.en-de.en"
    assert inputs["extra_compressed_train"] == "results/compression/esc_unsup/multi30k_en_de/compressed/train.txt"
    assert inputs["extra_compressed_valid"] == "results/compression/esc_unsup/multi30k_en_de/compressed/dev.txt"
    assert sources.extra_input_flags(config, "probe", "multi30k_en_de", ("train", "dev")) == (
        "--extra-tokens compressed=results/compression/esc_unsup/multi30k_en_de/compressed/train.txt:"
        "results/compression/esc_unsup/multi30k_en_de/compressed/dev.txt")
    assert sources.extra_inputs_of_test_set(config, "probe", "multi30k_en_de", "test_2016_flickr") == [
        "results/compression/esc_unsup/multi30k_en_de/compressed/test_2016_flickr.txt"]


def test_the_same_family_undeclared_reads_plain_subwords(tmp_path):
    config = outside(tmp_path, "{}")
    assert sources.reads_plain_subwords(config, "probe", "multi30k_en_de")


@pytest.mark.parametrize("needs, spec, message", [
    ('{"inputs": {"compressed": 0}}', {}, "experiments.probe.compressor: family 'mine' needs a compressor (a key of "
                                       "compression.compressors): it reads the extra input 'compressed' "
                                       "(FAMILY_NEEDS['mine']['inputs'] (in "),
    ("{}", {"compressor": "esc_unsup"}, "experiments.probe.compressor: family 'mine' reads no compressed source "
                                        "(FAMILY_NEEDS['mine']['inputs'] (in "),
    ('{"inputs": {"starts": -1, "ends": -1}}', {}, "experiments.probe.lattice: family 'mine' needs the segmentations its lattice packs"),
    ('{"inputs": {"graph": 0}}', {}, "experiments.probe.family: family 'mine' reads the extra input 'graph', which no "
                                     "workflow stage makes (made: compressed, ends, starts; FAMILY_NEEDS['mine']['inputs'] (in "),
])
def test_a_run_that_cannot_give_its_family_what_it_declares_is_refused_in_one_line(tmp_path, needs, spec, message):
    config = outside(tmp_path, needs, **spec)
    with pytest.raises(WorkflowConfigError, match=re.escape(message)) as error:
        families.check_family_needs(config)
    assert "\n" not in str(error.value)


def test_a_built_in_family_is_checked_by_what_it_declares():
    with pytest.raises(WorkflowConfigError, match=re.escape("experiments.probe.compressor: family 'transformer' reads no "
                                                            "compressed source")):
        families.check_family_needs(with_experiment("transformer", compressor="esc_unsup"))
    with pytest.raises(WorkflowConfigError, match=re.escape("experiments.probe.compressor: family 'bsfnmt' needs a compressor")):
        families.check_family_needs(with_experiment("bsfnmt"))
    lattice = with_experiment("lattice_transformer", lattice=["jieba"])
    assert set(sources.source_inputs(lattice, "probe", "multi30k_en_de", "train").extras) == {"starts", "ends"}
    one_best = with_experiment("transformer", lattice=["jieba"])
    assert sources.source_inputs(one_best, "probe", "multi30k_en_de", "train").extras == {}


def test_planning_an_outside_compressed_family_imports_no_torch(tmp_path):
    """Every job re-reads the Snakefile: the declarations are read, never run (the module
    written by :func:`outside` imports torch first)."""
    module = tmp_path / "mine_family.py"
    outside(tmp_path, '{"inputs": {"compressed": 0}}')
    code = ("import sys, yaml\n"
            "from workflow_scripts.dag import families, sources\n"
            f"config = yaml.safe_load(open({str(ROOT / 'config.yaml')!r}))\n"
            f"config['user_modules'] = [{str(module)!r}]\n"
            "config['experiments'] = {'probe': {'family': 'mine', 'corpora': ['multi30k_en_de'], 'subwords': 'bpe8000',"
            " 'compressor': 'esc_unsup'}}\n"
            "families.check_family_needs(config)\n"
            "print(sources.extra_input_flags(config, 'probe', 'multi30k_en_de', ('train', 'dev')))\n"
            "print(sorted(m for m in ('torch', 'nmtmodels.models') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "--extra-tokens compressed=" in out and out.splitlines()[-1] == "[]"
