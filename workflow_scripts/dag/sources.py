"""What a run reads (rules/train.smk, decode.smk): the source side of each split by model
family (plain subwords, a lattice, or subwords plus extra inputs), the training and validation
files by role, the ``--extra``/``--extra-tokens`` flags of nmt-train and nmt-translate, and
what the start-up fairness check compares of a run's source (:func:`source_reading`: units,
segmenter, vocabulary limit)."""
from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import Any

from workflow_scripts.dag import paths
from workflow_scripts.dag.compression import compressed_input
from workflow_scripts.dag.corpus_data import reference_paths
from workflow_scripts.dag.families import reads
from workflow_scripts.dag.lattices import lattice_source, lattice_units
from workflow_scripts.dag.runs import SourceInputs, experiment_runs, shares_embeddings, subword_source


def source_inputs(config: dict[str, Any], experiment: str, corpus: str, split: str) -> SourceInputs:
    """The source-side inputs of ``split`` for one run, from what its family declares
    (:mod:`.families`): its lattice (or 1-best segmentation) when the experiment names
    ``lattice``, else subwords, plus the compressed source when the family reads ``compressed``."""
    if config["experiments"][experiment].get("lattice"):  # a lattice, or one segmentation of it (1-best)
        inputs = lattice_source(config, experiment, corpus, split)
    else:
        inputs = subword_source(config, experiment, corpus, split)
    if reads(config, experiment, "compressed"):
        compressed = compressed_input(config, experiment, corpus, split)
        inputs = dataclasses.replace(inputs, extra_tokens={**inputs.extra_tokens, "compressed": compressed})
    return inputs


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


def source_of_test_set(config: dict[str, Any], experiment: str, corpus: str, test_set: str) -> str:
    """The encoded source side of a test set, in the experiment's input units."""
    return source_inputs(config, experiment, corpus, test_set).source


def source_units(config: dict[str, Any], experiment: str) -> str:
    """The units directory of the source a run reads (``bpe8000``, ``char``, ``lattice/jieba``,
    ``lattice/jieba+thulac+snownlp``; :mod:`.paths`): the ``unit`` of its OOV records."""
    spec = config["experiments"][experiment]
    return lattice_units(config, experiment) if spec.get("lattice") else spec["subwords"]


def oov_inputs(config: dict[str, Any], experiment: str, corpus: str, test_set: str) -> dict[str, str]:
    """The OOV rate's inputs (rule ``oov_rate``): the test source as the run reads it and the
    source vocabulary its model was trained with."""
    return {"source": source_of_test_set(config, experiment, corpus, test_set),
            "vocab": model_inputs(config, experiment, corpus)["src_vocab"]}


def oov_targets(config: dict[str, Any]) -> list[str]:
    """One OOV record (:data:`.paths.OOV`) per run that `all` trains and test set of its corpus."""
    return [paths.oov_path(experiment, corpus, test_set) for experiment, corpus in experiment_runs(config)
            for test_set in config["corpora"][corpus]["test_sets"]]


def extra_inputs_of_test_set(config: dict[str, Any], experiment: str, corpus: str, test_set: str) -> list[str]:
    """The family's extra input files of a test set (inputs of the translate rule)."""
    files = source_inputs(config, experiment, corpus, test_set)
    return [*files.extras.values(), *files.extra_tokens.values()]


# ----------------------------------------------------------------------------- what a run reads, compared
# Dotted keys of the source side in the fairness check (checks.check_fair_comparisons), as
# ``differs_from_baseline`` names them.
SOURCE_KEYS = ("source.units", "source.segmenter", "source.vocab_limit")


@dataclass(frozen=True)
class SourceReading:
    """What a run reads on the source side, as the fairness check compares it.

    ``paths``: one ``(units, segmenter)`` per segmentation it reads, in the experiment's order:
    one for a plain or 1-best input, several for a lattice.  ``units`` is ``words`` (a word
    segmenter's words), ``bpeN``, ``spmN`` or ``char``; ``segmenter`` is the word segmenter, or for
    subwords the corpus tokenizer their text was split with (``none`` for characters).
    ``vocab_limit``: the most source types its vocabulary keeps (``None``: every type of the
    training text)."""

    paths: tuple[tuple[str, str], ...]
    vocab_limit: int | None

    @property
    def is_lattice(self) -> bool:
        return len(self.paths) > 1

    def describe(self) -> str:
        """What it reads, e.g. ``a lattice of jieba, thulac, snownlp words`` or ``bpe8000 subwords
        of jieba-tokenised text`` (the vocabulary limit: :meth:`describe_limit`)."""
        def one(units: str, segmenter: str) -> str:
            if units == "words":
                return f"{segmenter} words"
            if units == "char":
                return "characters"
            return f"{units} {'subwords' if units.startswith('bpe') else 'pieces'} of {segmenter}-tokenised text"

        if self.is_lattice and all(units == "words" for units, _ in self.paths):
            return f"a lattice of {', '.join(segmenter for _, segmenter in self.paths)} words"
        return ("a lattice of " if self.is_lattice else "") + ", ".join(one(*path) for path in self.paths)

    def describe_limit(self) -> str:
        return "none" if self.vocab_limit is None else str(self.vocab_limit)


def segmentation_reading(config: dict[str, Any], corpus: str, name: str) -> tuple[str, str]:
    """``(units, segmenter)`` of one segmentation name: a subword or character unit
    (``bpeN``, ``spmN``, ``char``, ``experiments.E.subwords``) or a lattice segmenter (``jieba``)."""
    spec = config["corpora"][corpus]
    if name == "char":
        return ("char", "none")
    if name[:3] in ("bpe", "spm") and name[3:].isdigit():
        return (name, spec["preprocess"][spec["src"]]["tokenizer"])
    return ("words", name)


def source_reading(config: dict[str, Any], experiment: str, corpus: str) -> SourceReading:
    """What the run of ``experiment`` on ``corpus`` reads on the source side (:class:`SourceReading`):
    the segmentations of its ``lattice`` (the vocabulary then keeps ``lattice_vocab_size`` types,
    0: all), else its ``subwords`` (BPE and SentencePiece vocabularies keep every unit; characters
    the ``characters.vocab_size`` most frequent).  Extra inputs (ESC's compressed source, a
    graph) are the family's method, not counted here."""
    spec = config["experiments"][experiment]
    if spec.get("lattice"):
        limit = config.get("lattice_vocab_size") or None
        return SourceReading(tuple(segmentation_reading(config, corpus, name) for name in spec["lattice"]), limit)
    limit = config.get("characters", {}).get("vocab_size") if spec["subwords"] == "char" else None
    return SourceReading((segmentation_reading(config, corpus, spec["subwords"]),), limit)


def source_differences(system: SourceReading, baseline: SourceReading) -> list[str]:
    """The :data:`SOURCE_KEYS` in which a system's source differs from its baseline's.

    Equal means: the same vocabulary limit, and the same segmentations, except that a lattice
    and a single segmentation (its baseline's 1-best, or the other way round) match when that
    segmentation is one of the lattice's paths, units and segmenter alike.  Units are compared
    first: a path with other units is ``source.units``, one with the same units from another
    segmenter ``source.segmenter``."""
    differ = []
    if system.is_lattice != baseline.is_lattice:
        lattice, single = (system, baseline) if system.is_lattice else (baseline, system)
        (units, segmenter), = single.paths
        if units not in {u for u, _ in lattice.paths}:
            differ.append("source.units")
        elif (units, segmenter) not in lattice.paths:
            differ.append("source.segmenter")
    elif {u for u, _ in system.paths} != {u for u, _ in baseline.paths}:
        differ.append("source.units")
    elif set(system.paths) != set(baseline.paths):
        differ.append("source.segmenter")
    if system.vocab_limit != baseline.vocab_limit:
        differ.append("source.vocab_limit")
    return differ
