"""Modules that grow long: a warning, not a rule.

    python tools/module_sizes.py          # the package's, the workflow scripts' and the benchmarks' modules
    python tools/module_sizes.py --lines 300

lists every Python module (test modules aside) over ``--lines`` lines (default :data:`WARN_LINES`)
and always exits 0.  A long module is a hint that it holds a second idea, to be split by idea
when one is worked on; the fast test loop prints the same list at its end (tests/conftest.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARN_LINES = 450
MEASURED = ("nmtmodels", "workflow_scripts", "benchmarks")


def own_modules(folders: tuple[str, ...], root: Path = ROOT) -> list[Path]:
    """Every Python module under ``folders`` of ``root``, test modules aside, and nothing of what
    runs leave there (the peers' environments in ``benchmarks/.venvs``, ``benchmarks/runs``)."""
    def ours(path: Path) -> bool:
        parts = path.relative_to(root).parts
        return "tests" not in parts and parts[:2] != ("benchmarks", "runs") and not any(p.startswith(".") for p in parts)

    return sorted(path for folder in folders for path in (root / folder).rglob("*.py") if ours(path))


def long_modules(paths: list[Path], lines: int = WARN_LINES, root: Path = ROOT) -> list[str]:
    """``N  PATH`` (relative to ``root``) of each module over ``lines`` lines, longest first."""
    counts = [(len(path.read_text(encoding="utf-8").splitlines()), path.relative_to(root).as_posix()) for path in paths]
    return [f"{count:5d}  {name}" for count, name in sorted(counts, key=lambda c: (-c[0], c[1])) if count > lines]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=WARN_LINES, help="list modules longer than this (default %(default)s)")
    args = parser.parse_args(argv)
    found = long_modules(own_modules(MEASURED), args.lines)
    if found:
        print(f"modules over {args.lines} lines (a hint to split one by idea when you work on it):")
        print("\n".join(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
