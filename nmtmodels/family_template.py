"""The stubs of a new model family: its module, its tests and its docs page, written by
``python -m nmtmodels new-family NAME --directory DIR`` (:mod:`nmtmodels.cli.new_family`).

The module is a working family from the first minute: a Transformer (``TransformerModel``)
with an options dataclass and the encoder hook to change, registered as ``NAME``; the tests
run the conformance suite (:mod:`nmtmodels.testing`) on it; the page lists what a model page
says.  docs/howto.md, "Your own model family", is the checklist that goes with them.
"""
from __future__ import annotations

import keyword
import re
from pathlib import Path

from nmtmodels.config import ConfigError

MODEL = '''"""``{name}``: ONE LINE ON THE METHOD (AUTHORS YEAR, "TITLE").

What the family changes in the Transformer, with the paper's equation numbers; where the paper
is vague, what was chosen and why (the options below and the docs page {name}.md say it too).

Found by every ``nmt-*`` command and workflow job through ``NMT_USER_MODULES={name}.py`` or the
workflow config's ``user_modules: [{name}.py]`` (docs/howto.md, "Your own model family").
"""
from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.models.transformer import TransformerEncoder, TransformerModel
from nmtmodels.modules.embedding import InputEmbedding
from nmtmodels.registry import register_model

# What the workflow and nmt-export read of this family without importing it (a literal only,
# above the class: nmtmodels/family_needs.py): the extra inputs it reads besides the source, as
# {{name: pad value}} (the class's extra_inputs are set from here; batch.extras[name] holds them),
# and the formats nmt-export writes.
FAMILY_NEEDS = {{
    "{name}": {{"inputs": {{}}, "export": [], "not_exported": "ONE LINE: WHY CTRANSLATE2'S TRANSFORMER CANNOT RUN IT"}},
}}


@dataclass
class {cls}Options:
    """``model.options`` of ``{name}`` (enums as ``typing.Literal``)."""

    example_size: int = 0  # an example option; replace it with the method's own

    def validate(self, where: str) -> None:
        if self.example_size < 0:
            raise ConfigError(f"{{where}}.example_size: must be >= 0, got {{self.example_size}}")


class {cls}Encoder(TransformerEncoder):
    """The baseline encoder; the method goes here (or in build_decoder / build_embeddings)."""

    def __init__(self, cfg: ModelConfig, embedding: InputEmbedding, options: {cls}Options) -> None:
        self.options = options  # first: super().__init__() builds the layers (build_layer may read it)
        super().__init__(cfg, embedding)

    def build_layer(self, cfg: ModelConfig, index: int) -> nn.Module:
        """Layer ``index`` of the stack (``self.options`` is set): the baseline's, to change."""
        return super().build_layer(cfg, index)


@register_model("{name}")
class {cls}(TransformerModel):
    """The Transformer baseline with :class:`{cls}Encoder`."""

    options_class = {cls}Options

    @classmethod
    def build_encoder(cls, cfg: ModelConfig, embedding: InputEmbedding) -> nn.Module:
        return {cls}Encoder(cfg, embedding, cls.parse_options(cfg.options))
'''

TEST = '''"""``{name}`` passes the conformance suite of every family; its own equations are checked by
hand below."""
from __future__ import annotations

from pathlib import Path

from nmtmodels.registry import load_user_modules
from nmtmodels.testing import FamilyConformance, check_page_names_options

load_user_modules(str(Path(__file__).with_name("{name}.py")))


class Test{cls}(FamilyConformance):
    family = "{name}"


def test_the_page_names_every_option() -> None:
    check_page_names_options("{name}", Path(__file__).with_name("{name}.md").read_text(encoding="utf-8"))


# Next: a test of each of the method's equations against a plain recomputation from the
# module's weights (see examples/relpos_transformer/test_relpos.py).
'''

PAGE = '''# `{name}`: ONE LINE ON THE METHOD

AUTHORS (YEAR), "TITLE". What the method changes in the Transformer, with the paper's equations.

## Options (`model.options`)

| key | default | what |
|---|---|---|
| `example_size` | `0` | an example option; replace it |

## Choices where the paper is vague, and deviations

- ...

## Tests

`test_{name}.py`: the conformance suite (`nmtmodels.testing`), and ...
'''

NAME = re.compile(r"[a-z][a-z0-9_]*")


def class_name(name: str) -> str:
    """``my_family`` -> ``MyFamily``."""
    return "".join(part.capitalize() for part in name.split("_"))


def write_family(name: str, directory: str | Path) -> list[Path]:
    """Write ``NAME.py``, ``test_NAME.py`` and ``NAME.md`` into ``directory`` (made if missing);
    ConfigError when the name is not a lower-case identifier or a file exists already (nothing
    is written then)."""
    if not NAME.fullmatch(name) or keyword.iskeyword(name):
        raise ConfigError(f"family name {name!r}: use a lower-case Python identifier (letters, digits, _)")
    directory = Path(directory)
    files = {directory / f"{name}.py": MODEL, directory / f"test_{name}.py": TEST, directory / f"{name}.md": PAGE}
    existing = [str(path) for path in files if path.exists()]
    if existing:
        raise ConfigError(f"{existing[0]}: exists already; new-family writes new files only")
    directory.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text.format(name=name, cls=class_name(name)), encoding="utf-8")
    return list(files)
