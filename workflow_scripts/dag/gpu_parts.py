"""The GPU reproduction in parts (docs/gpu.md, "In parts"): configs/gpu.yaml's systems split by
paper so that each part fits one call of the GPU machine (a bare machine, at most 10 minutes).

Part ``P`` is the config file ``configs/gpu_parts/P.yaml`` merged over configs/gpu.yaml (its
active corpus and systems, with their baselines, and its budgets) and the target
``gpu_part_P`` (rules/gpu.smk), which builds what ``gpu_reproduction`` builds for that
config: every score, significance test, paper table and the results summary::

    snakemake --cores 16 gpu_part_lattice --configfile configs/gpu.yaml configs/gpu_parts/lattice.yaml

A baseline that several parts need is trained in each of them: nothing but the small result
files comes back from a call.  ``python -m workflow_scripts.evaluation.merge_gpu_parts`` joins
the parts' results summaries into one.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from workflow_scripts.dag import WorkflowConfigError, evaluation, runs

PARTS = ("lattice", "reordering", "graph", "esc", "char")
PART_DIR = "configs/gpu_parts"
BASE_CONFIG = "configs/gpu.yaml"


def part_config(part: str) -> str:
    return f"{PART_DIR}/{part}.yaml"


def part_configfiles(part: str) -> list[str]:
    """The config files of part ``part``, in the order Snakemake merges them."""
    return [BASE_CONFIG, part_config(part)]


def part_of(configfiles: Sequence[str]) -> str | None:
    """The part whose config file is among ``configfiles`` (paths relative to the workflow), if any."""
    found = [part for part in PARTS if part_config(part) in configfiles]
    return found[0] if len(found) == 1 else None


def check_part(part: str, configfiles: Sequence[str]) -> None:
    """Target ``gpu_part_<part>`` runs only with that part's config files (WorkflowConfigError otherwise)."""
    given = [f for f in configfiles if f.startswith(PART_DIR + "/") and f.removeprefix(PART_DIR + "/")[:-5] in PARTS]
    if BASE_CONFIG not in configfiles or given != [part_config(part)]:
        raise WorkflowConfigError(
            f"target gpu_part_{part}: run it with its config files, "
            f"`snakemake gpu_part_{part} --configfile {' '.join(part_configfiles(part))}` "
            f"(given: {' '.join(f for f in configfiles if f != 'config.yaml') or 'none'})")


def part_targets(config: dict[str, Any]) -> list[str]:
    """What ``gpu_reproduction`` builds for ``config``: every score, significance test, the
    results table, paper tables, length plots, results summary and learning curves."""
    return [*runs.model_targets(config), *[evaluation.comparison_path(*c) for c in evaluation.comparisons(config)],
            *evaluation.report_targets(config)]


def part_inputs(part: str, config: dict[str, Any], configfiles: Sequence[str]) -> Callable[[Any], list[str]]:
    """The input function of target ``gpu_part_<part>``: checks the config files when the target
    is asked for (not when another target is), then :func:`part_targets`."""
    def inputs(wildcards: Any) -> list[str]:
        check_part(part, configfiles)
        return part_targets(config)

    return inputs
