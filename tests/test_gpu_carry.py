"""tools/gpu: the static completeness check of the carried wheels (check_wheels.py) on fixture
METADATA, and what carry.py selects from the configs (no network)."""
from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "tools" / "gpu"


def load(name: str):
    sys.path.insert(0, str(GPU))
    try:
        spec = importlib.util.spec_from_file_location(name, GPU / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look it up; carry.py imports check_wheels by name
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(GPU))


cw = load("check_wheels")
carry = load("carry")

# Requires-Dist lines as the real wheels have them (snakemake 9.27.1, jsonschema 4.26.0, abridged).
SNAKEMAKE = """Metadata-Version: 2.4
Name: snakemake
Version: 9.27.1
Requires-Python: >=3.11
Requires-Dist: pulp<3.4,>=2.3.1
Requires-Dist: requests<3.0,>=2.8.1
Requires-Dist: jsonschema
Requires-Dist: pywin32; sys_platform == "win32"
Requires-Dist: importlib-metadata; python_version < "3.10"
Requires-Dist: pytest; extra == "tests"
Requires-Dist: numpy<2; extra == "old"

A description that mentions Requires-Dist: nothing
"""
JSONSCHEMA = """Metadata-Version: 2.4
Name: jsonschema
Version: 4.26.0
Requires-Dist: attrs>=22.2.0
Requires-Dist: rfc3339-validator; extra == "format"
"""
PULP = "Metadata-Version: 2.1\nName: PuLP\nVersion: 3.3.2\n"
RFC = "Metadata-Version: 2.1\nName: rfc3339_validator\nVersion: 0.1.4\nRequires-Dist: six\n"
TAG = "py3-none-any"


def wheel(folder: Path, metadata: str, tag: str = TAG) -> Path:
    name, version, _ = cw.read_metadata(metadata)
    stem = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{stem}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{stem}.dist-info/METADATA", metadata)
        archive.writestr(f"{stem}.dist-info/WHEEL", f"Wheel-Version: 1.0\nTag: {tag}\n")
    return path


def wheels(tmp_path: Path, *metadata: str) -> list:
    return [cw.read_wheel(wheel(tmp_path, text)) for text in metadata]


IMAGE = {"requests": None, "attrs": Version("26.1.0"), "numpy": Version("2.5.2"), "six": Version("1.17.0")}


def test_read_metadata_takes_only_the_headers():
    name, version, requires = cw.read_metadata(SNAKEMAKE)
    assert (name, version) == ("snakemake", "9.27.1")
    assert [r.name for r in requires] == ["pulp", "requests", "jsonschema", "pywin32", "importlib-metadata", "pytest", "numpy"]


def test_complete_set_skips_other_platforms_pythons_and_unasked_extras(tmp_path):
    problems, notes = cw.check([Requirement("snakemake>=9")], wheels(tmp_path, SNAKEMAKE, JSONSCHEMA, PULP), IMAGE)
    assert problems == []  # no pywin32, importlib-metadata, pytest; numpy<2 of the unasked extra is not checked
    assert notes == ["snakemake 9.27.1 requires 'requests<3.0,>=2.8.1': the image has requests at a version not in its list (unverified)"]


def test_missing_requirement_is_named(tmp_path):
    problems, _ = cw.check([Requirement("snakemake>=9")], wheels(tmp_path, SNAKEMAKE, JSONSCHEMA), IMAGE)
    assert problems == ["snakemake 9.27.1 requires 'pulp<3.4,>=2.3.1': neither carried nor in the image"]


def test_asked_extra_adds_its_requirements(tmp_path):
    carried = wheels(tmp_path, SNAKEMAKE, JSONSCHEMA, PULP)
    problems, _ = cw.check([Requirement("jsonschema[format]")], carried, IMAGE)
    assert problems == ["jsonschema 4.26.0 requires 'rfc3339-validator; extra == \"format\"': neither carried nor in the image"]
    problems, _ = cw.check([Requirement("jsonschema[format]")], carried + wheels(tmp_path, RFC), IMAGE)
    assert problems == []  # and rfc3339-validator's six is the image's 1.17.0


def test_versions_outside_the_range(tmp_path):
    old_attrs = {**IMAGE, "attrs": Version("21.4.0")}
    problems, _ = cw.check([], wheels(tmp_path, JSONSCHEMA), old_attrs)
    assert problems == ["jsonschema 4.26.0 requires 'attrs>=22.2.0': the image has attrs 21.4.0, outside it, and no wheel is carried"]
    problems, _ = cw.check([Requirement("pulp>=3.4")], wheels(tmp_path, PULP), IMAGE)
    assert problems == ["requirements.txt requires 'pulp>=3.4': carried PuLP-3.3.2-py3-none-any.whl is outside it"]


def test_duplicates_and_foreign_tags(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    carried = wheels(tmp_path, PULP) + [cw.read_wheel(wheel(other, PULP.replace("3.3.2", "3.3.1")))]
    carried.append(cw.read_wheel(wheel(other, RFC, tag="cp311-cp311-manylinux_2_17_x86_64")))
    carried.append(cw.read_wheel(wheel(other, "Name: a\nVersion: 1\n", tag="cp312-cp312-manylinux_2_40_x86_64")))
    carried.append(cw.read_wheel(wheel(other, "Name: b\nVersion: 1\n", tag="cp312-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64")))
    problems, _ = cw.check([], carried, IMAGE)
    assert problems[0].startswith("pulp: two wheels (PuLP-3.3.2-py3-none-any.whl, PuLP-3.3.1-py3-none-any.whl)")
    assert [p.split(":")[0] for p in problems[1:]] == ["rfc3339_validator-0.1.4-cp311-cp311-manylinux_2_17_x86_64.whl",
                                                       "a-1-cp312-cp312-manylinux_2_40_x86_64.whl"]


def test_select_leaves_to_the_image_what_it_has_at_a_fitting_version(tmp_path):
    found = {w.name: w for w in wheels(tmp_path, SNAKEMAKE, JSONSCHEMA, PULP, RFC,
                                       "Name: requests\nVersion: 2.34.2\n", "Name: numpy\nVersion: 1.26.4\n",
                                       "Name: attrs\nVersion: 26.1.0\n")}
    top = [Requirement("snakemake>=9")]
    # attrs (26.1.0 fits) stays the image's; rfc3339 and numpy are not needed; requests' version is
    # unknown and snakemake caps it (<3.0): its small wheel is carried
    assert cw.select(top, found, IMAGE) == {"snakemake", "jsonschema", "pulp", "requests"}
    found["requests"].size = cw.SMALL_WHEEL + 1  # a large one is left to the image
    assert cw.select(top, found, IMAGE) == {"snakemake", "jsonschema", "pulp"}
    assert cw.select(top, found, IMAGE, force=["requests"]) == {"snakemake", "jsonschema", "pulp", "requests"}
    # a requirement the image's known version misses: the wheel is carried
    assert cw.select(top + [Requirement("numpy<2")], found, IMAGE) == {"snakemake", "jsonschema", "pulp", "numpy"}


def test_main_reads_the_folder_and_fails_on_a_problem(tmp_path, capsys):
    wheel(tmp_path, SNAKEMAKE)
    wheel(tmp_path, JSONSCHEMA)
    (tmp_path / "requirements.txt").write_text("# top\nsnakemake>=9\n")
    image = tmp_path / "image.txt"
    image.write_text("# list\nrequests\nattrs==26.1.0\n")
    assert cw.main([str(tmp_path), "--image", str(image)]) == 1
    assert "PROBLEM: snakemake 9.27.1 requires 'pulp<3.4,>=2.3.1'" in capsys.readouterr().out
    wheel(tmp_path, PULP)
    assert cw.main([str(tmp_path), "--image", str(image)]) == 0


def test_image_list_has_the_known_versions():
    image = cw.read_image_list()
    assert image["torch"] == Version("2.11.0") and image["sentencepiece"] == Version("0.2.2")
    assert image["pandas"] is not None  # every version read off the machine (run.sh's pip list)
    assert "snakemake" not in image and "jsonschema" not in image


def test_requirements_follow_the_config(tmp_path):
    default = carry.requirements(carry.merged_config([]))
    names = [Requirement(r).name for r in default]
    assert "torch" not in names and {"snakemake", "jsonschema", "sacremoses", "subword-nmt"} <= set(names)
    assert "jieba" in names and "fugashi" not in names  # the tokenizer of zh; no ja corpus
    assert not {"thulac", "snownlp"} & set(names)  # lattice-only segmenters: made here, carried as tables
    only_de = tmp_path / "de.yaml"
    only_de.write_text(yaml.safe_dump({"active_corpora": ["multi30k_en_de"]}))
    config = carry.merged_config([only_de])
    assert not {"jieba", "thulac", "snownlp", "fugashi"} & {Requirement(r).name for r in carry.requirements(config)}
    assert "zh-en/cmn.txt.gz" in carry.mirror_paths(carry.merged_config([]))
    assert "zh-en/cmn.txt.gz" not in carry.mirror_paths(config)
    assert {"multi30k/train.de.gz", "compression/google.test.jsonl.gz"} <= set(carry.mirror_paths(config))


def test_segmenters_are_read_from_the_package():
    from nmtmodels.text.preprocessing import SEGMENTERS

    assert carry.segmenter_names() == SEGMENTERS


@pytest.mark.parametrize("script", ["prepare.sh", "run.sh"])
def test_scripts_are_executable(script):
    assert (GPU / script).stat().st_mode & 0o111
