"""Established toolkits for ``benchmarks/throughput.py``, each in its own virtual environment.

Every peer is installed into its own virtual environment (``benchmarks/_venvs.py``: the
pinned installs, the cached environments, running a peer's commands); what the systems
share and what they measure is ``benchmarks/_setup.py``.

Each peer trains the same shape on the same BPE files and decodes the same test source
with beam 4.  Speeds come from the peer's own log lines, aggregated over the updates
after the warm-up, and from its own timer for decoding:

* OpenNMT-py: ``Step`` lines give source and target tok/s per ``report_every`` interval
  (``n_src_words`` = source tokens without EOS, ``n_words`` = target tokens + EOS); the
  interval's seconds are its tokens over its rate.  Decoding: ``-report_time``'s average
  time per sentence times the sentence count.
* CTranslate2: converts OpenNMT-py's checkpoint (the same weights; its attention type
  renamed from "scaled-dot-flash" to "scaled-dot", which 3.24's converter knows) and
  decodes with ``translate_batch``, timed around that call.
* Sockeye: its Speedometer logs samples/s every 50 batches; tokens/s = samples/s times
  the corpus' mean sentence length (its own ``tok/sec`` counts padded source positions).
  Decoding: the "Total time" it logs.
* Joey NMT: "Tokens per Sec" (target tokens + EOS) per ``logging_freq`` interval, averaged
  over the intervals (source tokens from the corpus mean lengths).  Decoding: the
  "Generation took" it logs.
* fairseq: tried; see :class:`Fairseq` for why it does not run here.

The peers predate torch 2.6, whose ``torch.load`` refuses their checkpoints by default;
they run with ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` (they only load files they wrote).
"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import yaml

from benchmarks._setup import DecodeSpeed, Setup, TrainSpeed, aggregate_intervals, count_output, decode_batch_sentences, mean_lengths
from benchmarks._venvs import PeerError, Venv, child_env, rel, run_logged


# ---------------------------------------------------------------------- peers
class Peer:
    """A toolkit under test.  ``train`` / ``decode`` raise PeerError with a short reason."""

    key: str = ""
    label: str = ""

    def __init__(self, setup: Setup, work: Path, *, reinstall: bool = False):
        self.setup, self.work = setup, work / self.key
        self.work.mkdir(parents=True, exist_ok=True)
        self.log = self.work / "log.txt"
        self.venv = Venv(self.venv_name, reinstall=reinstall, log=self.log)

    @property
    def venv_name(self) -> str:
        return self.key

    def train(self) -> TrainSpeed:
        raise NotImplementedError

    def decode(self) -> DecodeSpeed:
        raise NotImplementedError


class OpenNMTPy(Peer):
    """OpenNMT-py 3.5.1: ``onmt_build_vocab`` (shared), ``onmt_train``, ``onmt_translate``.

    Same shape as ours: QKV/FFN biases switched on (its default has none), shared source/
    target embeddings tied to the generator, sinusoidal positions, Adam (0.9, 0.98), the
    same inverse-square-root schedule written as ``noam`` (factor ``lr * sqrt(d * warmup)``
    gives ``lr * min(u / warmup, sqrt(warmup / u))``), label smoothing, token-normalised
    loss, ``batch_type: tokens`` (OpenNMT-py's cost is also rows * the longer side).  It is
    a pre-norm Transformer; ours is post-norm (the same matmuls).
    """

    key, label = "opennmt-py", "OpenNMT-py 3.5.1"
    STEP = re.compile(r"Step\s+(\d+)/\s*\d+;.*?bsz:\s*(\d+)/\s*(\d+)/\s*\d+;\s*(\d+)/\s*(\d+) tok/s")
    AVG_TIME = re.compile(r"Average translation time \(ms\):\s*([\d.]+)")

    @property
    def venv_name(self) -> str:
        return self.setup.onmt_env

    @property
    def model_path(self) -> Path:
        return self.work / f"model_step_{self.setup.total_updates}.pt"

    def config(self) -> dict[str, Any]:
        s = self.setup
        return {
            "save_data": str(self.work / "onmt"),
            "src_vocab": str(self.work / "vocab.shared"),
            "share_vocab": True,
            "data": {"corpus_1": {"path_src": str(s.train_src), "path_tgt": str(s.train_tgt)}},
            "overwrite": True,
            "save_model": str(self.work / "model"),
            "save_checkpoint_steps": s.total_updates,
            "train_steps": s.total_updates,
            "valid_steps": 10 * s.total_updates,
            "report_every": s.log_interval,
            "seed": s.seed,
            "encoder_type": "transformer",
            "decoder_type": "transformer",
            "enc_layers": s.layers,
            "dec_layers": s.layers,
            "hidden_size": s.d_model,
            "word_vec_size": s.d_model,
            "transformer_ff": s.ffn_dim,
            "heads": s.heads,
            "position_encoding": True,
            "share_embeddings": True,
            "share_decoder_embeddings": True,
            "add_qkvbias": True,
            "add_ffnbias": True,
            "dropout": [s.dropout],
            "attention_dropout": [0.0],
            "optim": "adam",
            "adam_beta1": 0.9,
            "adam_beta2": 0.98,
            "decay_method": "noam",
            "learning_rate": s.lr * (s.d_model * s.lr_warmup) ** 0.5,
            "warmup_steps": s.lr_warmup,
            "label_smoothing": s.label_smoothing,
            "max_grad_norm": 0.0,
            "param_init": 0.0,
            "param_init_glorot": True,
            "normalization": "tokens",
            "batch_type": "tokens",
            "batch_size": s.max_tokens,
            "accum_count": [1],
            "num_workers": 0,
            "model_dtype": "fp16" if s.peer_amp == "fp16" and s.cuda else "fp32",
            **({"world_size": 1, "gpu_ranks": [0]} if s.cuda else {}),
        }

    def precision_args(self) -> list[str]:
        """``onmt_translate`` arguments for the precision it trained in: fp16 weights after
        ``peer_amp="fp16"`` (its translator has no autocast), else its fp32 default."""
        return ["-precision", "fp16"] if self.setup.peer_amp == "fp16" and self.setup.cuda else []

    def train(self) -> TrainSpeed:
        self.venv.ensure()
        s = self.setup
        config = self.work / "train.yaml"
        config.write_text(yaml.safe_dump(self.config(), sort_keys=False), encoding="utf-8")
        env = child_env(s)
        train_log = self.work / "train.log"
        train_log.unlink(missing_ok=True)
        for stale in self.work.glob("model_step_*.pt"):
            stale.unlink()
        run_logged([self.venv.bin("onmt_build_vocab"), "-config", config, "-n_sample", "-1"], self.log, env)
        run_logged([self.venv.bin("onmt_train"), "-config", config], train_log, env)
        intervals, previous = [], 0
        for match in self.STEP.finditer(train_log.read_text(encoding="utf-8")):
            step, src_bsz, tgt_bsz, src_rate, tgt_rate = map(int, match.groups())
            batches, previous = step - previous, step
            if step > s.warmup_updates:
                tgt_tokens = tgt_bsz * batches
                intervals.append((tgt_tokens, src_bsz * batches, tgt_tokens / tgt_rate))
        if not intervals:
            raise PeerError(f"no 'Step' lines after update {s.warmup_updates} in {rel(train_log)}")
        tgt, src = aggregate_intervals(intervals)
        updates = sum(1 for _ in intervals) * s.log_interval
        return TrainSpeed(tgt, src, src, sum(t for t, _, _ in intervals) / updates, updates,
                          "its Step lines (n_words, n_src_words / interval time)")

    def decode(self) -> DecodeSpeed:
        self.venv.ensure()
        s = self.setup
        if not self.model_path.exists():
            raise PeerError(f"no checkpoint {rel(self.model_path)} (training failed?)")
        output, log = self.work / "test.hyp", self.work / "translate.log"
        log.unlink(missing_ok=True)
        run_logged([self.venv.bin("onmt_translate"), "-model", self.model_path, "-src", s.test_src, "-output", output,
                    "-beam_size", s.beam, "-batch_type", "tokens", "-batch_size", s.decode_batch_tokens,
                    "-length_penalty", "wu", "-alpha", "1.0", "-report_time", "-gpu", 0 if s.cuda else -1,
                    *self.precision_args()], log, child_env(s))
        match = self.AVG_TIME.search(log.read_text(encoding="utf-8"))
        if not match:
            raise PeerError(f"no 'Average translation time' in {rel(log)}")
        sentences, tokens = count_output(output)
        return DecodeSpeed(sentences, float(match.group(1)) * sentences / 1000, tokens, "-report_time")


CT2_RENAME_ATTENTION = """
import sys, torch
checkpoint = torch.load(sys.argv[1], map_location="cpu", weights_only=False)
checkpoint["opt"].self_attn_type = "scaled-dot"
torch.save(checkpoint, sys.argv[2])
"""

CT2_DECODE = """
import json, sys, time
import ctranslate2
model, source, output, beam, batch_tokens, threads, device = sys.argv[1:8]
translator = ctranslate2.Translator(model, device=device, compute_type="float32", intra_threads=int(threads), inter_threads=1)
lines = [line.split() for line in open(source, encoding="utf-8")]
start = time.perf_counter()
results = translator.translate_batch(lines, beam_size=int(beam), max_batch_size=int(batch_tokens), batch_type="tokens",
                                     max_decoding_length=250)  # onmt_translate's -max_length default
seconds = time.perf_counter() - start
with open(output, "w", encoding="utf-8") as out:
    out.writelines(" ".join(r.hypotheses[0]) + "\\n" for r in results)
print(json.dumps({"seconds": seconds}))
"""


class CTranslate2(Peer):
    """CTranslate2 3.24 (fp32) decoding OpenNMT-py's trained checkpoint (the same weights)."""

    key, label = "ctranslate2", "CTranslate2 3.24 (OpenNMT-py weights)"

    def __init__(self, setup: Setup, work: Path, *, reinstall: bool = False):
        super().__init__(setup, work, reinstall=reinstall)
        self.onmt = OpenNMTPy(setup, work, reinstall=reinstall)

    @property
    def venv_name(self) -> str:
        return "opennmt-py"

    def train(self) -> TrainSpeed:
        raise PeerError("inference engine (no training)")

    def decode(self) -> DecodeSpeed:
        self.venv.ensure()
        s = self.setup
        if not self.onmt.model_path.exists():
            raise PeerError("needs OpenNMT-py's trained checkpoint (OpenNMT-py training failed)")
        converted, output = self.work / "model", self.work / "test.hyp"
        env = child_env(s)
        # OpenNMT-py 3.5 names its (torch SDPA) attention "scaled-dot-flash", which this
        # converter does not know; the computation is scaled dot-product attention either way.
        renamed = self.work / "checkpoint.scaled-dot.pt"
        run_logged([self.venv.python, "-c", CT2_RENAME_ATTENTION, self.onmt.model_path, renamed], self.log, env)
        run_logged([self.venv.bin("ct2-opennmt-py-converter"), "--model_path", renamed,
                    "--output_dir", converted, "--force"], self.log, env)
        timing = self.work / "timing.json"
        run_logged([self.venv.python, "-c", CT2_DECODE, converted, s.test_src, output, s.beam, s.decode_batch_tokens,
                    s.threads, "cuda" if s.cuda else "cpu"], self.log, env, stdout=timing)
        seconds = json.loads(timing.read_text(encoding="utf-8"))["seconds"]
        sentences, tokens = count_output(output)
        return DecodeSpeed(sentences, seconds, tokens, "timed around translate_batch")


def _prefix(path: Path, lang: str) -> str:
    """``path`` without its ``.lang`` suffix (Joey NMT's corpus prefix)."""
    name = str(path)
    if not name.endswith(f".{lang}"):
        raise PeerError(f"{path} does not end in .{lang}, as Joey NMT's file naming needs")
    return name[: -len(lang) - 1]


class Sockeye(Peer):
    """Sockeye 3.1.34 (``--no-deps`` with numpy<2; it pins torch<1.14 but runs on the system's).

    ``sockeye-train`` on the BPE text with a shared vocabulary and ``src_trg_softmax`` weight
    tying, fixed (sinusoidal) positions, word-based batches of ``max_tokens`` target words,
    Adam (0.9, 0.98), ``inv-sqrt-decay`` with base rate ``lr * sqrt(warmup)`` (= ``lr`` at the
    end of the warm-up); one checkpoint (with its validation) at the last update.
    """

    key, label = "sockeye", "Sockeye 3.1.34"
    SPEED = re.compile(r"E=\d+ B=(\d+)\s+s/sec=([\d.]+) tok/sec=[\d.]+ u/sec=([\d.]+)")
    TOTAL = re.compile(r"Processed (\d+) lines\. Total time: ([\d.]+)")
    SPEEDOMETER_BATCHES = 50  # sockeye.constants.MEASURE_SPEED_EVERY: fixed, not an option

    def updates(self) -> int:
        """Total updates: at least one Speedometer line must fall after the warm-up."""
        every = self.SPEEDOMETER_BATCHES
        return max(self.setup.total_updates, (self.setup.warmup_updates // every + 1) * every)

    def train(self) -> TrainSpeed:
        self.venv.ensure()
        s = self.setup
        model, train_log = self.work / "model", self.work / "train.log"
        train_log.unlink(missing_ok=True)
        updates = self.updates()
        run_logged([
            self.venv.bin("sockeye-train"), "--source", s.train_src, "--target", s.train_tgt,
            "--validation-source", s.dev_src, "--validation-target", s.dev_tgt, "--output", model, "--overwrite-output",
            "--shared-vocab", "--weight-tying-type", "src_trg_softmax", "--num-layers", f"{s.layers}:{s.layers}",
            "--transformer-model-size", s.d_model, "--num-embed", f"{s.d_model}:{s.d_model}",
            "--transformer-attention-heads", s.heads, "--transformer-feed-forward-num-hidden", s.ffn_dim,
            "--transformer-positional-embedding-type", "fixed", "--transformer-dropout-attention", 0,
            "--transformer-dropout-act", 0, "--transformer-dropout-prepost", s.dropout, "--embed-dropout", s.dropout,
            "--batch-type", "word", "--batch-size", s.max_tokens, "--update-interval", 1,
            "--optimizer", "adam", "--optimizer-betas", "0.9:0.98", "--initial-learning-rate", s.lr * s.lr_warmup ** 0.5,
            "--learning-rate-scheduler-type", "inv-sqrt-decay", "--learning-rate-warmup", s.lr_warmup,
            "--label-smoothing", s.label_smoothing, "--gradient-clipping-type", "none",
            "--max-updates", updates, "--checkpoint-interval", updates, "--decode-and-evaluate", 0,
            "--keep-last-params", 1, "--seed", s.seed, "--dtype", "float32", "--quiet-secondary-workers",
            *(["--device-id", 0] if s.cuda else ["--use-cpu"]),
        ], train_log, child_env(s))
        lines = [(int(b), float(samples), float(ups)) for b, samples, ups in self.SPEED.findall(train_log.read_text(encoding="utf-8"))]
        measured = [line for line in lines if line[0] > s.warmup_updates] or lines[-1:]
        if not measured:
            raise PeerError(f"no Speedometer lines in {rel(train_log)}")
        samples_per_s = statistics.fmean(samples for _, samples, _ in measured)
        updates_per_s = statistics.fmean(ups for _, _, ups in measured)
        tgt = samples_per_s * (mean_lengths(s.train_tgt) + 1)
        src = samples_per_s * mean_lengths(s.train_src)
        return TrainSpeed(tgt, src, src + samples_per_s, tgt / updates_per_s, len(measured) * self.SPEEDOMETER_BATCHES,
                          "Speedometer samples/s x corpus mean length")

    def decode(self) -> DecodeSpeed:
        self.venv.ensure()
        s = self.setup
        model, output, log = self.work / "model", self.work / "test.hyp", self.work / "translate.log"
        if not (model / "params.best").exists():
            raise PeerError("no trained model (training failed?)")
        log.unlink(missing_ok=True)
        run_logged([self.venv.bin("sockeye-translate"), "--models", model, "--input", s.test_src, "--output", output,
                    "--beam-size", s.beam, "--batch-size", decode_batch_sentences(s), "--dtype", "float32",
                    *(["--device-id", 0] if s.cuda else ["--use-cpu"])], log, child_env(s))
        match = self.TOTAL.search(log.read_text(encoding="utf-8"))
        if not match:
            raise PeerError(f"no 'Total time' in {rel(log)}")
        sentences, tokens = count_output(output)
        return DecodeSpeed(sentences, float(match.group(2)), tokens,
                           f"its 'Total time', batches of {decode_batch_sentences(s)} sentences")


class JoeyNMT(Peer):
    """Joey NMT 2.3.0 (``--no-deps`` plus its import-time dependencies).

    The BPE text is read as ``level: word`` (no tokenizer of its own), with one vocabulary
    file (ours, joint) for both sides so that ``tied_embeddings`` and ``tied_softmax`` can
    share one table; post-norm layers, Adam (0.9, 0.98), ``warmupinversesquareroot``,
    ``batch_type: token``.  It validates (and saves its checkpoint) once, at the last update.
    """

    key, label = "joeynmt", "Joey NMT 2.3.0"
    SPEED = re.compile(r"Step:\s+(\d+), Batch Loss:.*?Tokens per Sec:\s+(\d+)")
    GENERATION = re.compile(r"Generation took ([\d.]+)\[sec\]")

    def config(self) -> dict[str, Any]:
        s = self.setup
        vocab = self.work / "vocab.joint.txt"
        tokens: dict[str, None] = {}
        for path in (s.train_src, s.train_tgt):
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    tokens.update(dict.fromkeys(line.split()))
        vocab.write_text("".join(token + "\n" for token in tokens), encoding="utf-8")
        side = {"level": "word", "voc_file": str(vocab), "lowercase": False, "normalize": False, "max_length": 250}
        layers = {"type": "transformer", "num_layers": s.layers, "num_heads": s.heads, "hidden_size": s.d_model,
                  "ff_size": s.ffn_dim, "dropout": s.dropout, "layer_norm": "post",
                  "embeddings": {"embedding_dim": s.d_model, "scale": True, "dropout": 0.0}}
        return {
            "name": "throughput",
            "joeynmt_version": "2.3.0",
            "model_dir": str(self.work / "model"),
            "use_cuda": s.cuda,
            "fp16": False,
            "random_seed": s.seed,
            "data": {
                "train": _prefix(s.train_src, s.src_lang), "dev": _prefix(s.dev_src, s.src_lang),
                "dataset_type": "plain",
                "src": {"lang": s.src_lang, **side}, "trg": {"lang": s.tgt_lang, **side},
            },
            "testing": {"beam_size": s.beam, "beam_alpha": 1.0, "batch_size": s.decode_batch_tokens,
                        "batch_type": "token", "eval_metrics": ["bleu"], "n_best": 1},
            "training": {
                "overwrite": True, "optimizer": "adam", "adam_betas": [0.9, 0.98], "learning_rate": s.lr,
                "learning_rate_min": 1.0e-9, "scheduling": "warmupinversesquareroot", "learning_rate_warmup": s.lr_warmup,
                "label_smoothing": s.label_smoothing, "loss": "crossentropy", "normalization": "tokens",
                "batch_size": s.max_tokens, "batch_type": "token", "batch_multiplier": 1, "epochs": 1000,
                "updates": s.total_updates, "validation_freq": s.total_updates, "logging_freq": s.log_interval,
                "keep_best_ckpts": 1, "shuffle": True, "num_workers": 0, "print_valid_sents": [],
                "early_stopping_metric": "ppl",
            },
            "model": {"initializer": "xavier_uniform", "embed_initializer": "xavier_uniform", "bias_initializer": "zeros",
                      "tied_embeddings": True, "tied_softmax": True, "encoder": layers, "decoder": layers},
        }

    def train(self) -> TrainSpeed:
        self.venv.ensure()
        s = self.setup
        config = self.work / "config.yaml"
        config.write_text(yaml.safe_dump(self.config(), sort_keys=False), encoding="utf-8")
        train_log = self.work / "train.log"
        train_log.unlink(missing_ok=True)
        run_logged([self.venv.python, "-m", "joeynmt", "train", config, "--skip-test"], train_log, child_env(s))
        rates = [int(rate) for step, rate in self.SPEED.findall(train_log.read_text(encoding="utf-8"))
                 if int(step) > s.warmup_updates]
        if not rates:
            raise PeerError(f"no 'Tokens per Sec' lines after update {s.warmup_updates} in {rel(train_log)}")
        tgt = statistics.fmean(rates)
        # It logs target tokens only; sentences (and source tokens) follow from the corpus
        # means, as it samples the whole corpus.  Its source gets an EOS too.
        sentences = tgt / (mean_lengths(s.train_tgt) + 1)
        src = sentences * mean_lengths(s.train_src)
        return TrainSpeed(tgt, src, src + sentences, None, len(rates) * s.log_interval,
                          "its 'Tokens per Sec' (mean over intervals); source from corpus mean lengths")

    def decode(self) -> DecodeSpeed:
        self.venv.ensure()
        s = self.setup
        config, output, log = self.work / "config.yaml", self.work / "test.hyp", self.work / "translate.log"
        if not (self.work / "model" / "best.ckpt").exists():
            raise PeerError("no trained model (training failed?)")
        log.unlink(missing_ok=True)
        # Hypotheses go to stdout: with --output-path, 2.3.0's translate() fails on
        # ``args.n_best`` (an attribute of its test settings, not of the global ones).
        run_logged([self.venv.python, "-m", "joeynmt", "translate", config], log, child_env(s),
                   stdin=s.test_src, stdout=output)
        match = self.GENERATION.search(log.read_text(encoding="utf-8"))
        if not match:
            raise PeerError(f"no 'Generation took' in {rel(log)}")
        sentences, tokens = count_output(output)
        return DecodeSpeed(sentences, float(match.group(1)), tokens, "its 'Generation took'")


class Fairseq(Peer):
    """fairseq 0.12.2, the last release (2022).  Here it does not get past installation:
    its PyPI source archive lacks ``fairseq/clib/libbase/balanced_assignment.cpp``, so the
    extension build fails, and its dataclass configs use instance defaults
    (``common: CommonConfig = CommonConfig()``) that Python >= 3.11 rejects at import.
    The install is still attempted (and its outcome cached) so that the table records the
    reason; no training/decoding runner is written for it."""

    key, label = "fairseq", "fairseq 0.12.2"

    def train(self) -> TrainSpeed:
        self.venv.ensure()
        raise PeerError("installed, but this benchmark has no fairseq runner yet")

    def decode(self) -> DecodeSpeed:
        raise PeerError("not run (see training)")
