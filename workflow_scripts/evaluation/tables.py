"""The tidy results table and the papers' result tables (Markdown, LaTeX, HTML): the command.

``collect`` writes the results table (:mod:`.results`: one row per experiment, corpus, test
set and metric, with the comparison with the best baseline and the model's size and speed)
as CSV; ``render`` writes one paper's tables (:mod:`.layouts`: rows, columns, bold and notes;
:mod:`.markers`: the paper's significance markers), or the generic comparison table of your own
experiments (``paper: NAME`` with a name of your own), as Markdown, LaTeX and HTML documents
(:func:`render_paper`).

    python -m workflow_scripts.evaluation.tables collect --metadata JSON --output results.csv
    python -m workflow_scripts.evaluation.tables render --results results.csv --paper lattice
        [--marker-test sign] [--summary summary.json] --markdown lattice.md --latex lattice.tex --html lattice.html
"""
from __future__ import annotations

import argparse
import html
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from nmtmodels.files import DataError, atomic_output
from nmtmodels.text.scoring import registered_metrics
from workflow_scripts.evaluation.layouts import LAYOUTS, Cell, Grid, comparison_grids, paper_grids
from workflow_scripts.evaluation.markers import NO_VERDICTS_NOTE, TEST_NAMES, VERDICT_NOTE
from workflow_scripts.evaluation.results import P_COLUMNS, collect_results, read_json, read_results

# ----------------------------------------------------------------------------- formats
_LATEX_MARKERS = {"†": r"$^{\dagger}$", "‡": r"$^{\ddagger}$", "++": "$^{++}$", "+": "$^{+}$", "−−": "$^{--}$", "−": "$^{-}$"}


def _frame(grid: Grid, cell_text) -> pd.DataFrame:
    grouped = any(group for group, _ in grid.columns)
    columns = pd.MultiIndex.from_tuples(grid.columns) if grouped else [name for _, name in grid.columns]
    return pd.DataFrame([[cell_text(j, cell) for j, cell in enumerate(row)] for row in grid.rows], columns=columns)


def to_markdown(grid: Grid) -> str:
    def text(j: int, cell: Cell) -> str:
        value = cell.text + cell.marker
        return (f"**{value}**" if cell.bold else value) + (f" ({cell.words})" if cell.words else "")

    frame = _frame(grid, text)
    if isinstance(frame.columns, pd.MultiIndex):
        frame.columns = [f"{group} {name}".strip() for group, name in frame.columns]
    table = frame.to_markdown(index=False, disable_numparse=True)
    notes = "\n".join(f"- {note}" for note in grid.notes + [grid.significance.legend(grid.marker_test)])
    return f"### {grid.caption}\n\n{table}\n\n{notes}\n"


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": "$<$", ">": "$>$",
                   "|": r"\textbar{}", "±": r"$\pm$", "−": "$-$"}


def _latex_escape(text: str) -> str:
    """Caption and note text for LaTeX (the Styler escapes the cells it formats itself)."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def to_latex(grid: Grid) -> str:
    def text(j: int, cell: Cell) -> str:
        if j < grid.n_labels:
            return cell.text  # escaped by the Styler below
        value = cell.text.replace("–", "--").replace(" ± ", r" $\pm$ ")
        value = rf"\textbf{{{value}}}" if cell.bold else value
        words = rf" {{\footnotesize ({_latex_escape(cell.words)})}}" if cell.words else ""
        return value + _LATEX_MARKERS.get(cell.marker, "") + words

    frame = _frame(grid, text)
    styler = frame.style.hide(axis="index").format(escape="latex", subset=pd.IndexSlice[:, frame.columns[: grid.n_labels]])
    styler = styler.format_index(escape="latex", axis=1)
    align = "l" * grid.n_labels + "r" * (len(grid.columns) - grid.n_labels)
    body = styler.to_latex(column_format=align, hrules=True, multicol_align="c", position="t",
                           caption=_latex_escape(grid.caption), label=grid.label, position_float="centering")
    legend = grid.significance.legend(grid.marker_test, render=_LATEX_MARKERS.__getitem__, escape=_latex_escape)
    notes = " ".join([_latex_escape(note) for note in grid.notes] + [legend])
    return body.replace(r"\end{table}", f"\\par\\footnotesize {notes}\n\\end{{table}}") + "\n"


def to_html(grid: Grid) -> str:
    def text(j: int, cell: Cell) -> str:
        value = html.escape(cell.text) + (f"<sup>{html.escape(cell.marker)}</sup>" if cell.marker else "")
        return (f"<b>{value}</b>" if cell.bold else value) + (f" <small>({html.escape(cell.words)})</small>" if cell.words else "")

    frame = _frame(grid, text)
    table = frame.style.hide(axis="index").set_caption(html.escape(grid.caption)).to_html()
    legend = grid.significance.legend(grid.marker_test, render=lambda m: f"<sup>{html.escape(m)}</sup>", escape=html.escape)
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in grid.notes) + f"<li>{legend}</li>"
    return f"<section>\n{table}\n<ul>{notes}</ul>\n</section>\n"


def tested_metrics(results: pd.DataFrame, paper: str) -> list[str]:
    """The metrics with significance tests among ``paper``'s rows (registry order)."""
    rows = results[results["paper"] == paper]
    tested = rows[[P_COLUMNS[test] for test in TEST_NAMES]].notna().any(axis=1)
    present = set(rows.loc[tested, "metric"])
    return [name for name in registered_metrics() if name in present]


def table_grids(results: pd.DataFrame, paper: str, marker_test: str = "sign",
                claims: list[dict[str, Any]] | None = None) -> list[Grid]:
    """The tables of ``paper``: one of the five papers' layouts (:data:`.layouts.LAYOUTS`), or for
    any other name the generic comparison table of its experiments
    (:func:`.layouts.comparison_grids`, one per tested metric).  ``claims``: the results
    summary's claims with their verdicts, whose rows take the verdict's marker (None: no summary
    read, every marker is its test's alone); each table's notes say which."""
    if paper in LAYOUTS:
        grids = paper_grids(results, paper, marker_test, claims)
    else:
        grids = comparison_grids(results, paper, tested_metrics(results, paper), marker_test, claims)
    for grid in grids:
        grid.notes.append(VERDICT_NOTE if claims is not None else NO_VERDICTS_NOTE)
    return grids


def render_paper(results: pd.DataFrame, paper: str, marker_test: str = "sign",
                 claims: list[dict[str, Any]] | None = None) -> dict[str, str]:
    """Markdown, LaTeX and HTML documents holding every table of ``paper`` (:func:`table_grids`)."""
    grids = table_grids(results, paper, marker_test, claims)
    if not grids:
        empty = f"No results of {paper} experiments."
        return {"markdown": empty + "\n", "latex": f"% {empty}\n", "html": f"<p>{html.escape(empty)}</p>\n"}
    return {
        "markdown": "\n".join(to_markdown(g) for g in grids),
        "latex": "% requires \\usepackage{booktabs}\n" + "\n".join(to_latex(g) for g in grids),
        "html": "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
                + html.escape(paper) + "</title></head><body>\n" + "".join(to_html(g) for g in grids) + "</body></html>\n",
    }


# ----------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.tables", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    collect = sub.add_parser("collect", help="gather scores, p-values and model information into one CSV")
    collect.add_argument("--metadata", required=True, help="JSON from workflow_scripts.dag.evaluation.report_metadata")
    collect.add_argument("--output", required=True)
    render = sub.add_parser("render", help="one paper's tables as Markdown, LaTeX and HTML")
    render.add_argument("--results", required=True)
    render.add_argument("--paper", required=True, help=f"one of {', '.join(LAYOUTS)}, or the name of your own experiments' table")
    render.add_argument("--marker-test", default="sign", choices=list(TEST_NAMES))
    render.add_argument("--summary", help="the results summary's JSON: rows of its claims take their verdict's marker")
    render.add_argument("--markdown", required=True)
    render.add_argument("--latex", required=True)
    render.add_argument("--html", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "collect":
            frame = collect_results(json.loads(args.metadata))
            with atomic_output(args.output) as handle:
                frame.to_csv(handle, index=False)
        else:
            claims = (read_json(Path(args.summary)).get("claims") or []) if args.summary else None
            documents = render_paper(read_results(args.results), args.paper, args.marker_test, claims)
            for key in ("markdown", "latex", "html"):
                with atomic_output(getattr(args, key)) as handle:
                    handle.write(documents[key])
    except (DataError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
