"""What every system of ``benchmarks/throughput.py`` shares (:class:`Setup`: data, model shape,
batching, schedule, measurement) and what it measures (:class:`TrainSpeed`,
:class:`DecodeSpeed`), with the counts the speeds are made of."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Setup:
    """What every system shares: data, model shape, batching, schedule, measurement.

    The shape fields (``layers`` encoder and decoder layers each, ``d_model``, ``heads``,
    ``ffn_dim``, ``dropout``) are those of nmtmodels' model preset ``shape``
    (``benchmarks/throughput.py``'s ``shape_fields``); the defaults are ``tiny``'s.
    ``peer_amp="fp16"``: OpenNMT-py trains in mixed precision (its ``model_dtype: fp16`` with
    ``optim: adam``, i.e. torch autocast and a gradient scaler; CUDA only); the other peers
    stay fp32."""

    train_src: Path
    train_tgt: Path
    test_src: Path  # decoded by every system
    dev_src: Path  # validation data that Sockeye and Joey NMT require (line-aligned with dev_tgt)
    dev_tgt: Path
    src_lang: str
    tgt_lang: str
    shape: str = "tiny"
    layers: int = 3
    d_model: int = 256
    heads: int = 4
    ffn_dim: int = 1024
    dropout: float = 0.1
    max_tokens: int = 4096
    lr: float = 1e-3
    lr_warmup: int = 800
    label_smoothing: float = 0.1
    warmup_updates: int = 50
    measured_updates: int = 250
    log_interval: int = 25
    beam: int = 4
    decode_batch_tokens: int = 4096
    threads: int = 2
    device: str = "cpu"
    seed: int = 1
    peer_amp: str = "none"
    onmt_env: str = "opennmt-py"  # the INSTALL entry OpenNMT-py runs from ("opennmt-py-slim": no CTranslate2)

    @property
    def total_updates(self) -> int:
        return self.warmup_updates + self.measured_updates

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")


@dataclass
class TrainSpeed:
    """Training throughput over the measured updates.

    ``src_tokens_per_s`` excludes the source EOS (OpenNMT-py's count); ``encoder_tokens_per_s``
    is what the encoder actually processes (with EOS where the system appends one), used
    for the FLOP estimate.
    """

    tgt_tokens_per_s: float
    src_tokens_per_s: float | None
    encoder_tokens_per_s: float | None
    tgt_tokens_per_update: float | None
    updates: int
    how: str


@dataclass
class DecodeSpeed:
    sentences: int
    seconds: float
    output_tokens: int
    how: str

    @property
    def sentences_per_s(self) -> float:
        return self.sentences / self.seconds

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.seconds


def median_decode(rounds: list[DecodeSpeed | Exception]) -> DecodeSpeed | Exception:
    """The round with the median time (of an even number, the slower middle one); a failed
    round (an exception, the benchmarks' ``PeerError``) fails the whole."""
    failed = [r for r in rounds if not isinstance(r, DecodeSpeed)]
    return failed[0] if failed else sorted(rounds, key=lambda r: r.seconds)[len(rounds) // 2]


def cpu_name() -> str:
    """The CPU's model name, for the machine line of a benchmark table."""
    from nmtmodels.devices import cpu_model

    return cpu_model()


def count_output(path: Path) -> tuple[int, int]:
    """(lines, whitespace-separated tokens) of a decoder output file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return len(lines), sum(len(line.split()) for line in lines)


def mean_lengths(path: Path) -> float:
    """Mean whitespace-token count per line."""
    lines, tokens = count_output(path)
    return tokens / lines


def decode_batch_sentences(setup: Setup) -> int:
    """Sentences per decoding batch for toolkits that batch by sentences: the token budget
    over the test source's mean length (about the sentences per budget-sized batch)."""
    return max(1, round(setup.decode_batch_tokens / (mean_lengths(setup.test_src) + 1)))


def aggregate_intervals(intervals: list[tuple[float, float | None, float]]) -> tuple[float, float | None]:
    """(target tok/s, source tok/s) from (target tokens, source tokens, seconds) intervals."""
    seconds = sum(s for _, _, s in intervals)
    tgt = sum(t for t, _, _ in intervals) / seconds
    src = None if any(s is None for _, s, _ in intervals) else sum(s for _, s, _ in intervals) / seconds
    return tgt, src
