"""Word and subword lattices (Xiao et al. 2019, section 3.1): build, validate, store.

A lattice packs several segmentations of one sentence's characters c_1..c_N: node v_i is
the gap after character i (v_0 before the first, v_N after the last), edge e_{i:j} (i < j)
is a word or subword covering c_{i+1}..c_j.  Every segmentation is a path from v_0 to v_N;
identical edges (same span) of different segmentations are merged into one.

Characters are those of the text *without* spaces: a word segmentation (zh, ``seg/S/``)
spells the sentence without whitespace, and a BPE segmentation (``bpeN/``) spells it once
its ``@@`` joiners are stripped, so a word boundary is no node of its own and the
segmentations of one sentence share their nodes.  An edge's token is the unit as the
segmentation writes it (a subword keeps its ``@@`` when it does not end a word; the span
decides that, so merged edges have the same token).

File format (``.lattice``, UTF-8, one line per sentence, line k = sentence k of the
segmentation files)::

    START:END:TOKEN START:END:TOKEN ...

edges separated by single spaces, ordered by (START, END), at most one edge per span,
TOKEN non-empty and spelling END-START characters (``@@`` joiner not counted); N is the
largest END; an empty line is the empty lattice.  :func:`check_lattice` (the validator)
also requires the graph to be acyclic (START < END), connected, and every edge to lie on
a path from v_0 to v_N; any violation is a :class:`~nmtmodels.files.DataError` naming
the file and line.

The model inputs of a lattice file (``inputs``) are three line-aligned files: the edge
tokens (the source sequence, in file order), their start nodes and their end nodes, counted
in the lattice's *position unit* (``--position-unit``), since the model's lattice positional
encoding (LPE, section 3.2) is the start node's number:

* ``char``: node v_i is i, the characters before it (the file's START/END as they are);
* ``subword``: node v_i is the number of *minimum units* before it, the units of the
  coarsest common refinement of the lattice's segmentations (every node of the lattice cuts
  the characters into them).  Renumbering keeps the nodes' order, so the edge relations of
  Table 1 (LSA) are the same in both units; only the positions change.

Footnote 1 of the paper says which unit is meant: the character for a word lattice and the
minimum subword unit of the predefined subword segmentations for a subword lattice.  So the
subword lattice "th@@ e / the / hous@@ e / house" has the minimum units th, e, hous, e and
positions 0 0 1 2 2 3 for its edges th@@ the e hous@@ house e (characters: 0 0 2 3 3 7),
while a Chinese word lattice keeps character positions even where all its segmenters agree
on a word.  The workflow (``rules/lattice.smk``) follows the footnote: :func:`paper_position_unit`
picks ``subword`` for a lattice of BPE segmentations only (``bpeN``) and ``char`` for one
with a word segmentation; ``--position-unit char`` on a subword lattice gives our earlier
character positions.  For BPE sizes of one merge list, whose segmentations refine each other,
the minimum units are the units of the smallest size (fewest merges); for segmentations that
cross, we take the common refinement (our choice: the paper's segmentations were nested).

The workflow writes lattice files and model inputs with the command line of
:mod:`workflow_scripts.data.lattice` (rules/lattice.smk); a model package builds the same
inputs from raw text in-process (:func:`lattice_inputs`, :mod:`nmtmodels.model_package`),
so training, the workflow's decoding and ``nmt-translate`` read one implementation.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from nmtmodels.files import DataError, atomic_outputs, read_lines

JOINER = "@@"  # subword-nmt's "not the end of a word" mark
POSITION_UNITS = ("subword", "char")  # what the model inputs' node numbers count (module docstring)


class Edge(NamedTuple):
    start: int
    end: int
    token: str


def unit_length(token: str) -> int:
    """Characters a token covers (its ``@@`` joiner not counted)."""
    return len(token[: -len(JOINER)] if token.endswith(JOINER) and len(token) > len(JOINER) else token)


def path_edges(tokens: Sequence[str]) -> list[Edge]:
    """The edges of one segmentation: consecutive spans over the characters."""
    edges, node = [], 0
    for token in tokens:
        end = node + unit_length(token)
        edges.append(Edge(node, end, token))
        node = end
    return edges


def characters(tokens: Sequence[str]) -> str:
    """The characters a segmentation spells (joiners stripped, no spaces)."""
    return "".join(token[: unit_length(token)] for token in tokens)


def build_lattice(segmentations: Sequence[Sequence[str]]) -> list[Edge]:
    """Merge segmentations of the same characters into lattice edges ordered by (start, end).

    ValueError if they spell different characters or put different tokens on one span."""
    spelled = [characters(tokens) for tokens in segmentations]
    for k, text in enumerate(spelled[1:], start=1):
        if text != spelled[0]:
            raise ValueError(f"segmentation {k + 1} spells {text!r} but segmentation 1 spells {spelled[0]!r}")
    by_span: dict[tuple[int, int], str] = {}
    for tokens in segmentations:
        for edge in path_edges(tokens):
            known = by_span.setdefault((edge.start, edge.end), edge.token)
            if known != edge.token:
                raise ValueError(f"span {edge.start}:{edge.end} is {known!r} in one segmentation and {edge.token!r} in another")
    return [Edge(start, end, token) for (start, end), token in sorted(by_span.items())]


def format_lattice(edges: Iterable[Edge]) -> str:
    return " ".join(f"{e.start}:{e.end}:{e.token}" for e in edges)


def parse_lattice(line: str) -> list[Edge]:
    """Edges of one line (ValueError on a malformed field; see :func:`check_lattice`)."""
    edges = []
    for field in line.split(" ") if line else []:
        parts = field.split(":", 2)
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
            raise ValueError(f"edge {field!r} is not START:END:TOKEN")
        edges.append(Edge(int(parts[0]), int(parts[1]), parts[2]))
    return edges


def check_lattice(edges: Sequence[Edge]) -> None:
    """ValueError unless ``edges`` form a valid lattice file line (module docstring)."""
    for k, edge in enumerate(edges):
        if not edge.token or any(ch.isspace() for ch in edge.token):
            raise ValueError(f"edge {k + 1} has an empty or blank token")
        if edge.start >= edge.end:
            raise ValueError(f"edge {format_lattice([edge])} does not go forward (START < END; a lattice is acyclic)")
        if unit_length(edge.token) != edge.end - edge.start:
            raise ValueError(f"edge {format_lattice([edge])} spans {edge.end - edge.start} characters but its token has "
                             f"{unit_length(edge.token)}")
        if k and (edge.start, edge.end) <= edges[k - 1][:2]:
            what = "repeats the span of" if (edge.start, edge.end) == edges[k - 1][:2] else "comes after"
            raise ValueError(f"edge {format_lattice([edge])} {what} {format_lattice([edges[k - 1]])} "
                             "(edges are ordered by (START, END), identical edges merged)")
    if not edges:
        return
    last = max(edge.end for edge in edges)
    reached = {0}  # nodes reachable from v_0; edges are sorted by start, so one pass suffices
    for edge in edges:
        if edge.start in reached:
            reached.add(edge.end)
    reaching = {last}  # nodes from which v_N is reachable
    for edge in sorted(edges, key=lambda e: e.end, reverse=True):
        if edge.end in reaching:
            reaching.add(edge.start)
    for edge in edges:
        if edge.start not in reached or edge.end not in reaching:
            if edge.start not in reached:
                side = f"v_{edge.start} is not reachable from v_0"
            else:
                side = f"v_{last} is not reachable from v_{edge.end}"
            raise ValueError(f"edge {format_lattice([edge])} is on no path from v_0 to v_{last} ({side}: "
                             "the lattice is disconnected or the edge dangles)")


def renumber_nodes(edges: Sequence[Edge], position_unit: str) -> list[Edge]:
    """``edges`` with their nodes numbered in ``position_unit`` (module docstring): ``char``
    leaves them as they are; ``subword`` numbers every node by the minimum units before it,
    i.e. by its rank among the lattice's nodes (v_0 stays 0)."""
    if position_unit not in POSITION_UNITS:
        raise ValueError(f"position unit {position_unit!r} is not one of {', '.join(POSITION_UNITS)}")
    if position_unit == "char":
        return list(edges)
    rank = {node: k for k, node in enumerate(sorted({e.start for e in edges} | {e.end for e in edges}))}
    return [Edge(rank[e.start], rank[e.end], e.token) for e in edges]


def paper_position_unit(segmentations: Sequence[str]) -> str:
    """The position unit footnote 1 gives a lattice of the named segmentations: ``subword``
    when all are BPE sizes (``bpeN``, a subword lattice), else ``char`` (a word lattice, or
    one that mixes words and subwords, whose characters are its finest common elements)."""
    bpe = all(name[:3] == "bpe" and name[3:].isdigit() for name in segmentations)
    return "subword" if segmentations and bpe else "char"


def read_lattices(path: str) -> Iterator[list[Edge]]:
    """The checked lattices of a file; DataError naming the file and line."""
    for number, line in enumerate(read_lines(path), start=1):
        try:
            edges = parse_lattice(line)
            check_lattice(edges)
        except ValueError as exc:
            raise DataError(path, str(exc), number) from None
        yield edges


def build_file(inputs: Sequence[str], output: str) -> int:
    """Write the lattices of line-aligned segmentation files; return the number of lines."""
    sentinel = object()
    count = 0
    with atomic_outputs(output) as (out,):
        readers = [read_lines(path) for path in inputs]
        for count, lines in enumerate(itertools.zip_longest(*readers, fillvalue=sentinel), start=1):
            if any(line is sentinel for line in lines):
                short = [path for path, line in zip(inputs, lines) if line is sentinel]
                longer = [path for path, line in zip(inputs, lines) if line is not sentinel]
                raise DataError(short[0], f"has {count - 1} lines, fewer than {longer[0]}")
            try:
                edges = build_lattice([line.split() for line in lines])
                check_lattice(edges)
            except ValueError as exc:
                raise DataError(inputs[0], f"{exc} (segmentations: {', '.join(inputs)})", count) from None
            out.write(format_lattice(edges) + "\n")
    return count


class LatticeInputs(NamedTuple):
    """A lattice's model inputs: edge tokens and their start and end nodes (one line each)."""

    tokens: str
    starts: str
    ends: str


def edge_inputs(edges: Sequence[Edge], position_unit: str) -> LatticeInputs:
    """The model inputs of one checked lattice, the nodes numbered in ``position_unit``
    (:func:`renumber_nodes`)."""
    edges = renumber_nodes(edges, position_unit)
    return LatticeInputs(" ".join(e.token for e in edges), " ".join(str(e.start) for e in edges),
                         " ".join(str(e.end) for e in edges))


def lattice_inputs(segmentations: Sequence[Sequence[str]], position_unit: str) -> LatticeInputs:
    """The model inputs of the lattice of one sentence's segmentations (:func:`build_lattice`,
    :func:`check_lattice`, :func:`edge_inputs`): what ``build_file`` then ``write_inputs`` write
    for that sentence.  ValueError as :func:`build_lattice` and :func:`check_lattice`."""
    edges = build_lattice(segmentations)
    check_lattice(edges)
    return edge_inputs(edges, position_unit)


def write_inputs(lattice: str, tokens: str, starts: str, ends: str, position_unit: str) -> int:
    """The model inputs of a lattice file: edge tokens, start and end nodes (line-aligned),
    the nodes numbered in ``position_unit`` (:func:`renumber_nodes`)."""
    count = 0
    with atomic_outputs(tokens, starts, ends) as (tok_out, start_out, end_out):
        for edges in read_lattices(lattice):
            count += 1
            inputs = edge_inputs(edges, position_unit)
            tok_out.write(inputs.tokens + "\n")
            start_out.write(inputs.starts + "\n")
            end_out.write(inputs.ends + "\n")
    return count
