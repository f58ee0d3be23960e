"""Explicit sentence compression (ESC, Li et al.): compression-pair data and evaluation.

    python -m workflow_scripts.data.compression denoise  --input TOK --codes C --vocab V --threshold N
                                                    --src-out NOISY --tgt-out CLEAN [noise options]
    python -m workflow_scripts.data.compression pairs    --sets F.jsonl.gz... --lang en --preprocess JSON
                                                    --codes C --vocab V --threshold N [--skip K] [--limit K]
                                                    --src-out SRC --tgt-out TGT [--refs-out REFS.jsonl]
    python -m workflow_scripts.data.compression evaluate --hyp OUT --refs REFS.jsonl --output SCORES.json

Unsupervised compression (section 2.2, after Fevry and Phang 2018) is a denoising
auto-encoder: the source of a training pair is the sentence with two noises, the target
the sentence itself:

* additive sampling noise (:func:`additive_sampling_noise`): ``other_sentences`` other
  sentences are drawn at random from the corpus; from each, a subset of its words is
  sub-sampled WITHOUT replacement (each word position at most once; the subset has
  ``max(1, round(ratio * |x| / other_sentences))`` words, all of them if the sentence is
  shorter) and appended to the sentence.  "Other" is taken by content: neither the sentence
  itself nor a duplicate of it (an equal word sequence elsewhere in the corpus) is ever
  drawn, since its words would add nothing the compressor must learn to delete; a sentence
  with no other sentence in the corpus, and an empty sentence, get no additive noise.  The
  draws are independent (two of them may pick the same other sentence);
* shuffle noise (:func:`shuffle_noise`): the noisy sentence is shuffled; ``window`` 0
  is a uniform permutation (the paper), ``window`` k > 0 a local shuffle in which no word
  moves more than k positions (sorting by ``i + U(0, k + 1)``, Lample et al. 2018) -- an
  easier task for the embedded default's minutes-long training.

Noise is applied to words (the tokenised text), then both sides are BPE-encoded with the
corpus' codes, so the compressor shares the NMT source vocabulary.

Supervised pairs come from the JSON Lines compression sets (``{"text", "summaries"}``):
each (text, summary) pair is one training pair; both are normalised and tokenised like
the corpus' source language.  ``--refs-out`` keeps the tokenised references for
:func:`compression_scores`: token F1 (bag-of-tokens overlap with the best-matching
reference, averaged over sentences, as Filippova et al. 2015) and the compression ratio
(compressed tokens / original tokens, averaged over sentences), both on words after BPE
removal.
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from nmtmodels.files import DataError, atomic_output, atomic_outputs, read_lines
from nmtmodels.text.preprocessing import TextProcessor, language_settings
from workflow_scripts.data.bpe import line_encoder

# ----------------------------------------------------------------------------- noise
MAX_REJECTIONS = 32  # draws of a copy of the sentence before additive noise lists the other sentences


def additive_sampling_noise(
    words: Sequence[str], corpus: Sequence[Sequence[str]], rng: random.Random, *, ratio: float, other_sentences: int
) -> list[str]:
    """``words`` followed by words sub-sampled without replacement from random other sentences.

    Each other sentence is drawn uniformly from the entries of ``corpus`` that differ from
    ``words`` (module docstring): by rejection, or, once :data:`MAX_REJECTIONS` draws in a
    row were copies of ``words``, from the list of the differing entries (one pass over the
    corpus, so a corpus made mostly of copies cannot stall the loop).  ``words`` comes back
    unchanged when it is empty, when ``ratio`` is 0 or when no entry of ``corpus`` differs."""
    if ratio < 0 or other_sentences < 1:
        raise ValueError(f"need ratio >= 0 and other_sentences >= 1, got {ratio} and {other_sentences}")
    sentence = list(words)
    if not corpus or not sentence or ratio == 0:
        return sentence
    others: list[Sequence[str]] | None = None  # the differing entries, listed only when rejection keeps failing

    def draw_other() -> Sequence[str] | None:
        nonlocal others
        if others is None:
            for _ in range(MAX_REJECTIONS):
                drawn = corpus[rng.randrange(len(corpus))]
                if list(drawn) != sentence:
                    return drawn
            others = [entry for entry in corpus if list(entry) != sentence]
        return others[rng.randrange(len(others))] if others else None

    noisy = list(sentence)
    per_sentence = max(1, round(ratio * len(sentence) / other_sentences))
    for _ in range(other_sentences):
        other = draw_other()
        if other is None:  # every entry is a copy of the sentence
            return sentence
        positions = rng.sample(range(len(other)), min(per_sentence, len(other)))
        noisy.extend(other[p] for p in sorted(positions))
    return noisy


def shuffle_noise(words: Sequence[str], rng: random.Random, *, window: int = 0) -> list[str]:
    """A permutation of ``words``: uniform (``window`` 0) or moving no word more than ``window``."""
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    if window == 0:
        shuffled = list(words)
        rng.shuffle(shuffled)
        return shuffled
    keys = [i + rng.uniform(0, window + 1) for i in range(len(words))]
    return [words[i] for i in sorted(range(len(words)), key=keys.__getitem__)]


def noisy_pairs(
    sentences: Sequence[str], *, seed: int, ratio: float, other_sentences: int, window: int
) -> Iterable[tuple[str, str]]:
    """(noisy, clean) word strings for every sentence (deterministic for a seed)."""
    rng = random.Random(seed)
    corpus = [line.split() for line in sentences]
    nonempty = [words for words in corpus if words]
    for words in corpus:
        noisy = additive_sampling_noise(words, nonempty, rng, ratio=ratio, other_sentences=other_sentences)
        yield " ".join(shuffle_noise(noisy, rng, window=window)), " ".join(words)


# ----------------------------------------------------------------------------- compression sets
def read_compression_set(path: str) -> list[dict[str, Any]]:
    """Records ``{"text": str, "summaries": [str, ...]}`` (plain or gzip); DataError naming file and line."""
    records = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"line {number}: not JSON ({exc.msg})") from None
        summaries = record.get("summaries") if isinstance(record, dict) else None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str) or not (
            isinstance(summaries, list) and summaries and all(isinstance(s, str) for s in summaries)
        ):
            raise DataError(path, f"line {number}: expected {{\"text\": str, \"summaries\": [str, ...]}}")
        records.append(record)
    return records


def tokenized_records(records: Sequence[dict[str, Any]], tokenize) -> list[tuple[str, list[str]]]:
    """(tokenised text, tokenised references) of every record."""
    return [(tokenize(r["text"]), [tokenize(summary) for summary in r["summaries"]]) for r in records]


def supervised_pairs(records: Sequence[tuple[str, list[str]]]) -> list[tuple[str, str]]:
    """One (text, summary) training pair per reference."""
    return [(text, ref) for text, refs in records for ref in refs]


# ----------------------------------------------------------------------------- evaluation
def token_f1(hypothesis: Sequence[str], reference: Sequence[str]) -> float:
    """F1 of the bag-of-tokens overlap (1.0 for two empty sequences)."""
    if not hypothesis and not reference:
        return 1.0
    overlap = sum((collections.Counter(hypothesis) & collections.Counter(reference)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(hypothesis), overlap / len(reference)
    return 2 * precision * recall / (precision + recall)


def compression_scores(sources: Sequence[str], hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
    """Mean token F1 (best reference per sentence) and mean compression ratio, in percent."""
    if not len(sources) == len(hypotheses) == len(references):
        raise ValueError(f"{len(sources)} sources, {len(hypotheses)} compressions and {len(references)} reference sets")
    if not sources:
        raise ValueError("no sentences to score")
    f1 = [max(token_f1(h.split(), r.split()) for r in refs) for h, refs in zip(hypotheses, references)]
    ratio = [len(h.split()) / max(1, len(s.split())) for s, h in zip(sources, hypotheses)]
    reference_ratio = [len(refs[0].split()) / max(1, len(s.split())) for s, refs in zip(sources, references)]
    return {"f1": 100 * sum(f1) / len(f1), "compression_ratio": 100 * sum(ratio) / len(ratio),
            "reference_compression_ratio": 100 * sum(reference_ratio) / len(reference_ratio), "sentences": len(sources)}


def remove_bpe(line: str) -> str:
    return (line + " ").replace("@@ ", "").rstrip()


def bpe_words(line: str) -> list[str]:
    """The words of a BPE-encoded line, each with its subword pieces (``new@@ york`` is one word)."""
    words, pieces = [], []
    for token in line.split():
        pieces.append(token)
        if not token.endswith("@@"):
            words.append(" ".join(pieces))
            pieces = []
    if pieces:
        words.append(" ".join(pieces))
    return words


def random_deletion(sources: Sequence[str], lengths_from: Sequence[str], seed: int) -> list[str]:
    """The random-deletion control of a learned compressor: line i keeps, in their order, k_i
    words of source line i drawn at random (``random.Random(seed)``, line after line), where
    k_i is the number of words of the compressor's output line i (at least one while the
    source has words): the same lengths, no learned choice of what to keep.  Words are whole
    BPE words, so no subword piece is cut from its word."""
    if len(sources) != len(lengths_from):
        raise ValueError(f"{len(sources)} source lines, but {len(lengths_from)} compressed lines")
    rng = random.Random(seed)
    found = []
    for source, compressed in zip(sources, lengths_from):
        words = bpe_words(source)
        k = min(len(words), max(1, len(remove_bpe(compressed).split()))) if words else 0
        keep = sorted(rng.sample(range(len(words)), k))
        found.append(" ".join(words[i] for i in keep))
    return found


# ----------------------------------------------------------------------------- commands
def _bpe(args: argparse.Namespace):
    return line_encoder(args.codes, args.vocab, args.threshold)


def _denoise(args: argparse.Namespace) -> int:
    sentences = list(read_lines(args.input))
    encode = _bpe(args)
    pairs = noisy_pairs(sentences, seed=args.seed, ratio=args.ratio, other_sentences=args.other_sentences, window=args.window)
    with atomic_outputs(args.src_out, args.tgt_out) as (src, tgt):
        for noisy, clean in pairs:
            src.write(encode(noisy) + "\n")
            tgt.write(encode(clean) + "\n")
    print(f"{args.input}: {len(sentences)} noisy pairs", file=sys.stderr)
    return 0


def _pairs(args: argparse.Namespace) -> int:
    spec = json.loads(args.preprocess)
    processor = TextProcessor(language_settings(spec, args.lang), args.unicode_form)
    tokenize = lambda text: processor.process(text)[1]
    records = [r for path in args.sets for r in read_compression_set(path)[args.skip :][: args.limit]]
    if not records:
        raise DataError(args.sets[0], f"no records after --skip {args.skip} --limit {args.limit}")
    tokenized = tokenized_records(records, tokenize)
    # evaluation: one line per record (target: its first reference); training: one per reference
    pairs = [(text, refs[0]) for text, refs in tokenized] if args.refs_out else supervised_pairs(tokenized)
    encode = _bpe(args)
    paths = [args.src_out, args.tgt_out] + ([args.refs_out] if args.refs_out else [])
    with atomic_outputs(*paths) as handles:
        for text, summary in pairs:
            handles[0].write(encode(text) + "\n")
            handles[1].write(encode(summary) + "\n")
        if args.refs_out:
            for text, refs in tokenized:
                handles[2].write(json.dumps({"source": text, "references": refs}, ensure_ascii=False) + "\n")
    print(f"{len(records)} records, {len(pairs)} pairs from {', '.join(args.sets)}", file=sys.stderr)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    records = [json.loads(line) for line in read_lines(args.refs)]
    hypotheses = [remove_bpe(line) for line in read_lines(args.hyp)]
    if len(hypotheses) != len(records):
        raise DataError(args.hyp, f"{len(hypotheses)} lines, but {args.refs} has {len(records)} records")
    scores = compression_scores([r["source"] for r in records], hypotheses, [r["references"] for r in records])
    with atomic_output(args.output) as handle:
        json.dump(scores, handle, indent=1, sort_keys=True)
        handle.write("\n")
    print(json.dumps(scores), file=sys.stderr)
    return 0


def _random_delete(args: argparse.Namespace) -> int:
    sources, compressed = list(read_lines(args.source)), list(read_lines(args.lengths_from))
    try:
        lines = random_deletion(sources, compressed, args.seed)
    except ValueError as exc:
        raise DataError(args.lengths_from, str(exc)) from None
    with atomic_output(args.output) as handle:
        handle.writelines(line + "\n" for line in lines)
    kept = sum(len(remove_bpe(line).split()) for line in lines)
    total = sum(len(remove_bpe(line).split()) for line in sources)
    print(f"{args.source}: kept {kept} of {total} words at random, line by line as long as {args.lengths_from}",
          file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.data.compression", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("denoise", "pairs"):
        sub = commands.add_parser(name)
        sub.add_argument("--codes", required=True)
        sub.add_argument("--vocab", required=True)
        sub.add_argument("--threshold", type=int, required=True)
        sub.add_argument("--src-out", required=True)
        sub.add_argument("--tgt-out", required=True)
    denoise, pairs = commands.choices["denoise"], commands.choices["pairs"]
    denoise.add_argument("--input", required=True, help="tokenised monolingual text")
    # No defaults here: the workflow's are in schemas/config.schema.yaml (compression.compressors.C.noise).
    denoise.add_argument("--seed", type=int, required=True)
    denoise.add_argument("--ratio", type=float, required=True, help="added words per original word")
    denoise.add_argument("--other-sentences", type=int, required=True)
    denoise.add_argument("--window", type=int, required=True, help="shuffle window (0: full shuffle)")
    pairs.add_argument("--sets", nargs="+", required=True, help="JSON Lines compression sets")
    pairs.add_argument("--lang", required=True)
    pairs.add_argument("--preprocess", required=True, help="the corpus' preprocess spec as JSON")
    pairs.add_argument("--unicode-form", default="NFKC")
    pairs.add_argument("--skip", type=int, default=0, help="leave out the first K records of each set")
    pairs.add_argument("--limit", type=int, help="at most K records of each set (after --skip)")
    pairs.add_argument("--refs-out", help="evaluation: one line per record, references as JSON Lines")
    evaluate = commands.add_parser("evaluate")
    evaluate.add_argument("--hyp", required=True, help="compressed output (BPE or words)")
    evaluate.add_argument("--refs", required=True, help="references written by pairs --refs-out")
    evaluate.add_argument("--output", required=True)
    delete = commands.add_parser("random-delete", help="the random-deletion control of a learned compressor")
    delete.add_argument("--source", required=True, help="BPE-encoded source lines")
    delete.add_argument("--lengths-from", required=True, help="the learned compressor's output of the same lines")
    delete.add_argument("--seed", type=int, required=True)
    delete.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    if args.command == "denoise" and (args.ratio < 0 or args.other_sentences < 1 or args.window < 0):
        parser.error("need --ratio >= 0, --other-sentences >= 1, --window >= 0")
    try:
        return {"denoise": _denoise, "pairs": _pairs, "evaluate": _evaluate,
                "random-delete": _random_delete}[args.command](args)
    except (DataError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
