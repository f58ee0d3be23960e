"""What "significant" means for a claim (:mod:`.rules`): the level and the paper's own test of
its paper's convention (:data:`workflow_scripts.evaluation.markers.SIGNIFICANCE`), or those that
a claim of your own declares."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workflow_scripts.evaluation.claim_files import OWN_TESTS
from workflow_scripts.evaluation.markers import significance_of


def paper_level(paper: str) -> float:
    """The significance level of the paper's convention (its loosest marker's alpha)."""
    return max(alpha for alpha, _, _ in significance_of(paper).markers.levels)


@dataclass(frozen=True)
class Convention:
    """What "significant" means for a claim: the ``level`` and the paper's own ``test`` beside the
    stratified AR test (``"sign"``, or None for the AR test alone)."""

    level: float
    test: str | None

    @classmethod
    def of(cls, paper: str | Convention) -> Convention:
        """The convention of a paper (:data:`.markers.SIGNIFICANCE`; a name of your own: the project's)."""
        return paper if isinstance(paper, Convention) else cls(paper_level(paper), significance_of(paper).paper_test)


def claim_convention(claim: dict[str, Any]) -> Convention:
    """A claim's convention: its paper's, with the ``test`` and ``level`` a claim of your own declares."""
    paper = Convention.of(claim["paper"])
    return Convention(float(claim.get("level") or paper.level), OWN_TESTS[claim["test"]] if "test" in claim else paper.test)
