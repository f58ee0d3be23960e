"""Is a set of carried wheels, together with the GPU image's packages, complete?

    python tools/gpu/check_wheels.py .whl                     # here: against tools/gpu/image-packages.txt
    python tools/gpu/check_wheels.py .whl --installed         # on the GPU machine, after the install

Reads each wheel's METADATA (``Requires-Dist``), evaluates the markers for CPython 3.12 on
Linux x86_64 (the GPU image's python), and checks every requirement reachable from the
top-level requirements (``.whl/requirements.txt``, written by tools/gpu/prepare.sh) and from
every carried wheel: it must be met by a carried wheel or by a package of the image, at a
version inside the requirement's range where the version is known.  The image's list
(tools/gpu/image-packages.txt) has versions for some packages only; a requirement met by an
image package of unknown version is reported as unverified, not as a failure, and
``--installed`` (run.sh, on the machine) checks against the versions really installed there.
Also checked: one wheel per name, and tags the image can install (cp312 / abi3 / none;
manylinux x86_64 or any).

``select`` is the same walk used to choose what to carry: a package goes in as a wheel unless the
image has it at a version that meets every requirement on it (an unknown version counts as
meeting them); the image's own packages' dependencies are the image's business.
Exit status 1 when a check fails, with one line per problem.
"""
from __future__ import annotations

import argparse
import re
import sys
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

HERE = Path(__file__).resolve().parent
IMAGE_LIST = HERE / "image-packages.txt"
# The GPU image's interpreter: Python 3.12.3 at /opt/torch/.venv/bin/python3, Linux x86_64.
TARGET_ENV = {
    "implementation_name": "cpython", "implementation_version": "3.12.3", "os_name": "posix",
    "platform_machine": "x86_64", "platform_release": "", "platform_system": "Linux", "platform_version": "",
    "python_full_version": "3.12.3", "platform_python_implementation": "CPython", "python_version": "3.12",
    "sys_platform": "linux",
}
INTERPRETERS = {"cp312", "py3", "py312", "py2.py3"}
ABIS = {"cp312", "abi3", "none"}
PLATFORM = re.compile(r"^(any|linux_x86_64|manylinux1_x86_64|manylinux2010_x86_64|manylinux2014_x86_64|manylinux_2_(\d+)_x86_64)$")
GLIBC_MINOR = 39  # the image is Ubuntu 24.04 (Python 3.12.3): glibc 2.39


@dataclass
class Wheel:
    name: str  # canonical
    version: Version
    requires: list[Requirement]
    file: str
    tags: frozenset = field(default_factory=frozenset)
    size: int = 0


def read_metadata(text: str) -> tuple[str, str, list[Requirement]]:
    """(name, version, Requires-Dist) of a METADATA file's text."""
    headers = HeaderParser().parsestr(text, headersonly=True)
    return headers["Name"], headers["Version"], [Requirement(r) for r in headers.get_all("Requires-Dist") or []]


def read_wheel(path: Path) -> Wheel:
    name, version, build, tags = parse_wheel_filename(path.name)
    with zipfile.ZipFile(path) as archive:
        member = next((m for m in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", m)), None)
        if member is None:
            raise ValueError(f"{path.name}: no .dist-info/METADATA")
        meta_name, meta_version, requires = read_metadata(archive.read(member).decode("utf-8"))
    if canonicalize_name(meta_name) != name:
        raise ValueError(f"{path.name}: METADATA names {meta_name}")
    return Wheel(name, version, requires, path.name, frozenset(tags), path.stat().st_size)


def read_image_list(path: Path = IMAGE_LIST) -> dict[str, Version | None]:
    """NAME or NAME==VERSION a line (comments with #) -> {canonical name: version or None}."""
    image: dict[str, Version | None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            image[canonicalize_name(name)] = Version(version) if version else None
    return image


def installed_packages() -> dict[str, Version | None]:
    """Every distribution this interpreter sees (sys.path, PYTHONPATH included), first one wins."""
    from importlib import metadata

    found: dict[str, Version | None] = {}
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"] or "")
        if name and name not in found:
            try:
                found[name] = Version(dist.version)
            except InvalidVersion:
                found[name] = None
    return found


def applies(requirement: Requirement, extras: Iterable[str] = ()) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({**TARGET_ENV, "extra": extra}) for extra in ("", *extras))


def tag_problem(wheel: Wheel) -> str | None:
    for tag in wheel.tags:
        match = PLATFORM.match(tag.platform)
        if (tag.interpreter in INTERPRETERS and tag.abi in ABIS and match
                and (match.group(2) is None or int(match.group(2)) <= GLIBC_MINOR)):
            return None
    return f"{wheel.file}: no tag the image's CPython 3.12 on Linux x86_64 installs ({', '.join(sorted(map(str, wheel.tags)))})"


def _contains(requirement: Requirement, version: Version) -> bool:
    return requirement.specifier.contains(version, prereleases=True)


SEED = "(carried)"


def walk(top: list[Requirement], wheels: Mapping[str, Wheel], carried: set[str],
         seeds: Iterable[str] = ()) -> dict[str, list[tuple[str, Requirement]]]:
    """Every requirement reachable from ``top`` (and the ``seeds``' names) through the ``carried``
    wheels' metadata: name -> [(who requires it, requirement)]; the extras asked of a carried
    wheel add its extra-marked requirements."""
    wanted: dict[str, list[tuple[str, Requirement]]] = {}
    extras_of: dict[str, set[str]] = {}
    stack = [("requirements.txt", r) for r in top if applies(r)] + [(SEED, Requirement(name)) for name in seeds]
    while stack:
        who, requirement = stack.pop()
        name = canonicalize_name(requirement.name)
        wanted.setdefault(name, []).append((who, requirement))
        if name not in carried or name not in wheels:
            continue
        asked = {canonicalize_name(e) for e in requirement.extras}
        if name in extras_of and asked <= extras_of[name]:
            continue
        first = name not in extras_of
        extras_of.setdefault(name, set()).update(asked)
        for dep in wheels[name].requires:
            if not applies(dep, extras_of[name]):
                continue
            if first or (not applies(dep) and applies(dep, asked)):
                stack.append((f"{wheels[name].name} {wheels[name].version}", dep))
    return wanted


# An image package of unknown version under a requirement with an upper bound (snakemake:
# packaging<26) may be too new: its wheel is carried when it is small; a larger one (pandas<4)
# is left to the image, and run.sh's check on the machine names it if it is out of range.
SMALL_WHEEL = 1 << 20


def _upper_bounded(requirement: Requirement) -> bool:
    return any(spec.operator in ("<", "<=", "==", "~=", "===") for spec in requirement.specifier)


def select(top: list[Requirement], wheels: Mapping[str, Wheel], image: Mapping[str, Version | None],
           force: Iterable[str] = ()) -> set[str]:
    """Names of the wheels to carry: reachable from ``top``, and not met by the image (a known
    version in every range; an unknown version counts as met, except under an upper bound where
    the wheel is small)."""
    carried = {n for n in wheels if n not in image} | {canonicalize_name(n) for n in force if canonicalize_name(n) in wheels}
    while True:
        wanted = walk(top, wheels, carried)
        more = {name for name, reqs in wanted.items() if name in wheels and name not in carried and name in image
                and (not all(_contains(r, image[name]) for _, r in reqs) if image[name] is not None
                     else wheels[name].size <= SMALL_WHEEL and any(_upper_bounded(r) for _, r in reqs))}
        if not more:
            return {name for name in carried if name in wanted}
        carried |= more


def check(top: list[Requirement], wheels: list[Wheel], image: Mapping[str, Version | None]) -> tuple[list[str], list[str]]:
    """(problems, notes) of the carried ``wheels`` with the ``image``."""
    problems, notes = [], []
    by_name: dict[str, Wheel] = {}
    for wheel in wheels:
        if wheel.name in by_name:
            problems.append(f"{wheel.name}: two wheels ({by_name[wheel.name].file}, {wheel.file}); pip --target stops on that")
        by_name[wheel.name] = wheel
        problem = tag_problem(wheel)
        if problem:
            problems.append(problem)
    wanted = walk(top, by_name, set(by_name), seeds=by_name)  # each carried wheel's own requirements too
    for name, reqs in sorted(wanted.items()):
        for who, requirement in reqs:
            if who == SEED:
                continue
            where = f"{who} requires '{requirement}'"
            if name in by_name:
                if not _contains(requirement, by_name[name].version):
                    problems.append(f"{where}: carried {by_name[name].file} is outside it")
            elif name in image:
                version = image[name]
                if version is None:
                    notes.append(f"{where}: the image has {name} at a version not in its list (unverified)")
                elif not _contains(requirement, version):
                    problems.append(f"{where}: the image has {name} {version}, outside it, and no wheel is carried")
            else:
                problems.append(f"{where}: neither carried nor in the image")
    top_names = {canonicalize_name(r.name) for r in top}
    unneeded = [w.file for w in wheels if w.name not in top_names
                and not any(who != SEED for who, _ in wanted.get(w.name, []))]
    notes += [f"{file}: no carried requirement needs it" for file in unneeded]
    return list(dict.fromkeys(problems)), sorted(set(notes))


def read_requirements(path: Path) -> list[Requirement]:
    lines = [line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [Requirement(line) for line in lines if line]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the carried wheels (*.whl) and requirements.txt, e.g. .whl")
    parser.add_argument("--image", type=Path, default=IMAGE_LIST, help="the image's package list (default: %(default)s)")
    parser.add_argument("--installed", action="store_true",
                        help="check against the packages this interpreter sees (on the GPU machine, after the install)")
    parser.add_argument("--quiet", action="store_true", help="print problems only")
    args = parser.parse_args(argv)
    wheels = [read_wheel(p) for p in sorted(args.folder.glob("*.whl"))]
    top = read_requirements(args.folder / "requirements.txt") if (args.folder / "requirements.txt").is_file() else []
    if args.installed:
        image = installed_packages()
        problems, notes = check(top, wheels, image)
        for wheel in wheels:  # each carried wheel is what is installed, at its version
            if image.get(wheel.name) != wheel.version:
                problems.append(f"{wheel.name}: {wheel.file} carried, {image.get(wheel.name) or 'nothing'} found by importlib.metadata")
    else:
        problems, notes = check(top, wheels, read_image_list(args.image))
    if not args.quiet:
        for note in notes:
            print(f"note: {note}")
        print(f"{len(wheels)} wheels, {len(top)} top-level requirements: "
              + ("complete" if not problems else f"{len(problems)} problem(s)"))
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
