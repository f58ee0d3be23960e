"""``python -m nmtmodels.cli score``: sacreBLEU scores of detokenised hypotheses, as JSON.

BLEU, chrF, TER and, with ``--tok-hyp``/``--tok-ref``, tokenised BLEU
(:func:`nmtmodels.text.scoring.score_corpus`)."""
from __future__ import annotations

from collections.abc import Sequence

from nmtmodels.cli.common import make_parser
from nmtmodels.files import read_lines
from nmtmodels.text.scoring import score_corpus, write_scores_json


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser("python -m nmtmodels.cli score", __doc__)
    parser.add_argument("--lang", required=True, help="target language (picks the BLEU tokenizer)")
    parser.add_argument("--hyp", required=True, help="detokenised hypotheses, one per line")
    parser.add_argument("--ref", required=True, action="extend", nargs="+", help="detokenised reference file(s)")
    parser.add_argument("--tok-hyp", help="tokenised hypotheses for tokenised BLEU")
    parser.add_argument("--tok-ref", action="extend", nargs="+", help="tokenised reference file(s)")
    parser.add_argument("--output", required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    if (args.tok_hyp is None) != (args.tok_ref is None):
        parser.error("--tok-hyp and --tok-ref go together")
    read = lambda path: list(read_lines(path))
    try:
        scores = score_corpus(
            read(args.hyp),
            [read(path) for path in args.ref],
            args.lang,
            None if args.tok_hyp is None else read(args.tok_hyp),
            None if args.tok_ref is None else [read(path) for path in args.tok_ref],
        )
    except ValueError as exc:
        files = ", ".join([args.hyp, *args.ref, *filter(None, [args.tok_hyp]), *(args.tok_ref or [])])
        raise SystemExit(f"error: {exc} (files: {files})") from None
    write_scores_json(args.output, scores)
    return 0

