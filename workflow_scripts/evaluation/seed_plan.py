"""Seeds per claim from a pilot's variance, never from its test results: for each claim of a
results summary, the fewest seeds with which the tests that decide a verdict (the stratified AR
test at the Holm bound and the 95% interval over seeds and sentences,
:func:`.uncertainty.decision_power`) detect the claim's smallest difference of interest with the
planned power, from the pilot's noise alone (its evidence re-read with the current rules and the
papers' claims file) (the per-seed sd, the test-sentence variance and the
share of it that all runs share: :class:`.uncertainty.Noise`).  The observed difference and
p-values are not read.

    python -m workflow_scripts.evaluation.seed_plan docs/results/cpu/summary.json [--power 0.9] [--family 5]

``--power``: the planned power (0.9 leaves a margin for what the simulation does not model: the
paper's sign test where its convention adds it, and a per-seed sd estimated on n - 1 degrees of
freedom); ``--family``: the Holm family's size in the planned run (default: the pilot's).  Prints
one line per claim and the overlay that sets those seeds.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from nmtmodels.files import DataError
from workflow_scripts.evaluation import claim_files, uncertainty
from workflow_scripts.evaluation.verdicts import report, rules

PLANNING_POWER = 0.9


def plan(claims: list[dict[str, Any]], power: float = PLANNING_POWER, family: int | None = None) -> list[dict[str, Any]]:
    """Per claim with a recorded noise and a smallest difference of interest: ``seeds`` (None when
    no number of seeds reaches ``power``: the test-sentence noise that all runs share), with the
    level and family it assumes; a claim without them gets ``seeds`` None and the reason."""
    found = []
    for claim in claims:
        row = {"system": claim["system"], "baseline": claim.get("baseline"), "seeds": None, "pilot_seeds": claim.get("n")}
        smallest = (claim.get("smallest") or {}).get("value")
        size = family or claim.get("holm_family") or 1
        if claim.get("noise") is None or smallest is None:
            row["why"] = "no noise recorded (one run, or a below-floor pair)" if claim.get("noise") is None else \
                "no smallest difference of interest declared"
        else:
            alpha = claim["level"] / size
            noise = uncertainty.Noise(**claim["noise"])
            row.update(seeds=uncertainty.decision_seeds_needed(smallest, noise, alpha, power), alpha=alpha, smallest=smallest,
                       why=f"power {power:g} at {smallest:g}, p < {alpha:.2g} (level over a Holm family of {size})")
        found.append(row)
    return found


def overlay(rows: list[dict[str, Any]]) -> str:
    """The config overlay that gives each planned claim and its baseline its seeds (YAML flow style)."""
    names = {}
    for row in rows:
        if row["seeds"]:
            for name in (row["system"], row["baseline"]):
                names[name] = max(names.get(name, 0), row["seeds"])
    return report.seeds_overlay(names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.seed_plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("summary", help="a results summary's JSON (the pilot)")
    parser.add_argument("--power", type=float, default=PLANNING_POWER)
    parser.add_argument("--family", type=int, help="the Holm family's size in the planned run (default: the pilot's)")
    args = parser.parse_args(argv)
    try:
        summary = json.loads(Path(args.summary).read_text(encoding="utf-8"))
        claims = rules.claim_rows(summary, claim_files.read_claims())  # the pilot's evidence, today's rules
    except (OSError, json.JSONDecodeError, DataError) as exc:
        print(f"error: {args.summary}: {exc}", file=sys.stderr)
        return 1
    rows = plan(claims, args.power, args.family)
    for row in rows:
        print(f"{row['system']}: {row['seeds'] if row['seeds'] else 'no plan'} seeds (pilot {row['pilot_seeds']}; {row['why']})")
    print(overlay(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
