"""Markdown cells and tables of the results summary, the claims and the merged GPU result
(GitHub's rendering: a pipe in a cell is escaped, even inside backticks)."""
from __future__ import annotations

from typing import Any


def cell(value: Any, digits: int = 2) -> str:
    """A value in a table cell: floats to ``digits`` decimals (two significant digits when
    smaller), None empty."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}" if abs(value) >= 10 ** -digits or value == 0 else f"{value:.2g}"
    return str(value).replace("|", "\\|")


def code(text: str) -> str:
    """Code in a GitHub table cell: a pipe is escaped even inside backticks (GitHub shows ``|``)."""
    return "`" + text.replace("|", "\\|") + "`"


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a Markdown table, and a blank line."""
    return (["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
            + ["| " + " | ".join(row) + " |" for row in rows] + [""])


def mean_sd(score: Any, sd: Any) -> str:
    """``score ± sd`` (``score`` alone without a standard deviation; empty without a score)."""
    return cell(score) + (f" ± {cell(sd)}" if sd is not None else "") if score is not None else ""
