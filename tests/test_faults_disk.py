"""A full disk while a workflow job writes its outputs (docs/faults.md): one line naming the file
being written and the free space, the earlier files intact.  A real full file system (a small
tmpfs in a private mount namespace), no fault injected into the writes."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from nmtmodels.tests.test_cli import in_small_tmpfs

ROOT = Path(__file__).resolve().parents[1]

# The summary job's main with its inputs replaced by a large made-up summary: what is tested is
# the write (workflow_scripts.evaluation.summary's atomic_outputs), not the summary.
SUMMARY = """
import sys
from workflow_scripts.evaluation import summary
summary.make_summary = lambda *args, **kwargs: {{"rows": list(range(20000))}}
summary.to_markdown = lambda made: "| a row of the summary |\\n" * 20000
sys.exit(summary.main(["--metadata", "{{}}", "--results", "results.csv", "--markdown", "{markdown}", "--json", "{json}"]))
"""


def test_a_full_disk_while_writing_the_summary_is_one_line_naming_the_file(tmp_path):
    """Before: a traceback ending in ``OSError: [Errno 28] No space left on device``, no file named."""
    full = tmp_path / "report"
    markdown, data = full / "summary.md", full / "summary.json"
    script = tmp_path / "summary_on_a_full_disk.py"
    script.write_text(SUMMARY.format(markdown=markdown, json=data))
    command = (f"printf 'earlier\\n' > {markdown}; PYTHONPATH={ROOT} {sys.executable} {script}; rc=$?; cat {markdown}; ls -a {full}; "
               "exit $rc")
    proc = subprocess.run(in_small_tmpfs(full, 16, command), cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [proc.stderr.splitlines()[-1]], proc.stderr  # one line, no traceback
    assert re.fullmatch(rf"error: {re.escape(str(markdown))}: No space left on device "
                        rf"\([\d,]+ bytes free in {re.escape(str(full))}\)", proc.stderr.strip()), proc.stderr
    assert proc.stdout.split() == ["earlier", ".", "..", "summary.md"]  # the earlier file, no temporary one
