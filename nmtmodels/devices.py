"""Device names as users give them (``auto``, ``cpu``, ``cuda``, ``cuda:N``) turned into a
``torch.device``, or into one line saying why not (the Translator API and every command)."""
from __future__ import annotations

import torch

from nmtmodels.config import ConfigError

CHOICES = "auto, cpu, cuda or cuda:N"


def resolve_device(name: str | torch.device) -> torch.device:
    """``auto``: the first GPU when torch sees one, else the CPU.  A device torch cannot use
    here (a misspelt name, ``cuda`` on a CPU-only build or without a visible GPU, ``cuda:N``
    past the last GPU) is a ConfigError in one line."""
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
