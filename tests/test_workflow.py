"""The Snakemake workflow itself: config validation, dry runs, lint, and a real
miniature run of the whole DAG (configs/ci.yaml) on the corpus mirror."""
from __future__ import annotations

import csv
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.snakemake_output import planned_job_details, planned_jobs
from tests.snakemake_runs import MIRROR, ROOT, snakemake

RELPOS = ROOT / "examples/relpos_transformer/relpos.py"  # configs/ci.yaml's family from outside the package


@pytest.mark.heavy
def test_dry_run_full_scale_plans_every_corpus_without_data(tmp_path):
    full = yaml.safe_load((ROOT / "configs/full.yaml").read_text())
    proc = snakemake(tmp_path, "-n", "all", "--cores", "1", "--configfile", str(ROOT / "configs/full.yaml"),
                     "--config", "require_licensed_data=False", extra_env={"NMT_DATA_MIRROR": str(tmp_path / "no-mirror")})
    jobs = planned_jobs(proc.stdout)
    assert jobs["train"] == sum(
        1 for spec in full["experiments"].values() for c in spec["corpora"] if c in full["active_corpora"]
    )
    for corpus in full["active_corpora"]:
        assert f"resources/downloads/{corpus}/" in proc.stdout, corpus
    # one learn_bpe job per corpus and merge size
    assert jobs["learn_bpe"] == sum(len(full["corpora"][c]["bpe"]["merges"]) for c in full["active_corpora"])
    assert not list(tmp_path.glob("results/*")), "a dry run must not create outputs"


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["quality.yaml", "gpu_quality.yaml"])
def test_the_readme_quality_configs_plan_their_documented_target(tmp_path, name):
    """configs/quality.yaml and configs/gpu_quality.yaml pass the config checks and plan the one
    training, decoding and scoring chain that their header command names."""
    config_file = ROOT / "configs" / name
    target = next(word for word in config_file.read_text().split() if word.endswith(".scores.json"))
    proc = snakemake(tmp_path, "-n", target, "--cores", "4", "--configfile", str(config_file),
                     extra_env={"NMT_DATA_MIRROR": str(tmp_path / "no-mirror")})
    jobs = planned_jobs(proc.stdout)
    assert (jobs["train"], jobs["translate"], jobs["score"]) == (1, 1, 1)
    config = yaml.safe_load(config_file.read_text())
    gpus = config.get("train_resources", {}).get("gpus", 0)
    assert f"gpu={gpus}" in proc.stdout if gpus else "gpu=" not in proc.stdout


def flag_values(command: str, flag: str) -> list[str]:
    """The values given to ``flag`` in a shell command (``--flag a b`` and ``--flag a --flag b`` alike)."""
    values: list[str] = []
    words = shlex.split(command.split(" > ")[0])
    for i, word in enumerate(words):
        if word == flag:
            for value in words[i + 1:]:
                if value.startswith("--"):
                    break
                values.append(value)
    return values


@pytest.mark.heavy
def test_dry_run_multi_reference_tokenised_bleu_gets_every_tokenised_reference(tmp_path):
    """NIST zh-en (configs/full.yaml) has four references per test set: scoring a test set,
    the ALL concatenation and a significance test all take four tokenised references, and
    references 1-3 are tokenised by the preprocess rule's settings for reference 0."""
    data, experiments = "results/data/nist_zh_en", "results/experiments"
    score = f"{experiments}/lattice_1best_jieba/nist_zh_en/mt02.scores.json"
    concatenation = f"{experiments}/lattice_1best_jieba/nist_zh_en/concat/ALL.scores.json"
    comparison = f"{experiments}/lattice_lpe_nist/nist_zh_en/significance/mt02.vs.lattice_1best_jieba.json"
    proc = snakemake(tmp_path, "-n", "-p", score, concatenation, comparison, "--cores", "1",
                     "--configfile", str(ROOT / "configs/full.yaml"), "--config", "require_licensed_data=False",
                     extra_env={"NMT_DATA_MIRROR": str(tmp_path / "no-mirror")})
    jobs = planned_job_details(proc.stdout)
    mt02 = [f"{data}/tok/mt02.zh-en.en", f"{data}/tok/mt02.ref1.zh-en.en", f"{data}/tok/mt02.ref2.zh-en.en",
            f"{data}/tok/mt02.ref3.zh-en.en"]
    all_refs = [f"{data}/concat/ALL.tok.en", f"{data}/concat/ALL.tok.ref1.en", f"{data}/concat/ALL.tok.ref2.en",
                f"{data}/concat/ALL.tok.ref3.en"]
    expected = {score: mt02, concatenation: all_refs, comparison: mt02}
    scoring = {flag_values(j["shell"], "--output")[0]: j for j in jobs
               if j["rule"] in ("score", "score_concatenation", "significance")}
    assert set(scoring) == set(expected)
    for output, refs in expected.items():
        assert flag_values(scoring[output]["shell"], "--tok-ref") == refs, output
        assert set(refs) <= set(scoring[output]["input"]), output

    def preprocessing(target: str) -> dict:
        return next(j for j in jobs if j["rule"].startswith("preprocess") and flag_values(j["shell"], "--tgt-out") == [target])

    settings = ("--src-lang", "--tgt-lang", "--src-in", "--spec", "--unicode-form")
    reference_0 = preprocessing(mt02[0])
    for k, target in enumerate(mt02[1:], start=1):
        job = preprocessing(target)
        assert job["rule"] == "preprocess_reference"
        assert flag_values(job["shell"], "--tgt-in") == [f"{data}/raw/mt02.ref{k}.en"]
        assert [flag_values(job["shell"], s) for s in settings] == [flag_values(reference_0["shell"], s) for s in settings]
    members = ["mt02", "mt03", "mt04", "mt06", "mt08"]
    concatenated = next(j for j in jobs if flag_values(j["shell"], "--output") == [f"{data}/concat/ALL.tok.ref2.en"])
    assert concatenated["input"] == [f"{data}/tok/{m}.ref2.zh-en.en" for m in members]


@pytest.mark.heavy
def test_lint_has_no_findings(tmp_path):
    proc = snakemake(tmp_path, "--lint", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@pytest.mark.heavy
@pytest.mark.parametrize(
    "override, message",
    [
        ("active_corpora=[no_such_corpus]", "active_corpora[0]: unknown corpus 'no_such_corpus'"),
        ("unicode_form=NFX", "unicode_form"),
        ("typo_key=1", "typo_key"),
    ],
)
def test_bad_config_is_rejected_naming_the_key(tmp_path, override, message):
    proc = snakemake(tmp_path, "-n", "all", "--cores", "1", "--config", override, check=False)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr


@pytest.mark.heavy
def test_bad_model_key_in_an_experiment_names_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiments:\n  baseline:\n    model: {preset: tiny, d_modle: 64}\n")
    proc = snakemake(tmp_path, "-n", "all", "--cores", "1", "--configfile", str(bad), check=False)
    assert proc.returncode != 0
    assert "experiments.baseline.model.d_modle: unknown key (did you mean 'd_model'?)" in proc.stdout + proc.stderr


QUICKSTART = re.compile(r"`snakemake --cores 2 (\S+) && nmt-translate --checkpoint (\S+) <<< \"A man is riding a bike\.\"`")


@pytest.mark.heavy
def test_the_readme_quickstart_trains_one_baseline_and_packages_it(tmp_path):
    """README's quickstart (docs/translate.md, "Quickstart"): its target plans one training,
    the baseline's first seed, and that run's package, nothing else of `all` (a dry run with
    configs/ci.yaml: the same DAG, smaller); nmt-translate reads the package it makes."""
    (target, package), = QUICKSTART.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert package == str(Path(target).parent) and (ROOT / "docs/translate.md").read_text().count(target) >= 2
    proc = snakemake(tmp_path, "-n", target, "--cores", "1", "--configfile", str(ROOT / "configs/ci.yaml"))
    jobs = planned_jobs(proc.stdout)
    assert (jobs["train"], jobs["model_package"]) == (1, 1)
    assert set(jobs) <= {"fetch", "extract", "preprocess", "learn_bpe", "apply_bpe", "experiment_config", "train", "model_package"}
    trainings = [job for job in planned_job_details(proc.stdout) if job["rule"] == "train"]
    assert trainings[0]["output"][0] == "results/experiments/baseline/multi30k_en_de/train/checkpoint_best.pt"


@pytest.fixture(scope="module")
def miniature(tmp_path_factory):
    """Run the whole miniature workflow once (data half, training, decoding, scoring)."""
    if not (MIRROR / "multi30k").is_dir():
        pytest.skip(f"corpus mirror not found at {MIRROR} (set NMT_DATA_MIRROR)")
    workdir = tmp_path_factory.mktemp("miniature")
    proc = snakemake(workdir, "all", "--cores", "2", "--configfile", str(ROOT / "configs/ci.yaml"))
    (workdir / ".snakemake/miniature.stderr").write_text(proc.stderr, encoding="utf-8")  # the run's progress lines
    return workdir


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.slow
def test_miniature_produces_aligned_data_for_every_pair(miniature):
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    for corpus in config["active_corpora"]:
        spec = config["corpora"][corpus]
        pair = f"{spec['src']}-{spec['tgt']}"
        data = miniature / "results/data" / corpus
        for split in ["train", "dev", *spec["test_sets"]]:
            for stage in ("tok", "norm", "bpe600", "char"):
                src, tgt = (read(data / stage / f"{split}.{pair}.{lang}") for lang in (spec["src"], spec["tgt"]))
                assert len(src) == len(tgt) > 0, (corpus, stage, split)
            if split != "train":  # dev/test keep every line
                assert len(read(data / "tok" / f"{split}.{pair}.{spec['src']}")) == len(read(data / "raw" / f"{split}.{spec['src']}"))
        assert len(read(data / "tok" / f"train.{pair}.{spec['src']}")) <= 2000  # max_train_pairs
        for segmenter in spec["preprocess"][spec["src"]].get("lattice_segmenters", []):
            seg = read(data / "seg" / segmenter / f"train.{pair}.{spec['src']}")
            norm = read(data / "norm" / f"train.{pair}.{spec['src']}")
            assert len(seg) == len(norm)
            assert [s.replace(" ", "") for s in seg[:50]] == [n.replace(" ", "") for n in norm[:50]]


@pytest.mark.slow
def test_miniature_trains_decodes_and_scores(miniature):
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    scores = sorted(miniature.glob("results/experiments/*/*/*.scores.json"))
    assert {path.parent.name for path in scores} == set(config["active_corpora"])  # every corpus is scored
    assert len(list(miniature.glob("results/experiments/baseline/*/*.scores.json"))) == len(config["experiments"]["baseline"]["corpora"])
    for path in scores:
        data = yaml.safe_load(path.read_text())
        assert "nrefs:1" in data["bleu"]["signature"] and data["num_sentences"] > 0
        assert 0.0 <= data["bleu"]["score"] <= 100.0
    metrics = miniature / "results/experiments/baseline/multi30k_en_de/train/metrics.csv"
    rows = list(csv.DictReader(metrics.open()))
    assert rows, "training wrote no metrics"
    # every training's TensorBoard event files (train.tensorboard, on by default), dev loss included
    trainings = list(miniature.glob("results/*/*/*/train/metrics.csv"))
    assert len(trainings) > 1
    for metrics in trainings:
        assert list((metrics.parent / "tensorboard").glob("events.out.tfevents.*")), metrics.parent


@pytest.mark.slow
def test_the_miniature_prints_its_progress_at_the_start_and_after_each_training(miniature):
    lines = [line for line in (miniature / ".snakemake/miniature.stderr").read_text().splitlines()
             if line.startswith("progress: trainings: ")]
    trainings = len(list(miniature.glob("results/*/*/*/train/checkpoint_best.pt")))
    assert lines[0].startswith(f"progress: trainings: 0 of {trainings} done, 0 running")
    assert len(lines) == 1 + trainings and lines[-1].startswith(f"progress: trainings: {trainings} of {trainings} done")


@pytest.mark.slow
def test_rerun_does_nothing_and_a_new_bpe_size_rebuilds_only_its_branch(miniature, tmp_path):
    again = snakemake(miniature, "-n", "all", "--cores", "1", "--configfile", str(ROOT / "configs/ci.yaml"))
    assert "Nothing to be done" in again.stdout + again.stderr
    changed = tmp_path / "bpe.yaml"
    changed.write_text("corpora:\n  multi30k_en_de:\n    bpe: {merges: [600, 700]}\n")
    proc = snakemake(miniature, "-n", "all", "--cores", "1", "--configfile", str(ROOT / "configs/ci.yaml"), str(changed))
    jobs = planned_jobs(proc.stdout)
    # learn 700 merges once, apply them to 3 splits x 2 languages; nothing upstream or elsewhere
    assert jobs == {"learn_bpe": 1, "apply_bpe": 6, "all": 1}, jobs


@pytest.mark.slow
def test_miniature_ends_with_results_table_length_plots_and_report(miniature):
    import pandas as pd

    table = pd.read_csv(miniature / "results/report/results.csv")
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert set(table["corpus"]) == {c for spec in config["experiments"].values() for c in spec["corpora"]}
    bleu = table[table["metric"] == "bleu"]
    for _, row in bleu.iterrows():
        run_dir = miniature / f"results/experiments/{row['experiment']}/{row['corpus']}"
        scores = yaml.safe_load((run_dir / f"{row['test_set']}.scores.json").read_text())
        assert row["score"] == pytest.approx(scores["bleu"]["score"])
    assert list(miniature.glob("results/report/length/*/*.png"))
    # `all` ends with the results summary and one learning-curve plot per corpus (ev.report_targets)
    summary = (miniature / "results/report/summary.md").read_text(encoding="utf-8")
    signature = yaml.safe_load((miniature / "results/experiments/baseline/multi30k_en_de/test_2016_flickr.scores.json")
                               .read_text())["bleu"]["signature"]
    assert "`" + signature.replace("|", "\\|") + "`" in summary  # pipes escaped for GitHub tables
    assert "- Config files: `config.yaml`, `configs/ci.yaml`\n" in summary  # merge order, each once
    assert (miniature / "results/report/summary.json").is_file()
    for corpus in set(table["corpus"]):
        assert (miniature / f"results/report/curves/{corpus}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = miniature / "report.html"
    snakemake(miniature, "--report", str(report), "--configfile", str(ROOT / "configs/ci.yaml"))
    assert report.stat().st_size > 10_000
    # the results page (rule results_summary), the report's summary item and its landing text's first link
    page = (miniature / "results/report/summary.html").read_text(encoding="utf-8")
    claims = json.loads((miniature / "results/report/summary.json").read_text(encoding="utf-8"))["claims"]
    assert '<h2 id="verdicts">' in page and ('<figure id="verdict-figure">' in page) == bool(claims)
    text = report.read_text(encoding="utf-8")
    assert "results['results/report/summary.html'].data_uri" in text and '"results/report/summary.html": {' in text


@pytest.mark.slow
def test_an_outside_family_gets_its_own_table_with_significance(miniature):
    """configs/ci.yaml's `relpos` (examples/relpos_transformer, `paper: relpos`, loaded by
    `user_modules`): trained against the baseline, its generic table holds every seed's
    comparison numbers, and the summary shows it."""
    import pandas as pd

    table = pd.read_csv(miniature / "results/report/results.csv")
    runs = table[table["seed_group"].eq("relpos") & table["metric"].eq("bleu")]  # one row per seed's run
    assert len(runs) == 2 and set(runs["family"]) == {"relpos_transformer"} and runs["p_sign"].notna().all()
    markdown = (miniature / "results/report/tables/relpos.md").read_text(encoding="utf-8")
    assert "### relpos: each system against its baseline (sacreBLEU)" in markdown
    line = next(line for line in markdown.splitlines() if line.startswith("| +relative positions "))
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[1:4] == ["Transformer", "multi30k_en_de", "test_2016_flickr"]
    assert cells[4].startswith(f"{runs['score'].mean():.2f} ± ")  # the mean over the two seeds
    assert cells[7] in {f"{float(p):.3g}" for p in runs["p_sign"]}  # one run's sign test (the seed closest to the mean)
    summary = (miniature / "results/report/summary.md").read_text(encoding="utf-8")
    assert "## Your own experiments" in summary and "#### relpos: each system against its baseline" in summary


@pytest.mark.slow
def test_an_outside_family_that_reads_compressed_is_trained_on_its_compressor_output(miniature):
    """configs/ci.yaml's `gated_comp` (examples/gated_compression, `paper: gated_compression`): its
    module declares the extra input `compressed` (FAMILY_NEEDS) and nothing in the workflow names
    the family, yet it is trained and decoded on esc_unsup's output, packaged with that
    compressor (raw text: test_every_package_translates_raw_test_sources_as_the_workflow_did)
    and compared with the baseline in a table of its own."""
    import json

    import pandas as pd

    table = pd.read_csv(miniature / "results/report/results.csv")
    runs = table[table["seed_group"].eq("gated_comp") & table["metric"].eq("bleu")]  # one row per seed's run
    assert len(runs) == 2 and set(runs["family"]) == {"gated_compression"} and runs["p_sign"].notna().all()
    markdown = (miniature / "results/report/tables/gated_compression.md").read_text(encoding="utf-8")
    assert "### gated_compression: each system against its baseline (sacreBLEU)" in markdown
    line = next(line for line in markdown.splitlines() if line.startswith("| +gated compressed source "))
    assert [cell.strip() for cell in line.strip("|").split("|")][1:4] == ["Transformer", "multi30k_en_de", "test_2016_flickr"]
    package = json.loads((miniature / "results/experiments/gated_comp/multi30k_en_de/model/preprocess.json").read_text())
    assert package["compression"]  # the compressor's search settings: raw text is compressed as the workflow did
    assert (miniature / "results/compression/esc_unsup/multi30k_en_de/compressed/train.txt").is_file()


@pytest.mark.slow
def test_the_outside_claim_gets_a_verdict_with_its_must_beat_control(miniature):
    """examples/relpos_transformer/claims.yaml (configs/ci.yaml `claims:`): the claim of the
    outside family gets a verdict in the summary's "Your claims", with its must-beat control
    relpos_k1 compared over runs; without that comparison (the control failed to run) the same
    evidence is not "reproduced"."""
    from workflow_scripts.evaluation import claim_files
    from workflow_scripts.evaluation.verdicts import rules

    summary = (miniature / "results/report/summary.md").read_text(encoding="utf-8")
    papers = summary.split("## Claims and verdicts")[1].split("## Your claims")[0]  # the papers' claims
    yours = summary.split("## Your claims")[1].split("\n## ")[0]
    assert "| relpos |" not in papers
    line = next(line for line in yours.splitlines() if line.startswith("| relpos |"))
    assert any(f"**{v}**" in line for v in rules.VERDICTS), line
    assert "relpos_k1 (must-beat: " in yours and "relpos_k1 (must-beat: the same relation terms" in yours
    assert "**not run**" not in yours
    data = json.loads((miniature / "results/report/summary.json").read_text(encoding="utf-8"))
    [row] = [r for r in data["claims"] if r["system"] == "relpos"]
    assert row["own"] and [(c["experiment"], c["run"]) for c in row["controls"]] == [("relpos_k1", True)]
    own = claim_files.read_own_claims(ROOT / "examples/relpos_transformer/claims.yaml")
    failed = {**data, "run_statistics": [e for e in data["run_statistics"] if (e["system"], e["baseline"]) != ("relpos", "relpos_k1")]}
    [row] = [r for r in rules.claim_rows(failed, {**claim_files.read_claims(), **own}) if r["system"] == "relpos"]
    assert row["verdict"] != "reproduced" and "must-beat control relpos_k1 not run" in row["why"] + "; ".join(row["qualifiers"])


@pytest.mark.slow
def test_a_new_metric_reruns_only_the_score_jobs_and_what_reads_them(miniature, tmp_path):
    """A metric registered in a user module (here chrF with beta 1): the finished miniature
    plans its score jobs and the reports that read scores, and no training, decoding or test."""
    module = tmp_path / "my_metric.py"
    module.write_text("from sacrebleu.metrics import CHRF\n"
                      "from nmtmodels.text.scoring import MetricSpec, register_metric\n"
                      "register_metric(MetricSpec('chrf_beta1', 'chrF1', lambda lang: CHRF(beta=1)))\n")
    overlay = tmp_path / "metric.yaml"
    overlay.write_text(f"user_modules: [{module}]\n")  # joined with configs/ci.yaml's relpos module
    proc = snakemake(miniature, "-n", "all", "--cores", "1", "--configfile", str(ROOT / "configs/ci.yaml"), str(overlay))
    jobs = planned_jobs(proc.stdout)
    scores = list(miniature.glob("results/experiments/*/*/*.scores.json"))
    noisy = list(miniature.glob("results/experiments/*/*/swap_noise/*.scores.json"))
    assert jobs.get("score", 0) + jobs.get("score_concatenation", 0) == len(scores) and jobs.get("score_swap_noise", 0) == len(noisy)
    readers = {"results_table", "paper_tables", "results_summary", "swap_noise_report", "graph_layers", "all"}
    assert set(jobs) - {"score", "score_concatenation", "score_swap_noise"} <= readers, jobs


@pytest.mark.slow
def test_every_package_translates_raw_test_sources_as_the_workflow_did(miniature):
    """Every run of `all` has a model package, lattice and ESC runs included; translating a test
    set's raw source with it gives the workflow's own .hyp line for line (same checkpoint and
    decode settings; the package segments, builds lattices and compresses in-process)."""
    from nmtmodels.decoding.translator import Translator
    from nmtmodels.plugins import load_user_modules

    ci = yaml.safe_load((ROOT / "configs/ci.yaml").read_text(encoding="utf-8"))
    for module in ci["user_modules"]:  # the CI miniature's outside families, as NMT_USER_MODULES loads them
        load_user_modules(str(ROOT / module))
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    families = set()
    for package in sorted(miniature.glob("results/experiments/*/*/model")):
        run, corpus = package.parent, package.parent.name
        spec = config["corpora"][corpus]
        translator = Translator.from_checkpoint(package, threads=1)  # the translate rule's OMP_NUM_THREADS
        compared = 0
        for test_set in spec["test_sets"]:
            raw = miniature / f"results/data/{corpus}/raw/{test_set}.{spec['src']}"
            expected = read(run / f"{test_set}.hyp")
            got = [t.text for t in translator.translate(read(raw))]
            assert got == expected, (run.relative_to(miniature), test_set)
            compared += len(got)
        assert compared, run
        families.add(translator.family)
    assert {"transformer", "lattice_transformer", "bbfnmt", "char2word", "graph_transformer", "reordering",
            "relpos_transformer"} <= families
    runs = {path.parent for path in miniature.glob("results/experiments/*/*/train")}
    assert runs == {path.parent for path in miniature.glob("results/experiments/*/*/model")}
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    lattice = subprocess.run([sys.executable, "-m", "nmtmodels.cli", "translate", "--checkpoint",
                              str(miniature / "results/experiments/lattice_lpe_lsa_zh/tatoeba_zh_en/model")],
                             input="我们明天去北京。\n", capture_output=True, text=True, env=env, check=False)
    assert lattice.returncode == 0 and len(lattice.stdout.splitlines()) == 1, lattice.stderr
    esc = subprocess.run([sys.executable, "-m", "nmtmodels.cli", "translate", "--show-compressed", "--checkpoint",
                          str(miniature / "results/experiments/esc_bbf/multi30k_en_de/model")],
                         input="Two young men are playing football on a green field.\n", capture_output=True, text=True,
                         env=env, check=False)
    assert esc.returncode == 0, esc.stderr
    [line] = esc.stdout.splitlines()
    compressed, translation = line.split("\t")
    # the outside family's package, through the command, with its module named as users name it
    relpos = subprocess.run([sys.executable, "-m", "nmtmodels.cli", "translate", "--checkpoint",
                             str(miniature / "results/experiments/relpos/multi30k_en_de/model")],
                            input="Two dogs run.\n", capture_output=True, text=True,
                            env={**env, "NMT_USER_MODULES": str(RELPOS)}, check=False)
    assert relpos.returncode == 0 and len(relpos.stdout.splitlines()) == 1, relpos.stderr
    assert compressed == Translator.from_checkpoint(
        miniature / "results/experiments/esc_bbf/multi30k_en_de/model", threads=1).translate(
        ["Two young men are playing football on a green field."])[0].compressed


@pytest.mark.slow
def test_the_ctranslate2_export_translates_as_the_workflow_did(miniature, tmp_path):
    """The baseline's package exported to CTranslate2 and searched by `translate_with_limits` with
    the run's own settings (beam, length penalty, limits from export.json): every line of the
    test set equals the workflow's `.hyp` (what `nmt-translate` wrote)."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    from nmtmodels.decoding.export import export_ctranslate2, translate_with_limits
    from nmtmodels.model_package.reader import read_package

    run = miniature / "results/experiments/baseline/multi30k_en_de"
    out = export_ctranslate2(run / "model", tmp_path / "ct2")
    package = read_package(out)
    encode = package.source_encoder()
    sources = read(miniature / "results/data/multi30k_en_de/raw/test_2016_flickr.en")
    translator = ctranslate2.Translator(str(out), device="cpu", intra_threads=1)
    results = translate_with_limits(translator, [encode(line).split() for line in sources], out,
                                    max_batch_size=4096, batch_type="tokens")
    expected = read(run / "test_2016_flickr.hyp")
    got = [package.postprocess(" ".join(result.hypotheses[0])) for result in results]
    assert len(got) == len(expected) and [i for i, (a, b) in enumerate(zip(got, expected)) if a != b] == []


@pytest.mark.slow
def test_changed_training_settings_retrain_from_scratch(miniature, tmp_path):
    """Snakemake reruns a training job whose settings changed; the job must train the new
    run, not resume the old checkpoint (whose budget is spent) and pass it off as new.
    Kept last among the miniature tests: it retrains one model, so later runs would rebuild."""
    from nmtmodels.checkpoint import load_checkpoint
    from nmtmodels.training.optim import InverseSqrtSchedule

    changed = tmp_path / "lr.yaml"
    changed.write_text("training: {lr: 0.0007}\n")
    train_dir = miniature / "results/experiments/baseline/multi30k_en_de/train"
    snakemake(miniature, str(train_dir.relative_to(miniature) / "checkpoint_best.pt"), "--cores", "2",
              "--configfile", str(ROOT / "configs/ci.yaml"), str(changed))
    log = (miniature / "logs/train/baseline/multi30k_en_de.log").read_text()
    assert "starting over:" in log and "train.lr was 0.0015 and is 0.0007 now" in log
    last = load_checkpoint(train_dir / "checkpoint_last.pt")  # the optimiser's state: checkpoint_best.pt has none
    warmup = yaml.safe_load((ROOT / "configs/ci.yaml").read_text())["training"]["warmup_updates"]
    # the optimiser holds the rate of the next update, on the new schedule
    next_lr = last["trainer"]["optimizer"]["param_groups"][0]["lr"]
    assert next_lr == pytest.approx(InverseSqrtSchedule(0.0007, warmup).lr(last["update"] + 1))
