"""What an earlier version wrote still works: a model package and a half-finished training made
by commit 9b82f30 (the last before the translation stream and the package/loading splits of
issue 56) are read by this tree's code.  The old code is taken from the repository's own
history (``git archive``) and run in a process of its own; a clone without that commit skips.

- The old package translates raw text byte-identically to the old ``nmt-translate``.
- A training the old code stopped at update 6 resumes here to update 12 and ends with the
  parameters, bit for bit, of the old code's own uninterrupted 12 updates.
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest
import torch

from nmtmodels import cli

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("NMT_DATA_MIRROR") or REPO.parent / "shared" / "data")
OLD = "9b82f30"
pytestmark = pytest.mark.heavy  # the old tree is archived, and its code trains and translates in a process of its own
SENTENCES = ["Two dogs are playing in the snow.", "A man rides a bicycle down the street.", "",
             "Eine Frau liest.", "A group of children are sitting on the grass near a tree."]

# Run by the old code (cwd: the old tree): build the package as its own test fixture did, translate
# with its nmt-translate, and train the same experiment to 6 and to 12 updates.
OLD_SCRIPT = textwrap.dedent("""
    import sys, tempfile
    from pathlib import Path
    import nmtmodels.tests.test_translator as T
    from nmtmodels import cli

    out = Path(sys.argv[1])

    class Factory:
        def mktemp(self, name):
            return Path(tempfile.mkdtemp(prefix=name, dir=out))

    fixture = getattr(T.package, "_get_wrapped_function", None)
    directory, _, data = (fixture() if fixture else T.package.__wrapped__)(Factory())
    (out / "where").write_text(f"{directory}\\n{data}\\n")
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(out / "in.en"),
                               "--output", str(out / "old.de"), "--log-interval", "0"]) == 0
    for updates in (6, 12):
        assert cli.train_main(["--config", str(data / "exp.yaml"), "--train-src", str(data / "train.en"),
                               "--train-tgt", str(data / "train.de"), "--src-vocab", str(data / "dict.en"),
                               "--tgt-vocab", str(data / "dict.de"), "--out-dir", str(out / f"train{updates}"),
                               "--device", "cpu", "--set", f"train.max_updates={updates}"]) == 0
""")


@pytest.fixture(scope="module")
def old_run(tmp_path_factory):
    """(directory of the old code's outputs, its package, its data directory)."""
    if not (MIRROR / "multi30k" / "train.en.gz").is_file():
        pytest.skip(f"no corpus mirror at {MIRROR} (set NMT_DATA_MIRROR)")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", OLD, "nmtmodels"], capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"commit {OLD} is not in this clone's history ({archive.stderr.decode().strip()})")
    out = tmp_path_factory.mktemp("old")
    tree = out / "tree"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    (out / "in.en").write_text("".join(f"{line}\n" for line in SENTENCES), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", "NMT_DATA_MIRROR": str(MIRROR)}
    run = subprocess.run([sys.executable, "-c", OLD_SCRIPT, str(out)], cwd=tree, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    directory, data = (out / "where").read_text().split()
    return out, Path(directory), Path(data)


def test_an_old_package_translates_byte_identically(old_run, tmp_path):
    out, directory, _ = old_run
    assert cli.translate_main(["--checkpoint", str(directory), "--input", str(out / "in.en"),
                               "--output", str(tmp_path / "new.de"), "--log-interval", "0"]) == 0
    old, new = (out / "old.de").read_bytes(), (tmp_path / "new.de").read_bytes()
    assert new == old and len(new.splitlines()) == len(SENTENCES)


def test_an_old_training_resumes_to_the_old_codes_own_parameters(old_run, tmp_path):
    out, _, data = old_run
    resumed = tmp_path / "resumed"
    shutil.copytree(out / "train6", resumed)
    threads = torch.get_num_threads()
    try:
        assert cli.train_main(["--config", str(data / "exp.yaml"), "--train-src", str(data / "train.en"),
                               "--train-tgt", str(data / "train.de"), "--src-vocab", str(data / "dict.en"),
                               "--tgt-vocab", str(data / "dict.de"), "--out-dir", str(resumed), "--device", "cpu",
                               "--set", "train.max_updates=12"]) == 0
    finally:
        torch.set_num_threads(threads)
    old = torch.load(out / "train12" / "checkpoint_last.pt", weights_only=False, map_location="cpu")
    new = torch.load(resumed / "checkpoint_last.pt", weights_only=False, map_location="cpu")
    started = torch.load(out / "train6" / "checkpoint_last.pt", weights_only=False, map_location="cpu")
    assert started["update"] == 6 and old["update"] == new["update"] == 12
    assert old["model"].keys() == new["model"].keys()
    assert all(torch.equal(old["model"][key], new["model"][key]) for key in old["model"])
    assert not all(torch.equal(started["model"][key], new["model"][key]) for key in old["model"])  # it did train on
