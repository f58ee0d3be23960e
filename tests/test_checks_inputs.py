"""The fairness check compares what the two systems read: source units, segmenter, vocabulary
limit (workflow_scripts/dag/checks.py check_same_source, dag/sources.py source_reading)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from nmtmodels.plugins import load_user_modules
from tests.snakemake_runs import snakemake
from workflow_scripts.dag import checks, cluster, gpu_parts, runs, sources
from workflow_scripts.dag.seeds import expand_seeds
from workflow_scripts.dag.sources import SourceReading, source_differences, source_reading

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
TATOEBA = "tatoeba_zh_en"


def merged(*files: str) -> dict:
    from snakemake.utils import update_config

    config = copy.deepcopy(CONFIG)
    for name in files:
        update_config(config, yaml.safe_load((ROOT / name).read_text(encoding="utf-8")))
    return config


def bpe_baseline_pair() -> dict:
    """The embedded default before the word-level baseline: the lattice over words against the
    BPE 8k baseline on Tatoeba zh-en."""
    config = copy.deepcopy(CONFIG)
    config["experiments"]["baseline"]["corpora"] = ["multi30k_en_de", TATOEBA]
    config["experiments"]["lattice_lpe_lsa_zh"]["baseline"] = "baseline"
    config["experiments"]["lattice_lpe_lsa_zh"].pop("train")  # the baseline's batch cost: only the source differs
    return config


# ----------------------------------------------------------------------------- what a run reads
def test_what_the_shipped_runs_read():
    # the word lattice: three segmenters' words; every edge type (lattice_vocab_size 0)
    assert source_reading(CONFIG, "lattice_lpe_lsa_zh", TATOEBA) == SourceReading(
        (("words", "jieba"), ("words", "thulac"), ("words", "snownlp")), None)
    assert source_reading(CONFIG, "lattice_1best_zh", TATOEBA) == SourceReading((("words", "jieba"),), None)
    # the BPE baseline: BPE units over the corpus tokenizer's words (jieba on zh, moses on en)
    assert source_reading(CONFIG, "baseline", TATOEBA) == SourceReading((("bpe8000", "jieba"),), None)
    assert source_reading(CONFIG, "baseline", "multi30k_en_de") == SourceReading((("bpe8000", "moses"),), None)
    assert source_reading(CONFIG, "char2char", "multi30k_en_de") == SourceReading((("char", "none"),), 300)
    # 30K source vocabularies of the lattice paper apply to every lattice input, 1-best ones too
    full = merged("configs/full.yaml")
    assert source_reading(full, "lattice_1best_thulac", "nist_zh_en") == SourceReading((("words", "thulac"),), 30000)
    assert source_reading(full, "lattice_lpe_iwslt", "iwslt16_en_de").paths == (
        ("bpe8000", "moses"), ("bpe16000", "moses"), ("bpe32000", "moses"))


LATTICE = SourceReading((("words", "jieba"), ("words", "thulac"), ("words", "snownlp")), None)


@pytest.mark.parametrize(("system", "baseline", "keys"), [
    (LATTICE, SourceReading((("words", "thulac"),), None), []),  # a path of the lattice: its 1-best
    (SourceReading((("words", "thulac"),), None), LATTICE, []),  # the other way round
    (LATTICE, SourceReading((("words", "fugashi"),), None), ["source.segmenter"]),  # words, but of no path
    (LATTICE, SourceReading((("bpe8000", "jieba"),), None), ["source.units"]),
    (LATTICE, SourceReading((("words", "jieba"),), 30000), ["source.vocab_limit"]),
    (LATTICE, SourceReading((("bpe8000", "jieba"),), 30000), ["source.units", "source.vocab_limit"]),
    (SourceReading((("bpe8000", "moses"),), None), SourceReading((("bpe8000", "moses"),), None), []),
    (SourceReading((("char", "none"),), 300), SourceReading((("char", "none"),), 300), []),
    (SourceReading((("spm8000", "moses"),), None), SourceReading((("bpe8000", "moses"),), None), ["source.units"]),
    (SourceReading((("words", "jieba"),), None), SourceReading((("words", "thulac"),), None), ["source.segmenter"]),
    # two lattices: the same paths, in any order
    (LATTICE, SourceReading(tuple(reversed(LATTICE.paths)), None), []),
    (LATTICE, SourceReading(LATTICE.paths[:2], None), ["source.segmenter"]),
])
def test_source_differences(system, baseline, keys):
    assert source_differences(system, baseline) == keys


# ----------------------------------------------------------------------------- the start-up check
def test_the_lattice_against_the_bpe_baseline_is_rejected_in_one_line_naming_both_and_the_difference():
    with pytest.raises(checks.WorkflowConfigError) as error:
        checks.check_fair_comparisons(bpe_baseline_pair())
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("experiments.lattice_lpe_lsa_zh: differs from its baseline experiments.baseline "
                              "on tatoeba_zh_en in source.units (reads a lattice of jieba, thulac, snownlp words vs "
                              "bpe8000 subwords of jieba-tokenised text; vocabulary limit none vs none)")
    assert message.endswith("experiments.lattice_lpe_lsa_zh.differs_from_baseline")


def test_a_declared_source_difference_passes_and_only_that_one():
    config = bpe_baseline_pair()
    config["experiments"]["lattice_lpe_lsa_zh"]["differs_from_baseline"] = {"source.units": "words against BPE"}
    checks.check_fair_comparisons(config)
    config["lattice_vocab_size"] = 30000  # the lattice now keeps 30K types, the BPE baseline every unit
    with pytest.raises(checks.WorkflowConfigError, match=r"on tatoeba_zh_en in source\.vocab_limit \(.*vocabulary limit "
                                                         r"30000 vs none\)"):
        checks.check_fair_comparisons(config)


def test_the_1best_must_come_from_a_segmenter_of_the_lattice():
    config = copy.deepcopy(CONFIG)
    config["experiments"]["lattice_1best_zh"]["lattice"] = ["thulac"]  # a path of the lattice: fine
    checks.check_fair_comparisons(config)
    config["experiments"]["lattice_lpe_lsa_zh"]["lattice"] = ["jieba", "snownlp"]
    with pytest.raises(checks.WorkflowConfigError,
                       match=r"^experiments\.lattice_lpe_lsa_zh: differs from its baseline experiments\.lattice_1best_zh on "
                             r"tatoeba_zh_en in source\.segmenter \(reads a lattice of jieba, snownlp words vs thulac words;"):
        checks.check_fair_comparisons(config)


def test_a_subword_lattice_and_the_bpe_baseline_of_one_of_its_sizes_read_alike():
    config = merged("configs/ablations.yaml")  # lattice_lpe_lsa_en: bpe2000+bpe4000+bpe8000 against bpe8000
    checks.check_fair_comparisons(config)
    config["experiments"]["lattice_lpe_lsa_en"]["lattice"] = ["bpe2000", "bpe4000"]
    with pytest.raises(checks.WorkflowConfigError, match=r"lattice_lpe_lsa_en: .* in source\.units \(reads a lattice of "
                                                         r"bpe2000 subwords of moses-tokenised text, bpe4000"):
        checks.check_fair_comparisons(config)


def test_source_keys_are_compared_settings_of_differs_from_baseline():
    config = copy.deepcopy(CONFIG)
    config["experiments"]["lattice_lpe_lsa_zh"]["differs_from_baseline"] = {key: "r" for key in sources.SOURCE_KEYS}
    checks.check_fair_comparisons(config)
    config["experiments"]["lattice_lpe_lsa_zh"]["differs_from_baseline"] = {"source.unit": "typo"}
    with pytest.raises(checks.WorkflowConfigError, match=r"differs_from_baseline: 'source\.unit' is not a compared setting"):
        checks.check_fair_comparisons(config)


def test_the_embedded_lattice_is_compared_with_its_jieba_path():
    spec = CONFIG["experiments"]["lattice_lpe_lsa_zh"]
    baseline = CONFIG["experiments"][spec["baseline"]]
    assert baseline["family"] == "transformer" and baseline["lattice"] == ["jieba"] and "jieba" in spec["lattice"]
    assert (baseline["paper"], baseline["variant"], baseline["input"]) == ("lattice", "Transformer", "jieba")
    # nothing compares against the BPE baseline on Tatoeba: it does not train there
    assert ("baseline", TATOEBA) not in runs.experiment_runs(CONFIG)


SHIPPED = [[], *[[str(p.relative_to(ROOT))] for p in sorted((ROOT / "configs").glob("*.yaml"))],
           *[[str(p.relative_to(ROOT))] for p in sorted((ROOT / "configs" / "diagnostics").glob("*.yaml"))],
           *[[gpu_parts.BASE_CONFIG, gpu_parts.part_config(part)] for part in gpu_parts.PARTS],
           *[[gpu_parts.BASE_CONFIG, gpu_parts.part_config(part), "configs/gpu_parts/cpu_smoke.yaml"] for part in gpu_parts.PARTS]]


@pytest.mark.parametrize("files", SHIPPED, ids=lambda files: "+".join(Path(f).stem for f in files) or "config")
def test_every_shipped_config_reads_like_with_like(files):
    config = merged(*files)
    expand_seeds(config)
    # the config's families from outside the package, loaded as the Snakefile does
    load_user_modules(cluster.user_modules_variable(config, {}, str(ROOT)).get("NMT_USER_MODULES", ""))
    checks.check_fair_comparisons(config)
    for name, corpus in runs.experiment_runs(config):
        spec = config["experiments"][name]
        for baseline in runs.baselines_of(config, name):
            if corpus in config["experiments"][baseline]["corpora"] and spec.get("lattice"):
                # every compared lattice reads what its baseline reads, or says why not
                declared = set(spec.get("differs_from_baseline") or {})
                assert set(source_differences(source_reading(config, name, corpus),
                                              source_reading(config, baseline, corpus))) <= declared, (name, baseline)


@pytest.mark.heavy
def test_snakemake_stops_at_start_up_on_the_bpe_baseline_pair(tmp_path):
    overlay = {"experiments": {"baseline": {"corpora": ["multi30k_en_de", TATOEBA]},
                               "lattice_lpe_lsa_zh": {"baseline": "baseline", "seeds": [1], "train": {"batch_cost": "longer_side"}}}}
    (tmp_path / "pair.yaml").write_text(yaml.safe_dump(overlay), encoding="utf-8")
    result = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(tmp_path / "pair.yaml"), check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert ("experiments.lattice_lpe_lsa_zh: differs from its baseline experiments.baseline on tatoeba_zh_en in "
            "source.units") in output
    assert len(output.splitlines()) < 30, output
