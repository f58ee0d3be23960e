"""configs/full.yaml's trainings, as tests/test_configs.py tests every shipped config, in a
module of its own: its 72 runs make the longest test of the suite, and pytest-xdist
(``--dist loadfile``) can then run it beside the other configs' module instead of after it."""
from __future__ import annotations

from tests.test_configs import FULL, check_shipped_config, pytestmark  # noqa: F401  (the marks apply here too)


def test_every_training_of_the_full_scale_config_trains_and_decodes(tmp_path, monkeypatch, record_property):
    check_shipped_config(FULL, tmp_path, monkeypatch, record_property)
