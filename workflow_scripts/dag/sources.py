"""What a run reads (rules/train.smk, decode.smk): the source side of each split by model
family (plain subwords, a lattice, or subwords plus extra inputs), the training and validation
files by role, and the ``--extra``/``--extra-tokens`` flags of nmt-train and nmt-translate."""
from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from workflow_scripts.dag import paths
from workflow_scripts.dag.corpus_data import reference_paths
from workflow_scripts.dag.esc import ESC_FAMILIES, esc_source
from workflow_scripts.dag.lattices import lattice_source
from workflow_scripts.dag.runs import SourceInputs, shares_embeddings, subword_source

# Model families whose source side is not the plain subword file, or that need extra
# inputs: family name -> provider (config, experiment, corpus, split) -> SourceInputs.
SOURCE_PROVIDERS: dict[str, Callable[[dict[str, Any], str, str, str], SourceInputs]] = {
    family: esc_source for family in ESC_FAMILIES
}


def source_inputs(config: dict[str, Any], experiment: str, corpus: str, split: str) -> SourceInputs:
    """The source-side inputs of ``split`` for one run: its lattice (or 1-best segmentation)
    when the experiment names ``lattice``, else the family's provider, else subwords."""
    family = config["experiments"][experiment]["family"]
    if config["experiments"][experiment].get("lattice"):  # a lattice, or one segmentation of it (1-best)
        return lattice_source(config, experiment, corpus, split)
    return SOURCE_PROVIDERS.get(family, subword_source)(config, experiment, corpus, split)


def reads_plain_subwords(config: dict[str, Any], experiment: str, corpus: str) -> bool:
    """Whether the run's only source input is the corpus' plain BPE (or character) encoding."""
    return source_inputs(config, experiment, corpus, "train") == subword_source(config, experiment, corpus, "train")


def joint_vocab_path(config: dict[str, Any], experiment: str, corpus: str) -> str:
    """The joint vocabulary of both sides' encoded training text at the experiment's BPE size
    (rule ``joint_vocab``), read by models that share embeddings."""
    spec = config["corpora"][corpus]
    return paths.vocab(corpus=corpus, units=config["experiments"][experiment]["subwords"], **paths.sides(spec), lang="joint")


def model_inputs(config: dict[str, Any], experiment: str, corpus: str) -> dict[str, str | list[str]]:
    """Training/validation files and vocabularies of one run, by role (extra inputs as
    ``extra_<name>_train`` / ``extra_<name>_valid``; ``valid_ref``: every raw dev reference)."""
    spec = config["corpora"][corpus]
    target = {"corpus": corpus, "units": config["experiments"][experiment]["subwords"], **paths.sides(spec), "lang": spec["tgt"]}
    train, valid = (source_inputs(config, experiment, corpus, split) for split in ("train", "dev"))
    src_vocab, tgt_vocab = train.vocab, paths.vocab(**target)
    if shares_embeddings(config, experiment):  # one table for both sides: fairseq's joined dictionary
        src_vocab = tgt_vocab = joint_vocab_path(config, experiment, corpus)
    inputs = {
        "train_src": train.source,
        "train_tgt": paths.encoded(split="train", **target),
        "valid_src": valid.source,
        "valid_tgt": paths.encoded(split="dev", **target),
        "valid_ref": reference_paths(config, corpus, "dev"),
        "src_vocab": src_vocab,
        "tgt_vocab": tgt_vocab,
    }
    for role, files in (("train", train), ("valid", valid)):
        for name, path in {**files.extras, **files.extra_tokens}.items():
            inputs[f"extra_{name}_{role}"] = path
    return inputs


def extra_input_flags(config: dict[str, Any], experiment: str, corpus: str, splits: tuple[str, ...]) -> str:
    """``--extra NAME=F1:F2 --extra-tokens NAME=...`` for the files of ``splits`` (train
    and dev for nmt-train, one test set for nmt-translate); empty for plain families."""
    per_split = [source_inputs(config, experiment, corpus, split) for split in splits]
    flags = []
    for flag, kind in (("--extra", "extras"), ("--extra-tokens", "extra_tokens")):
        for name in getattr(per_split[0], kind):
            joined = ":".join(getattr(files, kind)[name] for files in per_split)
            flags.append(f"{flag} {shlex.quote(f'{name}={joined}')}")
    return " ".join(flags)


def test_source(config: dict[str, Any], experiment: str, corpus: str, test_set: str) -> str:
    """The encoded source side of a test set, in the experiment's input units."""
    return source_inputs(config, experiment, corpus, test_set).source


def test_extra_inputs(config: dict[str, Any], experiment: str, corpus: str, test_set: str) -> list[str]:
    """The family's extra input files of a test set (inputs of the translate rule)."""
    files = source_inputs(config, experiment, corpus, test_set)
    return [*files.extras.values(), *files.extra_tokens.values()]
