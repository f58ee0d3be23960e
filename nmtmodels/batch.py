"""The batch every model family, the trainer and beam search agree on."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch
from torch import Tensor

from nmtmodels.symbols import BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID, SPECIAL_SYMBOLS, UNK, UNK_ID  # noqa: F401


@dataclass
class Batch:
    """A padded mini-batch, batch-first.

    ``src``      (B, S) source ids, each row ends with EOS, padded with PAD.
    ``tgt_in``   (B, T) BOS + target ids (decoder input), or None at inference.
    ``tgt_out``  (B, T) target ids + EOS (labels), or None at inference.
    ``extras``   family-specific padded tensors, batch-first (lattice edge spans,
                 compressed source, word-end indices, ...), keyed by field name.
    ``ids``      (B,) index of each row in its dataset, to restore corpus order.
    """

    src: Tensor
    src_lengths: Tensor
    tgt_in: Tensor | None = None
    tgt_out: Tensor | None = None
    extras: dict[str, Tensor] = field(default_factory=dict)
    ids: Tensor | None = None
    pad_id: int = PAD_ID

    @property
    def src_pad_mask(self) -> Tensor:
        """(B, S) bool, True at padding."""
        return self.src.eq(self.pad_id)

    @property
    def num_target_tokens(self) -> int:
        return 0 if self.tgt_out is None else int(self.tgt_out.ne(self.pad_id).sum())

    @property
    def size(self) -> int:
        return self.src.size(0)

    def to(self, device: torch.device | str) -> Batch:
        move = lambda t: None if t is None else t.to(device, non_blocking=True)
        return replace(
            self,
            src=move(self.src),
            src_lengths=move(self.src_lengths),
            tgt_in=move(self.tgt_in),
            tgt_out=move(self.tgt_out),
            extras={k: move(v) for k, v in self.extras.items()},
            ids=move(self.ids),
        )

    def select(self, index: Tensor) -> Batch:
        """Rows ``index`` of every batch-first tensor (used by beam search and tests)."""
        pick = lambda t: None if t is None else t.index_select(0, index.to(t.device))
        return replace(
            self,
            src=pick(self.src),
            src_lengths=pick(self.src_lengths),
            tgt_in=pick(self.tgt_in),
            tgt_out=pick(self.tgt_out),
            extras={k: pick(v) for k, v in self.extras.items()},
            ids=pick(self.ids),
        )
