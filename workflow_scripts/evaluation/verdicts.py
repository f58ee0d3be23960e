"""The papers' claims and our verdicts on them, over all training runs: one module for the
results summary (:mod:`.summary`) and the merged GPU reproduction (:mod:`.merge_gpu_parts`).

A claim (``claims.yaml``, :data:`CLAIMS_FILE`) names a system (an experiment with its seeds),
the paper, the metric of the paper's table, the paper's words and difference, and optionally

* ``controls``: experiments that must not explain the gain, each with a ``role``:
  ``must_beat`` (a confound: the same parameters or inputs without the method; the system
  must beat it, tested over runs like the baseline) or ``beside`` (a variant shown beside the
  headline, tested against its own baseline: a reconstructed detail at another value, a
  budget-matched pair); ``what`` says what it controls;
* ``deviations``: where our setup differs from the paper's (``key``: the config key,
  ``paper``: the paper's value or reading, ``why``).

The evidence of a claim row is the comparison over runs of :mod:`.run_statistics` (the
summary's ``run_statistics``): n runs per system paired by seed, mean ± sd over runs (s_opt),
the bootstrap sd within a run (s_sel), approximate randomisation stratified by run and the
pooled sign test, and how many runs beat their baseline's run of the same seed; with the
training runs' updates, stop reasons, parameters and dev-loss curves (the summary's ``runs``).

:func:`verdict`, in this order (:data:`VERDICT_RULE`):

1. **not measurable at this budget**: both mean scores below :data:`QUALITY_FLOOR`;
2. **not comparable**: a run of either system did not stop by ``max_updates``, or the two
   systems' runs did different numbers of updates;
3. with one run: **suggestive (1 run)** when the difference is significant (either direction;
   the sign says which), else **inconclusive (1 run)**;
4. **reproduced**: a positive difference of the means, significant under the paper's
   convention over all runs (the stratified AR test at the paper's level and, where the paper
   has a test, the sign test pooled over the runs at that level too), at least
   :func:`majority` of the runs better than their baseline's run of the same seed, and every
   ``must_beat`` control that was run beaten the same way;
5. **reversed**: a negative difference, significant as above, and the majority of the runs worse;
6. **inconclusive**: anything between (not significant, runs disagree, a control not beaten).
"""
from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import yaml

from nmtmodels.files import DataError
from workflow_scripts.dag import paths
from workflow_scripts.evaluation import markdown as md
from workflow_scripts.evaluation.layouts import LAYOUTS
from workflow_scripts.evaluation.markers import QUALITY_FLOOR, SIGNIFICANCE, TEST_SHORT, significance_of

CLAIMS_FILE = Path(paths.CLAIMS)  # the papers' claims, spelled once (workflow_scripts/dag/paths.py)
VERDICTS = ("reproduced", "reversed", "inconclusive", "suggestive (1 run)", "inconclusive (1 run)", "not comparable",
            "not measurable at this budget")
CONTROL_ROLES = ("must_beat", "beside")


def paper_level(paper: str) -> float:
    """The significance level of the paper's convention (its loosest marker's alpha)."""
    return max(alpha for alpha, _, _ in significance_of(paper).markers.levels)


def _convention(paper: str) -> str:
    convention = significance_of(paper)
    test = (f"the stratified AR test and the paper's {TEST_SHORT[convention.paper_test]} pooled over the runs"
            if convention.paper_test else "the stratified AR test (no test in the paper: the project's own)")
    return f"{paper}: {test}, p < {paper_level(paper):g}"


VERDICT_RULE = (
    f"**not measurable at this budget** when both mean scores are below the quality floor of {QUALITY_FLOOR:g} points; "
    "**not comparable** when a run of either side did not stop by max_updates or the two sides did different numbers "
    "of updates; with one run, **suggestive (1 run)** when the difference is significant (either direction) and "
    "**inconclusive (1 run)** otherwise; with n runs, **reproduced** when the difference of the means is positive, "
    "significant under the paper's convention over all runs, at least two thirds of the runs (2 of 3) beat their "
    "baseline's run of the same seed, and the system beats every must-beat control that was run the same way; "
    "**reversed** when it is negative, significant, and most runs are worse; **inconclusive** otherwise. "
    "Significance over all runs (approximate randomisation stratified by run, Clark et al. 2011): "
    + "; ".join(_convention(p) for p in SIGNIFICANCE) + ". The papers' corpora and models are larger: the "
    "verdict compares direction and significance, not the size of the difference (docs/results.md, \"Claims and "
    "verdicts\").")


# ----------------------------------------------------------------------------- claims file
def read_claims(path: str | Path = CLAIMS_FILE) -> dict[str, dict[str, Any]]:
    """The papers' claims: system -> {paper, metric, claim, paper_delta, controls, deviations}
    (``controls`` and ``deviations`` default to empty lists)."""
    try:
        claims = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, "no such file") from None
    except yaml.YAMLError as exc:
        raise DataError(path, f"not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(claims, dict):
        raise DataError(path, "not a mapping of system -> claim")
    for system, claim in claims.items():
        missing = [key for key in ("paper", "metric", "claim") if not isinstance(claim, dict) or key not in claim]
        if missing:
            raise DataError(path, f"{system}: no {', '.join(missing)}")
        if claim["paper"] not in LAYOUTS:
            raise DataError(path, f"{system}.paper: unknown paper '{claim['paper']}' (known: {', '.join(LAYOUTS)})")
        claim.setdefault("controls", [])
        claim.setdefault("deviations", [])
        for i, control in enumerate(claim["controls"]):
            if not isinstance(control, dict) or not {"experiment", "role", "what"} <= set(control):
                raise DataError(path, f"{system}.controls[{i}]: needs experiment, role and what")
            if control["role"] not in CONTROL_ROLES:
                raise DataError(path, f"{system}.controls[{i}].role: '{control['role']}' (known: {', '.join(CONTROL_ROLES)})")
        for i, deviation in enumerate(claim["deviations"]):
            if not isinstance(deviation, dict) or not {"key", "paper", "why"} <= set(deviation):
                raise DataError(path, f"{system}.deviations[{i}]: needs key, paper and why")
    return claims


# ----------------------------------------------------------------------------- the rule
def majority(n: int) -> int:
    """Runs that must agree for a verdict of n runs: two thirds, rounded up (2 of 3, 2 of 2)."""
    return math.ceil(2 * n / 3)


def significant(paper: str, p_ar: float | None, p_sign: float | None, delta: float = 0.0,
                sign_favours: int | None = None) -> bool:
    """Significant under the paper's convention over all runs (module docstring, rule 4): the
    stratified AR test at the paper's level and, where the paper used the sign test, the pooled
    sign test at that level in the direction of ``delta`` (``sign_favours``: better minus worse
    sentences; a sign test that favours the other side never counts)."""
    alpha = paper_level(paper)
    if p_ar is None or p_ar >= alpha:
        return False
    if significance_of(paper).paper_test is None:
        return True
    return p_sign is not None and p_sign < alpha and sign_favours is not None and sign_favours * delta > 0


def verdict(paper: str, *, n: int, delta: float, score: float, baseline_score: float, p_ar: float | None,
            p_sign: float | None, runs_better: int, runs_worse: int, sign_favours: int | None = None,
            comparable: bool = True, controls_beaten: bool = True, floor: float = QUALITY_FLOOR) -> tuple[str, str]:
    """(verdict, why) of one claimed improvement (module docstring): ``delta`` the difference
    of the mean scores (system minus baseline), ``score``/``baseline_score`` the means,
    ``p_ar`` the stratified AR p-value, ``p_sign`` the pooled sign test's, ``comparable``
    whether both sides stopped by max_updates at the same count, ``controls_beaten`` whether
    the system beat every must-beat control that was run; ``sign_favours`` the pooled sign
    test's better minus worse sentences (:func:`significant`)."""
    if score < floor and baseline_score < floor:
        return "not measurable at this budget", f"both below {floor:g} points"
    if not comparable:
        return "not comparable", "the two sides did not get the same training (updates)"
    sig = significant(paper, p_ar, p_sign, delta, sign_favours)
    direction = "better" if delta > 0 else "worse" if delta < 0 else "equal"
    alpha = paper_level(paper)
    misses = [] if sig else ([f"stratified AR p >= {alpha:g}"] if p_ar is None or p_ar >= alpha else []) + (
        [] if significance_of(paper).paper_test is None else
        ["the sign test favours the other side"] if p_sign is not None and p_sign < alpha and (sign_favours or 0) * delta <= 0
        else [f"the paper's sign test p >= {alpha:g}"] if p_sign is None or p_sign >= alpha else [])
    if n == 1:
        return ("suggestive (1 run)" if sig and delta != 0 else "inconclusive (1 run)",
                f"{direction}, {'significant' if sig else 'not significant'}, one run: test-set noise only")
    need = majority(n)
    if delta > 0 and sig and runs_better >= need and controls_beaten:
        return "reproduced", f"better, significant over {n} runs, {runs_better} of {n} runs better"
    if delta < 0 and sig and runs_worse >= need:
        return "reversed", f"worse, significant over {n} runs, {runs_worse} of {n} runs worse"
    reasons = [direction]
    reasons.append("significant" if sig else "not significant (" + "; ".join(misses) + ")")
    agree = runs_better if delta > 0 else runs_worse
    if delta != 0 and agree < need:
        reasons.append(f"only {agree} of {n} runs {direction}")
    if delta > 0 and sig and agree >= need and not controls_beaten:
        reasons.append("a must-beat control is not beaten")
    return "inconclusive", ", ".join(reasons)


# ----------------------------------------------------------------------------- rows
def _runs_of(summary: dict[str, Any], system: str, corpus: str) -> list[dict[str, Any]]:
    return [r for r in summary.get("runs", []) if r.get("system", r["experiment"]) == system and r["corpus"] == corpus]


def _spread(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def improving(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether a system was still improving at the end: the mean drop of the best dev loss over
    the last fifth of training (:func:`.training_runs.training_run`'s ``dev_loss_drop``) against the
    spread of the final best dev loss over its runs; ``flag`` "still improving at N updates"
    when the drop is larger than the spread (with one run: than zero, said as such)."""
    drops = [r["dev_loss_drop"] for r in runs if r.get("dev_loss_drop") is not None]
    finals = [r["best_dev_loss"] for r in runs if r.get("best_dev_loss") is not None]
    if not drops:
        return {"drop": None, "spread": None, "flag": ""}
    drop, spread = sum(drops) / len(drops), _spread(finals)
    updates = max(r["updates"] for r in runs)
    still = drop > (spread if spread is not None else 0.0)
    flag = f"still improving at {updates} updates" if still else "levelled off"
    return {"drop": drop, "spread": spread, "flag": flag + ("" if spread is not None else " (1 run: no spread)")}


# Two sides whose runs saw target tokens that differ by more than this share are
# "budget-confounded": equal updates, unequal data per update (e.g. a longer source in a
# token budget that counts the longer side).
BUDGET_TOLERANCE = 0.05


def trainingside_cell(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Updates, stop reasons, target tokens, parameters and the improving flag of one side's runs."""
    return {"updates": [r["updates"] for r in runs], "stopped_by": sorted({r["stop_reason"] for r in runs}),
            "target_tokens": [r.get("target_tokens") for r in runs],
            "parameters": runs[0].get("parameters") if runs else None,
            "elapsed_s": [r["elapsed_s"] for r in runs], **{f"improving_{k}": v for k, v in improving(runs).items()}}


def target_tokens_gap(system: dict[str, Any], baseline: dict[str, Any]) -> float | None:
    """The system's mean target tokens per run over the baseline's, minus 1 (None where a run of
    either side does not record them)."""
    ours, theirs = system.get("target_tokens") or [], baseline.get("target_tokens") or []
    if not ours or not theirs or any(t is None for t in (*ours, *theirs)) or not sum(theirs):
        return None
    return (sum(ours) / len(ours)) / (sum(theirs) / len(theirs)) - 1.0


def budget_confounded(gap: float | None) -> bool:
    return gap is not None and abs(gap) > BUDGET_TOLERANCE


def comparable(system: dict[str, Any], baseline: dict[str, Any]) -> bool:
    """Both sides stopped by max_updates, every run at the same number of updates."""
    return (system["stopped_by"] == baseline["stopped_by"] == ["max_updates"]
            and len(set(system["updates"]) | set(baseline["updates"])) == 1)


def _statistics(summary: dict[str, Any], system: str, baseline: str, corpus: str, test_set: str,
                metric: str) -> dict[str, Any] | None:
    for entry in summary.get("run_statistics", []):
        if (entry["system"], entry["baseline"], entry["corpus"], entry["test_set"]) == (system, baseline, corpus, test_set):
            return entry["metrics"].get(metric)
    return None


def _lengths(summary: dict[str, Any], system: str, corpus: str, test_set: str, metric: str) -> dict[str, Any]:
    rows = summary.get("seed_scores") or summary.get("scores", [])
    return next((r for r in rows if (r["experiment"], r["corpus"], r["test_set"], r["metric"]) == (system, corpus, test_set, metric)),
                {})


def _sign_favours(stats: dict[str, Any]) -> int:
    return stats["sign_pooled"]["better"] - stats["sign_pooled"]["worse"]


def control_rows(summary: dict[str, Any], claim: dict[str, Any], system: str, baseline: str, corpus: str,
                 test_set: str) -> list[dict[str, Any]]:
    """Each control of a claim: not run, or its mean score and its test (``must_beat``: the
    system against the control; ``beside``: the control against the claim's baseline, or against
    the control's own ``baseline`` where it names one: a budget-matched pair beside the claim)."""
    found = []
    for control in claim["controls"]:
        name, role = control["experiment"], control["role"]
        pair = (system, name) if role == "must_beat" else (name, control.get("baseline") or baseline)
        stats = _statistics(summary, *pair, corpus, test_set, claim["metric"])
        row = {"experiment": name, "role": role, "what": control["what"], "run": stats is not None,
               "against": pair[1] if role == "beside" else None, "pair": list(pair)}
        if stats is not None:
            score = stats["baseline_mean"] if role == "must_beat" else stats["system_mean"]
            sd = stats["baseline_sd"] if role == "must_beat" else stats["system_sd"]
            sides = {s: trainingside_cell(_runs_of(summary, s, corpus)) for s in pair}
            row.update(n=stats["n"], score=score, score_sd=sd, delta=stats["delta"], p_ar=stats["stratified_ar"]["p_value"],
                       p_sign=stats["sign_pooled"]["p_value"], runs_better=stats["runs_better"],
                       runs_worse=stats["runs_worse"], parameters=sides[name]["parameters"],
                       target_tokens_gap=target_tokens_gap(*sides.values()))
            row["verdict"], row["why"] = verdict(
                claim["paper"], n=stats["n"], delta=stats["delta"], score=stats["system_mean"],
                baseline_score=stats["baseline_mean"], p_ar=row["p_ar"], p_sign=row["p_sign"],
                runs_better=stats["runs_better"], runs_worse=stats["runs_worse"], sign_favours=_sign_favours(stats),
                comparable=comparable(*sides.values()))
        found.append(row)
    return found


def claim_rows(summary: dict[str, Any], claims: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per claim, baseline and test set that the summary's ``run_statistics`` have, on
    the claim's metric: the evidence and the :func:`verdict` (module docstring)."""
    found = []
    for entry in summary.get("run_statistics", []):
        claim = claims.get(entry["system"])
        if claim is None or claim["metric"] not in entry["metrics"]:
            continue
        if any(c["experiment"] == entry["baseline"] for c in claim["controls"]):
            continue  # a must-beat control's test: in the claim's row, not a row of its own
        system, baseline, corpus, test_set = entry["system"], entry["baseline"], entry["corpus"], entry["test_set"]
        stats = entry["metrics"][claim["metric"]]
        ours, theirs = trainingside_cell(_runs_of(summary, system, corpus)), trainingside_cell(_runs_of(summary, baseline, corpus))
        controls = control_rows(summary, claim, system, baseline, corpus, test_set)
        beaten = all(c["verdict"] == "reproduced" or (c["verdict"].startswith("suggestive") and c["delta"] > 0)
                     for c in controls if c["role"] == "must_beat" and c["run"])
        p_ar, p_sign = stats["stratified_ar"]["p_value"], stats["sign_pooled"]["p_value"]
        params = (ours["parameters"], theirs["parameters"])
        lengths, base_lengths = (_lengths(summary, s, corpus, test_set, claim["metric"]) for s in (system, baseline))
        row = {
            "system": system, "paper": claim["paper"], "claim": claim["claim"], "paper_delta": claim.get("paper_delta"),
            "corpus": corpus, "test_set": test_set, "metric": claim["metric"], "baseline": baseline,
            "signature": stats.get("signature"), "n": stats["n"], "seeds": entry.get("seeds"),
            "score": stats["system_mean"], "score_sd": stats["system_sd"], "s_sel": stats["system_s_sel"],
            "baseline_score": stats["baseline_mean"], "baseline_sd": stats["baseline_sd"],
            "baseline_s_sel": stats["baseline_s_sel"], "delta": stats["delta"],
            "p_ar": p_ar, "ar_trials": stats["stratified_ar"]["trials"], "p_sign": p_sign,
            "sign_counts": [stats["sign_pooled"][k] for k in ("better", "worse", "ties")],
            "runs_better": stats["runs_better"], "runs_worse": stats["runs_worse"],
            "parameters": params[0], "baseline_parameters": params[1],
            "parameters_diff_pct": 100.0 * (params[0] - params[1]) / params[1] if all(isinstance(p, int) for p in params) else None,
            "system_training": ours, "baseline_training": theirs,
            "target_tokens_gap": target_tokens_gap(ours, theirs),
            "budget_confounded": budget_confounded(target_tokens_gap(ours, theirs)),
            "controls": controls, "deviations": claim["deviations"],
            "length_ratio": lengths.get("length_ratio"), "brevity_penalty": lengths.get("brevity_penalty"),
            "baseline_length_ratio": base_lengths.get("length_ratio"),
            "baseline_brevity_penalty": base_lengths.get("brevity_penalty"),
        }
        row["verdict"], row["why"] = verdict(
            claim["paper"], n=stats["n"], delta=stats["delta"], score=stats["system_mean"],
            baseline_score=stats["baseline_mean"], p_ar=p_ar, p_sign=p_sign, runs_better=stats["runs_better"],
            runs_worse=stats["runs_worse"], sign_favours=_sign_favours(stats), comparable=comparable(ours, theirs),
            controls_beaten=beaten)
        reversed_beside = [c["experiment"] for c in controls if c["role"] == "beside" and c["run"] and c["verdict"] == "reversed"]
        if reversed_beside:  # shown, not folded into the verdict: the claim's own comparison stands
            row["why"] += (f"; the beside control {', '.join(reversed_beside)} is reversed against the baseline, so the "
                           "result rests on what that control changes")
        found.append(row)
    return found


# ----------------------------------------------------------------------------- Markdown
def claim_lengths(v: dict[str, Any]) -> str:
    """The length ratio and brevity penalty of a claim's system and its baseline (means over runs)."""
    def one(ratio: Any, bp: Any) -> str:
        return f"{md.cell(ratio, 3)} / {md.cell(bp, 3)}" if ratio is not None and bp is not None else "–"

    return f"{one(v.get('length_ratio'), v.get('brevity_penalty'))}; " + one(v.get("baseline_length_ratio"),
                                                                            v.get("baseline_brevity_penalty"))


def side_cell(score: Any, sd: Any, s_sel: Any) -> str:
    return md.mean_sd(score, sd) + (f" (s_sel {md.cell(s_sel)})" if s_sel is not None else "")


def parameters_cell(v: dict[str, Any]) -> str:
    if v.get("parameters_diff_pct") is None:
        return ""
    return f"{v['parameters']:,} vs {v['baseline_parameters']:,} ({v['parameters_diff_pct']:+.1f}%)"


def updates_cell(side: dict[str, Any]) -> str:
    counts = sorted(set(side["updates"]))
    return "/".join(map(str, counts)) + ("" if side["stopped_by"] == ["max_updates"] else f" ({', '.join(side['stopped_by'])})")


def verdict_cell(v: dict[str, Any]) -> str:
    """The verdict in bold, and "budget-confounded" where the two sides saw unequal target tokens."""
    if not v.get("budget_confounded"):
        return f"**{v['verdict']}**"
    return f"**{v['verdict']}**; budget-confounded ({100 * v['target_tokens_gap']:+.1f}% target tokens)"


def budget_line(v: dict[str, Any]) -> str:
    """The target tokens each side's runs saw (metrics.csv), and whether they differ by more than 5%."""
    gap = v.get("target_tokens_gap")
    if gap is None:
        return "- Budget: target tokens not recorded by every run (runs made before they were)."
    sides = [", ".join(f"{t:,}" for t in side["target_tokens"]) for side in (v["system_training"], v["baseline_training"])]
    verdict = (f"**budget-confounded**: more than {100 * BUDGET_TOLERANCE:.0f}% apart" if budget_confounded(gap)
               else f"within {100 * BUDGET_TOLERANCE:.0f}%")
    return f"- Budget: target tokens per run, ours {sides[0]}; baseline {sides[1]} ({100 * gap:+.1f}%): {verdict}."


def _improving(side: dict[str, Any]) -> str:
    if side.get("improving_drop") is None:
        return "no dev loss"
    spread = side.get("improving_spread")
    return (f"{side['improving_flag']} (best dev loss fell {side['improving_drop']:.3f} in the last fifth"
            + (f"; sd over runs {spread:.3f})" if spread is not None else ")"))


def _control_line(c: dict[str, Any], metric: str) -> str:
    what = f"{c['experiment']} ({c['role'].replace('_', '-')}: {c['what']})"
    if not c["run"]:
        return f"- {what}: not run (configs/controls.yaml)"
    params = f"; {c['parameters']:,} parameters" if isinstance(c.get("parameters"), int) else ""
    if c["role"] == "must_beat":
        test = "the system against it"
        beaten = c["verdict"] == "reproduced" or (c["verdict"].startswith("suggestive") and c["delta"] > 0)
        outcome = f"**{'beaten' if beaten else 'not beaten'}** ({c['verdict']}: {c['why']})"
    else:
        test = f"it against {c['against']}"
        outcome = f"**{c['verdict']}** ({c['why']})"
    gap = c.get("target_tokens_gap")
    if gap is not None:
        params += f"; target tokens of {c['pair'][0]} {100 * gap:+.1f}% against {c['pair'][1]}" + (
            " (budget-confounded)" if budget_confounded(gap) else "")
    return (f"- {what}: {metric} {md.mean_sd(c['score'], c['score_sd'])} over {c['n']} run(s){params}; {test}: "
            f"difference {c['delta']:+.2f}, stratified AR p {md.cell(c['p_ar'], 4)}, pooled sign p "
            f"{md.cell(c['p_sign'], 4)}, {c['runs_better']} of {c['n']} runs better: {outcome}")


def claims_markdown(summary: dict[str, Any]) -> list[str]:
    """The Markdown of the claims and verdicts (:func:`claim_rows`): one table row per claim,
    then per claim its reason, the training of both sides, its controls and deviations."""
    lines = ["## Claims and verdicts", "",
             "For each system with a claim in " + md.code(summary["claims_file"]) + ", the paper's claim beside ours on "
             "the metric of the paper's table, over all training runs (seeds), each run paired with its baseline's run "
             "of the same seed (workflow_scripts/evaluation/run_statistics.py): mean ± sample sd over runs (s_opt, "
             "training variance) and s_sel (the bootstrap sd of one run's score over test sentences, the mean over the "
             "runs), the difference of the means, how many runs beat their baseline's run, approximate randomisation "
             "stratified by run over all runs (MultEval's test) and the sign test of Collins et al. pooled over the "
             f"runs' sentence pairs. Verdict: {VERDICT_RULE}", ""]
    if not summary.get("claims"):
        return lines + ["No system of this run has a claim with runs to compare.", ""]
    lines += md.table(
        ["system", "paper's claim", "paper's difference", "test set", "metric", "runs", "ours (s_opt; s_sel)",
         "baseline (s_opt; s_sel)", "difference", "runs better", "p (AR, stratified)", "p (sign, pooled)",
         "parameters (difference)", "updates (ours; baseline)", "length ratio / BP (ours; baseline)", "verdict"],
        [[v["system"], v["claim"], md.cell(v.get("paper_delta")), f"{v['corpus']} / {v['test_set']}", v["metric"],
          str(v["n"]), side_cell(v["score"], v["score_sd"], v["s_sel"]),
          f"{v['baseline']}: " + side_cell(v["baseline_score"], v["baseline_sd"], v["baseline_s_sel"]),
          md.cell(v["delta"]), f"{v['runs_better']} of {v['n']}", md.cell(v["p_ar"], 4), md.cell(v["p_sign"], 4),
          parameters_cell(v), f"{updates_cell(v['system_training'])}; {updates_cell(v['baseline_training'])}", claim_lengths(v),
          verdict_cell(v)] for v in summary["claims"]])
    for v in summary["claims"]:
        lines += [f"### {v['system']} against {v['baseline']} ({v['corpus']} / {v['test_set']})", "",
                  f"- Verdict: **{v['verdict']}**: {v['why']}" + (" (1 run)" if v["n"] == 1 and "1 run" not in v["why"] else "")
                  + f"; {v['n']} run(s), seeds {', '.join(map(str, v.get('seeds') or []))}.",
                  f"- Training: ours {_improving(v['system_training'])}; baseline {_improving(v['baseline_training'])}.",
                  budget_line(v)]
        if v["controls"]:
            lines += ["- Controls:"] + ["  " + _control_line(c, v["metric"]) for c in v["controls"]]
        else:
            lines += ["- Controls: none declared."]
        if v["deviations"]:
            lines += ["- Deviations from the paper:"] + [f"  - `{d['key']}`: paper {d['paper']}; {d['why']}"
                                                          for d in v["deviations"]]
        else:
            lines += ["- Deviations from the paper: none declared."]
        lines.append("")
    return lines
