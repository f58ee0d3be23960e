"""``nmt-translate``'s options and the combinations it refuses (importing no torch: ``--help``
answers at once); :mod:`nmtmodels.cli.translate` runs them."""
from __future__ import annotations

import argparse
from collections.abc import Sequence

from nmtmodels.choices import DECODE_COMPILE_MODES, EARLY_STOP_RULES, TEXT_FORMATS
from nmtmodels.cli.common import make_parser
from nmtmodels.devices import DEFAULT_THREADS

PROG = "nmt-translate"
PROGRESS_INTERVAL = 30.0  # seconds between progress lines on a non-terminal stderr


def build_parser() -> argparse.ArgumentParser:
    """nmt-translate's options (importing no torch: ``--help`` answers at once)."""
    parser = make_parser(
        PROG,
        "Translate raw text with a model package (plain text out), or with --pretokenized encoded lines "
        "with any checkpoint.  Without --input: standard input, line by line on a terminal (or with "
        "--interactive), else read and decoded in batches, a chunk of lines at a time.")
    parser.add_argument("--checkpoint", required=True, nargs="+",
                        help="a model package directory or a checkpoint in one (with --pretokenized: any checkpoint); "
                             "several: an ensemble that averages their log-probabilities at each step (the first one's "
                             "package and decode settings)")
    parser.add_argument("--pretokenized", action="store_true",
                        help="input is already encoded like the training source (tokenised, BPE or characters) and "
                             "output is the model's tokens; what the workflow's rules pass")
    parser.add_argument("--input", help="source file; default: standard input")
    parser.add_argument("--output", help="output file (written atomically); default: stdout")
    parser.add_argument("--interactive", action="store_true",
                        help="answer each line of standard input before reading the next, even when it is not a terminal")
    parser.add_argument("--beam", type=int, help="beam size (default: the checkpoint's decode.beam)")
    parser.add_argument("--lenpen", type=float,
                        help="GNMT length penalty alpha (0: rank by log-probability; default: the checkpoint's "
                             "decode.length_penalty, 1.0 unless set)")
    parser.add_argument("--max-len-a", type=float,
                        help="a of the output length limit a * source length + b, in tokens (default: the checkpoint's)")
    parser.add_argument("--max-len-b", type=int, help="b of the output length limit (default: the checkpoint's)")
    parser.add_argument("--min-len", type=int, help="no end of sentence before this many tokens (default: the checkpoint's)")
    parser.add_argument("--coverage-penalty", type=float,
                        help="GNMT coverage penalty beta (0: none; default: the checkpoint's)")
    parser.add_argument("--max-len-ratio", type=float,
                        help="hard stop at floor(RATIO * source length) tokens (ESC gamma; default: the checkpoint's "
                             "decode.max_len_ratio, none unless set)")
    parser.add_argument("--subsequence", action=argparse.BooleanOptionalAction, default=None,
                        help="only outputs that keep some of the source's words, whole and in order (deletion-based "
                             "sentence compression, docs/models/esc.md; default: the checkpoint's decode.subsequence)")
    parser.add_argument("--nbest", type=int,
                        help="hypotheses per sentence: 'i ||| hyp ||| score' lines when > 1 (default: the checkpoint's "
                             "decode.nbest, 1 unless set)")
    parser.add_argument("--early-stop", choices=EARLY_STOP_RULES,
                        help="when a sentence's search ends: exact (default; same result as searching to the length "
                             "limit), beam (fairseq) or top (OpenNMT-py)")
    parser.add_argument("--compile", choices=DECODE_COMPILE_MODES,
                        help="run the decoder step through torch.compile (default: the checkpoint's decode.compile, "
                             "else none; docs/compilation.md)")
    parser.add_argument("--batch-tokens", type=int, default=4096, help="token budget per batch (default 4096)")
    parser.add_argument("--src-vocab", help="check this vocabulary against the checkpoint's")
    parser.add_argument("--tgt-vocab", help="check this vocabulary against the checkpoint's")
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=FILE", help="with --pretokenized")
    parser.add_argument("--extra-tokens", action="append", default=[], metavar="NAME=FILE", help="with --pretokenized")
    parser.add_argument("--postprocess", metavar="LANG",
                        help="with --pretokenized: undo the subwords (--tgt-format) and detokenise the output for LANG")
    parser.add_argument("--tgt-format", choices=TEXT_FORMATS, default="bpe",
                        help="target encoding, for --postprocess (default bpe)")
    parser.add_argument("--show-compressed", action="store_true",
                        help="ESC model packages: write the compressed source, a tab, then the translation on each line")
    parser.add_argument("--truncate", action="store_true", help="cut over-long sentences instead of failing")
    parser.add_argument("--split-sentences", action="store_true",
                        help="raw text: translate each sentence of a line on its own (Moses' splitter; zh/ja at 。！？) "
                             "and join their translations into the line's output")
    parser.add_argument("--log-interval", type=float, default=PROGRESS_INTERVAL, metavar="SECONDS",
                        help=f"progress line on stderr every SECONDS when stderr is not a terminal (default {PROGRESS_INTERVAL:g})")
    parser.add_argument("--device", default="auto",
                        help="cpu, cuda, cuda:N or auto (default: a GPU when torch sees one, else the CPU)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for decoding (default: OMP_NUM_THREADS when set, else half the usable "
                             f"cores, 1 to {DEFAULT_THREADS}; every core is slow on a busy machine)")
    parser.add_argument("--amp", choices=("bf16", "none"), default="none",
                        help="bf16: run the model under bfloat16 autocast, on CUDA or on a CPU with native bf16 "
                             "(AVX512-BF16 or AMX, Arm BF16; other CPUs: float32, with a warning); default none: float32")
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The options of ``argv``; a usage error (exit 2) for a bad value or combination."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.batch_tokens < 1:
        parser.error("--batch-tokens must be >= 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be >= 1")
    if not args.pretokenized and args.postprocess:
        parser.error("--postprocess goes with --pretokenized (raw input is detokenised for the package's target language)")
    if args.interactive and args.input:
        parser.error("--interactive reads standard input; it does not go with --input")
    if not args.pretokenized and (args.extra or args.extra_tokens):
        parser.error("--extra and --extra-tokens go with --pretokenized (a model package makes its extra inputs from raw text)")
    if args.split_sentences and (args.pretokenized or args.show_compressed or (args.nbest or 1) > 1):
        parser.error("--split-sentences goes with raw text and one translation per line (not with --pretokenized, "
                     "--show-compressed or --nbest)")
    if args.pretokenized and args.show_compressed:
        parser.error("--show-compressed goes with a model package's raw text (with --pretokenized, --extra-tokens gives the "
                     "compressed source)")
    return args
