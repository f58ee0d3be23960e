"""Write docs/configuration.md: every configuration key, generated from its sources.

    python docs/make_config_reference.py            # rewrite docs/configuration.md
    python docs/make_config_reference.py --check    # exit 1 if the committed file is stale

Sources, so that the reference cannot drift from them:

* ``schemas/config.schema.yaml``: the workflow's keys with their types, defaults,
  constraints and ``description`` strings;
* the dataclasses that nmtmodels builds from the ``model``, ``train``/``training`` and
  ``decode``/``decoding`` sections: :class:`nmtmodels.config.ModelConfig` and its presets,
  :class:`nmtmodels.training.config.TrainConfig`, :class:`nmtmodels.decoding.config.DecodeConfig`, and the
  ``options_class`` of every family in :mod:`nmtmodels.registry` (``model.options``);
* the defaults of the ``evaluation`` section (``workflow_scripts.dag.evaluation``).

A dataclass field's text is its comment in the source (on its line, or the comment lines
right above it).  Fields without one get the note in :data:`FIELD_NOTES`, and schema keys
without a ``description`` the note in :data:`SCHEMA_NOTES`; every note must name an
existing field or key (the script fails otherwise), and a comment or description added at
the source wins over the note.

``tests/test_docs.py`` regenerates the text and fails when docs/configuration.md differs.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import inspect
import io
import re
import sys
import textwrap
import tokenize
import types
import typing
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "schemas" / "config.schema.yaml"
OUTPUT = ROOT / "docs" / "configuration.md"
COMMAND = "python docs/make_config_reference.py"

if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

# Placeholders for the names of mapping entries, by the key under which the entries sit.
PLACEHOLDERS = {
    "corpora": "CORPUS", "experiments": "EXPERIMENT", "downloads": "FILE", "splits": "SPLIT",
    "compressors": "COMPRESSOR", "data": "SET", "preprocess": "LANG",
}

# Notes for schema keys without a ``description`` (paths as on the page).
SCHEMA_NOTES: dict[str, str] = {
    "active_corpora": "corpora that `all` prepares (keys of `corpora`)",
    "corpora": "the corpus registry: one entry per data set and language direction",
    "corpora.CORPUS": "one corpus (a language direction; the name is yours)",
    "corpora.CORPUS.description": "free text",
    "corpora.CORPUS.license": "free text",
    "corpora.CORPUS.src": "source language",
    "corpora.CORPUS.tgt": "target language",
    "corpora.CORPUS.downloads": "the files the corpus is built from ([data.md](data.md))",
    "corpora.CORPUS.downloads.FILE": "one file, written to `resources/downloads/CORPUS/FILE`; one of `url` and `local` is required",
    "corpora.CORPUS.downloads.FILE.archive": "the file is an archive; parts read its members as `FILE:member/path`",
    "corpora.CORPUS.splits": "split name: its parts, concatenated in order; `train` is required, `dev` too unless `holdout` makes it",
    "corpora.CORPUS.splits.SPLIT": "the parts of one split",
    "corpora.CORPUS.splits.SPLIT[i]": "one part",
    "corpora.CORPUS.splits.SPLIT[i].format": "how the part is read (formats: `workflow_scripts/data/formats.py`)",
    "corpora.CORPUS.splits.SPLIT[i].files": "language: file reference (`FILE` or `FILE:member/path`)",
    "corpora.CORPUS.splits.SPLIT[i].file": "one file holding both languages (tsv, aspec, json_translation)",
    "corpora.CORPUS.splits.SPLIT[i].num_fields": "fields per line (tsv, aspec)",
    "corpora.CORPUS.splits.SPLIT[i].columns": "language: field index (tsv, aspec)",
    "corpora.CORPUS.splits.SPLIT[i].refs": "language: several reference files, instead of `files` (multi-reference test sets)",
    "corpora.CORPUS.holdout": "splits carved out of another split: `{from, group_by, sizes, seed}` or `{from, every_nth, into}`",
    "corpora.CORPUS.holdout.from": "the split they are carved out of (reading it gives the remainder)",
    "corpora.CORPUS.holdout.group_by": "language whose equal texts stay in one split",
    "corpora.CORPUS.holdout.sizes": "split name: number of pairs",
    "corpora.CORPUS.holdout.seed": "seed of the assignment",
    "corpora.CORPUS.holdout.every_nth": "lines N, 2N, ... go to `into` (fairseq's IWSLT14 recipe)",
    "corpora.CORPUS.holdout.into": "the split that `every_nth` makes",
    "corpora.CORPUS.test_sets": "splits that are decoded and scored",
    "corpora.CORPUS.preprocess": "language: tokenizer settings",
    "corpora.CORPUS.preprocess.LANG": "settings of one language",
    "corpora.CORPUS.preprocess.LANG.tokenizer": (
        "`moses` (sacremoses with `-a`), a word segmenter (zh: jieba, thulac, snownlp; ja: fugashi) or `whitespace`"),
    "corpora.CORPUS.preprocess.LANG.join_pretokenized": (
        "remove all whitespace before segmenting (text that upstream segmented with another tool)"),
    "corpora.CORPUS.preprocess.LANG.lattice_segmenters": "other segmentations written to `seg/SEGMENTER/`, for word lattices",
    "corpora.CORPUS.clean": "cleaning of training pairs as Moses `clean-corpus-n` (bounds inclusive)",
    "corpora.CORPUS.clean.min_tokens": "fewest tokens per side",
    "corpora.CORPUS.clean.max_tokens": "most tokens per side",
    "corpora.CORPUS.clean.max_ratio": "largest length ratio of the two sides",
    "corpora.CORPUS.dedupe": "drop repeated (source, target) training pairs",
    "corpora.CORPUS.lowercase": "lowercase after tokenisation",
    "corpora.CORPUS.bpe": "subword-nmt BPE",
    "corpora.CORPUS.bpe.merges": "merge operations; each size N gives `bpeN/` and the experiment setting `subwords: bpeN`",
    "corpora.CORPUS.bpe.joint": "one BPE model learnt over both languages (needed by `model.share_embeddings`)",
    "corpora.CORPUS.bpe.vocabulary_threshold": "subword-nmt `--vocabulary-threshold`: rarer subwords are split when BPE is applied",
    "characters": "character-level data (char2word paper)",
    "characters.vocab_size": "most frequent characters kept per language",
    "characters.max_src_chars": "training pairs with a longer source are dropped",
    "characters.max_tgt_chars": "training pairs with a longer target are dropped",
    "unicode_form": "Unicode normalisation before tokenisation",
    "experiments": "the systems; each trains one model per listed active corpus",
    "experiments.EXPERIMENT": "one system (the name is yours)",
    "experiments.EXPERIMENT.corpora": "corpora it is trained on (the active ones run)",
    "experiments.EXPERIMENT.subwords": ("`bpeN` (one of the corpus' `bpe.merges`), `spmN` (one of its `sentencepiece.vocab_sizes`) "
                                        "or `char`; for lattice systems the target side"),
    "compression.data.SET": "one compression set",
    "compression.data.SET.url": "upstream URL",
    "compression.data.SET.mirror": "path relative to the data mirror",
    "compression.data.SET.sha256": "digest of the content after gzip decompression",
    "compression.dev_records": "records of `dev_set` used as supervised dev pairs",
    "compression.compressors": "compressors by name; an ESC experiment names one with `compressor:`",
    "compression.compressors.COMPRESSOR": "one compressor (a Transformer trained by `nmt-train` on the source language)",
    "compression.compressors.COMPRESSOR.noise": "noise of an unsupervised (denoising) compressor",
    "compression.compressors.COMPRESSOR.noise.ratio": "words added per word of the sentence (additive sampling noise)",
    "compression.compressors.COMPRESSOR.noise.other_sentences": "other sentences the added words are drawn from",
    "compression.compressors.COMPRESSOR.noise.window": "shuffle noise: 0 a uniform permutation, k no word moves more than k positions",
    "compression.compressors.COMPRESSOR.noise.seed": "seed of the noise",
    "evaluation": "significance tests and analyses (defaults below)",
    "evaluation.significance_metrics": "metrics tested against each baseline",
    "evaluation.tests": "sign test, paired bootstrap resampling, paired approximate randomisation",
    "evaluation.bootstrap_samples": "resamples of the paired bootstrap",
    "evaluation.ar_trials": "trials of approximate randomisation",
    "evaluation.seed": "seed of both resampling tests",
    "evaluation.marker_test": "the test whose p-values give the paper tables' significance markers",
    "evaluation.length_buckets": "upper bounds of the source-length buckets of the length analyses",
    "evaluation.length_metric": "metric of the length and layer analyses",
    "swap_noise.percentages": "percentages of swapped source words",
    "swap_noise.seed": "seed of the swaps",
    "swap_noise.corpora": "corpus: the systems compared on it",
    "swap_noise.corpora.CORPUS": "the systems compared on one corpus",
    "swap_noise.corpora.CORPUS.metric": "metric of the table and plot",
    "train_resources": "one training job (cluster profile; `gpus > 1` runs torchrun in one job)",
    "train_resources.gpus": "GPUs (0: CPU only)",
    "train_resources.cpus": "CPU cores",
    "train_resources.mem_mb": "memory in MB",
    "cluster.account": "sbatch `--account`",
    "cluster.cpu_partition": "partition of CPU jobs (also training and decoding when `train_resources.gpus` is 0)",
    "cluster.gpu_partition": "partition of training and decoding when `train_resources.gpus` > 0",
    "cluster.gpu_model": "request `--gpus=MODEL:N` instead of `--gpus=N`",
}

# Notes for dataclass fields without a comment in their source, by class name.
FIELD_NOTES: dict[str, dict[str, str]] = {
    "TrainConfig": {
        "max_tokens": ("batch budget: rows × the longer side's padded length (tokens, or characters with "
                       "`batch_unit: chars`; the target's alone with `batch_cost: target`)"),
        "max_sentences": "at most this many rows per batch (null: no limit)",
        "valid_max_tokens": "batch budget for validation (null: `max_tokens`)",
        "batch_unit": "what `max_tokens` counts: tokens or characters (char2word paper, section 5.2.1)",
        "batch_cost": ("what a batch's size counts: the longer side's padded length (fairseq's rule) or the padded "
                       "target alone (two systems that read different sources of the same targets then see the same "
                       "target tokens per update; the lattice control)"),
        "too_long": "training pairs longer than the model's maximum positions: skipped (and counted) or an error",
        "update_freq": "batches accumulated into one update",
        "lr": "peak learning rate (inverse square root decay after the warm-up)",
        "warmup_updates": "linear warm-up from `warmup_init_lr` to `lr` over this many updates",
        "warmup_init_lr": "learning rate of the first update; equal to `lr` with a long warm-up: a constant rate",
        "adam_betas": "AdamW betas",
        "adam_eps": "AdamW epsilon",
        "weight_decay": "AdamW decoupled weight decay, on parameters with two or more dimensions only",
        "clip_norm": "gradient-norm clipping (0: off)",
        "label_smoothing": "epsilon of the label-smoothed cross-entropy",
        "max_updates": "stop after this many updates (0: no limit)",
        "max_epochs": "stop after this many epochs (0: no limit)",
        "max_minutes": "wall-clock training budget, summed over resumed runs (0: no limit)",
        "seed": "seed of parameters, batches and dropout",
        "save_interval_updates": "validate and save a numbered checkpoint every N updates (0: at epoch ends only)",
        "validate_interval_updates": "validate every N updates (0: at saves and epoch ends only)",
        "keep_last": "numbered checkpoints kept, newest first (-1: all)",
        "keep_best": "numbered checkpoints kept, best first (besides `checkpoint_best.pt`)",
        "valid_bleu": "dev BLEU at each validation (against every dev reference)",
        "best_metric": "what `checkpoint_best.pt`, `keep_best` and `patience` rank by",
        "patience": "stop after this many validations without improvement (0: off)",
        "amp": "bf16 autocast on CUDA and on a CPU with native bf16, else fp32 with a warning (docs/training.md, Precision)",
        "num_threads": "torch CPU threads (0: torch's default)",
        "log_interval": "log and write `metrics.csv` every N updates",
        "tensorboard": ("also write the `metrics.csv` rows as TensorBoard scalars to `OUT_DIR/tensorboard` (the workflow: "
                        "`results/experiments/EXP/CORPUS/train/tensorboard/`)"),
        "max_nonfinite_updates": "consecutive updates with a NaN/inf loss or gradient that are skipped before training stops as diverged",
        "compile": ("the forward pass through `torch.compile`: Inductor kernel fusion (`default`), plus CUDA graphs "
                    "(`reduce-overhead`), plus autotuning (`max-autotune`); docs/compilation.md"),
        "pad_to_multiple": ("pad source and target lengths of every batch to a multiple of N, so compiled graphs are "
                            "reused (loss unchanged)"),
        "pad_rows_to_multiple": "pad every batch's rows to a multiple of N with label-free copies (loss unchanged)",
    },
    "DecodeConfig": {
        "beam": "beam size (1: greedy)",
        "max_len_b": "b of the length limit above",
        "nbest": "hypotheses returned per sentence (at most `beam`)",
    },
    "ModelConfig": {
        "family": "the model family (below)",
        "d_model": "model (embedding) dimension",
        "heads": "attention heads",
        "encoder_layers": "encoder layers",
        "decoder_layers": "decoder layers",
        "ffn_dim": "inner dimension of the position-wise feed-forward layers",
        "dropout": "dropout on embeddings and sub-layer outputs",
        "attention_dropout": "dropout on attention weights",
        "activation_dropout": "dropout inside the feed-forward layers",
        "activation": "feed-forward activation",
        "normalize_before": "pre-norm (true) or post-norm (false) layers",
        "positional": "position encodings",
        "share_embeddings": ("one embedding table for source and target: reads one joint vocabulary (rule `joint_vocab`) "
                             "and needs `corpora.CORPUS.bpe.joint: true` (`sentencepiece.joint` for `subwords: spmN`)"),
        "tie_output": "tie the output projection to the decoder's input embeddings",
        "max_source_positions": "longest source in tokens (with `</s>`)",
        "max_target_positions": "longest target in tokens (with BOS/EOS)",
        "options": "family options (tables below)",
    },
    "CharRNNOptions": {
        "preset": "`paper` (embeddings 256, GRUs 400, attention 300) or `tiny` (64, 128, 64); the other keys override it",
        "embedding_dim": "character embedding size",
        "encoder_dim": "encoder GRU size per direction",
        "decoder_dim": "decoder GRU size",
        "attention_dim": "hidden size of the additive attention",
        "space_symbol": "the source symbol that ends a word (char2word)",
    },
    "GraphOptions": {
        "fusion": "how the subgraph groups are fused: sum, the weight gate of eq. 6, or the self-gate of eq. 7",
    },
    "ReorderingOptions": {
        "side": "where the reordering embeddings go: Encoder / Decoder / Both REs",
        "control": "`none`: the reordering embeddings; `additional_pe`: the paper's control; `relative_pe`: the Relative PE baseline",
    },
}


# ----------------------------------------------------------------------------- helpers
def cell(text: Any) -> str:
    """A Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def show(value: Any) -> str:
    """A default value as YAML writes it, in backquotes."""
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return '`""`' if value == "" else f"`{value}`"
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, (list, dict)):
        return "`" + yaml.safe_dump(value, default_flow_style=True, width=10**6).strip() + "`"
    return f"`{value}`"


def markdown(text: str) -> str:
    """reST inline literals (``x``) and roles (:class:`x`) as Markdown code."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def table(rows: list[tuple[str, str, str, str]]) -> list[str]:
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    return lines + [f"| `{k}` | {cell(t)} | {cell(d)} | {cell(desc)} |" for k, t, d, desc in rows]


def checked_notes(notes: dict[str, str], known: set[str], where: str) -> None:
    unknown = sorted(set(notes) - known)
    if unknown:
        raise SystemExit(f"docs/make_config_reference.py: {where} names keys that do not exist: {', '.join(unknown)}")


# ----------------------------------------------------------------------------- schema
def resolve(node: dict, definitions: dict) -> tuple[dict, str | None]:
    """The node with its ``$ref`` followed (the schema's refs are one level deep), and the ref's name."""
    ref = node.get("$ref")
    if ref is None:
        return node, None
    name = ref.rsplit("/", 1)[-1]
    return {**definitions[name], **{k: v for k, v in node.items() if k != "$ref"}}, name


def schema_type(original: dict, definitions: dict) -> str:
    node, ref = resolve(original, definitions)
    if "enum" in node:
        return " | ".join(f"`{v}`" for v in node["enum"])
    if "oneOf" in node:
        return " or ".join(schema_type(option, definitions) for option in node["oneOf"])
    kind = node.get("type", "")
    if ref == "lang":
        return "language code"
    if ref == "name":
        return "name"
    if kind == "array":
        items = node.get("items")
        text = f"list of {schema_type(items, definitions)}" if items else "list"
    elif kind == "object":
        text = "mapping"
    else:
        text = kind or "any"
    limits = []
    if "minimum" in node:
        limits.append(f"≥ {node['minimum']}")
    if "exclusiveMinimum" in node:
        limits.append(f"> {node['exclusiveMinimum']}")
    if "maximum" in node:
        limits.append(f"≤ {node['maximum']}")
    if kind == "array" and node.get("minItems"):
        limits.append(f"at least {node['minItems']}")
    if node.get("uniqueItems"):
        limits.append("unique")
    if "pattern" in node:
        limits.append(f"pattern `{node['pattern']}`")
    return text + (f" ({', '.join(limits)})" if limits else "")


class SchemaWalk:
    """Rows (key, type, default, description) of every key below a schema node."""

    def __init__(self, definitions: dict) -> None:
        self.definitions = definitions
        self.paths: set[str] = set()

    def row(self, original: dict, path: str, rows: list, required: bool = False) -> None:
        node, _ = resolve(original, self.definitions)
        self.paths.add(path)
        description = markdown(node.get("description") or SCHEMA_NOTES.get(path, ""))
        if required:
            description = f"**required.** {description}".strip()
        default = show(node["default"]) if "default" in node else ""
        rows.append((path, schema_type(original, self.definitions), default, description))

    def walk(self, original: dict, path: str, rows: list, required: bool = False) -> None:
        node, _ = resolve(original, self.definitions)
        self.row(original, path, rows, required)
        must = set(node.get("required", []))
        for key, child in node.get("properties", {}).items():
            self.walk(child, f"{path}.{key}", rows, key in must)
        entries = node.get("additionalProperties")
        if isinstance(entries, dict):
            inner, _ = resolve(entries, self.definitions)
            name = f"{path}.{PLACEHOLDERS.get(path.rsplit('.', 1)[-1], 'NAME')}"
            if inner.get("properties"):
                self.walk(entries, name, rows)
            elif inner.get("type") == "array" and resolve(inner.get("items", {}), self.definitions)[0].get("properties"):
                self.row(entries, name, rows)
                self.walk(inner["items"], f"{name}[i]", rows)


def workflow_section(schema: dict) -> list[str]:
    walk = SchemaWalk(schema.get("definitions", {}))
    must = set(schema.get("required", []))
    general: list = []
    sections: list[str] = []
    for key, node in schema["properties"].items():
        resolved, _ = resolve(node, walk.definitions)
        if resolved.get("type") != "object" or not (resolved.get("properties") or isinstance(resolved.get("additionalProperties"), dict)):
            walk.walk(node, key, general, key in must)
            continue
        rows: list = []
        walk.walk(node, key, rows, key in must)
        sections += [f"### `{key}`", ""] + table(rows) + [""]
        if key == "evaluation":
            from workflow_scripts.dag.evaluation import EVALUATION_DEFAULTS

            sections += ["Defaults (`workflow_scripts/dag/evaluation.py`): "
                         + ", ".join(f"`{name}` {show(value)}" for name, value in EVALUATION_DEFAULTS.items()) + ".", ""]
    checked_notes(SCHEMA_NOTES, walk.paths, "SCHEMA_NOTES")
    return ["### Top-level settings", ""] + table(general) + [""] + sections


# ----------------------------------------------------------------------------- dataclasses
def type_name(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return " | ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [type_name(a) for a in args if a is not type(None)]
        return " or ".join(parts) + (" or null" if type(None) in args else "")
    if origin in (tuple, list):
        return "list of " + ", ".join(type_name(a) for a in args) if args else "list"
    if origin is dict:
        return "mapping"
    if tp is Any:
        return "any"
    return {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}.get(
        getattr(tp, "__name__", ""), str(tp))


def field_comments(cls: type) -> dict[str, str]:
    """Comment of each field in the class body: on the field's line, or the comment-only
    lines right above it."""
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines()
    comments = {token.start[0]: token.string.lstrip("#").strip()
                for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.type == tokenize.COMMENT}
    found = {}
    for node in ast.parse(source).body[0].body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above, line = [], node.lineno - 1
        while line >= 1 and lines[line - 1].strip().startswith("#"):
            above.insert(0, comments[line])
            line -= 1
        text = above + ([comments[node.lineno]] if node.lineno in comments else [])
        if text:
            found[node.target.id] = " ".join(text)
    return found


def dataclass_table(cls: type) -> list[str]:
    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    notes = FIELD_NOTES.get(cls.__name__, {})
    checked_notes(notes, set(fields), f"FIELD_NOTES[{cls.__name__!r}]")
    rows = []
    for name, field in fields.items():
        if field.default is not dataclasses.MISSING:
            default = show(field.default)
        elif field.default_factory is not dataclasses.MISSING:
            default = show(field.default_factory())
        else:
            default = ""
        rows.append((name, type_name(hints[name]), default, markdown(comments.get(name) or notes.get(name, ""))))
    return table(rows)


def quoted_docstring(obj: Any) -> list[str]:
    text = inspect.getdoc(obj) or ""
    return [f"> {markdown(line)}".rstrip() for line in text.splitlines()] + [""] if text else []


def dataclass_section() -> list[str]:
    from nmtmodels.config import PRESETS, ModelConfig
    from nmtmodels.decoding.config import DecodeConfig
    from nmtmodels.registry import get_model_class, model_families
    from nmtmodels.training.config import TrainConfig

    lines = [
        "## Model, training and decoding settings (nmtmodels)", "",
        "The `model`, `train` and `decode` sections of an experiment or a compressor are read by",
        "nmtmodels' own configuration classes, which reject unknown keys and wrong types naming the",
        "key. The top-level `training` and `decoding` sections are every experiment's defaults; an",
        "experiment's `train` and `decode` override them key by key.", "",
        "### `training`, `experiments.EXPERIMENT.train`, `compression.compressors.COMPRESSOR.train`", "",
        "`nmtmodels.training.config.TrainConfig`:", "",
    ]
    lines += quoted_docstring(TrainConfig) + dataclass_table(TrainConfig) + [""]
    lines += ["### `decoding`, `experiments.EXPERIMENT.decode`, `compression.compressors.COMPRESSOR.decode`", "",
              "`nmtmodels.decoding.config.DecodeConfig`:", ""]
    lines += quoted_docstring(DecodeConfig) + dataclass_table(DecodeConfig) + [""]
    lines += ["### `experiments.EXPERIMENT.model`, `compression.compressors.COMPRESSOR.model`", "",
              "`nmtmodels.config.ModelConfig`. The key `preset` starts from one of the presets below and",
              "every other key overrides the preset's value; fields a preset does not set keep the",
              "defaults of this table.", ""]
    lines += dataclass_table(ModelConfig) + [""]
    keys = list(dict.fromkeys(k for values in PRESETS.values() for k in values))
    lines += ["Presets (`nmtmodels.config.PRESETS`):", "",
              "| preset | " + " | ".join(f"`{k}`" for k in keys) + " |", "|---|" + "---:|" * len(keys)]
    lines += [f"| `{name}` | " + " | ".join(cell(values.get(k, "")) for k in keys) + " |" for name, values in PRESETS.items()]
    lines += ["", "### `model.options`, per family", "",
              "`model.family` names a registered family (`nmtmodels.registry.model_families()`); the family's",
              "`options_class` reads `model.options`. The model pages in [models/](models/) say what each",
              "option does. The families of the package are listed; yours (`user_modules`) are listed by",
              "`nmt-train --list-families`.", ""]
    by_options: dict[Any, list[str]] = {}
    for family in model_families():
        if not get_model_class(family).__module__.startswith("nmtmodels."):
            continue  # a family from outside the package, loaded in this process (user_modules, a test)
        by_options.setdefault(getattr(get_model_class(family), "options_class", None), []).append(family)
    for options, families in sorted(by_options.items(), key=lambda item: item[1][0]):
        lines += ["#### " + ", ".join(f"`{f}`" for f in families), ""]
        if options is None:
            lines += ["No options: `model.options` must be empty.", ""]
            continue
        lines += [f"`{options.__module__}.{options.__qualname__}`:", ""]
        lines += quoted_docstring(options) + dataclass_table(options) + [""]
    return lines


# ----------------------------------------------------------------------------- page
def render() -> str:
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    lines = [
        "# Configuration reference",
        "",
        f"<!-- Generated by `{COMMAND}` from schemas/config.schema.yaml and the",
        "     nmtmodels option dataclasses. Do not edit by hand: tests/test_docs.py checks it. -->",
        "",
        "Every key of `config.yaml` and `configs/*.yaml`. Config files given with `--configfile` are",
        "merged over `config.yaml` key by key (lists are replaced). At start-up the workflow checks",
        "the merged config against `schemas/config.schema.yaml`, then the cross-references, the",
        "`model`/`train`/`decode` sections and the fairness of every comparison",
        "(`workflow_scripts/dag/checks.py`); an error is one line, `error: KEY: ...`, and the run stops",
        "(exit status 1). How the keys fit together: [howto.md](howto.md) (your own corpus and",
        "experiment) and the model pages in [models/](models/).",
        "",
        "Numbers, in the workflow's config and in `nmt-train`'s experiment YAML alike",
        "(`nmtmodels/config.py`): a quoted string is not a number (`lr: \"1e-3 \"` or `lr: \"0.001\"` is an",
        "error naming the key), except an exponent float spelt exactly like `1e-3`, `1e9` or `1.0e9`,",
        "which YAML 1.1 readers (Snakemake's) pass on as a string. A `float` key takes integers; an",
        "`int` key takes integers only (`max_updates: 1e3` is a float: write `1000`). An",
        "`experiments.EXPERIMENT.train` or `.decode` error reads as `nmt-train`'s, after the",
        "experiment's key path: `experiments.EXPERIMENT.train (training).lr: expected float, ...`.",
        "",
        "`CORPUS`, `EXPERIMENT`, `COMPRESSOR`, `FILE`, `SPLIT`, `LANG` and `SET` stand for names you",
        "choose; `[i]` is an entry of a list. An empty default means that the key has none.",
        "",
        "## Workflow keys (schemas/config.schema.yaml)",
        "",
    ]
    lines += workflow_section(schema) + dataclass_section()
    while lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        old = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if old != text:
            diff = difflib.unified_diff(old.splitlines(), text.splitlines(), "committed", "generated", lineterm="", n=1)
            print("\n".join(list(diff)[:60]), file=sys.stderr)
            print(f"{args.output} is out of date; regenerate it with: {COMMAND}", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
