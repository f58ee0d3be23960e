"""Seeds: ``experiments.X.seeds: [a, b, c]`` trains X once per seed (the Snakefile expands
them once, after the schema and before the checks).

Expansion turns X into X (seed ``a``: its name and paths stay) plus ``X_seed<b>`` and
``X_seed<c>``, copies of X whose ``train.seed`` is ``b`` and ``c``.  Every run of the group
carries :data:`SEED_KEY` (``{experiment: X, seed: s}``): the paper tables and the results
summary group the runs of a system by it (mean ± standard deviation over the seeds, and the
significance test of the seed closest to the mean: :mod:`workflow_scripts.evaluation.results`).
A run compares with its baseline's run of the same seed (``baseline: B`` becomes
``B_seed<b>``), so a compared system's seeds must be among its baseline's (an experiment
without ``seeds`` has one: its ``train.seed``); the fairness check
(:func:`workflow_scripts.dag.checks.check_fair_comparisons`) then sees equal ``train.seed``
in every pair.  A system of one seed may so compare with a baseline of three (an ablation
row of ``configs/ablations.yaml`` against the embedded default's seeded baseline): it
compares with that seed's run.  Without ``seeds`` an experiment is one run with
``train.seed`` as before.

Analyses other than the tables (swap noise, Graph-Transformer gates, char2word attention)
run on the runs they name or select as before; a seed copy does not join the layer sweep
(``layers_plot``): Figure 6 plots the first seed.
"""
from __future__ import annotations

import copy
from typing import Any

from workflow_scripts.dag import WorkflowConfigError
from workflow_scripts.dag.runs import experiment_runs

SEED_KEY = "seed_of"  # set by expand_seeds on every run of a seeded experiment (not a config key)


def seed_run_name(experiment: str, seed: int) -> str:
    """The name of the run of ``experiment`` with a later ``seed`` (``X_seed<seed>``)."""
    return f"{experiment}_seed{seed}"


def _seeds(spec: Any) -> list[int] | None:
    return list(spec["seeds"]) if isinstance(spec, dict) and spec.get("seeds") is not None else None


def _baselines(spec: dict[str, Any]) -> list[str]:
    value = spec.get("baseline")
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _run_seeds(config: dict[str, Any], spec: Any) -> list[int]:
    """The seeds of an experiment's runs: its ``seeds``, else its resolved ``train.seed``."""
    listed = _seeds(spec)
    if listed is not None:
        return listed
    seed = {**(config.get("training") or {}), **((spec or {}).get("train") or {})}.get("seed")
    return [seed]


def _baseline_of_seed(experiments: dict[str, Any], baseline: str, seed: int) -> str:
    """The run of ``baseline`` with ``seed``: ``baseline`` itself for its first seed (or when it
    has no seed list), else ``baseline_seed<seed>``.  A system that `all` does not run (not
    checked) may have a baseline without that seed, which it keeps."""
    theirs = _seeds(experiments.get(baseline))
    return seed_run_name(baseline, seed) if theirs and seed in theirs[1:] else baseline


def expand_seeds(config: dict[str, Any]) -> dict[str, Any]:
    """Expand every ``experiments.X.seeds`` in place (see the module docstring) and return
    ``config``.  Idempotent: a config expanded once is left as it is.  Raises
    WorkflowConfigError (one line, naming the key) for compared systems with different seed
    lists (systems that `all` runs: :func:`~workflow_scripts.dag.runs.experiment_runs`), a
    seed list beside ``train.seed``, or a run name that is already an experiment."""
    experiments = config.get("experiments") or {}
    if any(SEED_KEY in spec for spec in experiments.values()):
        return config
    running = {name for name, _ in experiment_runs(config)}
    for name, spec in experiments.items():
        seeds = _seeds(spec)
        if seeds is not None and not seeds:
            raise WorkflowConfigError(f"experiments.{name}.seeds: empty (give at least one seed, or leave the key out)")
        if seeds is not None and "seed" in (spec.get("train") or {}):
            raise WorkflowConfigError(f"experiments.{name}.train.seed: set by experiments.{name}.seeds {seeds}; "
                                      "give one of the two")
        for i, baseline in enumerate(_baselines(spec) if name in running else ()):
            if baseline not in experiments:
                continue  # reported by the evaluation checks
            theirs, ours = _run_seeds(config, experiments[baseline]), _run_seeds(config, spec)
            if not set(ours) <= set(theirs):
                key = f"experiments.{name}.baseline" + ("" if isinstance(spec["baseline"], str) else f"[{i}]")
                raise WorkflowConfigError(
                    f"{key}: '{baseline}' has seeds {theirs} but {name} has {ours}; a compared system's seeds "
                    f"must be among its baseline's (experiments.{name}.seeds)")
    expanded: dict[str, Any] = {}
    for name, spec in experiments.items():
        seeds = _seeds(spec)
        if seeds is None:  # one run of its train.seed: its baseline's run of that seed
            (seed,) = _run_seeds(config, spec)
            if isinstance(spec, dict) and spec.get("baseline") is not None:
                spec["baseline"] = (_baseline_of_seed(experiments, spec["baseline"], seed)
                                    if isinstance(spec["baseline"], str)
                                    else [_baseline_of_seed(experiments, b, seed) for b in spec["baseline"]])
            expanded[name] = spec
            continue
        for i, seed in enumerate(seeds):
            run = name if i == 0 else seed_run_name(name, seed)
            if i > 0 and run in experiments:
                raise WorkflowConfigError(f"experiments.{name}.seeds: the run of seed {seed} would be named '{run}', "
                                          "which is already an experiment (rename one of them)")
            member = copy.deepcopy(spec)
            member["train"] = {**(member.get("train") or {}), "seed": seed}
            member[SEED_KEY] = {"experiment": name, "seed": seed}
            if isinstance(member.get("baseline"), str):
                member["baseline"] = _baseline_of_seed(experiments, member["baseline"], seed)
            elif member.get("baseline") is not None:
                member["baseline"] = [_baseline_of_seed(experiments, b, seed) for b in member["baseline"]]
            if i > 0:
                member.pop("layers_plot", None)
            expanded[run] = member
    experiments.clear()
    experiments.update(expanded)
    for key in ("active_experiments", "inactive_experiments"):
        if config.get(key) is not None:
            config[key] = [
                run for name in config[key]
                for run in ([name] + [seed_run_name(name, s) for s in (_seeds(expanded.get(name)) or [])[1:]])
            ]
    return config


def seed_of(config: dict[str, Any], experiment: str) -> tuple[str, int | None]:
    """(the system, the seed) of one run: (X, s) for a run of ``X``'s seeds, else the
    experiment itself and its ``train.seed`` (None when the config sets none)."""
    spec = config["experiments"][experiment]
    if SEED_KEY in spec:
        return spec[SEED_KEY]["experiment"], spec[SEED_KEY]["seed"]
    return experiment, {**config.get("training", {}), **spec.get("train", {})}.get("seed")
