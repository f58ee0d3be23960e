"""Which next tokens a search may choose beside the model's own preference: the source-subsequence
constraint of deletion-based sentence compression (``DecodeConfig.subsequence``).

An ESC compressor (docs/models/esc.md) decodes the "backbone" of a sentence.  Its human
references, the Google sentence-compression data of the workflow's quality check (Filippova and
Altun 2013), are deletions: each keeps some of the source's words in their order.  Left free, the
unsupervised compressor writes words that are not in the source ("A skateboarder is running on top
...") or repeats one ("American American ...").  With :class:`SourceSubsequence` every output is a
subsequence of the source's **words**, in order, each word whole:

* a hypothesis remembers the source positions ``p`` its last piece may have been copied from
  (a set: the same pieces can stand at several places; none at the start);
* its next token is a piece at a position ``j > p`` that starts a word, or, while the piece at
  ``p`` ends inside its word (subword-nmt's ``@@``; the next piece of a SentencePiece word does
  not start with ``▁``), only the piece at ``p + 1`` (a union over the set);
* EOS only at a word's end; after a token, the set becomes every allowed position of it.  This
  is the subsequence automaton of the source's words, so every word subsequence is reachable
  and nothing else is (nmtmodels/tests/test_constraints.py: exhaustive search agrees).

The constraint only removes candidates: the log-probability of every chosen token stays the
model's own (search module docstring), and the length limits, ``min_len`` and the forced EOS at
the limit apply as before (at the limit EOS is chosen even inside a word).  Source and target
vocabularies may differ: a source piece maps to the target id of the same string (``<unk>`` where
the target vocabulary lacks it).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from nmtmodels.vocab import Vocabulary

BPE_JOINER = "@@"  # subword-nmt: the piece continues into the next one
SPM_WORD_START = "\u2581"  # SentencePiece: the piece starts a word


@dataclass(frozen=True)
class SourceSubsequence:
    """Outputs that are subsequences of the source's words (module docstring).  Per source id:
    ``to_target`` (V_src,) its target id; ``ends_inside`` (V_src,) the piece continues into the
    next piece of its word; ``starts_inside`` (V_src,) the piece continues the previous one."""

    to_target: Tensor
    ends_inside: Tensor
    starts_inside: Tensor

    @classmethod
    def from_vocabs(cls, src_vocab: Vocabulary, tgt_vocab: Vocabulary) -> SourceSubsequence:
        tokens = src_vocab.tokens
        spm = any(token.startswith(SPM_WORD_START) for token in tokens[4:])
        return cls(
            to_target=torch.tensor([tgt_vocab.index(t) if t in tgt_vocab else UNK_ID for t in tokens], dtype=torch.long),
            ends_inside=torch.tensor([t.endswith(BPE_JOINER) and i > UNK_ID for i, t in enumerate(tokens)]),
            starts_inside=torch.tensor([spm and i > UNK_ID and not t.startswith(SPM_WORD_START)
                                        for i, t in enumerate(tokens)]),
        )

    @staticmethod
    def start(src: Tensor) -> Tensor:
        """The state of a hypothesis that copied nothing yet, for each row of ``src`` (N, S)."""
        state = torch.zeros(src.size(0), src.size(1) + 1, dtype=torch.bool, device=src.device)
        state[:, 0] = True
        return state

    def positions(self, src: Tensor, state: Tensor) -> tuple[Tensor, Tensor]:
        """Where each hypothesis may copy from next: (N, S) bool over the positions of ``src``
        (N, S) source ids, and (N,) whether it may end (EOS) here.  ``state`` (N, S + 1) bool: the
        source positions its output may have copied last (column 0: none yet; column j + 1:
        position j).  A set, not one position: an output "a@@ b" of the source "a@@ a@@ b b a@@ b"
        may still be the first word's start or the last word."""
        device = src.device
        real = (src != PAD_ID) & (src != EOS_ID) & (src != BOS_ID)
        # a piece joins the previous one: that one ends inside its word, or this one starts inside
        joins = self.starts_inside.to(device)[src]
        joins[:, 1:] |= self.ends_inside.to(device)[src[:, :-1]]
        joins[:, 0] = False  # the first piece starts a word
        fresh, last = state[:, :1], state[:, 1:]
        inside = torch.zeros_like(last)  # last copied position p whose word goes on at p + 1
        inside[:, :-1] = last[:, :-1] & joins[:, 1:]
        ended = last & ~inside
        follows = torch.zeros_like(last)
        follows[:, 1:] = inside[:, :-1]  # an open word goes on with its next piece only
        after_ended = (ended.cumsum(1) - ended.long()) > 0  # a later position than a word's end
        allowed = real & (follows | ~joins & (fresh | after_ended))  # or a later word starts
        return allowed, fresh.squeeze(1) | ended.any(1)

    def allowed_tokens(self, src: Tensor, state: Tensor, vocab_size: int) -> Tensor:
        """(N, V) bool: the target tokens each hypothesis may choose next, EOS included."""
        allowed, may_end = self.positions(src, state)
        counts = torch.zeros(src.size(0), vocab_size, dtype=torch.int32, device=src.device)
        counts.scatter_add_(1, self.to_target.to(src.device)[src], allowed.to(torch.int32))
        mask = counts > 0
        mask[:, EOS_ID] = may_end
        return mask

    def advance(self, src: Tensor, state: Tensor, tokens: Tensor) -> Tensor:
        """The state after each hypothesis chose ``tokens`` (N,): every allowed position with that
        target id; none where the constraint did not allow the token (a candidate of
        log-probability -inf), after which nothing is allowed."""
        allowed, _ = self.positions(src, state)
        moved = torch.zeros_like(state)
        moved[:, 1:] = allowed & (self.to_target.to(src.device)[src] == tokens.unsqueeze(1))
        return moved
