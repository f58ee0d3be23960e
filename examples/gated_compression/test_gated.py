"""The outside family ``gated_compression`` passes the conformance suite of every family, loaded
the way the commands load it (``NMT_USER_MODULES``); its memory is the formula of its
docstring, recomputed by hand; and the workflow plans its compressed input from the module's
declaration alone."""
from __future__ import annotations

from pathlib import Path

import torch
import yaml

from nmtmodels.config import ModelConfig
from nmtmodels.registry import build_model, load_user_modules
from nmtmodels.testing import SMALL, FamilyConformance
from nmtmodels.tests.test_esc import random_batch

MODULE = Path(__file__).with_name("gated.py")
load_user_modules(str(MODULE))


class TestGatedCompression(FamilyConformance):
    family = "gated_compression"
    options = {"compressed_layers": 1}

    def case(self):
        torch.manual_seed(0)
        cfg = ModelConfig.from_dict({**SMALL, "family": self.family, "options": dict(self.options)})
        return build_model(cfg, 23, 27).eval(), random_batch([6, 3, 5], [3, 2, 4], 4)


@torch.no_grad()
def test_the_memory_is_the_source_plus_the_gated_compressed_context() -> None:
    torch.manual_seed(1)
    cfg = ModelConfig.from_dict({**SMALL, "family": "gated_compression", "dropout": 0.0, "attention_dropout": 0.0})
    model = build_model(cfg, 23, 27).eval()
    batch = random_batch([5, 4], [3, 2], 2)
    c_mask = batch.extras["compressed"].eq(0)
    h_x = model.encoder(batch.src, batch.src_pad_mask)
    h_c = model.compressed_encoder(batch.extras["compressed"], c_mask)
    context, _ = model.fusion.attention(h_x, h_c, key_padding_mask=c_mask)
    gate = torch.sigmoid(torch.cat([h_x, context], -1) @ model.fusion.gate.weight.T + model.fusion.gate.bias)
    torch.testing.assert_close(model.encode(batch)["memory"], h_x + gate * context)
    torch.nn.init.constant_(model.fusion.gate.weight, 0.0)
    torch.nn.init.constant_(model.fusion.gate.bias, -1e4)  # g = 0: the baseline's memory
    torch.testing.assert_close(model.encode(batch)["memory"], h_x)


def test_the_workflow_gives_it_the_compressor_output_from_its_declaration() -> None:
    from workflow_scripts.dag import families, sources

    root = Path(__file__).resolve().parents[2]
    config = yaml.safe_load((root / "config.yaml").read_text(encoding="utf-8"))
    config["experiments"].update(yaml.safe_load(MODULE.with_name("gated.yaml").read_text(encoding="utf-8"))["experiments"])
    config["user_modules"] = [str(MODULE)]  # as the Snakefile passes gated.yaml's, made absolute
    families.check_family_needs(config)
    flags = sources.extra_input_flags(config, "gated_comp", "multi30k_en_de", ("train", "dev"))
    assert flags.startswith("--extra-tokens compressed=results/compression/esc_unsup/multi30k_en_de/compressed/train.txt")
