from __future__ import annotations

import csv
import math
import os
import re
import runpy
import signal
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest
import sacrebleu
import torch
import yaml

from nmtmodels import cli
from nmtmodels.checkpoint import (
    average_checkpoints,
    load_checkpoint,
    load_model_from_checkpoint,
    numbered_checkpoints,
    save_checkpoint,
)
from nmtmodels.config import ConfigError
from nmtmodels.data import ParallelDataset
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.experiment import apply_overrides, check_extras, load_experiment, parse_extras
from nmtmodels.tests.copy_task_fixtures import LETTERS, copy_task, write_lines
from nmtmodels.tests.filesystem import read_only
from nmtmodels.text.postprocess import postprocess
from nmtmodels.training.trainer import EXIT_REQUEUE
from nmtmodels.training.validation import make_bleu_fn

REPO = Path(__file__).resolve().parents[2]
EXPERIMENT = """\
model: {preset: tiny, d_model: 64, heads: 4, ffn_dim: 128, encoder_layers: 1, decoder_layers: 1, dropout: 0.0,
        max_source_positions: 64, max_target_positions: 64}
train: {max_tokens: 500, lr: 0.005, warmup_updates: 30, max_updates: 300, log_interval: 100,
        label_smoothing: 0.0, num_threads: 1, keep_last: 3}
decode: {beam: 4}
"""


@pytest.fixture(autouse=True)
def _restore_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def train_args(d: Path, out: str = "out", config: str = "exp.yaml") -> list[str]:
    return ["--config", str(d / config), "--train-src", str(d / "train.src"), "--train-tgt", str(d / "train.tgt"),
            "--src-vocab", str(d / "vocab.txt"), "--tgt-vocab", str(d / "vocab.txt"), "--out-dir", str(d / out)]


@pytest.fixture(scope="module")
def copy_run(tmp_path_factory):
    """A model trained by nmt-train on a copy task (500 pairs, 300 updates; one BPE-style token)."""
    d = tmp_path_factory.mktemp("copy")
    src, tgt = copy_task(600, seed=1, tokens=[*LETTERS, "k@@"])
    write_lines(d / "train.src", src[:500])
    write_lines(d / "train.tgt", tgt[:500])
    write_lines(d / "test.src", src[500:])
    write_lines(d / "test.tgt", tgt[500:])
    (d / "exp.yaml").write_text(EXPERIMENT)
    threads = torch.get_num_threads()
    try:
        assert cli.vocab_main(["--inputs", str(d / "train.src"), "--output", str(d / "vocab.txt")]) == 0
        assert cli.train_main(train_args(d)) == 0
    finally:
        torch.set_num_threads(threads)
    return d


def translate(args: list[str], capsys) -> tuple[int, str, str]:
    """nmt-translate --pretokenized (the copy task's text is its own encoding)."""
    rc = cli.translate_main(["--pretokenized", *args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.mark.heavy
def test_trained_model_translates_held_out_copies(copy_run, capsys):
    d = copy_run
    rc, _, _ = translate(["--checkpoint", str(d / "out/checkpoint_last.pt"), "--input", str(d / "test.src"),
                          "--output", str(d / "hyp.txt"), "--src-vocab", str(d / "vocab.txt")], capsys)
    assert rc == 0
    hyps = (d / "hyp.txt").read_text().splitlines()
    refs = (d / "test.tgt").read_text().splitlines()
    assert len(hyps) == len(refs) == 100
    assert sum(h == r for h, r in zip(hyps, refs)) >= 80  # learned, and output is in input order
    assert (d / "out" / "config.resolved.yaml").exists()


@pytest.mark.heavy
def test_postprocess_option_applies_postprocess(copy_run, capsys):
    d = copy_run
    args = ["--checkpoint", str(d / "out/checkpoint_last.pt"), "--input", str(d / "test.src"), "--beam", "1"]
    _, plain, _ = translate(args, capsys)
    _, processed, _ = translate(args + ["--postprocess", "en"], capsys)
    assert any("@@" in line for line in plain.splitlines())
    assert processed.splitlines() == [postprocess(line, "en") for line in plain.splitlines()]


@pytest.mark.heavy
def test_an_output_that_is_a_symlink_is_written_through_and_stays_a_link(copy_run, tmp_path, capsys):
    d = copy_run
    write_lines(d / "two.src", ["a b c", "d e f g"])
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "hyp.txt").write_text("old\n")
    (tmp_path / "hyp.txt").symlink_to(tmp_path / "store" / "hyp.txt")
    rc, _, _ = translate(["--checkpoint", str(d / "out/checkpoint_last.pt"), "--input", str(d / "two.src"),
                          "--output", str(tmp_path / "hyp.txt")], capsys)
    assert rc == 0 and (tmp_path / "hyp.txt").is_symlink()
    assert len((tmp_path / "store" / "hyp.txt").read_text().splitlines()) == 2


@pytest.mark.heavy
def test_nbest_output_format(copy_run, capsys):
    d = copy_run
    write_lines(d / "three.src", ["a b c", "j", "d e f g"])
    rc, out, _ = translate(["--checkpoint", str(d / "out/checkpoint_last.pt"), "--input", str(d / "three.src"),
                            "--nbest", "3", "--beam", "4"], capsys)
    assert rc == 0
    rows = [re.fullmatch(r"(\d+) \|\|\| (.*) \|\|\| (-?\d+\.\d+)", line) for line in out.splitlines()]
    assert all(rows) and len(rows) == 9
    assert [int(m.group(1)) for m in rows] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    for i in range(3):
        scores = [float(m.group(3)) for m in rows[3 * i: 3 * i + 3]]
        assert scores == sorted(scores, reverse=True)
        assert len({m.group(2) for m in rows[3 * i: 3 * i + 3]}) == 3


@pytest.mark.heavy
def test_early_stop_flag_reaches_the_search(copy_run, capsys, monkeypatch):
    import nmtmodels.decoding.search

    seen = []
    real = nmtmodels.decoding.search.translate_dataset
    monkeypatch.setattr(nmtmodels.decoding.search, "translate_dataset",
                        lambda model, data, cfg, **kw: seen.append(cfg) or real(model, data, cfg, **kw))
    d = copy_run
    base = ["--checkpoint", str(d / "out/checkpoint_last.pt"), "--input", str(d / "test.src"), "--beam", "4"]
    _, exact, _ = translate(base, capsys)
    first = len(seen)  # standard output is searched in growing chunks: one call or more per command
    _, top, _ = translate(base + ["--early-stop", "top"], capsys)
    assert first and {cfg.early_stop for cfg in seen[:first]} == {"exact"} and {cfg.early_stop for cfg in seen[first:]} == {"top"}
    assert len(top.splitlines()) == len(exact.splitlines()) == 100
    with pytest.raises(SystemExit):
        translate(base + ["--early-stop", "soon"], capsys)
    assert "--early-stop: invalid choice: 'soon'" in capsys.readouterr().err


@pytest.mark.heavy
def test_interactive_stdin_answers_line_by_line(copy_run):
    d = copy_run
    proc = subprocess.Popen([sys.executable, "-m", "nmtmodels.cli", "translate", "--pretokenized", "--interactive",
                             "--checkpoint", str(d / "out/checkpoint_last.pt")],
                            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        answers = []
        for line in ("a b c d", "h h i", " ".join(["a"] * 70)):
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            answers.append(proc.stdout.readline())  # answered before stdin is closed: flushed per line
        proc.stdin.close()
        assert proc.wait(timeout=60) == 2  # a line failed
    finally:
        proc.kill()
    assert answers[0].strip() == "a b c d" and answers[1].strip() == "h h i"
    assert answers[2] == "\n"  # a bad line answers with an empty line and an error naming it
    err = proc.stderr.read()
    assert "<stdin>:3: source has 71 tokens" in err
    assert err.splitlines()[-1] == "nmt-translate: error: 1 of 3 input lines could not be translated (their output lines are empty)"


@pytest.mark.heavy
@pytest.mark.parametrize("env", [{"LC_ALL": "C.UTF-8"}, {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8:strict"},
                                 {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "PYTHONIOENCODING": "ascii"}])
def test_stdin_bytes_that_are_not_utf8_are_an_error_naming_the_line_whatever_the_locale(copy_run, env):
    d = copy_run
    stdin = b"a b c d\nh \xff\xfe i\nh h i\n"
    proc = subprocess.run([sys.executable, "-m", "nmtmodels.cli", "translate", "--pretokenized", "--checkpoint",
                           str(d / "out/checkpoint_last.pt")], cwd=REPO, input=stdin, capture_output=True, timeout=120,
                          env={"PATH": os.environ.get("PATH", ""), **env}, check=False)
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2, err
    assert proc.stdout.decode("utf-8").split("\n") == ["a b c d", "", "h h i", ""]  # nothing lost or shifted
    assert "nmt-translate: error: <stdin>:2: invalid UTF-8 (invalid start byte at byte 2)" in err
    assert "Traceback" not in err


@pytest.mark.heavy
@pytest.mark.parametrize("side", ["src", "tgt"])
def test_vocabulary_mismatch_is_an_error(copy_run, capsys, tmp_path, side):
    d = copy_run
    write_lines(tmp_path / "other.vocab", ["<pad>", "<s>", "</s>", "<unk>", "b", "a"])
    rc, _, err = translate(["--checkpoint", str(d / "out/checkpoint_last.pt"), "--input", str(d / "test.src"),
                            f"--{side}-vocab", str(tmp_path / "other.vocab")], capsys)
    assert rc == 2 and f"{side} vocabulary ({tmp_path / 'other.vocab'}) does not match the checkpoint's" in err


@pytest.mark.heavy
def test_checkpoint_whose_parameters_do_not_fit_its_config_is_an_error(copy_run, capsys, tmp_path):
    state = load_checkpoint(copy_run / "out/checkpoint_last.pt")
    del state["model"]["decoder.layers.0.ffn_residual.norm.weight"]
    save_checkpoint(tmp_path / "broken.pt", state)
    rc, _, err = translate(["--checkpoint", str(tmp_path / "broken.pt"), "--input", str(copy_run / "test.src"),
                            "--output", str(tmp_path / "out.txt")], capsys)
    assert rc == 2 and "broken.pt: its parameters do not fit its own model_config (" in err
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.heavy
def test_empty_input_is_an_error_and_writes_nothing(copy_run, capsys, tmp_path):
    d = copy_run
    (tmp_path / "empty.src").write_text("")
    rc, _, err = translate(["--checkpoint", str(d / "out/checkpoint_last.pt"), "--input", str(tmp_path / "empty.src"),
                            "--output", str(tmp_path / "out.txt")], capsys)
    assert rc == 2 and "empty.src: empty file" in err
    assert list(tmp_path.iterdir()) == [tmp_path / "empty.src"]


@pytest.mark.heavy
def test_over_long_sentence_is_an_error_unless_truncating(copy_run, capsys, tmp_path):
    d = copy_run
    write_lines(tmp_path / "long.src", ["a b", " ".join(["c"] * 80), "d"])
    args = ["--checkpoint", str(d / "out/checkpoint_last.pt"), "--input", str(tmp_path / "long.src")]
    rc, _, err = translate(args, capsys)
    assert rc == 2 and "long.src:2: source has 81 tokens incl. </s>, over the model's limit 64" in err
    rc, out, _ = translate(args + ["--truncate", "--max-len-b", "3"], capsys)
    assert rc == 0 and len(out.splitlines()) == 3


@pytest.mark.heavy
def test_average_cli_equals_the_mean_of_the_newest(copy_run, tmp_path):
    d = copy_run
    newest = [path for _, path in numbered_checkpoints(d / "out")][-2:]
    assert cli.average_main(["--last", "2", "--dir", str(d / "out"), "--output", str(tmp_path / "avg.pt")]) == 0
    averaged = load_checkpoint(tmp_path / "avg.pt")["model"]
    states = [load_checkpoint(p)["model"] for p in newest]
    for key, value in averaged.items():
        torch.testing.assert_close(value, (states[0][key] + states[1][key]) / 2, rtol=1e-6, atol=1e-7)
    assert average_checkpoints(newest)["averaged_from"] == [str(p) for p in newest]


@pytest.mark.heavy
@pytest.mark.parametrize(
    "yaml_text, sets, message",
    [
        ("train: {max_updates: 5, lrr: 0.1}\n", [], "train.lrr: unknown key (did you mean 'lr'?)"),
        ("train: {max_updates: 5}\n", ["model.family=nope"], "unknown model family 'nope' (registered: "),
        ("trian: {max_updates: 5}\n", [], "unknown section 'trian'"),
        ("train: {max_updates: 5}\n", ["model.d_model=abc"], "model.d_model: expected int"),
        ("train: {max_updates: 5}\nmodel: {share_embeddings: true}\n", [], "model.share_embeddings"),
        ("train: {max_updates: 5, patience: 2}\n", [], "train.patience / train.best_metric: need a validation set"),
        # numpy's seeds are 32-bit: before, np.random.seed's ValueError came as a 28-line traceback
        ("train: {max_updates: 5}\n", ["train.seed=-5"], "train.seed: must be between 0 and 2**32 - 1 (4294967295), got -5"),
        ("train: {max_updates: 5}\n", ["train.seed=4294967296"], "train.seed: must be between 0 and 2**32 - 1"),
    ],
)
def test_bad_configuration_names_the_key(copy_run, tmp_path, capsys, yaml_text, sets, message):
    d = copy_run
    (tmp_path / "bad.yaml").write_text(yaml_text)
    write_lines(tmp_path / "tgt.vocab", ["x"])
    args = train_args(d, out=str(tmp_path / "out"), config=str(tmp_path / "bad.yaml"))
    args[args.index("--tgt-vocab") + 1] = str(tmp_path / "tgt.vocab")
    for item in sets:
        args += ["--set", item]
    assert cli.train_main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.heavy
def test_sigterm_exits_for_requeue_and_resume_matches_uninterrupted(copy_run, tmp_path):
    d = copy_run
    (tmp_path / "exp.yaml").write_text(EXPERIMENT.replace("max_updates: 300", "max_updates: 100000")
                                       .replace("log_interval: 100", "log_interval: 1"))
    args = train_args(d, out=str(tmp_path / "killed"), config=str(tmp_path / "exp.yaml"))
    proc = subprocess.Popen([sys.executable, "-m", "nmtmodels.cli", "train", *args], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if line.startswith("update 3/100000 |"):
                proc.send_signal(signal.SIGTERM)
                break
        rest = proc.stderr.read()
        assert proc.wait(timeout=60) == EXIT_REQUEUE
    finally:
        proc.kill()
    assert "stopped by signal" in rest
    stopped_at = load_checkpoint(tmp_path / "killed" / "checkpoint_last.pt")["update"]
    assert 3 <= stopped_at < 100000
    finish = ["--set", f"train.max_updates={stopped_at + 5}"]
    assert cli.train_main(args + finish) == 0
    straight = train_args(d, out=str(tmp_path / "straight"), config=str(tmp_path / "exp.yaml"))
    assert cli.train_main(straight + finish) == 0
    resumed = load_checkpoint(tmp_path / "killed" / "checkpoint_last.pt")
    reference = load_checkpoint(tmp_path / "straight" / "checkpoint_last.pt")
    assert resumed["update"] == reference["update"] == stopped_at + 5
    assert all(torch.equal(resumed["model"][k], reference["model"][k]) for k in reference["model"])


@pytest.mark.heavy
def test_rerun_with_other_settings_fails_or_starts_over_on_request(copy_run, tmp_path, capsys):
    args = train_args(copy_run, out=str(tmp_path / "out")) + ["--set", "train.max_updates=3"]
    assert cli.train_main(args) == 0
    capsys.readouterr()
    assert cli.train_main(args + ["--set", "train.lr=0.001"]) == 2
    assert "train.lr was 0.005 and is 0.001 now" in capsys.readouterr().err
    assert yaml.safe_load((tmp_path / "out" / "config.resolved.yaml").read_text())["train"]["lr"] == 0.005  # the run on disk
    assert cli.train_main(args + ["--set", "train.lr=0.001", "--restart-on-change"]) == 0
    assert "starting over:" in capsys.readouterr().err
    assert load_checkpoint(tmp_path / "out" / "checkpoint_last.pt")["train_config"]["lr"] == 0.001
    initialised = args + ["--set", "train.lr=0.001", "--init-from", str(copy_run / "out" / "checkpoint_last.pt")]
    assert cli.train_main(initialised) == 2
    assert "the initial parameters (--init-from) differ" in capsys.readouterr().err
    assert cli.train_main(initialised + ["--restart-on-change"]) == 0
    assert cli.train_main(initialised + ["--set", "train.max_updates=4"]) == 0  # the same run: resumed
    assert "resumed from" in capsys.readouterr().err


def test_module_entry_points_list_commands(monkeypatch, capsys):
    assert cli.main([]) == 2
    monkeypatch.setattr(sys, "argv", ["nmtmodels"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("nmtmodels", run_name="__main__")
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert all(f"  {name} " in err for name in ("train", "translate", "average", "vocab")), err


@pytest.mark.heavy
def test_validation_bleu_equals_sacrebleu_on_the_translations(copy_run, capsys, tmp_path):
    d = copy_run
    write_lines(tmp_path / "dev.src", (d / "test.src").read_text().splitlines()[:40])
    refs = write_lines(tmp_path / "dev.tgt", (d / "test.tgt").read_text().splitlines()[:40]).read_text().splitlines()
    rc, out, _ = translate(["--checkpoint", str(d / "out/checkpoint_last.pt"), "--input", str(tmp_path / "dev.src"),
                            "--beam", "1"], capsys)
    assert rc == 0
    hyps = out.splitlines()
    unbpe = lambda lines: [line.replace("@@ ", "").removesuffix("@@") for line in lines]
    expected = sacrebleu.corpus_bleu(unbpe(hyps), [unbpe(refs)], tokenize="none", smooth_method="none", force=True).score
    assert 50 < expected < 100
    model, src_vocab, tgt_vocab, _ = load_model_from_checkpoint(str(d / "out/checkpoint_last.pt"), torch.device("cpu"))
    valid = ParallelDataset.from_files(tmp_path / "dev.src", tmp_path / "dev.tgt", src_vocab, tgt_vocab)
    bleu_fn = make_bleu_fn(valid, tgt_vocab, DecodeConfig(beam=1), tokenized_references=refs, max_tokens=300)
    assert bleu_fn(model) == pytest.approx(expected)
    raw_refs = [postprocess(line, "en") for line in refs]
    raw_bleu = make_bleu_fn(valid, tgt_vocab, DecodeConfig(beam=1), tokenized_references=refs, references=[raw_refs],
                            max_tokens=300)(model)
    detok_hyps = [postprocess(h, "en") for h in hyps]
    assert raw_bleu == pytest.approx(sacrebleu.corpus_bleu(detok_hyps, [raw_refs]).score)
    # a second reference stream (every sentence reversed) counts as a second reference
    reversed_refs = [" ".join(reversed(line.split())) for line in raw_refs]
    two_refs = make_bleu_fn(valid, tgt_vocab, DecodeConfig(beam=1), tokenized_references=refs,
                            references=[reversed_refs, raw_refs], max_tokens=300)(model)
    assert two_refs == pytest.approx(sacrebleu.corpus_bleu(detok_hyps, [reversed_refs, raw_refs]).score)
    assert two_refs != pytest.approx(sacrebleu.corpus_bleu(detok_hyps, [reversed_refs]).score)
    with pytest.raises(ValueError, match=r"the tokenised reference and the 2 raw reference streams have \[40, 40, 39\]"):
        make_bleu_fn(valid, tgt_vocab, DecodeConfig(beam=1), tokenized_references=refs, references=[raw_refs, raw_refs[:39]])


@pytest.mark.heavy
def test_training_with_validation_bleu(copy_run, tmp_path):
    d = copy_run
    write_lines(tmp_path / "valid.src", (d / "test.src").read_text().splitlines()[:20])
    write_lines(tmp_path / "valid.tgt", (d / "test.tgt").read_text().splitlines()[:20])
    (tmp_path / "exp.yaml").write_text(EXPERIMENT.replace("max_updates: 300", "max_updates: 6")
                                       .replace("keep_last: 3", "keep_last: 3, valid_bleu: true, best_metric: bleu, "
                                                                 "save_interval_updates: 3"))
    args = train_args(d, out=str(tmp_path / "out"), config=str(tmp_path / "exp.yaml"))
    args += ["--valid-src", str(tmp_path / "valid.src"), "--valid-tgt", str(tmp_path / "valid.tgt"),
             "--valid-ref", str(tmp_path / "valid.tgt"), "--set", "decode.beam=1"]
    assert cli.train_main(args) == 0
    rows = list(csv.DictReader((tmp_path / "out" / "metrics.csv").read_text().splitlines()))
    bleu = {int(r["update"]): float(r["valid_bleu"]) for r in rows if r["valid_bleu"]}
    assert set(bleu) == {3, 6}
    best = load_checkpoint(tmp_path / "out" / "checkpoint_best.pt")
    assert best["metrics"]["valid_bleu"] == pytest.approx(max(bleu.values()), abs=1e-3)
    assert best["decode_config"]["beam"] == 1


def test_extra_input_options_are_checked_against_the_family():
    class LatticeLike(torch.nn.Module):
        extra_inputs: ClassVar[dict[str, int]] = {"starts": -1, "ends": -1}

    parsed = parse_extras(["starts=tr.s:va.s"], ["ends=tr.e:va.e"], 2, "--extra")
    assert parsed == {"starts": (False, ["tr.s", "va.s"]), "ends": (True, ["tr.e", "va.e"])}
    assert check_extras(LatticeLike(), parsed, "lattice", "--extra") == {"starts": -1, "ends": -1}
    with pytest.raises(ConfigError, match="needs extra inputs ends"):
        check_extras(LatticeLike(), {"starts": parsed["starts"]}, "lattice", "--extra")
    with pytest.raises(ConfigError, match="takes no extra input 'spans' \\(it takes: ends, starts\\)"):
        check_extras(LatticeLike(), {**parsed, "spans": (False, ["x", "y"])}, "lattice", "--extra")
    with pytest.raises(ConfigError, match="expected NAME=TRAINFILE:VALIDFILE"):
        parse_extras(["starts=only_one"], [], 2, "--extra")
    with pytest.raises(ConfigError, match="given twice"):
        parse_extras(["a=x"], ["a=y"], 1, "--extra")



@pytest.mark.heavy
def test_high_unknown_token_rate_on_stdin_is_one_warning(copy_run, capsys, monkeypatch):
    """Interactive input (another language, say): one warning once 100 tokens are read."""
    import io

    args = ["--interactive", "--checkpoint", str(copy_run / "out/checkpoint_last.pt")]
    monkeypatch.setattr(sys, "stdin", io.StringIO("a b Zürich c d e f g h i j\n" * 40))  # 1 in 11 unknown
    rc, out, err = translate(args, capsys)
    assert rc == 0 and len(out.splitlines()) == 40 and "vocabulary" not in err
    monkeypatch.setattr(sys, "stdin", io.StringIO("Zürich München a\n" * 40))  # 2 of 3 unknown
    rc, out, err = translate(args, capsys)
    assert rc == 0 and len(out.splitlines()) == 40
    warnings = [line for line in err.splitlines() if "vocabulary" in line]
    assert warnings == [("nmt-translate: warning: <stdin>: 66.7% of the source tokens (68 of 102) are not in the "
                         "checkpoint's vocabulary; is the input tokenised and BPE-encoded like the training source?")]


# ---------------------------------------------------------------------- faults
def test_set_reads_exponent_numbers_as_floats(tmp_path):
    (tmp_path / "exp.yaml").write_text("train: {max_updates: 5, lr: 1e-3, warmup_init_lr: 1.0e-7}\n")
    _, train, _ = load_experiment(str(tmp_path / "exp.yaml"), ["train.lr=1e9"])
    assert train.lr == 1e9 and train.warmup_init_lr == 1e-7
    _, train, _ = load_experiment(str(tmp_path / "exp.yaml"), ["train.adam_eps=1e-8", "train.clip_norm=2"])
    assert (train.lr, train.adam_eps, train.clip_norm) == (1e-3, 1e-8, 2.0)
    assert apply_overrides({}, ["train.seed=7", "train.amp=bf16", "train.adam_betas=[0.9, 9e-1]"]) == {
        "train": {"seed": 7, "amp": "bf16", "adam_betas": [0.9, 0.9]}}


@pytest.mark.parametrize("train, message", [
    ('lr: "1e-3 "', "train.lr: expected float, got str ('1e-3 '); a string is not a number: write 1e-3 without quotes or spaces"),
    ("max_updates: 1e3", "train.max_updates: expected int, got float (1000.0); write 1000"),
])
def test_a_number_in_quotes_or_a_float_for_an_int_is_one_line_naming_the_key(tmp_path, capsys, train, message):
    """The number policy of nmtmodels.config; the workflow gives the same message (tests/test_dag.py)."""
    (tmp_path / "exp.yaml").write_text(f"train: {{max_updates: 5, {train}}}\n")
    args = train_args(tmp_path, out=str(tmp_path / "out"))  # no data: the config is read first
    assert cli.train_main(args) == 2
    assert capsys.readouterr().err.splitlines() == [f"nmt-train: error: {message}"]


@pytest.mark.parametrize("where, message", [
    ("ro/out.txt", "--output {out}: cannot write in {tmp}/ro ("),
    ("ro/new/out.txt", "--output {out}: cannot write in {tmp}/ro ("),
    ("file.txt/out.txt", "--output {out}: {tmp}/file.txt is not a directory"),
    ("ro", "--output {out}: is a directory"),
])
def test_an_output_that_cannot_be_written_fails_before_decoding(tmp_path, capsys, monkeypatch, where, message):
    """Before, nmt-translate loaded the model, translated every line, then failed naming its
    temporary file.  Now nothing is loaded: the checkpoint here does not even exist."""
    from nmtmodels.decoding.translator import Translator

    def never(*args, **kwargs):
        raise AssertionError("the checkpoint was loaded before --output was checked")

    monkeypatch.setattr(Translator, "from_checkpoint", never)
    (tmp_path / "in.txt").write_text("a b c\n")
    (tmp_path / "file.txt").write_text("")
    out = tmp_path / where
    with read_only(tmp_path / "ro"):
        rc, _, err = translate(["--checkpoint", str(tmp_path / "none.pt"), "--input", str(tmp_path / "in.txt"),
                                "--output", str(out)], capsys)
    assert rc == 2
    assert len(err.splitlines()) == 1 and err.startswith("nmt-translate: error: " + message.format(out=out, tmp=tmp_path)), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "in.txt", "ro"] and not any((tmp_path / "ro").iterdir())


@pytest.mark.heavy
def test_training_that_diverges_fails_in_one_line(copy_run, tmp_path, capsys):
    args = train_args(copy_run, out=str(tmp_path / "out")) + ["--set", "train.lr=1e9", "--set", "train.warmup_updates=1"]
    assert cli.train_main(args) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("nmt-train: error: training diverged: 11 consecutive updates after update ")
    assert not (tmp_path / "out" / "checkpoint_best.pt").exists()


@pytest.mark.heavy
def test_training_that_diverges_with_on_divergence_stop_ends_in_one_line_and_says_so_on_translation(
        copy_run, tmp_path, capsys, monkeypatch):
    """What the workflow's jobs do (NMT_TRAIN_ON_DIVERGENCE=stop, the Snakefile): exit status 0,
    one line, the model at the stop as checkpoint_best.pt; nmt-translate warns on every use of it.
    A value of the variable that is neither fail nor stop is one line and exit status 2."""
    monkeypatch.setenv("NMT_TRAIN_ON_DIVERGENCE", "stop")
    out = tmp_path / "out"
    args = train_args(copy_run, out=str(out)) + ["--set", "train.lr=100", "--set", "train.log_interval=5"]
    assert cli.train_main(args) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "diverged" in line] == [err[-1]]
    assert err[-1].startswith("stopped: training diverged: the training loss per target token is ")
    assert f"{out / 'checkpoint_best.pt'} is the model at the stop (update " in err[-1]
    rc, _, err = translate(["--checkpoint", str(out / "checkpoint_best.pt"), "--input", str(copy_run / "test.src"),
                            "--output", str(tmp_path / "hyp.txt"), "--src-vocab", str(copy_run / "vocab.txt")], capsys)
    assert rc == 0 and f"nmt-translate: warning: {out / 'checkpoint_best.pt'}: its training run diverged and was stopped " \
                       "(the training loss per target token is " in err
    monkeypatch.setenv("NMT_TRAIN_ON_DIVERGENCE", "Stop")
    with pytest.raises(SystemExit) as caught:
        cli.train_main(args)
    assert caught.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == ("nmt-train: error: NMT_TRAIN_ON_DIVERGENCE='Stop' in the "
                                                        "environment: expected fail or stop")


@pytest.mark.heavy
def test_full_disk_while_saving_is_one_line_naming_the_file(copy_run, tmp_path, capsys, monkeypatch):
    from nmtmodels import checkpoint as ckpt
    from nmtmodels.tests.test_checkpoint import FullDisk

    monkeypatch.setattr(ckpt, "open", lambda path, mode="r": FullDisk(open(path, mode), 10_000),
                        raising=False)
    out = tmp_path / "out"
    assert cli.train_main(train_args(copy_run, out=str(out)) + ["--set", "train.max_updates=2"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1
    assert errors[0].startswith(f"nmt-train: error: {out / 'checkpoint_last.pt'}: cannot write checkpoint: "
                                "[Errno 28] No space left on device (")
    assert errors[0].endswith(f" free in {out})")
    assert not list(out.glob("*.pt")) and not list(out.glob(".*.tmp"))


def in_small_tmpfs(directory: Path, kib: int, command: str) -> list[str]:
    """Run ``command`` with a ``kib`` KiB tmpfs at ``directory``, in a private user and mount
    namespace (``unshare -rm``: the mount disappears with the command); skip where that is
    not allowed."""
    directory.mkdir()
    mount = f"mount -t tmpfs -o size={kib}k tmpfs {directory}"
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", mount], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a user namespace: {probe.stderr.decode(errors='replace').strip()}")
    return ["unshare", "-rm", "sh", "-c", f"{mount} && {command}"]


@pytest.mark.heavy
def test_a_full_tmpfs_while_saving_is_one_line_and_leaves_no_partial_file(copy_run, tmp_path):
    """A real full file system (no fault injected into Python): torch.save fails midway
    through the first checkpoint; the CLI names the file and the free space, no traceback."""
    out = tmp_path / "out"
    train = " ".join(map(str, [sys.executable, "-m", "nmtmodels.cli", "train", *train_args(copy_run, out=str(out)),
                               "--set", "train.max_updates=2"]))
    command = in_small_tmpfs(out, 256, f"{train}; rc=$?; ls -a {out}; exit $rc")
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert (copy_run / "out" / "checkpoint_last.pt").stat().st_size > 256 * 1024  # so this one cannot fit
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "inline_container" not in proc.stderr
    error = proc.stderr.splitlines()[-1]
    assert error.startswith(f"nmt-train: error: {out / 'checkpoint_last.pt'}: cannot write checkpoint: "
                            "[Errno 28] No space left on device (")
    assert re.search(rf"\(\d+(\.\d+)? (B|KiB) free in {re.escape(str(out))}\)$", error), error
    left = set(proc.stdout.split()) - {".", ".."}
    assert not {name for name in left if name.endswith((".pt", ".tmp"))}, left


@pytest.mark.heavy
def test_second_trainer_on_a_directory_is_refused_in_one_line(copy_run, tmp_path, capsys):
    import fcntl

    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".nmt-train.lock", "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert cli.train_main(train_args(copy_run, out=str(out)) + ["--set", "train.max_updates=2"]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"nmt-train: error: {out}: another nmt-train is training")


@pytest.mark.heavy
def test_a_trainer_told_to_wait_adopts_the_run_of_the_one_before(copy_run, tmp_path, capsys, monkeypatch):
    """A workflow rerun after Snakemake was killed while its training ran on: the new job waits
    for the old trainer (here: a held lock, released after a while) and then resumes from its
    checkpoints, ending where an uninterrupted run ends."""
    import fcntl
    import threading

    out = tmp_path / "out"
    args = train_args(copy_run, out=str(out)) + ["--set", "train.max_updates=4", "--set", "train.log_interval=1",
                                                  "--set", "train.save_interval_updates=2"]
    assert cli.train_main(args) == 0  # the "orphan" finished its run
    reference = load_checkpoint(out / "checkpoint_last.pt")["model"]
    capsys.readouterr()
    holder = open(out / ".nmt-train.lock", "w")
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    released = threading.Timer(1.0, holder.close)  # closing releases the lock
    released.start()
    monkeypatch.setenv("NMT_TRAIN_WAIT_FOR_LOCK", "1")  # as the Snakefile sets it for every job
    best = (out / "checkpoint_best.pt").read_bytes()
    (out / "checkpoint_best.pt").unlink()  # Snakemake deletes a job's outputs before it starts the job
    (out / "metrics.csv").unlink()
    try:
        assert cli.train_main(args) == 0
    finally:
        released.join()
    err = capsys.readouterr().err
    assert "is locked), e.g. one left running by a killed workflow run; waiting for it to end" in err
    assert "the other trainer ended; resuming from its checkpoints" in err
    resumed = load_checkpoint(out / "checkpoint_last.pt")["model"]
    assert all(torch.equal(resumed[name], reference[name]) for name in reference)
    assert load_checkpoint(out / "checkpoint_best.pt")["model"].keys() == reference.keys()
    assert (out / "checkpoint_best.pt").read_bytes() == best
    assert len((out / "metrics.csv").read_text().splitlines()) > 1


@pytest.mark.heavy
def test_checkpoint_with_nan_parameters_is_refused(copy_run, capsys, tmp_path):
    state = load_checkpoint(copy_run / "out/checkpoint_last.pt")
    name = next(iter(state["model"]))
    state["model"][name] = state["model"][name].clone().fill_(math.nan)
    save_checkpoint(tmp_path / "nan.pt", {k: v for k, v in state.items() if k not in ("format", "version")})
    rc, out, err = translate(["--checkpoint", str(tmp_path / "nan.pt"), "--input", str(copy_run / "test.src")], capsys)
    assert rc == 2 and out == ""
    assert f"nan.pt: 1 parameter tensors hold NaN or inf (first: {name}); the training run diverged" in err


@pytest.mark.heavy
def test_sentences_whose_beams_never_finish_still_get_a_line(copy_run, capsys, tmp_path):
    """Finite but huge output weights overflow to inf logits, so every log-probability is NaN
    and no beam can end: every input line still gets exactly one output line, with a warning."""
    state = load_checkpoint(copy_run / "out/checkpoint_last.pt")
    for name, tensor in state["model"].items():
        if tensor.is_floating_point() and tensor.ndim == 2:
            state["model"][name] = tensor * 3e38 / tensor.abs().max().clamp(min=1e-30)
    save_checkpoint(tmp_path / "huge.pt", {k: v for k, v in state.items() if k not in ("format", "version")})
    source = copy_run / "test.src"
    count = len(source.read_text().splitlines())
    for extra in ([], ["--beam", "1"], ["--nbest", "2"]):
        rc, out, err = translate(["--checkpoint", str(tmp_path / "huge.pt"), "--input", str(source), *extra], capsys)
        assert rc == 0
        assert len(out.splitlines()) == count
        if "--nbest" in extra:
            assert [line.split(" ||| ")[0] for line in out.splitlines()] == [str(i) for i in range(count)]
        if "--beam" not in extra:  # greedy search always ends with EOS at the limit
            assert f"test.src: {count} sentence(s) (line 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...) had no hypothesis" in err


@pytest.mark.heavy
def test_high_unknown_token_rate_is_a_warning(copy_run, capsys, tmp_path):
    write_lines(tmp_path / "raw.src", ["a b Zürich c", "München x y d"])  # 4 of 8 tokens unknown
    rc, out, err = translate(["--checkpoint", str(copy_run / "out/checkpoint_last.pt"), "--input",
                              str(tmp_path / "raw.src")], capsys)
    assert rc == 0 and len(out.splitlines()) == 2
    assert "raw.src: 50.0% of the source tokens (4 of 8) are not in the checkpoint's vocabulary" in err
    rc, _, err = translate(["--checkpoint", str(copy_run / "out/checkpoint_last.pt"), "--input",
                            str(copy_run / "test.src")], capsys)
    assert rc == 0 and "vocabulary" not in err


@pytest.mark.parametrize("args, message", [
    (["--postprocess", "de"], "--postprocess goes with --pretokenized"),
    (["--interactive", "--input", "x.txt"], "--interactive reads standard input; it does not go with --input"),
])
def test_translate_options_that_do_not_go_together_are_usage_errors(capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        cli.translate_main(["--checkpoint", "model", *args])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_options_are_not_abbreviated(capsys):
    """--be is not taken for --beam (nor any prefix for the option it starts): a new option
    cannot change what an old command line means."""
    with pytest.raises(SystemExit) as exit_info:
        cli.translate_main(["--checkpoint", "model", "--be", "5"])
    assert exit_info.value.code == 2 and "unrecognized arguments: --be 5" in capsys.readouterr().err
    proc = subprocess.run([sys.executable, "-m", "nmtmodels.cli", "translate", "--checkpoint", "model", "--be", "5"],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "unrecognized arguments: --be 5" in proc.stderr


def test_a_misspelt_option_gets_the_nearest_one(capsys):
    for typo, meant in (("--beem", "--beam"), ("--outptu", "--output"), ("--max-len-aa", "--max-len-a")):
        with pytest.raises(SystemExit) as exit_info:
            cli.translate_main(["--checkpoint", "model", typo, "5"])
        err = capsys.readouterr().err.strip()
        assert exit_info.value.code == 2 and err.endswith(f"unrecognized arguments: {typo} 5 (did you mean {meant}?)"), err
    with pytest.raises(SystemExit):
        cli.translate_main(["--checkpoint", "model", "--zzzzzz"])
    assert "did you mean" not in capsys.readouterr().err  # nothing near: no guess


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_no_command_takes_an_abbreviated_option(command, capsys):
    """Every parser comes from nmtmodels.cli.common.make_parser: --hel is not --help (which
    would print the help on stdout and exit 0)."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--hel"])
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == "" and "error:" in captured.err


@pytest.mark.heavy
def test_a_device_torch_cannot_use_is_one_line(copy_run, capsys):
    """``--device cuda`` on a CPU-only torch (or without a visible GPU) and a misspelt device:
    exit 2 and one line, for nmt-translate and nmt-train (before: a 43-line traceback)."""
    bad = ["gpu"] + ([] if torch.cuda.is_available() else ["cuda"])
    for device in bad:
        rc, out, err = translate(["--checkpoint", str(copy_run / "out/checkpoint_last.pt"), "--input", str(copy_run / "test.src"),
                                  "--device", device], capsys)
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"nmt-translate: error: device '{device}': "), err
        assert cli.train_main(train_args(copy_run, out="other") + ["--device", device]) == 2
        err = capsys.readouterr().err
        assert err.strip().splitlines()[-1].startswith(f"nmt-train: error: device '{device}': "), err


# ---------------------------------------------------------------------- --help
def test_every_translate_option_says_what_it_does():
    from nmtmodels.cli.translate_args import build_parser

    silent = [action.option_strings[0] for action in build_parser()._actions if not action.help]
    assert silent == []


def test_every_translate_search_option_states_its_default():
    """The options that override the checkpoint's decode settings say what applies without them."""
    from nmtmodels.cli.translate_args import build_parser

    search = {"--beam", "--lenpen", "--max-len-a", "--max-len-b", "--min-len", "--coverage-penalty", "--max-len-ratio",
              "--nbest", "--early-stop", "--compile"}
    helps = {action.option_strings[0]: action.help for action in build_parser()._actions}
    assert search <= set(helps)
    assert [option for option in sorted(search) if "default" not in helps[option]] == []


def test_translate_help_loads_no_torch_and_no_tokeniser():
    # what makes --help slow is importing torch (seconds) and the tokenisers: it must import neither
    probe = ("import sys\nfrom nmtmodels.cli import translate\ntry:\n    translate.main(['--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('torch', 'sacremoses', 'jieba', 'sentencepiece') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    assert "--checkpoint" in out.stdout and out.stdout.strip().splitlines()[-1] == "[]"



@pytest.mark.parametrize(("command", "argvs"), [
    ("package", [["--help"], [], ["--checkpoint", "best.pt", "--settings", '{"source": 1}', "--out-dir", "model"]]),
    ("export", [["--help"], [], ["--checkpoint", "best.pt", "--output-dir", "ct2", "--quantization", "int3"]]),
])
def test_package_and_export_help_and_argument_errors_load_no_torch(command, argvs):
    # nmt-package --help took 4.5 to 12.6 s when the command imported the package writer (torch) at the top
    probe = (f"import sys\nfrom nmtmodels.cli import {command}\n"
             f"for argv in {argvs!r}:\n"
             f"    try:\n        code = {command}.main(argv)\n    except SystemExit as exc:\n        code = exc.code\n"
             "    print(code, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    assert f"usage: nmt-{command}" in out.stdout
    assert out.stdout.strip().splitlines()[-len(argvs):] == ["0 False"] + ["2 False"] * (len(argvs) - 1), out.stdout + out.stderr

def test_the_package_help_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "nmtmodels", "--help"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert all(re.search(rf"^  {name} +\S", out.stdout, re.M) for name in cli.COMMANDS), out.stdout
    bad = subprocess.run([sys.executable, "-m", "nmtmodels", "trian"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown command 'trian'" in bad.stderr and "  train " in bad.stderr
