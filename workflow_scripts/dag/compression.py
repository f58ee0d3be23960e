"""Explicit sentence compression (rules/compression.smk): a compressor (a Transformer trained
through nmt-train, denoising or supervised) rewrites the source side of every split of a
corpus; a family that declares the extra input ``compressed`` (the ESC families, or one of
your own: nmtmodels/family_needs.py) reads that "backbone" as a token input."""
from __future__ import annotations

import re
from typing import Any

from nmtmodels.config import from_dict
from nmtmodels.decoding.config import DecodeConfig
from workflow_scripts.dag import WorkflowConfigError, paths
from workflow_scripts.dag.runs import check_run_sections, experiment_runs


def compressor_spec(config: dict[str, Any], compressor: str) -> dict[str, Any]:
    return config["compression"]["compressors"][compressor]


def is_identity(config: dict[str, Any], compressor: str) -> bool:
    """A compressor of ``kind: identity``: no model; the "compressed" input is the encoded
    source itself (x^c = x), the control that separates compression from a second encoder
    branch (workflow_scripts/evaluation/claims.yaml, esc_bbf)."""
    return compressor_spec(config, compressor)["kind"] == "identity"


def is_random_deletion(config: dict[str, Any], compressor: str) -> bool:
    """A compressor of ``kind: random_deletion``: no model; line by line, random words of the
    source as many as the learned compressor ``lengths_of`` kept (the control that separates
    what a compressor learns to keep from a shorter second view of the source)."""
    return compressor_spec(config, compressor)["kind"] == "random_deletion"


def _names_pattern(names: list[str]) -> str:
    return "|".join(re.escape(name) for name in names)


def random_deletion_pattern(config: dict[str, Any]) -> str:
    """The ``compressor`` wildcard of rule random_delete: the random-deletion compressors only."""
    names = [n for n in (config.get("compression") or {}).get("compressors", {}) if is_random_deletion(config, n)]
    return f"(?:{_names_pattern(names)})" if names else "(?!)"


def learned_pattern(config: dict[str, Any]) -> str:
    """The ``compressor`` wildcard of rule compress: any name but a random-deletion compressor's."""
    names = [n for n in (config.get("compression") or {}).get("compressors", {}) if is_random_deletion(config, n)]
    return f"(?!(?:{_names_pattern(names)})/)[^/]+" if names else "[^/]+"


def random_deletion_inputs(config: dict[str, Any], compressor: str, corpus: str, split: str) -> dict[str, str]:
    """The source a random-deletion compressor shortens and the learned compressor's output
    whose lengths it takes, line by line."""
    return {"source": compression_source(config, compressor, corpus, split),
            "lengths": compressed_path(compressor_spec(config, compressor)["lengths_of"], corpus, split)}


def compressor_settings(config: dict[str, Any], compressor: str) -> dict[str, Any]:
    """The ``model``/``train``/``decode`` sections of a compressor (a transformer; defaults + overrides)."""
    spec = compressor_spec(config, compressor)
    return {
        "model": {**spec.get("model", {}), "family": "transformer"},
        "train": {**config["training"], **spec.get("train", {})},
        "decode": {**config["decoding"], **spec.get("decode", {})},
    }


def compressor_inputs(config: dict[str, Any], compressor: str, corpus: str) -> dict[str, str]:
    """Training files of a compressor by role (nmt-train's options); source vocabulary on both sides."""
    spec, corpus_spec = compressor_spec(config, compressor), config["corpora"][corpus]
    # denoising pairs of the corpus' train and dev splits, or supervised pairs (parts train and dev)
    if spec["kind"] == "unsupervised":
        field, source, target = "split", paths.DENOISE_SOURCE, paths.DENOISE_TARGET
    else:
        field, source, target = "part", paths.SUPERVISED_SOURCE, paths.SUPERVISED_TARGET
    inputs = {f"{role}_{side}": paths.fill(template, compressor=compressor, corpus=corpus, **{field: split})
              for role, split in (("train", "train"), ("valid", "dev")) for side, template in (("src", source), ("tgt", target))}
    inputs["vocab"] = paths.vocab(corpus=corpus, units=spec["subwords"], **paths.sides(corpus_spec), lang=corpus_spec["src"])
    if spec.get("init_from"):
        inputs["init"] = paths.fill(paths.COMPRESSOR_CHECKPOINT, compressor=spec["init_from"], corpus=corpus)
    return inputs


def compressor_bpe_files(config: dict[str, Any], compressor: str, corpus: str) -> dict[str, str]:
    """BPE codes and vocabulary of the corpus' source side at the compressor's subwords."""
    spec = config["corpora"][corpus]
    where = {"corpus": corpus, "units": compressor_spec(config, compressor)["subwords"], **paths.sides(spec), "lang": spec["src"]}
    return {"codes": paths.codes(**where), "vocab": paths.vocab(**where)}


def compression_set_part(config: dict[str, Any], part: str) -> tuple[list[str], str]:
    """Compression sets and record-range options (``--skip``/``--limit``) of the supervised
    ``train`` and ``dev`` pairs and of the ``eval`` set: dev is the first ``dev_records`` records
    of ``dev_set``, eval the rest."""
    section = config.get("compression") or {}
    if part == "train":
        return list(section.get("train_sets", [])), ""
    dev_records = section.get("dev_records", 200)
    return [section["dev_set"]], f"--limit {dev_records}" if part == "dev" else f"--skip {dev_records}"


def compression_source(config: dict[str, Any], compressor: str, corpus: str, split: str) -> str:
    """What the compressor rewrites: a corpus split's encoded source, or ``compression_eval``."""
    if split == "compression_eval":
        return paths.fill(paths.SUPERVISED_SOURCE, compressor=compressor, corpus=corpus, part="eval")
    spec = config["corpora"][corpus]
    return paths.encoded(corpus=corpus, units=compressor_spec(config, compressor)["subwords"], split=split,
                         **paths.sides(spec), lang=spec["src"])


def compressor_decode_settings(config: dict[str, Any], compressor: str) -> dict[str, Any]:
    """A compressor's length-controlled search (ESC eq. 1-3): beam, alpha (``length_penalty``),
    beta (``coverage_penalty``), gamma (``max_len_ratio``, None: no hard stop) and the length
    limits, and ``subsequence`` (deletion-based: only the source's words, in order), as the
    ``compress`` rule passes them and a model package records them."""
    decode = from_dict(DecodeConfig, compressor_settings(config, compressor)["decode"], where="decode")
    return {"beam": decode.beam, "length_penalty": decode.length_penalty, "coverage_penalty": decode.coverage_penalty,
            "max_len_a": decode.max_len_a, "max_len_b": decode.max_len_b, "min_len": decode.min_len,
            "max_len_ratio": decode.max_len_ratio, "subsequence": decode.subsequence}


def compressor_decode_flags(config: dict[str, Any], compressor: str) -> str:
    """nmt-translate options of a compressor's search (:func:`compressor_decode_settings`) and batch size."""
    decode = compressor_decode_settings(config, compressor)
    flags = [f"--beam {decode['beam']}", f"--lenpen {decode['length_penalty']}",
             f"--coverage-penalty {decode['coverage_penalty']}", f"--max-len-a {decode['max_len_a']}",
             f"--max-len-b {decode['max_len_b']}", f"--min-len {decode['min_len']}"]
    if decode["max_len_ratio"] is not None:
        flags.append(f"--max-len-ratio {decode['max_len_ratio']}")
    if decode["subsequence"]:
        flags.append("--subsequence")
    flags.append(f"--batch-tokens {compressor_spec(config, compressor).get('batch_tokens', 4096)}")
    return " ".join(flags)


def compressed_path(compressor: str, corpus: str, split: str) -> str:
    return paths.fill(paths.COMPRESSED, compressor=compressor, corpus=corpus, split=split)


def compressed_input(config: dict[str, Any], experiment: str, corpus: str, split: str) -> str:
    """The extra token input ``compressed`` of a split: the source compressed by the experiment's
    ``compressor`` (an identity compressor's: the encoded source itself)."""
    compressor = config["experiments"][experiment]["compressor"]
    return (compression_source(config, compressor, corpus, split) if is_identity(config, compressor)
            else compressed_path(compressor, corpus, split))


def compression_targets(config: dict[str, Any]) -> list[str]:
    """Compression quality (token F1, ratio) of every compressor an active ESC experiment uses."""
    return sorted({paths.fill(paths.COMPRESSION_SCORES, compressor=config["experiments"][e]["compressor"], corpus=c)
                   for e, c in experiment_runs(config) if config["experiments"][e].get("compressor")
                   and not is_identity(config, config["experiments"][e]["compressor"])})


def compressor_reports(config: dict[str, Any]) -> list[dict[str, str]]:
    """What the results summary reports of every compressor that an active ESC experiment
    uses, per corpus and test set: its quality on the compression evaluation set (``scores``)
    and how close its compression of the test source (``compressed``) is to that source
    (``source``, the same subword units)."""
    found: dict[tuple[str, str, str], dict[str, str]] = {}
    for experiment, corpus in experiment_runs(config):
        compressor = config["experiments"][experiment].get("compressor")
        if not compressor or is_identity(config, compressor):
            continue
        for test_set in config["corpora"][corpus]["test_sets"]:
            found[(compressor, corpus, test_set)] = {
                "compressor": compressor, "corpus": corpus, "test_set": test_set,
                "scores": paths.fill(paths.COMPRESSION_SCORES, compressor=compressor, corpus=corpus),
                "source": compression_source(config, compressor, corpus, test_set),
                "compressed": compressed_path(compressor, corpus, test_set)}
    return list(found.values())


def check_compression(config: dict[str, Any]) -> None:
    """Cross-references of the ``compression`` section and the experiments' ``compressor`` keys."""
    section = config.get("compression") or {}
    compressors = section.get("compressors", {})
    data = section.get("data", {})
    named = [("train_sets", name) for name in section.get("train_sets", [])]
    named += [("dev_set", section["dev_set"])] if "dev_set" in section else []
    for key, name in named:
        if name not in data:
            raise WorkflowConfigError(f"compression.{key}: '{name}' names no entry of compression.data")
    if compressors and "dev_set" not in section:
        raise WorkflowConfigError("compression.dev_set: needed to evaluate the compressors (token F1, ratio)")
    for name, spec in compressors.items():
        where = f"compression.compressors.{name}"
        init = spec.get("init_from")
        if init is not None and init not in compressors:
            raise WorkflowConfigError(f"{where}.init_from: unknown compressor '{init}'")
        if init is not None and compressors[init]["subwords"] != spec["subwords"]:
            raise WorkflowConfigError(f"{where}.subwords: must equal that of init_from '{init}' ({compressors[init]['subwords']})")
        if spec["kind"] == "supervised" and not section.get("train_sets"):
            raise WorkflowConfigError(f"{where}.kind: supervised needs compression.train_sets")
        if spec["kind"] == "unsupervised" and init is not None:
            raise WorkflowConfigError(f"{where}.init_from: only a supervised compressor is fine-tuned from another")
        if spec["kind"] == "identity":
            given = sorted(set(spec) & {"init_from", "model", "train", "decode", "lengths_of", "seed"})
            if given:
                raise WorkflowConfigError(f"{where}.{given[0]}: an identity compressor (x^c = x) trains and decodes nothing")
            continue
        if spec["kind"] == "random_deletion":
            _check_random_deletion(compressors, name, spec)
            continue
        for key in ("lengths_of", "seed"):
            if key in spec:
                raise WorkflowConfigError(f"{where}.{key}: only a random_deletion compressor takes it")
        if init is not None and compressors[init]["kind"] in ("identity", "random_deletion"):
            raise WorkflowConfigError(f"{where}.init_from: '{init}' is an {compressors[init]['kind']} compressor, with no model "
                                      "to fine-tune")
        check_run_sections(compressor_settings(config, name), where)
    for name, spec in config.get("experiments", {}).items():  # which families read one: families.check_family_needs
        where = f"experiments.{name}"
        if spec.get("compressor") is None:
            continue
        if spec["compressor"] not in compressors:
            raise WorkflowConfigError(f"{where}.compressor: unknown compressor '{spec['compressor']}' "
                                      f"(defined: {', '.join(sorted(compressors)) or 'none'})")
        if compressors[spec["compressor"]]["subwords"] != spec["subwords"]:
            raise WorkflowConfigError(f"{where}.subwords: must equal compression.compressors.{spec['compressor']}.subwords "
                                      f"({compressors[spec['compressor']]['subwords']}): both share the source vocabulary")


def _check_random_deletion(compressors: dict[str, Any], name: str, spec: dict[str, Any]) -> None:
    where = f"compression.compressors.{name}"
    given = sorted(set(spec) & {"init_from", "model", "train", "decode"})
    if given:
        raise WorkflowConfigError(f"{where}.{given[0]}: a random_deletion compressor trains and decodes nothing")
    other = spec.get("lengths_of")
    if other is None:
        raise WorkflowConfigError(f"{where}.lengths_of: a random_deletion compressor needs the learned compressor whose "
                                  "lengths it copies")
    learned = [n for n, c in compressors.items() if c["kind"] in ("unsupervised", "supervised")]
    if other not in learned:
        raise WorkflowConfigError(f"{where}.lengths_of: '{other}' is not a learned compressor (learned: {', '.join(learned) or 'none'})")
    if compressors[other]["subwords"] != spec["subwords"]:
        raise WorkflowConfigError(f"{where}.subwords: must equal that of lengths_of '{other}' ({compressors[other]['subwords']})")
