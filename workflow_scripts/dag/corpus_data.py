"""The data half of the DAG (rules/data.smk, preprocess.smk, subwords.smk): its targets, the
parts of a corpus spec each rule depends on (rule params), downloads and references."""
from __future__ import annotations

import glob
import json
import os
from collections.abc import Callable
from typing import Any

from nmtmodels.text.spm import SentencePieceSettings
from workflow_scripts.dag import paths
from workflow_scripts.data import corpus_spec as corpus_specs
from workflow_scripts.data.locations import LICENSED_ENV, MIRROR_ENV


def data_targets(config: dict[str, Any]) -> list[str]:
    """Every file of the data half of the DAG for the active corpora."""
    targets: list[str] = []
    for corpus in config["active_corpora"]:
        spec = config["corpora"][corpus]
        for split in corpus_specs.splits_of(spec):
            for lang in (spec["src"], spec["tgt"]):
                where = {"corpus": corpus, "split": split, **paths.sides(spec), "lang": lang}
                targets.append(paths.tokenized(**where))
                for merges in spec["bpe"]["merges"]:
                    targets.append(paths.encoded(units=f"bpe{merges}", **where))
                for size in spec.get("sentencepiece", {}).get("vocab_sizes", []):
                    targets.append(paths.encoded(units=f"spm{size}", **where))
                targets.append(paths.encoded(units="char", **where))
                for segmenter in spec["preprocess"][lang].get("lattice_segmenters", []):
                    targets.append(paths.encoded(units=f"seg/{segmenter}", **where))
    return targets


def preprocessing_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The part of a corpus spec that normalisation/tokenisation/cleaning depends on."""
    return {key: spec[key] for key in ("src", "tgt", "preprocess", "clean", "dedupe", "lowercase") if key in spec}


def sentencepiece_flags(config: dict[str, Any], corpus: str) -> str:
    """The training options of ``corpora.CORPUS.sentencepiece`` as flags of
    ``workflow_scripts.data.spm learn`` (rule ``learn_spm``; defaults filled in)."""
    settings = SentencePieceSettings.from_dict(config["corpora"][corpus]["sentencepiece"], where=f"corpora.{corpus}.sentencepiece")
    return (f"--model-type {settings.model_type} {'--joint' if settings.joint else '--separate'}"
            f" --character-coverage {settings.character_coverage!r} --input-sentence-size {settings.input_sentence_size}")


def corpus_spec_json(config: dict[str, Any], corpus: str, part: Callable[[dict], dict]) -> str:
    """The part of a corpus spec a rule depends on, as canonical JSON (a rule param)."""
    return json.dumps(part(config["corpora"][corpus]), sort_keys=True)


def split_extraction_spec_json(config: dict[str, Any], corpus: str, split: str) -> str:
    """What extracting one split reads (:func:`workflow_scripts.data.corpus_spec.extraction_part`), as canonical JSON:
    a new test set or download of the corpus leaves the other splits' parameter unchanged."""
    return json.dumps(corpus_specs.extraction_part(config["corpora"][corpus], split, where=f"corpora.{corpus}"), sort_keys=True)


def split_preprocessing_spec_json(config: dict[str, Any], corpus: str, split: str) -> str:
    """:func:`preprocessing_spec` as canonical JSON, with ``blank_references`` for a dev or
    test split when it is not the default ``warn`` (so the default changes no parameter)."""
    spec = preprocessing_spec(config["corpora"][corpus])
    if split != "train" and config.get("blank_references", "warn") != "warn":
        spec["blank_references"] = config["blank_references"]
    return json.dumps(spec, sort_keys=True)


def download_paths(config: dict[str, Any], corpus: str, split: str, lang: str) -> list[str]:
    names = corpus_specs.downloads_for(config["corpora"][corpus], split, lang)
    return [paths.download_path(corpus, name) for name in names]


def input_dirs(config: dict[str, Any], environ: dict[str, str]) -> tuple[str, str]:
    """(data mirror, licensed-data directory): the config keys, else NMT_DATA_MIRROR / NMT_LICENSED_DATA."""
    mirror = config.get("data_mirror") or environ.get(MIRROR_ENV, "")
    licensed = config.get("licensed_data_dir") or environ.get(LICENSED_ENV, "")
    return mirror, licensed


def input_dir_environment(config: dict[str, Any], environ: dict[str, str]) -> dict[str, str]:
    """NMT_DATA_MIRROR / NMT_LICENSED_DATA as :func:`input_dirs` resolves them, for the
    environment of the fetch jobs: where data lies is no rule parameter, so moving it reruns nothing."""
    mirror, licensed = input_dirs(config, environ)
    return {MIRROR_ENV: mirror, LICENSED_ENV: licensed}


def reference_paths(config: dict[str, Any], corpus: str, test_set: str) -> list[str]:
    """Raw (untokenised) references of a test set: reference 0, then ref1, ref2, ..."""
    spec = config["corpora"][corpus]
    tgt = spec["tgt"]
    count = corpus_specs.reference_count(spec, test_set, tgt)
    return [paths.fill(paths.RAW, corpus=corpus, split=test_set, lang=tgt)] + [
        paths.fill(paths.RAW_REFERENCE, corpus=corpus, split=test_set, ref=k, lang=tgt) for k in range(1, count)]


def tokenized_references(config: dict[str, Any], corpus: str, test_set: str) -> list[str]:
    """Tokenised references of a test set (for multi-bleu style BLEU), in :func:`reference_paths`
    order: reference 0 from rule preprocess, ref1, ref2, ... from preprocess_reference (same tokeniser)."""
    spec = config["corpora"][corpus]
    where = {"corpus": corpus, "split": test_set, **paths.sides(spec), "lang": spec["tgt"]}
    count = corpus_specs.reference_count(spec, test_set, spec["tgt"])
    return [paths.tokenized(**where)] + [paths.fill(paths.TOKENIZED_REFERENCE, ref=k, **where) for k in range(1, count)]


BLANK_WARNING = "(blank_references: warn)"
KEPT_WARNING = "; kept the previous download of "  # workflow_scripts.data.fetch's warning


def blank_reference_warnings(config: dict[str, Any], root: str = ".") -> list[str]:
    """The ``preprocess`` jobs' warnings about blank dev or test lines that ``blank_references:
    warn`` kept, for the active corpora, from their logs below ``root`` (the Snakefile repeats
    them on the console when a run ends)."""
    patterns = []
    for corpus in config["active_corpora"]:
        spec = config["corpora"][corpus]
        for rule in ("preprocess", "preprocess_reference"):
            pattern = paths.log(rule).replace("{corpus}", corpus).replace("{src}", spec["src"]).replace("{tgt}", spec["tgt"])
            patterns.append(pattern.replace("{split}", "*").replace("{ref}", "*"))
    return _logged(patterns, BLANK_WARNING, root)


def kept_download_warnings(config: dict[str, Any], root: str = ".") -> list[str]:
    """The ``fetch`` jobs' warnings that fetching a download again failed (a sha256 mismatch, a
    damaged archive, a missing mirror copy and an unreachable URL) and its kept copy was put
    back, for the active corpora, from their logs below ``root`` (the Snakefile repeats them on
    the console when a run ends, on every run until that fetch runs again and its log says otherwise)."""
    patterns = [paths.log("fetch").replace("{corpus}", corpus).replace("{download}", "*") for corpus in config["active_corpora"]]
    return _logged(patterns, KEPT_WARNING, root)


def _logged(patterns: list[str], marker: str, root: str) -> list[str]:
    """The lines holding ``marker`` of the logs that the glob ``patterns`` find below ``root``."""
    found = []
    for log in sorted({log for pattern in patterns for log in glob.glob(os.path.join(root, pattern))}):
        with open(log, encoding="utf-8", errors="replace") as handle:
            found += [line.strip() for line in handle if marker in line]
    return found
