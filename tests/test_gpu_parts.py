"""The GPU reproduction in parts (configs/gpu_parts/, docs/gpu.md "In parts"): each part is
configs/gpu.yaml's systems with a smaller budget, fair and complete; its target plans only with
its config files; the carried segmentation tables; the merge of the parts' summaries and its
verdict rule.

The parts' systems are configs/gpu.yaml's (same model, decoding and family settings; only the
budget keys differ), so ``pytest -m configs`` trains them through configs/gpu.yaml's case in
tests/test_configs.py; the dry runs of the five targets here are marked ``configs`` too."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
import yaml

from tests.snakemake_output import planned_jobs
from tests.snakemake_runs import snakemake
from tests.test_gpu_carry import carry
from workflow_scripts.dag import WorkflowConfigError, checks, gpu_parts, runs, seeds
from workflow_scripts.data import segment
from workflow_scripts.evaluation import claim_files
from workflow_scripts.evaluation import merge_gpu_parts as merging
from workflow_scripts.evaluation.verdicts import evidence, rules

ROOT = Path(__file__).resolve().parents[1]
BUDGET_KEYS = {"max_updates", "max_minutes", "warmup_updates", "validate_interval_updates"}
SMOKE = "configs/gpu_parts/cpu_smoke.yaml"


def merged(*files: str) -> dict:
    from snakemake.utils import update_config

    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    for name in files:
        update_config(config, yaml.safe_load((ROOT / name).read_text(encoding="utf-8")))
    return config


def resolved(config: dict, experiment: str) -> dict:
    settings = runs.experiment_settings(config, experiment)
    spec = config["experiments"][experiment]
    return {**settings, "train": {k: v for k, v in settings["train"].items() if k not in BUDGET_KEYS},
            **{k: spec.get(k) for k in ("corpora", "subwords", "lattice", "compressor", "baseline", "seeds", "paper", "variant")}}


def test_the_part_files_are_the_parts():
    files = {p.stem for p in (ROOT / gpu_parts.PART_DIR).glob("*.yaml")}
    assert files == set(gpu_parts.PARTS) | {"cpu_smoke"}


@pytest.mark.parametrize("part", gpu_parts.PARTS)
def test_a_part_is_gpu_yaml_with_a_smaller_budget_and_fair(part):
    whole = merged(gpu_parts.BASE_CONFIG)
    config = merged(*gpu_parts.part_configfiles(part))
    ran = runs.experiment_runs(config)
    assert ran and {c for _, c in ran} == set(config["active_corpora"])
    for name in {e for e, _ in ran}:
        assert resolved(config, name) == resolved(whole, name), name  # settings but the budget: gpu.yaml's
        budget = runs.experiment_settings(config, name)["train"]
        assert budget["max_updates"] < runs.experiment_settings(whole, name)["train"]["max_updates"]
        # run.sh stops at 8 minutes; the reordering part on the GPU machine needed 0.3 min before
        # its trainings started and 0.5 min after them (docs/results/gpu/parts/reordering/)
        assert 0 < budget["max_minutes"] <= 5.5, "the safety net must leave the call time to decode and summarise"
        for baseline in runs.baselines_of(config, name):
            assert (baseline, ran[0][1]) in ran, f"{name}: its baseline {baseline} is not in the part"
    seeds.expand_seeds(config)
    checks.check_experiments(config)  # fair comparisons, as at start-up
    checks.check_lattices(config)


def test_the_parts_together_are_gpu_yaml():
    whole = runs.experiment_runs(merged(gpu_parts.BASE_CONFIG))
    parts = [run for part in gpu_parts.PARTS for run in runs.experiment_runs(merged(*gpu_parts.part_configfiles(part)))]
    assert set(parts) == set(whole)
    again = [run for run in parts if run[0] != "baseline"]
    assert len(again) == len(set(again)), "a system in two parts"


def test_the_smoke_overlay_keeps_every_part_fair():
    for part in gpu_parts.PARTS:
        config = merged(*gpu_parts.part_configfiles(part), SMOKE)
        seeds.expand_seeds(config)
        checks.check_experiments(config)
        assert all(runs.experiment_settings(config, e)["train"]["max_updates"] == 3 for e, _ in runs.experiment_runs(config))


def test_the_target_needs_the_parts_config_files():
    gpu_parts.check_part("graph", ["config.yaml", "configs/gpu.yaml", "configs/gpu_parts/graph.yaml", SMOKE])
    for given in (["configs/gpu.yaml"], ["configs/gpu_parts/graph.yaml"],
                  ["configs/gpu.yaml", "configs/gpu_parts/esc.yaml"],
                  ["configs/gpu.yaml", "configs/gpu_parts/graph.yaml", "configs/gpu_parts/esc.yaml"]):
        with pytest.raises(WorkflowConfigError, match="gpu_part_graph --configfile configs/gpu.yaml configs/gpu_parts/graph.yaml"):
            gpu_parts.check_part("graph", given)
    assert gpu_parts.part_of(["config.yaml", "configs/gpu.yaml", "configs/gpu_parts/char.yaml"]) == "char"
    assert gpu_parts.part_of(["configs/gpu.yaml"]) is None


@pytest.mark.configs
@pytest.mark.parametrize("part", gpu_parts.PARTS)
def test_each_part_target_plans_its_systems_seeds_and_summary(part, tmp_path):
    config = merged(*gpu_parts.part_configfiles(part))
    seeds.expand_seeds(config)
    files = [str(ROOT / f) for f in gpu_parts.part_configfiles(part)]
    jobs = planned_jobs(snakemake(tmp_path, "-n", f"gpu_part_{part}", "--cores", "16", "--configfile", *files).stdout)
    trainings = len(runs.experiment_runs(config))
    assert (jobs["train"], jobs["translate"], jobs["score"]) == (trainings,) * 3
    assert jobs["significance"] == sum(1 for e, _ in runs.experiment_runs(config) if runs.baselines_of(config, e))
    assert (jobs["results_table"], jobs["results_summary"], jobs[f"gpu_part_{part}"]) == (1, 1, 1)


@pytest.mark.configs
def test_a_part_target_without_its_config_files_stops_naming_them(tmp_path):
    wrong = snakemake(tmp_path, "-n", "gpu_part_char", "--cores", "1", "--configfile", str(ROOT / "configs/gpu.yaml"), check=False)
    assert wrong.returncode != 0
    assert "gpu_part_char --configfile configs/gpu.yaml configs/gpu_parts/char.yaml" in wrong.stdout + wrong.stderr


# ----------------------------------------------------------------------------- carried segmentations
def test_lattice_only_segmenters_travel_as_tables_not_wheels():
    config = carry.merged_config([ROOT / f for f in gpu_parts.part_configfiles("lattice")])
    assert carry.table_segmenters(config) == {"tatoeba_zh_en": ["thulac", "snownlp"]}  # jieba tokenises: its wheel travels
    names = {r.split(">")[0].split("=")[0] for r in carry.requirements(config)}
    assert "jieba" in names and not {"thulac", "snownlp"} & names
    assert carry.segmentation_files(config)[0] == (
        "zh", "thulac", "results/data/tatoeba_zh_en/norm/train.zh-en.zh", "results/data/tatoeba_zh_en/seg/thulac/train.zh-en.zh")
    assert len(carry.segmentation_files(config)) == 6  # two segmenters, three splits
    assert carry.table_segmenters(carry.merged_config([ROOT / f for f in gpu_parts.part_configfiles("graph")])) == {}


def test_the_segment_rule_takes_carried_lines_and_segments_the_others(tmp_path, monkeypatch):
    table = segment.table_path(tmp_path / "tables", "zh", "thulac")
    assert segment.write_table(table, [("我爱你", "我 爱 你"), ("我爱你", "ignored"), ("你好", "你好")]) == 2
    source = tmp_path / "norm.zh"
    source.write_text("你好\n我爱你\n你好\n", encoding="utf-8")
    assert segment.segment_file("zh", "thulac", str(source), str(tmp_path / "out"), table=segment.read_table(table)) == 3
    assert (tmp_path / "out").read_text(encoding="utf-8") == "你好\n我 爱 你\n你好\n"
    # a line not in the table needs the segmenter; without it, an error naming the table and the line
    source.write_text("你好\n他来了\n", encoding="utf-8")

    def not_installed(lang, name):
        raise segment.ConfigError("the zh segmenter thulac needs the Python package 'thulac'")

    monkeypatch.setattr(segment, "line_segmenter", not_installed)
    with pytest.raises(segment.DataError, match=r"1 of its lines are not in TABLE \(first: '他来了'\) and the zh segmenter thulac"):
        segment.segment_file("zh", "thulac", str(source), str(tmp_path / "out2"), table=segment.read_table(table),
                             table_name="TABLE")
    bad = tmp_path / "bad.jsonl.gz"
    with gzip.open(bad, "wt", encoding="utf-8") as f:
        f.write('["only one"]\n')
    with pytest.raises(segment.DataError, match="line 1"):
        segment.read_table(bad)


def test_the_segment_cli_reads_the_table_named_by_the_environment(tmp_path, monkeypatch, capsys):
    segment.write_table(segment.table_path(tmp_path, "zh", "snownlp"), [("你好", "你 好")])
    (tmp_path / "in").write_text("你好\n", encoding="utf-8")
    monkeypatch.setenv(segment.TABLES_ENV, str(tmp_path))
    monkeypatch.setattr(segment, "line_segmenter", lambda lang, name: pytest.fail("the segmenter ran"))
    segment.main(["--lang", "zh", "--segmenter", "snownlp", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")])
    assert (tmp_path / "out").read_text(encoding="utf-8") == "你 好\n"
    assert "1 of them from the carried table" in capsys.readouterr().err


# ----------------------------------------------------------------------------- merging the parts
def part_summary(part: str, system: str, baseline: str, paper: str, metric: str, deltas: list[float], p_value: float) -> dict:
    """A results summary with the fields merge_gpu_parts reads: one system and its baseline over
    three seeds, their comparison over runs (both tests at ``p_value``)."""
    from tests.report_fixtures import run_entry, training_runs

    entry = run_entry(system, baseline, metric, [30 + d for d in deltas], [30.0, 30.25, 29.75], p_ar=p_value, p_sign=p_value)
    return {"generated_utc": "2026-11-25T00:00:00Z",
            "machine": {"platform": "p", "cpu": "c", "logical_cores": 16, "memory_gib": 1.0, "gpus": ["NVIDIA H100"],
                        "python": "3.12", "torch": "2.11", "sacrebleu": "2", "snakemake": "9"},
            "workflow": {"commit": "abc", "config_files": ["configs/gpu.yaml", f"configs/gpu_parts/{part}.yaml"]},
            "marker_test": "sign", "runs": training_runs(system, 3) + training_runs(baseline, 3), "scores": [],
            "comparisons": [], "run_statistics": [entry]}


def write_part(folder: Path, data: dict) -> str:
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(data))
    (folder / "timeline.md").write_text("- wall time: **6.4 min** (from to)\n")
    return str(folder / "summary.json")


@pytest.mark.heavy
def test_merge_writes_claims_verdicts_and_every_part(tmp_path, capsys):
    for part, system, paper, metric, deltas in (
            ("reordering", "reorder_both", "reordering", "bleu", [0.4, 0.6, 0.8]),
            ("graph", "graph_half_dim_gate", "graph", "tokenized_bleu", [-0.4, -0.6, 0.1])):
        write_part(tmp_path / "parts" / part, part_summary(part, system, "baseline", paper, metric, deltas, 0.001))
    out = tmp_path / "summary.md"
    paths = [str(p) for p in sorted((tmp_path / "parts").glob("*/summary.json"))]
    assert merging.main([*paths, "-o", str(out)]) == 0
    assert "2 parts, 11 claims: 1 reversed, 1 inconclusive, 9 not run" in capsys.readouterr().out
    data = json.loads(out.with_suffix(".json").read_text())
    both = next(v for v in data["verdicts"] if v["system"] == "reorder_both")
    # seeds 30.4, 30.6, 30.8 against 30.0, 30.25, 29.75: all three runs better, both tests at 0.001; but its
    # must-beat control (+Additional PEs) is in no part, so the claim stays open (fail closed) and says why
    assert (both["verdict"], both["runs_better"], both["n"], both["baseline_sd"]) == ("inconclusive", 3, 3, 0.25)
    assert "must-beat control reorder_additional_pe not run" in both["qualifiers"]
    assert both["signature"] == "nrefs:1|case:mixed"
    gate = next(v for v in data["verdicts"] if v["system"] == "graph_half_dim_gate")
    # 29.6, 29.4, 30.1 against 30.0, 30.25, 29.75: two of three runs worse
    assert (gate["verdict"], gate["runs_worse"], gate["metric"]) == ("reversed", 2, "tokenized_bleu")
    # one verdict function: the merge's rows are the parts' own claims rows, decided as one family (Holm)
    parts = [json.loads(path.read_text()) for path in sorted((tmp_path / "parts").glob("*/summary.json"))]
    found = [row for part in parts for row in evidence.claim_evidence(part, claim_files.read_claims())]
    merged_rows = sorted(({k: v for k, v in row.items() if k != "part"} for row in data["verdicts"] if "part" in row),
                         key=lambda row: row["system"])
    assert merged_rows == sorted((row.to_json() for row in rules.decide(found)), key=lambda row: row["system"])
    assert {row["holm_family"] for row in data["verdicts"] if "part" in row} == {2}
    # the graph claim's must-beat control is in no part: it could only take a gain away, and the row says so
    assert "must-beat control transformer_carry_gate not run (it cannot change a verdict against the claim)" in gate["qualifiers"]
    assert {p["part"]: p["wall_minutes"] for p in data["parts"]} == {"graph": 6.4, "reordering": 6.4}
    text = out.read_text()
    assert "## Part graph" in text and "### Results summary" in text  # each part's summary, headings two levels down
    assert "Parts not in this result: lattice, esc, char." in text and "**reversed**" in text
    assert f" Verdict: {rules.VERDICT_RULE} **not run** when no part ran the system." in text  # the one statement of the rule
    assert "| reorder_both |" in text and "| 3 of 3 | 0.0010 | 0.0020 | 0.0010 |" in text  # AR, AR after Holm over 2, sign
    # one summary per part
    assert merging.main([paths[0], paths[0], "-o", str(out)]) == 1
    assert "given more than once" in capsys.readouterr().err


def test_every_claim_names_a_system_of_gpu_yaml_with_its_papers_metric():
    whole = merged(gpu_parts.BASE_CONFIG)
    claims = claim_files.read_claims()
    for system, claim in claims.items():
        spec = whole["experiments"][system]
        assert spec.get("baseline") and spec["paper"] == claim["paper"], system
        assert claim["metric"] in {"bleu", "tokenized_bleu"}
    compared = {e for e, _ in runs.experiment_runs(whole) if runs.baselines_of(whole, e)}
    controls = {c["experiment"] for claim in claims.values() for c in claim["controls"]}
    assert compared == set(claims) | controls


def test_the_gpu_controls_are_the_controls_config_at_the_gpu_size():
    """configs/gpu.yaml's controls are the CPU's definitions (the Graph claim's in config.yaml,
    ESC's in configs/controls.yaml) with the preset and the seeds of the systems they control, and
    each runs in the part of its claim's system."""
    whole = merged(gpu_parts.BASE_CONFIG)
    defined = yaml.safe_load((ROOT / "configs/controls.yaml").read_text(encoding="utf-8"))
    default = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))["experiments"]
    defined["experiments"] = {**default, **defined["experiments"]}
    active = {part: set(merged(*gpu_parts.part_configfiles(part))["active_experiments"]) for part in gpu_parts.PARTS}
    for system, claim in claim_files.read_claims().items():
        for control in claim["controls"]:
            name = control["experiment"]
            ours, theirs = whole["experiments"][name], defined["experiments"][name]
            assert ours["model"]["preset"] == whole["experiments"][system]["model"]["preset"] == "small", name
            # the preset and the seeds differ (the GPU plan pins 3 seeds for every system and control)
            assert ours["seeds"] == whole["experiments"][system]["seeds"], name
            assert ({**ours, "model": {**ours["model"], "preset": None}, "seeds": None}
                    == {**theirs, "model": {**theirs["model"], "preset": None}, "seeds": None})
            (part,) = [part for part, systems in active.items() if system in systems]
            assert name in active[part], f"{name} not in part {part}"
    identity = defined["compression"]["compressors"]["esc_identity"]
    assert whole["compression"]["compressors"]["esc_identity"] == identity


def test_the_parts_table_of_the_docs_says_what_the_part_files_hold():
    """docs/gpu.md, "In parts": each part's trainings and budget in updates are its config's."""
    rows = {m.group(1): m.group(2).split(" | ") for m in
            re.finditer(r"^\| `(\w+)` \| (.*) \|$", (ROOT / "docs/gpu.md").read_text(encoding="utf-8"), re.M)}
    for part in gpu_parts.PARTS:
        config = merged(*gpu_parts.part_configfiles(part))
        seeds.expand_seeds(config)
        ran = runs.experiment_runs(config)
        trainings, updates = rows[part][1], rows[part][2]
        assert int(trainings.split()[0]) == len(ran), part
        assert {int(updates.split()[0].replace(",", ""))} == {
            runs.experiment_settings(config, e)["train"]["max_updates"] for e, _ in ran}, part
