"""What a run of the workflow on the GPU machine needs carried (tools/gpu/prepare.sh).

    python tools/gpu/carry.py requirements --configfile configs/gpu.yaml  # one requirement a line
    python tools/gpu/carry.py mirror --configfile configs/gpu.yaml        # mirror paths, one a line
    python tools/gpu/carry.py segmentations --configfile configs/gpu.yaml  # segment outputs made here
    python tools/gpu/carry.py tables --configfile configs/gpu.yaml --workdir DIR --out .gpu_data/segmentations

Both read ``config.yaml`` with the config files merged over it as Snakemake merges them (key by
key, lists replaced) and look only at what that config runs: the active corpora and the active
experiments (all experiments when ``active_experiments`` is absent) on them.

* ``requirements``: pyproject.toml's core dependencies without torch (the GPU image's own CUDA
  build is used), the ``workflow`` extra, and each segmenter extra (``zh``, ``ja``) of which a
  package is named as a tokenizer or lattice segmenter by that config.
* ``mirror``: the ``mirror`` path of every download of the active corpora and of
  ``compression.data`` (relative to the mirror, ``../shared/data`` or ``NMT_DATA_MIRROR``).
* ``segmentations``: the ``segment`` rule's outputs (``results/data/C/seg/S/SPLIT.SRC-TGT.SRC``, every
  split) of the *table segmenters*: those that an active experiment's ``lattice`` names and
  that tokenise no active corpus (thulac and snownlp of the lattice rows; jieba tokenises
  Tatoeba zh-en, so its wheel travels).  Their wheels are left out of ``wheels``; prepare.sh
  makes these files here with Snakemake and ``tables`` packs them, with their inputs, into
  ``LANG.SEGMENTER.jsonl.gz`` tables (:mod:`workflow_scripts.data.segment`), which the
  ``segment`` rule reads on the GPU machine (``NMT_SEGMENTATIONS``).
"""
from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_wheels

ROOT = Path(__file__).resolve().parents[2]
# The image's torch is used; pyproject's range must allow it (checked in requirements()).
IMAGE_TORCH = "2.11.0"
SEGMENTER_EXTRAS = ("zh", "ja")


def merged_config(configfiles: list[Path], root: Path = ROOT) -> dict[str, Any]:
    """config.yaml with ``configfiles`` merged over it (nested dicts key by key, anything else replaced)."""
    config = yaml.safe_load((root / "config.yaml").read_text(encoding="utf-8")) or {}
    for path in configfiles:
        _merge(config, yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {})
    return config


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def active_parts(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(active corpora, active experiments that run on at least one of them), name -> section."""
    corpora = {name: config["corpora"][name] for name in config.get("active_corpora", [])}
    chosen = config.get("active_experiments") or list(config.get("experiments", {}))
    experiments = {name: config["experiments"][name] for name in chosen
                   if set(config["experiments"][name].get("corpora", [])) & set(corpora)}
    return corpora, experiments


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def table_segmenters(config: dict[str, Any], root: Path = ROOT) -> dict[str, list[str]]:
    """Active corpus -> the segmenters whose segmentations travel as tables (see the module
    docstring): named in an active experiment's ``lattice`` on that corpus, a segmenter of its
    source language, and the tokenizer of no language of an active corpus."""
    corpora, experiments = active_parts(config)
    known = segmenter_names(root)
    tokenizers = {lang_spec.get("tokenizer") for spec in corpora.values() for lang_spec in spec["preprocess"].values()}
    found: dict[str, list[str]] = {}
    for spec in experiments.values():
        for corpus in spec.get("corpora", []):
            if corpus not in corpora:
                continue
            src = corpora[corpus]["src"]
            for name in spec.get("lattice") or []:
                if name in known.get(src, ()) and name not in tokenizers and name not in found.get(corpus, []):
                    found.setdefault(corpus, []).append(name)
    return found


def requirements(config: dict[str, Any], root: Path = ROOT) -> list[str]:
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    wanted = [r for r in project["dependencies"] if canonicalize_name(Requirement(r).name) != "torch"]
    torch = next(Requirement(r) for r in project["dependencies"] if canonicalize_name(Requirement(r).name) == "torch")
    if not torch.specifier.contains(IMAGE_TORCH):
        raise SystemExit(f"pyproject.toml's '{torch}' excludes the GPU image's torch {IMAGE_TORCH}")
    wanted += extras["workflow"]
    corpora, experiments = active_parts(config)
    named = {canonicalize_name(s) for s in _strings([corpora, experiments])}
    named -= {canonicalize_name(name) for names in table_segmenters(config, root).values() for name in names}
    segmenters = {canonicalize_name(name) for names in segmenter_names(root).values() for name in names}
    for extra in SEGMENTER_EXTRAS:
        used = [r for r in extras[extra] if canonicalize_name(Requirement(r).name) in segmenters & named]
        # the extra's other packages (unidic-lite: fugashi's dictionary) go with its segmenters
        wanted += [r for r in extras[extra] if r in used or (used and canonicalize_name(Requirement(r).name) not in segmenters)]
    return wanted


def segmenter_names(root: Path = ROOT) -> dict[str, tuple[str, ...]]:
    """nmtmodels.text.preprocessing.SEGMENTERS (language -> segmenter packages), read without importing it."""
    tree = ast.parse((root / "nmtmodels" / "text" / "preprocessing.py").read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id == "SEGMENTERS":
            return ast.literal_eval(node.value)
    raise SystemExit("nmtmodels/text/preprocessing.py: no SEGMENTERS")


def mirror_paths(config: dict[str, Any]) -> list[str]:
    corpora, _ = active_parts(config)
    sections = [spec for corpus in corpora.values() for spec in (corpus.get("downloads") or {}).values()]
    sections += list(((config.get("compression") or {}).get("data") or {}).values())
    return sorted({spec["mirror"] for spec in sections if isinstance(spec, dict) and spec.get("mirror")})


def _repository_on_path() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def segmentation_files(config: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(language, segmenter, ``segment``'s input, its output) of every split of every table
    segmenter's corpus (:func:`table_segmenters`), paths relative to the working directory."""
    _repository_on_path()
    from workflow_scripts.dag import paths
    from workflow_scripts.data.corpus_spec import splits_of

    files = []
    for corpus, names in table_segmenters(config).items():
        spec = config["corpora"][corpus]
        for name in names:
            for split in splits_of(spec, where=f"corpora.{corpus}"):
                where = {"corpus": corpus, "split": split, **paths.sides(spec), "lang": spec["src"]}
                files.append((spec["src"], name, f"{paths.DATA_ROOT}/{corpus}/norm/{split}.{spec['src']}-{spec['tgt']}.{spec['src']}",
                              paths.encoded(units=f"seg/{name}", **where)))
    return files


def tables(args: argparse.Namespace) -> None:
    """Pack the table segmenters' segmentations made in ``args.workdir`` (by prepare.sh's
    Snakemake run) into ``args.out``/LANG.SEGMENTER.jsonl.gz, each line with its input line."""
    _repository_on_path()
    from workflow_scripts.data.segment import table_path, write_table

    pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for lang, name, norm, seg in segmentation_files(merged_config(args.configfile)):
        lines = (args.workdir / norm).read_text(encoding="utf-8").splitlines()
        words = (args.workdir / seg).read_text(encoding="utf-8").splitlines()
        if len(lines) != len(words):
            raise SystemExit(f"{args.workdir / seg}: {len(words)} lines for the {len(lines)} of {norm}")
        pairs.setdefault((lang, name), []).extend(zip(lines, words, strict=True))
    for (lang, name), found in pairs.items():
        path = table_path(args.out, lang, name)
        print(f"  {path}: {write_table(path, found)} lines segmented by {name}")


# pip download for the image's interpreter: CPython 3.12, Linux x86_64, glibc up to 2.39.
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(39, 16, -1)] + ["manylinux2014_x86_64", "manylinux1_x86_64"]
TARGET = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
          "--abi", "cp312", "--abi", "abi3", "--abi", "none", *[a for p in PLATFORMS for a in ("--platform", p)]]
# pip's words for "no wheel of it": a constraint that no wheel meets (the lock pins most
# packages), else the requirement it cannot meet
NO_WHEEL = [re.compile(r"The user requested \(constraint\) ([A-Za-z0-9][A-Za-z0-9_.\-]*)=="),
            re.compile(r"(?:No matching distribution found for|Could not find a version that satisfies the requirement"
                       r"|Cannot install) ([A-Za-z0-9][A-Za-z0-9_.\-]*)")]
DOWNLOADED = re.compile(r"^Successfully downloaded (.*)$", re.MULTILINE)


def lock_pins(root: Path = ROOT) -> dict[str, str]:
    pins = {}
    for line in (root / "requirements" / "lock.txt").read_text(encoding="utf-8").splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            pins[canonicalize_name(name)] = version
    return pins


def download(wanted: list[str], dest: Path, built: Path, *, constraints: Path | None, log: Path) -> None:
    """The wheels of ``wanted`` and of everything they need (pip's resolver, lock's versions)
    for the image's interpreter into ``dest``.  A package that PyPI has only as a source archive
    is built into a wheel in ``built`` (``pip wheel --no-deps`` with this interpreter) and the
    download retried; it must build to a pure-Python wheel."""
    pins = lock_pins()
    built.mkdir(parents=True, exist_ok=True)
    requirements_file = dest.parent / f".{dest.name}.requirements.txt"
    requirements_file.write_text("".join(r + "\n" for r in wanted), encoding="utf-8")
    shutil.rmtree(dest, ignore_errors=True)
    for _ in range(30):
        command = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-cache-dir", *TARGET,
                   "--find-links", str(built), "-d", str(dest), "-r", str(requirements_file)]
        if constraints:
            command += ["-c", str(constraints)]
        done = _run(command, log)
        if done.returncode == 0:
            requirements_file.unlink()
            names = DOWNLOADED.search(done.stdout)
            final = {canonicalize_name(n) for n in names.group(1).split()} if names else None
            for stale in dest.glob("*.whl"):  # left by a failed attempt, not in the final resolution
                if final is not None and canonicalize_name(parse_wheel_filename(stale.name)[0]) not in final:
                    stale.unlink()
            return
        missing = next(filter(None, (pattern.search(done.stdout + done.stderr) for pattern in NO_WHEEL)), None)
        if not missing:
            raise SystemExit(f"pip download failed (log: {log}):\n" + (done.stdout + done.stderr)[-3000:])
        name = canonicalize_name(re.split(r"[<>=!~;\[ ]", missing.group(1))[0])
        spec = f"{name}=={pins[name]}" if name in pins else name
        if any(canonicalize_name(parse_wheel_filename(w.name)[0]) == name for w in built.glob("*.whl")):
            raise SystemExit(f"{name}: built a wheel but pip still finds none (log: {log})")
        print(f"  {spec}: no wheel for CPython 3.12 on PyPI; building one from its source archive", flush=True)
        done = _run([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-cache-dir", "--no-deps",
                     "--no-binary", name, "-w", str(built), spec], log)
        if done.returncode != 0:
            raise SystemExit(f"pip wheel {spec} failed (log: {log}):\n" + (done.stdout + done.stderr)[-3000:])
        made = [w for w in built.glob("*.whl") if canonicalize_name(parse_wheel_filename(w.name)[0]) == name]
        if not made or any(tag.abi != "none" or tag.platform != "any" for tag in parse_wheel_filename(made[0].name)[3]):
            raise SystemExit(f"{spec}: the built wheel is not pure Python ({[w.name for w in made]}); "
                             "it cannot be built here for the image's Python 3.12")
    raise SystemExit(f"pip download: gave up after 30 source-only packages (log: {log})")


def _run(command: list[str], log: Path) -> subprocess.CompletedProcess:
    with open(log, "a", encoding="utf-8") as sink:
        sink.write("$ " + " ".join(command) + "\n")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    with open(log, "a", encoding="utf-8") as sink:
        sink.write(done.stdout + done.stderr)
    return done


def wheels(args: argparse.Namespace) -> None:
    """Download the closure into ``args.out``/all, then keep in ``args.out`` only the wheels the
    image does not provide (check_wheels.select) and write ``args.out``/requirements.txt."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    wanted = requirements(merged_config(args.configfile)) + list(args.extra)
    args.work.mkdir(parents=True, exist_ok=True)
    log = args.work / "pip.log"
    log.write_text("", encoding="utf-8")
    everything = args.work / "all"
    download(wanted, everything, args.work / "built", constraints=ROOT / "requirements" / "lock.txt", log=log)
    found = {w.name: w for w in map(check_wheels.read_wheel, sorted(everything.glob("*.whl")))}
    top = [Requirement(r) for r in wanted]
    keep = check_wheels.select(top, found, check_wheels.read_image_list(), force=args.carry_anyway)
    for old in out.glob("*.whl"):
        old.unlink()
    for name in sorted(keep):
        shutil.copy2(everything / found[name].file, out / found[name].file)
    (out / "requirements.txt").write_text(
        "# Top-level requirements of the carried set (tools/gpu/carry.py wheels); check_wheels.py reads them.\n"
        + "".join(r + "\n" for r in wanted), encoding="utf-8")
    left = sorted(set(found) - keep)
    print(f"  resolved {len(found)} packages; carried {len(keep)}; left to the image: {', '.join(left) or 'none'} (pip log: {log})")


def peers(args: argparse.Namespace) -> None:
    """The wheels that benchmarks/_venvs.py's own ``pip install`` commands (its INSTALL pins) need
    for the chosen peers, less what the image has: run.sh points pip there (PIP_FIND_LINKS,
    PIP_NO_INDEX), so the peers' environments install offline exactly as they do online."""
    sys.path.insert(0, str(ROOT))
    from benchmarks._venvs import INSTALL

    out: Path = args.out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    image = check_wheels.read_image_list()
    log = args.work / "pip-peers.log"
    log.write_text("", encoding="utf-8")
    for peer in args.peers:
        for number, command in enumerate(INSTALL[peer]):
            names = [a for a in command if not a.startswith("-")]
            stage = args.work / f"peer-{peer}-{number}"
            if "--no-deps" in command:
                shutil.rmtree(stage, ignore_errors=True)
                done = _run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps", *TARGET,
                             "-d", str(stage), *names], log)
                if done.returncode != 0:
                    raise SystemExit(f"pip download {' '.join(names)} failed (log: {log})")
            else:
                download(names, stage, args.work / "built", constraints=None, log=log)
            found = {w.name: w for w in map(check_wheels.read_wheel, sorted(stage.glob("*.whl")))}
            top = [Requirement(n) for n in names]
            keep = set(found) if "--no-deps" in command else check_wheels.select(top, found, image)
            for name in keep:
                shutil.copy2(stage / found[name].file, out / found[name].file)
    print(f"  {len(list(out.glob('*.whl')))} wheels for {', '.join(args.peers)} in {out}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["requirements", "mirror", "wheels", "peers", "segmentations", "tables"])
    parser.add_argument("--configfile", nargs="*", type=Path, default=[], help="merged over config.yaml, in order")
    parser.add_argument("--out", type=Path, default=ROOT / ".whl", help="wheels: the folder to fill (default: .whl)")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "gpu-carry",
                        help="wheels, peers: staging folder (downloads, built wheels, pip's log)")
    parser.add_argument("--peers", nargs="*", default=["opennmt-py"], help="peers: keys of benchmarks/_venvs.py's INSTALL")
    parser.add_argument("--extra", nargs="*", default=[], help="wheels: more requirements (e.g. 'ctranslate2>=4.0,<5')")
    parser.add_argument("--carry-anyway", nargs="*", default=[],
                        help="wheels: carry these even where the image has the package")
    parser.add_argument("--workdir", type=Path, default=ROOT / "build" / "gpu-segmentations",
                        help="tables: the Snakemake working directory that made the segmentations")
    args = parser.parse_args(argv)
    if args.what in ("wheels", "peers", "tables"):
        {"wheels": wheels, "peers": peers, "tables": tables}[args.what](args)
        return
    config = merged_config(args.configfile)
    if args.what == "segmentations":
        lines = [seg for _, _, _, seg in segmentation_files(config)]
    else:
        lines = requirements(config) if args.what == "requirements" else mirror_paths(config)
    sys.stdout.write("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    main()
