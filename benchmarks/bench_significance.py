"""Speed of the sign test on a newstest-sized test set (3,000 sentences, synthetic text).

Times the per-sentence statistics extraction (once per system), the sign test from those
cached statistics, and the brute-force definition (a full corpus rescoring per replaced
sentence) on a sample of sentences, extrapolated to the whole test set.

    python benchmarks/bench_significance.py [--sentences 3000] [--metric bleu] [--brute-force-sample 30]
"""
from __future__ import annotations

import argparse
import platform
import random
import time

from workflow_scripts.evaluation.significance import make_metric, sentence_statistics, sign_test


def synthetic(n: int, seed: int) -> tuple[list[str], list[str], list[str]]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(2000)]
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 45))) for _ in range(n)]
    noisy = lambda r: " ".join(w if rng.random() < 0.6 else rng.choice(words) for w in r.split())
    return [noisy(r) for r in refs], [noisy(r) for r in refs], refs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--metric", default="bleu", choices=["bleu", "chrf", "tokenized_bleu"])
    parser.add_argument("--brute-force-sample", type=int, default=30)
    args = parser.parse_args()
    system, baseline, refs = synthetic(args.sentences, seed=1)
    metric = make_metric(args.metric, "en", [refs])

    start = time.perf_counter()
    sys_stats, base_stats = sentence_statistics(metric, system), sentence_statistics(metric, baseline)
    extract = time.perf_counter() - start
    start = time.perf_counter()
    result = sign_test(metric, sys_stats, base_stats)
    cached = time.perf_counter() - start

    start = time.perf_counter()
    for i in range(args.brute_force_sample):
        metric.corpus_score(baseline[:i] + [system[i]] + baseline[i + 1 :], None)
    brute = (time.perf_counter() - start) / args.brute_force_sample * args.sentences

    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}; "
          f"{args.sentences} sentences, {args.metric}; better/worse/ties {result.better}/{result.worse}/{result.ties}, "
          f"p = {result.p_value:.4g}\n")
    print("| step | seconds |\n|---|---|")
    print(f"| statistics extraction (both systems, once) | {extract:.3f} |")
    print(f"| sign test from cached statistics | {cached:.3f} |")
    print(f"| brute force (extrapolated from {args.brute_force_sample} replacements) | {brute:.1f} |")


if __name__ == "__main__":
    main()
