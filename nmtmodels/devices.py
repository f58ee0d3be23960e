"""Device names as users give them (``auto``, ``cpu``, ``cuda``, ``cuda:N``) turned into a
``torch.device``, or into one line saying why not (the Translator API and every command)."""
from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING

from nmtmodels.config import ConfigError

if TYPE_CHECKING:
    import torch

CHOICES = "auto, cpu, cuda or cuda:N"


def resolve_device(name: str | torch.device) -> torch.device:
    """``auto``: the first GPU when torch sees one, else the CPU.  A device torch cannot use
    here (a misspelt name, ``cuda`` on a CPU-only build or without a visible GPU, ``cuda:N``
    past the last GPU) is a ConfigError in one line."""
    import torch  # lazy: nmt-translate --help imports this module, and must not import torch

    if isinstance(name, torch.device):
        device = name
    elif name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            device = torch.device(name)
        except (RuntimeError, TypeError):
            raise ConfigError(f"device {name!r}: not a device name ({CHOICES})") from None
    if device.type == "cuda":
        if torch.version.cuda is None:
            raise ConfigError(f"device {str(name)!r}: this torch build ({torch.__version__}) has no CUDA support; "
                              "use device 'cpu' (or 'auto')")
        if not torch.cuda.is_available():
            raise ConfigError(f"device {str(name)!r}: no CUDA device is visible (CUDA_VISIBLE_DEVICES, driver); "
                              "use device 'cpu' (or 'auto')")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError(f"device {str(name)!r}: there are {torch.cuda.device_count()} CUDA devices (cuda:0 ...)")
    elif device.type != "cpu" and device.type not in ("mps", "meta"):
        raise ConfigError(f"device {str(name)!r}: not supported here ({CHOICES})")
    return device


THREADS_ENV = "OMP_NUM_THREADS"


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity, e.g. a SLURM or container limit)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_threads(environ: dict[str, str] | None = None) -> int | None:
    """The intra-op threads of a translation when none are asked for: None (torch's own
    setting) when ``OMP_NUM_THREADS`` is set, as the workflow's jobs set it; else
    half the usable cores, between 1 and :data:`DEFAULT_THREADS` (:func:`intra_threads`).  Every
    core is fastest on an idle machine but several times slower beside other busy processes (the
    OpenMP threads wait for each other), half of them costs little idle and keeps that from
    happening (benchmarks/README.md, "nmt-translate's threads")."""
    environ = os.environ if environ is None else environ
    if environ.get(THREADS_ENV):
        return None
    return intra_threads(environ)


def intra_threads(environ: dict[str, str] | None = None) -> int:
    """The threads of :func:`default_threads` as a number, for a library that needs one, such as
    CTranslate2 (``ctranslate2.Translator(..., intra_threads=intra_threads())``, docs/translate.md):
    ``OMP_NUM_THREADS`` when it is set to a positive number (its first one: ``4,2`` gives 4), else
    half the usable cores, between 1 and :data:`DEFAULT_THREADS`."""
    environ = os.environ if environ is None else environ
    first = environ.get(THREADS_ENV, "").split(",")[0].strip()
    if first.isdigit() and int(first) > 0:
        return int(first)
    return max(1, min(DEFAULT_THREADS, usable_cores() // 2))


# At most this many threads by default (CTranslate2's default intra_threads is 4 as well).
DEFAULT_THREADS = 4


def set_threads(threads: int | None) -> None:
    """torch's intra-op threads for this process (a process-wide setting); None leaves it."""
    if threads is None:
        return
    if threads < 1:
        raise ConfigError(f"threads: must be >= 1, got {threads}")
    import torch  # lazy: nmt-translate --help imports this module, and must not import torch

    torch.set_num_threads(threads)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; elsewhere what :mod:`platform` knows, else "unknown")."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def device_name(device: str | torch.device, processes: int = 1) -> str:
    """What a run computes on, in words, for the records of a training: ``GPU NVIDIA H200`` or
    ``CPU Intel(R) Xeon(R) ..., 2 threads`` (torch's intra-op threads of this process), with
    ``N x`` in front when ``processes`` > 1 (one per GPU under torchrun)."""
    import torch  # lazy: nmt-translate --help imports this module, and must not import torch

    device = torch.device(device)
    if device.type == "cuda":
        name = f"GPU {torch.cuda.get_device_name(device)}"
    elif device.type == "cpu":
        threads = torch.get_num_threads()
        name = f"CPU {cpu_model()}, {threads} thread{'' if threads == 1 else 's'}"
    else:
        name = device.type
    return f"{processes} x {name}" if processes > 1 else name
