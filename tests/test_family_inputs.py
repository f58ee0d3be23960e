"""Family-specific source inputs reach the train and translate rules' files and flags."""
from __future__ import annotations

from pathlib import Path

import yaml

from workflow_scripts.dag import runs, sources

CONFIG = yaml.safe_load((Path(__file__).parent.parent / "config.yaml").read_text())


def lattice_like(config, experiment, corpus, split):
    root = f"results/data/{corpus}/fake"
    return runs.SourceInputs(
        source=f"{root}/{split}.tokens",
        vocab=f"{root}/vocab",
        extras={"start": f"{root}/{split}.start"},
        extra_tokens={"backbone": f"{root}/{split}.backbone"},
    )


def with_experiment(family: str) -> dict:
    config = dict(CONFIG)
    config["experiments"] = {"probe": {"family": family, "corpora": ["multi30k_en_de"], "subwords": "bpe8000"}}
    return config


def test_plain_family_reads_its_subword_files_and_takes_no_flags():
    config = with_experiment("transformer")
    inputs = sources.model_inputs(config, "probe", "multi30k_en_de")
    assert inputs["train_src"] == "results/data/multi30k_en_de/bpe8000/train.en-de.en"
    assert inputs["src_vocab"] == "results/data/multi30k_en_de/bpe8000/vocab.en-de.en"
    assert not [role for role in inputs if role.startswith("extra_")]
    assert sources.extra_input_flags(config, "probe", "multi30k_en_de", ("train", "dev")) == ""
    assert sources.extra_inputs_of_test_set(config, "probe", "multi30k_en_de", "test_2016_flickr") == []


def test_provider_replaces_source_and_vocab_and_adds_extras(monkeypatch):
    monkeypatch.setitem(sources.SOURCE_PROVIDERS, "fake", lattice_like)
    config = with_experiment("fake")
    inputs = sources.model_inputs(config, "probe", "multi30k_en_de")
    root = "results/data/multi30k_en_de/fake"
    assert inputs["train_src"] == f"{root}/train.tokens"
    assert inputs["valid_src"] == f"{root}/dev.tokens"
    assert inputs["src_vocab"] == f"{root}/vocab"
    assert inputs["train_tgt"] == "results/data/multi30k_en_de/bpe8000/train.en-de.de"
    assert inputs["extra_start_train"] == f"{root}/train.start"
    assert inputs["extra_backbone_valid"] == f"{root}/dev.backbone"
    flags = sources.extra_input_flags(config, "probe", "multi30k_en_de", ("train", "dev"))
    assert flags == (f"--extra start={root}/train.start:{root}/dev.start "
                     f"--extra-tokens backbone={root}/train.backbone:{root}/dev.backbone")
    assert sources.source_of_test_set(config, "probe", "multi30k_en_de", "test_2016_flickr") == f"{root}/test_2016_flickr.tokens"
    assert sources.extra_inputs_of_test_set(config, "probe", "multi30k_en_de", "test_2016_flickr") == [
        f"{root}/test_2016_flickr.start", f"{root}/test_2016_flickr.backbone"]
