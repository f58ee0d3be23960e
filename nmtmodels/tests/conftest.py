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
