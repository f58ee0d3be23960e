"""Beam-search speed on WMT-length sentences: our search against OpenNMT-py's translator, and a
batch-size sweep.

Input: newstest2014 en (3,003 sentences, the full set; ``--sentences`` takes the first N) from the
data mirror (``wmt14-en-de-test/newstest2014.en``), tokenised and BPE-encoded with the codes of the
model that decodes it: the BPE of ``benchmarks/throughput.py``'s Multi30k data (``WORK/data``), or
the package's own codes with ``--checkpoint``.  The sentences are about twice as long as
Multi30k's (in BPE units of Multi30k's 8k codes, longer still).

Models: ours is ``WORK/ours/train/checkpoint_last.pt`` and OpenNMT-py's the newest
``WORK/opennmt-py/model_step_*.pt``, as ``benchmarks/throughput.py`` leaves them in the same
``--work-dir`` (so ``throughput.py --shape base ...`` then this script decodes with the two models
just trained, same shape, same data, same batches and schedule); a missing one, or one of another
shape, is trained here for ``--train-updates`` updates with throughput.py's settings.
``--checkpoint`` decodes a trained model package of ours instead (``results/experiments/.../model``,
with its BPE codes); OpenNMT-py then needs ``--onmt-model`` trained on the same BPE, else it is
left out.  The two systems never share weights: each decodes its own model of the same shape.

Search settings, the same for both: beam 4, GNMT length penalty alpha 1 (ours
``length_penalty: 1``, OpenNMT-py ``-length_penalty wu -alpha 1``), OpenNMT-py's stop rule (a row
stops when its best candidate is EOS; ours ``decode.early_stop: top``), batches of
``--batch-tokens`` source tokens, EOS not allowed as the first token (ours ``min_len: 1``,
OpenNMT-py ``-min_length 1``).  Output lengths decide how much work a search does, and two models
(or an untrained one, which rarely emits EOS and runs to the length limit) write different
lengths, so the script measures two ways (``--modes``):

* ``natural``: each system stops where its model ends the sentence, capped at
  ``floor(max_len_a * |x| + max_len_b)`` tokens.  Ours applies the cap per sentence;
  OpenNMT-py 3.5 applies ``-max_length_ratio a`` (+5, fixed in its code) to the longest source
  of each batch, so for the other sentences of a batch its cap is higher.  ``max_len_b`` is 5 to
  match; ``max_len_a`` defaults to OpenNMT-py's 1.25.  The table gives tokens per output
  sentence and the share of outputs that reached the per-sentence cap, so the sentences/s of two
  systems are comparable only when those are close; tokens/s is the fairer figure otherwise.
  With models trained by throughput.py (a few hundred updates) the outputs end with EOS.
* ``fixed``: every sentence gets exactly the same work whatever the model: EOS is blocked for L
  tokens and the sentence ends at the step after (ours ``min_len: L, max_len_a: 0, max_len_b:
  L``; OpenNMT-py ``-min_length L -max_length L+1 -max_length_ratio 0``), i.e. L+1 decoder steps
  per sentence for both, with all beams alive and no row leaving its batch early.
  ``--fixed-length auto`` takes L = the mean source length in BPE units.  This compares the cost
  of a search step (model, cache, top-k, bookkeeping) independently of what the models say.

Timing: ours around ``nmtmodels.decoding.search.translate_dataset`` (after a warm-up on the first 16
sentences), with ``torch.cuda.synchronize`` on CUDA; OpenNMT-py in one process of its own
environment that loads the model once, warms up on the same sentences and then times
``InferenceEnginePY.infer_file`` for each run (``onmt_translate``'s own code path), also
synchronised.  Model loading and BPE are outside both timers.  The systems take turns run by
run (never at the same time), and the table is rewritten after every run, so a run stopped at a
deadline keeps the pairs it finished.

    python benchmarks/search_gpu.py --device cpu --quick
    python benchmarks/search_gpu.py --device cuda --amp bf16 --shape base --onmt-slim --sentences 1000
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._ours import OursOptions, decode_ours, train_ours  # noqa: E402
from benchmarks._peers import OpenNMTPy  # noqa: E402
from benchmarks._setup import Setup, cpu_name  # noqa: E402
from benchmarks._venvs import PeerError, child_env, failure_line  # noqa: E402
from benchmarks.throughput import (  # noqa: E402
    BATCH_TOKENS,
    CORPUS,
    LABEL_SMOOTHING,
    LR,
    LR_WARMUP,
    TEST_SET,
    default_data_dir,
    prepare_data,
    shape_fields,
)

NEWSTEST = "wmt14-en-de-test/newstest2014"
ONMT_FIXED_EXTRA = 5  # OpenNMT-py 3.5: max_length = min(-max_length, src_len * -max_length_ratio + 5)

# Runs in OpenNMT-py's environment: loads the model once, then answers one JSON line per run
# read from standard input (OpenNMT-py's own output goes to standard error).
ONMT_DRIVER = r"""
import json, sys, time
answer, sys.stdout = sys.stdout, sys.stderr
import torch
from onmt.inference_engine import InferenceEnginePY
from onmt.opts import translate_opts
from onmt.utils.misc import set_random_seed, use_gpu
from onmt.utils.parse import ArgumentParser

parser = ArgumentParser(description="search_gpu")
translate_opts(parser)
opt = parser.parse_args(json.loads(sys.stdin.readline()))
ArgumentParser.validate_translate_opts(opt)
ArgumentParser._get_all_transform_translate(opt)
ArgumentParser._validate_transforms_opts(opt)
ArgumentParser.validate_translate_opts_dynamic(opt)
set_random_seed(opt.seed, use_gpu(opt))
engine = InferenceEnginePY(opt)
translator = engine.translator
sync = torch.cuda.synchronize if use_gpu(opt) else (lambda: None)
print(json.dumps({"ready": True}), file=answer, flush=True)
for line in sys.stdin:
    run = json.loads(line)
    engine.opt.src, engine.opt.batch_size = run["src"], run["batch_size"]
    translator.min_length, translator.max_length = run["min_length"], run["max_length"]
    translator.max_length_ratio = run["max_length_ratio"]
    translator.out_file = open(run["output"], "w", encoding="utf-8")
    sync()
    start = time.perf_counter()
    scores, predictions = engine.infer_file()
    sync()
    seconds = time.perf_counter() - start
    translator.out_file.close()
    print(json.dumps({"seconds": seconds, "sentences": len(predictions)}), file=answer, flush=True)
"""


class OnmtDecoder:
    """OpenNMT-py's translator in a process of its own environment (:data:`ONMT_DRIVER`): the
    model is loaded once; :meth:`run` times one decode of a file."""

    def __init__(self, python: Path, arguments: list[str], env: dict[str, str], log: Path):
        import subprocess

        self.log = log
        self.sink = open(log, "w", encoding="utf-8")
        self.process = subprocess.Popen([str(python), "-c", ONMT_DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.sink, env=env, text=True)
        self._send(arguments)

    def _send(self, message: Any) -> dict[str, Any]:
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass
        line = self.process.stdout.readline()
        if not line:
            self.sink.flush()
            raise PeerError(f"OpenNMT-py's translator stopped: {failure_line(self.log)} (log: {self.log})")
        return json.loads(line)

    def run(self, **run: Any) -> dict[str, Any]:
        return self._send(run)

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except Exception:  # noqa: BLE001 - a translator that does not end is ended
            self.process.kill()
        self.sink.close()


@dataclass(frozen=True)
class Run:
    """One timed decode of one system."""

    mode: str  # natural | fixed
    system: str
    batch_tokens: int
    sentences: int
    seconds: float
    output_tokens: int
    at_cap: float | None  # share of outputs of the per-sentence cap's length (natural)
    steps_per_sentence: float | None  # decoder steps per sentence when fixed

    @property
    def sentences_per_s(self) -> float:
        return self.sentences / self.seconds

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.seconds


def source_lengths(path: Path) -> list[int]:
    return [len(line.split()) for line in path.read_text(encoding="utf-8").splitlines()]


def cap(length: int, a: float, b: int) -> int:
    """The per-sentence length limit ``floor(a * |x| + b)`` (our search's, module doc)."""
    return math.floor(a * length + b + 1e-6)


def output_stats(output: Path, lengths: list[int], a: float, b: int) -> tuple[int, float]:
    """(output tokens, share of outputs at least as long as the per-sentence cap)."""
    outputs = [len(line.split()) for line in output.read_text(encoding="utf-8").splitlines()]
    if len(outputs) != len(lengths):
        raise PeerError(f"{output}: {len(outputs)} lines for {len(lengths)} sentences")
    return sum(outputs), sum(o >= cap(n, a, b) for o, n in zip(outputs, lengths)) / len(lengths)


# ---------------------------------------------------------------------- inputs
def encode_newstest(data_dir: Path, sentences: int | None, encoder, out: Path) -> Path:
    """The first ``sentences`` lines of newstest2014.en through ``encoder`` (raw -> BPE line)."""
    raw = data_dir / f"{NEWSTEST}.en"
    if not raw.is_file():
        sys.exit(f"{raw} not found: pass --data-dir or set NMT_DATA_MIRROR (benchmarks/gpu_suite.sh --prepare copies it)")
    lines = raw.read_text(encoding="utf-8").splitlines()[:sentences]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(encoder(line) + "\n" for line in lines), encoding="utf-8")
    return out


def multi30k_encoder(config: dict[str, Any], files: dict[str, Path], work: Path):
    """Raw English -> BPE with the codes of throughput.py's Multi30k data (the workflow's steps:
    :class:`TextProcessor` with the corpus settings, subword-nmt with codes, vocabulary, threshold)."""
    from nmtmodels.text.preprocessing import TextProcessor, language_settings, load_bpe

    spec = config["corpora"][CORPUS]
    src, tgt = spec["src"], spec["tgt"]
    folder = files[f"train.{src}"].parent
    if folder == work / "data":  # made by throughput.prepare_data
        codes, vocab = folder / f"codes.{src}", folder / f"vocab.{src}"
    else:  # the workflow's outputs (rules/subwords.smk)
        codes, vocab = folder / f"codes.{src}-{tgt}.{src}", folder / f"vocab.{src}-{tgt}.{src}"
    processor = TextProcessor(language_settings(spec, src), config.get("unicode_form", "NFKC"))
    bpe = load_bpe(codes, vocab, spec["bpe"].get("vocabulary_threshold", 1))
    return lambda line: bpe.process_line(processor.tokenize(line))


def shape_of(model_config: dict[str, Any]) -> tuple[int, int, int, int, int]:
    return tuple(model_config[k] for k in ("encoder_layers", "decoder_layers", "d_model", "heads", "ffn_dim"))


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--amp", choices=["none", "bf16"], default="none", help="ours under bf16 autocast (CUDA)")
    parser.add_argument("--peer-amp", choices=["none", "fp16"], default="none",
                        help="OpenNMT-py with fp16 weights (-precision fp16; CUDA); its training too when trained here")
    parser.add_argument("--shape", choices=["tiny", "small", "base", "big"], default="base",
                        help="shape of the models (nmtmodels preset; default base), as throughput.py --shape")
    parser.add_argument("--max-tokens", type=int, default=BATCH_TOKENS, help="training batches when a model is trained here")
    parser.add_argument("--train-updates", type=int, help="updates when a model is trained here (default 300; quick 8)")
    parser.add_argument("--checkpoint", type=Path, help="decode our model package (a directory with preprocess.json, or its "
                        "checkpoint.pt) instead of throughput.py's model")
    parser.add_argument("--onmt-model", type=Path, help="OpenNMT-py checkpoint to decode (default: WORK/opennmt-py's newest)")
    parser.add_argument("--peers", nargs="*", default=["opennmt-py"], choices=["opennmt-py"])
    parser.add_argument("--onmt-slim", action="store_true", help="OpenNMT-py from the opennmt-py-slim environment (_venvs.py)")
    parser.add_argument("--sentences", type=int, help="first N sentences of newstest2014 (default all 3,003; quick 24)")
    parser.add_argument("--batch-tokens", type=int, nargs="+", help="sweep, source tokens per batch "
                        "(default 1000 2000 4000 8000 16000; quick 300 1000)")
    parser.add_argument("--modes", nargs="+", choices=["natural", "fixed"], default=["natural", "fixed"])
    parser.add_argument("--fixed-length", default="auto", help="L of the fixed mode (default auto: mean source length)")
    parser.add_argument("--fixed-batch-tokens", type=int, nargs="+", help="batch sizes of the fixed mode (default: the sweep)")
    parser.add_argument("--max-len-a", type=float, default=1.25, help="natural mode's cap: a * |x| + b (OpenNMT-py's ratio)")
    parser.add_argument("--max-len-b", type=int, default=ONMT_FIXED_EXTRA)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--decode-compile", metavar="MODE", help="decode.compile of our search (none, default)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="smoke run: 24 sentences, batches of 300 and 1000 tokens")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "runs" / "throughput",
                        help="throughput.py's work directory: its data and trained models")
    parser.add_argument("--out", type=Path, help="Markdown output (default WORK/search/table.md)")
    args = parser.parse_args(argv)
    sentences = args.sentences if args.sentences is not None else (24 if args.quick else None)
    sweep = args.batch_tokens or ([300, 1000] if args.quick else [1000, 2000, 4000, 8000, 16000])
    fixed_sweep = args.fixed_batch_tokens or sweep
    train_updates = args.train_updates if args.train_updates is not None else (8 if args.quick else 300)
    if args.max_len_b != ONMT_FIXED_EXTRA and "natural" in args.modes and args.peers:
        print(f"note: OpenNMT-py's cap adds {ONMT_FIXED_EXTRA} whatever --max-len-b is", file=sys.stderr)
    cuda = args.device.startswith("cuda")
    say = lambda message: print(message, file=sys.stderr, flush=True)
    work = args.work_dir
    out_dir = work / "search"
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    options = OursOptions(amp=args.amp, decode_compile=args.decode_compile)
    decode_extra = options.decode_settings()

    # ---- our model and the BPE input
    from nmtmodels.checkpoint import load_model_from_checkpoint

    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    spec = config["corpora"][CORPUS]
    src, tgt = spec["src"], spec["tgt"]
    setup = None
    if args.checkpoint:
        from nmtmodels.model_package.reader import package_directory, read_package

        directory = package_directory(args.checkpoint)
        if directory is None:
            sys.exit(f"{args.checkpoint}: not a model package (no preprocess.json there)")
        package = read_package(directory)
        model, src_vocab, tgt_vocab, state = load_model_from_checkpoint(str(package.checkpoint), args.device)
        encoder, ours_from = package.source_encoder(), f"package {directory}"
    else:
        files, data_source = prepare_data(config, args.data_dir, work, args.threads, say)
        setup = Setup(train_src=files[f"train.{src}"], train_tgt=files[f"train.{tgt}"], test_src=files[f"{TEST_SET}.{src}"],
                      dev_src=files[f"{TEST_SET}.{src}"], dev_tgt=files[f"{TEST_SET}.{tgt}"], src_lang=src, tgt_lang=tgt,
                      **shape_fields(args.shape), max_tokens=args.max_tokens, lr=LR, lr_warmup=LR_WARMUP,
                      label_smoothing=LABEL_SMOOTHING, warmup_updates=0, measured_updates=train_updates,
                      log_interval=train_updates, threads=args.threads, device=args.device, peer_amp=args.peer_amp,
                      onmt_env="opennmt-py-slim" if args.onmt_slim else "opennmt-py")
        checkpoint = work / "ours" / "train" / "checkpoint_last.pt"
        wanted = (setup.layers, setup.layers, setup.d_model, setup.heads, setup.ffn_dim)
        model = None
        if checkpoint.is_file():
            model, src_vocab, tgt_vocab, state = load_model_from_checkpoint(str(checkpoint), args.device)
            if shape_of(state["model_config"]) != wanted:
                say(f"{checkpoint} has shape {shape_of(state['model_config'])}, not {args.shape} {wanted}: training a new one")
                model = None
            else:
                ours_from = f"{checkpoint.relative_to(work)} (update {state['update']})"
        if model is None:
            say(f"training ours, shape {args.shape}, {train_updates} updates of {args.max_tokens} tokens ...")
            _, trainer, vocab = train_ours(setup, work, OursOptions(amp=args.amp))
            model, src_vocab, tgt_vocab = trainer.model.eval(), vocab, vocab
            ours_from = f"trained here ({train_updates} updates)"
        encoder = multi30k_encoder(config, files, work)
    say("encoding newstest2014 ...")
    source = encode_newstest(args.data_dir, sentences, encoder, out_dir / "newstest2014.bpe.en")
    lengths = source_lengths(source)
    fixed_length = round(statistics.fmean(lengths)) if args.fixed_length == "auto" else int(args.fixed_length)

    # ---- the runs, ours
    def ours_config(mode: str) -> dict[str, Any]:
        base = {"beam": args.beam, "length_penalty": 1.0, "early_stop": "top", **decode_extra}
        if mode == "natural":
            return {**base, "min_len": 1, "max_len_a": args.max_len_a, "max_len_b": args.max_len_b}
        return {**base, "min_len": fixed_length, "max_len_a": 0.0, "max_len_b": fixed_length}

    where = torch.cuda.get_device_name() if cuda else f"{cpu_name()}, {args.threads} threads"
    runs: list[Run] = []
    onmt_note = ""

    def report() -> str:
        """The table so far, written after every run (a run stopped at a deadline keeps what it measured)."""
        header = (f"# Beam search on newstest2014 en (first {len(lengths):,} sentences, mean source length "
                  f"{statistics.fmean(lengths):.1f} BPE units, max {max(lengths)})\n\n"
                  f"{args.device} ({where}), torch {torch.__version__}; shape {args.shape}; ours: {ours_from}"
                  f"{', bf16 autocast' if args.amp == 'bf16' and cuda else ', fp32'}{options.label()}; "
                  f"{onmt_note or 'OpenNMT-py: not run (yet)' if args.peers else 'no peer'}"
                  f"{', fp16 weights' if args.peer_amp == 'fp16' and cuda and args.peers else ''}.\n"
                  f"Beam {args.beam}, length penalty GNMT alpha 1, OpenNMT-py's stop rule (ours early_stop: top). "
                  f"natural: cap floor({args.max_len_a:g} * |x| + {args.max_len_b}) per sentence (OpenNMT-py: per batch); "
                  f"fixed: exactly L = {fixed_length} tokens, L + 1 decoder steps per sentence.\n"
                  + ("QUICK smoke run: sizes too small for meaningful numbers.\n" if args.quick else ""))
        text = header + "\n" + render(runs) + "\n"
        (args.out or out_dir / "table.md").write_text(text, encoding="utf-8")
        (out_dir / "results.json").write_text(json.dumps([r.__dict__ for r in runs], indent=2), encoding="utf-8")
        return text

    plan = [(mode, tokens) for mode in args.modes for tokens in (sweep if mode == "natural" else fixed_sweep)]
    warm = out_dir / "warmup.bpe.en"
    warm.write_text("".join(source.read_text(encoding="utf-8").splitlines(keepends=True)[:16]), encoding="utf-8")

    def limits(mode: str) -> dict[str, Any]:  # OpenNMT-py's options for ours_config(mode)
        if mode == "natural":
            return {"min_length": 1, "max_length": 250, "max_length_ratio": args.max_len_a}
        return {"min_length": fixed_length, "max_length": fixed_length + 1, "max_length_ratio": 0.0}

    onmt = None
    if args.peers:
        try:
            onmt = onmt_decoder(args, setup, work, out_dir, source, say)
            say("OpenNMT-py: warm-up ...")
            onmt.run(src=str(warm), batch_size=min(sweep), output=str(out_dir / "onmt.warmup.hyp"), **limits(args.modes[0]))
            onmt_note = f"OpenNMT-py 3.5.1 ({'opennmt-py-slim' if args.onmt_slim else 'opennmt-py'} environment)"
        except PeerError as exc:
            onmt, onmt_note = None, f"OpenNMT-py: {exc}"
            say(onmt_note)
    say("ours: warm-up ...")
    decode_ours(model, src_vocab, tgt_vocab, warm, ours_config(args.modes[0]), max_tokens=min(sweep), device=args.device,
                amp=args.amp, output=out_dir / "warmup.hyp")
    try:
        for mode, tokens in plan:  # the two systems take turns, so a run stopped early keeps pairs
            say(f"ours: {mode}, batches of {tokens} tokens ...")
            output = out_dir / f"ours.{mode}.{tokens}.hyp"
            speed, _ = decode_ours(model, src_vocab, tgt_vocab, source, ours_config(mode), max_tokens=tokens,
                                   device=args.device, amp=args.amp, output=output)
            produced, at_cap = output_stats(output, lengths, args.max_len_a, args.max_len_b)
            runs.append(Run(mode, "ours", tokens, speed.sentences, speed.seconds, produced,
                            at_cap if mode == "natural" else None, fixed_length + 1 if mode == "fixed" else None))
            report()
            if onmt is None:
                continue
            say(f"OpenNMT-py: {mode}, batches of {tokens} tokens ...")
            output = out_dir / f"onmt.{mode}.{tokens}.hyp"
            try:
                timing = onmt.run(src=str(source), batch_size=tokens, output=str(output), **limits(mode))
            except PeerError as exc:
                onmt, onmt_note = None, f"OpenNMT-py: {exc}"
                say(onmt_note)
                continue
            produced, at_cap = output_stats(output, lengths, args.max_len_a, args.max_len_b)
            runs.append(Run(mode, "OpenNMT-py", tokens, timing["sentences"], timing["seconds"], produced,
                            at_cap if mode == "natural" else None, fixed_length + 1 if mode == "fixed" else None))
            report()
    finally:
        if onmt is not None:
            onmt.close()
    print(report())
    say(f"wrote {args.out or out_dir / 'table.md'}")


def onmt_decoder(args: argparse.Namespace, setup: Setup | None, work: Path, out_dir: Path, source: Path, say) -> OnmtDecoder:
    """OpenNMT-py's translator on its model (trained first when there is none of this shape)."""
    if setup is None and args.onmt_model is None:
        raise PeerError("left out: with --checkpoint it needs --onmt-model, trained on the package's BPE")
    if setup is None:  # a Setup only for the environment and the device
        setup = Setup(train_src=source, train_tgt=source, test_src=source, dev_src=source, dev_tgt=source, src_lang="en",
                      tgt_lang="de", device=args.device, threads=args.threads, peer_amp=args.peer_amp,
                      onmt_env="opennmt-py-slim" if args.onmt_slim else "opennmt-py")
    peer = OpenNMTPy(setup, work)
    python = peer.venv.ensure()
    model = args.onmt_model or newest_onmt_model(peer.work, setup)
    if model is None:
        say(f"training OpenNMT-py, shape {args.shape}, {setup.total_updates} updates ...")
        peer.train()
        model = peer.model_path
    say(f"OpenNMT-py: loading {model} ...")
    arguments = ["-model", str(model), "-src", str(source), "-output", str(out_dir / "onmt.warmup.hyp"),
                 "-beam_size", str(args.beam), "-batch_type", "tokens", "-batch_size", "1000",
                 "-length_penalty", "wu", "-alpha", "1.0", "-gpu", "0" if setup.cuda else "-1", *peer.precision_args()]
    return OnmtDecoder(python, arguments, child_env(setup), out_dir / "onmt.log")


def newest_onmt_model(folder: Path, setup: Setup) -> Path | None:
    """The newest ``model_step_*.pt`` in ``folder`` if its ``train.yaml`` has ``setup``'s shape."""
    models = sorted(folder.glob("model_step_*.pt"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    config = folder / "train.yaml"
    if not models or not config.is_file():
        return None
    trained = yaml.safe_load(config.read_text(encoding="utf-8"))
    shape = tuple(trained.get(k) for k in ("enc_layers", "dec_layers", "hidden_size", "heads", "transformer_ff"))
    if shape != (setup.layers, setup.layers, setup.d_model, setup.heads, setup.ffn_dim):
        return None
    return models[-1]


def render(runs: list[Run]) -> str:
    """One Markdown table: every run, with ours / OpenNMT-py at the same mode and batch size."""
    onmt = {(r.mode, r.batch_tokens): r for r in runs if r.system == "OpenNMT-py"}
    lines = ["| mode | system | batch tokens | sentences | seconds | sent/s | output tok/s | tok/sent out | at cap "
             "| decoder steps/sent | sent/s × OpenNMT-py | tok/s × OpenNMT-py |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for run in sorted(runs, key=lambda r: (r.mode, r.batch_tokens, r.system != "ours")):
        peer = onmt.get((run.mode, run.batch_tokens))
        ratio = (lambda mine, theirs: f"{mine / theirs:.2f}" if theirs else "n/a")
        lines.append(
            f"| {run.mode} | {run.system} | {run.batch_tokens:,} | {run.sentences:,} | {run.seconds:.2f} | "
            f"{run.sentences_per_s:,.1f} | {run.tokens_per_s:,.0f} | {run.output_tokens / run.sentences:.1f} | "
            f"{'' if run.at_cap is None else f'{100 * run.at_cap:.0f}%'} | "
            f"{'' if run.steps_per_sentence is None else run.steps_per_sentence} | "
            f"{ratio(run.sentences_per_s, peer.sentences_per_s) if peer else 'n/a'} | "
            f"{ratio(run.tokens_per_s, peer.tokens_per_s) if peer else 'n/a'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
