"""Significance of a system's difference from a baseline on one test set.

* **Sign test** (Collins, Koehn and Kučerová, 2005, as used by the lattice and reordering
  papers): for each sentence i, replace sentence i of the *baseline* output with the
  system's and recompute corpus BLEU.  A rise counts for the system, a fall against it,
  no change is a tie.  The p-value is the exact **two-sided** binomial test with p = 1/2
  over the non-ties: ``min(1, 2 * P(X <= min(better, worse)))``, X ~ Bin(better + worse, 1/2).
  Corpus BLEU after a replacement comes from sacrebleu's per-sentence sufficient statistics
  (``Metric._extract_corpus_statistics``), extracted once per system: the corpus totals
  minus the baseline sentence's statistics plus the system sentence's, scored with the
  metric's own ``_compute_score_from_stats``.
* **Paired bootstrap resampling** and **paired approximate randomisation**: sacrebleu's
  ``significance.PairedTest``, exactly as ``sacrebleu REF -i BASELINE SYSTEM --paired-bs``
  (``--paired-ar``) runs it, with the seed given here instead of ``SACREBLEU_SEED``.

Metrics: those of :data:`nmtmodels.text.scoring.METRIC_SPECS` that support significance (their
``significance`` flag), made exactly as the score files make them: ``bleu`` (sacreBLEU on
detokenised text with the target language's tokenizer), ``chrf`` (chrF2), ``chrf_pp`` (chrF++),
``tokenized_bleu`` (multi-bleu.perl style: tokenised text, ``tokenize="none"``, no smoothing), ...
A metric with ``tokenized`` set reads the tokenised files.

CLI (writes one JSON file; see :func:`compare`)::

    python -m workflow_scripts.evaluation.significance --lang de --system SYS.hyp --baseline BASE.hyp
        --ref REF [REF2 ...] [--tok-system SYS.tok --tok-baseline BASE.tok --tok-ref TOKREF [TOKREF2 ...]]
        [--metrics bleu tokenized_bleu] [--tests sign paired_bs paired_ar]
        [--bootstrap-samples 1000] [--ar-trials 10000] [--seed 12345] --output OUT.json
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from sacrebleu.metrics.base import Metric
from sacrebleu.significance import PairedTest

from nmtmodels.files import DataError, atomic_output, read_lines
from nmtmodels.text.scoring import metric_spec, significance_metrics
from workflow_scripts.dag.evaluation import EVALUATION_DEFAULTS, TESTS


def make_metric(name: str, lang: str, references: Sequence[Sequence[str]] | None = None) -> Metric:
    """A sacrebleu metric configured as :mod:`nmtmodels.text.scoring` scores ``name``; with
    ``references`` (a list of reference streams) their statistics are cached."""
    if name not in significance_metrics():
        raise ValueError(f"unknown metric '{name}' (known: {', '.join(significance_metrics())})")
    spec = metric_spec(name)
    return spec.make(lang) if references is None else spec.with_references(lang, [list(s) for s in references])


def sentence_statistics(metric: Metric, hypotheses: Sequence[str]) -> np.ndarray:
    """Per-sentence sufficient statistics (rows) against the metric's cached references."""
    return np.asarray(metric._extract_corpus_statistics(hypotheses, None), dtype=np.int64)


def _score(metric: Metric, totals: np.ndarray) -> float:
    return metric._compute_score_from_stats([int(x) for x in totals]).score


# ----------------------------------------------------------------------------- sign test
@dataclass(frozen=True)
class SignTestResult:
    better: int  # sentences whose replacement raises the baseline's corpus score
    worse: int
    ties: int
    p_value: float  # exact two-sided binomial p-value over better + worse
    system_score: float
    baseline_score: float


def binomial_two_sided_p(successes: int, trials: int) -> float:
    """Exact two-sided p-value of ``successes`` in ``trials`` under Bin(trials, 1/2):
    ``min(1, 2 * sum_{k <= m} C(trials, k) / 2**trials)`` with ``m = min(successes,
    trials - successes)``; 1.0 for no trials."""
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must lie in [0, trials], got {successes} of {trials}")
    if trials == 0:
        return 1.0
    # sum_{k<=m} C(n, k) in exact integers: C(n, k+1) = C(n, k) * (n - k) / (k + 1) divides
    # exactly, and is far faster than calling math.comb for every k when n is in the thousands.
    term = tail = 1
    for k in range(min(successes, trials - successes)):
        term = term * (trials - k) // (k + 1)
        tail += term
    return min(1.0, 2 * tail / 2**trials)  # one correctly rounded division of exact integers


def sign_test(metric: Metric, system_stats: np.ndarray, baseline_stats: np.ndarray) -> SignTestResult:
    """Collins et al. (2005) sign test from per-sentence statistics (see the module doc)."""
    if system_stats.shape != baseline_stats.shape:
        raise ValueError(f"statistics of {system_stats.shape[0]} system and {baseline_stats.shape[0]} baseline sentences differ")
    baseline_totals = baseline_stats.sum(axis=0)
    baseline_score = _score(metric, baseline_totals)
    # Identical statistics give the baseline's score (a tie); score only the other sentences.
    changed = (system_stats != baseline_stats).any(axis=1)
    replaced = (baseline_totals - baseline_stats[changed] + system_stats[changed]).tolist()
    better = worse = 0
    for totals in replaced:
        score = metric._compute_score_from_stats(totals).score
        better += score > baseline_score
        worse += score < baseline_score
    ties = len(system_stats) - better - worse
    return SignTestResult(better, worse, ties, binomial_two_sided_p(better, better + worse),
                          _score(metric, system_stats.sum(axis=0)), baseline_score)


# ----------------------------------------------------------------------------- paired tests
@contextlib.contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    """PairedTest reads its seed from ``SACREBLEU_SEED`` (as the command line does)."""
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        yield
    finally:
        if old is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = old


def paired_test(
    test: str, metric: Metric, system: Sequence[str], baseline: Sequence[str], samples: int, seed: int
) -> dict[str, Any]:
    """sacrebleu's paired bootstrap (``test="paired_bs"``, ``samples`` resamples) or approximate
    randomisation (``"paired_ar"``, ``samples`` trials) against the metric's cached references."""
    if seed < 1:
        raise ValueError(f"seed must be >= 1 (sacrebleu treats 0 as 'unseeded'), got {seed}")
    kind = {"paired_bs": "bs", "paired_ar": "ar"}[test]
    with _sacrebleu_seed(seed):
        runner = PairedTest([("baseline", baseline), ("system", system)], {"metric": metric}, references=None,
                            test_type=kind, n_samples=samples)
        signatures, scores = runner()
    (name,) = [key for key in scores if key != "System"]
    base_result, system_result = scores[name]
    result = {"p_value": system_result.p_value, "system_score": system_result.score,
              "baseline_score": base_result.score, "signature": signatures[name].format()}
    if kind == "bs":  # numpy scalars (float32 for chrF) as plain floats, for JSON
        result.update(system_mean=float(system_result.mean), system_ci=float(system_result.ci),
                      baseline_mean=float(base_result.mean), baseline_ci=float(base_result.ci))
    return result


# ----------------------------------------------------------------------------- comparison
def compare(
    lang: str,
    system: Sequence[str],
    baseline: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    tokenized: tuple[Sequence[str], Sequence[str], Sequence[Sequence[str]]] | None = None,
    metrics: Sequence[str] = tuple(EVALUATION_DEFAULTS["significance_metrics"]),
    tests: Sequence[str] = TESTS,
    bootstrap_samples: int = EVALUATION_DEFAULTS["bootstrap_samples"],
    ar_trials: int = EVALUATION_DEFAULTS["ar_trials"],
    seed: int = EVALUATION_DEFAULTS["seed"],
) -> dict[str, Any]:
    """Every requested test for every requested metric.

    ``tokenized`` = (system, baseline, reference streams) of tokenised text, needed for
    ``tokenized_bleu`` (skipped without it).  Returns ``{"metrics": {METRIC: {"system_score",
    "baseline_score", "signature", "sign": {...}, "paired_bs": {...}, "paired_ar": {...}}},
    "num_sentences", "settings"}``.
    """
    unknown = [m for m in metrics if m not in significance_metrics()] + [t for t in tests if t not in TESTS]
    if unknown:
        raise ValueError(f"unknown metric or test '{unknown[0]}'")
    results: dict[str, Any] = {}
    for name in metrics:
        inputs = metric_inputs(name, (system, baseline, references), tokenized)
        if inputs is None:
            continue
        sys_lines, base_lines, refs = inputs
        _check_counts(sys_lines, base_lines, refs, name)
        metric = make_metric(name, lang, refs)
        sys_stats, base_stats = sentence_statistics(metric, sys_lines), sentence_statistics(metric, base_lines)
        entry: dict[str, Any] = {
            "system_score": _score(metric, sys_stats.sum(axis=0)),
            "baseline_score": _score(metric, base_stats.sum(axis=0)),
            "signature": metric.get_signature().format(),
        }
        if "sign" in tests:
            entry["sign"] = asdict(sign_test(metric, sys_stats, base_stats))
        for test in ("paired_bs", "paired_ar"):
            if test in tests:
                samples = bootstrap_samples if test == "paired_bs" else ar_trials
                entry[test] = paired_test(test, metric, sys_lines, base_lines, samples, seed)
                if entry["system_score"] == entry["baseline_score"]:
                    # No difference is no evidence: sacrebleu reports its smallest p-value for two
                    # systems that both score exactly 0, as if the tie were significant.
                    entry[test].update(p_value=1.0, zero_difference=True)
        results[name] = entry
    return {
        "metrics": results,
        "num_sentences": len(system),
        "settings": {"tests": list(tests), "bootstrap_samples": bootstrap_samples, "ar_trials": ar_trials, "seed": seed,
                     "sign_test": "Collins et al. (2005) sentence replacement, exact two-sided binomial p-value"},
    }


def metric_inputs(name: str, plain: tuple[Any, Any, Any], tokenized: tuple[Any, Any, Any] | None) -> tuple[Any, Any, Any] | None:
    """(system, baseline, references) that metric ``name`` scores: the tokenised text for a
    ``tokenized`` metric such as ``tokenized_bleu`` (None without it: the metric is skipped), the
    detokenised text otherwise."""
    if metric_spec(name).tokenized:
        return tokenized
    return plain


def _check_counts(system: Sequence[str], baseline: Sequence[str], references: Sequence[Sequence[str]], what: str) -> None:
    if not system:
        raise ValueError(f"{what}: no sentences")
    if len(system) != len(baseline):
        raise ValueError(f"{what}: {len(system)} system but {len(baseline)} baseline sentences")
    for k, stream in enumerate(references, start=1):
        if len(stream) != len(system):
            raise ValueError(f"{what}: {len(system)} system sentences but reference {k} has {len(stream)} lines")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.significance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", required=True, help="target language (picks the BLEU tokenizer)")
    parser.add_argument("--system", required=True, help="detokenised system output")
    parser.add_argument("--baseline", required=True, help="detokenised baseline output")
    parser.add_argument("--ref", required=True, action="extend", nargs="+", help="detokenised reference(s)")
    parser.add_argument("--tok-system", help="tokenised system output (for tokenized_bleu)")
    parser.add_argument("--tok-baseline", help="tokenised baseline output")
    parser.add_argument("--tok-ref", action="extend", nargs="+", help="tokenised reference(s)")
    parser.add_argument("--metrics", nargs="+", default=EVALUATION_DEFAULTS["significance_metrics"], choices=significance_metrics())
    parser.add_argument("--tests", nargs="+", default=EVALUATION_DEFAULTS["tests"], choices=TESTS)
    parser.add_argument("--bootstrap-samples", type=int, default=EVALUATION_DEFAULTS["bootstrap_samples"])
    parser.add_argument("--ar-trials", type=int, default=EVALUATION_DEFAULTS["ar_trials"])
    parser.add_argument("--seed", type=int, default=EVALUATION_DEFAULTS["seed"])
    parser.add_argument("--output", required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    tok_args = (args.tok_system, args.tok_baseline, args.tok_ref)
    if any(a is not None for a in tok_args) and not all(a is not None for a in tok_args):
        parser.error("--tok-system, --tok-baseline and --tok-ref go together")
    read = lambda path: list(read_lines(path))
    files = [args.system, args.baseline, *args.ref, *filter(None, [args.tok_system, args.tok_baseline]), *(args.tok_ref or [])]
    try:
        tokenized = None
        if args.tok_system is not None:
            tokenized = (read(args.tok_system), read(args.tok_baseline), [read(p) for p in args.tok_ref])
        result = compare(args.lang, read(args.system), read(args.baseline), [read(p) for p in args.ref],
                         tokenized=tokenized, metrics=args.metrics, tests=args.tests,
                         bootstrap_samples=args.bootstrap_samples, ar_trials=args.ar_trials, seed=args.seed)
    except (DataError, ValueError) as exc:
        print(f"error: {exc} (files: {', '.join(files)})", file=sys.stderr)
        return 1
    result["files"] = {"system": args.system, "baseline": args.baseline, "references": args.ref}
    with atomic_output(args.output) as handle:
        json.dump(result, handle, indent=2, sort_keys=True)
        handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
