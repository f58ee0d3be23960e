"""The conformance suite (:mod:`nmtmodels.testing`) over every built-in model family and its
variants (the cases of :mod:`nmtmodels.tests.family_cases`, built with each family's own test
helpers); a registered family without a case fails here instead of being skipped by the
suite, the compile tests and the CUDA tests alike."""
from __future__ import annotations

import re

import pytest
import torch

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


@pytest.mark.parametrize("family", sorted({case.split("/")[0] for case in FAMILIES}))
def test_family_declares_what_it_reads(family: str) -> None:
    """The workflow plans a family's inputs from its module's FAMILY_NEEDS, read without
    importing it (nmtmodels/family_needs.py): what it reads is what the class reads."""
    testing.check_declaration(family)


def test_the_declaration_check_fails_a_declaration_below_the_class(tmp_path, monkeypatch) -> None:
    """FAMILY_NEEDS written after the class: the class registered with no extra inputs, while
    the workflow, which reads the whole file, would plan lattice spans for it."""
    from nmtmodels.models import base
    from nmtmodels.plugins import import_user_module

    monkeypatch.setattr(base, "_FAMILIES", dict(base._FAMILIES))
    (tmp_path / "late.py").write_text("from nmtmodels.models.transformer import TransformerModel\n"
                                      "from nmtmodels.registry import register_model\n\n\n"
                                      "@register_model('late_declaration')\nclass Late(TransformerModel):\n    pass\n\n\n"
                                      "FAMILY_NEEDS = {'late_declaration': {'inputs': {'starts': -1, 'ends': -1}}}\n")
    import_user_module(str(tmp_path / "late.py"), "user_modules[0]")
    with pytest.raises(AssertionError, match=re.escape(
            "the workflow reads FAMILY_NEEDS['late_declaration']['inputs'] in ")) as failed:
        testing.check_declaration("late_declaration")
    assert "as {'starts': -1, 'ends': -1}, but the class Late reads none" in str(failed.value)


def test_the_suite_fails_a_family_that_breaks_a_rule(monkeypatch) -> None:
    """A check that cannot fail proves nothing: a decoder that reads a padding position, and a
    parameter that no loss reaches, are each caught."""

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


def test_a_time_first_encoder_is_named_with_the_batch_first_contract() -> None:
    """An encoder that returns its memory time-first, (S, B, d) as fairseq's and torch's RNN
    encoders do, got a raw shape error inside the attention; the base model, and the suite's
    check, say which tensor breaks the batch-first contract."""
    model, batch = family_case("transformer")
    encoder = model.encoder
    time_first = type("TimeFirst", (torch.nn.Module,), {"forward": lambda self, src, mask: encoder(src, mask).transpose(0, 1)})
    model.encoder = time_first()
    b, s = batch.src.shape
    for call in (lambda: model(batch), lambda: testing.check_encoder_layout(model, batch)):
        with pytest.raises(ValueError) as error:
            call()
        message = str(error.value)
        assert f"encode() gave memory of shape ({s}, {b}, 32) for {b} sentences of {s} source positions" in message
        assert "looks time-first" in message and "batch-first (dim 0 = batch): memory (B, S, d)" in message
    model.encoder = encoder
    testing.check_encoder_layout(model, batch)


def test_the_template_encoder_has_its_options_when_it_builds_layers(tmp_path) -> None:
    """new-family's encoder sets its options before super().__init__() builds the layers, so a
    build_layer that reads them works; its page names every option, and the page check fails
    on a page that leaves one out."""
    import sys

    from nmtmodels.family_template import write_family
    from nmtmodels.plugins import import_user_module

    write_family("early_options", tmp_path)
    import_user_module(str(tmp_path / "early_options.py"), "test")
    module = sys.modules["nmt_user_early_options"]
    seen = []
    reads = type("Reads", (module.EarlyOptionsEncoder,), {
        "build_layer": lambda self, cfg, index: seen.append(self.options.example_size) or module.EarlyOptionsEncoder.build_layer(
            self, cfg, index)})
    model, _ = family_case("transformer")
    reads(model.cfg, model.encoder.embedding, module.EarlyOptionsOptions(example_size=3))
    assert seen == [3] * model.cfg.encoder_layers
    page = (tmp_path / "early_options.md").read_text()
    testing.check_page_names_options("early_options", page)
    with pytest.raises(AssertionError, match="does not name the option.s. example_size"):
        testing.check_page_names_options("early_options", page.replace("`example_size`", "`size`"))


@pytest.mark.heavy
def test_a_family_from_the_template_passes_the_suite_and_trains_one_update(tmp_path) -> None:
    """``python -m nmtmodels new-family`` writes a family that nmt-train finds through
    NMT_USER_MODULES and trains, and whose own test file runs the conformance suite green."""
    import os
    import subprocess
    import sys

    from nmtmodels.tests.copy_task_fixtures import copy_task, write_lines

    run = lambda args, **kw: subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300,
                                            check=False, **kw)
    made = run(["-m", "nmtmodels", "new-family", "toy_method", "--directory", str(tmp_path / "mine")])
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["test_toy_method.py", "toy_method.md", "toy_method.py"]
    src, tgt = copy_task(40, seed=1)
    write_lines(tmp_path / "train.src", src)
    write_lines(tmp_path / "train.tgt", tgt)
    write_lines(tmp_path / "vocab.txt", sorted({token for line in src + tgt for token in line.split()}))
    (tmp_path / "exp.yaml").write_text("model: {preset: tiny, family: toy_method, options: {example_size: 2}}\n"
                                       "train: {max_tokens: 200, max_updates: 1, num_threads: 1}\n")
    env = {**os.environ, "NMT_USER_MODULES": str(tmp_path / "mine" / "toy_method.py"), "OMP_NUM_THREADS": "1"}
    trained = run(["-m", "nmtmodels", "train", "--config", str(tmp_path / "exp.yaml"), "--train-src", str(tmp_path / "train.src"),
                   "--train-tgt", str(tmp_path / "train.tgt"), "--src-vocab", str(tmp_path / "vocab.txt"), "--tgt-vocab",
                   str(tmp_path / "vocab.txt"), "--out-dir", str(tmp_path / "out"), "--device", "cpu"], env=env)
    assert trained.returncode == 0, trained.stderr
    assert (tmp_path / "out" / "checkpoint_last.pt").is_file()
    suite = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "mine" / "test_toy_method.py")],
                cwd=tmp_path, env={**env, "PYTHONDONTWRITEBYTECODE": "1"})
    assert suite.returncode == 0 and re.search(r"^9 passed", suite.stdout, re.M), suite.stdout + suite.stderr
