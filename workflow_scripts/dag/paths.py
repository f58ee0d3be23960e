"""Every file name the workflow writes, spelled once: the rules take their inputs, outputs, logs
and benchmarks from here, and so do the DAG functions that name the same files.

Each template is a Snakemake pattern: rules use it as is (its fields are wildcards), or with
some fields fixed by :func:`fill`; Python code fills every field.  ``units`` is the directory
of one encoding of a corpus: ``tok`` (tokenised), ``norm`` (normalised, untokenised), ``bpeN``
(subword-nmt), ``spmN`` (SentencePiece), ``char``, ``seg/S`` (a segmenter's words) or
``lattice/L``.  A decoded ``test_set`` of a run is a test set, :data:`CONCATENATED_SET` or
:data:`NOISY_SET`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

DATA_ROOT = "results/data"
EXPERIMENTS_ROOT = "results/experiments"
COMPRESSION_ROOT = "results/compression"
REPORT_ROOT = "results/report"
BENCHMARKS_ROOT = "results/benchmarks"
DOWNLOADS_ROOT = "resources/downloads"
COMPRESSION_SETS_ROOT = "resources/compression"
LOGS_ROOT = "logs"

# The papers' claims that the results summary gives verdicts on (a source file of the workflow,
# absolute so that a run in another --directory finds it).
CLAIMS = str(Path(__file__).resolve().parents[1] / "evaluation" / "claims.yaml")

# ----------------------------------------------------------------------------- corpora
DOWNLOAD = DOWNLOADS_ROOT + "/{corpus}/{download}"
RAW = DATA_ROOT + "/{corpus}/raw/{split}.{lang}"
RAW_REFERENCE = DATA_ROOT + "/{corpus}/raw/{split}.ref{ref}.{lang}"
# The units directories that rules match with a wildcard.
TOKENIZED_UNITS = "tok"
NORMALIZED_UNITS = "norm"
BPE_UNITS = "bpe{merges}"
SPM_UNITS = "spm{vocab_size}"
CHAR_UNITS = "char"
UNFILTERED_CHAR_UNITS = "char/unfiltered"  # the character training text before the length filter
SEGMENTED_UNITS = "seg/{segmenter}"
LATTICE_UNITS = "lattice/{lattice}"
# One side of a split in some units, and the units' vocabulary, BPE codes and SentencePiece model.
ENCODED = DATA_ROOT + "/{corpus}/{units}/{split}.{src}-{tgt}.{lang}"
VOCAB = DATA_ROOT + "/{corpus}/{units}/vocab.{src}-{tgt}.{lang}"
CODES = DATA_ROOT + "/{corpus}/{units}/codes.{src}-{tgt}.{lang}"
SPM_MODEL = DATA_ROOT + "/{corpus}/{units}/spm.{src}-{tgt}.{lang}.model"
# Reference K >= 1 of a multi-reference test set (paired with the source), tokenised or normalised.
ENCODED_REFERENCE = DATA_ROOT + "/{corpus}/{units}/{split}.ref{ref}.{src}-{tgt}.{lang}"
TOKENIZED_REFERENCE = DATA_ROOT + "/{corpus}/tok/{split}.ref{ref}.{src}-{tgt}.{lang}"
# A lattice of a split's source side (workflow_scripts/data/lattice.py); its model inputs are
# ENCODED in LATTICE_UNITS (languages: the source's edge tokens, ``starts``, ``ends``).
LATTICE = DATA_ROOT + "/{corpus}/lattice/{lattice}/{split}.{src}-{tgt}.lattice"
# A concatenation of test sets (corpora.C.concatenations): its references (K = 1, 2, ...: reference
# K - 1) and tokenised references 0 and K = 1, 2, ...
CONCATENATED_REFERENCE = DATA_ROOT + "/{corpus}/concat/{concatenation}.ref{ref}.{lang}"
CONCATENATED_TOKENIZED_REFERENCE = DATA_ROOT + "/{corpus}/concat/{concatenation}.tok.{lang}"
CONCATENATED_TOKENIZED_EXTRA_REFERENCE = DATA_ROOT + "/{corpus}/concat/{concatenation}.tok.ref{ref}.{lang}"
# A test set's source with {percent}% of its words swapped (swap noise), tokenised (units ``tok``)
# or BPE-encoded.
NOISY_SOURCE = DATA_ROOT + "/{corpus}/swap_noise/{units}/{test_set}.swap{percent}.{src}-{tgt}.{lang}"

# ----------------------------------------------------------------------------- runs
EXPERIMENT = EXPERIMENTS_ROOT + "/{experiment}/{corpus}"
# A run's resolved settings (nmt-train --config) and the trainer's metrics per validation.
EXPERIMENT_YAML = EXPERIMENT + "/experiment.yaml"
TRAIN_METRICS = EXPERIMENT + "/train/metrics.csv"
# A run's best checkpoint, and its model package (nmtmodels.model_package: what raw text needs).
BEST_CHECKPOINT = EXPERIMENT + "/train/checkpoint_best.pt"
# The average of the run's last {last} numbered checkpoints (experiments.E.average_checkpoints).
AVERAGED_CHECKPOINT = EXPERIMENT + "/train/checkpoint_avg{last}.pt"
MODEL_PACKAGE = EXPERIMENT + "/model"
# The rule model_package's outputs: two files of the package, not the directory, which would get
# a .snakemake_timestamp from Snakemake (its time mark for a directory output).
MODEL_PACKAGE_CHECKPOINT = MODEL_PACKAGE + "/checkpoint.pt"
MODEL_PACKAGE_SETTINGS = MODEL_PACKAGE + "/preprocess.json"
# Parameter counts and training speed (workflow_scripts/analyses/model_info.py).
MODEL_INFO = EXPERIMENT + "/model_info.json"
# One decoded test set: the translation, its tokenised and detokenised post-processing, its scores.
TRANSLATION = EXPERIMENT + "/{test_set}.out"
TOKENIZED_HYPOTHESIS = EXPERIMENT + "/{test_set}.tok"
HYPOTHESIS = EXPERIMENT + "/{test_set}.hyp"
SCORES = EXPERIMENT + "/{test_set}.scores.json"
# The decoded ``test_set`` of a concatenation, and of a test set with swapped source words.
CONCATENATED_SET = "concat/{concatenation}"
NOISY_SET = "swap_noise/{test_set}.swap{percent}"
# The source OOV rate of a run on one test set (workflow_scripts/evaluation/oov.py).
OOV = EXPERIMENT + "/{test_set}.oov.json"
# A run against one of its baselines on a test set (or concatenation): significance tests.
SIGNIFICANCE = EXPERIMENT + "/significance/{test_set}.vs.{baseline}.json"

# ----------------------------------------------------------------------------- ESC compressors
COMPRESSION_SET = COMPRESSION_SETS_ROOT + "/{compression_set}.jsonl"
COMPRESSOR = COMPRESSION_ROOT + "/{compressor}/{corpus}"
# Training pairs: denoising (unsupervised) of a corpus split, or supervised from the compression
# sets (part train, dev, or eval with the references of the quality scores).
DENOISE_SOURCE = COMPRESSOR + "/denoise/{split}.src"
DENOISE_TARGET = COMPRESSOR + "/denoise/{split}.tgt"
SUPERVISED_SOURCE = COMPRESSOR + "/supervised/{part}.src"
SUPERVISED_TARGET = COMPRESSOR + "/supervised/{part}.tgt"
COMPRESSION_REFERENCES = COMPRESSOR + "/supervised/eval.refs.jsonl"
COMPRESSOR_YAML = COMPRESSOR + "/experiment.yaml"
COMPRESSOR_CHECKPOINT = COMPRESSOR + "/train/checkpoint_best.pt"
COMPRESSOR_METRICS = COMPRESSOR + "/train/metrics.csv"
# The compressed source of a split (``compression_eval``: the supervised eval set's source).
COMPRESSED = COMPRESSOR + "/compressed/{split}.txt"
COMPRESSION_SCORES = COMPRESSOR + "/compression_eval.scores.json"

# ----------------------------------------------------------------------------- report
RESULTS_TABLE = REPORT_ROOT + "/results.csv"
PAPER_TABLE_MARKDOWN = REPORT_ROOT + "/tables/{paper}.md"
PAPER_TABLE_LATEX = REPORT_ROOT + "/tables/{paper}.tex"
PAPER_TABLE_HTML = REPORT_ROOT + "/tables/{paper}.html"
LENGTH_TABLE = REPORT_ROOT + "/length/{corpus}/{test_set}.csv"
LENGTH_PLOT = REPORT_ROOT + "/length/{corpus}/{test_set}.png"
# A system against its baseline over all their runs (seeds) on one test set: the verdicts' statistics
# (workflow_scripts/evaluation/run_statistics.py).
RUN_STATISTICS = REPORT_ROOT + "/runs/{corpus}/{test_set}/{experiment}.vs.{baseline}.json"
SUMMARY_MARKDOWN = REPORT_ROOT + "/summary.md"
SUMMARY_JSON = REPORT_ROOT + "/summary.json"
LEARNING_CURVES = REPORT_ROOT + "/curves/{corpus}.png"
# The papers' analyses (workflow_scripts/analyses/, planned in workflow_scripts/dag/analyses.py).
ATTENTION_PLOT = REPORT_ROOT + "/attention/{experiment}/{corpus}.png"
ATTENTION_WEIGHTS = REPORT_ROOT + "/attention/{experiment}/{corpus}.json"
GATE_TABLE = REPORT_ROOT + "/graph/gates/{experiment}/{corpus}/{test_set}.csv"
GATE_PLOT = REPORT_ROOT + "/graph/gates/{experiment}/{corpus}/{test_set}.png"
LAYERS_TABLE = REPORT_ROOT + "/graph/layers/{corpus}/{test_set}.csv"
LAYERS_PLOT = REPORT_ROOT + "/graph/layers/{corpus}/{test_set}.png"
SWAP_NOISE_TABLE = REPORT_ROOT + "/swap_noise/{corpus}/{test_set}.csv"
SWAP_NOISE_MARKDOWN = REPORT_ROOT + "/swap_noise/{corpus}/{test_set}.md"
SWAP_NOISE_PLOT = REPORT_ROOT + "/swap_noise/{corpus}/{test_set}.png"

# ----------------------------------------------------------------------------- logs and benchmarks
# Each rule's jobs write LOGS_ROOT/STEM.log and BENCHMARKS_ROOT/STEM.tsv (:func:`log`,
# :func:`benchmark`): rule -> STEM, a directory (mostly the rule's name) and the wildcards of one job.
JOB_STEMS = {
    "fetch": "fetch/{corpus}/{download}",
    "extract": "extract/{corpus}/{split}.{lang}",
    "extract_reference": "extract/{corpus}/{split}.ref{ref}.{lang}",
    "preprocess": "preprocess/{corpus}/{split}.{src}-{tgt}",
    "preprocess_reference": "preprocess/{corpus}/{split}.ref{ref}.{src}-{tgt}",
    "segment": "segment/{corpus}/{segmenter}/{split}.{src}-{tgt}.{lang}",
    "learn_bpe": "learn_bpe/{corpus}/bpe{merges}.{src}-{tgt}",
    "apply_bpe": "apply_bpe/{corpus}/bpe{merges}/{split}.{src}-{tgt}.{lang}",
    "joint_vocab": "joint_vocab/{corpus}/bpe{merges}.{src}-{tgt}",
    "learn_spm": "learn_spm/{corpus}/spm{vocab_size}.{src}-{tgt}",
    "apply_spm": "apply_spm/{corpus}/spm{vocab_size}/{split}.{src}-{tgt}.{lang}",
    "joint_vocab_spm": "joint_vocab/{corpus}/spm{vocab_size}.{src}-{tgt}",
    "char_vocab": "char_vocab/{corpus}/{src}-{tgt}.{lang}",
    "char_encode": "char_encode/{corpus}/{split}.{src}-{tgt}.{lang}",
    "char_encode_train": "char_encode/{corpus}/train.{src}-{tgt}.{lang}",
    "char_filter_train": "char_filter/{corpus}/train.{src}-{tgt}",
    "lattice": "lattice/{corpus}/{lattice}/{split}.{src}-{tgt}",
    "lattice_inputs": "lattice_inputs/{corpus}/{lattice}/{split}.{src}-{tgt}",
    "lattice_vocab": "lattice_vocab/{corpus}/{lattice}/{src}-{tgt}",
    "experiment_config": "experiment_config/{experiment}/{corpus}",
    "train": "train/{experiment}/{corpus}",
    "model_package": "model_package/{experiment}/{corpus}",
    "average_checkpoints": "average_checkpoints/{experiment}/{corpus}.avg{last}",
    "fetch_compression_set": "fetch_compression_set/{compression_set}",
    "compression_denoise_pairs": "compression_denoise_pairs/{compressor}/{corpus}/{split}",
    "compression_supervised_pairs": "compression_supervised_pairs/{compressor}/{corpus}/{part}",
    "compression_eval_set": "compression_eval_set/{compressor}/{corpus}",
    "compressor_config": "compressor_config/{compressor}/{corpus}",
    "train_compressor": "train_compressor/{compressor}/{corpus}",
    "compress": "compress/{compressor}/{corpus}/{split}",
    "random_delete": "random_delete/{compressor}/{corpus}/{split}",
    "compression_quality": "compression_quality/{compressor}/{corpus}",
    "translate": "translate/{experiment}/{corpus}/{test_set}",
    "postprocess": "postprocess/{experiment}/{corpus}/{test_set}",
    "score": "score/{experiment}/{corpus}/{test_set}",
    "oov_rate": "oov/{experiment}/{corpus}/{test_set}",
    "concatenate_outputs": "concatenate_outputs/{experiment}/{corpus}/{concatenation}",
    "concatenate_references": "concatenate_references/{corpus}/{concatenation}.ref{ref}.{lang}",
    "concatenate_tokenized_references": "concatenate_references/{corpus}/{concatenation}.tok.{lang}",
    "concatenate_tokenized_extra_references": "concatenate_references/{corpus}/{concatenation}.tok.ref{ref}.{lang}",
    "score_concatenation": "score/{experiment}/{corpus}/concat/{concatenation}",
    "significance": "significance/{experiment}/{corpus}/{test_set}.vs.{baseline}",
    "run_statistics": "run_statistics/{corpus}/{test_set}/{experiment}.vs.{baseline}",
    "model_info": "model_info/{experiment}/{corpus}",
    "results_table": "report/results_table",
    "paper_tables": "report/paper_tables/{paper}",
    "length_analysis": "report/length/{corpus}/{test_set}",
    "results_summary": "report/results_summary",
    "learning_curves": "report/learning_curves/{corpus}",
    "attention_plot": "attention_plot/{experiment}/{corpus}",
    "graph_gate_weights": "graph_gate_weights/{experiment}/{corpus}/{test_set}",
    "graph_layers": "graph_layers/{corpus}/{test_set}",
    "swap_noise_source": "swap_noise/{corpus}/{test_set}.swap{percent}.{src}-{tgt}",
    "swap_noise_bpe": "apply_bpe/{corpus}/swap_noise/bpe{merges}/{test_set}.swap{percent}.{src}-{tgt}.{lang}",
    "translate_swap_noise": "translate/{experiment}/{corpus}/swap_noise/{test_set}.swap{percent}",
    "postprocess_swap_noise": "postprocess/{experiment}/{corpus}/swap_noise/{test_set}.swap{percent}",
    "score_swap_noise": "score/{experiment}/{corpus}/swap_noise/{test_set}.swap{percent}",
    "swap_noise_report": "report/swap_noise/{corpus}/{test_set}",
}


class _Wildcards(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def fill(template: str, **fields: Any) -> str:
    """``template`` with ``fields`` filled in; every other field stays a wildcard."""
    return template.format_map(_Wildcards(fields))


def log(rule: str) -> str:
    """The log of a job of ``rule`` (a pattern: its fields are the rule's wildcards)."""
    return f"{LOGS_ROOT}/{JOB_STEMS[rule]}.log"


def benchmark(rule: str) -> str:
    """The benchmark (time, memory) of a job of ``rule``."""
    return f"{BENCHMARKS_ROOT}/{JOB_STEMS[rule]}.tsv"


def sides(spec: dict[str, Any]) -> dict[str, str]:
    """``src`` and ``tgt`` of a corpus spec (the language pair of its file names)."""
    return {"src": spec["src"], "tgt": spec["tgt"]}


def encoded(**fields: Any) -> str:
    return fill(ENCODED, **fields)


def tokenized(**fields: Any) -> str:
    return fill(ENCODED, units=TOKENIZED_UNITS, **fields)


def normalized(**fields: Any) -> str:
    return fill(ENCODED, units=NORMALIZED_UNITS, **fields)


def vocab(**fields: Any) -> str:
    return fill(VOCAB, **fields)


def codes(**fields: Any) -> str:
    return fill(CODES, **fields)


def spm_model(**fields: Any) -> str:
    return fill(SPM_MODEL, **fields)


def download_path(corpus: str, download: str) -> str:
    return fill(DOWNLOAD, corpus=corpus, download=download)


def download_dir(corpus: str) -> str:
    """Where the downloads of a corpus lie (what extraction reads)."""
    return f"{DOWNLOADS_ROOT}/{corpus}"


def compression_set_path(compression_set: str) -> str:
    return fill(COMPRESSION_SET, compression_set=compression_set)


def experiment_dir(experiment: str, corpus: str) -> str:
    return fill(EXPERIMENT, experiment=experiment, corpus=corpus)


def oov_path(experiment: str, corpus: str, test_set: str) -> str:
    return fill(OOV, experiment=experiment, corpus=corpus, test_set=test_set)


def concatenated_set(concatenation: str) -> str:
    """The decoded ``test_set`` of a concatenation (``concat/N``)."""
    return fill(CONCATENATED_SET, concatenation=concatenation)


def noisy_set(test_set: str, percent: int | str) -> str:
    """The decoded ``test_set`` of a test set with ``percent``% swapped source words."""
    return fill(NOISY_SET, test_set=test_set, percent=percent)
