"""Fixtures shared by the nmtmodels tests."""
from __future__ import annotations

import pytest
import torch


@pytest.fixture
def one_thread():
    """One intra-op thread per test process (pytest runs two workers on two cores), restored after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def cpu_unless_cuda_test(request, monkeypatch):
    """The package's tests mean the CPU, except nmtmodels/tests/test_cuda.py: on a GPU host, code
    that picks its device itself (a Trainer without ``device=``, ``--device auto``) would run on
    the GPU and test something else.  Tests pin ``device="cpu"`` where they build one; this
    makes CUDA invisible to the rest, in the test process and in the commands it starts."""
    if request.node.path.name != "test_cuda.py":
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
