"""Sign test (against a brute-force recomputation and the binomial definition), paired
tests (equal to the sacrebleu command line), the comparison CLI."""
from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU, CHRF

from workflow_scripts.evaluation import significance as sig

WORDS = [f"w{i}" for i in range(40)] + [".", ",", "the", "a"]


def noisy(sentence: str, rng: random.Random, keep: float) -> str:
    """A corrupted copy: words replaced, dropped or added at random."""
    out = []
    for word in sentence.split():
        roll = rng.random()
        if roll < keep:
            out.append(word)
        elif roll < keep + (1 - keep) / 2:
            out.append(rng.choice(WORDS))
        if rng.random() < 0.05:
            out.append(rng.choice(WORDS))
    return " ".join(out)


def corpus(n: int, seed: int, refs: int = 1) -> tuple[list[str], list[str], list[list[str]]]:
    """(system, baseline, reference streams) of n synthetic sentences."""
    rng = random.Random(seed)
    first = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 18))) for _ in range(n)]
    streams = [first] + [[noisy(s, rng, 0.8) for s in first] for _ in range(refs - 1)]
    system = [noisy(s, rng, 0.7) for s in first]
    baseline = [noisy(s, rng, 0.7) for s in first]
    for i in range(0, n, 7):  # some identical outputs: ties by construction
        system[i] = baseline[i]
    return system, baseline, streams


def fresh_metric(name: str):
    """An independent metric object (no reference cache), configured as the module's."""
    return {"bleu": BLEU(tokenize="13a"), "chrf": CHRF(), "chrf_pp": CHRF(word_order=2),
            "tokenized_bleu": BLEU(tokenize="none", force=True, smooth_method="none")}[name]


def brute_force_sign_counts(name: str, system, baseline, refs) -> tuple[int, int, int]:
    """Collins et al. (2005) by definition: rescore the whole corpus for every replacement."""
    metric = fresh_metric(name)
    base_score = metric.corpus_score(baseline, refs).score
    better = worse = 0
    for i in range(len(system)):
        score = metric.corpus_score(baseline[:i] + [system[i]] + baseline[i + 1 :], refs).score
        better += score > base_score
        worse += score < base_score
    return better, worse, len(system) - better - worse


# ----------------------------------------------------------------------------- binomial
@pytest.mark.parametrize(
    ("successes", "trials", "expected"),
    [
        (0, 0, 1.0),
        (0, 1, 1.0),  # 2 * 1/2
        (0, 5, 0.0625),  # 2 * 1/32
        (5, 5, 0.0625),
        (2, 10, 0.109375),  # 2 * (1 + 10 + 45) / 1024
        (8, 10, 0.109375),
        (2, 4, 1.0),  # 2 * 11/16 capped
        (1, 20, 42 / 2**20),  # 2 * (1 + 20) / 2^20
    ],
)
def test_binomial_p_hand_computed(successes, trials, expected):
    assert sig.binomial_two_sided_p(successes, trials) == expected


def test_binomial_p_is_the_exact_two_sided_definition():
    """Sum of the probabilities of every outcome no more likely than the observed one."""
    for n in range(41):
        probabilities = [Fraction(math.comb(n, j), 2**n) for j in range(n + 1)]
        for k in range(n + 1):
            exact = sum(p for p in probabilities if p <= probabilities[k])
            assert sig.binomial_two_sided_p(k, n) == float(min(Fraction(1), exact)), (k, n)


def test_binomial_p_large_n_matches_math_comb():
    n, k = 1201, 583
    tail = sum(math.comb(n, j) for j in range(k + 1))
    assert sig.binomial_two_sided_p(k, n) == min(1.0, 2 * tail / 2**n)
    with pytest.raises(ValueError):
        sig.binomial_two_sided_p(4, 3)


# ----------------------------------------------------------------------------- sign test
@pytest.mark.parametrize(("name", "refs"), [("bleu", 1), ("bleu", 2), ("chrf", 1), ("chrf_pp", 2), ("tokenized_bleu", 1)])
def test_sign_test_matches_brute_force(name, refs):
    system, baseline, streams = corpus(40, seed=11 + refs, refs=refs)
    metric = sig.make_metric(name, "en", streams)
    result = sig.sign_test(metric, sig.sentence_statistics(metric, system), sig.sentence_statistics(metric, baseline))
    better, worse, ties = brute_force_sign_counts(name, system, baseline, streams)
    assert (result.better, result.worse, result.ties) == (better, worse, ties)
    assert ties >= len(range(0, 40, 7))  # identical outputs are ties
    assert result.p_value == sig.binomial_two_sided_p(better, better + worse)
    assert result.system_score == fresh_metric(name).corpus_score(system, streams).score
    assert result.baseline_score == fresh_metric(name).corpus_score(baseline, streams).score


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 12))
def test_sign_test_matches_brute_force_on_random_corpora(seed, n):
    system, baseline, streams = corpus(n, seed=seed, refs=2)
    metric = sig.make_metric("bleu", "en", streams)
    result = sig.sign_test(metric, sig.sentence_statistics(metric, system), sig.sentence_statistics(metric, baseline))
    assert (result.better, result.worse, result.ties) == brute_force_sign_counts("bleu", system, baseline, streams)


def disagreeing_corpus() -> tuple[list[str], list[str], list[list[str]]]:
    """(system, baseline, reference streams) on which the sign test and corpus BLEU disagree.

    Ten 8-word references.  The baseline gets the first 6 words of each right; the system
    the first 7 of sentences 0-8 (each swapped in raises the baseline's BLEU: one more
    match of every order, same length) but outputs 200 unmatched words for sentence 9,
    which drags its corpus n-gram precisions down: 9 sentences better, 1 worse, corpus
    BLEU far lower."""
    refs = [[f"r{i}w{k}" for k in range(8)] for i in range(10)]
    baseline = [" ".join(ref[:6] + ["x", "y"]) for ref in refs]
    system = [" ".join(ref[:7] + ["x"]) for ref in refs[:9]] + [" ".join(["z"] * 200)]
    return system, baseline, [[" ".join(ref) for ref in refs]]


@pytest.mark.parametrize("name", ["bleu", "tokenized_bleu"])
def test_sign_test_and_corpus_bleu_can_disagree(name):
    system, baseline, streams = disagreeing_corpus()
    entry = sig.compare("en", system, baseline, streams, tokenized=(system, baseline, streams), metrics=[name],
                        tests=["sign"])["metrics"][name]
    sacre = fresh_metric(name)
    assert entry["system_score"] == sacre.corpus_score(system, streams).score
    assert entry["baseline_score"] == sacre.corpus_score(baseline, streams).score
    assert entry["system_score"] < entry["baseline_score"] - 40  # corpus BLEU: the system is much worse
    sign = entry["sign"]
    assert (sign["better"], sign["worse"], sign["ties"]) == (9, 1, 0) == brute_force_sign_counts(name, system, baseline, streams)
    assert sign["p_value"] == 2 * (1 + 10) / 2**10  # P(X <= 1), X ~ Bin(10, 1/2), two-sided
    if name == "tokenized_bleu":  # by hand: matches / n-grams of orders 1-4, brevity penalty 1
        assert entry["baseline_score"] == pytest.approx(100 * (60 / 80 * 50 / 70 * 40 / 60 * 30 / 50) ** 0.25)
        assert entry["system_score"] == pytest.approx(100 * (63 / 272 * 54 / 262 * 45 / 252 * 36 / 242) ** 0.25)


def test_sign_test_ignores_the_brevity_penalty():
    """Ten 10-word references.  The baseline gets the first 5 words right and pads with 5 wrong
    ones; the system outputs the 5 right words alone.  Swapping in one system sentence drops 5
    wrong words from 100 (precision up, brevity penalty barely moved): every sentence counts
    "better".  But the system as a whole is half the reference length: BP = exp(1 - 2), which
    its perfect precisions do not make up for.  No marker may claim it better."""
    from workflow_scripts.evaluation import markers

    refs = [[f"r{i}w{k}" for k in range(10)] for i in range(10)]
    baseline = [" ".join(ref[:5] + [f"x{k}" for k in range(5)]) for ref in refs]
    system = [" ".join(ref[:5]) for ref in refs]
    streams = [[" ".join(ref) for ref in refs]]
    entry = sig.compare("en", system, baseline, streams, tokenized=(system, baseline, streams), metrics=["tokenized_bleu"],
                        tests=["sign"])["metrics"]["tokenized_bleu"]
    sign = entry["sign"]
    assert (sign["better"], sign["worse"], sign["ties"], sign["p_value"]) == (10, 0, 0, 2 / 2**10)
    own = fresh_metric("tokenized_bleu").corpus_score(system, streams)
    assert (own.sys_len, own.ref_len, own.ratio) == (50, 100, 0.5) and own.bp == pytest.approx(math.exp(-1))
    # by hand: the system's precisions are all 1, so BLEU = 100 BP; the baseline's are 50/100, 40/90, 30/80, 20/70
    assert entry["system_score"] == pytest.approx(100 * math.exp(-1))
    assert entry["baseline_score"] == pytest.approx(100 * (50 / 100 * 40 / 90 * 30 / 80 * 20 / 70) ** 0.25)
    assert entry["system_score"] < entry["baseline_score"]
    row = {"p_sign": sign["p_value"], "sign_better": sign["better"], "sign_worse": sign["worse"],
           "delta": entry["system_score"] - entry["baseline_score"]}
    assert markers.PLUS.mark(row["p_sign"], 10) == "++"  # what the test alone would have printed
    assert markers.significance_mark(row, "sign", markers.PLUS) == ("", "sign test favours the system, score lower")


def test_sign_test_perfect_system_wins_every_changed_sentence():
    _, baseline, streams = corpus(30, seed=3)
    perfect = list(streams[0])
    metric = sig.make_metric("bleu", "en", streams)
    result = sig.sign_test(metric, sig.sentence_statistics(metric, perfect), sig.sentence_statistics(metric, baseline))
    assert result.worse == 0 and result.better > 20
    assert result.p_value == 2 / 2**result.better
    same = sig.sign_test(metric, sig.sentence_statistics(metric, baseline), sig.sentence_statistics(metric, baseline))
    assert (same.better, same.worse, same.ties, same.p_value) == (0, 0, 30, 1.0)


# ----------------------------------------------------------------------------- paired tests
def run_sacrebleu_cli(args: list[str], seed: int) -> str:
    env = {"SACREBLEU_SEED": str(seed), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "sacrebleu", *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("paired")
    system, baseline, streams = corpus(120, seed=5, refs=2)
    paths = {"system": root / "system.txt", "baseline": root / "baseline.txt",
             "ref1": root / "ref1.txt", "ref2": root / "ref2.txt"}
    for key, lines in (("system", system), ("baseline", baseline), ("ref1", streams[0]), ("ref2", streams[1])):
        paths[key].write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return paths


CLI_METRIC_ARGS = {
    "bleu": ["-m", "bleu", "--tokenize", "13a"],
    "tokenized_bleu": ["-m", "bleu", "--tokenize", "none", "--force", "--smooth-method", "none"],
    "chrf": ["-m", "chrf"],
    "chrf_pp": ["-m", "chrf", "--chrf-word-order", "2"],
}


@pytest.mark.parametrize(("test", "name"), [("paired_bs", "bleu"), ("paired_ar", "bleu"), ("paired_bs", "tokenized_bleu"),
                                            ("paired_ar", "tokenized_bleu"), ("paired_ar", "chrf"),
                                            ("paired_ar", "chrf_pp")])  # the CLI's JSON fails on chrF++ bootstrap (float32)
def test_paired_tests_equal_the_sacrebleu_command_line(files, test, name):
    samples, seed = (150, 7) if test == "paired_bs" else (300, 11)
    read = lambda p: p.read_text(encoding="utf-8").splitlines()
    refs = [read(files["ref1"]), read(files["ref2"])]
    ours = sig.paired_test(test, sig.make_metric(name, "en", refs), read(files["system"]), read(files["baseline"]), samples, seed)
    flag = ["--paired-bs", "--paired-bs-n", str(samples)] if test == "paired_bs" else ["--paired-ar", "--paired-ar-n", str(samples)]
    out = run_sacrebleu_cli([str(files["ref1"]), str(files["ref2"]), "-i", str(files["baseline"]), str(files["system"]),
                             *flag, *CLI_METRIC_ARGS[name], "--format", "json"], seed)
    baseline_entry, system_entry = json.loads(out)
    (key,) = [k for k in system_entry if k != "system"]
    assert ours["p_value"] == system_entry[key]["p_value"]
    assert ours["system_score"] == system_entry[key]["score"]
    assert ours["baseline_score"] == baseline_entry[key]["score"]
    if test == "paired_bs":
        assert ours["system_mean"] == system_entry[key]["mean"] and ours["system_ci"] == system_entry[key]["ci"]
    assert f"seed:{seed}" in ours["signature"]


def test_chrf_bootstrap_equals_the_command_line_table(files):
    """sacrebleu 2.6.0 cannot write chrF bootstrap results as JSON (float32), so compare
    with its text table, which prints p to 4 decimals: with 150 resamples p = (c+1)/151,
    so 4 decimals identify c."""
    read = lambda p: p.read_text(encoding="utf-8").splitlines()
    refs = [read(files["ref1"]), read(files["ref2"])]
    ours = sig.paired_test("paired_bs", sig.make_metric("chrf", "en", refs), read(files["system"]), read(files["baseline"]), 150, 7)
    out = run_sacrebleu_cli([str(files["ref1"]), str(files["ref2"]), "-i", str(files["baseline"]), str(files["system"]),
                             "--paired-bs", "--paired-bs-n", "150", "-m", "chrf", "--format", "text", "--no-color"], 7)
    printed = [float(part.split(")")[0]) for part in out.split("(p = ")[1:]]
    assert printed == [round(ours["p_value"], 4)]


def test_paired_test_refuses_seed_zero():
    system, baseline, streams = corpus(5, seed=1)
    with pytest.raises(ValueError, match="seed"):
        sig.paired_test("paired_bs", sig.make_metric("bleu", "en", streams), system, baseline, 10, 0)


# ----------------------------------------------------------------------------- compare / CLI
def test_compare_reports_every_test_and_metric():
    system, baseline, streams = corpus(40, seed=9)
    tok = (system, baseline, streams)
    result = sig.compare("en", system, baseline, streams, tokenized=tok, metrics=["bleu", "chrf", "tokenized_bleu"],
                         bootstrap_samples=50, ar_trials=60, seed=3)
    assert set(result["metrics"]) == {"bleu", "chrf", "tokenized_bleu"}
    for name, entry in result["metrics"].items():
        assert set(entry) >= {"sign", "paired_bs", "paired_ar", "system_score", "baseline_score", "signature"}
        assert entry["system_score"] == fresh_metric(name).corpus_score(system, streams).score
        assert entry["paired_ar"]["system_score"] == entry["system_score"]
    without_tok = sig.compare("en", system, baseline, streams, tests=["sign"])
    assert set(without_tok["metrics"]) == {"bleu"} and set(without_tok["metrics"]["bleu"]) >= {"sign"}
    assert "paired_bs" not in without_tok["metrics"]["bleu"]


def test_a_zero_difference_is_never_significant():
    """Two systems that both score 0 (and two identical systems): every test's p-value is 1,
    where sacrebleu alone reports its smallest p-value for the tie at 0."""
    _, _, streams = corpus(30, seed=4)
    empty = ["zzz"] * 30  # no n-gram of the references: BLEU 0 for both
    other = ["yyy qqq"] * 30
    for system, baseline in ((empty, other), (streams[0], streams[0])):
        result = sig.compare("en", system, baseline, streams, bootstrap_samples=50, ar_trials=60, seed=3)["metrics"]["bleu"]
        assert result["system_score"] == result["baseline_score"]
        assert result["sign"]["p_value"] == 1.0
        assert result["paired_bs"]["p_value"] == result["paired_ar"]["p_value"] == 1.0
        assert result["paired_ar"]["zero_difference"] is True


def test_cli_writes_json(tmp_path, files):
    out = tmp_path / "cmp.json"
    rc = sig.main(["--lang", "en", "--system", str(files["system"]), "--baseline", str(files["baseline"]),
                   "--ref", str(files["ref1"]), "--ref", str(files["ref2"]), "--tok-system", str(files["system"]),
                   "--tok-baseline", str(files["baseline"]), "--tok-ref", str(files["ref1"]), str(files["ref2"]),  # one flag, several files
                   "--bootstrap-samples", "20", "--ar-trials", "20", "--output", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert set(data["metrics"]) == {"bleu", "tokenized_bleu"}
    assert data["metrics"]["tokenized_bleu"]["signature"].startswith("nrefs:2|")
    assert data["metrics"]["bleu"]["signature"].startswith("nrefs:2|")
    read = lambda p: p.read_text(encoding="utf-8").splitlines()
    assert data["metrics"]["tokenized_bleu"]["system_score"] == fresh_metric("tokenized_bleu").corpus_score(
        read(files["system"]), [read(files["ref1"]), read(files["ref2"])]).score


def test_cli_error_names_the_files_and_writes_nothing(tmp_path, files, capsys):
    short = tmp_path / "short.txt"
    short.write_text("only one line\n", encoding="utf-8")
    out = tmp_path / "cmp.json"
    rc = sig.main(["--lang", "en", "--system", str(short), "--baseline", str(files["baseline"]),
                   "--ref", str(files["ref1"]), "--output", str(out)])
    assert rc == 1
    err = capsys.readouterr().err
    assert "1 system but 120 baseline sentences" in err and str(short) in err
    assert not out.exists() and list(tmp_path.iterdir()) == [short]
