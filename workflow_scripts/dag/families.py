"""What a run's model family needs, as its module declares it: the workflow knows families by
what they read, never by name.

Each family module holds a literal ``FAMILY_NEEDS`` (:mod:`nmtmodels.family_needs`: its extra
``inputs``, its ``export`` formats) that is read with :mod:`ast`, so planning imports no torch:
every job re-reads the Snakefile.  The inputs a workflow stage makes are :data:`MADE_INPUTS`, by
input name: ``compressed`` comes from the experiment's ``compressor`` (rules/compression.smk),
``starts`` and ``ends`` from its ``lattice`` (rules/lattice.smk).  A family that reads any other
input is refused at start-up: a new input is a new stage (docs/howto.md, "A model family that
reads extra inputs").
"""
from __future__ import annotations

import os
from typing import Any

from nmtmodels.family_needs import USER_MODULES_VARIABLE, FamilyNeeds, needs_of
from workflow_scripts.dag import WorkflowConfigError
from workflow_scripts.dag.runs import experiment_runs

# Extra inputs a workflow stage makes -> the experiment key that says from what.
MADE_INPUTS = {"compressed": "compressor", "starts": "lattice", "ends": "lattice"}
WHAT_KEY_NAMES = {"compressor": "a compressor (a key of compression.compressors)",
                  "lattice": "the segmentations its lattice packs"}


def family_needs(config: dict[str, Any], family: str) -> FamilyNeeds:
    """The declaration of ``family`` among the built-in families, the entry points and the
    modules of ``NMT_USER_MODULES`` and the config's ``user_modules``."""
    modules = [*os.environ.get(USER_MODULES_VARIABLE, "").split(os.pathsep), *(config.get("user_modules") or [])]
    return needs_of(family, [m for m in modules if isinstance(m, str)])


def experiment_needs(config: dict[str, Any], experiment: str) -> FamilyNeeds:
    return family_needs(config, config["experiments"][experiment]["family"])


def reads(config: dict[str, Any], experiment: str, name: str) -> bool:
    """Whether the experiment's family reads the extra input ``name``."""
    return name in experiment_needs(config, experiment).inputs


def check_family_needs(config: dict[str, Any]) -> None:
    """Each run's family gets every input it declares: each is a made input (:data:`MADE_INPUTS`)
    and its experiment names the key it is made from; and an experiment names ``compressor`` only
    for a family that reads ``compressed``.  One line naming the key and the family's declaration."""
    running = {name for name, _ in experiment_runs(config)}
    for name, spec in config.get("experiments", {}).items():
        where, needs = f"experiments.{name}", family_needs(config, spec["family"])
        if name not in running and not needs.module:  # e.g. a family whose module this run does not load
            continue
        for made in needs.inputs:
            if made not in MADE_INPUTS:
                raise WorkflowConfigError(
                    f"{where}.family: family {spec['family']!r} reads the extra input {made!r}, which no workflow stage "
                    f"makes (made: {', '.join(sorted(MADE_INPUTS))}; {needs.where('inputs')}): a new input needs a "
                    "stage of its own (docs/howto.md, 'A model family that reads extra inputs')")
            key = MADE_INPUTS[made]
            if not spec.get(key):
                raise WorkflowConfigError(f"{where}.{key}: family {spec['family']!r} needs {WHAT_KEY_NAMES[key]}: it reads "
                                          f"the extra input {made!r} ({needs.where('inputs')})")
        if spec.get("compressor") is not None and "compressed" not in needs.inputs:
            raise WorkflowConfigError(
                f"{where}.compressor: family {spec['family']!r} reads no compressed source ({needs.where('inputs')}: "
                f"{', '.join(needs.inputs) or 'none'}); only a family that reads 'compressed' takes a compressor")
