"""The one figure the results page opens with: per claim and per control comparison of a
results summary (``summary.json``'s ``claims``, :mod:`.verdicts`), the difference of the means
with its 95% interval (:mod:`.uncertainty`), coloured by verdict class, with the paper's
difference marked where the claim gives one; a control that did not run is a row that says so.

:func:`figure_rows` gives the rows (the numbers the figure draws, for tests and the page's
table); :func:`verdict_figure` draws them; :func:`figure_png` is the PNG's bytes.
"""
from __future__ import annotations

import io
from typing import Any

from workflow_scripts.evaluation import agg

NOT_RUN = "not run"
# One colour per verdict class (verdicts.rules.VERDICTS; tests/test_summary_page.py checks) and for a control that did not run: green
# for a reproduced difference, red for a reversed one, purple for the decided negatives (not reproduced at the paper's
# size, explained by a control), amber for inconclusive, greys where the comparison says nothing about the methods;
# the 1-run classes in lighter tones of the same.
COLOURS = {
    "reproduced": "#1a9850",
    "suggestive (1 run)": "#91cf60",
    "reversed": "#d73027",
    "not reproduced at the paper's size": "#762a83",
    "explained by a control": "#9970ab",
    "inconclusive": "#e08214",
    "inconclusive (1 run)": "#fdb863",
    "not comparable": "#6a6a6a",
    "not measurable at this budget": "#a6a6a6",
    NOT_RUN: "#d9d9d9",
}
ROLE_WORDS = {"must_beat": "must beat", "beside": "beside"}


def _interval(row: dict[str, Any]) -> tuple[float | None, float | None]:
    interval = row.get("interval") or {}
    return interval.get("low"), interval.get("high")


def figure_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per claim (against its baseline) and, under it, one per control of the claim:
    ``label``, ``detail``, ``kind`` (claim / control), ``delta``, ``interval`` (``low``, ``high``),
    ``paper_delta`` and ``smallest`` (the smallest difference of interest; claims only), ``verdict``
    (a :data:`.verdicts.rules.VERDICTS` class, or :data:`NOT_RUN`), ``why``, ``qualifiers``.  A must-beat
    control's difference is the system's minus the control's; a beside control's, the control's
    minus its baseline's."""
    rows = []
    claims = [v for v in summary.get("claims") or [] if "corpus" in v]  # without: no comparison over runs
    pairs = [(v["system"], v["baseline"]) for v in claims]
    for v in claims:
        low, high = _interval(v)
        where = f" ({v['test_set']})" if pairs.count((v["system"], v["baseline"])) > 1 else ""  # one pair, several test sets
        rows.append({"kind": "claim", "label": f"{v['system']} vs {v['baseline']}{where}",
                     "detail": f"{v['paper']}{' (your claim)' if v.get('own') else ''}, {v['metric']}, "
                               f"{v['corpus']} / {v['test_set']}, {v.get('n', '?')} runs",
                     "claim": v.get("claim", ""), "delta": v.get("delta"), "interval": v.get("interval"), "low": low,
                     "high": high, "paper_delta": v.get("paper_delta"),
                     "smallest": (v.get("smallest") or {}).get("value", v.get("paper_delta")),
                     "verdict": v["verdict"], "why": v.get("why", ""),
                     "qualifiers": list(v.get("qualifiers") or [])})
        for c in v.get("controls") or []:
            role = ROLE_WORDS.get(c["role"], c["role"])
            pair = c.get("pair") or [v["system"], c["experiment"]]
            base = {"kind": "control", "label": f"{role}: {c['experiment']}", "detail": f"{pair[0]} vs {pair[1]}",
                    "claim": c.get("what", ""), "paper_delta": None, "smallest": None, "role": c["role"], "qualifiers": []}
            if not c.get("run"):
                rows.append({**base, "delta": None, "interval": None, "low": None, "high": None, "verdict": NOT_RUN,
                             "why": "no comparison over runs of it in this run"
                                    + ("" if v.get("own") else " (configs/controls.yaml runs it)")})
                continue
            low, high = _interval(c)
            rows.append({**base, "delta": c.get("delta"), "interval": c.get("interval"), "low": low, "high": high, "verdict": c["verdict"],
                         "why": c.get("why", "")})
    return rows


def verdict_figure(rows: list[dict[str, Any]]):
    """The figure of ``rows`` (:func:`figure_rows`): one horizontal line per row from the
    interval's low to its high end, a dot at the difference of the means, an open diamond at
    the smallest difference of interest, the verdict in words at the right; a row without numbers (a control
    not run, a claim without runs) says so at zero."""
    from matplotlib.lines import Line2D  # lazy: matplotlib only where a figure is drawn

    plt = agg.pyplot()

    height = 1.3 + 0.34 * max(len(rows), 1)
    fig, ax = plt.subplots(figsize=(10.0, height), layout="constrained")
    ys = list(range(len(rows)))[::-1]  # the first row at the top
    for y, row in zip(ys, rows):
        colour = COLOURS.get(row["verdict"], "#000000")
        if row["kind"] == "control":
            ax.axhspan(y - 0.5, y + 0.5, color="#f4f4f4", zorder=0, linewidth=0)
        if row["delta"] is None:
            ax.text(0, y, f"  {row['verdict']}", va="center", ha="left", fontsize=8, style="italic", color="#555555")
            continue
        if row["low"] is not None and row["high"] is not None:
            ax.plot([row["low"], row["high"]], [y, y], color=colour, linewidth=4, solid_capstyle="butt", zorder=2)
        ax.plot(row["delta"], y, "o", color=colour, markeredgecolor="black", markersize=7, zorder=3)
        if row.get("smallest") is not None:
            ax.plot(row["smallest"], y, "D", markerfacecolor="none", markeredgecolor="black", markersize=8, zorder=4)
    ax.axvline(0, color="black", linewidth=0.8, linestyle="--", zorder=1)
    ax.set_yticks(ys, [("    " if r["kind"] == "control" else "") + r["label"] for r in rows], fontsize=9)
    for tick, row in zip(ax.get_yticklabels(), rows):
        tick.set_fontweight("bold" if row["kind"] == "claim" else "normal")
    ax.set_ylim(-0.6, len(rows) - 0.4)
    for y, row in zip(ys, rows):  # the verdict in words, right of the plot (colour is not the only cue)
        ax.annotate(row["verdict"], (1.0, y), xycoords=("axes fraction", "data"), xytext=(6, 0),
                    textcoords="offset points", va="center", fontsize=8, color=_darker(COLOURS.get(row["verdict"])),
                    fontweight="bold" if row["kind"] == "claim" else "normal")
    ax.set_xlabel("difference of the means, system minus baseline (points of the claim's metric), "
                  "with its 95% interval over seeds and test sentences", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    present = list(dict.fromkeys(r["verdict"] for r in rows))
    handles = [Line2D([], [], color=COLOURS.get(v, "#000000"), linewidth=4, label=v) for v in present if v != NOT_RUN]
    handles.append(Line2D([], [], linestyle="", marker="D", markerfacecolor="none", markeredgecolor="black",
                          label="smallest difference of interest"))
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4), fontsize=8, frameon=False)
    return fig


def _darker(colour: str | None) -> str:
    """A text colour readable on white: the class colour, the light greys darkened."""
    return {"#d9d9d9": "#777777", "#a6a6a6": "#666666", "#fdb863": "#b35806", "#91cf60": "#4d9221"}.get(colour or "",
                                                                                                     colour or "#000000")


def figure_png(summary: dict[str, Any], dpi: int = 100) -> bytes:
    """The PNG of the figure of ``summary``'s claims (:func:`figure_rows`, :func:`verdict_figure`)."""
    fig = verdict_figure(figure_rows(summary))
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    finally:
        agg.pyplot().close(fig)
    return buffer.getvalue()
