"""The conformance suite (:mod:`nmtmodels.testing`) over every built-in model family and its
variants (the cases of :mod:`nmtmodels.tests.family_cases`, built with each family's own test
helpers); a registered family without a case fails here instead of being skipped by the
suite, the compile tests and the CUDA tests alike."""
from __future__ import annotations

import pytest

from nmtmodels import testing
from nmtmodels.registry import get_model_class, model_families
from nmtmodels.tests.family_cases import FAMILIES, family_case

pytestmark = pytest.mark.usefixtures("one_thread")


def test_every_registered_family_has_a_case() -> None:
    built_in = {name for name in model_families() if get_model_class(name).__module__.startswith("nmtmodels.")}
    covered = {case.split("/")[0] for case in FAMILIES}
    assert built_in <= covered, f"no conformance case for {sorted(built_in - covered)}: add one to nmtmodels/tests/family_cases.py"
    assert covered <= built_in


@pytest.mark.parametrize("check", testing.MODEL_CHECKS, ids=lambda check: check.__name__)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_conforms(family: str, check) -> None:
    check(*family_case(family))


@pytest.mark.parametrize("family", sorted({case.split("/")[0] for case in FAMILIES}))
def test_family_options_conform(family: str) -> None:
    testing.check_options(family)


def test_the_suite_fails_a_family_that_breaks_a_rule(monkeypatch) -> None:
    """A check that cannot fail proves nothing: a decoder that reads a padding position, and a
    parameter that no loss reaches, are each caught."""
    import torch

    model, batch = family_case("transformer")
    real_encode = model.encode

    def leaky_encode(batch):  # a memory that depends on how many padding columns the batch has
        state = real_encode(batch)
        state["memory"] = state["memory"] + batch.src.size(1) * 1e-2
        return state

    monkeypatch.setattr(model, "encode", leaky_encode)
    with pytest.raises(AssertionError):
        testing.check_padding(model, batch)
    monkeypatch.undo()
    model.unused = torch.nn.Linear(2, 2)
    with pytest.raises(AssertionError, match="unused.weight"):
        testing.check_every_parameter_learns(model, batch)
