"""Configuration: dataclass configs built from plain dicts / YAML with clear errors, and
:class:`ModelConfig` with its named presets.

``from_dict(MyConfig, data, where="model")`` rejects unknown keys (with a close-match
suggestion) and values of the wrong type, naming the dotted key path, e.g.
``ConfigError: model.d_model: expected int, got str ('512')``.  Nested dataclass
fields are built recursively.

Numbers (:func:`_coerce`, the one policy of ``nmt-train`` and the workflow's start-up checks):

* a string is not a number: ``lr: "0.001"`` or ``lr: "1e-3 "`` is an error naming the key,
  with one exception.  PyYAML implements YAML 1.1, which reads ``1e-3``, ``1e9`` and ``1.0e9``
  (no dot or no exponent sign) as strings; :func:`load_yaml` and :func:`parse_yaml_value` read
  them as floats (the YAML 1.2 core schema), but other YAML 1.1 readers (Snakemake's config)
  pass on the string.  So a string spelt exactly like that (:data:`EXPONENT_FLOAT`: no
  spaces, no other characters) is the float it spells, wherever it came from;
* a float field takes an int or a float (never a bool);
* an int field takes an int only: ``max_updates: 1e3`` is a float (YAML 1.2, and the rule
  above for the string), an error that says to write ``1000``.  The workflow passes config
  values on to its jobs as written, so a value it accepts must mean the same to every job.

``ModelConfig.from_dict({"preset": "base", "dropout": 0.3}, where="model")`` starts
from a preset and applies overrides; keys and types are checked by :func:`from_dict`, value
ranges by :meth:`ModelConfig.validate`.  The family-specific ``options`` are checked by
the family itself, when :func:`nmtmodels.registry.build_model` builds the model or
:func:`nmtmodels.registry.validate_model_config` is called (this module does not know the
families).

Presets (the ``preset`` key; every other key overrides the preset's value):

* ``tiny``  3+3 layers, d 256, 4 heads, FFN 1024, dropout 0.1 (the CPU benchmark shape);
* ``small`` 6+6 layers, d 512, 4 heads, FFN 1024, dropout 0.3 (IWSLT, fairseq
  ``transformer_iwslt_de_en``);
* ``base``  6+6 layers, d 512, 8 heads, FFN 2048, dropout 0.1 (Vaswani et al. 2017, Table 3);
* ``big``   6+6 layers, d 1024, 16 heads, FFN 4096, dropout 0.3 (Vaswani et al. 2017, EN-DE).

Fields not set by a preset keep the dataclass defaults (those of ``base``, post-norm,
sinusoidal positions, tied decoder input/output embeddings, separate source/target
embeddings).
"""
from __future__ import annotations

import dataclasses
import difflib
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml

T = TypeVar("T")

# Exponent floats, which YAML 1.1 (PyYAML) reads as strings when they lack a dot or an exponent
# sign: 1e9, 1e-3, 1.0e9.  :class:`YamlLoader` reads them as floats, and so does :func:`_coerce`
# when a YAML 1.1 reader passed one on as a string.
EXPONENT_FLOAT = re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+")

# A decimal number (with or without a dot or an exponent): what an error calls a quoted number.
_DECIMAL = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")


class YamlLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that also reads exponent floats such as ``1e9``, ``1e-3``, ``1.0e9``."""


YamlLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(f"^(?:{EXPONENT_FLOAT.pattern})$"), list("-+0123456789."))


def parse_yaml_value(text: str) -> Any:
    """A YAML value typed on a command line (``--set``), read with :class:`YamlLoader`."""
    return yaml.load(text, Loader=YamlLoader)


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type."""


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(value, option, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{where}: {value!r} matches none of {[_type_name(o) for o in options]}")
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ConfigError(f"{where}: expected one of {list(allowed)}, got {value!r}")
        return value
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
        return from_dict(tp, value, where)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {type(value).__name__} ({value!r})")
        args = typing.get_args(tp)
        item_tp = args[0] if args else Any
        items = [_coerce(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
        _, val_tp = typing.get_args(tp) or (Any, Any)
        return {k: _coerce(v, val_tp, f"{where}.{k}") for k, v in value.items()}
    if tp is float or tp is int:
        return _number(value, tp, where)
    if isinstance(tp, type):
        if not isinstance(value, tp):
            raise ConfigError(f"{where}: expected {_type_name(tp)}, got {type(value).__name__} ({value!r})")
        return value
    return value


def _number(value: Any, tp: type, where: str) -> Any:
    """``value`` for a float or int field, by the policy in the module doc."""
    if isinstance(value, str) and EXPONENT_FLOAT.fullmatch(value):
        value = float(value.replace("_", ""))  # "1e-3" from a YAML 1.1 reader (Snakemake)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = ""
        if isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
            hint = f"; a string is not a number: write {value.strip()} without quotes or spaces"
        raise ConfigError(f"{where}: expected {tp.__name__}, got {type(value).__name__} ({value!r}){hint}")
    if tp is float:
        return float(value)
    if isinstance(value, float):  # 1e3 is a float in YAML 1.2: the workflow passes it on as is (rule params)
        hint = f"; write {int(value)}" if value.is_integer() else ""
        raise ConfigError(f"{where}: expected int, got float ({value!r}){hint}")
    return value


def from_dict(cls: type[T], data: dict[str, Any] | None, where: str = "config") -> T:
    """Build dataclass ``cls`` from ``data``, validating keys and types."""
    data = dict(data or {})
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = [k for k in data if k not in fields]
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, list(fields), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else f" (known keys: {', '.join(sorted(fields))})"
        raise ConfigError(f"{where}.{key}: unknown key{hint}")
    kwargs = {}
    for name, spec in fields.items():
        if name in data:
            kwargs[name] = _coerce(data[name], hints[name], f"{where}.{name}")
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:  # type: ignore[misc]
            raise ConfigError(f"{where}.{name}: required key is missing")
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if callable(validate):
        validate(where)
    return obj


def to_dict(obj: Any) -> dict[str, Any]:
    return dataclasses.asdict(obj)


def plain_dict(obj: Any) -> dict[str, Any]:
    """A dataclass as YAML-safe plain data (tuples become lists)."""

    def plain(value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    return plain(dataclasses.asdict(obj))


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; errors name the file."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.load(handle, Loader=YamlLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


# ---------------------------------------------------------------------- the model
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(encoder_layers=3, decoder_layers=3, d_model=256, heads=4, ffn_dim=1024, dropout=0.1),
    "small": dict(encoder_layers=6, decoder_layers=6, d_model=512, heads=4, ffn_dim=1024, dropout=0.3),
    "base": dict(encoder_layers=6, decoder_layers=6, d_model=512, heads=8, ffn_dim=2048, dropout=0.1),
    "big": dict(encoder_layers=6, decoder_layers=6, d_model=1024, heads=16, ffn_dim=4096, dropout=0.3),
}


@dataclass
class ModelConfig:
    """Shape and regularisation of an encoder-decoder model (defaults: Transformer base).

    ``options`` holds family-specific settings, validated by the family named in
    ``family`` (see :func:`nmtmodels.registry.validate_model_config`).
    """

    family: str = "transformer"
    d_model: int = 512
    heads: int = 8
    encoder_layers: int = 6
    decoder_layers: int = 6
    ffn_dim: int = 2048
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    activation: Literal["relu", "gelu"] = "relu"
    normalize_before: bool = False
    positional: Literal["sinusoidal", "learned"] = "sinusoidal"
    share_embeddings: bool = False
    tie_output: bool = True
    max_source_positions: int = 1024
    max_target_positions: int = 1024
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, where: str = "model") -> ModelConfig:
        """Build from a mapping that may name a ``preset``; the other keys override it."""
        data = dict(data or {})
        preset = data.pop("preset", None)
        if preset is not None:
            if preset not in PRESETS:
                raise ConfigError(f"{where}.preset: unknown preset {preset!r} (known: {', '.join(PRESETS)})")
            data = {**PRESETS[preset], **data}
        return from_dict(cls, data, where)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every field; ``from_dict`` of it rebuilds an equal config."""
        return dataclasses.asdict(self)

    def validate(self, where: str = "model") -> None:
        """Check value ranges; raise :class:`ConfigError`.  The family's ``options`` are the
        family's to check (:func:`nmtmodels.registry.validate_model_config`)."""
        for name in ("d_model", "heads", "encoder_layers", "decoder_layers", "ffn_dim",
                     "max_source_positions", "max_target_positions"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be >= 1, got {getattr(self, name)}")
        if self.d_model % self.heads:
            raise ConfigError(f"{where}.heads: d_model {self.d_model} is not divisible by heads {self.heads}")
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ConfigError(f"{where}.d_model: sinusoidal positions need an even d_model, got {self.d_model}")
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{where}.{name}: must be in [0, 1), got {value}")
