"""Decoding a trained model package with our search and with CTranslate2 on its exported weights.

    python benchmarks/ctranslate2_decode.py --checkpoint results/experiments/baseline/multi30k_en_de/model \
        [--source results/data/multi30k_en_de/raw/test_2016_flickr.en] \
        [--reference results/data/multi30k_en_de/raw/test_2016_flickr.de] [--beam 4] [--threads 2] [--repeats 3]

Raw text in, detokenised text out for both: our :class:`~nmtmodels.decoding.translator.Translator`
(beam and length settings of the checkpoint; in fp32, and under bf16 autocast where the CPU has
native bf16, ``amp="bf16"``), and CTranslate2 on ``nmt-export``'s float32 and
int8 exports of the same checkpoint, fed the package's own encoder output and post-processed
by the package (docs/translate.md, "Export to CTranslate2").  CTranslate2 gets the export's
``translate_options``, the same beam (CTranslate2 4.6 has no bf16 compute type on the CPU), the checkpoint's length penalty in its own form
(CTranslate2 divides by ``length ** alpha``, ours by GNMT's ``((5 + length) / 6) ** alpha``)
and one length limit per call, the largest of our per-sentence limits
``floor(max_len_a * |x| + max_len_b)``.  Model loading is outside the timed part; every
system decodes the whole set ``--repeats`` times and the table gives the median.  BLEU is
sacreBLEU's against the reference, so that speeds are read beside what each system wrote;
"same as ours" counts the sentences whose output equals our search's.
"""
from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a model package directory (rule model_package)")
    parser.add_argument("--source", default="results/data/multi30k_en_de/raw/test_2016_flickr.en")
    parser.add_argument("--reference", default="results/data/multi30k_en_de/raw/test_2016_flickr.de")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    import ctranslate2
    import sacrebleu
    import torch

    from nmtmodels.decoding.export import export_ctranslate2
    from nmtmodels.decoding.translator import Translator
    from nmtmodels.model_package.reader import read_package
    from nmtmodels.precision import uses_bf16

    torch.set_num_threads(args.threads)
    sources = Path(args.source).read_text(encoding="utf-8").splitlines()
    references = Path(args.reference).read_text(encoding="utf-8").splitlines()
    if len(sources) != len(references):
        parser.error(f"{args.source} has {len(sources)} lines, {args.reference} {len(references)}")

    def timed(decode) -> tuple[float, list[str]]:
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            outputs = decode()
            seconds.append(time.perf_counter() - start)
        return statistics.median(seconds), outputs

    ours = Translator.from_checkpoint(args.checkpoint)
    settings = ours.decode_config(beam=args.beam)
    rows = []
    ours_seconds, ours_out = timed(lambda: [t.text for t in ours.translate(sources, beam=args.beam)])
    rows.append(("ours (nmtmodels, torch)", "float32", ours_seconds, ours_out))
    if uses_bf16("bf16", ours.device, report=lambda message: print(f"warning: {message}", file=sys.stderr)):
        bf16_seconds, bf16_out = timed(lambda: [t.text for t in ours.translate(sources, beam=args.beam, amp="bf16")])
        rows.append(("ours (nmtmodels, torch), bf16 autocast", "float32", bf16_seconds, bf16_out))

    package = read_package(args.checkpoint)
    encode = package.source_encoder()
    tokens = [encode(line).split() for line in sources]
    limit = max(math.floor(settings.max_len_a * len(t) + settings.max_len_b) for t in tokens)
    with tempfile.TemporaryDirectory() as tmp:
        for quantization in ("float32", "int8"):
            out_dir = Path(tmp) / quantization
            export_ctranslate2(args.checkpoint, out_dir, None if quantization == "float32" else quantization)
            translator = ctranslate2.Translator(str(out_dir), device="cpu", intra_threads=args.threads)

            def decode(translator=translator) -> list[str]:
                results = translator.translate_batch(
                    tokens, beam_size=args.beam, length_penalty=settings.length_penalty,
                    suppress_sequences=[["<pad>"], ["<s>"]], max_decoding_length=limit,
                    max_batch_size=4096, batch_type="tokens")
                return [package.postprocess(" ".join(r.hypotheses[0])) for r in results]

            seconds, outputs = timed(decode)
            rows.append((f"CTranslate2 {ctranslate2.__version__} (our exported weights)", quantization, seconds, outputs))

    print(f"checkpoint: {args.checkpoint}; {len(sources)} sentences of {args.source}; beam {args.beam}, "
          f"length penalty {settings.length_penalty}; {args.threads} threads; median of {args.repeats}")
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"torch {torch.__version__}\n")
    print("| system | weights | seconds | sentences/s | BLEU | same as ours |")
    print("|---|---|---:|---:|---:|---:|")
    for name, weights, seconds, outputs in rows:
        bleu = sacrebleu.corpus_bleu(outputs, [references]).score
        same = sum(a == b for a, b in zip(outputs, ours_out)) / len(outputs)
        print(f"| {name} | {weights} | {seconds:.1f} | {len(sources) / seconds:.1f} | {bleu:.2f} | {100 * same:.0f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
