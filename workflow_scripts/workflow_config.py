"""Config checks and target lists for the Snakefile (pure functions, tested).

The JSON schema (schemas/config.schema.yaml) checks keys and types; this module checks
what a schema cannot: cross-references between keys.  Every error names the key path.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable

from workflow_scripts import corpora as corpus_specs

DATA_ROOT = "results/data"


class WorkflowConfigError(ValueError):
    """The configuration is inconsistent; the message names the key."""


def check_config(config: dict[str, Any]) -> None:
    """Raise WorkflowConfigError on cross-reference mistakes the schema cannot see."""
    registry = config.get("corpora", {})
    for i, name in enumerate(config.get("active_corpora", [])):
        if name not in registry:
            raise WorkflowConfigError(
                f"active_corpora[{i}]: unknown corpus '{name}' (defined: {', '.join(sorted(registry)) or 'none'})"
            )
    for i, name in enumerate(config.get("active_experiments") or []):
        if name not in config.get("experiments", {}):
            raise WorkflowConfigError(
                f"active_experiments[{i}]: unknown experiment '{name}' (defined: {', '.join(sorted(config.get('experiments', {}))) or 'none'})"
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


def extraction_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The part of a corpus spec that extraction depends on (kept small so that
    changing, say, a BPE size does not re-trigger extraction)."""
    return {key: spec[key] for key in ("src", "tgt", "downloads", "splits", "holdout", "max_train_pairs") if key in spec}


def preprocessing_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The part of a corpus spec that normalisation/tokenisation/cleaning depends on."""
    return {key: spec[key] for key in ("src", "tgt", "preprocess", "clean", "dedupe", "lowercase") if key in spec}


def corpus_dir(corpus: str) -> str:
    return f"{DATA_ROOT}/{corpus}"


def data_targets(config: dict[str, Any]) -> list[str]:
    """Every file of the data half of the DAG for the active corpora."""
    targets: list[str] = []
    for corpus in config["active_corpora"]:
        spec = config["corpora"][corpus]
        src, tgt = spec["src"], spec["tgt"]
        pair = f"{src}-{tgt}"
        root = corpus_dir(corpus)
        splits = corpus_specs.splits_of(spec)
        for split in splits:
            for lang in (src, tgt):
                targets.append(f"{root}/tok/{split}.{pair}.{lang}")
                for merges in spec["bpe"]["merges"]:
                    targets.append(f"{root}/bpe{merges}/{split}.{pair}.{lang}")
                targets.append(f"{root}/char/{split}.{pair}.{lang}")
                for segmenter in spec["preprocess"][lang].get("lattice_segmenters", []):
                    targets.append(f"{root}/seg/{segmenter}/{split}.{pair}.{lang}")
    return targets


# ----------------------------------------------------------------------------- models
EXPERIMENTS_ROOT = "results/experiments"


def experiment_settings(config: dict[str, Any], experiment: str) -> dict[str, Any]:
    """The resolved ``model``/``train``/``decode`` sections of one experiment (defaults + overrides)."""
    spec = config["experiments"][experiment]
    return {
        "model": {"family": spec["family"], **spec.get("model", {})},
        "train": {**config["training"], **spec.get("train", {})},
        "decode": {**config["decoding"], **spec.get("decode", {})},
    }


def check_experiments(config: dict[str, Any]) -> None:
    """Check every experiment's family and sections with nmtmodels' own config classes, and
    that each active run's BPE size is prepared for its corpus (errors name the key)."""
    from nmtmodels.registry import model_families

    families = model_families()
    runs = set(experiment_runs(config))
    for name, spec in config.get("experiments", {}).items():
        where = f"experiments.{name}"
        if spec["family"] not in families:
            raise WorkflowConfigError(f"{where}.family: unknown model family '{spec['family']}' (known: {', '.join(families)})")
        for i, corpus in enumerate(spec["corpora"]):
            if corpus not in config["corpora"]:
                raise WorkflowConfigError(f"{where}.corpora[{i}]: unknown corpus '{corpus}'")
            # The BPE size must be prepared for the runs `all` makes; an inactive experiment
            # (or corpus) may name a size the current corpus settings leave out.
            subwords = spec["subwords"]
            if (name, corpus) in runs and subwords.startswith("bpe") and int(subwords[3:]) not in config["corpora"][corpus]["bpe"]["merges"]:
                raise WorkflowConfigError(
                    f"{where}.subwords: {subwords} is not among corpora.{corpus}.bpe.merges "
                    f"{config['corpora'][corpus]['bpe']['merges']}"
                )
        check_run_sections(experiment_settings(config, name), where)
    check_shared_embeddings(config)
    check_fair_comparisons(config)


# Keys of the resolved model config that are the method itself (the family and its options).
METHOD_KEYS = ("model.family", "model.options")


def baselines_of(config: dict[str, Any], experiment: str) -> list[str]:
    """The experiment's baselines (``baseline``: a name or a list of names; none by default)."""
    value = config["experiments"][experiment].get("baseline")
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def comparable_settings(config: dict[str, Any], experiment: str) -> dict[str, Any]:
    """Everything a compared system must share with its baseline, as dotted keys: the resolved
    model (preset expanded, defaults filled in; without the family and its options), training
    and decoding settings, and the subword units."""
    from nmtmodels.config import ModelConfig, from_dict
    from nmtmodels.search import DecodeConfig
    from nmtmodels.train import TrainConfig

    settings = experiment_settings(config, experiment)
    sections = {
        "model": ModelConfig.from_dict(settings["model"]).to_dict(),
        "train": dataclasses.asdict(from_dict(TrainConfig, settings["train"], where="train")),
        "decode": dataclasses.asdict(from_dict(DecodeConfig, settings["decode"], where="decode")),
    }
    flat = {f"{section}.{key}": value for section, values in sections.items() for key, value in values.items()}
    flat["subwords"] = config["experiments"][experiment]["subwords"]
    return {key: value for key, value in flat.items() if key not in METHOD_KEYS}


def check_fair_comparisons(config: dict[str, Any]) -> None:
    """Each system differs from each of its baselines only by the method: equal resolved
    :func:`comparable_settings` (shape, norm placement, embedding sharing, subwords, training
    settings and budget, decoding), apart from the keys it lists in ``differs_from_baseline``
    (``{dotted key: reason}``, e.g. the encoder layers of a layer sweep).  Checked for the
    systems that `all` trains (:func:`experiment_runs`)."""
    settings: dict[str, dict[str, Any]] = {}
    running = {name for name, _ in experiment_runs(config)}
    for name, spec in config.get("experiments", {}).items():
        if name not in running:  # e.g. the embedded default's systems under configs/full.yaml
            continue
        allowed = spec.get("differs_from_baseline") or {}
        for i, baseline in enumerate(baselines_of(config, name)):
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
        for key in allowed:
            if key not in comparable_settings(config, name):
                raise WorkflowConfigError(f"experiments.{name}.differs_from_baseline: '{key}' is not a compared setting "
                                          "(model.*, train.*, decode.* or subwords)")


def check_run_sections(settings: dict[str, Any], where: str) -> None:
    """Check resolved ``model``/``train``/``decode`` sections with nmtmodels' own config classes."""
    from nmtmodels.config import ConfigError, ModelConfig, from_dict
    from nmtmodels.registry import validate_model_config
    from nmtmodels.search import DecodeConfig
    from nmtmodels.train import TrainConfig

    try:
        validate_model_config(ModelConfig.from_dict(settings["model"], where=f"{where}.model"), f"{where}.model")
        from_dict(TrainConfig, settings["train"], where=f"{where}.train (training)")
        from_dict(DecodeConfig, settings["decode"], where=f"{where}.decode (decoding)")
    except ConfigError as exc:
        raise WorkflowConfigError(str(exc)) from None


def experiment_dir(experiment: str, corpus: str) -> str:
    return f"{EXPERIMENTS_ROOT}/{experiment}/{corpus}"


def experiment_runs(config: dict[str, Any]) -> list[tuple[str, str]]:
    """(experiment, corpus) pairs that `all` trains, in config order: each active experiment
    (``active_experiments``; all experiments when the key is absent) on its active corpora."""
    active = set(config["active_corpora"])
    chosen = config.get("active_experiments")
    return [
        (name, corpus)
        for name, spec in config.get("experiments", {}).items()
        if chosen is None or name in chosen
        for corpus in spec["corpora"]
        if corpus in active
    ]


# ----------------------------------------------------------------------------- family inputs
@dataclass(frozen=True)
class SourceInputs:
    """What a model reads on the source side of one split.

    ``source``: the encoded source file; ``vocab``: its vocabulary; ``extras``: integer
    inputs (``nmt-train --extra NAME=...``, one line per sentence); ``extra_tokens``:
    token inputs numericalised with the source vocabulary (``--extra-tokens``).
    """

    source: str
    vocab: str
    extras: dict[str, str] = field(default_factory=dict)
    extra_tokens: dict[str, str] = field(default_factory=dict)


def subword_source(config: dict[str, Any], experiment: str, corpus: str, split: str) -> SourceInputs:
    """The experiment's subword units (``subwords: bpeN`` or ``char``), no extra inputs."""
    spec = config["corpora"][corpus]
    pair = f"{spec['src']}-{spec['tgt']}"
    root = f"{corpus_dir(corpus)}/{config['experiments'][experiment]['subwords']}"
    return SourceInputs(source=f"{root}/{split}.{pair}.{spec['src']}", vocab=f"{root}/vocab.{pair}.{spec['src']}")


# Model families whose source side is not the plain subword file, or that need extra
# inputs: family name -> provider (config, experiment, corpus, split) -> SourceInputs.
SOURCE_PROVIDERS: dict[str, Callable[[dict[str, Any], str, str, str], SourceInputs]] = {}


# ----------------------------------------------------------------------------- ESC compression
# Explicit sentence compression (rules/compress.smk): a compressor (a Transformer trained
# through nmt-train, denoising or supervised) rewrites the source side of every split of a
# corpus; the ESC families read that "backbone" as the extra token input ``compressed``.
COMPRESSION_ROOT = "results/compression"
ESC_FAMILIES = ("bsfnmt", "btfnmt", "bbfnmt")


def compressor_dir(compressor: str, corpus: str) -> str:
    return f"{COMPRESSION_ROOT}/{compressor}/{corpus}"


def compressor_spec(config: dict[str, Any], compressor: str) -> dict[str, Any]:
    return config["compression"]["compressors"][compressor]


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
    pair, src = f"{corpus_spec['src']}-{corpus_spec['tgt']}", corpus_spec["src"]
    root = compressor_dir(compressor, corpus)
    data = "denoise" if spec["kind"] == "unsupervised" else "supervised"
    vocab = f"{corpus_dir(corpus)}/{spec['subwords']}/vocab.{pair}.{src}"
    inputs = {"train_src": f"{root}/{data}/train.src", "train_tgt": f"{root}/{data}/train.tgt",
              "valid_src": f"{root}/{data}/dev.src", "valid_tgt": f"{root}/{data}/dev.tgt", "vocab": vocab}
    if spec.get("init_from"):
        inputs["init"] = f"{compressor_dir(spec['init_from'], corpus)}/train/checkpoint_best.pt"
    return inputs


def compressor_bpe_files(config: dict[str, Any], compressor: str, corpus: str) -> dict[str, str]:
    """BPE codes and vocabulary of the corpus' source side at the compressor's subwords."""
    spec = config["corpora"][corpus]
    root = f"{corpus_dir(corpus)}/{compressor_spec(config, compressor)['subwords']}"
    pair, src = f"{spec['src']}-{spec['tgt']}", spec["src"]
    return {"codes": f"{root}/codes.{pair}.{src}", "vocab": f"{root}/vocab.{pair}.{src}"}


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
        return f"{compressor_dir(compressor, corpus)}/supervised/eval.src"
    spec = config["corpora"][corpus]
    subwords = compressor_spec(config, compressor)["subwords"]
    return f"{corpus_dir(corpus)}/{subwords}/{split}.{spec['src']}-{spec['tgt']}.{spec['src']}"


def compressor_decode_flags(config: dict[str, Any], compressor: str) -> str:
    """nmt-translate options of a compressor's length-controlled search (ESC eq. 1-3):
    beam, alpha (``length_penalty``), beta (``coverage_penalty``), gamma (``max_len_ratio``)."""
    from nmtmodels.config import from_dict
    from nmtmodels.search import DecodeConfig

    decode = from_dict(DecodeConfig, compressor_settings(config, compressor)["decode"], where="decode")
    flags = [f"--beam {decode.beam}", f"--lenpen {decode.length_penalty}", f"--coverage-penalty {decode.coverage_penalty}",
             f"--max-len-a {decode.max_len_a}", f"--max-len-b {decode.max_len_b}", f"--min-len {decode.min_len}"]
    if decode.max_len_ratio is not None:
        flags.append(f"--max-len-ratio {decode.max_len_ratio}")
    flags.append(f"--batch-tokens {compressor_spec(config, compressor).get('batch_tokens', 4096)}")
    return " ".join(flags)


def compressed_path(compressor: str, corpus: str, split: str) -> str:
    return f"{compressor_dir(compressor, corpus)}/compressed/{split}.txt"


def esc_source(config: dict[str, Any], experiment: str, corpus: str, split: str) -> SourceInputs:
    """Subword source plus its compression by the experiment's ``compressor`` (``compressed``)."""
    plain = subword_source(config, experiment, corpus, split)
    compressor = config["experiments"][experiment]["compressor"]
    return SourceInputs(plain.source, plain.vocab, extra_tokens={"compressed": compressed_path(compressor, corpus, split)})


def compression_targets(config: dict[str, Any]) -> list[str]:
    """Compression quality (token F1, ratio) of every compressor an active ESC experiment uses."""
    return sorted({f"{compressor_dir(config['experiments'][e]['compressor'], c)}/compression_eval.scores.json"
                   for e, c in experiment_runs(config) if config["experiments"][e].get("compressor")})


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
        check_run_sections(compressor_settings(config, name), where)
    for name, spec in config.get("experiments", {}).items():
        where = f"experiments.{name}"
        if spec["family"] in ESC_FAMILIES and not spec.get("compressor"):
            raise WorkflowConfigError(f"{where}.compressor: family '{spec['family']}' needs a compressor (a key of compression.compressors)")
        if spec.get("compressor") is None:
            continue
        if spec["family"] not in ESC_FAMILIES:
            raise WorkflowConfigError(f"{where}.compressor: only the ESC families ({', '.join(ESC_FAMILIES)}) read a compressor")
        if spec["compressor"] not in compressors:
            raise WorkflowConfigError(f"{where}.compressor: unknown compressor '{spec['compressor']}' "
                                      f"(defined: {', '.join(sorted(compressors)) or 'none'})")
        if compressors[spec["compressor"]]["subwords"] != spec["subwords"]:
            raise WorkflowConfigError(f"{where}.subwords: must equal compression.compressors.{spec['compressor']}.subwords "
                                      f"({compressors[spec['compressor']]['subwords']}): both share the source vocabulary")


SOURCE_PROVIDERS.update({family: esc_source for family in ESC_FAMILIES})


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


def model_inputs(config: dict[str, Any], experiment: str, corpus: str) -> dict[str, str | list[str]]:
    """Training/validation files and vocabularies of one run, by role (extra inputs as
    ``extra_<name>_train`` / ``extra_<name>_valid``; ``valid_ref``: every raw dev reference)."""
    spec = config["corpora"][corpus]
    src, tgt = spec["src"], spec["tgt"]
    pair = f"{src}-{tgt}"
    subwords = config["experiments"][experiment]["subwords"]
    root = f"{corpus_dir(corpus)}/{subwords}"
    train, valid = (source_inputs(config, experiment, corpus, split) for split in ("train", "dev"))
    src_vocab, tgt_vocab = train.vocab, f"{root}/vocab.{pair}.{tgt}"
    if shares_embeddings(config, experiment):  # one table for both sides: fairseq's joined dictionary
        src_vocab = tgt_vocab = joint_vocab_path(config, experiment, corpus)
    inputs = {
        "train_src": train.source,
        "train_tgt": f"{root}/train.{pair}.{tgt}",
        "valid_src": valid.source,
        "valid_tgt": f"{root}/dev.{pair}.{tgt}",
        "valid_ref": reference_paths(config, corpus, "dev"),
        "src_vocab": src_vocab,
        "tgt_vocab": tgt_vocab,
    }
    for role, files in (("train", train), ("valid", valid)):
        for name, path in {**files.extras, **files.extra_tokens}.items():
            inputs[f"extra_{name}_{role}"] = path
    return inputs


def shares_embeddings(config: dict[str, Any], experiment: str) -> bool:
    """Whether the experiment's resolved model (preset + overrides) shares one token table
    between source and target (``model.share_embeddings``)."""
    import dataclasses

    from nmtmodels.config import ModelConfig

    # The key alone, not a full parse: a family registered later (a plug-in) may not be known yet.
    default = next(f.default for f in dataclasses.fields(ModelConfig) if f.name == "share_embeddings")
    return bool(experiment_settings(config, experiment)["model"].get("share_embeddings", default))


def joint_vocab_path(config: dict[str, Any], experiment: str, corpus: str) -> str:
    """The joint vocabulary of both sides' encoded training text at the experiment's BPE size
    (rule ``joint_vocab``), read by models that share embeddings."""
    spec = config["corpora"][corpus]
    return f"{corpus_dir(corpus)}/{config['experiments'][experiment]['subwords']}/vocab.{spec['src']}-{spec['tgt']}.joint"


def check_shared_embeddings(config: dict[str, Any]) -> None:
    """An experiment that shares embeddings reads one joint vocabulary, so it needs subwords
    learnt jointly over both languages (``corpora.C.bpe.joint``) as its only source input:
    not characters (one vocabulary per language) and not a lattice (edge vocabulary)."""
    for name, spec in config.get("experiments", {}).items():
        if not shares_embeddings(config, name):
            continue
        where = f"experiments.{name}.model.share_embeddings"
        if not spec["subwords"].startswith("bpe"):
            raise WorkflowConfigError(f"{where}: needs one joint vocabulary, but subwords '{spec['subwords']}' has one per language")
        if spec.get("lattice"):
            raise WorkflowConfigError(f"{where}: needs one joint vocabulary, but the source is a lattice with its own edge vocabulary")
        for corpus in spec["corpora"]:
            if corpus in config["corpora"] and not config["corpora"][corpus]["bpe"].get("joint", True):
                raise WorkflowConfigError(
                    f"{where}: needs one joint vocabulary, but corpora.{corpus}.bpe.joint is false (separate BPE per language)"
                )


def extra_input_flags(config: dict[str, Any], experiment: str, corpus: str, splits: tuple[str, ...]) -> str:
    """``--extra NAME=F1:F2 --extra-tokens NAME=...`` for the files of ``splits`` (train
    and dev for nmt-train, one test set for nmt-translate); empty for plain families."""
    per_split = [source_inputs(config, experiment, corpus, split) for split in splits]
    flags = []
    for flag, kind in (("--extra", "extras"), ("--extra-tokens", "extra_tokens")):
        for name in getattr(per_split[0], kind):
            paths = ":".join(getattr(files, kind)[name] for files in per_split)
            flags.append(f"{flag} {shlex.quote(f'{name}={paths}')}")
    return " ".join(flags)


def model_targets(config: dict[str, Any]) -> list[str]:
    """The score files of every (experiment, corpus, test set) that `all` produces."""
    targets = []
    for experiment, corpus in experiment_runs(config):
        for test_set in config["corpora"][corpus]["test_sets"]:
            targets.append(f"{experiment_dir(experiment, corpus)}/{test_set}.scores.json")
    return targets


# ----------------------------------------------------------------------------- rule inputs
def input_dirs(config: dict[str, Any], environ: dict[str, str]) -> tuple[str, str]:
    """(data mirror, licensed-data directory): the config keys, else NMT_DATA_MIRROR / NMT_LICENSED_DATA."""
    mirror = config.get("data_mirror") or environ.get("NMT_DATA_MIRROR", "")
    licensed = config.get("licensed_data_dir") or environ.get("NMT_LICENSED_DATA", "")
    return mirror, licensed


def python_path_with(directory: str, environ: dict[str, str]) -> str:
    """PYTHONPATH with the repository first, so jobs run the project's modules from any environment."""
    return os.pathsep.join(p for p in (directory, environ.get("PYTHONPATH", "")) if p)


def corpus_spec_json(config: dict[str, Any], corpus: str, part: Callable[[dict], dict]) -> str:
    """The part of a corpus spec a rule depends on, as canonical JSON (a rule param)."""
    return json.dumps(part(config["corpora"][corpus]), sort_keys=True)


def download_paths(config: dict[str, Any], corpus: str, split: str, lang: str) -> list[str]:
    names = corpus_specs.downloads_for(config["corpora"][corpus], split, lang)
    return [f"resources/downloads/{corpus}/{name}" for name in names]


def is_char_level(config: dict[str, Any], experiment: str) -> bool:
    return config["experiments"][experiment]["subwords"] == "char"


def test_source(config: dict[str, Any], experiment: str, corpus: str, test_set: str) -> str:
    """The encoded source side of a test set, in the experiment's input units."""
    return source_inputs(config, experiment, corpus, test_set).source


def test_extra_inputs(config: dict[str, Any], experiment: str, corpus: str, test_set: str) -> list[str]:
    """The family's extra input files of a test set (inputs of the translate rule)."""
    files = source_inputs(config, experiment, corpus, test_set)
    return [*files.extras.values(), *files.extra_tokens.values()]


def reference_paths(config: dict[str, Any], corpus: str, test_set: str) -> list[str]:
    """Raw (untokenised) references of a test set: reference 0, then ref1, ref2, ..."""
    spec = config["corpora"][corpus]
    tgt = spec["tgt"]
    count = corpus_specs.reference_count(spec, test_set, tgt)
    raw = f"{corpus_dir(corpus)}/raw/{test_set}"
    return [f"{raw}.{tgt}"] + [f"{raw}.ref{k}.{tgt}" for k in range(1, count)]


def tokenized_references(config: dict[str, Any], corpus: str, test_set: str) -> list[str]:
    """Tokenised references of a test set (for multi-bleu style BLEU), in :func:`reference_paths`
    order: reference 0 from rule preprocess, ref1, ref2, ... from preprocess_reference (same tokeniser)."""
    spec = config["corpora"][corpus]
    src, tgt = spec["src"], spec["tgt"]
    count = corpus_specs.reference_count(spec, test_set, tgt)
    tok = f"{corpus_dir(corpus)}/tok/{test_set}"
    return [f"{tok}.{src}-{tgt}.{tgt}"] + [f"{tok}.ref{k}.{src}-{tgt}.{tgt}" for k in range(1, count)]


def input_dir_environment(config: dict[str, Any], environ: dict[str, str]) -> dict[str, str]:
    """NMT_DATA_MIRROR / NMT_LICENSED_DATA as :func:`input_dirs` resolves them, for the
    environment of the fetch jobs: where data lies is no rule parameter, so moving it reruns nothing."""
    mirror, licensed = input_dirs(config, environ)
    return {"NMT_DATA_MIRROR": mirror, "NMT_LICENSED_DATA": licensed}


def download_path(corpus: str, download: str) -> str:
    return f"resources/downloads/{corpus}/{download}"


def split_extraction_spec_json(config: dict[str, Any], corpus: str, split: str) -> str:
    """What extracting one split reads (:func:`corpora.extraction_part`), as canonical JSON:
    a new test set or download of the corpus leaves the other splits' parameter unchanged."""
    return json.dumps(corpus_specs.extraction_part(config["corpora"][corpus], split, where=f"corpora.{corpus}"), sort_keys=True)


def split_preprocessing_spec_json(config: dict[str, Any], corpus: str, split: str) -> str:
    """:func:`preprocessing_spec` as canonical JSON, with ``blank_references`` for a dev or
    test split when it is not the default ``warn`` (so the default changes no parameter)."""
    spec = preprocessing_spec(config["corpora"][corpus])
    if split != "train" and config.get("blank_references", "warn") != "warn":
        spec["blank_references"] = config["blank_references"]
    return json.dumps(spec, sort_keys=True)


def check_licensed_inputs(config: dict[str, Any], environ: dict[str, str]) -> None:
    """Every licensed file (``local`` of a download) that the active corpora still need is
    there: else one error listing each missing file (off with ``require_licensed_data: false``)."""
    from workflow_scripts.fetch import missing_licensed

    if not config.get("require_licensed_data", True):
        return
    downloads = []
    for corpus in config["active_corpora"]:
        spec = config["corpora"][corpus]
        names = {name for split in corpus_specs.splits_of(spec) for lang in (spec["src"], spec["tgt"])
                 for name in corpus_specs.downloads_for(spec, split, lang)}
        downloads += [(f"corpora.{corpus}.downloads.{name}", spec["downloads"][name], download_path(corpus, name))
                      for name in sorted(names)]
    mirror, licensed = input_dirs(config, environ)
    message = missing_licensed(downloads, mirror_dir=mirror, licensed_dir=licensed)
    if message:
        raise WorkflowConfigError(message)


# ----------------------------------------------------------------------------- cluster
def cluster_resources(config: dict[str, Any], gpus: int = 0) -> dict[str, Any]:
    """Snakemake resources placing a job that uses ``gpus`` GPUs under the SLURM profile:
    ``gpu`` (sbatch --gpus) and ``gpu_model`` for GPU jobs, ``slurm_partition`` (config
    ``cluster.gpu_partition`` for GPU jobs, else ``cluster.cpu_partition``) and
    ``slurm_account``.  Empty settings are left out, so SLURM's defaults apply."""
    cluster = config.get("cluster") or {}
    resources: dict[str, Any] = {"gpu": gpus} if gpus > 0 else {}
    if gpus > 0 and cluster.get("gpu_model"):
        resources["gpu_model"] = cluster["gpu_model"]
    partition = cluster.get("gpu_partition" if gpus > 0 else "cpu_partition")
    if partition:
        resources["slurm_partition"] = partition
    if cluster.get("account"):
        resources["slurm_account"] = cluster["account"]
    return resources


def train_launcher(config: dict[str, Any]) -> str:
    """What runs ``-m nmtmodels.cli train``: torchrun with one process per GPU when
    ``train_resources.gpus > 1`` (one node, one job), else python."""
    gpus = config["train_resources"].get("gpus", 0)
    return f"torchrun --standalone --nproc_per_node={gpus}" if gpus > 1 else "python"


def threads_per_process(config: dict[str, Any], threads: int) -> int:
    """CPU threads of each training process: the job's threads shared by its torchrun processes."""
    return max(1, threads // max(1, config["train_resources"].get("gpus", 0)))


# ----------------------------------------------------------------------------- lattices
# Lattice-based Transformer (rules/lattice.smk, workflow_scripts/lattice.py): an experiment's
# ``lattice`` lists the segmentations of the corpus' source side that one lattice packs:
# Chinese segmenters (``seg/S/``, from preprocess.SRC.lattice_segmenters) or BPE sizes
# (``bpeN``).  The lattice of ``[a, b, c]`` lives in results/data/C/lattice/a+b+c/; with one
# segmentation it is that segmentation itself (the 1-best inputs of the paper's tables).
LATTICE_FAMILIES = ("lattice_transformer",)


def is_bpe(segmentation: str) -> bool:
    return segmentation[:3] == "bpe" and segmentation[3:].isdigit()


def lattice_name(segmentations: list[str]) -> str:
    return "+".join(segmentations)


def lattice_dir(config: dict[str, Any], experiment: str, corpus: str) -> str:
    return f"{corpus_dir(corpus)}/lattice/{lattice_name(config['experiments'][experiment]['lattice'])}"


def lattice_source(config: dict[str, Any], experiment: str, corpus: str, split: str) -> SourceInputs:
    """Edge tokens and vocabulary of the experiment's lattice; a lattice family also reads
    the edges' ``starts`` and ``ends`` (``--extra``)."""
    spec = config["corpora"][corpus]
    pair, root = f"{spec['src']}-{spec['tgt']}", lattice_dir(config, experiment, corpus)
    extras = {}
    if config["experiments"][experiment]["family"] in LATTICE_FAMILIES:
        extras = {name: f"{root}/{split}.{pair}.{name}" for name in ("starts", "ends")}
    return SourceInputs(source=f"{root}/{split}.{pair}.{spec['src']}", vocab=f"{root}/vocab.{pair}.{spec['src']}", extras=extras)


def segmentation_paths(config: dict[str, Any], corpus: str, name: str, split: str) -> list[str]:
    """The source-side segmentation files packed into lattice ``name`` (``a+b+c``) of a split."""
    spec = config["corpora"][corpus]
    pair, src = f"{spec['src']}-{spec['tgt']}", spec["src"]
    return [f"{corpus_dir(corpus)}/{part if is_bpe(part) else f'seg/{part}'}/{split}.{pair}.{src}"
            for part in name.split("+")]


def check_lattices(config: dict[str, Any]) -> None:
    """A lattice family needs ``lattice``; every segmentation of an active run's lattice is
    prepared for its corpus (a BPE size of bpe.merges, or a lattice segmenter of the source)."""
    runs = set(experiment_runs(config))
    for name, spec in config.get("experiments", {}).items():
        where = f"experiments.{name}"
        if spec["family"] in LATTICE_FAMILIES and not spec.get("lattice"):
            raise WorkflowConfigError(f"{where}.lattice: family '{spec['family']}' needs the segmentations its lattice packs")
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

