"""Copy-task corpora, tiny models and short training configs for the tests that train,
decode or checkpoint a model (vocab, data, train, checkpoint, CLI, distributed, CUDA, ESC)."""
from __future__ import annotations

import random
from pathlib import Path

import torch

from nmtmodels.config import ModelConfig, from_dict
from nmtmodels.data import ParallelDataset
from nmtmodels.registry import build_model
from nmtmodels.training.config import TrainConfig
from nmtmodels.vocab import Vocabulary

LETTERS = list("abcdefghij")


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def copy_task(n: int, seed: int, min_len: int = 3, max_len: int = 8, reverse: bool = False,
              tokens: list[str] = LETTERS) -> tuple[list[str], list[str]]:
    """Random token sequences and their copies (or reversals)."""
    rng = random.Random(seed)
    src = [" ".join(rng.choice(tokens) for _ in range(rng.randint(min_len, max_len))) for _ in range(n)]
    tgt = [" ".join(reversed(s.split())) if reverse else s for s in src]
    return src, tgt


def copy_task_corpus(root: Path, train_size: int, valid_size: int, seed: int = 3, max_len: int = 7):
    """A copy task written to ``root`` (train.src/tgt, valid.src/tgt): (vocabulary, train, valid)."""
    src, tgt = copy_task(train_size + valid_size, seed=seed, max_len=max_len)
    paths = {name: write_lines(root / name, lines) for name, lines in
             (("train.src", src[:train_size]), ("train.tgt", tgt[:train_size]),
              ("valid.src", src[train_size:]), ("valid.tgt", tgt[train_size:]))}
    vocab = Vocabulary.from_corpus([paths["train.src"]])
    train = ParallelDataset.from_files(paths["train.src"], paths["train.tgt"], vocab, vocab)
    valid = ParallelDataset.from_files(paths["valid.src"], paths["valid.tgt"], vocab, vocab)
    return vocab, train, valid


TINY_MODEL = {"preset": "tiny", "d_model": 32, "heads": 2, "ffn_dim": 64, "encoder_layers": 1, "decoder_layers": 1}


def tiny_model(src_size: int, tgt_size: int, seed: int = 0, **overrides):
    cfg = ModelConfig.from_dict({**TINY_MODEL, **overrides})
    torch.manual_seed(seed)
    return build_model(cfg, src_size, tgt_size), cfg


def train_config(**overrides) -> TrainConfig:
    base = {"max_tokens": 64, "lr": 1e-3, "warmup_updates": 4, "max_updates": 10, "log_interval": 1000,
            "num_threads": 1, "keep_last": -1}
    return from_dict(TrainConfig, {**base, **overrides}, "train")
