"""The papers' analyses beyond their main tables (rules/analyses.smk): which runs each analyses,
the inputs of its jobs, the files `all` asks for, and the checks of their configuration.  The
jobs themselves are in workflow_scripts/analyses/; file names in :mod:`.paths`.

* Attention heat-maps (char2word paper, Figures 6 and 7;
  workflow_scripts/analyses/attention_plots.py): every (experiment, corpus) that `all` trains
  with ``paper: char`` and ``subwords: char``, on the corpus' first test set.
* Graph-Transformer (workflow_scripts/analyses/graph_analyses.py): the high-order gate weight by
  source length (Figure 5) of every active ``paper: graph`` experiment whose
  ``model.options.fusion`` is ``gate`` or ``self_gate``, on its corpus' first test set; the
  score against the number of encoder layers (Figure 6) of the experiments sharing a
  ``layers_plot: SERIES`` label (each point: an experiment's encoder layer count, read from its
  resolved model settings, presets included), one plot per (corpus, test set).
* Swap noise (reordering paper, Figures 3-5; workflow_scripts/analyses/swap_noise.py): each
  system's score on a test set with a percentage of its source words swapped.  Configuration
  (``swap_noise`` in config.yaml, checked by :func:`check_swap_noise`)::

      swap_noise:
        percentages: [0, 10, 20, 30, 40, 50]   # 0: the plain test set's scores
        seed: 1
        corpora:
          multi30k_en_de: {systems: [baseline, reorder_both], metric: bleu, test_set: test_2016_flickr}

  ``test_set`` defaults to the corpus' first test set, ``metric`` to sacreBLEU.  The noisy
  source (:data:`.paths.NOISY_SOURCE`) is BPE-encoded with the corpus' codes, then decoded and
  scored by the rules of rules/decode.smk and rules/evaluate.smk (``use rule``; the decoded
  ``test_set`` is :data:`.paths.NOISY_SET`).
"""
from __future__ import annotations

import shlex
from typing import Any

from nmtmodels.config import ModelConfig
from nmtmodels.text.scoring import metric_spec, registered_metrics
from workflow_scripts.dag import WorkflowConfigError, paths
from workflow_scripts.dag.evaluation import source_file
from workflow_scripts.dag.runs import experiment_runs, experiment_settings
from workflow_scripts.dag.sources import reads_plain_subwords, source_of_test_set

GATED_FUSIONS = ("gate", "self_gate")
SWAP_NOISE_DEFAULTS: dict[str, Any] = {"percentages": [0, 10, 20, 30, 40, 50], "seed": 1, "corpora": {}}


# ----------------------------------------------------------------------------- attention (char2word)
def attention_runs(config: dict[str, Any]) -> list[tuple[str, str]]:
    """(experiment, corpus) runs of the char2word paper's character-level experiments."""
    return [
        (experiment, corpus)
        for experiment, corpus in experiment_runs(config)
        if config["experiments"][experiment].get("paper") == "char"
        and config["experiments"][experiment]["subwords"] == "char"
    ]


def attention_targets(config: dict[str, Any]) -> list[str]:
    """The attention plots that `all` produces (one PNG per run)."""
    return [paths.fill(paths.ATTENTION_PLOT, experiment=experiment, corpus=corpus) for experiment, corpus in attention_runs(config)]


def attention_source(config: dict[str, Any], corpus: str) -> str:
    """The character-level source of the corpus' first test set."""
    spec = config["corpora"][corpus]
    return paths.encoded(corpus=corpus, units=paths.CHAR_UNITS, split=spec["test_sets"][0], **paths.sides(spec), lang=spec["src"])


# ----------------------------------------------------------------------------- Graph-Transformer
def gate_runs(config: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(experiment, corpus, first test set) of the graph experiments with a gate."""
    return [
        (experiment, corpus, config["corpora"][corpus]["test_sets"][0])
        for experiment, corpus in experiment_runs(config)
        if config["experiments"][experiment].get("paper") == "graph"
        and config["experiments"][experiment].get("model", {}).get("options", {}).get("fusion") in GATED_FUSIONS
    ]


def gate_inputs(config: dict[str, Any], experiment: str, corpus: str, test_set: str) -> dict[str, str]:
    """Files of one Figure 5 analysis, by role (for ``unpack`` in the rule)."""
    return {
        "checkpoint": paths.fill(paths.BEST_CHECKPOINT, experiment=experiment, corpus=corpus),
        "source": source_of_test_set(config, experiment, corpus, test_set),
        "tokenized": source_file(config, corpus, test_set),
    }


def encoder_layers(config: dict[str, Any], experiment: str) -> int:
    """The experiment's encoder layer count, from its resolved model settings."""
    return ModelConfig.from_dict(experiment_settings(config, experiment)["model"], f"experiments.{experiment}.model").encoder_layers


def layer_points(config: dict[str, Any], corpus: str, test_set: str) -> list[tuple[str, int, str]]:
    """(series, encoder layers, scores file) of the active ``layers_plot`` experiments on a corpus."""
    return [
        (config["experiments"][e]["layers_plot"], encoder_layers(config, e),
         paths.fill(paths.SCORES, experiment=e, corpus=corpus, test_set=test_set))
        for e, c in experiment_runs(config)
        if c == corpus and "layers_plot" in config["experiments"][e]
    ]


def layer_analyses(config: dict[str, Any]) -> list[tuple[str, str]]:
    """(corpus, test set) with at least one ``layers_plot`` experiment."""
    corpora = dict.fromkeys(c for e, c in experiment_runs(config) if "layers_plot" in config["experiments"][e])
    return [(c, t) for c in corpora for t in config["corpora"][c]["test_sets"]]


def graph_targets(config: dict[str, Any]) -> list[str]:
    """The Figure 5 and Figure 6 outputs that `all` produces."""
    targets = []
    for experiment, corpus, test_set in gate_runs(config):
        targets += [paths.fill(template, experiment=experiment, corpus=corpus, test_set=test_set)
                    for template in (paths.GATE_TABLE, paths.GATE_PLOT)]
    for corpus, test_set in layer_analyses(config):
        targets += [paths.fill(template, corpus=corpus, test_set=test_set) for template in (paths.LAYERS_TABLE, paths.LAYERS_PLOT)]
    return targets


# ----------------------------------------------------------------------------- swap noise (reordering)
def swap_noise_settings(config: dict[str, Any]) -> dict[str, Any]:
    """``swap_noise`` over :data:`SWAP_NOISE_DEFAULTS`."""
    return {**SWAP_NOISE_DEFAULTS, **(config.get("swap_noise") or {})}


def swap_noise_test_set(config: dict[str, Any], corpus: str) -> str:
    return swap_noise_settings(config)["corpora"][corpus].get("test_set") or config["corpora"][corpus]["test_sets"][0]


def check_swap_noise(config: dict[str, Any]) -> None:
    """Cross-references of ``swap_noise`` for the active corpora (WorkflowConfigError naming the key)."""
    section = swap_noise_settings(config)
    percentages = section["percentages"]
    if percentages != sorted(set(percentages)) or any(not 0 <= p <= 100 for p in percentages):
        raise WorkflowConfigError(f"swap_noise.percentages: expected increasing integers in [0, 100], got {percentages}")
    experiments = config["experiments"]
    for corpus, spec in section["corpora"].items():
        where = f"swap_noise.corpora.{corpus}"
        if corpus not in config["corpora"]:
            raise WorkflowConfigError(f"{where}: unknown corpus '{corpus}'")
        try:
            metric_spec(spec.get("metric", "bleu"))
        except ValueError:
            raise WorkflowConfigError(f"{where}.metric: '{spec['metric']}' is not a registered metric "
                                      f"(known: {', '.join(registered_metrics())})") from None
        if corpus not in config["active_corpora"]:
            continue  # e.g. the embedded default's analysis under configs/full.yaml
        test_set = spec.get("test_set")
        if test_set is not None and test_set not in config["corpora"][corpus]["test_sets"]:
            raise WorkflowConfigError(f"{where}.test_set: '{test_set}' is not among corpora.{corpus}.test_sets")
        for i, system in enumerate(spec["systems"]):
            key = f"{where}.systems[{i}]"
            if system not in experiments:
                raise WorkflowConfigError(f"{key}: unknown experiment '{system}'")
            exp = experiments[system]
            if corpus not in exp["corpora"]:
                raise WorkflowConfigError(f"{key}: experiment '{system}' does not run on corpus '{corpus}'")
            if not exp["subwords"].startswith("bpe") or not reads_plain_subwords(config, system, corpus):
                raise WorkflowConfigError(f"{key}: '{system}' must read the plain BPE source (swap noise is applied "
                                          f"to words before BPE), not {exp['subwords']} / family {exp['family']}")


def swap_noise_analyses(config: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(corpus, test set, systems) of every analysis `all` makes: the configured corpora that
    are active, with the configured systems that `all` trains on them (none: no analysis)."""
    runs = set(experiment_runs(config))
    out = []
    for corpus, spec in swap_noise_settings(config)["corpora"].items():
        systems = [s for s in spec["systems"] if (s, corpus) in runs]
        if systems:
            out.append((corpus, swap_noise_test_set(config, corpus), systems))
    return out


def swap_noise_targets(config: dict[str, Any]) -> list[str]:
    """The table, Markdown table and plot of every analysis."""
    return [paths.fill(template, corpus=corpus, test_set=test_set) for corpus, test_set, _ in swap_noise_analyses(config)
            for template in (paths.SWAP_NOISE_TABLE, paths.SWAP_NOISE_MARKDOWN, paths.SWAP_NOISE_PLOT)]


def noisy_experiment_source(config: dict[str, Any], experiment: str, corpus: str, test_set: str, percent: int | str) -> str:
    """The noisy source in the experiment's BPE units (what nmt-translate reads)."""
    spec = config["corpora"][corpus]
    return paths.fill(paths.NOISY_SOURCE, corpus=corpus, units=config["experiments"][experiment]["subwords"], test_set=test_set,
                      percent=percent, **paths.sides(spec), lang=spec["src"])


def noisy_scores(experiment: str, corpus: str, test_set: str, percent: int) -> str:
    """Scores of a system on the test set with ``percent`` swapped words (0: the plain test set's)."""
    decoded = test_set if percent == 0 else paths.noisy_set(test_set, percent)
    return paths.fill(paths.SCORES, experiment=experiment, corpus=corpus, test_set=decoded)


def swap_noise_report_inputs(config: dict[str, Any], corpus: str) -> list[str]:
    """Score files of one analysis, system by system, percentage by percentage."""
    (test_set, systems), = [(t, s) for c, t, s in swap_noise_analyses(config) if c == corpus]
    return [noisy_scores(e, corpus, test_set, p) for e in systems for p in swap_noise_settings(config)["percentages"]]


def swap_noise_report_arguments(config: dict[str, Any], corpus: str) -> str:
    """``--percentages ... --metric M --system NAME FILES...`` of the report command."""
    (test_set, systems), = [(t, s) for c, t, s in swap_noise_analyses(config) if c == corpus]
    section = swap_noise_settings(config)
    percentages = section["percentages"]
    metric = section["corpora"][corpus].get("metric", "bleu")
    parts = [f"--percentages {' '.join(map(str, percentages))}", f"--metric {metric}"]
    for system in systems:
        variant = config["experiments"][system].get("variant") or system
        files = " ".join(noisy_scores(system, corpus, test_set, p) for p in percentages)
        parts.append(f"--system {shlex.quote(variant)} {files}")
    return " ".join(parts)
