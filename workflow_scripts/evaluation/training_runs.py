"""Each training run of a results summary and the fairness of each compared pair.

:func:`training_run`: the budget from the run's ``experiment.yaml`` (``train.max_updates``,
``max_epochs``, ``max_minutes``; 0 = no limit), updates done and wall-clock seconds from the
last row of ``train/metrics.csv`` (its ``update`` and ``elapsed`` columns), parameters and
training speed from ``model_info.json``, and the best dev-set loss (with its update), every
validation's dev loss (``dev_curve``) and dev BLEU (when ``train.valid_bleu`` is on) of the
validations in ``metrics.csv``: the numbers to
choose settings by, never the test scores; the precision it trained in (:func:`precision`).
Why it stopped is derived by :func:`stop_reason`,
in this order: the run ended as diverged (``model_info.json``'s ``diverged``, the record its
checkpoint carries: nmtmodels.training.divergence) -> "diverged", with the trainer's line in
``diverged``; ``updates >= max_updates`` (max_updates set) -> "max_updates"; else
``max_minutes`` set and ``elapsed >= 60 * max_minutes`` -> "max_minutes (cap fired)"; else
``max_epochs`` set -> "max_epochs"; else "other" (e.g. early stopping).  The trainer validates
once more when it stops, so the last row holds its final update and elapsed time (summed
over resumed runs).

:func:`fair_comparison`, per (experiment, baseline, corpus): the budgets (``train.max_*``)
equal or their differences, the updates each did, and every other resolved
``model``/``train``/``decode`` setting of the two ``experiment.yaml`` files that differs (the
method keys ``model.family`` and ``model.options`` aside; training threads aside).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from nmtmodels.files import DataError
from workflow_scripts.dag import evaluation as ev
from workflow_scripts.evaluation.curves import curve_series, read_metrics
from workflow_scripts.evaluation.results import read_json

BUDGET_KEYS = ("max_updates", "max_epochs", "max_minutes")
# Settings that do not change what is trained (left out of the fair-comparison differences).
IGNORED_SETTINGS = frozenset({"model.family", "model.options", "train.num_threads"})


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, "no such file") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise DataError(path, f"not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict) or not isinstance(data.get("train"), dict):
        raise DataError(path, "not an experiment.yaml: no 'train' section")
    return data


def stop_reason(updates: int, elapsed_s: float, budget: dict[str, Any], diverged: bool = False) -> str:
    """Why a run stopped, from whether it ended as diverged, its budget and its last metrics row
    (module docstring)."""
    if diverged:
        return "diverged"
    if budget.get("max_updates") and updates >= budget["max_updates"]:
        return "max_updates"
    if budget.get("max_minutes") and elapsed_s >= 60 * float(budget["max_minutes"]):
        return "max_minutes (cap fired)"
    if budget.get("max_epochs"):
        return "max_epochs"
    return "other"


def precision(train: dict[str, Any]) -> str:
    """The run's training precision from its ``train.amp``, for a run whose model_info.json does
    not record what its steps computed in (checkpoints before that was recorded): ``bf16``
    (autocast on CUDA or on a CPU with native bf16; a CPU without it trains in fp32 and the
    train log says so) or ``fp32``."""
    return "bf16" if train.get("amp") == "bf16" else "fp32"


def dev_loss_drop(points: list[tuple[float, float]], updates: int) -> float | None:
    """How much the best dev loss fell after the last validation at or before 80% of training: the best of the
    validations up to 0.8 x ``updates`` minus the best of all (None without a validation
    in the first four fifths)."""
    early = [loss for update, loss in points if update <= 0.8 * updates]
    return min(early) - min(loss for _, loss in points) if early else None


def training_run(experiment: str, corpus: str, root: str | Path = ".", system: str | None = None,
                 seed: int | None = None, test_sets: list[str] | None = None) -> dict[str, Any]:
    """Budget, updates, time, stop reason, parameters and speed of one run (files below
    ``root``); ``system`` and ``seed``: the system (seed group) the run belongs to and its seed;
    ``test_sets``: the test sets whose source OOV rates it reports (None: every one on disk)."""
    root = Path(root)
    files = ev.run_files(experiment, corpus)
    settings = _read_yaml(root / files["experiment"])
    metrics_path = root / files["metrics"]
    last = read_metrics(metrics_path)[-1]
    try:
        updates = int(float(last["update"]))
        elapsed = float(last.get("elapsed") or "nan")
        target_tokens = int(float(last["target_tokens"])) if last.get("target_tokens") else None  # older runs: none
    except ValueError as exc:
        raise DataError(metrics_path, f"last row: {exc}") from None
    if math.isnan(elapsed):
        raise DataError(metrics_path, "last row has no elapsed time")
    info = read_json(root / files["model_info"])
    budget = {key: settings["train"].get(key, 0) or 0 for key in BUDGET_KEYS}
    series = curve_series(metrics_path)
    dev_loss = min(zip(*series["dev loss"]), key=lambda point: point[1]) if "dev loss" in series else None
    dev_bleu = max(series["dev BLEU"][1]) if "dev BLEU" in series else None
    found = sorted((root / files["experiment"]).parent.glob("*.oov.json"))
    oov = {path.name.removesuffix(".oov.json"): read_json(path) for path in found
           if test_sets is None or path.name.removesuffix(".oov.json") in test_sets}
    return {
        "experiment": experiment, "corpus": corpus, "system": system or experiment, "seed": seed,
        "dev_loss_drop": dev_loss_drop(list(zip(*series["dev loss"])), updates) if "dev loss" in series else None,
        "family": (settings.get("model") or {}).get("family") or info.get("family"),
        "budget": budget, "updates": updates, "elapsed_s": elapsed, "target_tokens": target_tokens,
        "stop_reason": stop_reason(updates, elapsed, budget, bool(info.get("diverged"))),
        "diverged": (info.get("diverged") or {}).get("message"),
        "precision": info.get("precision") or precision(settings["train"]),
        "devices": info.get("devices") or [],
        "parameters": info.get("parameters"), "train_tokens_per_s": info.get("train_tokens_per_s"),
        "best_dev_loss": dev_loss[1] if dev_loss else None,
        "best_dev_loss_update": int(dev_loss[0]) if dev_loss else None,
        "best_dev_bleu": dev_bleu,
        "dev_curve": [[int(u), float(loss)] for u, loss in zip(*series["dev loss"])] if "dev loss" in series else [],
        "source_oov": {test: {"unit": r["unit"], "oov_rate": r["oov_rate"]} for test, r in oov.items()},
    }


def _flat(settings: dict[str, Any], path: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every setting by its dotted path in experiment.yaml (``train.lr``; ``model.options`` whole)."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict) and not (path == ("model",) and key == "options"):
            flat.update(_flat(value, (*path, key)))
        else:
            flat[".".join((*path, key))] = value
    return flat


def fair_comparison(experiment: str, baseline: str, corpus: str, runs: dict[tuple[str, str], dict[str, Any]],
                    root: str | Path = ".") -> dict[str, Any]:
    """Budgets, updates done and setting differences of one compared pair (module docstring)."""
    root = Path(root)
    system, base = runs[experiment, corpus], runs[baseline, corpus]
    budget_diff = {k: [system["budget"][k], base["budget"][k]] for k in BUDGET_KEYS if system["budget"][k] != base["budget"][k]}
    flats = [_flat(_read_yaml(root / ev.run_files(name, corpus)["experiment"])) for name in (experiment, baseline)]
    other = {k: [flats[0].get(k), flats[1].get(k)] for k in sorted(set(flats[0]) | set(flats[1]))
             if k not in IGNORED_SETTINGS and k.removeprefix("train.") not in BUDGET_KEYS and flats[0].get(k) != flats[1].get(k)}
    return {"experiment": experiment, "baseline": baseline, "corpus": corpus, "equal_budgets": not budget_diff,
            "budget": system["budget"], "budget_differences": budget_diff,
            "updates": [system["updates"], base["updates"]], "setting_differences": other}


def comparison_line(c: dict[str, Any]) -> str:
    """One sentence per compared pair (the Markdown's fair-comparison list)."""
    pair = f"{c['experiment']} vs {c['baseline']} on {c['corpus']}"
    if c["equal_budgets"]:
        text = f"{pair}: equal budgets ({_budget_text(c['budget'])})"
    else:
        text = f"{pair}: different budgets (" + "; ".join(f"{k} {a} vs {b}" for k, (a, b) in c["budget_differences"].items()) + ")"
    a, b = c["updates"]
    text += f"; updates done {a} vs {b}" + (" (equal)" if a == b else "")
    if c["setting_differences"]:
        text += "; other settings differ: " + "; ".join(f"{k} {a!r} vs {b!r}" for k, (a, b) in c["setting_differences"].items())
    else:
        text += "; all other experiment.yaml settings equal"
    return text


def _budget_text(budget: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in budget.items() if v) or "no limit"
