"""The results page (workflow_scripts/evaluation/summary_page.py): the figure of every claim and
control comparison, the verdict table, the summary's sections with the wide ones folded; rendered
in headless Chromium (skipped, saying so, where no Chromium is installed: .ci/run installs it);
the report's landing text links to it."""
from __future__ import annotations

import base64
import html
import json
import re
import struct
from pathlib import Path

import pytest

from workflow_scripts.evaluation import browser, summary_page, verdict_figure
from workflow_scripts.evaluation.verdicts.rules import VERDICTS

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = browser.find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium on this machine "
                                    "(apt-get install chromium; .ci/run installs it, so CI runs this test)")


def claim(system: str, verdict: str, delta: float | None, low: float | None = None, high: float | None = None,
          paper_delta: float | None = None, controls: list | None = None, **extra) -> dict:
    return {"system": system, "baseline": "baseline", "paper": "graph", "metric": "bleu", "corpus": "c", "test_set": "t",
            "n": 3, "claim": f"the paper's claim of {system} <b>", "delta": delta, "paper_delta": paper_delta,
            "interval": {"low": low, "high": high} if low is not None else None, "verdict": verdict,
            "why": f"why {system}", "qualifiers": extra.pop("qualifiers", []), "controls": controls or [], "own": False,
            **extra}


CONTROLS = [
    {"experiment": "ctl_run", "role": "must_beat", "what": "the same without the method", "run": True,
     "pair": ["sys_inconclusive", "ctl_run"], "delta": 0.4, "interval": {"low": -0.2, "high": 1.0},
     "verdict": "inconclusive (1 run)", "why": "better, not significant"},
    {"experiment": "ctl_missing", "role": "beside", "what": "a detail at another value", "run": False,
     "pair": ["ctl_missing", "baseline"]},
]
CLAIMS = [
    claim("sys_reproduced", "reproduced", 1.5, 0.8, 2.2, paper_delta=1.1),
    claim("sys_reversed", "reversed", -1.0, -1.6, -0.4),
    claim("sys_inconclusive", "inconclusive", 0.3, -0.5, 1.1, controls=CONTROLS,
          qualifiers=["underpowered (minimum detectable 2.00 > the paper's 1)", "still improving"]),
    claim("sys_suggestive", "suggestive (1 run)", 0.9, 0.1, 1.7, n=1),
    claim("sys_incomparable", "not comparable", 0.2, -0.3, 0.7),
    claim("sys_unmeasurable", "not measurable at this budget", -0.1, -0.9, 0.7),
    claim("sys_old", "inconclusive", 0.5),  # a comparison made before intervals were recorded
]
SUMMARY = {"generated_utc": "2026-01-01T00:00:00Z",
           "machine": {"cpu": "Test CPU", "logical_cores": 2, "gpus": []},
           "workflow": {"commit": "0123456789abcdef0123", "config_files": ["config.yaml"]}, "claims": CLAIMS}
MARKDOWN = """# Results summary

Made 2026-01-01T00:00:00Z.

## Machine and workflow

- CPU: Test CPU

## Training runs

| experiment | corpus | updates |
|---|---|---|
| sys_reproduced | c | 600 |
| baseline | c | 600 |

## Claims and verdicts

The rule, in words.

## Scores

| experiment | signature |
|---|---|
| sys_reproduced | `nrefs:1\\|case:mixed` |
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("page")
    (folder / "summary.json").write_text(json.dumps(SUMMARY), encoding="utf-8")
    (folder / "summary.md").write_text(MARKDOWN, encoding="utf-8")
    assert summary_page.main(["--json", str(folder / "summary.json"), "--markdown", str(folder / "summary.md"),
                              "--html", str(folder / "summary.html")]) == 0
    return folder


def test_every_verdict_class_has_a_colour():
    assert set(verdict_figure.COLOURS) == {*VERDICTS, verdict_figure.NOT_RUN}
    assert len(set(verdict_figure.COLOURS.values())) == len(verdict_figure.COLOURS)


def test_one_figure_row_per_claim_and_per_control():
    rows = verdict_figure.figure_rows(SUMMARY)
    assert [(r["kind"], r["label"], r["verdict"]) for r in rows[2:5]] == [
        ("claim", "sys_inconclusive vs baseline", "inconclusive"),
        ("control", "must beat: ctl_run", "inconclusive (1 run)"),
        ("control", "beside: ctl_missing", "not run")]
    assert len(rows) == len(CLAIMS) + len(CONTROLS)
    first = rows[0]
    assert (first["delta"], first["low"], first["high"], first["paper_delta"]) == (1.5, 0.8, 2.2, 1.1)
    assert rows[4]["delta"] is None and "configs/controls.yaml" in rows[4]["why"]
    assert rows[-1]["low"] is None  # no interval recorded: a dot without a bar


def test_a_pair_on_several_test_sets_names_the_test_set():
    second = {**CLAIMS[0], "test_set": "t2"}
    labels = [r["label"] for r in verdict_figure.figure_rows({"claims": [CLAIMS[0], second, CLAIMS[1]]})]
    assert labels == ["sys_reproduced vs baseline (t)", "sys_reproduced vs baseline (t2)", "sys_reversed vs baseline"]


def test_the_figure_draws_each_interval_and_the_papers_difference():
    import matplotlib.pyplot as plt

    fig = verdict_figure.verdict_figure(verdict_figure.figure_rows(SUMMARY))
    ax = fig.axes[0]
    bars = [line for line in ax.get_lines() if len(line.get_xdata()) == 2 and line.get_linewidth() == 4]
    assert sorted(tuple(line.get_xdata()) for line in bars) == sorted(
        (c["interval"]["low"], c["interval"]["high"]) for c in [*CLAIMS, CONTROLS[0]] if c["interval"])
    diamonds = [line for line in ax.get_lines() if line.get_marker() == "D"]
    assert [tuple(line.get_xdata()) for line in diamonds] == [(1.1,)]
    assert bars[0].get_color() == verdict_figure.COLOURS["reproduced"]
    words = [t.get_text() for t in ax.texts]
    assert {"reproduced", "reversed", "not comparable", "not run"} <= set(words)
    plt.close(fig)


def test_the_page_opens_with_the_figure_then_the_verdicts_then_the_claims(written):
    text = (written / "summary.html").read_text(encoding="utf-8")
    figure, table = text.index('<figure id="verdict-figure">'), text.index('<table class="verdicts">')
    claims, runs = text.index('<section id="claims-and-verdicts">'), text.index('<details id="training-runs">')
    assert figure < table < claims < runs
    data = re.search(r'<img [^>]*src="data:image/png;base64,([^"]+)"', text).group(1)
    assert base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n")
    for c in CLAIMS:
        assert f"<b>{c['system']} vs baseline</b>" in text and f"why {c['system']}" in text
    assert "&lt;b&gt;" in text  # the claims' words are escaped
    assert "+1.50 [+0.80, +2.20]" in text and "the paper's difference: +1.1" in text
    assert "<li>still improving</li>" in text
    assert "<code>nrefs:1|case:mixed</code>" in text  # GitHub's escaped pipe, as a pipe
    assert "Made 2026-01-01T00:00:00Z.</p>" not in text  # the Markdown's title block: the page has its own
    for folded in ("machine-and-workflow", "training-runs", "scores"):
        assert f'<details id="{folded}">' in text


def test_the_page_of_the_reference_summary_from_its_json_alone(tmp_path):
    """Without summary.md the sections come from the JSON (summary.to_markdown)."""
    reference = ROOT / "docs" / "results" / "cpu" / "summary.json"
    summary_page.write_page(reference, tmp_path / "page.html")
    text = (tmp_path / "page.html").read_text(encoding="utf-8")
    rows = verdict_figure.figure_rows(json.loads(reference.read_text(encoding="utf-8")))
    assert rows
    for row in rows:
        assert f"<b>{html.escape(row['label'])}</b>" in text and f"</span>{html.escape(row['verdict'])}</span>" in text
    assert '<details id="training-runs">' in text


def test_not_a_summary_is_one_line(tmp_path, capsys):
    (tmp_path / "x.json").write_text("[]", encoding="utf-8")
    assert summary_page.main(["--json", str(tmp_path / "x.json"), "--html", str(tmp_path / "x.html")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "x.json" in err and not (tmp_path / "x.html").exists()


PROBE = ("<script>window.addEventListener('load', function () { document.querySelectorAll('img').forEach("
         "function (img) { img.setAttribute('data-natural-width', img.naturalWidth); }); });</script>")


@needs_chromium
def test_chromium_shows_every_verdict_and_the_figure(written, tmp_path):
    page = tmp_path / "probe.html"
    page.write_text((written / "summary.html").read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                    encoding="utf-8")
    dom = browser.dump_dom(page)
    widths = re.findall(r'<img [^>]*data-natural-width="(\d+)"', dom)
    assert len(widths) == 1 and int(widths[0]) > 0, "the figure did not load"
    table = dom[dom.index('<table class="verdicts">'):dom.index("</table>")]
    for c in CLAIMS:
        row = table[table.index(f"<b>{c['system']} vs baseline</b>"):]
        assert re.search(r'class="verdict">.*?</span>' + re.escape(c["verdict"]), row.split("</tr>")[0]), c["system"]
    assert "not run" in table and "inconclusive (1 run)" in table


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head.startswith(b"\x89PNG\r\n\x1a\n")
    return struct.unpack(">II", head[16:24])


@needs_chromium
def test_the_screenshot_command_writes_the_top_of_the_page(written, tmp_path, capsys):
    assert browser.main([str(written), "--png", str(tmp_path / "top.png"), "--width", "1000", "--height", "700"]) == 0
    assert png_size(tmp_path / "top.png") == (1000, 700)
    assert browser.main([str(tmp_path / "nothing"), "--png", str(tmp_path / "no.png")]) == 1
    assert "summary.json" in capsys.readouterr().err and not (tmp_path / "no.png").exists()


def test_without_chromium_the_browser_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("NMT_CHROMIUM", str(tmp_path / "no-such-browser"))
    assert browser.find_chromium() is None
    with pytest.raises(Exception, match="apt-get install chromium"):
        browser.dump_dom(tmp_path / "page.html")


def test_the_reports_landing_text_links_to_the_page_first():
    """report/workflow.rst, rendered as Snakemake renders it (Jinja with the report's files, then
    docutils): its first link opens summary.html; without the page, no link and no error."""
    import jinja2
    from docutils.core import publish_parts

    class File:
        target, path = "summary.html", "results/report/summary.html"

    source = (ROOT / "report" / "workflow.rst").read_text(encoding="utf-8") + "\n\n.. _Results: javascript:x()\n"
    for files in ([File()], []):
        text = jinja2.Environment().from_string(source).render(files=files, snakemake=None)
        body = publish_parts(text, writer="html", settings_overrides={"report_level": 2, "halt_level": 2})["html_body"]
        links = [link.replace("&#x27;", "'") for link in re.findall(r'href="([^"]+)"', body)]
        if files:
            assert links[0].startswith("javascript:app.setView({content:'html'")
            assert "results['results/report/summary.html'].data_uri" in links[0]
        else:
            assert not any("setView" in link for link in links)
