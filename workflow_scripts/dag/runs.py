"""Experiments (rules/train.smk, decode.smk, evaluate.smk): each one's resolved settings, the
runs that `all` trains, what a compared system shares with its baseline, and the plain
subword source a run reads unless its family says otherwise (:mod:`.sources`)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.experiment import validate_sections
from nmtmodels.training.config import TrainConfig
from workflow_scripts.dag import WorkflowConfigError, paths


def experiment_settings(config: dict[str, Any], experiment: str) -> dict[str, Any]:
    """The resolved ``model``/``train``/``decode`` sections of one experiment (defaults + overrides)."""
    spec = config["experiments"][experiment]
    return {
        "model": {"family": spec["family"], **spec.get("model", {})},
        "train": {**config["training"], **spec.get("train", {})},
        "decode": {**config["decoding"], **spec.get("decode", {})},
    }


def is_active(config: dict[str, Any], name: str) -> bool:
    """Whether `all` trains experiment ``name``: in ``active_experiments`` (every experiment when
    the key is absent) and not in ``inactive_experiments`` (the embedded default's way to leave
    experiments defined for overlays, e.g. char2word, out of its own run)."""
    chosen = config.get("active_experiments")
    return (chosen is None or name in chosen) and name not in (config.get("inactive_experiments") or [])


def experiment_runs(config: dict[str, Any]) -> list[tuple[str, str]]:
    """(experiment, corpus) pairs that `all` trains, in config order: each active experiment
    (:func:`is_active`) on its active corpora."""
    active = set(config["active_corpora"])
    return [
        (name, corpus)
        for name, spec in config.get("experiments", {}).items()
        if is_active(config, name)
        for corpus in spec["corpora"]
        if corpus in active
    ]


def model_targets(config: dict[str, Any]) -> list[str]:
    """The score files of every (experiment, corpus, test set) that `all` produces."""
    targets = []
    for experiment, corpus in experiment_runs(config):
        for test_set in config["corpora"][corpus]["test_sets"]:
            targets.append(paths.fill(paths.SCORES, experiment=experiment, corpus=corpus, test_set=test_set))
    return targets


# The first words of the train log's line of a run that ended as diverged (nmt-train --on-divergence
# stop, which the Snakefile sets): nmtmodels.training.divergence.LINE_PREFIX + "training diverged:".
DIVERGED_LINE = "stopped: training diverged: "


def diverged_training_lines(config: dict[str, Any], root: str = ".") -> list[str]:
    """One line per training that ended as diverged, from the train logs below ``root``: the
    active runs', then every ESC compressor's (``train_compressor``), each naming the run
    (``train EXPERIMENT on CORPUS stopped: training diverged: ...``); the Snakefile repeats them
    on the console when a run ends, successfully or not."""
    logs = [(f"train {experiment} on {corpus}", Path(root, paths.fill(paths.log("train"), experiment=experiment, corpus=corpus)))
            for experiment, corpus in experiment_runs(config)]
    pattern = paths.fill(paths.log("train_compressor"), compressor="*", corpus="*")
    logs += [(f"train_compressor {path.parent.name} on {path.stem}", path) for path in sorted(Path(root).glob(pattern))]
    found = []
    for run, log in logs:
        if log.is_file():
            with open(log, encoding="utf-8", errors="replace") as handle:
                found += [f"{run} {line.strip()}" for line in handle if line.startswith(DIVERGED_LINE)]
    return found


def check_run_sections(settings: dict[str, Any], where: str) -> None:
    """Check resolved ``model``/``train``/``decode`` sections with nmtmodels' own config classes
    (:func:`nmtmodels.experiment.validate_sections`)."""
    try:
        validate_sections(settings, where, labels={"train": "train (training)", "decode": "decode (decoding)"})
    except ConfigError as exc:
        raise WorkflowConfigError(str(exc)) from None


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
    model, train, decode = validate_sections(experiment_settings(config, experiment))
    sections = {"model": model.to_dict(), "train": dataclasses.asdict(train), "decode": dataclasses.asdict(decode)}
    flat = {f"{section}.{key}": value for section, values in sections.items() for key, value in values.items()}
    flat["subwords"] = config["experiments"][experiment]["subwords"]
    flat["average_checkpoints"] = config["experiments"][experiment].get("average_checkpoints")
    return {key: value for key, value in flat.items() if key not in METHOD_KEYS}


def shares_embeddings(config: dict[str, Any], experiment: str) -> bool:
    """Whether the experiment's resolved model (preset + overrides) shares one token table
    between source and target (``model.share_embeddings``)."""
    # The key alone, not a full parse: a family registered later (a plug-in) may not be known yet.
    default = next(f.default for f in dataclasses.fields(ModelConfig) if f.name == "share_embeddings")
    return bool(experiment_settings(config, experiment)["model"].get("share_embeddings", default))


def decode_checkpoint(config: dict[str, Any], experiment: str, corpus: str) -> str:
    """The checkpoint a run decodes and packages: the average of its last N numbered
    checkpoints with ``average_checkpoints: N``, else its best checkpoint."""
    count = config["experiments"][experiment].get("average_checkpoints")
    template = paths.BEST_CHECKPOINT if count is None else paths.fill(paths.AVERAGED_CHECKPOINT, last=count)
    return paths.fill(template, experiment=experiment, corpus=corpus)


def check_averaging(config: dict[str, Any], experiment: str) -> None:
    """``average_checkpoints: N`` needs the trainer to keep N numbered checkpoints (``train.keep_last``)."""
    count = config["experiments"][experiment].get("average_checkpoints")
    default = next(f.default for f in dataclasses.fields(TrainConfig) if f.name == "keep_last")
    keep_last = experiment_settings(config, experiment)["train"].get("keep_last", default)
    if count is not None and keep_last != -1 and keep_last < count:
        raise WorkflowConfigError(f"experiments.{experiment}.average_checkpoints: averages the last {count} checkpoints "
                                  f"but train.keep_last keeps {keep_last} (set keep_last >= {count}, or -1)")


def is_char_level(config: dict[str, Any], experiment: str) -> bool:
    return config["experiments"][experiment]["subwords"] == "char"


def target_format(config: dict[str, Any], experiment: str) -> str:
    """How the experiment's target tokens are encoded (``nmt-train --tgt-format``): ``bpe``
    (subword-nmt), ``spm`` (SentencePiece) or ``char``."""
    subwords = config["experiments"][experiment]["subwords"]
    return "char" if subwords == "char" else subwords[:3]


def postprocess_flag(config: dict[str, Any], experiment: str) -> str:
    """The ``python -m nmtmodels.cli postprocess`` flag of the experiment's target units (none for BPE)."""
    return {"char": "--char-level", "spm": "--spm"}.get(target_format(config, experiment), "")


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
    """The experiment's subword units (``subwords: bpeN``, ``spmN`` or ``char``), no extra inputs."""
    spec = config["corpora"][corpus]
    where = {"corpus": corpus, "units": config["experiments"][experiment]["subwords"], **paths.sides(spec), "lang": spec["src"]}
    return SourceInputs(source=paths.encoded(split=split, **where), vocab=paths.vocab(**where))
