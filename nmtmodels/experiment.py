"""The experiment config of one run: the ``model``, ``train`` and ``decode`` sections of an
experiment YAML (``nmt-train --config``), ``--set`` overrides, and their validation with the
package's config classes; and the extra inputs (``--extra NAME=FILE``) a model family reads
beside the source.  ``nmt-train``, ``nmt-translate`` and the workflow's start-up checks
(:func:`validate_sections`) all read experiments through this module."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import yaml

from nmtmodels.config import ConfigError, ModelConfig, from_dict, load_yaml, parse_yaml_value
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.training.config import TrainConfig

if TYPE_CHECKING:
    import torch

SECTIONS = ("model", "train", "decode")


def apply_overrides(config: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Apply ``section.key[.sub]=value`` overrides (values parsed as YAML scalars/lists,
    where ``1e9`` and ``1e-3`` are floats: :func:`nmtmodels.config.parse_yaml_value`)."""
    for item in overrides:
        key, sep, text = item.partition("=")
        path = key.strip().split(".")
        if not sep or len(path) < 2 or not all(path):
            raise ConfigError(f"--set {item!r}: expected SECTION.KEY=VALUE, e.g. train.lr=0.001")
        if path[0] not in SECTIONS:
            raise ConfigError(f"--set {item!r}: unknown section {path[0]!r} (known: {', '.join(SECTIONS)})")
        try:
            value = parse_yaml_value(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {item!r}: value is not valid YAML ({exc})") from None
        node = config
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"--set {item!r}: {part} is not a mapping")
            node = child
        node[path[-1]] = value
    return config


def validate_sections(sections: Mapping[str, Any], where: str = "",
                      labels: Mapping[str, str] | None = None) -> tuple[ModelConfig, TrainConfig, DecodeConfig]:
    """(ModelConfig, TrainConfig, DecodeConfig) of resolved ``model``/``train``/``decode``
    sections (a missing or None section: the defaults).  A ConfigError names the key as
    ``WHERE.SECTION.KEY`` (``SECTION.KEY`` without ``where``), where ``labels`` may give a
    section a longer name, e.g. ``{"train": "train (training)"}``."""
    from nmtmodels.registry import validate_model_config  # lazy: it imports the families, so torch; --help and planning do not

    def label(section: str) -> str:
        name = (labels or {}).get(section, section)
        return f"{where}.{name}" if where else name

    model = ModelConfig.from_dict(sections.get("model"), where=label("model"))
    validate_model_config(model, label("model"))
    train = from_dict(TrainConfig, sections.get("train"), where=label("train"))
    decode = from_dict(DecodeConfig, sections.get("decode"), where=label("decode"))
    return model, train, decode


def load_experiment(path: str | None, overrides: Sequence[str] = ()) -> tuple[ModelConfig, TrainConfig, DecodeConfig]:
    """(ModelConfig, TrainConfig, DecodeConfig) from an experiment YAML plus overrides."""
    config = load_yaml(path) if path else {}
    unknown = [key for key in config if key not in SECTIONS]
    if unknown:
        raise ConfigError(f"{path}: unknown section {unknown[0]!r} (expected {', '.join(SECTIONS)})")
    for section in SECTIONS:
        if config.get(section) is not None and not isinstance(config[section], dict):
            raise ConfigError(f"{path}: {section}: expected a mapping")
    config = apply_overrides({k: dict(v or {}) for k, v in config.items()}, overrides)
    return validate_sections(config)


# ---------------------------------------------------------------------- extra inputs
def parse_extras(items: Sequence[str], token_items: Sequence[str], files_per_name: int, flag: str) -> dict[str, tuple[bool, list[str]]]:
    """``NAME=FILE[:FILE]`` options (``items`` integer inputs, ``token_items`` token inputs;
    ``files_per_name`` files each: 2 for training and validation) -> {name: (tokens?, [files])}."""
    parsed: dict[str, tuple[bool, list[str]]] = {}
    for tokens, group in ((False, items), (True, token_items)):
        for item in group:
            name, sep, files = item.partition("=")
            paths = files.split(":") if sep else []
            if not name or len(paths) != files_per_name or not all(paths):
                shape = "NAME=TRAINFILE:VALIDFILE" if files_per_name == 2 else "NAME=FILE"
                raise ConfigError(f"{flag} {item!r}: expected {shape}")
            if name in parsed:
                raise ConfigError(f"{flag}: extra input {name!r} given twice")
            parsed[name] = (tokens, paths)
    return parsed


def check_extras(model: torch.nn.Module, given: Mapping[str, Any], family: str, flag: str) -> dict[str, int]:
    """The model family's ``extra_inputs`` (name -> pad); every one must be given, no other."""
    wanted: dict[str, int] = dict(model.extra_inputs)
    missing = sorted(set(wanted) - set(given))
    unknown = sorted(set(given) - set(wanted))
    if missing:
        raise ConfigError(f"model family {family!r} needs extra inputs {', '.join(missing)} ({flag} NAME=...)")
    if unknown:
        raise ConfigError(f"{flag}: model family {family!r} takes no extra input {unknown[0]!r}"
                          + (f" (it takes: {', '.join(sorted(wanted))})" if wanted else ""))
    return wanted
