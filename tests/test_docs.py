"""The documentation: the generated configuration reference is current, and relative links resolve."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "docs" / "make_config_reference.py"
PAGES = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def load_generator():
    spec = importlib.util.spec_from_file_location("make_config_reference", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configuration_reference_is_current():
    generator = load_generator()
    committed = generator.OUTPUT.read_text(encoding="utf-8")
    assert committed == generator.render(), (
        f"docs/configuration.md is out of date with schemas/config.schema.yaml or the nmtmodels option "
        f"dataclasses; regenerate it with: {generator.COMMAND}"
    )


def test_generator_notes_name_existing_keys(monkeypatch):
    generator = load_generator()
    monkeypatch.setitem(generator.SCHEMA_NOTES, "corpora.CORPUS.no_such_key", "x")
    with pytest.raises(SystemExit, match="no_such_key"):
        generator.render()


def test_generator_takes_field_comments():
    generator = load_generator()
    from nmtmodels.search import DecodeConfig

    comments = generator.field_comments(DecodeConfig)
    assert "GNMT" in comments["length_penalty"]
    assert "beam" not in comments  # no comment in the source: FIELD_NOTES gives its text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    missing = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            missing.append(target)
    assert not missing, f"{page.relative_to(ROOT)}: links to missing files: {missing}"
