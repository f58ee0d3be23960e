"""Unknown config keys, named with a did-you-mean hint, before the schema is validated.

Snakemake's ``validate`` reports a misspelt key with the whole schema of the object that holds
it (over a thousand lines for a top-level key).  :func:`check_keys` walks the config along the
schema (``properties``, ``additionalProperties``, ``items``, ``$ref`` to ``#/definitions``) and
raises one line naming the key path and the closest known key, as nmtmodels' own sections do
(``model.d_modle: unknown key (did you mean 'd_model'?)``).  Everything else (types, ranges,
required keys) is left to the schema.
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml

from workflow_scripts.dag import WorkflowConfigError


def _resolve(node: Any, schema: dict[str, Any]) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            return {}
        node = schema
        for part in ref[2:].split("/"):
            node = node.get(part, {})
    return node


def _walk(value: Any, node: Any, where: str, schema: dict[str, Any]) -> None:
    node = _resolve(node, schema)
    if not isinstance(node, dict):
        return
    if isinstance(value, dict):
        known = node.get("properties", {})
        extra = node.get("additionalProperties", True)
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            if key in known:
                _walk(item, known[key], path, schema)
            elif extra is False:
                close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
                hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(sorted(known))}"
                raise WorkflowConfigError(f"{path}: unknown key ({hint})")
            elif isinstance(extra, dict):
                _walk(item, extra, path, schema)
    elif isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            _walk(item, node["items"], f"{where}[{i}]", schema)


def check_keys(config: dict[str, Any], schema_path: str | Path) -> None:
    """Raise :class:`WorkflowConfigError` for the first key the schema does not allow."""
    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    _walk(config, schema, "", schema)
