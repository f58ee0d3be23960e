"""tools/module_sizes.py: the list of long modules, a warning that never fails a run."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tools.module_sizes import MEASURED, ROOT, WARN_LINES, long_modules, own_modules


def test_the_list_reads_the_modules_and_leaves_out_the_tests() -> None:
    modules = own_modules(MEASURED)
    for module in ("nmtmodels/decoding/search.py", "nmtmodels/cli/train.py", "nmtmodels/testing.py",
                   "workflow_scripts/evaluation/tables.py", "benchmarks/throughput.py"):
        assert ROOT / module in modules, module
    assert not any("tests" in path.relative_to(ROOT).parts for path in modules)


def test_the_list_finds_a_long_module_and_only_that(tmp_path: Path) -> None:
    """In a tree like the repository's: a module one line over the limit is listed, one at the
    limit is not, and neither are test modules nor what benchmark runs leave behind."""
    files = {
        "nmtmodels/at_the_limit.py": WARN_LINES,
        "nmtmodels/decoding/one_over.py": WARN_LINES + 1,
        "nmtmodels/tests/test_long.py": 2 * WARN_LINES,
        "workflow_scripts/data/two_over.py": WARN_LINES + 2,
        "benchmarks/runs/throughput/left_by_a_run.py": 2 * WARN_LINES,
        "benchmarks/.venvs/peer/lib/site.py": 2 * WARN_LINES,
        "tests/test_long.py": 2 * WARN_LINES,
    }
    for name, lines in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n" * lines, encoding="utf-8")
    modules = own_modules(MEASURED, tmp_path)
    assert [path.relative_to(tmp_path).as_posix() for path in modules] == [
        "nmtmodels/at_the_limit.py", "nmtmodels/decoding/one_over.py", "workflow_scripts/data/two_over.py"]
    assert long_modules(modules, root=tmp_path) == [f"{WARN_LINES + 2:5d}  workflow_scripts/data/two_over.py",
                                                    f"{WARN_LINES + 1:5d}  nmtmodels/decoding/one_over.py"]


def test_the_script_lists_and_exits_0() -> None:
    """Run on its own, it prints the repository's long modules (a low threshold: there are some)
    and exits 0 however many it finds."""
    run = subprocess.run([sys.executable, "tools/module_sizes.py", "--lines", "100"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert "nmtmodels/decoding/search.py" in run.stdout
