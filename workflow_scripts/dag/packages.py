"""Model packages (rule ``model_package`` in rules/train.smk): what goes in the package of
each run (:mod:`nmtmodels.model_package`).

Every run that `all` trains gets a package, so that ``nmt-translate`` reads raw text for every
family.  A run that reads plain BPE, SentencePiece or characters gets the source side's codes
or model; a lattice run (and the 1-best Transformer over one segmentation of a lattice) gets
its lattice settings (segmentations, position unit, vocabulary limit) and the codes of each
BPE size the lattice packs; an ESC run gets its compressor's checkpoint and search settings
(those of the ``compress`` rule).
"""
from __future__ import annotations

import dataclasses
import json
import shlex
from typing import Any

from nmtmodels.model_package.settings import CompressionSettings, LatticeSettings, settings_from_corpus
from nmtmodels.text.lattice import paper_position_unit
from workflow_scripts.dag import paths
from workflow_scripts.dag.compression import compressor_decode_settings, compressor_spec, is_identity, is_random_deletion
from workflow_scripts.dag.lattices import is_bpe
from workflow_scripts.dag.runs import decode_checkpoint, experiment_runs


def package_targets(config: dict[str, Any]) -> list[str]:
    """The model package of every run of `all`, named by its ``preprocess.json`` (the rule's
    outputs are files of the package: paths.MODEL_PACKAGE_SETTINGS); not of a run fed by a
    random-deletion compressor (a control: its input copies the lengths of another compressor's
    output of the same line, which raw text does not have)."""
    return [paths.fill(paths.MODEL_PACKAGE_SETTINGS, experiment=experiment, corpus=corpus)
            for experiment, corpus in experiment_runs(config)
            if not (config["experiments"][experiment].get("compressor")
                    and is_random_deletion(config, config["experiments"][experiment]["compressor"]))]


def package_inputs(config: dict[str, Any], experiment: str, corpus: str) -> dict[str, str]:
    """The checkpoint the run decodes (:func:`~workflow_scripts.dag.runs.decode_checkpoint`)
    and the source side's files: for BPE its codes and vocabulary, for SentencePiece its model,
    for a lattice the codes and vocabulary of each BPE size it packs (``lattice_bpeN_codes``,
    ``lattice_bpeN_vocab``); an ESC run's compressor checkpoint (``compressor``)."""
    inputs = {"checkpoint": decode_checkpoint(config, experiment, corpus)}
    spec = config["experiments"][experiment]
    corpus_spec = config["corpora"][corpus]
    where = {"corpus": corpus, **paths.sides(corpus_spec), "lang": corpus_spec["src"]}
    if spec.get("lattice"):
        for part in filter(is_bpe, spec["lattice"]):
            inputs.update({f"lattice_{part}_codes": paths.codes(units=part, **where),
                           f"lattice_{part}_vocab": paths.vocab(units=part, **where)})
    elif spec["subwords"].startswith("bpe"):
        inputs.update(codes=paths.codes(units=spec["subwords"], **where), vocab=paths.vocab(units=spec["subwords"], **where))
    elif spec["subwords"].startswith("spm"):
        inputs.update(spm_model=paths.spm_model(units=spec["subwords"], **where))
    if spec.get("compressor") and not is_identity(config, spec["compressor"]):
        inputs["compressor"] = paths.fill(paths.COMPRESSOR_CHECKPOINT, compressor=spec["compressor"], corpus=corpus)
    return inputs


def package_subword_flags(inputs: dict[str, str]) -> str:
    """The source files of :func:`package_inputs` as flags of ``python -m nmtmodels.cli package``."""
    flags = {"codes": "--codes", "vocab": "--vocab", "spm_model": "--spm-model", "compressor": "--compressor"}
    out = [f"{flag} {shlex.quote(inputs[key])}" for key, flag in flags.items() if key in inputs]
    for key in inputs:
        if key.startswith("lattice_") and key.endswith("_codes"):
            part = key.removeprefix("lattice_").removesuffix("_codes")
            out.append(f"--lattice-bpe {part} {shlex.quote(inputs[key])} {shlex.quote(inputs[f'lattice_{part}_vocab'])}")
    return " ".join(out)


def package_settings_json(config: dict[str, Any], experiment: str, corpus: str) -> str:
    """``preprocess.json`` of the run's package as canonical JSON (the rule's parameter: it
    changes only with what raw input depends on, not with, say, another BPE size).  A lattice's
    position unit is the one its ``lattice_inputs`` rule uses (footnote 1 of the paper)."""
    spec, corpus_spec = config["experiments"][experiment], config["corpora"][corpus]
    settings = settings_from_corpus(corpus_spec, spec["subwords"], config["unicode_form"], where=f"corpora.{corpus}")
    if spec.get("lattice"):
        lattice = LatticeSettings(tuple(spec["lattice"]), paper_position_unit(spec["lattice"]), config.get("lattice_vocab_size") or 0)
        threshold = corpus_spec.get("bpe", {}).get("vocabulary_threshold", 1) if lattice.bpe_sizes else None
        settings = dataclasses.replace(settings, lattice=lattice, vocabulary_threshold=threshold)
    if spec.get("compressor") and is_identity(config, spec["compressor"]):
        settings = dataclasses.replace(settings, compression=CompressionSettings(identity=True))
    elif spec.get("compressor"):
        decode = compressor_decode_settings(config, spec["compressor"])
        batch_tokens = compressor_spec(config, spec["compressor"]).get("batch_tokens", 4096)
        settings = dataclasses.replace(settings, compression=CompressionSettings(tuple(sorted(decode.items())), batch_tokens))
    return json.dumps(settings.to_dict(), sort_keys=True)
