"""One result of the GPU reproduction from its parts (docs/gpu.md, "In parts"): the results
summaries that the parts' calls brought back (``summary.json``, with ``summary.md`` and
``timeline.md`` beside it when they came back too) joined into one Markdown and one JSON.
Nothing in it is typed by hand.

* **Parts**: for each part (named by its config file ``configs/gpu_parts/P.yaml``, else by its
  folder) the machine (GPU, CPU cores, torch), the workflow commit, the config files, when the
  summary was made, the wall time of the run (``timeline.md``), its trainings, budgets
  (``max_updates`` / ``max_minutes``) and what stopped them.
* **Claims and verdicts**: for every claim of ``--claims`` (default
  :data:`workflow_scripts.evaluation.claim_files.CLAIMS_FILE`: one per system, the paper's words
  and numbers), our measurement on the metric of the paper's table, per part and test set, made
  by the results summary's own :func:`~workflow_scripts.evaluation.verdicts.rules.claim_rows` over
  the part's runs: mean ± sample sd over runs (s_opt) and the bootstrap sd within a run
  (s_sel), the difference of the means, the runs that beat their baseline's run of the same
  seed, approximate randomisation stratified by run, the pooled sign test, parameters, updates,
  length ratios, and the verdict of :func:`~workflow_scripts.evaluation.verdicts.rules.verdict` (the
  rule: :data:`~workflow_scripts.evaluation.verdicts.rules.VERDICT_RULE`, docs/results.md); **not
  run** when no part has the system.
* **Each part**: its summary made again from its JSON with the current verdict rules (its claims
  with the merged verdicts), headings
  two levels down: every run's budget, updates and stop reason, the scores over seeds with
  their sacreBLEU signatures, every run's scores and the fair-comparison lines.

    python -m workflow_scripts.evaluation.merge_gpu_parts docs/results/gpu/parts/*/summary.json \\
        -o docs/results/gpu/summary.md [--json docs/results/gpu/summary.json] [--claims FILE]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import shlex
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from nmtmodels.files import DataError, atomic_outputs
from workflow_scripts.dag import gpu_parts
from workflow_scripts.evaluation import claim_files
from workflow_scripts.evaluation import markdown_tables as md
from workflow_scripts.evaluation import summary as summaries
from workflow_scripts.evaluation.layouts import LAYOUTS
from workflow_scripts.evaluation.results import read_json
from workflow_scripts.evaluation.verdicts import evidence, report, rules

VERDICTS = (*rules.VERDICTS, "not run")
UNCOMMITTED = " (**uncommitted tree: to run again**, docs/gpu.md)"
WALL_TIME = re.compile(r"wall time: \*\*([0-9.]+) min\*\*")


# ----------------------------------------------------------------------------- inputs
def read_part(path: str | Path) -> dict[str, Any]:
    """One part: its summary JSON and, when beside it, its summary.md and timeline.md."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict) or not {"machine", "workflow", "runs", "scores"} <= set(data):
        raise DataError(path, "not a results summary (python -m workflow_scripts.evaluation.summary)")
    markdown = path.with_suffix(".md")
    timeline = path.with_name("timeline.md")
    wall = WALL_TIME.search(timeline.read_text(encoding="utf-8")) if timeline.is_file() else None
    return {
        "part": gpu_parts.part_of(data["workflow"].get("config_files") or []) or path.parent.name,
        "source": str(path),
        "summary": data,
        "markdown": markdown.read_text(encoding="utf-8") if markdown.is_file() else None,
        "wall_minutes": float(wall.group(1)) if wall else None,
    }


# ----------------------------------------------------------------------------- verdicts
def part_evidence(part: dict[str, Any], claims: dict[str, dict[str, Any]]) -> list[evidence.ClaimEvidence]:
    """Our measurement of every claim whose system this part ran, per test set
    (:func:`workflow_scripts.evaluation.verdicts.evidence.claim_evidence` of the part's summary)."""
    return [replace(row, part=part["part"]) for row in evidence.claim_evidence(part["summary"], claims)]


def uncommitted(commit: str | None) -> bool:
    """A part made from a tree with uncommitted changes (the summary's commit says so)."""
    return bool(commit) and "uncommitted" in commit


def merge(parts: list[dict[str, Any]], claims: dict[str, dict[str, Any]],
          claims_file: str | Path = claim_files.CLAIMS_FILE) -> dict[str, Any]:
    """All facts of the merged result (the JSON): every part's claims decided as one family
    (:func:`workflow_scripts.evaluation.verdicts.rules.decide`: Holm over all of them)."""
    names = [p["part"] for p in parts]
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    if twice:
        raise DataError(parts[0]["source"], f"part(s) {', '.join(twice)} given more than once; give one summary per part")
    found = [row.to_json() for row in rules.decide([v for part in parts for v in part_evidence(part, claims)])]
    for part in parts:  # each part's own section shows the merged verdicts of its claims
        part["summary"] = {**part["summary"], "claims": [v for v in found if v["part"] == part["part"]],
                           "claims_file": summaries.shown_path(claims_file)}
    ran = {v["system"] for v in found}
    found += [{"system": system, "paper": claim["paper"], "claim": claim["claim"], "paper_delta": claim.get("paper_delta"),
                  "metric": claim["metric"], "verdict": "not run"} for system, claim in claims.items() if system not in ran]
    order = {paper: i for i, paper in enumerate(LAYOUTS)}
    found.sort(key=lambda v: order.get(v["paper"], len(order)))
    overview = []
    for part in parts:
        data = part["summary"]
        runs = data["runs"]
        overview.append({
            "part": part["part"], "source": part["source"], "generated_utc": data.get("generated_utc"),
            "machine": data["machine"], "commit": data["workflow"].get("commit"),
            "config_files": data["workflow"].get("config_files") or [], "wall_minutes": part["wall_minutes"],
            "trainings": len(runs),
            "systems": list(dict.fromkeys(r["experiment"] for r in data.get("seed_scores") or data["scores"])),
            "budgets": sorted({(r["budget"].get("max_updates"), r["budget"].get("max_minutes")) for r in runs}, key=str),
            "stopped_by": dict(Counter(r["stop_reason"] for r in runs)),
            "uncommitted": uncommitted(data["workflow"].get("commit")),
        })
    return {"generated_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "parts": overview, "verdicts": found, "claims_file": summaries.shown_path(claims_file)}


# ----------------------------------------------------------------------------- Markdown
def _demoted(markdown: str, levels: int = 2) -> list[str]:
    return [("#" * levels + line) if line.startswith("#") else line for line in markdown.rstrip("\n").splitlines()]


def to_markdown(merged: dict[str, Any], parts: list[dict[str, Any]], command: str) -> str:
    lines = ["# GPU reproduction: the parts' results together", "",
             f"Made {merged['generated_utc']} by `{command}` from the results summaries that the parts' runs brought back; "
             "no number here is typed by hand. The parts ran in separate calls of the GPU machine, each from a bare "
             "machine, so a baseline that several parts need was trained in each of them (same seeds and settings).", "",
             "## Parts", ""]
    lines += md.table(
        ["part", "systems", "trainings", "budgets (max_updates / max_minutes)", "stopped by", "wall time (min)", "GPU",
         "CPU cores", "torch", "commit", "config files", "summary made (UTC)"],
        [[p["part"], ", ".join(p["systems"]), str(p["trainings"]),
          "; ".join(f"{u} / {m}" for u, m in p["budgets"]),
          ", ".join(f"{reason}: {n}" for reason, n in p["stopped_by"].items()), md.cell(p["wall_minutes"], 1),
          ", ".join(p["machine"]["gpus"]), str(p["machine"]["logical_cores"]), p["machine"]["torch"],
          md.code(p["commit"] or "unknown") + (UNCOMMITTED if p["uncommitted"] else ""),
          ", ".join(md.code(c) for c in p["config_files"]),
          p["generated_utc"] or ""] for p in merged["parts"]])
    missing = [part for part in gpu_parts.PARTS if part not in {p["part"] for p in merged["parts"]}]
    if missing:
        lines += [f"Parts not in this result: {', '.join(missing)}.", ""]
    lines += ["## Claims and verdicts", "",
              "For each system, the paper's claim (its table and test sets, larger models) beside our measurement on the "
              "metric of the paper's table over all the part's runs (workflow_scripts/evaluation/verdicts/): the "
              "difference of the means with its 95% interval over seeds and test sentences, and the verdict with its kind "
              "and what a reader must know. The claims of every part and their must-beat controls are one family for Holm's "
              "adjustment (the beside controls another). The evidence "
              "and the reasons, controls and deviations follow the table. Verdict: "
              f"{rules.VERDICT_RULE} **not run** when no part ran the system. Claims: `{merged['claims_file']}`.", ""]
    lines += report.verdict_table(merged["verdicts"], part=True)
    lines += ["### Evidence", ""] + report.evidence_table(merged["verdicts"])
    lines += report.claim_sections(merged["verdicts"], config_files=["config.yaml", "configs/gpu.yaml"])
    for part in parts:
        files = part["summary"]["workflow"].get("config_files") or []
        lines += [f"## Part {part['part']}", "",
                  f"From `{part['source']}`" + (f" (config files {', '.join(md.code(f) for f in files)})" if files else "")
                  + "; made again from its JSON with the current verdict rules and the merged family's verdicts, "
                  "headings two levels down.", ""]
        lines += _demoted(summaries.to_markdown(part["summary"]))
        lines += [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    prog = "python -m workflow_scripts.evaluation.merge_gpu_parts"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("summaries", nargs="+", help="each part's summary.json (summary.md and timeline.md beside it are read too)")
    parser.add_argument("-o", "--output", required=True, help="the merged Markdown")
    parser.add_argument("--json", help="the merged facts as JSON (default: the output with .json)")
    parser.add_argument("--claims", default=str(claim_files.CLAIMS_FILE), help="the papers' claims (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        claims = claim_files.read_claims(args.claims)
        parts = [read_part(path) for path in args.summaries]
        merged = merge(parts, claims, args.claims)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    json_path = args.json or str(Path(args.output).with_suffix(".json"))
    command = " ".join([prog, *map(shlex.quote, args.summaries), "-o", shlex.quote(args.output)])
    with atomic_outputs(args.output, json_path) as (markdown, data):
        markdown.write(to_markdown(merged, parts, command))
        json.dump(merged, data, indent=2, ensure_ascii=False)
        data.write("\n")
    counts = Counter(v["verdict"] for v in merged["verdicts"])
    print(f"{len(parts)} parts, {len(merged['verdicts'])} claims: "
          + ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v]) + f"; wrote {args.output} and {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
