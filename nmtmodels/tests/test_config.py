"""ModelConfig presets and validation; the model-family registry."""
from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from nmtmodels import registry
from nmtmodels.config import PRESETS, ConfigError, ModelConfig, from_dict, parse_yaml_value
from nmtmodels.models import base
from nmtmodels.models.transformer import TransformerModel


def test_presets_and_overrides() -> None:
    tiny = ModelConfig.from_dict({"preset": "tiny"})
    assert (tiny.encoder_layers, tiny.decoder_layers, tiny.d_model, tiny.heads, tiny.ffn_dim, tiny.dropout) == (
        3, 3, 256, 4, 1024, 0.1,
    )
    small = ModelConfig.from_dict({"preset": "small", "dropout": 0.2, "normalize_before": True})
    assert (small.d_model, small.heads, small.ffn_dim, small.dropout, small.normalize_before) == (512, 4, 1024, 0.2, True)
    big = ModelConfig.from_dict({"preset": "big"})
    assert (big.d_model, big.heads, big.ffn_dim, big.dropout) == (1024, 16, 4096, 0.3)
    assert ModelConfig.from_dict({"preset": "base"}) == ModelConfig()
    assert set(PRESETS) == {"tiny", "small", "base", "big"}


def test_round_trip_through_dict() -> None:
    cfg = ModelConfig.from_dict({"preset": "tiny", "positional": "learned", "tie_output": False})
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize(
    "data, message",
    [
        ({"d_modle": 512}, r"model\.d_modle: unknown key \(did you mean 'd_model'\?\)"),
        ({"d_model": "512"}, r"model\.d_model: expected int, got str"),
        ({"dropout": True}, r"model\.dropout: expected float, got bool"),
        ({"activation": "tanh"}, r"model\.activation: expected one of \['relu', 'gelu'\]"),
        ({"preset": "huge"}, r"model\.preset: unknown preset 'huge' \(known: tiny, small, base, big\)"),
        ({"heads": 7}, r"model\.heads: d_model 512 is not divisible by heads 7"),
        ({"dropout": 1.0}, r"model\.dropout: must be in \[0, 1\), got 1\.0"),
        ({"attention_dropout": -0.1}, r"model\.attention_dropout: must be in \[0, 1\)"),
        ({"encoder_layers": 0}, r"model\.encoder_layers: must be >= 1"),
        ({"d_model": 255, "heads": 5}, r"model\.d_model: sinusoidal positions need an even d_model"),
        ({"family": "rnn"}, r"model\.family: unknown model family 'rnn' \(registered: .*transformer"),
        ({"options": {"window": 3}}, r"model\.options\.window: family 'transformer' takes no options"),
    ],
)
def test_config_errors_name_the_key(data: dict, message: str) -> None:
    """Field errors come from ModelConfig.from_dict, family and options errors from the
    registry's validate_model_config (which build_model calls)."""
    with pytest.raises(ConfigError, match=message):
        registry.validate_model_config(ModelConfig.from_dict(data, where="model"), where="model")


def test_build_model_with_unknown_family_lists_registered_ones() -> None:
    cfg = ModelConfig.from_dict({"preset": "tiny"})
    cfg.family = "nope"
    with pytest.raises(ConfigError, match=r"unknown model family 'nope' \(registered: .*transformer"):
        registry.build_model(cfg, 10, 10)


def test_registry_lists_builtin_families() -> None:
    assert "transformer" in registry.model_families()
    assert registry.get_model_class("transformer") is TransformerModel


@dataclass
class ToyOptions:
    width: int = 2


def test_family_registration_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_FAMILIES", dict(base._FAMILIES))

    @registry.register_model("toy")
    class ToyModel(TransformerModel):
        options_class = ToyOptions

    assert "toy" in registry.model_families()
    cfg = ModelConfig.from_dict({"preset": "tiny", "family": "toy", "options": {"width": 5}})
    model = registry.build_model(cfg, 12, 12)
    assert isinstance(model, ToyModel)
    assert ToyModel.parse_options(cfg.options) == ToyOptions(width=5)
    with pytest.raises(ConfigError, match=r"model\.options\.width: expected int"):
        registry.validate_model_config(ModelConfig.from_dict({"family": "toy", "options": {"width": "5"}}))
    with pytest.raises(ConfigError, match=r"model\.options\.depth: unknown key"):
        registry.validate_model_config(ModelConfig.from_dict({"family": "toy", "options": {"depth": 1}}))
    with pytest.raises(ValueError, match="already registered"):
        registry.register_model("toy")(type("Other", (TransformerModel,), {}))
    with pytest.raises(TypeError, match="lacks classmethod from_config"):
        registry.register_model("bare")(type("Bare", (base.Seq2SeqModel,), {}))
    with pytest.raises(TypeError, match="'Plain' is not a Seq2SeqModel"):
        registry.register_model("plain")(type("Plain", (), {"from_config": classmethod(lambda cls, *a: None)}))
    assert "bare" not in registry.model_families() and "plain" not in registry.model_families()


FAMILY_MODULE = ("from nmtmodels.models.transformer import TransformerModel\n"
                 "from nmtmodels.registry import register_model\n"
                 "@register_model('twice_found')\nclass TwiceFound(TransformerModel):\n    pass\n")


def test_the_same_family_found_twice_is_registered_once(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One module imported under two names (an installed entry point, and the same file in
    user_modules or an .egg-info in the working directory) gives two class objects of one
    class: the second registration is a no-op.  A different class under the taken name (another
    file) is refused, naming both files."""
    import importlib
    import sys

    from nmtmodels.plugins import import_user_module

    monkeypatch.setattr(base, "_FAMILIES", dict(base._FAMILIES))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "twice.py").write_text(FAMILY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path / "mine"))
    monkeypatch.delitem(sys.modules, "twice", raising=False)
    first = importlib.import_module("twice").TwiceFound  # as an entry point imports it
    import_user_module(str(tmp_path / "mine" / "twice.py"), "user_modules[0]")  # as NMT_USER_MODULES does
    second = sys.modules["nmt_user_twice"].TwiceFound
    assert first is not second and registry.get_model_class("twice_found") is first
    assert second.family_name == "twice_found"
    (tmp_path / "other.py").write_text(FAMILY_MODULE.replace("TwiceFound", "Impostor"))
    with pytest.raises(ConfigError) as refused:
        import_user_module(str(tmp_path / "other.py"), "user_modules[1]")
    message = str(refused.value)
    assert "model family 'twice_found' is already registered by TwiceFound" in message
    assert str((tmp_path / "mine" / "twice.py").resolve()) in message and str((tmp_path / "other.py").resolve()) in message
    assert registry.get_model_class("twice_found") is first


DECLARING_MODULE = """import torch  # the workflow reads FAMILY_NEEDS without running this module

from nmtmodels.models.transformer import TransformerModel
from nmtmodels.registry import register_model

FAMILY_NEEDS = {("spans_a", "spans_b"): {"inputs": {"starts": -1, "ends": -1}}, "plain_c": {}}


@register_model("spans_a")
class SpansA(TransformerModel):
    pass


@register_model("spans_b")
class SpansB(SpansA):
    pass


@register_model("plain_c")
class PlainC(SpansA):
    pass
"""


def test_a_family_reads_the_extra_inputs_its_module_declares(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A family's extra inputs are written once, in its module's FAMILY_NEEDS: the class gets
    them (names and pad values) when it registers, and the torch-free planner reads the same
    entry with ast.  One entry serves several families; a subclass whose entry declares none
    reads none."""
    from nmtmodels.family_needs import read_declaration
    from nmtmodels.plugins import import_user_module

    monkeypatch.setattr(base, "_FAMILIES", dict(base._FAMILIES))
    path = tmp_path / "declaring.py"
    path.write_text(DECLARING_MODULE)
    import_user_module(str(path), "user_modules[0]")
    spans = {"starts": -1, "ends": -1}
    assert {name: dict(registry.get_model_class(name).extra_inputs) for name in ("spans_a", "spans_b", "plain_c")} == {
        "spans_a": spans, "spans_b": spans, "plain_c": {}}
    planned = read_declaration(path)
    assert {name: dict(needs.inputs) for name, needs in planned.items()} == {"spans_a": spans, "spans_b": spans, "plain_c": {}}
    assert planned["spans_b"].where("inputs") == f"FAMILY_NEEDS[('spans_a', 'spans_b')]['inputs'] (in {path.resolve()})"


OLD_WAY = ("from nmtmodels.models.transformer import TransformerModel\n"
           "from nmtmodels.registry import register_model\n\n"
           "FAMILY_NEEDS = {{'old_way': {needs}}}\n\n\n"
           "@register_model('old_way')\nclass OldWay(TransformerModel):\n    {body}\n")


@pytest.mark.parametrize("needs, body, message", [
    ("{'inputs': ['compressed']}", "pass",
     "FAMILY_NEEDS['old_way']['inputs']: must be a dict of input name -> pad value (an integer), e.g. {'compressed': 0}"),
    ("{'inputs': ['compressed']}", "extra_inputs = {'compressed': 0}",
     "model family 'old_way': OldWay sets extra_inputs; declare them as FAMILY_NEEDS['old_way']['inputs'] = "
     "{name: pad value} in its module"),
])
def test_extra_inputs_written_the_earlier_way_are_refused_in_one_line(tmp_path, monkeypatch: pytest.MonkeyPatch, needs,
                                                                      body, message) -> None:
    """A family of 0.2 set extra_inputs on its class; FAMILY_NEEDS once listed the input names."""
    from nmtmodels.plugins import import_user_module

    monkeypatch.setattr(base, "_FAMILIES", dict(base._FAMILIES))
    path = tmp_path / "old_way.py"
    path.write_text(OLD_WAY.format(needs=needs, body=body))
    with pytest.raises(ConfigError, match=re.escape(message)) as refused:
        import_user_module(str(path), "user_modules[0]")
    assert "\n" not in str(refused.value) and "old_way" not in registry.model_families()


def test_exponent_floats_read_as_floats(tmp_path) -> None:
    """PyYAML (YAML 1.1) reads 1e-3 as the string '1e-3'; YAML 1.2 and people read a float."""
    from nmtmodels.config import from_dict, load_yaml, parse_yaml_value

    (tmp_path / "c.yaml").write_text("train: {lr: 1e-3, eps: 1.0e9, big: -2E+5, n: 5, name: 1e3x, ok: 0.5}\n")
    assert load_yaml(tmp_path / "c.yaml")["train"] == {"lr": 0.001, "eps": 1e9, "big": -2e5, "n": 5,
                                                      "name": "1e3x", "ok": 0.5}
    assert [parse_yaml_value(t) for t in ("1e9", "3", "true", "abc", "[1e-3, 2]")] == [1e9, 3, True, "abc", [0.001, 2]]

    @dataclass
    class Numbers:
        rate: float = 0.0
        count: int = 0

    assert from_dict(Numbers, {"rate": "1e-3"}).rate == 0.001  # what a YAML 1.1 reader (Snakemake) passes on
    with pytest.raises(ConfigError, match=r"config.rate: expected float, got str \('fast'\)$"):
        from_dict(Numbers, {"rate": "fast"})
    with pytest.raises(ConfigError, match=r"config.count: expected int, got float \(1000.0\); write 1000$"):
        from_dict(Numbers, {"count": "1e3"})


@dataclass
class _Numbers:
    rate: float = 0.0
    count: int = 0


@pytest.mark.parametrize("data, value", [
    ({"rate": 1}, 1.0), ({"rate": 0.5}, 0.5), ({"rate": "1e-3"}, 0.001), ({"rate": "1.0e9"}, 1e9), ({"rate": "-2E+5"}, -2e5),
    ({"count": 7}, 7), ({"count": -1}, -1),
])
def test_numbers_that_are_accepted(data: dict, value) -> None:
    """Ints and floats; a string only when spelt as an exponent float (YAML 1.1 reads 1e-3 as one)."""
    (key, _), = data.items()
    got = getattr(from_dict(_Numbers, data), key)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("data, message", [
    # a string is not a number: quoted, or with spaces (no strip), whatever it spells
    ({"rate": "1e-3 "}, "config.rate: expected float, got str ('1e-3 '); a string is not a number: write 1e-3 without quotes or spaces"),
    ({"rate": " 1e-3"}, "config.rate: expected float, got str (' 1e-3'); a string is not a number: write 1e-3 without quotes or spaces"),
    ({"rate": "0.001"}, "config.rate: expected float, got str ('0.001'); a string is not a number: write 0.001 without quotes or spaces"),
    ({"rate": "fast"}, "config.rate: expected float, got str ('fast')"),
    ({"rate": True}, "config.rate: expected float, got bool (True)"),
    ({"count": "5"}, "config.count: expected int, got str ('5'); a string is not a number: write 5 without quotes or spaces"),
    # an int key takes ints only: 1e3 is a float (in YAML 1.2, and as Snakemake's string)
    ({"count": 1e3}, "config.count: expected int, got float (1000.0); write 1000"),
    ({"count": "1e3"}, "config.count: expected int, got float (1000.0); write 1000"),
    ({"count": 1.5}, "config.count: expected int, got float (1.5)"),
    ({"count": "1e3 "}, "config.count: expected int, got str ('1e3 '); a string is not a number: write 1e3 without quotes or spaces"),
    ({"count": False}, "config.count: expected int, got bool (False)"),
])
def test_numbers_that_are_rejected_name_the_key(data: dict, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        from_dict(_Numbers, data)
    assert str(caught.value) == message


def test_the_policy_reads_a_yaml_file_and_its_yaml_1_1_reading_alike(tmp_path) -> None:
    """nmt-train reads the experiment YAML with exponent floats; Snakemake (YAML 1.1) passes the
    same text on with strings for them: both give the same value or the same error."""
    import yaml

    for text in ("{rate: 1e-3, count: 3}", "{rate: 1.0e9}", "{count: 1e3}", "{rate: '1e-3 '}", "{count: 2.5}"):
        results = []
        for data in (parse_yaml_value(text), yaml.safe_load(text)):
            try:
                results.append(from_dict(_Numbers, data))
            except ConfigError as exc:
                results.append(str(exc))
        assert results[0] == results[1], text


TOY_MODULE = '''
from nmtmodels.models.transformer import TransformerModel
from nmtmodels.registry import register_model


@register_model("{name}")
class Toy(TransformerModel):
    pass
'''


def test_families_from_outside_the_package_are_found_by_the_commands(tmp_path) -> None:
    """A family in a file named by NMT_USER_MODULES, and one behind an entry point of the group
    nmtmodels.families of an installed distribution, are listed by nmt-train --list-families;
    a module that cannot be imported is one line naming it."""
    import os
    import subprocess
    import sys

    (tmp_path / "by_file.py").write_text(TOY_MODULE.format(name="toy_by_file"))
    site = tmp_path / "site"
    (site / "toy_plugin").mkdir(parents=True)
    (site / "toy_plugin" / "__init__.py").write_text(TOY_MODULE.format(name="toy_by_entry_point"))
    info = site / "toy_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[nmtmodels.families]\ntoy = toy_plugin\n")

    def list_families(modules: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "NMT_USER_MODULES": modules,
               "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
        return subprocess.run([sys.executable, "-m", "nmtmodels.cli", "train", "--list-families"], capture_output=True,
                              text=True, env=env, timeout=120, check=False)

    listed = list_families(str(tmp_path / "by_file.py"))
    assert listed.returncode == 0, listed.stderr
    names = [line.split(":")[0] for line in listed.stdout.splitlines() if not line.startswith(" ")]
    assert {"toy_by_file", "toy_by_entry_point", "transformer", "bbfnmt"} <= set(names)
    assert "  options.max_relative_position: int = 16" in listed.stdout  # the reordering family's options
    broken = list_families(str(tmp_path / "missing.py"))
    assert broken.returncode == 2
    assert broken.stderr.strip() == f"nmt-train: error: NMT_USER_MODULES '{tmp_path / 'missing.py'}': no such file"
