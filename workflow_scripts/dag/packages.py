"""Model packages (rule ``model_package`` in rules/train.smk): which runs get one and what
goes in it (:mod:`nmtmodels.text.model_package`).

A run gets a package when its only source input is the corpus' plain BPE, SentencePiece or
character encoding (:func:`workflow_scripts.dag.sources.reads_plain_subwords`): the families
transformer, reordering, graph_transformer, char2char and char2word.  Lattice models (and
the 1-best Transformer over a lattice's segmentation) and ESC models read inputs that other
workflow rules build (lattices, compressed sources); nmt-translate refuses raw text for
those families, and their runs get no package.
"""
from __future__ import annotations

import json
import shlex
from typing import Any

from workflow_scripts.dag import paths
from workflow_scripts.dag.runs import decode_checkpoint, experiment_runs
from workflow_scripts.dag.sources import reads_plain_subwords


def has_package(config: dict[str, Any], experiment: str, corpus: str) -> bool:
    return reads_plain_subwords(config, experiment, corpus)


def package_targets(config: dict[str, Any]) -> list[str]:
    """The model package of every run of `all` that gets one."""
    return [paths.fill(paths.MODEL_PACKAGE, experiment=experiment, corpus=corpus)
            for experiment, corpus in experiment_runs(config) if has_package(config, experiment, corpus)]


def package_inputs(config: dict[str, Any], experiment: str, corpus: str) -> dict[str, str]:
    """The checkpoint the run decodes (:func:`~workflow_scripts.dag.runs.decode_checkpoint`)
    and, for BPE, the source side's codes and vocabulary, for SentencePiece its model."""
    inputs = {"checkpoint": decode_checkpoint(config, experiment, corpus)}
    subwords = config["experiments"][experiment]["subwords"]
    spec = config["corpora"][corpus]
    where = {"corpus": corpus, "units": subwords, **paths.sides(spec), "lang": spec["src"]}
    if subwords.startswith("bpe"):
        inputs.update(codes=paths.codes(**where), vocab=paths.vocab(**where))
    elif subwords.startswith("spm"):
        inputs.update(spm_model=paths.spm_model(**where))
    return inputs


def package_subword_flags(inputs: dict[str, str]) -> str:
    """The subword files of :func:`package_inputs` as flags of ``python -m nmtmodels.cli package``."""
    flags = {"codes": "--codes", "vocab": "--vocab", "spm_model": "--spm-model"}
    return " ".join(f"{flag} {shlex.quote(inputs[key])}" for key, flag in flags.items() if key in inputs)


def package_settings_json(config: dict[str, Any], experiment: str, corpus: str) -> str:
    """``preprocess.json`` of the run's package as canonical JSON (the rule's parameter: it
    changes only with what raw input depends on, not with, say, another BPE size)."""
    from nmtmodels.text.model_package import settings_from_corpus

    settings = settings_from_corpus(config["corpora"][corpus], config["experiments"][experiment]["subwords"],
                                    config["unicode_form"], where=f"corpora.{corpus}")
    return json.dumps(settings.to_dict(), sort_keys=True)
