"""workflow_scripts.evaluation.disk_use on a results folder laid out by hand: the total is du's,
the repeated checkpoints and the resume state not kept are the bytes put there (issue 70)."""
from __future__ import annotations

import json
import os
import subprocess

import torch

from nmtmodels.checkpoint import copy_checkpoint, save_checkpoint, without_resume_state
from workflow_scripts.evaluation import disk_use

MOMENTS, RNG = 1000, 100  # fp32 entries of each Adam moment, bytes of the RNG state


def training_state(update: int, run: str = "old") -> dict:
    """A checkpoint of ``run`` with a 4,000-byte model and 2 * 4,000 + 100 bytes of resume state."""
    return {"model": {"w": torch.full((MOMENTS,), float(update))}, "update": update, "run": run,
            "trainer": {"optimizer": {"state": {0: {"exp_avg": torch.zeros(MOMENTS), "exp_avg_sq": torch.ones(MOMENTS)}},
                                      "param_groups": [{"lr": 0.1}]},
                        "scheduler": {"last_epoch": update}, "rng": [torch.zeros(RNG, dtype=torch.uint8)],
                        "sampler": {"epoch": 1}, "devices": ["CPU"]}}


def results_folder(root):
    """Two trainings as older versions left them, one as this version does, data and a package."""
    (root / "data/c").mkdir(parents=True)
    (root / "data/c/train.txt").write_text("word " * 4000, encoding="utf-8")
    old = root / "experiments/old/c/train"  # best and the final numbered one copy last
    save_checkpoint(old / "checkpoint_last.pt", training_state(4), copies=[old / "checkpoint_4.pt"])
    copy_checkpoint(old / "checkpoint_last.pt", old / "checkpoint_best.pt")
    save_checkpoint(old / "checkpoint_2.pt", training_state(2))
    (old / "metrics.csv").write_text("update\n2\n4\n", encoding="utf-8")
    linked = root / "experiments/linked/c/train"  # before issue 34: best a hard link of last
    save_checkpoint(linked / "checkpoint_last.pt", training_state(4, "linked"))
    os.link(linked / "checkpoint_last.pt", linked / "checkpoint_best.pt")
    new = root / "experiments/new/c/train"
    save_checkpoint(new / "checkpoint_last.pt", training_state(4, "new"))
    save_checkpoint(new / "checkpoint_best.pt", without_resume_state(training_state(4, "new")))
    package = root / "experiments/new/c/model"
    save_checkpoint(package / "checkpoint.pt", {"model": training_state(4)["model"]})
    (package / "preprocess.json").write_text(json.dumps({"subwords": "char"}), encoding="utf-8")
    return old


def test_the_disk_use_of_a_results_folder(tmp_path):
    root = tmp_path / "results"
    old = results_folder(root)
    use = disk_use.measure(root)
    files = [os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names]
    du = subprocess.run(["du", "-B1", "-c", *files], check=True, capture_output=True, text=True).stdout
    assert use.total == int(du.splitlines()[-1].split()[0])  # du counts the hard link once too
    assert use.files == len(files) - 1 and use.trainings == 3
    assert use.kinds["checkpoint_N.pt (numbered)"][0] == 2
    assert use.kinds["checkpoint_best.pt"][0] + use.kinds["checkpoint_last.pt"][0] == 5  # 6 names, one a link
    assert use.kinds["model packages' checkpoints"][0] == 1 and use.kinds["other files in data/"][0] == 1
    # the old run's best and checkpoint_4.pt repeat its last; the hard link is one file, not a repeat
    assert use.repeated == [2, 2 * os.stat(old / "checkpoint_last.pt").st_blocks * 512]
    assert use.not_kept == 2 * (2 * 4 * MOMENTS + RNG)  # the resume state of those two files


def test_the_page_and_a_folder_that_is_not_there(tmp_path, capsys):
    root = tmp_path / "results"
    results_folder(root)
    page = tmp_path / "disk.md"
    assert disk_use.main([str(root), "--markdown", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    use = disk_use.measure(root)
    assert f"({use.total:,} bytes) in {use.files} files; 3 trainings" in text
    assert f"made by `python -m workflow_scripts.evaluation.disk_use {root} --markdown {page}`" in text
    assert "| checkpoint_N.pt (numbered) | 2 |" in text
    assert disk_use.main([str(tmp_path / "nothing")]) == 1
    assert capsys.readouterr().err == f"error: {tmp_path / 'nothing'}: not a folder\n"
