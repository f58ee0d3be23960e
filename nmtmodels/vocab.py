"""Token vocabularies for subword and character data.

A :class:`Vocabulary` maps tokens to ids with the four special symbols first
(``<pad>``=0, ``<s>``=1, ``</s>``=2, ``<unk>``=3, see :mod:`nmtmodels.symbols`).  Character
data uses the same class: its lines are characters separated by spaces, with ``▁`` for a
space, so every character is a token.

Sources:

* token counts (:meth:`Vocabulary.build`), e.g. counted over BPE-encoded training text
  with :meth:`Vocabulary.from_corpus` (one file, or both sides for a joint vocabulary);
* a vocabulary file (:meth:`Vocabulary.from_file`): subword-nmt's ``get-vocab`` output
  (``token count`` per line) or one token per line (the format :meth:`Vocabulary.save`
  writes, specials included).

Order: by descending count, ties broken by the token string, so a vocabulary built
from the same counts is always the same.  :meth:`Vocabulary.fingerprint` hashes the
token list; checkpoints store it so a mismatching vocabulary is detected.
"""
from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from nmtmodels.files import DataError, atomic_write_text, read_lines
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID, SPECIAL_SYMBOLS, UNK, UNK_ID


class Vocabulary:
    """Token <-> id map; ids 0-3 are ``<pad> <s> </s> <unk>``."""

    def __init__(self, tokens: Iterable[str] = ()):
        """``tokens``: the ordinary tokens in id order (specials are added in front; a
        special or a repeated token in ``tokens`` is an error)."""
        self._tokens: list[str] = list(SPECIAL_SYMBOLS)
        self._index: dict[str, int] = {tok: i for i, tok in enumerate(self._tokens)}
        for token in tokens:
            if token in self._index:
                raise ValueError(f"duplicate or special token {token!r} in vocabulary")
            if not token or any(ch.isspace() for ch in token):
                raise ValueError(f"invalid vocabulary token {token!r} (empty or containing whitespace)")
            self._index[token] = len(self._tokens)
            self._tokens.append(token)

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, counts: Mapping[str, int], *, min_count: int = 1, max_size: int | None = None) -> Vocabulary:
        """Tokens with count >= ``min_count``, most frequent first, at most ``max_size``
        ordinary tokens (specials not counted).  Special symbols in ``counts`` are ignored."""
        items = sorted(
            ((tok, n) for tok, n in counts.items() if n >= min_count and tok not in SPECIAL_SYMBOLS),
            key=lambda item: (-item[1], item[0]),
        )
        if max_size is not None:
            items = items[:max_size]
        return cls(tok for tok, _ in items)

    @classmethod
    def from_corpus(cls, paths: Sequence[str | os.PathLike], *, min_count: int = 1, max_size: int | None = None) -> Vocabulary:
        """Count whitespace-separated tokens over ``paths`` (several paths: a joint vocabulary)."""
        counts: Counter[str] = Counter()
        for path in paths:
            for line in read_lines(path):
                counts.update(line.split())
        if not counts:
            raise DataError(paths[0] if len(paths) == 1 else ", ".join(map(str, paths)), "no tokens to build a vocabulary from")
        return cls.build(counts, min_count=min_count, max_size=max_size)

    @classmethod
    def from_file(cls, path: str | os.PathLike, *, min_count: int = 1, max_size: int | None = None) -> Vocabulary:
        """Read ``token count`` lines (subword-nmt) or one token per line.

        With counts, ``min_count``/``max_size`` filter and the file's order is replaced by
        the canonical (count, token) order; without counts the file's order is kept (specials
        listed in the file are skipped, so :meth:`save` output loads back unchanged).
        A file mixing the two formats, a repeated token or an empty file is an error naming
        the file and line.
        """
        counts: dict[str, int] = {}
        plain: list[str] = []
        seen_at: dict[str, int] = {}
        for number, line in enumerate(read_lines(path), start=1):
            fields = line.split()
            if not fields:
                raise DataError(path, "empty line in vocabulary file", number)
            if len(fields) > 2 or (len(fields) == 2 and not _is_count(fields[1])):
                raise DataError(path, f"expected 'token' or 'token count', got {line!r}", number)
            token = fields[0]
            if token in seen_at:
                raise DataError(path, f"token {token!r} repeats line {seen_at[token]}", number)
            seen_at[token] = number
            if len(fields) == 2:
                if plain:
                    raise DataError(path, "line has a count but earlier lines do not", number)
                counts[token] = int(fields[1])
            else:
                if counts:
                    raise DataError(path, "line has no count but earlier lines do", number)
                plain.append(token)
        if not seen_at:
            raise DataError(path, "empty vocabulary file")
        if counts:
            return cls.build(counts, min_count=min_count, max_size=max_size)
        tokens = [tok for tok in plain if tok not in SPECIAL_SYMBOLS]
        return cls(tokens[:max_size] if max_size is not None else tokens)

    load = from_file

    def save(self, path: str | os.PathLike) -> None:
        """Write every token (specials included) one per line, atomically."""
        atomic_write_text(path, "".join(f"{tok}\n" for tok in self._tokens))

    # ------------------------------------------------------------------ mapping
    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, token: str) -> bool:
        return token in self._index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self._tokens == other._tokens

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} tokens, fingerprint {self.fingerprint()[:12]})"

    @property
    def tokens(self) -> list[str]:
        """All tokens in id order (a copy)."""
        return list(self._tokens)

    def index(self, token: str) -> int:
        return self._index.get(token, UNK_ID)

    def token(self, index: int) -> str:
        return self._tokens[index]

    def encode(self, tokens: Sequence[str], add_eos: bool = False) -> list[int]:
        """Ids of ``tokens`` (unknown -> ``<unk>``), with ``</s>`` appended if ``add_eos``."""
        get = self._index.get
        ids = [get(tok, UNK_ID) for tok in tokens]
        if add_eos:
            ids.append(EOS_ID)
        return ids

    def decode(self, ids: Iterable[int], *, keep_unk: bool = False) -> list[str]:
        """Tokens of ``ids`` up to the first ``</s>``, skipping ``<pad>``/``<s>`` and
        ``<unk>`` (kept as the literal ``<unk>`` with ``keep_unk``)."""
        out: list[str] = []
        for i in ids:
            i = int(i)
            if i == EOS_ID:
                break
            if i in (PAD_ID, BOS_ID) or (i == UNK_ID and not keep_unk):
                continue
            out.append(self._tokens[i] if i != UNK_ID else UNK)
        return out

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the token list; equal iff the id mapping is equal."""
        return hashlib.sha256("\n".join(self._tokens).encode("utf-8")).hexdigest()


def _is_count(text: str) -> bool:
    return text.isdigit()


def check_fingerprint(vocab: Vocabulary, expected: str, what: str, path: str | os.PathLike | None = None) -> None:
    """Raise ValueError when ``vocab`` does not match the fingerprint ``expected``."""
    actual = vocab.fingerprint()
    if actual != expected:
        source = f" ({path})" if path is not None else ""
        raise ValueError(
            f"{what} vocabulary{source} does not match the checkpoint's "
            f"(fingerprint {actual[:12]} != {expected[:12]})"
        )
