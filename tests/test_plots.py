"""Scores by source-length bucket and their plot (workflow_scripts.evaluation.plots), and the
pyplot every figure of the workflow draws with (workflow_scripts.evaluation.agg)."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sacrebleu.metrics import BLEU

from workflow_scripts.evaluation import plots

ROOT = Path(__file__).resolve().parents[1]
WORDS = [f"w{i}" for i in range(30)]


def test_figures_are_drawn_on_agg_and_only_drawing_loads_matplotlib():
    """The modules that draw load no matplotlib when imported; agg.pyplot() is pyplot on the Agg
    backend even where the environment names another (MPLBACKEND=pdf)."""
    probe = ("import sys\n"
             "import workflow_scripts.analyses.attention_plots, workflow_scripts.evaluation.curves\n"
             "import workflow_scripts.evaluation.plots, workflow_scripts.evaluation.verdict_figure\n"
             "print('matplotlib' in sys.modules)\n"
             "from workflow_scripts.evaluation import agg\n"
             "print(agg.pyplot().get_backend().lower(), agg.pyplot() is sys.modules['matplotlib.pyplot'])\n")
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False,
                         env={**os.environ, "MPLBACKEND": "pdf"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "agg", "True"], run.stdout


def test_bucket_labels_and_boundaries():
    assert plots.bucket_labels([10, 20]) == ["0-10", "11-20", ">20"]
    edges = [10, 20]
    assert [plots.length_bucket(n, edges) for n in (0, 1, 10, 11, 20, 21, 500)] == ["0-10", "0-10", "0-10", "11-20", "11-20",
                                                                                  ">20", ">20"]


def test_bucket_scores_equal_sacrebleu_on_each_subset():
    rng = random.Random(4)
    source = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30))) for _ in range(80)]
    refs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 20))) for _ in range(80)]
    hyps = [" ".join(w if rng.random() < 0.7 else rng.choice(WORDS) for w in r.split()) for r in refs]
    frame = plots.bleu_by_length(source, {"sys": hyps, "ref": refs}, [refs], "en", "bleu", [10, 20])
    assert list(frame["bucket"]) == ["0-10", "11-20", ">20"] * 2
    for bucket, rows in frame.groupby("bucket"):
        members = [i for i, s in enumerate(source) if plots.length_bucket(len(s.split()), [10, 20]) == bucket]
        expected = BLEU().corpus_score([hyps[i] for i in members], [[refs[i] for i in members]]).score
        assert rows.set_index("system").loc["sys", "score"] == expected
        assert rows.set_index("system").loc["ref", "score"] == pytest.approx(100.0)
        assert set(rows["sentences"]) == {len(members)}


def test_cli_writes_csv_and_png(tmp_path):
    lines = {"src": ["a b c", "a b c d e f g h i j k l"], "ref": ["x y z", "x y z w"], "hyp": ["x y z", "x y q w"]}
    for name, text in lines.items():
        (tmp_path / name).write_text("\n".join(text) + "\n")
    args = ["length", "--source", str(tmp_path / "src"), "--lang", "en", "--ref", str(tmp_path / "ref"),
            "--system", "s1", str(tmp_path / "hyp"), "--buckets", "5", "--title", "t", "--csv", str(tmp_path / "out.csv"),
            "--png", str(tmp_path / "out.png")]
    assert plots.main(args) == 0
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == "bucket,sentences,system,score"
    assert (tmp_path / "out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "hyp").write_text("only one\n")
    assert plots.main(args[:-4] + ["--csv", str(tmp_path / "bad.csv"), "--png", str(tmp_path / "bad.png")]) == 1
    assert not (tmp_path / "bad.csv").exists() and not (tmp_path / "bad.png").exists()
