"""``python -m nmtmodels.cli postprocess``: Turn decoder output into text: join subwords and characters, detokenise."""
from __future__ import annotations

from collections.abc import Sequence

from nmtmodels.cli.common import make_parser
from nmtmodels.files import atomic_output, read_lines
from nmtmodels.text.postprocess import postprocess_lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser("python -m nmtmodels.cli postprocess", __doc__)
    parser.add_argument("--lang", required=True, help="target language code (zh/ja get the CJK space rule)")
    parser.add_argument("--no-bpe", dest="bpe", action="store_false", help="input has no subword-nmt joiners")
    parser.add_argument("--no-detokenize", dest="detokenize", action="store_false")
    parser.add_argument("--spm", action="store_true", help="input is SentencePiece pieces (▁ starts a word)")
    parser.add_argument("--char-level", action="store_true", help="input is space-separated characters with ▁ for spaces")
    parser.add_argument("input")
    parser.add_argument("output")
    args = parser.parse_args(argv)
    if args.spm and args.char_level:
        parser.error("--spm and --char-level exclude each other")
    options = dict(bpe=args.bpe, detokenize=args.detokenize, char_level=args.char_level, spm=args.spm)
    with atomic_output(args.output) as out:
        for line in postprocess_lines(read_lines(args.input), args.lang, **options):
            out.write(line + "\n")
    return 0

