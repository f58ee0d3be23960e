"""The Markdown of the claims and verdicts (:mod:`.rules`): a compact verdict table first
(system, claim, difference with its interval, verdict with its kind and qualifiers), then the
evidence table, then per claim its reason, how sure it is (interval, test over seeds, power,
Holm), the training of both sides with the dev-loss gap over the budget, the length facts,
controls and deviations.  The results summary and the merged GPU result both print it.

It reads the rows as ``summary.json`` holds them (:meth:`.rules.ClaimRow.to_json`), since it
also prints a summary's JSON made by an earlier version (the results page, a GPU part): a fact
that such a summary did not record is said to be missing."""
from __future__ import annotations

import shlex
from typing import Any

from workflow_scripts.evaluation import markdown_tables as md
from workflow_scripts.evaluation import uncertainty
from workflow_scripts.evaluation.verdicts.rules import DECIDED, VERDICT_RULE, beaten
from workflow_scripts.evaluation.verdicts.training import BUDGET_TOLERANCE, budget_confounded


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
    """The verdict in bold, then its kind and qualifiers (:func:`.rules.qualifiers`)."""
    return f"**{v['verdict']}**" + "".join(f"; {q}" for q in v.get("qualifiers") or [])


def interval_cell(v: dict[str, Any]) -> str:
    """``+0.64 [-0.12, +1.40]``: the difference of the means and its interval."""
    if v.get("delta") is None:
        return ""
    interval = v.get("interval")
    if not interval:
        return f"{v['delta']:+.2f} (no interval recorded)"
    return f"{v['delta']:+.2f} [{interval['low']:+.2f}, {interval['high']:+.2f}]"


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
    since = side.get("improving_since")
    return (f"{side['improving_flag']} (best dev loss fell {side['improving_drop']:.3f} "
            + (f"after update {since}" if since is not None else "over the end of the budget")
            + (f"; sd over runs {spread:.3f})" if spread is not None else ")"))


def _seeds_text(seed_test: dict[str, Any] | None) -> str:
    if not seed_test:
        return "no test over seeds (one run)"
    who = {1: "the system almost dominates", -1: "the baseline almost dominates", 0: "neither side dominates"}[
        seed_test["aso_direction"]]
    reverse = seed_test.get("aso_eps_min_reverse")
    return (f"ASO eps_min(system, baseline) {seed_test['aso_eps_min']:.3f}"
            + (f", eps_min(baseline, system) {reverse:.3f}" if reverse is not None else "")
            + f" ({who}; each direction below {uncertainty.ASO_THRESHOLD:g} is its own call), paired t over seeds p "
            f"{md.cell(seed_test['p_paired_t'], 4)}")


def seeds_overlay(seeds: dict[str, int]) -> str:
    """A config overlay (YAML flow style, one line) giving each experiment seeds 1..N."""
    return "experiments: {" + ", ".join(f"{name}: {{seeds: [{', '.join(map(str, range(1, n + 1)))}]}}"
                                        for name, n in seeds.items()) + "}"


def more_seeds_command(v: dict[str, Any], seeds: int, configs: tuple[str, ...] = ("config.yaml",),
                       target: str = "all", cores: int = 2) -> str:
    """One command line that trains the claim's pair with ``seeds`` seeds (the runs of the
    existing seeds are kept): an overlay written to ``more_seeds.yaml``, merged over ``configs``
    (the config files of the run that made the summary: snakemake's ``--config`` reads numbers as
    strings, so a config file)."""
    overlay = seeds_overlay({v["system"]: seeds, v["baseline"]: seeds})
    return (f"printf '%s\\n' {shlex.quote(overlay)} > more_seeds.yaml && "
            f"snakemake --cores {cores} {target} --configfile {' '.join(map(shlex.quote, configs))} more_seeds.yaml")


def power_text(v: dict[str, Any], configs: tuple[str, ...] = ("config.yaml",), target: str = "all",
               cores: int = 2) -> str:
    """The power of the tests that decide (:func:`.rules.power_of`), and what would help: more
    seeds (with the command), or, below the quality floor, a larger budget, which seeds cannot replace."""
    power = v.get("power") or {}
    if v.get("verdict") == "not measurable at this budget":
        return "; below the quality floor more seeds do not help: a larger training budget does"
    if power.get("mdd") is None:
        return ""
    if "test" not in power:  # a summary made before the power of the deciding tests was computed
        return (f"; minimum detectable difference at {power['power']:.0%} power (paired t over seeds, as recorded then) "
                f"with {power['n']} seeds: {power['mdd']:.2f}")
    text = (f"; power of the tests that decide ({power['test']}, p < {power['alpha']:.2g}: the level over the "
            f"{v.get('holm_family', 1)} tests of the Holm family): minimum detectable difference at "
            f"{power['power']:.0%} power with {power['n']} seeds {power['mdd']:.2f}")
    smallest = power.get("smallest")
    if smallest is None:
        return text
    text += f"; at the smallest difference of interest {smallest:g} ({v['smallest']['source']}) the power is {power['at_smallest']:.2f}"
    needed = power["seeds_needed"]
    if needed is None:
        return text + f"; more than {uncertainty.MAX_SEEDS} seeds would be needed (the test-sentence noise that all runs share)"
    text += f", {needed} seeds reach 80%"
    if needed > power["n"] and v.get("verdict") not in DECIDED:
        text += (f" (`{more_seeds_command(v, needed, configs, target, cores)}`; name more_seeds.yaml in every later "
                 "run's --configfile, or its summary goes back to the config's seeds)")
    return text


def sureness_line(v: dict[str, Any], configs: tuple[str, ...] = ("config.yaml",), target: str = "all",
                  cores: int = 2) -> str:
    """Interval, test over seeds, Holm and power of one claim (:mod:`.uncertainty`)."""
    interval = v.get("interval")
    df = f" ({v['n'] - 1} degrees of freedom)" if v.get("n", 0) > 1 else ""
    text = ("- How sure: " + (f"95% interval of the difference [{interval['low']:+.2f}, {interval['high']:+.2f}] "
                              f"({interval['components']}; sd over seeds {md.cell(interval['sd_seeds'])}{df}, over test "
                              f"sentences {md.cell(interval['sd_sentences'])})" if interval else "no interval recorded "
                              "(a comparison made before intervals were)")
            + f"; {_seeds_text(v.get('seed_test'))}")
    if v.get("p_holm") is not None:
        text += (f"; stratified AR p {md.cell(v['p_ar'], 4)}, Holm-adjusted over the {v['holm_family']} tests of the "
                 f"{v.get('holm_family_name', 'summary')} {md.cell(v['p_holm'], 4)}")
    return text + power_text(v, configs, target, cores) + "."


def trajectory_line(v: dict[str, Any]) -> str:
    t = v.get("trajectory")
    if not t:
        return "- Dev-loss gap over the budget: not recorded (runs summarised before the curves were kept)."
    cells = [f"{p['share']:.0%} ({p['update']}): " + (f"{md.mean_sd(p['mean'], p['sd'])}" if p["mean"] is not None
                                                      else "no validation yet") for p in t["points"]]
    last = next((p["mean"] for p in reversed(t["points"]) if p["mean"] is not None), None)
    side = "" if not last else f", the {'system' if last < 0 else 'baseline'} lower at the end"
    return (f"- Dev-loss gap (system minus baseline) over the budget: {'; '.join(cells)}; trend **{t['trend'] or 'unknown'}**"
            f"{side} ({t['rule']}).")


def lengths_line(v: dict[str, Any]) -> str | None:
    facts = v.get("lengths")
    if not facts:
        return None
    def side(s: dict[str, Any]) -> str:
        return (f"BP {md.cell(s['brevity_penalty'], 3)}, BLEU/BP {md.cell(s['bleu_over_bp'])}, TER {md.cell(s['ter'])}, "
                f"chrF {md.cell(s['chrf'])}")

    verdict = ("**length-driven**: the gain vanishes without the brevity penalty" if facts["length_driven"]
               else "not length-driven")
    return (f"- Length (means over runs): ours {side(facts['system'])}; baseline {side(facts['baseline'])}; difference "
            f"without the brevity penalty {facts['delta_without_bp']:+.2f}: {verdict}.")


def _control_line(c: dict[str, Any], metric: str, own: bool = False, claim_runs: int | None = None) -> str:
    what = f"{c['experiment']} ({c['role'].replace('_', '-')}: {c['what']})"
    if not c["run"]:
        where = "no comparison over runs of it in this run: an experiment of your config, with the system's seeds" if own \
            else "configs/controls.yaml"
        return f"- {what}: **not run** ({where})" + (": the claim cannot be reproduced without it"
                                                                   if c["role"] == "must_beat" else "")
    params = f"; {c['parameters']:,} parameters" if isinstance(c.get("parameters"), int) else ""
    if c["role"] == "must_beat":
        test = "the system against it"
        outcome = f"**{'beaten' if beaten(c['verdict'], c['n'], claim_runs) else 'not beaten'}** ({c['verdict']}: {c['why']})"
    else:
        test = f"it against {c['against']}"
        outcome = f"**{c['verdict']}** ({c['why']})"
    gap = c.get("target_tokens_gap")
    if gap is not None:
        params += f"; target tokens of {c['pair'][0]} {100 * gap:+.1f}% against {c['pair'][1]}" + (
            " (budget-confounded)" if budget_confounded(gap) else "")
    holm = f" (Holm {md.cell(c['p_holm'], 4)})" if c.get("p_holm") is not None else ""
    return (f"- {what}: {metric} {md.mean_sd(c['score'], c['score_sd'])} over {c['n']} run(s){params}; {test}: "
            f"difference {interval_cell(c)}, stratified AR p {md.cell(c['p_ar'], 4)}{holm}, pooled sign p "
            f"{md.cell(c['p_sign'], 4)}, {c['runs_better']} of {c['n']} runs better: {outcome}")


def verdict_table(rows: list[dict[str, Any]], part: bool = False) -> list[str]:
    """The compact table a reader looks at first: one row per claim."""
    return md.table(
        ["system", "paper's claim", "paper's difference", *(["part"] if part else []), "test set", "runs",
         "difference [95% interval]", "verdict"],
        [[v["system"], v["claim"], md.cell(v.get("paper_delta")), *([v.get("part", "")] if part else []),
          f"{v['corpus']} / {v['test_set']}" if "corpus" in v else "", str(v.get("n", "")), interval_cell(v),
          verdict_cell(v)] for v in rows])


def evidence_table(rows: list[dict[str, Any]]) -> list[str]:
    return md.table(
        ["system", "test set", "metric", "ours (s_opt; s_sel)", "baseline (s_opt; s_sel)", "runs better",
         "p (AR, stratified)", "p (AR, Holm)", "p (sign, pooled)", "ASO eps_min", "parameters (difference)",
         "updates (ours; baseline)", "length ratio / BP (ours; baseline)"],
        [[v["system"], f"{v['corpus']} / {v['test_set']}", v["metric"], side_cell(v["score"], v["score_sd"], v["s_sel"]),
          f"{v['baseline']}: " + side_cell(v["baseline_score"], v["baseline_sd"], v["baseline_s_sel"]),
          f"{v['runs_better']} of {v['n']}", md.cell(v["p_ar"], 4), md.cell(v.get("p_holm"), 4), md.cell(v["p_sign"], 4),
          md.cell((v.get("seed_test") or {}).get("aso_eps_min"), 3), parameters_cell(v),
          f"{updates_cell(v['system_training'])}; {updates_cell(v['baseline_training'])}", claim_lengths(v)]
         for v in rows if "corpus" in v])


def rerun_settings(config_files: list[str] | None) -> dict[str, Any]:
    """The config files, target and cores of a printed command for the run that made a summary:
    its own config files (configs/gpu.yaml's runs: the GPU target on 16 cores)."""
    configs = tuple(config_files or ["config.yaml"])
    if "configs/gpu.yaml" in configs:
        return {"configs": configs, "target": "gpu_reproduction", "cores": 16}
    return {"configs": configs, "target": "all", "cores": 2}


def claim_sections(rows: list[dict[str, Any]], level: str = "###", config_files: list[str] | None = None) -> list[str]:
    """Per claim: the reason, how sure, training, length, budget, controls and deviations;
    ``config_files``: those of the run, for the printed commands (:func:`rerun_settings`)."""
    settings = rerun_settings(config_files)
    lines = []
    for v in rows:
        if "corpus" not in v:
            continue
        lines += [f"{level} {v['system']} against {v['baseline']} ({v['corpus']} / {v['test_set']})", "",
                  f"- Verdict: **{v['verdict']}**: {v['why']}" + (" (1 run)" if v["n"] == 1 and "1 run" not in v["why"] else "")
                  + f"; {v['n']} run(s), seeds {', '.join(map(str, v.get('seeds') or []))}."
                  + (f" Beside it: {'; '.join(v['qualifiers'])}." if v.get("qualifiers") else ""),
                  sureness_line(v, **settings),
                  f"- Training: ours {_improving(v['system_training'])}; baseline {_improving(v['baseline_training'])}.",
                  trajectory_line(v), budget_line(v)]
        length = lengths_line(v)
        if length:
            lines.append(length)
        if v["controls"]:
            lines += ["- Controls:"] + ["  " + _control_line(c, v["metric"], v.get("own", False), v.get("n"))
                                        for c in v["controls"]]
        else:
            lines += ["- Controls: none declared."]
        if v["deviations"]:
            lines += ["- Deviations from the paper:"] + [f"  - `{d['key']}`: paper {d['paper']}; {d['why']}"
                                                          for d in v["deviations"]]
        else:
            lines += ["- Deviations from the paper: none declared."]
        lines.append("")
    return lines


def claims_markdown(summary: dict[str, Any]) -> list[str]:
    """The Markdown of the claims and verdicts of one results summary: the papers' claims, then
    your own (:func:`own_claims_markdown`)."""
    lines = ["## Claims and verdicts", "",
             "For each system with a claim in " + md.code(summary["claims_file"]) + ", the paper's claim beside ours on "
             "the metric of the paper's table, over all training runs (seeds), each run paired with its baseline's run "
             "of the same seed (workflow_scripts/evaluation/run_statistics.py): the difference of the means with its 95% "
             "interval over seeds and test sentences, and the verdict with its kind and what a reader must know. The "
             "evidence table below gives mean ± sample sd over runs (s_opt, training variance) and s_sel (the bootstrap "
             "sd of one run's score over test sentences), approximate randomisation stratified by run over all runs "
             "(MultEval's test) with its Holm-adjusted p, the sign test of Collins et al. pooled over the runs' sentence "
             f"pairs and ASO over seeds. Verdict: {VERDICT_RULE}", ""]
    papers = [v for v in summary.get("claims") or [] if not v.get("own")]
    own = [v for v in summary.get("claims") or [] if v.get("own")]
    if not papers:
        lines += ["No system of this run has a paper's claim with runs to compare.", ""]
    else:
        lines += (verdict_table(papers) + ["### Evidence", ""] + evidence_table(papers)
                  + claim_sections(papers, config_files=(summary.get("workflow") or {}).get("config_files")))
    return lines + (own_claims_markdown(own, (summary.get("workflow") or {}).get("config_files")) if own else [])


def own_claims_markdown(rows: list[dict[str, Any]], config_files: list[str] | None = None) -> list[str]:
    """Your own claims (the config's ``claims:``) with their verdicts: the same tables and rule."""
    return (["## Your claims", "",
             "The claims of your config (`claims:`), each against its baseline and its controls, by the rule above and "
             "in the same Holm family as the papers' claims of this summary; significance at the claim's declared test "
             "and level (else the project's: the stratified AR test, p < 0.05) and the quality floor of its metric.", ""]
            + verdict_table(rows) + ["### Evidence of your claims", ""] + evidence_table(rows)
            + claim_sections(rows, config_files=config_files))
