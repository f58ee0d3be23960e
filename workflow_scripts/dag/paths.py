"""Every file name the workflow writes, spelled once.

Each template is a Snakemake pattern: rules use it as is (its fields are wildcards), or with
some fields fixed by :func:`fill`; Python code fills every field.  ``units`` is the directory
of one encoding of a corpus: ``tok`` (tokenised), ``bpeN`` (subword-nmt), ``spmN``
(SentencePiece), ``char``, ``seg/S`` (a segmenter's words) or ``lattice/L``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

DATA_ROOT = "results/data"
EXPERIMENTS_ROOT = "results/experiments"
COMPRESSION_ROOT = "results/compression"
DOWNLOADS_ROOT = "resources/downloads"

# The papers' claims that the results summary gives verdicts on (a source file of the workflow,
# absolute so that a run in another --directory finds it).
CLAIMS = str(Path(__file__).resolve().parents[1] / "evaluation" / "claims.yaml")

DOWNLOAD = DOWNLOADS_ROOT + "/{corpus}/{download}"
RAW = DATA_ROOT + "/{corpus}/raw/{split}.{lang}"
RAW_REFERENCE = DATA_ROOT + "/{corpus}/raw/{split}.ref{ref}.{lang}"
# One side of a split in some units, and the units' vocabulary, BPE codes and SentencePiece model.
ENCODED = DATA_ROOT + "/{corpus}/{units}/{split}.{src}-{tgt}.{lang}"
VOCAB = DATA_ROOT + "/{corpus}/{units}/vocab.{src}-{tgt}.{lang}"
CODES = DATA_ROOT + "/{corpus}/{units}/codes.{src}-{tgt}.{lang}"
SPM_MODEL = DATA_ROOT + "/{corpus}/{units}/spm.{src}-{tgt}.{lang}.model"
TOKENIZED_REFERENCE = DATA_ROOT + "/{corpus}/tok/{split}.ref{ref}.{src}-{tgt}.{lang}"
EXPERIMENT = EXPERIMENTS_ROOT + "/{experiment}/{corpus}"
# A run's best checkpoint, and its model package (nmtmodels.package: what raw text needs).
BEST_CHECKPOINT = EXPERIMENT + "/train/checkpoint_best.pt"
# The average of the run's last {last} numbered checkpoints (experiments.E.average_checkpoints).
AVERAGED_CHECKPOINT = EXPERIMENT + "/train/checkpoint_avg{last}.pt"
MODEL_PACKAGE = EXPERIMENT + "/model"
# The source OOV rate of a run on one test set (workflow_scripts/evaluation/oov.py).
OOV = EXPERIMENT + "/{test_set}.oov.json"
COMPRESSOR = COMPRESSION_ROOT + "/{compressor}/{corpus}"


class _Wildcards(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def fill(template: str, **fields: Any) -> str:
    """``template`` with ``fields`` filled in; every other field stays a wildcard."""
    return template.format_map(_Wildcards(fields))


def sides(spec: dict[str, Any]) -> dict[str, str]:
    """``src`` and ``tgt`` of a corpus spec (the language pair of its file names)."""
    return {"src": spec["src"], "tgt": spec["tgt"]}


def corpus_dir(corpus: str) -> str:
    return f"{DATA_ROOT}/{corpus}"


def encoded(**fields: Any) -> str:
    return fill(ENCODED, **fields)


def tokenized(**fields: Any) -> str:
    return fill(ENCODED, units="tok", **fields)


def vocab(**fields: Any) -> str:
    return fill(VOCAB, **fields)


def codes(**fields: Any) -> str:
    return fill(CODES, **fields)


def spm_model(**fields: Any) -> str:
    return fill(SPM_MODEL, **fields)


def download_path(corpus: str, download: str) -> str:
    return fill(DOWNLOAD, corpus=corpus, download=download)


def experiment_dir(experiment: str, corpus: str) -> str:
    return fill(EXPERIMENT, experiment=experiment, corpus=corpus)


def compressor_dir(compressor: str, corpus: str) -> str:
    return fill(COMPRESSOR, compressor=compressor, corpus=corpus)


def oov_path(experiment: str, corpus: str, test_set: str) -> str:
    return fill(OOV, experiment=experiment, corpus=corpus, test_set=test_set)
