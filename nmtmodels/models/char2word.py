"""Character-level NMT with GRUs (Johansen et al., 2016, "Neural Machine Translation with
Characters and Hierarchical Encoding"), registered as ``"char2char"`` and ``"char2word"``.

* ``char2char``: the *char encoder* (section 4.1, eq. 9): character embeddings read by a
  bidirectional GRU; every character's concatenated forward/backward state is a memory
  position.
* ``char2word``: the *char2word encoder* (section 4.2, eq. 10): a forward character GRU over
  the whole character stream (not reset at word boundaries); its states at the word ends
  are sampled and form the word sequence, which a bidirectional "spaces" GRU encodes; the
  memory has one position per word (about a fifth of the characters).
* Both share the *char decoder* (section 4.3, eqs. 11-15): a GRU over target characters
  with Bahdanau additive attention (eq. 14, ``e_ij = v^T tanh(W s_{i-1} + U h_j)``, ``U h_j``
  precomputed once per sentence) and a linear output layer over the decoder state
  followed by a softmax (eq. 15).

Choices where the paper is vague (its equations 11-13 are not legible in our copy):

* decoder step: ``c_i = attend(s_{i-1}, H)``; ``s_i = GRU([E y_{i-1}; c_i], s_{i-1})``;
  ``logits_i = W_o s_i`` (Bahdanau et al. 2014 ordering, output from the new state only);
* initial decoder state ``s_0 = tanh(W_init mean_j h_j)`` over the non-padding memory
  (Bahdanau et al. 2014 use the first backward state; the mean works for both encoders);
* word ends: the positions of the space symbol ``▁`` (workflow_scripts.data.chars writes each
  run of whitespace as one ``▁``) plus the final ``</s>`` (the sentence end); the state is
  the forward GRU's state *after* reading that symbol, so each word state has read its
  word and everything before it.  The model finds these positions from the source ids:
  the id of ``▁`` comes from the source vocabulary through
  :meth:`Seq2SeqModel.attach_vocabularies` (called by ``nmt-train``) and is saved with the
  weights as the buffer ``space_id``, so ``nmt-translate`` needs no extra input;
* dropout (``model.dropout``) on the embeddings, the encoder output and the decoder state.

Sizes live in ``model.options`` (:class:`CharRNNOptions`); ``options.preset`` is ``paper``
(Tables 1-2: embeddings 256, GRUs 400, attention 300, the default) or ``tiny`` (CPU).
The vocabulary sizes (300 characters per language in the paper) come from the data.
The Transformer fields of :class:`~nmtmodels.config.ModelConfig` (``d_model``, ``heads``,
layers) are unused by these families.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmtmodels.config import ConfigError, ModelConfig, from_dict
from nmtmodels.data import Batch
from nmtmodels.models.base import Seq2SeqModel, State, register_model
from nmtmodels.modules.dropout import Dropout
from nmtmodels.symbols import EOS_ID, PAD_ID, SPACE_SYMBOL, SPECIAL_SYMBOLS

# What the workflow and nmt-export read of this family without importing it (nmtmodels/family_needs.py).
FAMILY_NEEDS = {
    "char2char": {"not_exported": "it is a GRU encoder-decoder with additive attention, not a Transformer"},
    "char2word": {"not_exported": "it is a GRU encoder-decoder with additive attention that pools characters into words, "
                                  "not a Transformer"},
}

OPTION_PRESETS: dict[str, dict[str, int]] = {
    "paper": dict(embedding_dim=256, encoder_dim=400, decoder_dim=400, attention_dim=300),
    "tiny": dict(embedding_dim=64, encoder_dim=128, decoder_dim=128, attention_dim=64),
}


@dataclass
class CharRNNOptions:
    """``model.options`` of ``char2char`` / ``char2word`` (defaults: the paper, Tables 1-2).

    ``encoder_dim`` is each direction's GRU size (the char RNN of char2char; the char RNN
    and both spaces RNNs of char2word), ``decoder_dim`` the char decoder's GRU size,
    ``attention_dim`` the size of the additive attention's hidden layer.
    ``space_symbol`` marks word ends in the source vocabulary (char2word).
    """

    preset: str = "paper"
    embedding_dim: int = 256
    encoder_dim: int = 400
    decoder_dim: int = 400
    attention_dim: int = 300
    space_symbol: str = SPACE_SYMBOL

    @classmethod
    def from_options(cls, options: dict[str, Any], where: str) -> CharRNNOptions:
        options = dict(options or {})
        preset = options.get("preset", "paper")
        if preset not in OPTION_PRESETS:
            raise ConfigError(f"{where}.preset: unknown preset {preset!r} (known: {', '.join(OPTION_PRESETS)})")
        parsed = from_dict(cls, {**OPTION_PRESETS[preset], **options}, where)
        for name in ("embedding_dim", "encoder_dim", "decoder_dim", "attention_dim"):
            if getattr(parsed, name) < 1:
                raise ConfigError(f"{where}.{name}: must be >= 1, got {getattr(parsed, name)}")
        return parsed


# ----------------------------------------------------------------------------- encoders
def run_gru(gru: nn.GRU, x: Tensor, lengths: Tensor) -> Tensor:
    """``gru`` over the first ``lengths[b]`` steps of each row of ``x`` (B, L, d); padding
    positions of the output are zero (packed sequences: the backward direction starts at
    each row's own last step)."""
    packed = pack_padded_sequence(x, lengths.cpu().clamp(min=1), batch_first=True, enforce_sorted=False)
    out, _ = gru(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
    return out


class CharEncoder(nn.Module):
    """Eq. 9: ``h_t = [GRU_fwd(E x_t, h_{t-1}); GRU_bwd(E x_t, h_{t+1})]`` over characters."""

    def __init__(self, vocab_size: int, opts: CharRNNOptions, dropout: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, opts.embedding_dim, padding_idx=PAD_ID)
        self.rnn = nn.GRU(opts.embedding_dim, opts.encoder_dim, batch_first=True, bidirectional=True)
        self.dropout = Dropout(dropout)
        self.output_dim = 2 * opts.encoder_dim

    def forward(self, src: Tensor, pad_mask: Tensor) -> tuple[Tensor, Tensor]:
        """(memory (B, S, 2H), memory_pad_mask (B, S))."""
        lengths = (~pad_mask).sum(1)
        memory = run_gru(self.rnn, self.dropout(self.embedding(src)), lengths)
        return self.dropout(memory), pad_mask


def word_end_positions(src: Tensor, space_id: int, eos_id: int = EOS_ID) -> tuple[Tensor, Tensor]:
    """Positions of the word ends of each row of ``src`` (B, S): every ``space_id`` and
    ``eos_id``, in order.  Returns (positions (B, W) long, padded with 0; pad_mask (B, W)
    True at padding), W = the most word ends in a row."""
    is_end = src.eq(space_id) | src.eq(eos_id)
    counts = is_end.sum(1)
    width = max(int(counts.max()), 1) if src.size(0) else 1
    steps = torch.arange(src.size(1), device=src.device).expand_as(src)
    # word ends sort first (keys 0..S-1), the rest after them (S..2S-1); order is kept
    keys = torch.where(is_end, steps, steps + src.size(1))
    positions = keys.argsort(dim=1)[:, :width]
    pad_mask = torch.arange(width, device=src.device)[None, :] >= counts[:, None]
    return positions.masked_fill(pad_mask, 0), pad_mask


def gather_word_states(states: Tensor, positions: Tensor, pad_mask: Tensor) -> Tensor:
    """Eq. 10: ``states`` (B, S, H) at ``positions`` (B, W) -> (B, W, H), zero at padding."""
    index = positions.unsqueeze(-1).expand(-1, -1, states.size(-1))
    return states.gather(1, index).masked_fill(pad_mask.unsqueeze(-1), 0.0)


class Char2WordEncoder(nn.Module):
    """Eq. 10: a forward char GRU over the whole stream; its states at the word ends are the
    word sequence, encoded by the bidirectional spaces GRU (eq. 9 with words for chars)."""

    def __init__(self, vocab_size: int, opts: CharRNNOptions, dropout: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, opts.embedding_dim, padding_idx=PAD_ID)
        self.char_rnn = nn.GRU(opts.embedding_dim, opts.encoder_dim, batch_first=True)
        self.word_rnn = nn.GRU(opts.encoder_dim, opts.encoder_dim, batch_first=True, bidirectional=True)
        self.dropout = Dropout(dropout)
        self.output_dim = 2 * opts.encoder_dim
        # the source vocabulary's id of the space symbol; set by attach_vocabularies
        self.register_buffer("space_id", torch.tensor(-1, dtype=torch.long))

    def forward(self, src: Tensor, pad_mask: Tensor) -> tuple[Tensor, Tensor]:
        """(memory (B, W, 2H), memory_pad_mask (B, W)), W = most words in a row."""
        space_id = int(self.space_id)
        if space_id < 0:
            raise RuntimeError("char2word: the space id is unknown; call model.attach_vocabularies(src_vocab, tgt_vocab)")
        # padding comes after each row's end, so the forward states at word ends are exact
        char_states, _ = self.char_rnn(self.dropout(self.embedding(src)))
        positions, word_pad_mask = word_end_positions(src.masked_fill(pad_mask, PAD_ID), space_id)
        words = gather_word_states(char_states, positions, word_pad_mask)
        memory = run_gru(self.word_rnn, words, (~word_pad_mask).sum(1))
        return self.dropout(memory), word_pad_mask


# ----------------------------------------------------------------------------- decoder
class AdditiveAttention(nn.Module):
    """Eq. 14 (Bahdanau et al. 2014): ``e_ij = v^T tanh(W s_{i-1} + U h_j)``,
    ``alpha_i = softmax_j(e_ij)`` over non-padding ``j``, ``c_i = sum_j alpha_ij h_j``."""

    def __init__(self, query_dim: int, memory_dim: int, attention_dim: int) -> None:
        super().__init__()
        self.query = nn.Linear(query_dim, attention_dim, bias=False)   # W
        self.key = nn.Linear(memory_dim, attention_dim)                # U (+ bias)
        self.score = nn.Linear(attention_dim, 1, bias=False)           # v

    def precompute(self, memory: Tensor) -> Tensor:
        """``U h_j`` (B, S, A): independent of the decoder state, computed once."""
        return self.key(memory)

    def forward(self, query: Tensor, keys: Tensor, memory: Tensor, pad_mask: Tensor) -> tuple[Tensor, Tensor]:
        """``query`` (B, dq), ``keys`` (B, S, A), ``memory`` (B, S, dm) -> (context (B, dm), alpha (B, S))."""
        scores = self.score(torch.tanh(keys + self.query(query).unsqueeze(1))).squeeze(-1)
        alpha = torch.softmax(scores.masked_fill(pad_mask, float("-inf")), dim=-1)
        return torch.bmm(alpha.unsqueeze(1), memory).squeeze(1), alpha


class CharDecoder(nn.Module):
    """Section 4.3: ``c_i = attend(s_{i-1})``, ``s_i = GRU([E y_{i-1}; c_i], s_{i-1})``,
    ``logits_i = W_o s_i`` (eq. 15).  The incremental cache holds ``hidden`` (B, D) and the
    precomputed attention keys ``keys`` (B, S, A), both batch-first."""

    def __init__(self, vocab_size: int, memory_dim: int, opts: CharRNNOptions, dropout: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, opts.embedding_dim, padding_idx=PAD_ID)
        self.init_state = nn.Linear(memory_dim, opts.decoder_dim)
        self.attention = AdditiveAttention(opts.decoder_dim, memory_dim, opts.attention_dim)
        self.cell = nn.GRUCell(opts.embedding_dim + memory_dim, opts.decoder_dim)
        self.dropout = Dropout(dropout)
        self.output_projection = nn.Linear(opts.decoder_dim, vocab_size)

    def initial_state(self, memory: Tensor, pad_mask: Tensor) -> Tensor:
        """``s_0 = tanh(W_init mean_j h_j)`` over the non-padding memory positions."""
        keep = (~pad_mask).unsqueeze(-1).to(memory.dtype)
        mean = (memory * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        return torch.tanh(self.init_state(mean))

    def forward(
        self, tgt_in: Tensor, memory: Tensor, pad_mask: Tensor, cache: State | None = None, need_attention: bool = False,
        features_only: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        if cache is not None and "hidden" in cache:
            hidden, keys = cache["hidden"], cache["keys"]
        else:
            hidden, keys = self.initial_state(memory, pad_mask), self.attention.precompute(memory)
        embedded = self.dropout(self.embedding(tgt_in))
        states, alphas = [], []
        for step in range(tgt_in.size(1)):
            context, alpha = self.attention(hidden, keys, memory, pad_mask)
            hidden = self.cell(torch.cat([embedded[:, step], context], dim=-1), hidden)
            states.append(hidden)
            alphas.append(alpha)
        if cache is not None:
            cache["hidden"], cache["keys"] = hidden, keys
        features = self.dropout(torch.stack(states, dim=1))
        out = features if features_only else self.output_projection(features)
        return out, (torch.stack(alphas, dim=1) if need_attention else None)


# ----------------------------------------------------------------------------- models
@register_model("char2char")
class CharToCharModel(Seq2SeqModel):
    """char-to-char: :class:`CharEncoder` + :class:`CharDecoder`; ``encode`` returns
    ``{"memory", "memory_pad_mask"}`` (one position per source character incl. ``</s>``); the
    attention (B, T, S) of ``decode`` is the additive attention's alpha."""

    options_class = CharRNNOptions
    encoder_class: ClassVar[type[nn.Module]] = CharEncoder
    # The GRU steps are slower under bf16 autocast on the CPU than in fp32 (char2char x0.79,
    # char2word x0.81 per training step at the embedded default's shape; benchmarks/README.md,
    # "bf16 on the CPU"): both families compute in fp32 there whatever train.amp says.
    cpu_bf16 = False

    def __init__(self, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> None:
        super().__init__()
        for side, size in (("source", src_vocab_size), ("target", tgt_vocab_size)):
            if size < len(SPECIAL_SYMBOLS):
                raise ValueError(f"{side} vocabulary size {size} is smaller than the {len(SPECIAL_SYMBOLS)} special symbols")
        self.cfg = cfg
        self.options = self.parse_options(cfg.options)
        self.encoder = self.encoder_class(src_vocab_size, self.options, cfg.dropout)
        self.decoder = CharDecoder(tgt_vocab_size, self.encoder.output_dim, self.options, cfg.dropout)

    @classmethod
    def parse_options(cls, options: dict[str, Any], where: str = "model.options") -> CharRNNOptions:
        return CharRNNOptions.from_options(options, where)

    @classmethod
    def from_config(cls, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> CharToCharModel:
        return cls(cfg, src_vocab_size, tgt_vocab_size)

    def encode(self, batch: Batch) -> State:
        memory, pad_mask = self.encoder(batch.src, batch.src_pad_mask)
        return {"memory": memory, "memory_pad_mask": pad_mask}


@register_model("char2word")
class Char2WordModel(CharToCharModel):
    """char2word-to-char: :class:`Char2WordEncoder` + :class:`CharDecoder`; the memory has
    one position per word end (spaces and ``</s>``)."""

    encoder_class: ClassVar[type[nn.Module]] = Char2WordEncoder

    def attach_vocabularies(self, src_vocab: Any, tgt_vocab: Any) -> None:
        """Record the source vocabulary's id of ``options.space_symbol`` (saved with the weights)."""
        symbol = self.options.space_symbol
        if symbol not in src_vocab:
            raise ConfigError(
                f"model.options.space_symbol: {symbol!r} is not in the source vocabulary; char2word needs "
                f"character-level source data (subwords: char) whose spaces are written as {symbol!r}"
            )
        self.encoder.space_id.fill_(src_vocab.index(symbol))


__all__ = [
    "AdditiveAttention", "Char2WordEncoder", "Char2WordModel", "CharDecoder", "CharEncoder", "CharRNNOptions",
    "CharToCharModel", "OPTION_PRESETS", "gather_word_states", "word_end_positions",
]
