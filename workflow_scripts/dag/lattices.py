"""Lattice inputs (rules/lattice.smk, workflow_scripts/data/lattice.py): an experiment's ``lattice``
lists the segmentations of the corpus' source side that one lattice packs: Chinese segmenters
(``seg/S/``, from preprocess.SRC.lattice_segmenters) or BPE sizes (``bpeN``).  The lattice of
``[a, b, c]`` lives in results/data/C/lattice/a+b+c/; with one segmentation it is that
segmentation itself (the 1-best inputs of the paper's tables)."""
from __future__ import annotations

from typing import Any

from workflow_scripts.dag import WorkflowConfigError, paths
from workflow_scripts.dag.families import reads
from workflow_scripts.dag.runs import SourceInputs, experiment_runs

SPANS = ("starts", "ends")  # the extra inputs of a lattice: each edge's first and last character


def is_bpe(segmentation: str) -> bool:
    return segmentation[:3] == "bpe" and segmentation[3:].isdigit()


def lattice_name(segmentations: list[str]) -> str:
    return "+".join(segmentations)


def lattice_units(config: dict[str, Any], experiment: str) -> str:
    """The ``units`` directory (:mod:`.paths`) of the experiment's lattice."""
    return paths.fill(paths.LATTICE_UNITS, lattice=lattice_name(config["experiments"][experiment]["lattice"]))


def lattice_source(config: dict[str, Any], experiment: str, corpus: str, split: str) -> SourceInputs:
    """Edge tokens and vocabulary of the experiment's lattice, and the edges' ``starts`` and
    ``ends`` (``--extra``) that its family declares it reads (a lattice family; the 1-best
    Transformer reads neither)."""
    spec = config["corpora"][corpus]
    where = {"corpus": corpus, "units": lattice_units(config, experiment), **paths.sides(spec)}
    extras = {name: paths.encoded(split=split, lang=name, **where) for name in SPANS if reads(config, experiment, name)}
    return SourceInputs(source=paths.encoded(split=split, lang=spec["src"], **where),
                        vocab=paths.vocab(lang=spec["src"], **where), extras=extras)


def segmentation_paths(config: dict[str, Any], corpus: str, name: str, split: str) -> list[str]:
    """The source-side segmentation files packed into lattice ``name`` (``a+b+c``) of a split."""
    spec = config["corpora"][corpus]
    return [paths.encoded(corpus=corpus, units=part if is_bpe(part) else paths.fill(paths.SEGMENTED_UNITS, segmenter=part),
                          split=split, **paths.sides(spec), lang=spec["src"])
            for part in name.split("+")]


def check_lattices(config: dict[str, Any]) -> None:
    """Every segmentation of an active run's lattice is prepared for its corpus (a BPE size of
    bpe.merges, or a lattice segmenter of the source); which families need one:
    :func:`~workflow_scripts.dag.families.check_family_needs`."""
    runs = set(experiment_runs(config))
    for name, spec in config.get("experiments", {}).items():
        where = f"experiments.{name}"
        for corpus in spec["corpora"]:
            if (name, corpus) not in runs:
                continue
            corpus_spec = config["corpora"][corpus]
            segmenters = corpus_spec["preprocess"][corpus_spec["src"]].get("lattice_segmenters", [])
            for i, part in enumerate(spec.get("lattice") or []):
                known = int(part[3:]) in corpus_spec["bpe"]["merges"] if is_bpe(part) else part in segmenters
                if not known:
                    raise WorkflowConfigError(
                        f"{where}.lattice[{i}]: '{part}' is not prepared for corpus '{corpus}' (bpe.merges "
                        f"{corpus_spec['bpe']['merges']}, preprocess.{corpus_spec['src']}.lattice_segmenters {segmenters})"
                    )
