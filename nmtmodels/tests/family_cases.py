"""One small model and batch of every model family (and family variant), built with each
family's own test helpers: the cases that the CUDA and the compilation tests run."""
from __future__ import annotations

import torch

from nmtmodels.config import ModelConfig
from nmtmodels.registry import build_model
from nmtmodels.tests import (
    test_char2word,
    test_esc,
    test_graph,
    test_lattice,
    test_reordering,
)

LENGTHS = [6, 3, 5]
LATTICE_ROWS = [[(0, 1), (0, 2), (1, 2), (2, 3)], [(0, 1)], [(0, 2), (2, 3), (0, 1), (1, 3)]]


def family_case(family: str):
    """(model in eval mode, batch) of one family, from that family's own test builders."""
    torch.manual_seed(0)
    if family == "transformer":
        cfg = ModelConfig.from_dict({**test_esc.SMALL, "family": "transformer"})
        return build_model(cfg, 23, 27).eval(), test_graph.random_batch(LENGTHS, 4)
    if family.startswith("graph_transformer"):
        options = {"graph_transformer": {}, "graph_transformer/gate+half_dim": {"fusion": "gate", "half_dim": True},
                   "graph_transformer/self_gate": {"fusion": "self_gate"}}[family]
        return test_graph.model_of(options).eval(), test_graph.random_batch(LENGTHS, 4)
    if family == "lattice_transformer":
        model = test_lattice.model_of(positions="lattice", lsa=True)
        test_lattice.randomise_relations(model)
        return model.eval(), test_lattice.lattice_batch(LATTICE_ROWS)
    if family.startswith("reordering"):
        side = family.split("/")[1]
        return test_reordering.model_of(side).eval(), test_reordering.random_batch(LENGTHS, 4)
    if family in test_esc.FAMILIES:
        return test_esc.model_of(family).eval(), test_esc.random_batch(LENGTHS, [3, 2, 4], 4)
    if family in ("char2char", "char2word"):
        model = test_char2word.model(family).float()
        return model, test_char2word.make_batch(test_char2word.SOURCES, test_char2word.TARGETS)
    raise AssertionError(family)


FAMILIES = ["transformer", "graph_transformer", "graph_transformer/gate+half_dim", "graph_transformer/self_gate",
            "lattice_transformer", "reordering/both", "reordering/encoder", *test_esc.FAMILIES, "char2char", "char2word"]
