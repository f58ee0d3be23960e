"""The captions of the Snakemake report (report/*.rst) agree with the code they describe."""
from __future__ import annotations

import re
from pathlib import Path

from workflow_scripts.evaluation.verdicts.rules import VERDICTS

ROOT = Path(__file__).resolve().parents[1]


def test_the_summary_caption_names_exactly_the_verdict_classes():
    text = " ".join((ROOT / "report" / "summary.rst").read_text(encoding="utf-8").split())
    listed = re.search(r"Verdicts: (.*?)\.(?: |$)", text)
    assert listed, "report/summary.rst lists no verdicts"
    assert listed.group(1).split(", ") == list(VERDICTS)
    # the old bare class "not reproduced" no longer exists; "not reproduced at the paper's size" does
    assert "not reproduced" not in text.replace("not reproduced at the paper's size", "")
