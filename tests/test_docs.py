"""The documentation: the generated configuration reference is current, and relative links resolve."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "docs" / "make_config_reference.py"
PAGES = [ROOT / "README.md", *sorted((ROOT / "benchmarks").glob("*.md")), *sorted((ROOT / "docs").rglob("*.md"))]
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
    from nmtmodels.decoding.config import DecodeConfig

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


INSTALL = re.compile(r"pip install [^`\n]*-e [^`\n]*")
DRY_RUN_OF_FULL = re.compile(r"snakemake -n [^`\n#]*configs/full\.yaml[^`\n#]*")


def test_every_page_installs_the_project_as_the_readme_does():
    readme = INSTALL.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(set(readme)) == 1, readme
    for page in PAGES:
        for command in INSTALL.findall(page.read_text(encoding="utf-8")):
            assert command == readme[0], f"{page.relative_to(ROOT)}: '{command}', the README: '{readme[0]}'"


def test_full_scale_dry_runs_that_are_shown_work_without_the_licensed_files():
    """A dry run of configs/full.yaml stops at the missing licensed files (docs/faults.md)
    unless it passes require_licensed_data=False, as tests/test_workflow.py's full dry run does."""
    commands = [(path, command) for path in (*PAGES, ROOT / "Snakefile")
                for command in DRY_RUN_OF_FULL.findall(path.read_text(encoding="utf-8"))]
    assert any(path.name == "README.md" for path, _ in commands)
    for path, command in commands:
        assert "--config require_licensed_data=False" in command, f"{path.relative_to(ROOT)}: {command}"


def howto_section(title: str) -> str:
    text = (ROOT / "docs" / "howto.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def named_paths_exist(section: str) -> None:
    """Every repository path the section names in backticks exists."""
    for path in re.findall(r"`((?:nmtmodels|workflow_scripts|tests|examples|docs)/[\w/.-]+)`", section):
        assert "NAME" in path or (ROOT / path).exists(), path


def unknown_homes(section: str) -> list[str]:
    """The modules a "home | what" table row names that do not exist: each ``NAME.py`` in
    backticks, in the folder of the row's first home (``nmtmodels/decoding/``: its modules;
    ``nmtmodels/data.py``, ``sampler.py``: beside it); rows with a pattern for a home aside."""
    missing = []
    for home, rest in re.findall(r"^\| `([^`*{}]+)`(.*)$", section, flags=re.MULTILINE):
        folder = home if home.endswith("/") else home.rpartition("/")[0] + "/"
        for name in re.findall(r"`([\w/]+\.py)`", home + rest):
            path = name if "/" in name else folder + name
            if not (ROOT / path).exists():
                missing.append(path)
    return missing


def test_where_things_live_names_modules_that_exist():
    """docs/howto.md, "Where things live": every module its table names exists (a module
    that moved or went is taken off the map), and the check finds one that does not."""
    assert not unknown_homes(howto_section("Where things live"))
    gone = "| `nmtmodels/decoding/` | `search.py` (beam), `corpus.py` (a whole data set) |\n| `rules/*.smk` | `paths.py` |\n"
    assert unknown_homes(gone) == ["nmtmodels/decoding/corpus.py"]


def test_the_family_checklist_names_the_files_new_family_writes(tmp_path):
    """docs/howto.md, "Your own model family": its files are those `new-family` writes, and the
    names it gives (entry point group, environment variable, paths) are the code's."""
    from nmtmodels.family_template import write_family
    from nmtmodels.plugins import ENTRY_POINT_GROUPS, USER_MODULES_VARIABLE
    from nmtmodels.testing import FamilyConformance  # noqa: F401  (the suite the checklist names)

    section = howto_section("Your own model family")
    named = re.findall(r"^\d\. \*\*[^*]+\*\* \(`([^`]+)`\)", section, flags=re.MULTILINE)
    written = {Path(path).name for path in write_family("my_family", tmp_path)}
    assert {name.replace("NAME", "my_family") for name in named} == written
    assert f"`{ENTRY_POINT_GROUPS[0]}`" in section and USER_MODULES_VARIABLE in section
    named_paths_exist(section)


def test_the_metric_checklist_names_the_registry_s_fields_and_tests():
    """docs/howto.md, "A new metric": every field of MetricSpec, the functions and the entry
    point group it names exist, and so do the tests it points to."""
    import dataclasses

    from nmtmodels.plugins import ENTRY_POINT_GROUPS
    from nmtmodels.text import scoring

    section = howto_section("A new metric")
    quoted = set(re.findall(r"`(\w+)`", section))
    assert {field.name for field in dataclasses.fields(scoring.MetricSpec)} <= quoted
    for function in ("register_metric", "metrics_fingerprint", "METRIC_SPECS", "MetricSpec"):
        assert function in section and hasattr(scoring, function), function
    assert f"`{ENTRY_POINT_GROUPS[1]}`" in section
    for test in (name for name in quoted if name.startswith("test_")):
        assert any(f"def {test}(" in path.read_text(encoding="utf-8") for path in (ROOT / "nmtmodels" / "tests").glob("test_*.py")), test
    named_paths_exist(section)


def test_the_claim_walkthrough_s_example_is_a_valid_claim_of_your_own():
    """docs/howto.md, "A verdict on your own claim": its YAML is a claim the workflow accepts
    (a paper name of its own, a must-beat control), and the paths it names exist."""
    import yaml

    from nmtmodels.files import DataError
    from workflow_scripts.evaluation.claim_files import check_claims

    section = howto_section("A verdict on your own claim")
    [block] = re.findall(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    claims = check_claims(yaml.safe_load(block)["claims"], lambda m: DataError("claims", m), own=True)
    assert claims["my_method"]["paper"] == "my_method" and claims["my_method"]["controls"][0]["role"] == "must_beat"
    assert [line.split(". **")[1].split("**")[0] for line in section.splitlines() if re.match(r"^\d\. \*\*", line)] == [
        "The family", "The experiment and its baseline", "The controls", "The claim", "Plan, then run", "The verdict"]
    named_paths_exist(section)
