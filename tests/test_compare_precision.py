"""benchmarks/compare_precision.py: the fp32 and bf16 runs of the default side by side."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.compare_precision import main, system_rows  # noqa: E402


def _summary(commit: str, precision: str, losses: dict[str, list[float]], bleu: dict[str, tuple[float, float]],
             verdict: str, elapsed_s: float) -> dict:
    runs = [{"experiment": system + (f"_seed{seed}" if seed > 1 else ""), "system": system, "best_dev_loss": loss,
             "elapsed_s": elapsed_s, "precision": precision}
            for system, values in losses.items() for seed, loss in enumerate(values, 1)]
    seed_scores = [{"experiment": system, "metric": "bleu", "score": mean, "score_sd": sd, "n_seeds": 3}
                   for system, (mean, sd) in bleu.items()]
    claims = [{"system": "method", "baseline": "base", "delta": 0.5,
               "interval": {"low": -0.25, "high": 1.25}, "verdict": verdict}]
    return {"workflow": {"commit": commit}, "runs": runs, "seed_scores": seed_scores, "claims": claims}


FP32 = _summary("a" * 40, "fp32", {"base": [4.0, 4.2, 4.4], "method": [3.9, 3.9, 3.9], "gru": [1.0, 1.2, 1.4]},
                {"base": (20.0, 0.5)}, "inconclusive", 60.0)
BF16 = _summary("b" * 40, "bf16", {"base": [4.1, 4.3, 4.5], "method": [4.0, 4.0, 4.0], "only_bf16": [1.0]},
                {"base": (20.5, 0.25)}, "reproduced", 30.0)


def test_rows_by_hand():
    rows = {row["system"]: row for row in system_rows(FP32, BF16)}
    assert set(rows) == {"base", "method"}  # systems of one run only are left out
    base = rows["base"]
    # fp32 4.0, 4.2, 4.4: mean 4.2, sd 0.2; bf16 the same shifted by 0.1; pooled sd 0.2.
    assert base["dev_loss"][0] == pytest.approx((4.2, 0.2))
    assert base["dev_loss_diff"] == pytest.approx(0.1)
    assert base["dev_loss_spreads"] == pytest.approx(0.5)
    assert base["agrees"] is True
    assert base["bleu"] == ((20.0, 0.5, 3), (20.5, 0.25, 3))
    # No spread at all: any difference is outside it.
    method = rows["method"]
    assert method["dev_loss_diff"] == pytest.approx(0.1)
    assert method["agrees"] is False and method["dev_loss_spreads"] == float("inf")
    assert method["bleu"] is None


def test_cli_reads_the_wall_time_scripts_layout(tmp_path, capsys):
    for precision, summary, wall in (("fp32", FP32, "3000"), ("bf16", BF16, "1800")):
        report = tmp_path / precision / "repo/results/report"
        report.mkdir(parents=True)
        (report / "summary.json").write_text(json.dumps(summary))
        (tmp_path / precision / "wall_s").write_text(wall)
    main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "| fp32 | aaaaaaa | 50.0 | 9.0 |" in out  # 3,000 s; 9 runs of 60 s
    assert "| bf16 | bbbbbbb | 30.0 | 3.5 |" in out  # 7 runs of 30 s
    assert "| base_seed2 | 1.0 | 0.5 | ×2.00 |" in out
    assert "| all 6 | 6.0 | 3.0 | ×2.00 |" in out  # base and method, 3 seeds each; gru and only_bf16 unpaired
    assert "| base | fp32 / bf16 | 4.200 ± 0.200 | 4.300 ± 0.200 | +0.100 (+0.5) | yes | 20.00 ± 0.50 | 20.50 ± 0.25 |" in out
    assert "| method against base | +0.50 [-0.25, +1.25] | inconclusive | +0.50 [-0.25, +1.25] | reproduced |" in out


def test_missing_summary_is_one_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(tmp_path)])
    assert "fp32/repo/results/report/summary.json: no summary.json for the fp32 run" in capsys.readouterr().err


def test_partial_run_counts_only_finished_trainings(tmp_path, capsys):
    header = "update,epoch,loss,nll,lr,tokens_per_s,grad_norm,valid_loss,valid_nll,valid_bleu,elapsed,target_tokens\n"
    for precision, amp, elapsed in (("fp32", "none", 120), ("bf16", "bf16", 80)):
        for experiment, last in (("base", 600), ("base_seed2", 400)):
            train = tmp_path / precision / "repo/results/experiments" / experiment / "corpus/train"
            train.mkdir(parents=True)
            (train.parent / "experiment.yaml").write_text(f"train:\n  max_updates: 600\n  amp: {amp}\n")
            (train / "metrics.csv").write_text(
                header + f"200,1,,,,,,4.5,,,{elapsed / 3},1\n400,1,,,,,,4.25,,,{elapsed * 2 / 3},2\n"
                + (f"{last},2,,,,,,4.375,,,{elapsed},3\n" if last == 600 else ""))
    main([str(tmp_path), "--partial"])
    out = capsys.readouterr().out
    assert "| base | 2.0 | 1.3 | ×1.50 |" in out  # 120 s against 80 s
    assert "base_seed2 |" not in out.split("| system |")[0]  # stopped at update 400 of 600
    # Its best dev loss is the lowest logged (4.25 at update 400), not the last.
    assert "| base | fp32 / bf16 | 4.250 ± 0.000 | 4.250 ± 0.000 |" in out
