"""matplotlib's pyplot for the workflow's figures, on the Agg backend: they are files, drawn
where there is no display (cluster jobs, CI).  The backend is chosen before pyplot first loads,
and only where a figure is drawn, so a module that draws imports matplotlib on first use."""
from __future__ import annotations

from types import ModuleType


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` with the Agg backend chosen (the same module on every call)."""
    import matplotlib  # lazy: matplotlib only where a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: after matplotlib.use("Agg")

    return plt
