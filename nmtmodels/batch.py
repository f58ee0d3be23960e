"""The batch every model family, the trainer and beam search agree on."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor

from nmtmodels.symbols import PAD_ID


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


def _padded_width(width: int, multiple: int) -> int:
    return -(-width // multiple) * multiple if multiple > 1 else width


def _pad_columns(tensor: Tensor | None, added: int, value: int) -> Tensor | None:
    if tensor is None or added == 0:
        return tensor
    return torch.nn.functional.pad(tensor, (0, added), value=value)


def pad_to_buckets(batch: Batch, length_multiple: int = 1, row_multiple: int = 1,
                   extra_pads: Mapping[str, int] | None = None) -> Batch:
    """``batch`` with its source and target lengths padded to multiples of ``length_multiple``
    and its rows to a multiple of ``row_multiple`` (nothing the loss sees changes: :mod:`nmtmodels.compiling`, which uses the buckets).

    The family fields in ``batch.extras`` (each (B, L), as :func:`nmtmodels.data.collate`
    makes them) get as many columns as the source, each with its pad value from
    ``extra_pads`` (a field without one is an error): a field may run along the source with a
    fixed offset (lattice spans: one per source token but ``</s>``), and a field with its own
    length (ESC's compressed source) may be padded by any amount.
    """
    if length_multiple < 1 or row_multiple < 1:
        raise ValueError(f"multiples must be >= 1, got {length_multiple} and {row_multiple}")
    extra_pads = dict(extra_pads or {})
    missing = sorted(set(batch.extras) - set(extra_pads))
    if missing:
        raise KeyError(f"no pad value for extra field(s) {', '.join(missing)}")
    if length_multiple > 1:
        src_added = _padded_width(batch.src.size(1), length_multiple) - batch.src.size(1)
        tgt_added = 0 if batch.tgt_in is None else _padded_width(batch.tgt_in.size(1), length_multiple) - batch.tgt_in.size(1)
        batch = replace(batch, src=_pad_columns(batch.src, src_added, batch.pad_id),
                        tgt_in=_pad_columns(batch.tgt_in, tgt_added, batch.pad_id),
                        tgt_out=_pad_columns(batch.tgt_out, tgt_added, batch.pad_id),
                        extras={name: _pad_columns(t, src_added, extra_pads[name]) for name, t in batch.extras.items()})
    added = _padded_width(batch.size, row_multiple) - batch.size
    if added:
        index = torch.cat([torch.arange(batch.size), torch.zeros(added, dtype=torch.long)])
        batch = batch.select(index.to(batch.src.device))
        if batch.tgt_out is not None:
            batch.tgt_out[-added:] = batch.pad_id
    return batch

