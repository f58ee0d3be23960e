"""Export the Transformer baseline to CTranslate2 (``nmt-export``), through its model-spec API.

::

    from nmtmodels.decoding.export import export_ctranslate2

    export_ctranslate2("results/experiments/baseline/multi30k_en_de/model", "ct2-model", quantization="int8")

The input is a checkpoint of family ``"transformer"`` or a model package directory
(:mod:`nmtmodels.model_package`; a checkpoint inside one counts as the package). The output is a
CTranslate2 model directory (``model.bin``, ``config.json``, the vocabularies) that
``ctranslate2.Translator`` loads, plus ``export.json`` (what was exported, the length limits
and the decoding options that reproduce our search) and, for a package, the package's
other files (``preprocess.json`` and its subword files, e.g. ``bpe.codes`` and ``bpe.vocab``),
so :func:`nmtmodels.model_package.reader.read_package` on the output directory gives the
raw-text preprocessing (docs/translate.md, "Export to CTranslate2").

How our model maps onto ``ctranslate2.specs.TransformerSpec``:

* ``normalize_before`` is CTranslate2's ``pre_norm`` for both stacks; a pre-norm model's final
  layer norms are the spec's ``encoder.layer_norm`` / ``decoder.layer_norm`` (post-norm models
  have none, as in CTranslate2).
* Positions: CTranslate2 generates its own sinusoids with the sines and cosines in two halves,
  ours interleave them (``PE(p, 2i) = sin``, ``PE(p, 2i+1) = cos``), so the table is written
  out: rows ``0 .. max_positions-1`` of our :class:`~nmtmodels.modules.embedding.SinusoidalPositions`
  (or the learned table), one per side. Row ``p`` is the ``p``-th token's, counted from 0 on
  both sides (the decoder's ``<s>`` has position 0), which is how CTranslate2 indexes the table.
* Token embeddings are scaled by sqrt(d_model) (``scale_embeddings``); the output projection
  has no bias and is the target embedding table when ``tie_output`` (the saved model stores it
  once), and ``share_embeddings`` gives one table and one vocabulary file (``shared_vocabulary``).
* Attention: our query projection and fused key/value projection become CTranslate2's fused
  query/key/value projection (self-attention) or query + fused key/value (encoder attention).
* Activation ``relu`` is ``Activation.RELU``, ``gelu`` (torch's exact erf form) ``Activation.GELU``;
  layer-norm epsilon 1e-5 (torch's default, what every norm of the model uses) is written into
  the config rather than left to CTranslate2's default (also 1e-5 in 4.6).
* Special symbols: the vocabularies are the checkpoint's, in id order (``<pad> <s> </s> <unk>``
  first); ``config.json`` names ``<s>`` as the decoder start token and ``bos_token``, ``</s>``
  as ``eos_token``, ``<unk>`` as ``unk_token``, and sets ``add_source_eos`` because our model
  reads every source ending with ``</s>``; the caller passes BPE tokens without it.

What our search does and CTranslate2 does not by default (``export.json`` lists the options):
we never emit ``<pad>`` or ``<s>`` (``suppress_sequences=[["<pad>"], ["<s>"]]``), and the length
limit is per sentence where CTranslate2's ``max_decoding_length`` is one number per call.
``export.json``'s ``length_limit`` holds the checkpoint's decode settings for it
(:class:`TargetLengthLimit`: ``min(floor(max_len_a * |x| + max_len_b), floor(max_len_ratio * |x|),
max_target_positions - 1)`` target tokens, ``</s>`` not counted, ``|x|`` the source tokens
without ``</s>``, as :func:`nmtmodels.decoding.search._max_lengths` computes it), and
:func:`translate_with_limits` applies it: one ``translate_batch`` call per group of sentences
with the same limit, results in input order. With those two, greedy decoding gives our greedy
search's tokens (nmtmodels/tests/test_export.py). The fixed ``max_decoding_length`` of
``max_target_positions - 1`` (1023) that earlier exports recommended let beam search run on
to hundreds of tokens for a short sentence.

Refused, with a one-line :class:`ExportError`: every family whose module does not declare the
format (``"export": ["ctranslate2"]`` in its ``FAMILY_NEEDS``, :mod:`nmtmodels.family_needs`;
its ``not_exported`` says why), a model whose modules are not exactly the baseline's (a
subclass, or a parameter the mapping does not place), and layer norms with another epsilon.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from nmtmodels.checkpoint import load_checkpoint, load_model_from_checkpoint
from nmtmodels.choices import QUANTIZATIONS
from nmtmodels.config import ConfigError, from_dict
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.scorer import HypothesisScorer
from nmtmodels.family_needs import needs_of
from nmtmodels.files import current_umask, temporary_directory_beside
from nmtmodels.model_package.reader import package_directory
from nmtmodels.model_package.settings import CHECKPOINT_FILE, PREPROCESS_FILE
from nmtmodels.models.transformer import TransformerDecoder, TransformerEncoder, TransformerModel
from nmtmodels.modules.embedding import LearnedPositions, SinusoidalPositions
from nmtmodels.modules.layers import TransformerDecoderLayer, TransformerEncoderLayer
from nmtmodels.symbols import BOS, EOS, PAD, UNK

FAMILY = "transformer"
LAYER_NORM_EPSILON = 1e-5
EXPORT_FILE = "export.json"
# What our search never emits: CTranslate2 needs to be told (suppress_sequences).
SUPPRESSED = [[PAD], [BOS]]

class ExportError(ConfigError):
    """The model cannot be exported as it is (one line: the path and the reason)."""


def export_ctranslate2(checkpoint_or_package: str | os.PathLike, out_dir: str | os.PathLike,
                       quantization: str | None = None, *, force: bool = False) -> Path:
    """Write the CTranslate2 model of a ``transformer`` checkpoint or model package to ``out_dir``.

    ``quantization``: one of :data:`nmtmodels.choices.QUANTIZATIONS` (CTranslate2's weight types), or None for
    float32. An existing non-empty ``out_dir`` is replaced only with ``force``; the directory
    appears whole or not at all. ExportError (a ConfigError) for a model that cannot be
    exported, CheckpointError for an unreadable checkpoint. Returns ``out_dir``."""
    given = Path(checkpoint_or_package)
    checkpoint = given / CHECKPOINT_FILE if given.is_dir() else given
    if given.is_dir() and not checkpoint.is_file():
        raise ExportError(f"{given}: no {CHECKPOINT_FILE} in the directory (is it a model package?)")
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ExportError(f"quantization {quantization!r}: expected one of {', '.join(QUANTIZATIONS)}")
    out_dir = Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())) and not force:
        raise ExportError(f"{out_dir}: exists and is not empty; pass --force (force=True) to replace it")
    state = load_checkpoint(checkpoint, map_location="cpu")
    family = (state.get("model_config") or {}).get("family", FAMILY)
    needs = needs_of(family)
    if not needs.exports("ctranslate2"):
        reason = needs.not_exported or "only the Transformer baseline maps onto CTranslate2's TransformerSpec"
        raise ExportError(f"{checkpoint}: model family {family!r} cannot be exported to CTranslate2: {reason}; "
                          f"{needs.where('export')} does not list 'ctranslate2'")
    ctranslate2 = _import_ctranslate2()
    model, src_vocab, tgt_vocab, state = load_model_from_checkpoint(str(checkpoint), "cpu")
    spec = build_spec(model, src_vocab.tokens, tgt_vocab.tokens, where=str(checkpoint))
    spec.validate()
    spec.optimize(quantization=quantization)
    package = package_directory(checkpoint)
    cfg = model.cfg
    decode = from_dict(DecodeConfig, state.get("decode_config") or {}, where=f"{checkpoint}: decode_config")
    limit = TargetLengthLimit.of(decode, model.max_positions())
    info = {
        "format": 2,  # 2: length_limit; translate_options without a fixed max_decoding_length
        "exported_from": str(checkpoint),
        "family": family,
        "ctranslate2": ctranslate2.__version__,
        "quantization": quantization or "float32",
        "max_source_positions": cfg.max_source_positions,
        "max_target_positions": cfg.max_target_positions,
        "decode": state.get("decode_config") or {},
        "length_limit": limit.to_dict(),
        # Per call; the per-sentence max_decoding_length / min_decoding_length come from length_limit.
        "translate_options": {"suppress_sequences": SUPPRESSED, "max_input_length": limit.max_input_length},
        "preprocessing": PREPROCESS_FILE if package is not None else None,
    }
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_directory_beside(out_dir)
    try:
        spec.save(str(tmp))
        for path in _preprocessing_files(package):
            if path.name == PREPROCESS_FILE:  # without the digests of the checkpoint, which is not exported
                data = json.loads(path.read_text(encoding="utf-8"))
                data.pop("model_sha256", None)
                (tmp / path.name).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            else:
                shutil.copyfile(path, tmp / path.name)
        (tmp / EXPORT_FILE).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes 0700; follow the umask like mkdir
        if out_dir.exists():
            shutil.rmtree(out_dir) if out_dir.is_dir() else out_dir.unlink()
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


# ---------------------------------------------------------------------- the length limit
@dataclass(frozen=True)
class TargetLengthLimit:
    """Our search's target-length limit for one sentence, as ``export.json``'s ``length_limit``
    records it (:attr:`FORMULA`)::

        limit(|x|) = min(floor(max_len_a * |x| + max_len_b), floor(max_len_ratio * |x|), max_target_tokens)

    target tokens, ``</s>`` not counted; ``|x|`` = the source tokens without ``</s>``, at most
    ``max_source_tokens`` (a longer source is cut to that many, as ``nmt-translate --truncate``
    and CTranslate2's ``max_input_length`` do); the ``max_len_ratio`` term only when it is set
    (ESC's ``gamma``), and never below 0. ``max_source_tokens`` / ``max_target_tokens`` are the
    model's ``max_source_positions - 1`` / ``max_target_positions - 1`` (the position tables hold
    ``</s>`` and ``<s>`` too). ``min_len``: no ``</s>`` before that many tokens, unless the limit
    is smaller. The numbers come from :class:`~nmtmodels.decoding.scorer.HypothesisScorer`, the
    code our search runs (:mod:`nmtmodels.decoding.search`, "Length limit of a row")."""

    max_len_a: float
    max_len_b: float
    max_len_ratio: float | None
    min_len: int
    max_source_tokens: int
    max_target_tokens: int

    FORMULA = ("min(floor(max_len_a * |x| + max_len_b), floor(max_len_ratio * |x|) if max_len_ratio is set, "
               "max_target_tokens) target tokens, </s> not counted; |x| = source tokens without </s>, "
               "at most max_source_tokens")

    @classmethod
    def of(cls, decode: DecodeConfig, max_positions: tuple[int, int]) -> TargetLengthLimit:
        """The limit of a search with ``decode`` on a model of ``max_positions()`` (source, target)."""
        return cls(max_len_a=decode.max_len_a, max_len_b=decode.max_len_b, max_len_ratio=decode.max_len_ratio,
                   min_len=int(decode.min_len), max_source_tokens=max_positions[0] - 1,
                   max_target_tokens=max_positions[1] - 1)

    @classmethod
    def from_export(cls, export: Mapping[str, Any] | str | os.PathLike) -> TargetLengthLimit:
        """From an export directory (its ``export.json``), the parsed ``export.json`` or its
        ``length_limit`` block; ExportError for an export without one (format 1)."""
        if not isinstance(export, Mapping):
            path = Path(export)
            export = json.loads((path / EXPORT_FILE if path.is_dir() else path).read_text(encoding="utf-8"))
        block = export.get("length_limit", export)
        try:
            return cls(**{name: block[name] for name in ("max_len_a", "max_len_b", "max_len_ratio", "min_len",
                                                         "max_source_tokens", "max_target_tokens")})
        except (KeyError, TypeError):
            raise ExportError(f"{EXPORT_FILE} has no length_limit block (an export of format 1?): "
                              "export the checkpoint again") from None

    @property
    def max_input_length(self) -> int:
        """CTranslate2's ``max_input_length``: it counts the ``</s>`` it appends (config.json's
        ``add_source_eos``), so the longest source is ``max_source_tokens`` tokens."""
        return self.max_source_tokens + 1

    def to_dict(self) -> dict[str, Any]:
        return {"max_len_a": self.max_len_a, "max_len_b": self.max_len_b, "max_len_ratio": self.max_len_ratio,
                "min_len": self.min_len, "max_source_tokens": self.max_source_tokens,
                "max_target_tokens": self.max_target_tokens, "formula": self.FORMULA}

    def __call__(self, source_lengths: Sequence[int]) -> list[int]:
        """The limits of sources of ``source_lengths`` tokens (without ``</s>``, before the cut)."""
        lengths = torch.tensor([min(int(n), self.max_source_tokens) for n in source_lengths], dtype=torch.long)
        scorer = HypothesisScorer.from_config(DecodeConfig(max_len_a=self.max_len_a, max_len_b=self.max_len_b,
                                                           max_len_ratio=self.max_len_ratio))
        return scorer.max_lengths(lengths).clamp(max=self.max_target_tokens).tolist()


@dataclass(frozen=True)
class _NothingDecoded:
    """The result of a sentence whose limit is 0 tokens: our search writes an empty hypothesis;
    CTranslate2 refuses ``max_decoding_length=0``, so it is not asked (no scores)."""

    hypotheses: list[list[str]]
    scores: tuple[()] = ()
    attention: tuple[()] = ()
    logits: tuple[()] = ()


# translate_batch options that translate_with_limits sets per group of sentences.
_PER_GROUP = ("max_decoding_length", "min_decoding_length", "max_input_length")


def _read_export(export: Mapping[str, Any] | str | os.PathLike) -> Mapping[str, Any]:
    if isinstance(export, Mapping):
        return export
    path = Path(export)
    return json.loads((path / EXPORT_FILE if path.is_dir() else path).read_text(encoding="utf-8"))


def decode_options(export: Mapping[str, Any] | str | os.PathLike) -> dict[str, Any]:
    """The run's decode settings (``export.json``'s ``decode``) as ``translate_batch`` keywords:
    ``beam_size`` (beam), ``length_penalty`` (its alpha: CTranslate2 divides by ``length **
    alpha``, ours by GNMT's ``((5 + length) / 6) ** alpha``, so beam outputs may still differ),
    ``coverage_penalty`` and ``num_hypotheses`` (nbest).  Settings the run left at their
    defaults are the defaults of :class:`~nmtmodels.decoding.config.DecodeConfig`."""
    decode = from_dict(DecodeConfig, dict(_read_export(export).get("decode") or {}), where=f"{EXPORT_FILE}: decode")
    return {"beam_size": decode.beam, "length_penalty": decode.length_penalty,
            "coverage_penalty": decode.coverage_penalty, "num_hypotheses": decode.nbest}


def limit_groups(limits: Sequence[int]) -> list[tuple[int, list[int]]]:
    """``(limit, row indices)`` for every distinct limit, smallest first; the rows in input order."""
    groups: dict[int, list[int]] = {}
    for row, limit in enumerate(limits):
        groups.setdefault(int(limit), []).append(row)
    return sorted(groups.items())


def translate_with_limits(translator: Any, token_lists: Sequence[Sequence[str]],
                          export: Mapping[str, Any] | str | os.PathLike | TargetLengthLimit, **options: Any) -> list[Any]:
    """``translator.translate_batch`` (a ``ctranslate2.Translator`` of an export) with our per-sentence
    length limit: one call per group of sentences with the same limit ``L``
    (:class:`TargetLengthLimit`, from ``export``: the export directory, its parsed ``export.json``
    or the limit itself) with ``max_decoding_length=L``, ``min_decoding_length=min(min_len, L)``
    and ``max_input_length`` the model's; the results come back in the order of ``token_lists``.

    ``options``: other ``translate_batch`` keywords (``beam_size``, ``length_penalty``,
    ``max_batch_size`` and ``batch_type``, which then apply within each group, ...); with
    ``export`` an export directory or its ``export.json``, the run's own beam size, length and
    coverage penalties and n-best (:func:`decode_options`) are the defaults, as ``nmt-translate``
    uses them; ``suppress_sequences`` defaults to :data:`SUPPRESSED`. A sentence whose limit is 0 is not
    given to CTranslate2 and gets an empty hypothesis, as in our search. TypeError for an option
    this function sets per group, and for ``target_prefix`` (one list for all sentences)."""
    clashing = sorted(set(options) & set(_PER_GROUP))
    if clashing:
        raise TypeError(f"translate_with_limits sets {', '.join(clashing)} per group of sentences; do not pass it")
    if "target_prefix" in options:
        raise TypeError("translate_with_limits takes no target_prefix")
    if isinstance(export, TargetLengthLimit):
        limit = export
    else:
        export = _read_export(export)
        limit = TargetLengthLimit.from_export(export)
        options = {**decode_options(export), **options}
    options.setdefault("suppress_sequences", SUPPRESSED)
    token_lists = [list(tokens) for tokens in token_lists]
    results: list[Any] = [None] * len(token_lists)
    for max_tokens, rows in limit_groups(limit([len(tokens) for tokens in token_lists])):
        if max_tokens == 0:
            for row in rows:
                results[row] = _NothingDecoded([[] for _ in range(options.get("num_hypotheses", 1))])
            continue
        found = translator.translate_batch([token_lists[row] for row in rows], max_decoding_length=max_tokens,
                                           min_decoding_length=min(limit.min_len, max_tokens),
                                           max_input_length=limit.max_input_length, **options)
        for row, result in zip(rows, found):
            results[row] = result
    return results


def _preprocessing_files(package: Path | None) -> list[Path]:
    """Every file of a package directory but the checkpoint: ``preprocess.json`` and the
    subword model files it names (BPE codes and vocabulary, or others of later formats)."""
    if package is None:
        return []
    return sorted(path for path in package.iterdir() if path.is_file() and path.name != CHECKPOINT_FILE
                  and not path.name.startswith("."))


def _import_ctranslate2() -> Any:
    try:
        import ctranslate2  # lazy: an optional dependency (the 'export' extra)
    except ImportError:
        raise ExportError("the ctranslate2 package is not installed: python -m pip install 'ctranslate2>=4.0,<5' "
                          "(or the project's 'export' extra)") from None
    return ctranslate2


# ---------------------------------------------------------------------- the mapping
class _Weights:
    """Reads tensors as float32 numpy arrays and records which parameters were placed."""

    def __init__(self, model: nn.Module):
        self.names = {id(p): name for name, p in model.named_parameters(remove_duplicate=False)}
        self.placed: set[str] = set()

    def __call__(self, tensor: torch.Tensor) -> Any:
        if id(tensor) in self.names:
            self.placed.add(self.names[id(tensor)])
        return tensor.detach().to(torch.float32).cpu().numpy().copy()

    def fused(self, tensors: Iterable[torch.Tensor]) -> Any:
        return np.concatenate([self(t) for t in tensors])


def build_spec(model: nn.Module, src_tokens: list[str], tgt_tokens: list[str], where: str = "model") -> Any:
    """The ``ctranslate2.specs.TransformerSpec`` of a ``transformer`` model (eval mode, on any
    device), its vocabularies registered and its config set; ExportError for anything the
    spec cannot express."""
    _import_ctranslate2()  # a clear error when it is missing
    from ctranslate2.specs import common_spec, transformer_spec  # lazy: an optional dependency (the 'export' extra)

    cfg = model.cfg
    parts = [(model, TransformerModel), (model.encoder, TransformerEncoder), (model.decoder, TransformerDecoder),
             *((layer, TransformerEncoderLayer) for layer in model.encoder.layers),
             *((layer, TransformerDecoderLayer) for layer in model.decoder.layers)]
    for module, expected in parts:
        if type(module) is not expected:
            raise ExportError(f"{where}: {type(module).__name__} is not the baseline's {expected.__name__}; "
                              "only the plain Transformer maps onto CTranslate2's TransformerSpec")
    if cfg.options:
        raise ExportError(f"{where}: model.options {sorted(cfg.options)} have no CTranslate2 counterpart")
    activations = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU}
    if cfg.activation not in activations:
        raise ExportError(f"{where}: activation {cfg.activation!r} has no CTranslate2 counterpart (known: relu, gelu)")
    for name, module in model.named_modules():
        if isinstance(module, nn.LayerNorm) and (module.eps != LAYER_NORM_EPSILON or not module.elementwise_affine):
            raise ExportError(f"{where}: layer norm {name} has eps {module.eps} (or no affine parameters); "
                              f"CTranslate2 takes one epsilon per model and this export writes {LAYER_NORM_EPSILON}")

    spec = transformer_spec.TransformerSpec.from_config(
        (cfg.encoder_layers, cfg.decoder_layers), cfg.heads, pre_norm=cfg.normalize_before,
        activation=activations[cfg.activation])
    weights = _Weights(model)

    def linear(target: Any, module: nn.Linear) -> None:
        target.weight = weights(module.weight)
        if module.bias is not None:
            target.bias = weights(module.bias)

    def layer_norm(target: Any, module: nn.LayerNorm) -> None:
        target.gamma, target.beta = weights(module.weight), weights(module.bias)

    def positions(module: nn.Module, rows: int) -> Any:
        if isinstance(module, SinusoidalPositions):
            with torch.no_grad():
                return weights(module(torch.arange(rows)))
        if isinstance(module, LearnedPositions):
            return weights(module.weight)
        raise ExportError(f"{where}: position module {type(module).__name__} has no CTranslate2 counterpart")

    def attention(target: Any, module: nn.Module, self_attention: bool) -> None:
        if module.inner_dim != cfg.d_model:
            raise ExportError(f"{where}: attention of inner size {module.inner_dim} != d_model {cfg.d_model}")
        q, kv, out = module.q_proj, module.kv_proj, module.out_proj
        if self_attention:  # one fused projection: queries, keys, values (our kv_proj is keys then values)
            target.linear[0].weight = weights.fused([q.weight, kv.weight])
            target.linear[0].bias = weights.fused([q.bias, kv.bias])
        else:  # queries, then fused keys and values
            linear(target.linear[0], q)
            linear(target.linear[1], kv)
        linear(target.linear[-1], out)

    def ffn(target: Any, layer: nn.Module) -> None:
        layer_norm(target.layer_norm, layer.ffn_residual.norm)
        linear(target.linear_0, layer.ffn.fc1)
        linear(target.linear_1, layer.ffn.fc2)

    def inputs(target: Any, embedding: nn.Module, rows: int) -> None:
        table = weights(embedding.tokens.weight)
        (target.embeddings[0] if isinstance(target.embeddings, list) else target.embeddings).weight = table
        target.scale_embeddings = True  # our TokenEmbedding multiplies by sqrt(d_model)
        target.position_encodings.encodings = positions(embedding.positions, rows)

    encoder, decoder = model.encoder, model.decoder
    inputs(spec.encoder, encoder.embedding, cfg.max_source_positions)
    for target, layer in zip(spec.encoder.layer, encoder.layers):
        attention(target.self_attention, layer.self_attn, self_attention=True)
        layer_norm(target.self_attention.layer_norm, layer.self_attn_residual.norm)
        ffn(target.ffn, layer)
    inputs(spec.decoder, decoder.embedding, cfg.max_target_positions)
    for target, layer in zip(spec.decoder.layer, decoder.layers):
        attention(target.self_attention, layer.self_attn, self_attention=True)
        layer_norm(target.self_attention.layer_norm, layer.self_attn_residual.norm)
        attention(target.attention, layer.cross_attn, self_attention=False)
        layer_norm(target.attention.layer_norm, layer.cross_attn_residual.norm)
        ffn(target.ffn, layer)
    if cfg.normalize_before:
        layer_norm(spec.encoder.layer_norm, encoder.final_norm)
        layer_norm(spec.decoder.layer_norm, decoder.final_norm)
    linear(spec.decoder.projection, decoder.output_projection)

    unplaced = sorted(set(weights.names.values()) - weights.placed)
    if unplaced:
        raise ExportError(f"{where}: parameters with no place in CTranslate2's TransformerSpec: {', '.join(unplaced[:5])}")
    spec.register_source_vocabulary(list(src_tokens))
    spec.register_target_vocabulary(list(tgt_tokens))
    config = spec.config
    config.bos_token, config.eos_token, config.unk_token = BOS, EOS, UNK
    config.decoder_start_token = BOS
    config.add_source_bos, config.add_source_eos = False, True
    config.layer_norm_epsilon = LAYER_NORM_EPSILON
    return spec
