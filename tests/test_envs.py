"""Every dependency is pinned once (pyproject.toml); the conda env files must agree."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^;\s]+)$")


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs.extend(extra)
    pins = {}
    for spec in specs:
        match = PIN.match(spec)
        assert match, f"pyproject.toml: '{spec}' is not pinned with =="
        pins[match.group(1).lower()] = match.group(2)
    return pins


def test_torch_is_pinned_to_the_local_cpu_build():
    assert pyproject_pins()["torch"] == "2.13.0"


@pytest.mark.parametrize("env_file", sorted((ROOT / "envs").glob("*.yaml")), ids=lambda p: p.name)
def test_env_file_pins_match_pyproject(env_file):
    pins = pyproject_pins()
    env = yaml.safe_load(env_file.read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert pip_section, f"{env_file.name}: empty pip section"
    for spec in pip_section:
        match = PIN.match(spec)
        assert match, f"{env_file.name}: '{spec}' is not pinned with =="
        name, version = match.group(1).lower(), match.group(2)
        assert name in pins, f"{env_file.name}: {name} is not a dependency in pyproject.toml"
        assert pins[name] == version, f"{env_file.name}: {name}=={version}, pyproject.toml pins {pins[name]}"
