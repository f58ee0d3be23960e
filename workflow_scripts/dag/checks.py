"""check(config): every start-up check of the configuration, run once by the Snakefile.

The JSON schema (schemas/config.schema.yaml) checks keys and types; these check what a schema
cannot: cross-references between keys (corpora, experiments, fair comparisons, shared
embeddings, compression, lattices, evaluation, swap noise) and that the licensed input files
are there.  Every error names the key path (:class:`WorkflowConfigError`).
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from nmtmodels.config import ConfigError
from nmtmodels.text.postprocess import SUBWORDS
from nmtmodels.text.spm import SentencePieceSettings
from workflow_scripts.dag import WorkflowConfigError, evaluation, paths
from workflow_scripts.dag.analyses import check_swap_noise
from workflow_scripts.dag.compression import check_compression
from workflow_scripts.dag.corpus_data import input_dirs
from workflow_scripts.dag.families import check_family_needs
from workflow_scripts.dag.lattices import check_lattices
from workflow_scripts.dag.runs import (
    baselines_of,
    check_averaging,
    check_run_sections,
    comparable_settings,
    experiment_runs,
    experiment_settings,
    is_active,
    shares_embeddings,
)
from workflow_scripts.dag.sources import SOURCE_KEYS, source_differences, source_reading
from workflow_scripts.data import corpus_spec as corpus_specs
from workflow_scripts.data.locations import missing_licensed

__all__ = ["WorkflowConfigError", "check"]


def check(config: dict[str, Any], environ: Mapping[str, str], *, main_process: bool = True) -> None:
    """Raise WorkflowConfigError on the first inconsistency.  The checks that import torch
    (the model sections) or look at files run in the ``main_process`` only: cluster jobs
    re-read the Snakefile."""
    check_subword_values(config)
    check_config(config)
    if main_process:
        for warning in check_experiments(config):
            print(f"warning: {warning}", file=sys.stderr)
        check_family_needs(config)  # each run gives its family what its module declares (FAMILY_NEEDS)
        check_compression(config)
        check_lattices(config)
        check_licensed_inputs(config, environ)  # every missing licensed file, in one error
    evaluation.check_evaluation_config(config)
    check_swap_noise(config)


SUBWORDS_NAMES = "bpeN (subword-nmt BPE, N in corpora.C.bpe.merges), spmN (SentencePiece, N in corpora.C.sentencepiece.vocab_sizes) or char"


def check_subword_values(config: dict[str, Any]) -> None:
    """One line naming the key for a bad ``corpora.C.sentencepiece`` value or ``experiments.E.subwords``
    name.  The Snakefile runs it before the schema, whose messages for these span several lines;
    it skips what has the wrong structure (the schema reports that).  The names are those of
    nmtmodels' model packages (:data:`nmtmodels.text.postprocess.SUBWORDS`; importing it
    loads no torch, so cluster jobs that re-read the Snakefile run it too)."""
    corpora = config.get("corpora")
    for name, spec in (corpora.items() if isinstance(corpora, dict) else ()):
        if isinstance(spec, dict) and "sentencepiece" in spec:
            try:
                SentencePieceSettings.from_dict(spec["sentencepiece"], where=f"corpora.{name}.sentencepiece")
            except ConfigError as exc:
                raise WorkflowConfigError(str(exc)) from None
    experiments = config.get("experiments")
    for name, spec in (experiments.items() if isinstance(experiments, dict) else ()):
        subwords = spec.get("subwords") if isinstance(spec, dict) else None
        if subwords is not None and not (isinstance(subwords, str) and SUBWORDS.fullmatch(subwords)):
            raise WorkflowConfigError(f"experiments.{name}.subwords: expected {SUBWORDS_NAMES}, got {subwords!r}")


def check_config(config: dict[str, Any]) -> None:
    """Raise WorkflowConfigError on cross-reference mistakes the schema cannot see."""
    registry = config.get("corpora", {})
    for i, name in enumerate(config.get("active_corpora", [])):
        if name not in registry:
            raise WorkflowConfigError(
                f"active_corpora[{i}]: unknown corpus '{name}' (defined: {', '.join(sorted(registry)) or 'none'})"
            )
    for key in ("active_experiments", "inactive_experiments"):
        for i, name in enumerate(config.get(key) or []):
            if name not in config.get("experiments", {}):
                raise WorkflowConfigError(
                    f"{key}[{i}]: unknown experiment '{name}' "
                    f"(defined: {', '.join(sorted(config.get('experiments', {}))) or 'none'})"
                )
    for name, spec in registry.items():
        where = f"corpora.{name}"
        if spec["src"] == spec["tgt"]:
            raise WorkflowConfigError(f"{where}.tgt: source and target language are both '{spec['src']}'")
        for side in ("src", "tgt"):
            if spec[side] not in spec["preprocess"]:
                raise WorkflowConfigError(f"{where}.preprocess: no entry for the {side} language '{spec[side]}'")
        splits = corpus_specs.splits_of(spec)
        for required in ("train", "dev"):
            if required not in splits:
                raise WorkflowConfigError(f"{where}.splits: no '{required}' split (give it, or make it with holdout)")
        for i, test in enumerate(spec["test_sets"]):
            if test not in splits:
                raise WorkflowConfigError(f"{where}.test_sets[{i}]: '{test}' is not a split of this corpus ({', '.join(splits)})")
        for split, parts in spec["splits"].items():
            for j, part in enumerate(parts):
                for ref in _download_refs(part):
                    if ref.split(":", 1)[0] not in spec["downloads"]:
                        raise WorkflowConfigError(
                            f"{where}.splits.{split}[{j}]: '{ref}' names no entry of {where}.downloads"
                        )


def _download_refs(part: dict[str, Any]) -> list[str]:
    refs = list(part.get("files", {}).values())
    if "file" in part:
        refs.append(part["file"])
    for names in part.get("refs", {}).values():
        refs.extend(names)
    return refs


def check_experiments(config: dict[str, Any]) -> list[str]:
    """Check every experiment's family and sections with nmtmodels' own config classes, and
    that each active run's BPE or SentencePiece size is prepared for its corpus (errors name the key).
    An experiment that will not run (not in ``active_experiments``) whose family is not registered
    (its module is not among this run's ``user_modules``) is not checked: the warnings returned
    name it."""
    from nmtmodels.registry import model_families  # lazy: torch; cluster jobs re-read the Snakefile without it

    families = model_families()
    runs = set(experiment_runs(config))
    warnings = []
    for name, spec in config.get("experiments", {}).items():
        where = f"experiments.{name}"
        if spec["family"] not in families and not is_active(config, name):
            warnings.append(f"{where}.family: unknown model family '{spec['family']}'; not checked, as the experiment "
                            "is not in active_experiments")
            continue
        if spec["family"] not in families:
            raise WorkflowConfigError(f"{where}.family: unknown model family '{spec['family']}' (known: {', '.join(families)})")
        for i, corpus in enumerate(spec["corpora"]):
            if corpus not in config["corpora"]:
                raise WorkflowConfigError(f"{where}.corpora[{i}]: unknown corpus '{corpus}'")
            # The subword size must be prepared for the runs `all` makes; an inactive experiment
            # (or corpus) may name a size the current corpus settings leave out.
            if (name, corpus) in runs:
                check_subwords_prepared(config, f"{where}.subwords", spec["subwords"], corpus)
        check_run_sections(experiment_settings(config, name), where)
        check_averaging(config, name)
    check_shared_embeddings(config)
    check_fair_comparisons(config)
    return warnings


def check_subwords_prepared(config: dict[str, Any], where: str, subwords: str, corpus: str) -> None:
    """``bpeN`` must be one of ``corpora.CORPUS.bpe.merges``, ``spmN`` one of its ``sentencepiece.vocab_sizes``."""
    spec = config["corpora"][corpus]
    if subwords.startswith("bpe") and int(subwords[3:]) not in spec["bpe"]["merges"]:
        raise WorkflowConfigError(f"{where}: {subwords} is not among corpora.{corpus}.bpe.merges {spec['bpe']['merges']}")
    if subwords.startswith("spm"):
        if "sentencepiece" not in spec:
            raise WorkflowConfigError(f"{where}: {subwords} needs SentencePiece subwords of corpus '{corpus}', but "
                                      f"corpora.{corpus} has no sentencepiece section (e.g. sentencepiece: "
                                      f"{{vocab_sizes: [{subwords[3:]}], model_type: unigram}})")
        sizes = spec["sentencepiece"]["vocab_sizes"]
        if int(subwords[3:]) not in sizes:
            raise WorkflowConfigError(f"{where}: {subwords} is not among corpora.{corpus}.sentencepiece.vocab_sizes {sizes}")


def check_fair_comparisons(config: dict[str, Any]) -> None:
    """Each system differs from each of its baselines only by the method: equal resolved
    :func:`comparable_settings` (shape, norm placement, embedding sharing, subwords, training
    settings and budget, decoding), and, on every corpus both run on, the same source as it
    reads (:func:`~workflow_scripts.dag.sources.source_differences`: units, segmenter and
    vocabulary limit; a lattice's baseline reads one of the lattice's paths), apart from the
    keys it lists in ``differs_from_baseline`` (``{dotted key: reason}``, e.g. the encoder
    layers of a layer sweep, ``source.units`` for another input).  Checked for the systems that
    `all` trains (:func:`experiment_runs`)."""
    settings: dict[str, dict[str, Any]] = {}
    planned = experiment_runs(config)
    running = {name for name, _ in planned}
    for name, spec in config.get("experiments", {}).items():
        if name not in running:  # e.g. the embedded default's systems under configs/full.yaml
            continue
        allowed = spec.get("differs_from_baseline") or {}
        for baseline in baselines_of(config, name):
            if baseline not in config["experiments"]:
                continue  # reported by the evaluation checks
            for experiment in (name, baseline):
                if experiment not in settings:
                    settings[experiment] = comparable_settings(config, experiment)
            mine, theirs = settings[name], settings[baseline]
            for key in sorted(set(mine) | set(theirs)):
                if mine.get(key) != theirs.get(key) and key not in allowed:
                    raise WorkflowConfigError(
                        f"experiments.{name}: differs from its baseline experiments.{baseline} in {key} "
                        f"({mine.get(key)!r} vs {theirs.get(key)!r}); a compared system may differ only by its method "
                        f"(model.family, model.options, its inputs), or name the key with a reason in "
                        f"experiments.{name}.differs_from_baseline"
                    )
            for corpus in [c for e, c in planned if e == name and c in config["experiments"][baseline]["corpora"]]:
                check_same_source(config, name, baseline, corpus, allowed)
        for key in allowed:
            if key not in comparable_settings(config, name) and key not in SOURCE_KEYS:
                raise WorkflowConfigError(f"experiments.{name}.differs_from_baseline: '{key}' is not a compared setting "
                                          f"(model.*, train.*, decode.*, subwords, average_checkpoints, {', '.join(SOURCE_KEYS)})")


def check_same_source(config: dict[str, Any], name: str, baseline: str, corpus: str, allowed: Mapping[str, str]) -> None:
    """A system reads the source its baseline reads on ``corpus`` (units, segmenter, vocabulary
    limit; a lattice against a 1-best: the 1-best is one of the lattice's paths), but for the
    :data:`~workflow_scripts.dag.sources.SOURCE_KEYS` named in ``allowed``."""
    mine, theirs = source_reading(config, name, corpus), source_reading(config, baseline, corpus)
    differ = [key for key in source_differences(mine, theirs) if key not in allowed]
    if differ:
        raise WorkflowConfigError(
            f"experiments.{name}: differs from its baseline experiments.{baseline} on {corpus} in {' and '.join(differ)} "
            f"(reads {mine.describe()} vs {theirs.describe()}; vocabulary limit {mine.describe_limit()} vs "
            f"{theirs.describe_limit()}); a compared system reads its baseline's source units, segmenter and vocabulary "
            f"limit (a lattice: its baseline reads one of the lattice's paths), or name the key with a reason in "
            f"experiments.{name}.differs_from_baseline"
        )


def check_shared_embeddings(config: dict[str, Any]) -> None:
    """An experiment that shares embeddings reads one joint vocabulary, so it needs subwords
    learnt jointly over both languages (``corpora.C.bpe.joint``, or ``corpora.C.sentencepiece.joint``
    for ``spmN``) as its only source input: not characters (one vocabulary per language) and
    not a lattice (edge vocabulary)."""
    for name, spec in config.get("experiments", {}).items():
        if not shares_embeddings(config, name):
            continue
        where = f"experiments.{name}.model.share_embeddings"
        if spec["subwords"] == "char":
            raise WorkflowConfigError(f"{where}: needs one joint vocabulary, but subwords '{spec['subwords']}' has one per language")
        if spec.get("lattice"):
            raise WorkflowConfigError(f"{where}: needs one joint vocabulary, but the source is a lattice with its own edge vocabulary")
        section, kind = ("sentencepiece", "SentencePiece model") if spec["subwords"].startswith("spm") else ("bpe", "BPE")
        for corpus in spec["corpora"]:
            if corpus in config["corpora"] and not config["corpora"][corpus].get(section, {}).get("joint", True):
                raise WorkflowConfigError(
                    f"{where}: needs one joint vocabulary, but corpora.{corpus}.{section}.joint is false (separate {kind} per language)"
                )


def check_licensed_inputs(config: dict[str, Any], environ: Mapping[str, str]) -> None:
    """Every licensed file (``local`` of a download) that the active corpora still need is
    there: else one error listing each missing file (off with ``require_licensed_data: false``)."""
    if not config.get("require_licensed_data", True):
        return
    downloads = []
    for corpus in config["active_corpora"]:
        spec = config["corpora"][corpus]
        names = {name for split in corpus_specs.splits_of(spec) for lang in (spec["src"], spec["tgt"])
                 for name in corpus_specs.downloads_for(spec, split, lang)}
        downloads += [(f"corpora.{corpus}.downloads.{name}", spec["downloads"][name], paths.download_path(corpus, name))
                      for name in sorted(names)]
    mirror, licensed = input_dirs(config, environ)
    message = missing_licensed(downloads, mirror_dir=mirror, licensed_dir=licensed)
    if message:
        raise WorkflowConfigError(message)
