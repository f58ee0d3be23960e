"""The results summary: what ran where, how long each model trained and why it stopped, every
score with its sacreBLEU signature and significance marker, and whether compared systems
had the same budget, as Markdown (``summary.md``, readable on GitHub) and JSON
(``summary.json``, the same facts).  Nothing in it is typed by hand.

* Header: when it was made (UTC); the machine that made it and the workflow's git commit
  (:mod:`.machine`, ``git`` in ``--workflow-dir``), the config files, and the devices the
  trainings ran on, from their checkpoints (:func:`training_devices`).
* Training runs (``--metadata``: :func:`workflow_scripts.dag.evaluation.report_metadata`):
  each run's budget, updates, time, stop reason, size, speed and best dev loss
  (:func:`.training_runs.training_run`).
* Claims and verdicts (:func:`.verdicts.rules.claim_rows`, the one rule that merge_gpu_parts
  applies too): for every system with a claim in ``--claims`` (:data:`.claim_files.CLAIMS_FILE`)
  on the metric of the claim, against the baseline its experiment declares, the paper's
  claim, our difference over the runs and the verdict (:data:`.verdicts.rules.VERDICT_RULE`); then
  your own claims (``--own-claims`` FILE or ``--own-claims-json``: the config's ``claims:``,
  :mod:`.claim_files`) in a section of their own, by the same rule and in the same Holm family.
* Scores: every row of ``results.csv`` grouped by corpus and test set, with the marker of
  ``--marker-test`` in the convention of the experiment's paper
  (:data:`workflow_scripts.evaluation.markers.SIGNIFICANCE`; experiments without a paper: the
  project's own, :data:`~workflow_scripts.evaluation.markers.PROJECT`), printed only where the
  test's direction agrees with the score difference, else the disagreement in words
  (:func:`workflow_scripts.evaluation.markers.significance_mark`), and sacreBLEU's length ratio
  and brevity penalty.
* Seeds (``experiments.X.seeds``): with any system of several runs, the scores start with one
  row per system over its seeds (:func:`workflow_scripts.evaluation.results.aggregate_seeds`:
  mean ± sample standard deviation, n - 1; the difference of the means; marker and p-values of
  the tests over all runs, or without them of the seed closest to the mean), then every run's
  rows as above; ``summary.json`` gets them as ``seed_scores``.  Without seeds the summary is
  as before.  Training runs and fair comparisons stay per run.
* Fair comparison, per (experiment, baseline, corpus): budgets, updates and every other
  setting that differs (:func:`.training_runs.fair_comparison`).

    python -m workflow_scripts.evaluation.summary --metadata JSON --results results.csv
        [--marker-test sign] [--claims claims.yaml] [--own-claims FILE | --own-claims-json JSON]
        [--workflow-dir DIR] [--configfile FILE ...]
        [--configfiles-json JSON] --markdown summary.md --json summary.json
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from nmtmodels.files import DataError, atomic_outputs, read_lines
from nmtmodels.text.scoring import registered_metrics
from workflow_scripts.data.compression import compression_scores, remove_bpe
from workflow_scripts.evaluation import claim_files, markdown_tables, tables
from workflow_scripts.evaluation.layouts import LAYOUTS
from workflow_scripts.evaluation.machine import machine_facts, workflow_commit
from workflow_scripts.evaluation.markers import PROJECT, TEST_NAMES, Markers, significance_mark, significance_of
from workflow_scripts.evaluation.results import aggregate_seeds, is_seeded, missing, read_json, read_results
from workflow_scripts.evaluation.training_runs import BUDGET_KEYS, comparison_line, fair_comparison, training_run
from workflow_scripts.evaluation.verdicts import report, rules

# The checkout this script belongs to (the workflow directory: jobs run it from there).
WORKFLOW_DIR = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- scores
def score_marks(row: Any, marker_test: str) -> dict[str, str]:
    """The paper tables' ``marker`` of one results row in its paper's convention and, where the
    test's direction and the score difference disagree, no marker but the ``disagreement`` in
    words (:func:`workflow_scripts.evaluation.markers.significance_mark`)."""
    marker, words = significance_mark(row, marker_test, significance_of(row["paper"]).markers)
    return {"marker": marker, "disagreement": words}


def _plain(value: Any) -> Any:
    """A JSON-able value (NaN/NA -> None, numpy scalars -> Python)."""
    if missing(value):
        return None
    return value.item() if hasattr(value, "item") else value


SCORE_FIELDS = ("experiment", "variant", "paper", "corpus", "test_set", "metric", "score", "signature", "baseline",
                "baseline_score", "delta", "p_sign", "p_paired_bs", "p_paired_ar", "length_ratio", "brevity_penalty")


def score_rows(results_csv: str | Path, marker_test: str) -> list[dict[str, Any]]:
    """Every row of results.csv (:data:`SCORE_FIELDS` and its :func:`score_marks`), in file order."""
    if not Path(results_csv).is_file():
        raise DataError(results_csv, "no such file")
    frame = read_results(results_csv)
    rows = [{**{k: _plain(r[k]) for k in SCORE_FIELDS}, **score_marks(r, marker_test)} for _, r in frame.iterrows()]
    for row in rows:
        row["baseline"] = row["baseline"] or None
    return rows


def blank_reference_rows(results_csv: str | Path) -> list[dict[str, Any]]:
    """The test sets scored with blank reference lines (``blank_references: warn`` keeps them):
    ``{"corpus", "test_set", "lines"}`` each, from the scores' ``blank_reference_lines``."""
    frame = read_results(results_csv)
    found: dict[tuple[str, str], int] = {}
    for _, row in frame.iterrows():
        try:
            lines = int(row["blank_reference_lines"])
        except (TypeError, ValueError):  # unknown: scored before 0.2 recorded it
            continue
        if lines > 0:
            found[(row["corpus"], row["test_set"])] = max(lines, found.get((row["corpus"], row["test_set"]), 0))
    return [{"corpus": corpus, "test_set": test_set, "lines": lines} for (corpus, test_set), lines in found.items()]


SEED_SCORE_FIELDS = ("experiment", "variant", "paper", "corpus", "test_set", "metric", "score", "score_sd", "n_seeds",
                     "seeds", "signature", "baseline", "baseline_score", "delta", "reported_run", "reported_seed",
                     "reported_score", "reported_baseline_score", "reported_delta", "p_sign", "p_paired_bs", "p_paired_ar",
                     "length_ratio", "brevity_penalty")


def seed_score_rows(results_csv: str | Path, marker_test: str) -> list[dict[str, Any]] | None:
    """Every system's scores over its seeds (:func:`workflow_scripts.evaluation.results.aggregate_seeds`:
    mean, sample standard deviation, the tests over all runs (or of the seed closest to the mean), the mean length
    ratio and brevity penalty) with the tables' marker (:func:`score_marks`); None when no
    system has more than one seed."""
    frame = read_results(results_csv)
    if not is_seeded(frame):
        return None
    grouped = aggregate_seeds(frame)
    rows = [{**{k: _plain(r[k]) for k in SEED_SCORE_FIELDS}, **score_marks(r, marker_test)} for _, r in grouped.iterrows()]
    for row in rows:
        row["baseline"] = row["baseline"] or None
    return rows


def compressor_rows(reports: list[list[str]]) -> list[dict[str, Any]]:
    """Each ESC compressor's quality: on the compression evaluation set (token F1 against the
    human compressions, compression ratio and the references' ratio, from its
    ``compression_eval.scores.json``) and on a test set, how close its compression x^c is to
    the source x (mean compression ratio |x^c| / |x| and token F1 of x^c against x, in words
    after removing BPE).  ``reports``: [compressor, corpus, test set, scores, source, compressed]."""
    found = []
    for compressor, corpus, test_set, scores, source, compressed in reports:
        quality = read_json(Path(scores))
        sources = [remove_bpe(line) for line in read_lines(source)]
        compressions = [remove_bpe(line) for line in read_lines(compressed)]
        try:
            close = compression_scores(sources, compressions, [[line] for line in sources])
        except ValueError as exc:
            raise DataError(compressed, str(exc)) from None
        found.append({"compressor": compressor, "corpus": corpus, "test_set": test_set,
                      "eval_f1": quality.get("f1"), "eval_ratio": quality.get("compression_ratio"),
                      "eval_reference_ratio": quality.get("reference_compression_ratio"),
                      "test_ratio": close["compression_ratio"], "test_f1_against_source": close["f1"],
                      "test_sentences": close["sentences"]})
    return found


def compressor_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The Markdown of :func:`compressor_rows` (nothing without ESC runs)."""
    if not rows:
        return []
    return ["## ESC compressors", "",
            "How much each sentence compressor shortens and how close its output x^c stays to the source x: on the "
            "compression evaluation set (token F1 against the human compressions, mean compression ratio |x^c|/|x| "
            "and the human compressions' ratio; workflow_scripts/data/compression.py) and on the test set the ESC "
            "systems translate (ratio, and token F1 of x^c against x: 100 means x^c = x).", ""] + _table(
        ["compressor", "corpus", "eval F1 (human)", "eval ratio (%)", "human ratio (%)", "test set", "test ratio (%)",
         "test F1 against the source"],
        [[r["compressor"], r["corpus"], _cell(r["eval_f1"], 1), _cell(r["eval_ratio"], 1), _cell(r["eval_reference_ratio"], 1),
          r["test_set"], _cell(r["test_ratio"], 1), _cell(r["test_f1_against_source"], 1)] for r in rows])


def read_run_statistics(files: list[str | Path]) -> list[dict[str, Any]]:
    """The comparisons over runs (:mod:`.run_statistics` outputs), each with its system,
    baseline, corpus and test set."""
    found = []
    for path in map(Path, files):
        data = read_json(path)
        if not isinstance(data, dict) or not {"system", "baseline", "corpus", "test_set", "metrics"} <= set(data):
            raise DataError(path, "not an output of python -m workflow_scripts.evaluation.run_statistics --comparison ...")
        found.append(data)
    return found


def shown_path(path: str | Path) -> str:
    """A path relative to the checkout when inside it."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(WORKFLOW_DIR)) if resolved.is_relative_to(WORKFLOW_DIR) else str(path)


# ----------------------------------------------------------------------------- summary
def make_summary(metadata: dict[str, Any], results_csv: str | Path, marker_test: str = "sign",
                 workflow_dir: str | Path = ".", configfiles: list[str] | None = None,
                 root: str | Path = ".", claims_file: str | Path = claim_files.CLAIMS_FILE,
                 run_statistics: list[str | Path] | None = None, compressors: list[list[str]] | None = None,
                 own_claims: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """All facts of the summary (the JSON); files below ``root``, the papers' claims in
    ``claims_file`` and your own in ``own_claims`` (checked: :func:`.claim_files.check_claims`),
    the comparisons over runs in ``run_statistics``, the ESC compressors' files in ``compressors``
    (:func:`compressor_rows`)."""
    claims = {**claim_files.read_claims(claims_file), **(own_claims or {})}
    # the OOV rates of the configured test sets only (a test set removed from the config keeps its old file)
    runs = {(name, corpus): training_run(name, corpus, root, exp.get("seed_group"), exp.get("seed"),
                                         (metadata.get("corpora") or {}).get(corpus, {}).get("test_sets"))
            for name, exp in metadata["experiments"].items() for corpus in exp["corpora"]}
    comparisons = [fair_comparison(name, baseline, corpus, runs, root)
                   for name, exp in metadata["experiments"].items() for corpus in exp["corpora"]
                   for baseline in exp["baselines"] if (baseline, corpus) in runs]
    summary = {
        "generated_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_facts(),
        "workflow": {"commit": workflow_commit(workflow_dir), "config_files": list(configfiles or [])},
        "marker_test": marker_test,
        "runs": list(runs.values()),
        "scores": score_rows(results_csv, marker_test),
        "comparisons": comparisons,
        "run_statistics": read_run_statistics(run_statistics or []),
        "compressors": compressor_rows(compressors or []),
    }
    summary["blank_references"] = blank_reference_rows(results_csv)
    seeded = seed_score_rows(results_csv, marker_test)
    if seeded is not None:  # only with seeds: a single-seed summary is as it was
        summary["seed_scores"] = seeded
    summary.update(claims_file=shown_path(claims_file), quality_floor=quality_floors(),
                   claims=rules.claim_rows(summary, claims))
    own = own_tables(results_csv, marker_test)
    if own:  # only with experiments of your own (`paper:` a name of your own): other summaries are as they were
        summary["own_tables"] = own
    return summary


def quality_floors() -> dict[str, float | None]:
    """The quality floor of every registered metric (``MetricSpec.floor``), as the verdicts use them."""
    return {name: spec.floor for name, spec in registered_metrics().items()}


def own_tables(results_csv: str | Path, marker_test: str) -> dict[str, str]:
    """The Markdown of each table of your own (``paper:`` a name other than the five papers'):
    the generic comparison tables that ``tables render`` writes for it."""
    results = read_results(results_csv)
    names = [p for p in dict.fromkeys(results["paper"].fillna("").astype(str)) if p and p not in LAYOUTS]
    return {name: "\n".join(tables.to_markdown(g) for g in tables.table_grids(results, name, marker_test)) for name in names}


_cell, _code, _table, mean_sd = markdown_tables.cell, markdown_tables.code, markdown_tables.table, markdown_tables.mean_sd


def _oov_cell(oov: dict[str, dict[str, Any]]) -> str:
    """``TEST: 3.34% (lattice/jieba)`` per test set of a run."""
    return "; ".join(f"{test}: {_cell(100 * r['oov_rate'])}% ({r['unit']})" if r["oov_rate"] is not None
                     else f"{test}: no tokens ({r['unit']})" for test, r in oov.items())


def training_devices(runs: list[dict[str, Any]]) -> str:
    """Every device the runs trained on (their checkpoints' records), with how many runs trained
    there, most first; runs that trained on several are counted on each, runs without a record
    as "not recorded"."""
    counts: dict[str, int] = {}
    for run in runs:
        for name in dict.fromkeys(run.get("devices") or ["not recorded"]):
            counts[name] = counts.get(name, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return "; ".join(f"{name} ({n} run{'' if n == 1 else 's'})" for name, n in ranked) or "no runs"


def to_markdown(summary: dict[str, Any]) -> str:
    m, w = summary["machine"], summary["workflow"]
    lines = ["# Results summary", "",
             f"Made {summary['generated_utc']} by `python -m workflow_scripts.evaluation.summary`; no number here is typed by hand.",
             "", "## Machine and workflow", "",
             "The machine that made this summary (the trainings' own devices: the last line):", "",
             f"- Platform: {m['platform']}",
             f"- CPU: {m['cpu']}, {m['logical_cores']} logical cores",
             f"- Memory: {m['memory_gib']} GiB" if m["memory_gib"] is not None else "- Memory: unknown",
             f"- GPU: {', '.join(m['gpus'])}",
             f"- Python {m['python']}, torch {m['torch']}, sacrebleu {m['sacrebleu']}, snakemake {m['snakemake']}",
             f"- Workflow commit: `{w['commit']}`",
             "- Config files: " + (", ".join(f"`{c}`" for c in w["config_files"]) or "none given"),
             f"- Trainings ran on: {training_devices(summary['runs'])}",
             "", "## Training runs", "",
             "Budget from each run's experiment.yaml (0: no limit); updates and time from the last row of "
             "train/metrics.csv, with the target tokens of all its updates (the budget two runs compare by); "
             "stop reason: diverged if the training stopped as diverged (under Warnings: why, and which model was "
             "kept), else max_updates if updates >= max_updates, else the minutes cap if "
             "elapsed >= max_minutes, else max_epochs if set, else other. Precision: `train.amp` (bf16 autocast on "
             "CUDA or on a CPU with native bf16, where a CPU without it trains in fp32 and says so in the train log; "
             "else fp32). Best dev loss (and dev BLEU where a run "
             "validates with BLEU, `train.valid_bleu`): over the run's validations on the dev set, the numbers to "
             "choose settings by (never the test scores below). Test source OOV: the share of each test set's source "
             "tokens, in the units the model reads, that its source vocabulary maps to <unk> "
             "(workflow_scripts/evaluation/oov.py).", ""]
    dev_bleu = any(r.get("best_dev_bleu") is not None for r in summary["runs"])  # a column only where a run has it
    lines += _table(["experiment", "corpus", "family", "seed", "max_updates", "max_epochs", "max_minutes", "updates",
                     "time (s)", "target tokens", "stopped by", "precision", "parameters", "train tok/s", "best dev loss (update)"]
                    + (["best dev BLEU"] if dev_bleu else []) + ["test source OOV (units)"],
                    [[r["experiment"], r["corpus"], _cell(r["family"]), _cell(r.get("seed")),
                      *(_cell(r["budget"][k]) for k in BUDGET_KEYS),
                      str(r["updates"]), f"{r['elapsed_s']:.0f}",
                      f"{r['target_tokens']:,}" if isinstance(r.get("target_tokens"), int) else "–", r["stop_reason"],
                      r.get("precision") or "–",
                      f"{r['parameters']:,}" if isinstance(r["parameters"], int) else _cell(r["parameters"]),
                      _cell(r["train_tokens_per_s"], 0),
                      f"{r['best_dev_loss']:.3f} ({r['best_dev_loss_update']})" if r["best_dev_loss"] is not None else ""]
                     + ([_cell(r["best_dev_bleu"])] if dev_bleu else []) + [_oov_cell(r.get("source_oov") or {})]
                     for r in summary["runs"]])
    diverged = [r for r in summary["runs"] if r.get("diverged")]
    if summary.get("blank_references") or diverged:
        lines += ["## Warnings", ""]
        lines += [f"- {r['experiment']} on {r['corpus']}: {r['diverged'].removeprefix('stopped: ')}. Its scores and "
                  "model package are those of that model, and a claim it takes part in is not comparable"
                  for r in diverged]
        lines += [f"- {b['corpus']} / {b['test_set']}: {b['lines']} reference line(s) are blank; they were kept and scored "
                  "(`blank_references: warn`; the `preprocess` job's log names the lines, `fail` stops at them)"
                  for b in summary.get("blank_references") or []] + [""]
    if summary.get("claims") is not None:  # a summary made before claims had none
        lines += report.claims_markdown(summary)
    if summary.get("own_tables"):
        lines += ["## Your own experiments", "",
                  "Experiments outside the five papers (`paper:` a name of your own), each against its baseline: "
                  "the tables of `results/report/tables/NAME.md`, with every significance test.", ""]
        for text in summary["own_tables"].values():
            lines += ["#" + line if line.startswith("### ") else line for line in text.splitlines()] + [""]  # one level down
    lines += compressor_lines(summary.get("compressors") or [])
    lines += ["## Scores", "",
              f"Markers: {summary['marker_test']} test against the (best) baseline, in each paper's convention "
              "(workflow_scripts/evaluation/markers.py SIGNIFICANCE; the Graph-Transformer, char2word and ESC papers "
              "report no test, so theirs and those of experiments without a paper are the project's own "
              f"{_levels(PROJECT.markers)}), printed only where the test's direction agrees with the score "
              "difference; otherwise "
              "the disagreement in words. Length ratio (hypothesis/reference) and BP (brevity penalty): sacreBLEU's, "
              "for the BLEU metrics. Signatures are sacrebleu's.", ""]
    if summary.get("seed_scores") is not None:
        lines += _seed_score_lines(summary["seed_scores"])
        lines += ["## Scores of every run", "",
                  "Each seed's run on its own, against its baseline's run of the same seed.", ""]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in summary["scores"]:
        groups.setdefault((s["corpus"], s["test_set"]), []).append(s)
    for (corpus, test_set), rows in groups.items():
        lines += [f"### {corpus} / {test_set}", ""]
        lines += _table(["experiment", "metric", "score", "baseline", "difference", "p (sign)", "p (paired BS)",
                         "p (paired AR)", "length ratio", "BP", "signature"],
                        [[s["experiment"], s["metric"], _cell(s["score"]) + mark_text(s), _cell(s["baseline"]),
                          _cell(s["delta"]), _cell(s["p_sign"], 4), _cell(s["p_paired_bs"], 4), _cell(s["p_paired_ar"], 4),
                          *_lengths(s), _code(s["signature"])] for s in rows])
    lines += ["## Fair comparison", ""]
    lines += [f"- {comparison_line(c)}" for c in summary["comparisons"]] or ["- no compared systems"]
    return "\n".join(lines) + "\n"


def _seed_score_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The Markdown of the scores over seeds, grouped by corpus and test set."""
    lines = ["### Over seeds", "",
             "Each system's score is the mean ± sample standard deviation (n − 1 in the denominator) over its "
             "seeds' runs; the difference is that of the means (system minus its baseline system). Marker and "
             "p-values: the tests over all runs that the verdicts read ('tests of': all runs; the sign test pooled "
             "over the runs, approximate randomisation stratified by run, no paired bootstrap), or where a system has "
             "no comparison over runs, the tests of the seed whose score is closest to the mean (tie: the lowest "
             "seed) against the baseline's run of the same seed (named in 'tests of').", ""]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in rows:
        groups.setdefault((s["corpus"], s["test_set"]), []).append(s)
    for (corpus, test_set), members in groups.items():
        lines += [f"#### {corpus} / {test_set} (over seeds)", ""]
        lines += _table(["system", "metric", "score", "seeds", "baseline", "difference", "tests of", "p (sign)",
                         "p (paired BS)", "p (paired AR)", "length ratio", "BP", "signature"],
                        [[s["experiment"], s["metric"],
                          _cell(s["score"]) + (f" ± {_cell(s['score_sd'])}" if s["n_seeds"] > 1 else "") + mark_text(s),
                          f"{s['n_seeds']} ({s['seeds']})" if s["seeds"] else str(s["n_seeds"]), _cell(s["baseline"]),
                          _cell(s["delta"]),
                          (f"{s['reported_run']} (seed {s['reported_seed']})" if s["reported_seed"] is not None
                           else s["reported_run"]) if s["baseline"] else "",
                          _cell(s["p_sign"], 4), _cell(s["p_paired_bs"], 4), _cell(s["p_paired_ar"], 4),
                          *_lengths(s), _code(s["signature"])] for s in members])
    return lines


def _levels(markers: Markers) -> str:
    """Markers and their levels in words, e.g. "++/+ at p < 0.01/0.05"."""
    return ("/".join(better for _, better, _ in markers.levels) + " at p < "
            + "/".join(f"{alpha:g}" for alpha, _, _ in markers.levels))


def mark_text(row: dict[str, Any]) -> str:
    """A score's marker, or the disagreement of its test and score difference in words."""
    return row.get("marker", "") + (f" ({row['disagreement']})" if row.get("disagreement") else "")


def _lengths(row: dict[str, Any]) -> list[str]:
    """Length ratio and brevity penalty cells, as sacreBLEU rounds them (empty without them)."""
    return [_cell(row.get("length_ratio"), 3), _cell(row.get("brevity_penalty"), 3)]




def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.summary", description=__doc__.split("\n\n")[0])
    parser.add_argument("--metadata", required=True, help="JSON of workflow_scripts.dag.evaluation.report_metadata")
    parser.add_argument("--results", required=True, help="results/report/results.csv")
    parser.add_argument("--marker-test", default="sign", choices=sorted(TEST_NAMES))
    parser.add_argument("--claims", default=str(claim_files.CLAIMS_FILE), help="the papers' claims (default: %(default)s)")
    own = parser.add_mutually_exclusive_group()
    own.add_argument("--own-claims", help="a file of claims of your own (the config's `claims:`; its paper may be any name)")
    own.add_argument("--own-claims-json", help="claims of your own as JSON (what the workflow passes)")
    parser.add_argument("--run-statistics", nargs="*", default=[],
                        help="comparisons over runs (python -m workflow_scripts.evaluation.run_statistics)")
    parser.add_argument("--compressor", nargs=6, action="append", default=[],
                        metavar=("NAME", "CORPUS", "TEST_SET", "SCORES", "SOURCE", "COMPRESSED"),
                        help="an ESC compressor's quality scores, a test source and its compression")
    parser.add_argument("--workflow-dir", default=str(WORKFLOW_DIR),
                        help="where to ask git for the commit (default: the checkout holding this script)")
    parser.add_argument("--configfile", nargs="*", default=[], help="the config files of the run")
    parser.add_argument("--configfiles-json", help="the config files of the run as a JSON list (added to --configfile)")
    parser.add_argument("--markdown", required=True)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    try:
        configfiles = list(args.configfile) + (json.loads(args.configfiles_json) if args.configfiles_json else [])
    except json.JSONDecodeError as exc:
        print(f"error: --configfiles-json: not a JSON list ({exc})", file=sys.stderr)
        return 1
    try:
        own_claims = (claim_files.read_own_claims(args.own_claims) if args.own_claims else
                      claim_files.check_claims(json.loads(args.own_claims_json), lambda m: DataError("--own-claims-json", m), own=True)
                      if args.own_claims_json else {})
        summary = make_summary(json.loads(args.metadata), args.results, args.marker_test, args.workflow_dir, configfiles,
                               claims_file=args.claims, run_statistics=args.run_statistics,
                               compressors=args.compressor, own_claims=own_claims)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (json.JSONDecodeError, KeyError) as exc:
        print(f"error: --metadata: not the JSON of report_metadata ({exc})", file=sys.stderr)
        return 1
    with atomic_outputs(args.markdown, args.json) as (markdown, data):
        markdown.write(to_markdown(summary))
        json.dump(summary, data, indent=2, ensure_ascii=False)
        data.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
