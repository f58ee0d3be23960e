"""Which (experiment, corpus) runs `all` plans: active corpora and active experiments."""
from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import pytest
import yaml

from workflow_scripts.dag import checks, corpus_data, paths, runs, sources

CONFIG = yaml.safe_load((Path(__file__).parent.parent / "config.yaml").read_text())
FULL = yaml.safe_load((Path(__file__).parent.parent / "configs/full.yaml").read_text())


def config_with(**keys) -> dict:
    config = copy.deepcopy(CONFIG)
    config["experiments"] = {
        "base": {"family": "transformer", "corpora": ["multi30k_en_de", "tatoeba_zh_en"], "subwords": "bpe8000"},
        "other": {"family": "transformer", "corpora": ["multi30k_en_de"], "subwords": "bpe4000"},
    }
    config.update(keys)
    return config


def test_every_experiment_runs_on_its_active_corpora_without_the_key():
    config = config_with(active_corpora=["multi30k_en_de"])
    assert runs.experiment_runs(config) == [("base", "multi30k_en_de"), ("other", "multi30k_en_de")]


def test_active_experiments_restricts_the_runs_and_their_scores():
    config = config_with(active_experiments=["other"])
    assert runs.experiment_runs(config) == [("other", "multi30k_en_de")]
    assert runs.model_targets(config) == ["results/experiments/other/multi30k_en_de/test_2016_flickr.scores.json"]


def test_unknown_active_experiment_names_the_key():
    with pytest.raises(checks.WorkflowConfigError, match=r"active_experiments\[1\]: unknown experiment 'missing'"):
        checks.check_config(config_with(active_experiments=["base", "missing"]))


OTHER_BPE1000 = {"family": "transformer", "corpora": ["multi30k_en_de"], "subwords": "bpe1000"}


def test_an_active_run_must_have_its_bpe_size_prepared():
    # "other" asks multi30k_en_de for a BPE size it does not prepare.
    with pytest.raises(checks.WorkflowConfigError,
                       match=r"experiments.other.subwords: bpe1000 is not among corpora.multi30k_en_de.bpe.merges"):
        checks.check_experiments(config_with(experiments={**config_with()["experiments"], "other": OTHER_BPE1000}))


def test_an_inactive_experiment_may_name_a_bpe_size_the_corpus_leaves_out():
    checks.check_experiments(config_with(experiments={**config_with()["experiments"], "other": OTHER_BPE1000},
                                     active_experiments=["base"]))


@pytest.mark.parametrize("train", ['lr: "1e-3 "', "lr: '0.001'", "max_updates: 1e3", "max_updates: 2.5", "lr: fast"])
def test_a_bad_number_gets_the_message_of_nmt_train_after_the_experiments_key(tmp_path, capsys, train):
    """One number policy (nmtmodels/config.py): nmt-train reads the experiment YAML with exponent
    floats, Snakemake reads the config as YAML 1.1 (1e3 is the string '1e3'); the workflow's error
    is nmt-train's, the section named as the experiment's key path (train: training + overrides)."""
    from nmtmodels import cli

    section = f"{{max_updates: 5, {train}}}"
    (tmp_path / "exp.yaml").write_text(f"train: {section}\n")
    missing = str(tmp_path / "missing")  # the config is read before any data
    assert cli.train_main(["--config", str(tmp_path / "exp.yaml"), "--train-src", missing, "--train-tgt", missing,
                           "--src-vocab", missing, "--tgt-vocab", missing, "--out-dir", str(tmp_path / "out")]) == 2
    nmt_train = capsys.readouterr().err.strip().removeprefix("nmt-train: error: ")
    assert nmt_train.startswith("train.")
    config = config_with()
    config["experiments"]["base"]["train"] = yaml.safe_load(section)  # as Snakemake reads it (YAML 1.1)
    with pytest.raises(checks.WorkflowConfigError) as caught:
        checks.check_experiments(config)
    assert str(caught.value) == "experiments.base.train (training)." + nmt_train.removeprefix("train.")


def test_an_exponent_float_is_the_same_setting_in_the_workflow_and_in_nmt_train():
    """``lr: 1e-3`` reaches the workflow as the string '1e-3' (YAML 1.1): it is 0.001, as for
    nmt-train, so a system with ``lr: 0.001`` compares equal to it."""
    config = config_with()
    config["experiments"]["base"]["train"] = yaml.safe_load("{lr: 1e-3}")
    config["experiments"]["other"]["train"] = {"lr": 0.001}
    assert config["experiments"]["base"]["train"]["lr"] == "1e-3"
    for name in ("base", "other"):
        runs.check_run_sections(runs.experiment_settings(config, name), f"experiments.{name}")
    assert runs.comparable_settings(config, "base")["train.lr"] == runs.comparable_settings(config, "other")["train.lr"] == 0.001


def test_tokenized_references_are_every_reference_of_the_test_set():
    # NIST MT02 (configs/full.yaml): four English references, mt02.en0 ... mt02.en3.
    tok = "results/data/nist_zh_en/tok/mt02"
    assert corpus_data.tokenized_references(FULL, "nist_zh_en", "mt02") == [
        f"{tok}.zh-en.en", f"{tok}.ref1.zh-en.en", f"{tok}.ref2.zh-en.en", f"{tok}.ref3.zh-en.en"]
    assert len(corpus_data.reference_paths(FULL, "nist_zh_en", "mt02")) == 4
    # A single-reference test set keeps the tokenised target of its preprocessed pair.
    assert corpus_data.tokenized_references(CONFIG, "tatoeba_zh_en", "test") == ["results/data/tatoeba_zh_en/tok/test.zh-en.en"]
    assert corpus_data.tokenized_references(CONFIG, "multi30k_en_de", "test_2016_flickr") == [
        "results/data/multi30k_en_de/tok/test_2016_flickr.en-de.de"]


def test_training_validates_against_every_dev_reference():
    # NIST MT06 as the reordering paper's dev set (configs/full.yaml): four references.
    raw = "results/data/nist_zh_en_mt06dev/raw/dev"
    assert sources.model_inputs(FULL, "baseline_zh_en_mt06dev", "nist_zh_en_mt06dev")["valid_ref"] == [
        f"{raw}.en", f"{raw}.ref1.en", f"{raw}.ref2.en", f"{raw}.ref3.en"]
    assert sources.model_inputs(CONFIG, "baseline", "multi30k_en_de")["valid_ref"] == ["results/data/multi30k_en_de/raw/dev.de"]


# ----------------------------------------------------------------------------- shared embeddings
def shared_config(**model) -> dict:
    config = config_with(active_corpora=["multi30k_en_de"])
    config["experiments"]["base"]["model"] = {"preset": "tiny", "share_embeddings": True, **model}
    return config


def test_a_model_sharing_embeddings_reads_one_joint_vocabulary_on_both_sides():
    inputs = sources.model_inputs(shared_config(), "base", "multi30k_en_de")
    assert inputs["src_vocab"] == inputs["tgt_vocab"] == "results/data/multi30k_en_de/bpe8000/vocab.en-de.joint"
    separate = sources.model_inputs(config_with(active_corpora=["multi30k_en_de"]), "base", "multi30k_en_de")
    assert (separate["src_vocab"], separate["tgt_vocab"]) == (
        "results/data/multi30k_en_de/bpe8000/vocab.en-de.en", "results/data/multi30k_en_de/bpe8000/vocab.en-de.de")


def test_sharing_embeddings_needs_a_joint_bpe_of_the_corpus():
    config = shared_config()
    config["corpora"]["multi30k_en_de"]["bpe"]["joint"] = False
    with pytest.raises(checks.WorkflowConfigError,
                       match=r"experiments\.base\.model\.share_embeddings: .*corpora\.multi30k_en_de\.bpe\.joint is false"):
        checks.check_shared_embeddings(config)
    config = shared_config()
    config["experiments"]["base"]["subwords"] = "char"
    with pytest.raises(checks.WorkflowConfigError, match=r"share_embeddings: .*'char' has one per language"):
        checks.check_shared_embeddings(config)


# ----------------------------------------------------------------------------- fair comparisons
def compared_config(system: dict, baseline: dict) -> dict:
    config = config_with(active_corpora=["multi30k_en_de"])
    config["experiments"] = {
        "base": {"family": "transformer", "corpora": ["multi30k_en_de"], "subwords": "bpe8000", **baseline},
        "system": {"family": "reordering", "corpora": ["multi30k_en_de"], "subwords": "bpe8000", "baseline": "base", **system},
    }
    return config


def test_a_system_may_differ_from_its_baseline_by_family_and_options_only():
    checks.check_fair_comparisons(compared_config(
        {"model": {"preset": "tiny", "options": {"side": "both"}}}, {"model": {"preset": "tiny"}}))
    # A preset and the same values spelled out are the same model.
    checks.check_fair_comparisons(compared_config(
        {"model": {"preset": "tiny"}},
        {"model": {"encoder_layers": 3, "decoder_layers": 3, "d_model": 256, "heads": 4, "ffn_dim": 1024}}))


@pytest.mark.parametrize(("system", "baseline", "key"), [
    ({"model": {"normalize_before": True}}, {}, "model.normalize_before"),
    ({"model": {"share_embeddings": True}}, {}, "model.share_embeddings"),
    ({"train": {"max_tokens": 1024}}, {"train": {"max_tokens": 4096}}, "train.max_tokens"),
    ({"train": {"max_minutes": 1.3}}, {}, "train.max_minutes"),
    ({"train": {"amp": "none"}}, {}, "train.amp"),  # the precision (the default trains in bf16; issue 55)
    ({"decode": {"beam": 6}}, {}, "decode.beam"),
    ({"subwords": "bpe4000"}, {}, "subwords"),
])
def test_an_unfair_pair_is_rejected_naming_both_experiments_and_the_key(system, baseline, key):
    config = compared_config(system, baseline)
    with pytest.raises(checks.WorkflowConfigError) as error:
        checks.check_fair_comparisons(config)
    message = str(error.value)
    assert message.startswith("experiments.system: differs from its baseline experiments.base in " + key + " (")


def test_a_documented_exception_allows_that_key_only():
    config = compared_config({"model": {"encoder_layers": 4, "dropout": 0.3},
                              "differs_from_baseline": {"model.encoder_layers": "layer sweep"}}, {})
    with pytest.raises(checks.WorkflowConfigError, match=r"in model\.dropout \(0\.3 vs 0\.1\)"):
        checks.check_fair_comparisons(config)
    config["experiments"]["system"]["model"].pop("dropout")
    checks.check_fair_comparisons(config)
    config["experiments"]["system"]["differs_from_baseline"]["model.layers"] = "typo"
    with pytest.raises(checks.WorkflowConfigError, match=r"differs_from_baseline: 'model\.layers' is not a compared setting"):
        checks.check_fair_comparisons(config)


def test_a_system_that_all_does_not_train_is_not_checked():
    config = compared_config({"train": {"max_tokens": 1024}}, {})
    config["active_experiments"] = ["base"]
    checks.check_fair_comparisons(config)


@pytest.mark.parametrize("name", ["config.yaml", "configs/ablations.yaml", "configs/ci.yaml", "configs/full.yaml", "configs/gpu.yaml",
                                  "configs/gpu_quality.yaml", "configs/quality.yaml"])
def test_every_shipped_config_compares_like_with_like(name):
    from snakemake.utils import update_config

    from nmtmodels.plugins import load_user_modules
    from workflow_scripts.dag import cluster
    from workflow_scripts.dag.seeds import expand_seeds

    root = Path(__file__).parent.parent
    config = copy.deepcopy(CONFIG)
    if name != "config.yaml":
        update_config(config, yaml.safe_load((root / name).read_text()))
    expand_seeds(config)  # as the Snakefile does, before the checks
    # the config's families from outside the package, as the Snakefile loads them for its checks
    # (before, this case passed only where an earlier test in the process had loaded them)
    load_user_modules(cluster.user_modules_variable(config, {}, str(root)).get("NMT_USER_MODULES", ""))
    checks.check_experiments(config)
    compared = [(e, b) for e, _ in set(runs.experiment_runs(config)) for b in runs.baselines_of(config, e)]
    if name not in ("configs/gpu_quality.yaml", "configs/quality.yaml"):  # those train the baseline only
        assert compared, f"{name}: no compared pair"


# ----------------------------------------------------------------------------- layers and file names
ROOT = Path(__file__).parent.parent
WORKFLOW_SCRIPTS = ROOT / "workflow_scripts"


def imported_modules(path: Path) -> set[str]:
    """Every module a Python file imports (``from X import Y``: X and X.Y), at any depth."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def job_modules() -> set[str]:
    """The modules that rules run as jobs (``if __name__ == "__main__"``), and every module of the
    analyses and evaluation stages: what runs inside a job, not at planning time."""
    jobs = set()
    for path in WORKFLOW_SCRIPTS.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if path.parent.name in ("analyses", "evaluation") or '__name__ == "__main__"' in path.read_text(encoding="utf-8"):
            jobs.add(module)
    return jobs


def test_the_dag_modules_import_no_job_module():
    """The DAG layer plans from the config; the jobs (workflow_scripts/{data,training,evaluation,analyses})
    may import it for file names and settings, never the other way round."""
    jobs = job_modules()
    assert {"workflow_scripts.data.fetch", "workflow_scripts.analyses.swap_noise", "workflow_scripts.evaluation.significance",
            "workflow_scripts.training.experiment_yaml"} <= jobs
    for path in sorted((WORKFLOW_SCRIPTS / "dag").glob("*.py")):
        wrong = sorted(name for name in imported_modules(path)
                       if name in jobs or name.startswith(("workflow_scripts.analyses", "workflow_scripts.evaluation")))
        assert not wrong, f"{path.relative_to(ROOT)} imports job code: {wrong}"


def test_no_old_workflow_path_is_left():
    """The 0.3.0 renames (CHANGELOG.md) leave no stub: the old module, rule file and folder are
    gone, envs/ holds only the rules' conda environments, and the lattice job module exports
    none of nmtmodels.text.lattice's names."""
    import importlib

    import workflow_scripts.data.lattice as lattice_job

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("workflow_scripts.dag.esc")
    assert not (ROOT / "rules" / "compress.smk").exists()
    envs = sorted(str(p.relative_to(ROOT / "envs")) for p in (ROOT / "envs").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert envs == ["data.yaml", "evaluate.yaml", "train.yaml", "workflow.yaml"], envs
    assert (ROOT / "tools" / "gpu" / "run.sh").is_file()
    from nmtmodels.text import lattice

    reexported = {name for name, value in vars(lattice_job).items()
                  if not name.startswith("_") and getattr(value, "__module__", None) == lattice.__name__}
    assert reexported <= {"build_file", "read_lattices", "write_inputs"}, reexported  # what its main() calls


RULE_FILES = sorted((ROOT / "rules").glob("*.smk"))
RULE = re.compile(r"^(?:rule (\w+):|use rule \w+ as (\w+) with:)", re.MULTILINE)


def test_the_rules_take_every_file_name_from_paths():
    """No rule file spells a path template (workflow_scripts/dag/paths.py does): no f-string that
    starts with a field, no string literal of a results, resources or logs path."""
    spelled = re.compile(r"""f["']\{|["'](?:results|resources|logs)/""")
    for path in RULE_FILES:
        found = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if spelled.search(line)]
        assert not found, f"{path.relative_to(ROOT)}: {found}"


def test_every_log_and_benchmark_name_belongs_to_a_rule():
    rules = {a or b for path in RULE_FILES for a, b in RULE.findall(path.read_text(encoding="utf-8"))}
    assert set(paths.JOB_STEMS) <= rules, sorted(set(paths.JOB_STEMS) - rules)
    assert paths.log("translate") == "logs/translate/{experiment}/{corpus}/{test_set}.log"
    assert paths.benchmark("swap_noise_bpe") == (
        "results/benchmarks/apply_bpe/{corpus}/swap_noise/bpe{merges}/{test_set}.swap{percent}.{src}-{tgt}.{lang}.tsv")
