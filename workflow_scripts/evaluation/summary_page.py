"""The results summary as one self-contained HTML page, verdicts first (``summary.html``, the
page the Snakemake report opens from its landing page): from the same ``summary.json`` and
``summary.md`` that the rule ``results_summary`` writes (:mod:`.summary`), nothing recomputed.

* At the top, the machine and commit in one line, then one figure (:mod:`.verdict_figure`, a PNG
  embedded as a data URI): each claim's and each control comparison's difference of the means
  with its 95% interval, coloured by verdict class, the smallest difference of interest marked;
* a compact verdict table: system, the paper's claim, difference [95% interval], verdict,
  reason and what stands beside it (:func:`.verdicts.rules.qualifiers`);
* then the sections of ``summary.md`` rendered (Python-Markdown, its ``tables`` extension): the
  claims first, the wide ones (training runs, scores, fair comparison, machine) folded in a
  ``<details>`` element that a click opens.

    python -m workflow_scripts.evaluation.summary_page --json summary.json [--markdown summary.md]
        --html summary.html

Without ``--markdown`` the sections are rendered from the JSON (:func:`.summary.to_markdown`).
"""
from __future__ import annotations

import argparse
import base64
import html
import json
import re
import sys
from pathlib import Path
from typing import Any

import markdown

from nmtmodels.files import DataError, atomic_write_text
from workflow_scripts.evaluation import verdict_figure
from workflow_scripts.evaluation.summary import to_markdown
from workflow_scripts.evaluation.verdicts.report import interval_cell

# Sections of summary.md shown open, in this order, before the others; the rest keep the
# summary's order, and those in FOLDED are closed until clicked.
FIRST = ("Warnings", "Claims and verdicts", "Your claims", "Your own experiments", "ESC compressors")
FOLDED = ("Machine and workflow", "Training runs", "Scores", "Scores of every run", "Fair comparison")

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 1.2em 2em;
       color: #222; max-width: 1400px; line-height: 1.4; }
h1 { font-size: 1.5em; margin: 0 0 0.2em; } h2 { font-size: 1.25em; margin-top: 1.4em; }
.provenance { color: #555; font-size: 0.85em; margin: 0 0 0.8em; }
figure { margin: 0.5em 0; } figure img { max-width: 100%; height: auto; }
figcaption { color: #444; font-size: 0.85em; max-width: 1000px; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; text-align: left; }
th { background: #f0f0f0; }
table.verdicts { min-width: 960px; } table.verdicts td.claim-text { max-width: 22em; }
table.verdicts td.number { white-space: nowrap; font-variant-numeric: tabular-nums; }
table.verdicts tr.control td { background: #fafafa; font-size: 0.95em; }
table.verdicts tr.control td:first-child { padding-left: 1.6em; }
.claim-text, .detail { color: #555; font-size: 0.9em; }
.verdict { font-weight: bold; white-space: nowrap; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.35em; border: 1px solid #444;
          vertical-align: -0.05em; }
ul.qualifiers { margin: 0.2em 0 0; padding-left: 1.1em; color: #555; }
.wide { overflow-x: auto; }
details { margin: 0.6em 0; } details > summary { cursor: pointer; font-size: 1.15em; font-weight: bold; }
details > summary .hint { font-weight: normal; font-size: 0.75em; color: #666; }
code { font-size: 0.9em; }
"""


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text))


def verdict_html(verdict: str) -> str:
    """The verdict in words after a swatch of its colour (:data:`.verdict_figure.COLOURS`)."""
    colour = verdict_figure.COLOURS.get(verdict, "#000000")
    return f'<span class="verdict"><span class="swatch" style="background:{colour}"></span>{_e(verdict)}</span>'


def verdict_table(rows: list[dict[str, Any]]) -> str:
    """The compact table under the figure: one row per row of the figure (:func:`.verdict_figure.figure_rows`)."""
    if not rows:
        return "<p>No system of this run has a claim with runs to compare.</p>"
    body = []
    for row in rows:
        paper = (f'<div class="detail">the paper\'s difference: {row["paper_delta"]:+g}</div>'
                 if row.get("paper_delta") is not None else
                 f'<div class="detail">smallest difference of interest: {row["smallest"]:+g}</div>'
                 if row.get("smallest") is not None else "")
        difference = interval_cell(row) if row.get("delta") is not None else "–"
        qualifiers = ('<ul class="qualifiers">' + "".join(f"<li>{_e(q)}</li>" for q in row["qualifiers"]) + "</ul>"
                      if row["qualifiers"] else "")
        body.append(f'<tr class="{row["kind"]}"><td><b>{_e(row["label"])}</b><div class="detail">{_e(row["detail"])}</div></td>'
                    f'<td class="claim-text">{_e(row["claim"])}</td><td class="number">{_e(difference)}{paper}</td>'
                    f"<td>{verdict_html(row['verdict'])}</td><td>{_e(row['why'])}{qualifiers}</td></tr>")
    return ('<div class="wide"><table class="verdicts"><thead><tr><th>system</th><th>paper\'s claim (controls: what they '
            "rule out)</th><th>difference [95% interval]</th><th>verdict</th><th>reason; beside it</th></tr></thead>"
            "<tbody>" + "".join(body) + "</tbody></table></div>")


def sections(markdown_text: str) -> list[tuple[str, str]]:
    """(title, Markdown) of each ``## `` section of summary.md; the title block above the first is dropped."""
    found: list[tuple[str, list[str]]] = []
    for line in markdown_text.splitlines():
        if line.startswith("## "):
            found.append((line[3:].strip(), []))
        elif found:
            found[-1][1].append(line)
    return [(title, "\n".join(lines).strip() + "\n") for title, lines in found]


def render_markdown(text: str) -> str:
    """Markdown to HTML (Python-Markdown with tables), every table in a horizontally scrolling box, and
    a pipe that summary.md escapes for GitHub inside a code span (:func:`.markdown_tables.code`) as a pipe."""
    rendered = markdown.markdown(text, extensions=["tables"], output_format="html")
    # summary.md escapes a pipe inside backticks for GitHub's tables; a code span keeps the backslash
    rendered = re.sub(r"<code>(.*?)</code>", lambda m: "<code>" + m.group(1).replace("\\|", "|") + "</code>", rendered,
                      flags=re.DOTALL)
    return rendered.replace("<table>", '<div class="wide"><table>').replace("</table>", "</table></div>")


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def sections_html(markdown_text: str) -> str:
    """The sections of summary.md (:func:`sections`): :data:`FIRST` open and first, the others
    after them in the summary's order, :data:`FOLDED` in a closed ``<details>``."""
    parts = sections(markdown_text)
    ordered = sorted(parts, key=lambda p: FIRST.index(p[0]) if p[0] in FIRST else len(FIRST))
    out = []
    for title, text in ordered:
        body = render_markdown(text)
        if title in FOLDED:
            rows = sum(1 for line in text.splitlines() if line.startswith("| ")) - text.count("\n|---")
            hint = f" ({rows} table rows; click to open)" if rows > 0 else " (click to open)"
            out.append(f'<details id="{_slug(title)}"><summary>{_e(title)}<span class="hint">{_e(hint)}</span>'
                       f"</summary>{body}</details>")
        else:
            out.append(f'<section id="{_slug(title)}"><h2>{_e(title)}</h2>{body}</section>')
    return "\n".join(out)


def provenance(summary: dict[str, Any]) -> str:
    """Made when, on what, from which commit and config files, in one line."""
    m, w = summary.get("machine") or {}, summary.get("workflow") or {}
    gpus = ", ".join(m.get("gpus") or []) or "none"
    configs = ", ".join(w.get("config_files") or []) or "none given"
    return (f"Made {summary.get('generated_utc', '?')} on {m.get('cpu', '?')} ({m.get('logical_cores', '?')} logical "
            f"cores; GPU: {gpus}), workflow commit {str(w.get('commit', '?'))[:12]}, config files: {configs}. "
            "The same facts: summary.md and summary.json beside this page.")


FIGURE_CAPTION = (
    "Each claim (bold) against its baseline, under it its controls (a must-beat control: the system minus the control; "
    "beside: the control minus its baseline). Dot: the difference of the mean scores over the runs; bar: its 95% "
    "interval; open diamond: the smallest difference of interest (the paper's difference, or one declared with its "
    "source). Colour and the words at the right: the verdict, one on this training budget: purple where the runs "
    "decide against the claim (not reproduced at the paper's size, explained by a control).")


def page(summary: dict[str, Any], markdown_text: str) -> str:
    """The whole page (module docstring)."""
    rows = verdict_figure.figure_rows(summary)
    figure = ""
    if rows:
        data = base64.b64encode(verdict_figure.figure_png(summary)).decode("ascii")
        figure = (f'<figure id="verdict-figure"><img alt="difference of the means with its 95% interval per claim and '
                  f'control, coloured by verdict" src="data:image/png;base64,{data}"><figcaption>{_e(FIGURE_CAPTION)}'
                  "</figcaption></figure>")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Results summary</title>"
            f"<style>{STYLE}</style></head><body>\n<h1>Results summary: claims and verdicts</h1>"
            f'<p class="provenance">{_e(provenance(summary))}</p>\n{figure}\n'
            f'<h2 id="verdicts">Verdicts</h2>\n{verdict_table(rows)}\n'
            "<p class=\"detail\">How each verdict is decided, and the evidence behind it: the section below. Wide "
            "tables further down are folded: click a title to open it.</p>\n"
            f"{sections_html(markdown_text)}\n</body></html>\n")


def read_summary(json_path: str | Path) -> dict[str, Any]:
    path = Path(json_path)
    if not path.is_file():
        raise DataError(path, "no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(path, f"not JSON ({exc})") from None
    if not isinstance(data, dict) or "claims" not in data:
        raise DataError(path, "not a results summary (python -m workflow_scripts.evaluation.summary)")
    return data


def write_page(json_path: str | Path, html_path: str | Path, markdown_path: str | Path | None = None) -> None:
    """``html_path`` from a summary's JSON and its Markdown (without one: made from the JSON)."""
    summary = read_summary(json_path)
    if markdown_path is None:
        text = to_markdown(summary)
    else:
        if not Path(markdown_path).is_file():
            raise DataError(markdown_path, "no such file")
        text = Path(markdown_path).read_text(encoding="utf-8")
    atomic_write_text(html_path, page(summary, text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.summary_page",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, help="results/report/summary.json")
    parser.add_argument("--markdown", help="results/report/summary.md (default: made from the JSON)")
    parser.add_argument("--html", required=True, help="the page to write (results/report/summary.html)")
    args = parser.parse_args(argv)
    try:
        write_page(args.json, args.html, args.markdown)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
