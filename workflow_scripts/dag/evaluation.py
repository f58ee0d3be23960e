"""Evaluation settings, comparisons and the files they read, for rules/evaluate.smk and
rules/report.smk (pure functions; file names in :mod:`.paths`).

Configuration read here (all optional; see :data:`EVALUATION_DEFAULTS`)::

    experiments:
      lattice_lpe:
        ...
        paper: lattice             # lattice | reordering | graph | char | esc
        variant: "+LPE"            # row label in the paper's tables (default: the experiment name)
        input: Lattice             # the lattice tables' "Input" column (default: empty)
        tables: [table2]           # which of the paper's tables (default: its main tables)
        baseline: transformer      # or a list: compared with the best of them per test set
    corpora:
      nist_zh_en:
        concatenations: {ALL: [mt02, mt03, mt04, mt06, mt08]}   # lattice paper's "ALL"
    evaluation: {significance_metrics: [bleu, tokenized_bleu], tests: [sign, paired_bs, paired_ar],
                 bootstrap_samples: 1000, ar_trials: 10000, seed: 12345, marker_test: sign,
                 length_buckets: [10, 20, 30, 40, 50], length_metric: bleu}

Layout (relative to the working directory)::

    results/experiments/E/C/T.hyp, T.tok, T.scores.json          decoded test set T (rules decode/score; BLEU, chrF, TER)
    results/experiments/E/C/concat/N.hyp, N.tok, N.scores.json   concatenation N of test sets
    results/experiments/E/C/significance/T.vs.B.json             E against baseline B on T (or N)
    results/experiments/E/C/model_info.json                      parameters, training speed
    results/data/C/concat/N.refK.L                               references of N (K = 1, 2, ...: reference K - 1)
    results/data/C/concat/N.tok.L, N.tok.refK.L                  tokenised references 0 and K = 1, 2, ... of N
    results/report/results.csv, tables/P.{md,tex,html}, length/C/T.{csv,png}
    results/report/summary.{md,json}, curves/C.png                results summary, learning curves
    results/report/runs/C/T/S.vs.B.json                          system S against B over all their runs (seeds)
"""
from __future__ import annotations

import re
from typing import Any

import yaml

from nmtmodels.text.scoring import metric_spec, significance_metrics
from workflow_scripts.dag import WorkflowConfigError, paths
from workflow_scripts.dag.compression import compressor_reports
from workflow_scripts.dag.corpus_data import reference_paths, tokenized_references
from workflow_scripts.dag.runs import baselines_of, experiment_runs
from workflow_scripts.dag.seeds import seed_of
from workflow_scripts.dag.sources import oov_targets
from workflow_scripts.data import corpus_spec as corpus_specs

PAPERS = ("lattice", "reordering", "graph", "char", "esc")
# The tables of each paper that experiments may name in ``tables`` (laid out in workflow_scripts.evaluation.layouts).
PAPER_TABLES = {"lattice": ("table2", "table3", "table4"), "reordering": ("table1", "table2", "table3"),
                "graph": ("table2",), "char": ("table3",), "esc": ("main",)}
# Significance tests: sign test, paired bootstrap resampling, approximate randomisation.
TESTS = ("sign", "paired_bs", "paired_ar")
NAME = re.compile(r"^[A-Za-z0-9_-]+$")

EVALUATION_DEFAULTS: dict[str, Any] = {
    "significance_metrics": ["bleu", "tokenized_bleu"],
    "tests": list(TESTS),
    "bootstrap_samples": 1000,
    "ar_trials": 10000,
    "seed": 12345,
    "marker_test": "sign",
    "length_buckets": [10, 20, 30, 40, 50],
    "length_metric": "bleu",
}


# ----------------------------------------------------------------------------- settings
def evaluation_settings(config: dict[str, Any]) -> dict[str, Any]:
    """``evaluation`` merged over :data:`EVALUATION_DEFAULTS`, checked (errors name the key)."""
    given = config.get("evaluation") or {}
    unknown = sorted(set(given) - set(EVALUATION_DEFAULTS))
    if unknown:
        raise WorkflowConfigError(f"evaluation.{unknown[0]}: unknown key (known: {', '.join(EVALUATION_DEFAULTS)})")
    settings = {**EVALUATION_DEFAULTS, **given}
    # Metrics significance tests and length analyses may use: the registered metrics with
    # significance support (nmtmodels.text.scoring; score files hold TER too, reported untested).
    def testable(name: Any) -> bool:
        try:
            return metric_spec(str(name)).significance
        except ValueError:
            return False

    for i, value in enumerate(settings["significance_metrics"]):
        if not testable(value):
            raise WorkflowConfigError(f"evaluation.significance_metrics[{i}]: '{value}' is not one of "
                                      f"{', '.join(significance_metrics())}")
    for i, value in enumerate(settings["tests"]):
        if value not in TESTS:
            raise WorkflowConfigError(f"evaluation.tests[{i}]: '{value}' is not one of {', '.join(TESTS)}")
    for key in ("bootstrap_samples", "ar_trials", "seed"):
        value = settings[key]
        # seed 0 would make sacrebleu's PairedTest draw an unseeded generator.
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise WorkflowConfigError(f"evaluation.{key}: expected an integer >= 1, got {value!r}")
    if settings["marker_test"] not in settings["tests"]:
        raise WorkflowConfigError(
            f"evaluation.marker_test: '{settings['marker_test']}' is not among evaluation.tests {settings['tests']}"
        )
    buckets = settings["length_buckets"]
    if not buckets or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in buckets) or buckets != sorted(set(buckets)):
        raise WorkflowConfigError(f"evaluation.length_buckets: expected increasing positive integers, got {buckets!r}")
    if not testable(settings["length_metric"]):
        raise WorkflowConfigError(f"evaluation.length_metric: '{settings['length_metric']}' is not one of "
                                  f"{', '.join(significance_metrics())}")
    return settings


def concatenations_of(config: dict[str, Any], corpus: str) -> dict[str, list[str]]:
    """``corpora.C.concatenations``: name -> the test sets it concatenates, in order."""
    return dict(config["corpora"][corpus].get("concatenations") or {})


def evaluation_sets(config: dict[str, Any], corpus: str) -> list[str]:
    """Test sets of a corpus followed by its concatenations (the columns of its tables)."""
    return list(config["corpora"][corpus]["test_sets"]) + list(concatenations_of(config, corpus))


def check_evaluation_config(config: dict[str, Any]) -> None:
    """Cross-reference checks of the keys above; WorkflowConfigError naming the key."""
    evaluation_settings(config)
    experiments = config["experiments"]
    active = set(config["active_corpora"])
    for name, spec in experiments.items():
        where = f"experiments.{name}"
        paper = spec.get("paper")
        if paper is not None and not NAME.match(str(paper)):
            raise WorkflowConfigError(f"{where}.paper: '{paper}' is neither a paper ({', '.join(PAPERS)}) nor a table name "
                                      "of your own (letters, digits, _ and -)")
        if paper is not None and paper not in PAPERS and spec.get("baseline") is None:
            raise WorkflowConfigError(f"{where}.paper: your own table '{paper}' compares each system with its baseline; "
                                      f"{where}.baseline is missing")
        for i, table in enumerate(spec.get("tables") or []):
            known = PAPER_TABLES.get(paper, ())
            if table not in known:
                raise WorkflowConfigError(
                    f"{where}.tables[{i}]: '{table}' is not a table of paper '{paper}' (known: {', '.join(known) or 'none'})"
                )
        for i, baseline in enumerate(baselines_of(config, name)):
            key = f"{where}.baseline" + (f"[{i}]" if not isinstance(spec.get("baseline"), str) else "")
            if baseline not in experiments:
                raise WorkflowConfigError(f"{key}: unknown experiment '{baseline}'")
            if baseline == name:
                raise WorkflowConfigError(f"{key}: an experiment cannot be its own baseline")
            missing = [c for c in spec["corpora"] if c in active and c not in experiments[baseline]["corpora"]]
            if missing:
                raise WorkflowConfigError(
                    f"{key}: baseline '{baseline}' does not run on corpus '{missing[0]}', which {name} runs on"
                )
    for corpus, spec in config["corpora"].items():
        splits = corpus_specs.splits_of(spec)
        for concat, members in concatenations_of(config, corpus).items():
            where = f"corpora.{corpus}.concatenations.{concat}"
            if not NAME.match(concat) or concat in splits:
                raise WorkflowConfigError(f"{where}: the name must match [A-Za-z0-9_-]+ and differ from every split")
            if not members:
                raise WorkflowConfigError(f"{where}: no test sets to concatenate")
            for i, member in enumerate(members):
                if member not in spec["test_sets"]:
                    raise WorkflowConfigError(f"{where}[{i}]: '{member}' is not among corpora.{corpus}.test_sets")
            counts = {corpus_specs.reference_count(spec, m, spec["tgt"]) for m in members}
            if len(counts) != 1:
                raise WorkflowConfigError(f"{where}: its test sets have different numbers of references {sorted(counts)}")


# ----------------------------------------------------------------------------- paths
def is_concatenation(config: dict[str, Any], corpus: str, test_set: str) -> bool:
    return test_set in concatenations_of(config, corpus)


def system_files(experiment: str, corpus: str, test_set: str, concatenated: bool) -> dict[str, str]:
    """Detokenised (``hyp``) and tokenised (``tok``) output and the score file of one test set."""
    where = {"experiment": experiment, "corpus": corpus, "test_set": paths.concatenated_set(test_set) if concatenated else test_set}
    return {"hyp": paths.fill(paths.HYPOTHESIS, **where), "tok": paths.fill(paths.TOKENIZED_HYPOTHESIS, **where),
            "scores": paths.fill(paths.SCORES, **where)}


def comparison_path(experiment: str, baseline: str, corpus: str, test_set: str) -> str:
    return paths.fill(paths.SIGNIFICANCE, experiment=experiment, baseline=baseline, corpus=corpus, test_set=test_set)


def model_info_path(experiment: str, corpus: str) -> str:
    return paths.fill(paths.MODEL_INFO, experiment=experiment, corpus=corpus)


def reference_files(config: dict[str, Any], corpus: str, test_set: str) -> dict[str, list[str]]:
    """``refs``: the detokenised reference streams; ``tok``: the same references tokenised."""
    members = concatenations_of(config, corpus).get(test_set)
    if not members:
        return {"refs": reference_paths(config, corpus, test_set), "tok": tokenized_references(config, corpus, test_set)}
    spec = config["corpora"][corpus]
    tgt = spec["tgt"]
    count = corpus_specs.reference_count(spec, members[0], tgt)
    where = {"corpus": corpus, "concatenation": test_set, "lang": tgt}
    return {
        "refs": [paths.fill(paths.CONCATENATED_REFERENCE, ref=k, **where) for k in range(1, count + 1)],
        "tok": [paths.fill(paths.CONCATENATED_TOKENIZED_REFERENCE, **where)]
        + [paths.fill(paths.CONCATENATED_TOKENIZED_EXTRA_REFERENCE, ref=k, **where) for k in range(1, count)],
    }


def member_output_files(config: dict[str, Any], experiment: str, corpus: str, concat: str, kind: str) -> list[str]:
    """The system outputs (``kind`` "hyp" or "tok") that concatenate into ``concat``."""
    return [system_files(experiment, corpus, t, False)[kind] for t in concatenations_of(config, corpus)[concat]]


def member_reference_files(config: dict[str, Any], corpus: str, concat: str, kind: str, index: int) -> list[str]:
    """The files that concatenate into reference ``index`` (0-based) of ``concat``, ``kind``
    "refs" (detokenised) or "tok" (tokenised), as :func:`reference_files` lists them."""
    return [reference_files(config, corpus, m)[kind][index] for m in concatenations_of(config, corpus)[concat]]


def source_file(config: dict[str, Any], corpus: str, test_set: str) -> str:
    """The tokenised source of a test set (what source length is measured on)."""
    spec = config["corpora"][corpus]
    return paths.tokenized(corpus=corpus, split=test_set, **paths.sides(spec), lang=spec["src"])


# ----------------------------------------------------------------------------- targets
def comparisons(config: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(experiment, baseline, corpus, test set) of every significance test `all` runs."""
    return [
        (experiment, baseline, corpus, test_set)
        for experiment, corpus in experiment_runs(config)
        for baseline in baselines_of(config, experiment)
        for test_set in evaluation_sets(config, corpus)
    ]


def comparison_inputs(config: dict[str, Any], experiment: str, baseline: str, corpus: str, test_set: str) -> dict[str, Any]:
    """Input files of one significance test, by role (for ``unpack`` in the rule)."""
    concatenated = is_concatenation(config, corpus, test_set)
    system = system_files(experiment, corpus, test_set, concatenated)
    base = system_files(baseline, corpus, test_set, concatenated)
    refs = reference_files(config, corpus, test_set)
    return {"system": system["hyp"], "system_tok": system["tok"], "baseline": base["hyp"], "baseline_tok": base["tok"],
            "refs": refs["refs"], "tok_refs": refs["tok"]}


def claim_controls(claims_file: str = paths.CLAIMS, config: dict[str, Any] | None = None) -> dict[str, list[str]]:
    """system -> the experiments its claim must beat (``controls`` of role ``must_beat`` in
    the claims file, :mod:`workflow_scripts.evaluation.claim_files`, and in the config's own
    ``claims:`` as the Snakefile resolved them at start-up, :func:`own_claims`)."""
    with open(claims_file, encoding="utf-8") as handle:
        claims = {**(yaml.safe_load(handle) or {}), **own_claims(config or {})}
    return {system: [c["experiment"] for c in (claim.get("controls") or []) if c.get("role") == "must_beat"]
            for system, claim in claims.items() if isinstance(claim, dict)}


def own_claims(config: dict[str, Any]) -> dict[str, Any]:
    """The config's claims of your own, once the Snakefile has read and checked them
    (``config["claims"]`` a mapping then; a file name before that: none yet)."""
    claims = config.get("claims")
    return claims if isinstance(claims, dict) else {}


def run_comparisons(config: dict[str, Any], claims_file: str = paths.CLAIMS) -> list[tuple[str, str, str, str]]:
    """(system, baseline system, corpus, test set) of every comparison over runs: a system is
    an experiment with all its seeds' runs (:func:`.seeds.seed_of`), compared with the system
    of its runs' baselines and with each must-beat control of its claim that runs on the
    corpus (:func:`claim_controls`), one pair of runs per common seed (:func:`run_pairs`)."""
    runs = experiment_runs(config)
    systems_on = {(seed_of(config, e)[0], c) for e, c in runs}
    controls = claim_controls(claims_file, config)
    found: dict[tuple[str, str, str, str], None] = {}
    for experiment, corpus in runs:
        system = seed_of(config, experiment)[0]
        others = [seed_of(config, b)[0] for b in baselines_of(config, experiment)]
        others += [c for c in controls.get(system, []) if (c, corpus) in systems_on]
        for other in others:
            for test_set in evaluation_sets(config, corpus):
                found[(system, other, corpus, test_set)] = None
    return list(found)


def run_pairs(config: dict[str, Any], system: str, baseline: str, corpus: str) -> list[tuple[int | None, str, str]]:
    """(seed, system run, baseline run) for every seed that both systems ran on ``corpus``, in
    the order of the system's runs."""
    def runs_of(group: str) -> dict[int | None, str]:
        return {seed_of(config, run)[1]: run for run, c in experiment_runs(config)
                if c == corpus and seed_of(config, run)[0] == group}

    theirs = runs_of(baseline)
    return [(seed, run, theirs[seed]) for seed, run in runs_of(system).items() if seed in theirs]


def run_statistics_path(system: str, baseline: str, corpus: str, test_set: str) -> str:
    return paths.fill(paths.RUN_STATISTICS, experiment=system, baseline=baseline, corpus=corpus, test_set=test_set)


def run_statistics_inputs(config: dict[str, Any], system: str, baseline: str, corpus: str, test_set: str) -> dict[str, Any]:
    """Input files of one comparison over runs, by role (for ``unpack`` in the rule): the runs'
    outputs in :func:`run_pairs` order and the references."""
    concatenated = is_concatenation(config, corpus, test_set)
    pairs = run_pairs(config, system, baseline, corpus)
    systems = [system_files(run, corpus, test_set, concatenated) for _, run, _ in pairs]
    bases = [system_files(base, corpus, test_set, concatenated) for _, _, base in pairs]
    refs = reference_files(config, corpus, test_set)
    return {"system": [f["hyp"] for f in systems], "system_tok": [f["tok"] for f in systems],
            "baseline": [f["hyp"] for f in bases], "baseline_tok": [f["tok"] for f in bases],
            "refs": refs["refs"], "tok_refs": refs["tok"]}


def paper_tables_present(config: dict[str, Any]) -> list[str]:
    """Papers with at least one experiment on an active corpus, in :data:`PAPERS` order, then the
    tables of your own (``paper:`` any other name), in config order."""
    papers = dict.fromkeys(config["experiments"][e].get("paper") for e, _ in experiment_runs(config))
    return [p for p in PAPERS if p in papers] + [p for p in papers if p is not None and p not in PAPERS]


def length_analyses(config: dict[str, Any]) -> list[tuple[str, str]]:
    """(corpus, test set) pairs with at least one system: one BLEU-by-length plot each."""
    corpora = dict.fromkeys(c for _, c in experiment_runs(config))
    return [(c, t) for c in corpora for t in config["corpora"][c]["test_sets"]]


def length_systems(config: dict[str, Any], corpus: str) -> list[str]:
    """The experiments drawn in a corpus' length plots, in config order."""
    return [e for e, c in experiment_runs(config) if c == corpus]


def length_inputs(config: dict[str, Any], corpus: str, test_set: str) -> dict[str, Any]:
    """Source, system outputs (in :func:`length_systems` order) and references of one length analysis."""
    tokenized = evaluation_settings(config)["length_metric"] == "tokenized_bleu"
    refs = reference_files(config, corpus, test_set)
    return {
        "source": source_file(config, corpus, test_set),
        "systems": [system_files(e, corpus, test_set, False)["tok" if tokenized else "hyp"] for e in length_systems(config, corpus)],
        "refs": refs["tok" if tokenized else "refs"],
    }


def report_metadata(config: dict[str, Any]) -> dict[str, Any]:
    """What the results table needs from the config (JSON-able; the ``--metadata`` of
    ``workflow_scripts.evaluation.tables collect``), in config order.  ``seed_group`` and
    ``seed``: the system a run belongs to and its training seed (:func:`.seeds.seed_of`)."""
    runs = experiment_runs(config)
    used = dict.fromkeys(c for _, c in runs)
    settings = evaluation_settings(config)
    return {
        "experiments": {
            name: {
                "family": spec["family"],
                "subwords": spec["subwords"],
                "paper": spec.get("paper") or "",
                "variant": spec.get("variant") or name,
                "input": spec.get("input") or "",
                "tables": list(spec.get("tables") or []),
                "baselines": baselines_of(config, name),
                "corpora": [c for e, c in runs if e == name],
                "seed_group": seed_of(config, name)[0],
                "seed": seed_of(config, name)[1],
            }
            for name, spec in config["experiments"].items()
        },
        "corpora": {
            corpus: {
                "src": config["corpora"][corpus]["src"],
                "tgt": config["corpora"][corpus]["tgt"],
                "test_sets": list(config["corpora"][corpus]["test_sets"]),
                "concatenations": concatenations_of(config, corpus),
            }
            for corpus in used
        },
        "significance_metrics": settings["significance_metrics"],
    }


def report_inputs(config: dict[str, Any]) -> list[str]:
    """Every file the results table reads: scores, comparisons, comparisons over runs (the
    tests the seeded rows report), model information."""
    files = []
    for experiment, corpus in experiment_runs(config):
        files.append(model_info_path(experiment, corpus))
        for test_set in evaluation_sets(config, corpus):
            files.append(system_files(experiment, corpus, test_set, is_concatenation(config, corpus, test_set))["scores"])
    files += [comparison_path(*c) for c in comparisons(config)]
    files += [run_statistics_path(*c) for c in run_comparisons(config)]
    return files


def run_files(experiment: str, corpus: str) -> dict[str, str]:
    """The files of one training run the results summary reads: resolved settings, the
    trainer's metrics.csv and the model information."""
    return {"experiment": paths.fill(paths.EXPERIMENT_YAML, experiment=experiment, corpus=corpus),
            "metrics": paths.fill(paths.TRAIN_METRICS, experiment=experiment, corpus=corpus),
            "model_info": model_info_path(experiment, corpus)}


def summary_inputs(config: dict[str, Any]) -> dict[str, Any]:
    """Inputs of the results summary, by role (for ``unpack`` in the rule)."""
    files = [run_files(e, c) for e, c in experiment_runs(config)]
    return {"results": paths.RESULTS_TABLE, "claims": paths.CLAIMS, "oov": oov_targets(config),
            "runs": [run_statistics_path(*c) for c in run_comparisons(config)],
            "compressors": [f for report in compressor_reports(config) for f in
                            (report["scores"], report["source"], report["compressed"])],
            **{role: [f[role] for f in files] for role in ("experiment", "metrics", "model_info")}}


def curve_corpora(config: dict[str, Any]) -> list[str]:
    """Corpora with at least one training run: one learning-curve plot each."""
    return list(dict.fromkeys(c for _, c in experiment_runs(config)))


def curve_inputs(config: dict[str, Any], corpus: str) -> list[str]:
    """The metrics.csv of every run on the corpus, in :func:`length_systems` order."""
    return [run_files(e, corpus)["metrics"] for e in length_systems(config, corpus)]


def summary_targets(config: dict[str, Any]) -> list[str]:
    """The results summary and one learning-curve plot per corpus."""
    return [paths.SUMMARY_MARKDOWN, paths.SUMMARY_JSON] + [
        paths.fill(paths.LEARNING_CURVES, corpus=corpus) for corpus in curve_corpora(config)]


def report_targets(config: dict[str, Any]) -> list[str]:
    """The end of `all`: the results table, paper tables, length plots, results summary and
    learning curves."""
    targets = [paths.RESULTS_TABLE]
    for paper in paper_tables_present(config):
        targets += [paths.fill(template, paper=paper) for template in (paths.PAPER_TABLE_MARKDOWN, paths.PAPER_TABLE_LATEX,
                                                                        paths.PAPER_TABLE_HTML)]
    for corpus, test_set in length_analyses(config):
        targets += [paths.fill(template, corpus=corpus, test_set=test_set) for template in (paths.LENGTH_TABLE, paths.LENGTH_PLOT)]
    return targets + summary_targets(config)
