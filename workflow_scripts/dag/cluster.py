"""Where and how jobs run (rules/train.smk, decode.smk, every rule's resources; docs/cluster.md)."""
from __future__ import annotations

import os
from typing import Any

import yaml

from nmtmodels.config import ConfigError
from nmtmodels.plugins import import_user_module
from workflow_scripts.dag import WorkflowConfigError


def cluster_resources(config: dict[str, Any], gpus: int = 0) -> dict[str, Any]:
    """Snakemake resources placing a job that uses ``gpus`` GPUs under the SLURM profile:
    ``gpu`` (sbatch --gpus) and ``gpu_model`` for GPU jobs, ``slurm_partition`` (config
    ``cluster.gpu_partition`` for GPU jobs, else ``cluster.cpu_partition``) and
    ``slurm_account``.  Empty settings are left out, so SLURM's defaults apply."""
    cluster = config.get("cluster") or {}
    resources: dict[str, Any] = {"gpu": gpus} if gpus > 0 else {}
    if gpus > 0 and cluster.get("gpu_model"):
        resources["gpu_model"] = cluster["gpu_model"]
    partition = cluster.get("gpu_partition" if gpus > 0 else "cpu_partition")
    if partition:
        resources["slurm_partition"] = partition
    if cluster.get("account"):
        resources["slurm_account"] = cluster["account"]
    return resources


def train_launcher(config: dict[str, Any]) -> str:
    """What runs ``-m nmtmodels.cli train``: torchrun with one process per GPU when
    ``train_resources.gpus > 1`` (one node, one job), else python."""
    gpus = config["train_resources"].get("gpus", 0)
    return f"torchrun --standalone --nproc_per_node={gpus}" if gpus > 1 else "python"


def threads_per_process(config: dict[str, Any], threads: int) -> int:
    """CPU threads of each training process: the job's threads shared by its torchrun processes."""
    return max(1, threads // max(1, config["train_resources"].get("gpus", 0)))


def path_with_interpreter(executable: str, environ: dict[str, str], own_environments: bool) -> str:
    """PATH for the jobs: with the directory of the interpreter that runs Snakemake first, so
    the rules' ``python`` is that interpreter (a venv need not be activated: running
    ``/path/to/venv/bin/snakemake`` is enough).  Unchanged when rules get environments of their
    own (``--software-deployment-method conda`` or apptainer: the environment's ``python``),
    or when that directory holds no ``python`` (then ``python`` is the first one on PATH)."""
    directory = os.path.dirname(executable)
    path = environ.get("PATH", "")
    if own_environments or not directory or not os.access(os.path.join(directory, "python"), os.X_OK):
        return path
    return os.pathsep.join([directory, *(p for p in path.split(os.pathsep) if p and p != directory)])


def python_path_with(directory: str, environ: dict[str, str]) -> str:
    """PYTHONPATH with the repository first, so jobs run the project's modules from any environment."""
    return os.pathsep.join(p for p in (directory, environ.get("PYTHONPATH", "")) if p)


def joined_user_modules(config: dict[str, Any], configfiles: list[str]) -> list[str]:
    """``user_modules`` of every config file of the run, joined in the order the files are given
    (each entry once), then any that the merged config adds (``--config``): the one list that
    layering config files does not replace (a second file's list would otherwise drop the first's
    modules, and with them the families its experiments name).  A file that is not a mapping
    (the schema reports it) gives nothing."""
    joined: list[str] = []
    for path in configfiles:
        with open(path, encoding="utf-8") as handle:
            given = yaml.safe_load(handle)
        modules = given.get("user_modules") if isinstance(given, dict) else None
        joined += modules if isinstance(modules, list) else []
    merged = config.get("user_modules")
    joined += merged if isinstance(merged, list) else []
    return list({repr(module): module for module in joined}.values())  # a bad entry stays, for the schema to name


def user_modules_variable(config: dict[str, Any], environ: dict[str, str], directory: str,
                          workflow_dir: str | None = None) -> dict[str, str]:
    """``NMT_USER_MODULES`` for every job and the start-up checks (:mod:`nmtmodels.plugins`): the
    config's ``user_modules`` (families and metrics from outside the package; file and directory
    paths made absolute against ``directory``, the one Snakemake runs in, or else against
    ``workflow_dir`` where only that holds them, as the repository's ``examples/`` under
    ``--directory``; absolute, so cluster jobs find them too) after any that the environment
    already names; nothing when the config names none."""
    modules = [_module_path(module, directory, workflow_dir) for module in config.get("user_modules") or []]
    if not modules:
        return {}
    given = [item for item in environ.get("NMT_USER_MODULES", "").split(os.pathsep) if item]
    return {"NMT_USER_MODULES": os.pathsep.join(dict.fromkeys([*given, *modules]))}


def _module_path(module: str, directory: str, workflow_dir: str | None) -> str:
    """A ``user_modules`` entry as jobs import it: a file or directory path made absolute (as
    :func:`user_modules_variable` says), a dotted module name as it is."""
    path = os.path.join(directory, module)
    if workflow_dir is not None and not os.path.exists(path) and os.path.exists(os.path.join(workflow_dir, module)):
        path = os.path.join(workflow_dir, module)
    return os.path.abspath(path) if module.endswith(".py") or os.path.isdir(path) else module


def check_user_modules(config: dict[str, Any], directory: str, workflow_dir: str | None = None) -> None:
    """Import each module of the config's ``user_modules`` (its families and metrics register
    themselves); a :class:`~workflow_scripts.dag.WorkflowConfigError` in one line naming the key
    and the file when one is missing or fails to import (a syntax error, an ImportError, a family
    name that is taken): ``user_modules[0] ('missing.py'): no such file (/abs/missing.py)``."""
    for index, module in enumerate(config.get("user_modules") or []):
        try:
            import_user_module(_module_path(module, directory, workflow_dir), f"user_modules[{index}] ({module!r})")
        except ConfigError as exc:
            raise WorkflowConfigError(str(exc)) from None
