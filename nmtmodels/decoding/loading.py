"""Loading what :class:`~nmtmodels.decoding.translator.Translator` translates with: one
checkpoint or an ensemble of them, the model package beside it (unless ``pretokenized``), the
vocabularies checked against given files; every refusal is one line naming the path
(:meth:`Translator.from_checkpoint <nmtmodels.decoding.translator.Translator.from_checkpoint>`)."""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import torch

from nmtmodels.checkpoint import CheckpointError, load_model_from_checkpoint
from nmtmodels.config import ConfigError
from nmtmodels.decoding.ensemble import Ensemble, check_members
from nmtmodels.devices import resolve_device, set_threads
from nmtmodels.model_package.reader import ModelPackage, package_directory, read_package
from nmtmodels.model_package.settings import CHECKPOINT_FILE
from nmtmodels.vocab import Vocabulary, check_fingerprint


class LoadedModel(NamedTuple):
    """What :func:`load` read: the arguments of ``Translator(...)`` in order."""

    model: torch.nn.Module
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    state: dict[str, Any]
    package: ModelPackage | None
    device: torch.device
    name: str


def raw_text_refusal(family: str, extra_inputs: Sequence[str], made: Sequence[str] = ()) -> str:
    """The one-line reason why a model with extra inputs cannot translate raw text with a package
    that makes only ``made`` of them."""
    missing = sorted(set(extra_inputs) - set(made))
    return (f"model family {family!r} reads the extra inputs {', '.join(sorted(extra_inputs))} and the model package "
            f"makes {', '.join(sorted(made)) or 'none'} of them from raw text (missing: {', '.join(missing)}); rebuild the "
            "package with the workflow's rule model_package, or translate the workflow's encoded source with "
            "--pretokenized --input FILE and the --extra/--extra-tokens files of its translate rule")



def load(path: str | os.PathLike | Sequence[str | os.PathLike], *, device: torch.device | str = "cpu",
         pretokenized: bool = False, threads: int | None = None, src_vocab: str | os.PathLike | None = None,
         tgt_vocab: str | os.PathLike | None = None) -> LoadedModel:
    """:meth:`Translator.from_checkpoint <nmtmodels.decoding.translator.Translator.from_checkpoint>`'s
    reading and checks (its arguments), before a Translator is built."""
    device = resolve_device(device)  # before any file is read: a bad device is one line
    set_threads(threads)
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise ValueError("from_checkpoint needs at least one path")
    checkpoints = []
    for given in map(Path, paths):
        checkpoint = given / CHECKPOINT_FILE if given.is_dir() else given
        if not checkpoint.is_file():
            hint = " (is the directory a model package?)" if given.is_dir() else ""
            raise CheckpointError(f"{checkpoint}: no such checkpoint{hint}")
        checkpoints.append(checkpoint)
    checkpoint = checkpoints[0]
    package = None
    if not pretokenized:  # the package first: it refuses a checkpoint that is not its own before it loads
        directory = package_directory(checkpoint)
        if directory is None:
            raise ConfigError(f"{checkpoint}: no preprocess.json beside the checkpoint, so raw text cannot be "
                              "preprocessed; use the run's model package (results/experiments/EXPERIMENT/CORPUS/model/, "
                              "rule model_package) or pass --pretokenized for input encoded like the training source")
        package = read_package(directory)
        pair = (package.settings.source.lang, package.settings.target.lang)
        for other in checkpoints[1:]:  # an ensemble: the members' language pairs before their vocabularies
            other_directory = package_directory(other)
            if other_directory is None:
                continue
            other_settings = read_package(other_directory).settings
            if (other_settings.source.lang, other_settings.target.lang) != pair:
                raise ConfigError(f"{other}: a model package for {other_settings.source.lang}->{other_settings.target.lang}, "
                                  f"but {checkpoint} translates {pair[0]}->{pair[1]}; an ensemble's members must "
                                  "translate the same language pair")
    loaded = [load_model_from_checkpoint(str(checkpoint), device) for checkpoint in checkpoints]
    model, source_vocab, target_vocab, state = loaded[0]
    if len(loaded) > 1:
        check_members([entry[3] for entry in loaded], [entry[0] for entry in loaded], [str(c) for c in checkpoints])
        model = Ensemble([entry[0] for entry in loaded])
    if package is not None:
        extras = dict(model.extra_inputs)
        if set(extras) - set(package.settings.extra_inputs):
            family = state["model_config"].get("family", "?")
            raise ConfigError(f"{checkpoint}: {raw_text_refusal(family, list(extras), package.settings.extra_inputs)}")
    for side, given in (("src", src_vocab), ("tgt", tgt_vocab)):
        if given is not None:
            vocabulary = Vocabulary.from_file(given)  # a file it cannot read: DataError naming it
            try:
                check_fingerprint(vocabulary, state["vocab"][f"{side}_fingerprint"], side, given)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
    return LoadedModel(model, source_vocab, target_vocab, state, package, device, " ".join(str(c) for c in checkpoints))

