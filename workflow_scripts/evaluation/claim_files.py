"""Claims as files and config: the papers' claims (``claims.yaml``, :data:`CLAIMS_FILE`) and your
own (the workflow config's ``claims:``, inline or a file it names), read and checked here; their
verdicts are :mod:`.verdicts`'.

A claim, keyed by its system (an experiment with its seeds), has the fields of the papers':
``paper`` (a paper of the package, or for your own claims a name of your own), ``metric``,
``claim`` (the words), optionally ``paper_delta``, ``smallest_difference`` (``value``: the
smallest difference of interest, in points of the metric, and ``source``: where it comes from;
default: ``paper_delta``, the paper's own difference), ``precondition`` (``compressor``: the
claim rests on a sentence compressor whose quality the summary names beside the verdict),
``controls`` (``experiment``, ``role``
``must_beat`` or ``beside``, ``what``, optionally ``baseline``) and ``deviations`` (``key``,
``paper``, ``why``).  Your own claims may also say

* ``baseline``: which of the system's baselines the claim is against (a name or a list;
  default: every baseline of its experiment);
* ``test``: ``sign`` (the stratified AR test and the sign test pooled over the runs, as the
  papers that used the sign test) or ``ar`` (the stratified AR test alone); default: the
  convention of ``paper`` (:data:`.markers.SIGNIFICANCE`; a name of your own: the project's,
  ``ar``);
* ``level``: the significance level (default: the loosest level of that convention, 0.05 for
  a name of your own).

Your own claims are marked ``own: true``: the summary prints them in a section of their own,
with the same verdict rule and in the same Holm family as the papers' claims of that summary.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from nmtmodels.files import DataError
from workflow_scripts.dag import paths
from workflow_scripts.evaluation.layouts import LAYOUTS

CLAIMS_FILE = Path(paths.CLAIMS)  # the papers' claims, spelled once (workflow_scripts/dag/paths.py)
CONTROL_ROLES = ("must_beat", "beside")
CONTROL_KEYS = ("experiment", "role", "what", "baseline")
OWN_TESTS = {"sign": "sign", "ar": None}  # a claim's `test` -> the paper_test of its convention
CLAIM_KEYS = ("paper", "metric", "claim", "paper_delta", "smallest_difference", "precondition", "controls", "deviations")
PRECONDITIONS = ("compressor",)  # what a claim rests on that the summary measures beside its verdict
OWN_KEYS = (*CLAIM_KEYS, "baseline", "test", "level")


def _load(path: str | Path) -> Any:
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, "no such file") from None
    except yaml.YAMLError as exc:
        raise DataError(path, f"not valid YAML ({' '.join(str(exc).split())})") from None


def read_claims(path: str | Path = CLAIMS_FILE) -> dict[str, dict[str, Any]]:
    """The papers' claims: system -> {paper, metric, claim, paper_delta, controls, deviations}
    (``controls`` and ``deviations`` default to empty lists); ``paper`` one of the papers."""
    return check_claims(_load(path), lambda message: DataError(path, message), own=False)


def read_own_claims(path: str | Path) -> dict[str, dict[str, Any]]:
    """Claims of your own in a file (module docstring): ``paper`` may be a name of your own."""
    return check_claims(_load(path), lambda message: DataError(path, message), own=True)


def check_claims(claims: Any, error: Callable[[str], Exception], own: bool) -> dict[str, dict[str, Any]]:
    """``claims`` checked and completed (module docstring); ``error(message)`` is raised, its
    message naming the claim and the key (``relpos.controls[0]: needs experiment, role and what``)."""
    if claims is None and own:
        return {}
    if not isinstance(claims, dict):
        raise error("not a mapping of system -> claim")
    for system, claim in claims.items():
        missing = [key for key in ("paper", "metric", "claim") if not isinstance(claim, dict) or key not in claim]
        if missing:
            raise error(f"{system}: no {', '.join(missing)}")
        unknown = [key for key in claim if key not in (OWN_KEYS if own else CLAIM_KEYS) and key != "own"]
        if unknown:
            raise error(f"{system}.{unknown[0]}: unknown key (known: {', '.join(OWN_KEYS if own else CLAIM_KEYS)})")
        paper = claim["paper"]
        if not own and paper not in LAYOUTS:
            raise error(f"{system}.paper: unknown paper '{paper}' (known: {', '.join(LAYOUTS)})")
        if own and not (isinstance(paper, str) and paper.replace("_", "").replace("-", "").isalnum()):
            raise error(f"{system}.paper: '{paper}' is neither a paper ({', '.join(LAYOUTS)}) nor a name of your own "
                        "(letters, digits, _ and -)")
        _check_smallest(system, claim, error)
        if claim.get("precondition") is not None and claim["precondition"] not in PRECONDITIONS:
            raise error(f"{system}.precondition: '{claim['precondition']}' (known: {', '.join(PRECONDITIONS)})")
        claim["controls"] = claim.get("controls") or []
        claim["deviations"] = claim.get("deviations") or []
        for i, control in enumerate(claim["controls"]):
            if not isinstance(control, dict) or not {"experiment", "role", "what"} <= set(control):
                raise error(f"{system}.controls[{i}]: needs experiment, role and what")
            unknown = sorted(set(control) - set(CONTROL_KEYS))
            if unknown:
                raise error(f"{system}.controls[{i}].{unknown[0]}: unknown key (known: {', '.join(CONTROL_KEYS)})")
            if control["role"] not in CONTROL_ROLES:
                raise error(f"{system}.controls[{i}].role: '{control['role']}' (known: {', '.join(CONTROL_ROLES)})")
        for i, deviation in enumerate(claim["deviations"]):
            if not isinstance(deviation, dict) or not {"key", "paper", "why"} <= set(deviation):
                raise error(f"{system}.deviations[{i}]: needs key, paper and why")
        if own:
            _check_own(system, claim, error)
    return claims


def _check_smallest(system: str, claim: dict[str, Any], error: Callable[[str], Exception]) -> None:
    """``smallest_difference``: {value: a positive number, source: words}; filled from
    ``paper_delta`` (source: the paper's difference) where the claim declares none."""
    smallest = claim.get("smallest_difference")
    if smallest is None:
        delta = claim.get("paper_delta")
        claim["smallest_difference"] = ({"value": abs(float(delta)), "source": "the paper's difference"}
                                        if isinstance(delta, int | float) and delta else None)
        return
    if not isinstance(smallest, dict) or set(smallest) != {"value", "source"}:
        raise error(f"{system}.smallest_difference: needs exactly value and source")
    value = smallest["value"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise error(f"{system}.smallest_difference.value: {value!r} is not a positive number")
    if not isinstance(smallest["source"], str) or not smallest["source"].strip():
        raise error(f"{system}.smallest_difference.source: say where the value comes from")
    smallest["value"] = float(value)


def _check_own(system: str, claim: dict[str, Any], error: Callable[[str], Exception]) -> None:
    if "test" in claim and claim["test"] not in OWN_TESTS:
        raise error(f"{system}.test: '{claim['test']}' (known: {', '.join(OWN_TESTS)})")
    level = claim.get("level")
    if level is not None and (isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 0.5):
        raise error(f"{system}.level: {level!r} is not a significance level (a number between 0 and 0.5)")
    baseline = claim.get("baseline")
    if baseline is not None:
        names = [baseline] if isinstance(baseline, str) else baseline
        if not isinstance(names, list) or not names or not all(isinstance(b, str) for b in names):
            raise error(f"{system}.baseline: expected an experiment or a list of experiments, got {baseline!r}")
        claim["baseline"] = names
    claim["own"] = True


def own_claims(config: dict[str, Any], directory: str, workflow_dir: str | None = None) -> dict[str, dict[str, Any]]:
    """The config's own claims (``claims:``: a mapping, or the path of a file of them, relative to
    ``directory``, the one Snakemake runs in, else to ``workflow_dir``), checked; errors name
    ``claims`` (inline) or the file."""
    given = config.get("claims")
    if isinstance(given, str):
        path = Path(directory) / given
        if workflow_dir is not None and not path.exists() and (Path(workflow_dir) / given).exists():
            path = Path(workflow_dir) / given
        if not path.is_file():
            raise DataError(claims_source(config), f"no such file ({path.absolute()})")
        return read_own_claims(path)
    return check_claims(given, lambda message: DataError("claims", message), own=True)


def claims_source(config: dict[str, Any]) -> str:
    """What errors about the config's own claims name: ``claims`` or ``claims ('FILE')``."""
    return f"claims ({config['claims']!r})" if isinstance(config.get("claims"), str) else "claims"


def check_against_config(claims: dict[str, dict[str, Any]], config: dict[str, Any], papers_claims: dict[str, Any],
                         testable: list[str]) -> None:
    """Your own claims against the config (seeds expanded): each system, baseline and control is
    an experiment, a declared baseline is one of the system's, the metric is tested
    (``testable``: ``evaluation.significance_metrics``), and no system has a paper's claim too;
    DataError naming ``claims`` (or its file), the claim and the key."""
    experiments, source = config.get("experiments") or {}, claims_source(config)
    for system, claim in claims.items():
        if system not in experiments:
            raise DataError(source, f"{system}: unknown experiment '{system}' (a claim is keyed by its system)")
        if system in papers_claims:
            raise DataError(source, f"{system}: the papers' claims ({paths.CLAIMS}) have a claim for {system} already")
        if claim["metric"] not in testable:
            raise DataError(source, f"{system}.metric: '{claim['metric']}' is not tested (evaluation.significance_metrics: "
                                      f"{', '.join(testable)})")
        declared = experiments[system].get("baseline")
        declared = [declared] if isinstance(declared, str) else list(declared or [])
        for i, baseline in enumerate(claim.get("baseline") or []):
            if baseline not in declared:
                raise DataError(source, f"{system}.baseline[{i}]: '{baseline}' is not a baseline of experiments.{system} "
                                          f"({', '.join(declared) or 'none'})")
        if not declared:
            raise DataError(source, f"{system}: experiments.{system} has no baseline, so the claim has nothing to be "
                                      "tested against (give the experiment a baseline)")
        for i, control in enumerate(claim["controls"]):
            if control["experiment"] not in experiments:
                raise DataError(source, f"{system}.controls[{i}].experiment: unknown experiment '{control['experiment']}'")
            if control.get("baseline") is not None and control["baseline"] not in experiments:
                raise DataError(source, f"{system}.controls[{i}].baseline: unknown experiment '{control['baseline']}'")


def checked_own_claims(config: dict[str, Any], papers_claims: dict[str, Any], directory: str, workflow_dir: str | None,
                       testable: list[str]) -> dict[str, dict[str, Any]]:
    """The Snakefile's start-up: the config's own claims read (:func:`own_claims`) and checked
    against the config (:func:`check_against_config`)."""
    claims = own_claims(config, directory, workflow_dir)
    check_against_config(claims, config, papers_claims, testable)
    return claims
