"""One idea per module: no Python module of the workflow's scripts or the benchmarks is longer
than :data:`LIMIT` lines (test files aside), so that a module that gathers a second idea is
split by idea instead of growing.  The package's modules have the same guard in its own tests
(``nmtmodels/tests/test_imports.py``), with the same limit."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 520
GUARDED = ("workflow_scripts", "benchmarks")


def own_modules(folders: tuple[str, ...]) -> list[Path]:
    """Every Python module under ``folders``, test modules aside, and nothing of what runs leave
    there (the peers' environments in ``benchmarks/.venvs``, ``benchmarks/runs``)."""
    def ours(path: Path) -> bool:
        parts = path.relative_to(ROOT).parts
        return "tests" not in parts and parts[:2] != ("benchmarks", "runs") and not any(p.startswith(".") for p in parts)

    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py") if ours(path))


def modules() -> list[Path]:
    """The modules under :data:`GUARDED` (:func:`own_modules`)."""
    return own_modules(GUARDED)


def too_long(paths: list[Path], root: Path = ROOT) -> list[str]:
    """``PATH: N lines`` (relative to ``root``) of each module over :data:`LIMIT` lines."""
    found = []
    for path in paths:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LIMIT:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def test_every_guarded_folder_is_read() -> None:
    found = {path.relative_to(ROOT).parts[0] for path in modules()}
    assert found == set(GUARDED)
    assert ROOT / "workflow_scripts" / "evaluation" / "tables.py" in modules()
    assert ROOT / "benchmarks" / "throughput.py" in modules()
    assert not any("tests" in path.relative_to(ROOT).parts for path in modules())


def test_the_guard_counts_lines(tmp_path: Path) -> None:
    short, long = tmp_path / "short.py", tmp_path / "long.py"
    short.write_text("x = 1\n" * LIMIT, encoding="utf-8")
    long.write_text("x = 1\n" * (LIMIT + 1), encoding="utf-8")
    assert too_long([short, long], tmp_path) == [f"long.py: {LIMIT + 1} lines"]


def test_modules_are_at_most_520_lines() -> None:
    assert not too_long(modules()), too_long(modules())


def test_the_package_guard_has_the_same_limit() -> None:
    text = (ROOT / "nmtmodels" / "tests" / "test_imports.py").read_text(encoding="utf-8")
    assert f"if lines > {LIMIT}:" in text
