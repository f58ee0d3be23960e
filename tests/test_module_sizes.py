"""One idea per module: no Python module of the package, the workflow's scripts or the benchmarks
is longer than :data:`LIMIT` lines (test modules aside), so that a module that gathers a second
idea is split by idea instead of growing.  Each check measures the files themselves."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 520
GUARDED = ("nmtmodels", "workflow_scripts", "benchmarks")


def own_modules(folders: tuple[str, ...], root: Path = ROOT) -> list[Path]:
    """Every Python module under ``folders`` of ``root``, test modules aside, and nothing of what
    runs leave there (the peers' environments in ``benchmarks/.venvs``, ``benchmarks/runs``)."""
    def ours(path: Path) -> bool:
        parts = path.relative_to(root).parts
        return "tests" not in parts and parts[:2] != ("benchmarks", "runs") and not any(p.startswith(".") for p in parts)

    return sorted(path for folder in folders for path in (root / folder).rglob("*.py") if ours(path))


def too_long(paths: list[Path], root: Path = ROOT) -> list[str]:
    """``PATH: N lines`` (relative to ``root``) of each module over :data:`LIMIT` lines."""
    found = []
    for path in paths:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LIMIT:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


@pytest.mark.parametrize("folder", GUARDED)
def test_modules_are_at_most_520_lines(folder: str) -> None:
    modules = own_modules((folder,))
    assert len(modules) > 5, f"{folder}: only {len(modules)} modules read"
    assert not too_long(modules), too_long(modules)


def test_the_guard_reads_the_modules_and_leaves_out_the_tests() -> None:
    modules = own_modules(GUARDED)
    for module in ("nmtmodels/decoding/search.py", "nmtmodels/cli/train.py", "nmtmodels/testing.py",
                   "workflow_scripts/evaluation/tables.py", "benchmarks/throughput.py"):
        assert ROOT / module in modules, module
    assert not any("tests" in path.relative_to(ROOT).parts for path in modules)


def test_the_guard_finds_a_long_module_and_only_that(tmp_path: Path) -> None:
    """In a tree like the repository's: a module one line over the limit is reported, one at the
    limit is not, and neither are test modules nor what benchmark runs leave behind."""
    files = {
        "nmtmodels/at_the_limit.py": LIMIT,
        "nmtmodels/decoding/one_over.py": LIMIT + 1,
        "nmtmodels/tests/test_long.py": 2 * LIMIT,
        "workflow_scripts/data/at_the_limit.py": LIMIT,
        "benchmarks/runs/throughput/left_by_a_run.py": 2 * LIMIT,
        "benchmarks/.venvs/peer/lib/site.py": 2 * LIMIT,
        "tests/test_long.py": 2 * LIMIT,
    }
    for name, lines in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n" * lines, encoding="utf-8")
    modules = own_modules(GUARDED, tmp_path)
    assert [path.relative_to(tmp_path).as_posix() for path in modules] == [
        "nmtmodels/at_the_limit.py", "nmtmodels/decoding/one_over.py", "workflow_scripts/data/at_the_limit.py"]
    assert too_long(modules, tmp_path) == [f"nmtmodels/decoding/one_over.py: {LIMIT + 1} lines"]
