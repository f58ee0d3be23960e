"""Lattice files (workflow side): building from segmentations, validator, format round trip."""
from __future__ import annotations

import copy
import gzip
import math
import os
import random
import unicodedata
from pathlib import Path

import pytest
import torch
import yaml

from nmtmodels.files import DataError
from nmtmodels.models.lattice import relation_ids
from nmtmodels.text.lattice import (
    POSITION_UNITS,
    Edge,
    build_file,
    build_lattice,
    check_lattice,
    format_lattice,
    paper_position_unit,
    parse_lattice,
    path_edges,
    read_lattices,
    renumber_nodes,
)
from workflow_scripts.dag import checks, families, lattices, runs, sources
from workflow_scripts.data import bpe
from workflow_scripts.data.lattice import main

# Figure 1: three segmentations of "mao yi fa zhan ju fu zong cai"
FIGURE = ["贸易 发展局 副总裁", "贸易 发展 局 副 总裁", "贸易发展局 副总裁"]


def test_word_lattice_merges_identical_edges() -> None:
    edges = build_lattice([line.split() for line in FIGURE])
    assert [(e.start, e.end, e.token) for e in edges] == [
        (0, 2, "贸易"), (0, 5, "贸易发展局"), (2, 4, "发展"), (2, 5, "发展局"),
        (4, 5, "局"), (5, 6, "副"), (5, 8, "副总裁"), (6, 8, "总裁"),
    ]  # 贸易 and 副总裁 occur in several segmentations but once in the lattice


def test_subword_lattice_counts_characters_without_spaces_or_joiners() -> None:
    coarse = ["a", "wom@@", "an", "walks"]
    fine = ["a", "w@@", "om@@", "an", "walk@@", "s"]
    edges = build_lattice([coarse, fine])
    assert edges == [Edge(0, 1, "a"), Edge(1, 2, "w@@"), Edge(1, 4, "wom@@"), Edge(2, 4, "om@@"),
                     Edge(4, 6, "an"), Edge(6, 10, "walk@@"), Edge(6, 11, "walks"), Edge(10, 11, "s")]


def test_segmentations_of_different_text_are_rejected() -> None:
    with pytest.raises(ValueError, match="segmentation 2 spells"):
        build_lattice([["贸易", "发展"], ["贸易", "发展局"]])
    with pytest.raises(ValueError, match="span 0:2"):
        build_lattice([["ab"], ["ab@@"]])


def test_format_round_trip(tmp_path: Path) -> None:
    edges = build_lattice([line.split() for line in FIGURE])
    line = format_lattice(edges)
    assert line.startswith("0:2:贸易 0:5:贸易发展局 2:4:发展")
    assert parse_lattice(line) == edges
    odd = [Edge(0, 4, "10:3"), Edge(4, 5, "x")]  # a token may contain ':'
    assert parse_lattice(format_lattice(odd)) == odd
    path = tmp_path / "x.lattice"
    path.write_text(line + "\n\n" + format_lattice(odd) + "\n", encoding="utf-8")
    assert list(read_lattices(str(path))) == [edges, [], odd]


@pytest.mark.parametrize("edges, message", [
    ([Edge(0, 1, "a"), Edge(1, 1, "")], "empty"),
    ([Edge(0, 2, "ab"), Edge(2, 1, "b")], "does not go forward"),  # a backward edge makes a cycle
    ([Edge(0, 1, "a"), Edge(0, 1, "b")], "repeats the span"),
    ([Edge(0, 2, "ab"), Edge(0, 1, "a")], "comes after"),
    ([Edge(0, 2, "abc")], "spans 2 characters"),
    ([Edge(0, 1, "a"), Edge(2, 3, "c")], "edge 0:1:a .*v_3 is not reachable from v_1"),  # disconnected
    ([Edge(0, 3, "abc"), Edge(3, 4, "d"), Edge(3, 5, "de")], "edge 3:4:d .*v_5 is not reachable from v_4"),  # dangling
    ([Edge(0, 2, "ab"), Edge(1, 2, "b")], "v_1 is not reachable from v_0"),  # dangling at the start
])
def test_validator_rejects(edges: list[Edge], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_lattice(edges)


def test_invalid_lattice_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.lattice"
    path.write_text("0:1:a 1:2:b\n0:1:a 2:3:c\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{path}:2: .*not reachable"):
        list(read_lattices(str(path)))
    path.write_text("0:1:a\n0-1-a\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{path}:2: edge '0-1-a' is not START:END:TOKEN"):
        list(read_lattices(str(path)))


def test_build_file_and_model_inputs(tmp_path: Path) -> None:
    segs = []
    for k, lines in enumerate(zip(*[FIGURE, ["我 爱 你", "我爱 你", "我 爱你"]])):
        path = tmp_path / f"seg{k}.zh"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        segs.append(str(path))
    lattice = tmp_path / "train.lattice"
    assert build_file(segs, str(lattice)) == 2
    assert lattice.read_text(encoding="utf-8").splitlines()[1] == "0:1:我 0:2:我爱 1:2:爱 1:3:爱你 2:3:你"
    out = {name: tmp_path / name for name in ("tokens", "starts", "ends")}
    main(["inputs", "--lattice", str(lattice), "--position-unit", "char", *(f"--{k}={v}" for k, v in out.items())])
    assert out["tokens"].read_text(encoding="utf-8").splitlines()[1] == "我 我爱 爱 爱你 你"
    assert out["starts"].read_text().splitlines() == ["0 0 2 2 4 5 5 6", "0 0 1 1 2"]
    assert out["ends"].read_text().splitlines() == ["2 5 4 5 5 6 8 8", "1 2 2 3 3"]


# Footnote 1 / issue 19: the subword lattice of "th@@ e hous@@ e" and "the house".  Its edges,
# ordered by (start, end): th@@ the e hous@@ house e.  Minimum subword units: th | e | hous | e,
# so the edges start after 0, 0, 1, 2, 2, 3 units; in characters after 0, 0, 2, 3, 3, 7.
THE_HOUSE = ["th@@ e hous@@ e", "the house"]


def test_subword_lattice_positions_count_minimum_subword_units() -> None:
    edges = build_lattice([line.split() for line in THE_HOUSE])
    assert [e.token for e in edges] == ["th@@", "the", "e", "hous@@", "house", "e"]
    units = renumber_nodes(edges, "subword")
    assert [e.start for e in units] == [0, 0, 1, 2, 2, 3]
    assert [e.end for e in units] == [1, 2, 2, 3, 4, 4]
    assert [e.token for e in units] == [e.token for e in edges]
    chars = renumber_nodes(edges, "char")
    assert [e.start for e in chars] == [0, 0, 2, 3, 3, 7]
    assert [e.end for e in chars] == [2, 3, 3, 7, 8, 8]
    with pytest.raises(ValueError, match="position unit 'word' is not one of subword, char"):
        renumber_nodes(edges, "word")


def test_word_lattice_positions_count_characters() -> None:
    """Footnote 1: the elements of a word lattice are characters.  In Figure 1 every segmenter
    has 贸易 (2 characters), so 发展 starts at character 2 although only one minimum unit
    (贸易) precedes it; the workflow gives word lattices ``char``."""
    edges = build_lattice([line.split() for line in FIGURE])
    assert paper_position_unit(["jieba", "thulac", "snownlp"]) == "char"
    assert [e.start for e in renumber_nodes(edges, "char")] == [0, 0, 2, 2, 4, 5, 5, 6]
    assert [e.start for e in renumber_nodes(edges, "subword")] == [0, 0, 1, 1, 2, 3, 3, 4]  # not the paper's
    # a sentence all segmenters split alike: 我爱 | 你 -> characters 0, 2
    assert [e.start for e in renumber_nodes(build_lattice([["我爱", "你"]] * 3), "char")] == [0, 2]


@pytest.mark.parametrize("segmentations, unit", [
    (["bpe2000", "bpe4000", "bpe8000"], "subword"),
    (["bpe8000"], "subword"),
    (["jieba", "thulac", "snownlp"], "char"),
    (["jieba", "bpe8000"], "char"),  # mixed: characters are the finest common elements
    (["bpe"], "char"),  # a segmenter named 'bpe' is no BPE size
])
def test_paper_position_unit(segmentations: list[str], unit: str) -> None:
    assert paper_position_unit(segmentations) == unit


def test_renumbering_keeps_the_edge_relations() -> None:
    """LSA's Table 1 relations compare nodes only by order, so both units give the same ids."""
    for lines in (THE_HOUSE, FIGURE, ["a wom@@ an walks", "a w@@ om@@ an walk@@ s"]):
        edges = build_lattice([line.split() for line in lines])
        spans = {unit: renumber_nodes(edges, unit) for unit in POSITION_UNITS}
        ids = {unit: relation_ids(torch.tensor([[e.start for e in es]]), torch.tensor([[e.end for e in es]]))
               for unit, es in spans.items()}
        assert torch.equal(ids["subword"], ids["char"])


def test_cli_inputs_position_unit(tmp_path: Path, capsys) -> None:
    segs = []
    for k, line in enumerate(THE_HOUSE):
        path = tmp_path / f"bpe{k}.en"
        path.write_text(line + "\n\n", encoding="utf-8")  # and an empty sentence
        segs.append(str(path))
    lattice = tmp_path / "x.lattice"
    build_file(segs, str(lattice))
    out = {name: tmp_path / name for name in ("tokens", "starts", "ends")}
    flags = [f"--{k}={v}" for k, v in out.items()]
    main(["inputs", "--lattice", str(lattice), "--position-unit", "subword", *flags])
    assert out["starts"].read_text().splitlines() == ["0 0 1 2 2 3", ""]
    assert out["ends"].read_text().splitlines() == ["1 2 2 3 4 4", ""]
    main(["inputs", "--lattice", str(lattice), "--position-unit", "char", *flags])
    assert out["starts"].read_text().splitlines() == ["0 0 2 3 3 7", ""]
    with pytest.raises(SystemExit):
        main(["inputs", "--lattice", str(lattice), *flags])
    assert "--position-unit" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["inputs", "--lattice", str(lattice), "--position-unit", "word", *flags])
    assert "--position-unit: invalid choice: 'word'" in capsys.readouterr().err


def test_build_file_errors_name_file_and_line_and_leave_no_output(tmp_path: Path) -> None:
    a, b = tmp_path / "a.zh", tmp_path / "b.zh"
    a.write_text("我 爱 你\n他 好\n", encoding="utf-8")
    b.write_text("我爱 你\n她 好\n", encoding="utf-8")
    out = tmp_path / "x.lattice"
    with pytest.raises(DataError, match=rf"{a}:2: segmentation 2 spells '她好'"):
        build_file([str(a), str(b)], str(out))
    b.write_text("我爱 你\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{b}: has 1 lines"):
        build_file([str(a), str(b)], str(out))
    assert not out.exists()


def test_cli_validate_exits_with_file_and_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.lattice"
    path.write_text("0:2:ab 1:2:b\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", str(path)])
    assert exit_info.value.code == 1
    assert f"{path}:1:" in capsys.readouterr().err


# ----------------------------------------------------------------------------- workflow config
CONFIG = yaml.safe_load((Path(__file__).parent.parent / "config.yaml").read_text())


def config_with(family: str, lattice: list[str], corpus: str = "tatoeba_zh_en") -> dict:
    config = dict(CONFIG)
    config["experiments"] = {"probe": {"family": family, "corpora": [corpus], "subwords": "bpe8000", "lattice": lattice}}
    return config


def test_lattice_family_reads_edge_tokens_and_spans() -> None:
    config = config_with("lattice_transformer", ["jieba", "thulac", "snownlp"])
    root = "results/data/tatoeba_zh_en/lattice/jieba+thulac+snownlp"
    inputs = sources.model_inputs(config, "probe", "tatoeba_zh_en")
    assert inputs["train_src"] == f"{root}/train.zh-en.zh"
    assert inputs["src_vocab"] == f"{root}/vocab.zh-en.zh"
    assert inputs["train_tgt"] == "results/data/tatoeba_zh_en/bpe8000/train.zh-en.en"
    assert sources.extra_input_flags(config, "probe", "tatoeba_zh_en", ("test",)) == (
        f"--extra starts={root}/test.zh-en.starts --extra ends={root}/test.zh-en.ends")
    assert lattices.segmentation_paths(config, "tatoeba_zh_en", "jieba+thulac+snownlp", "dev") == [
        f"results/data/tatoeba_zh_en/seg/{s}/dev.zh-en.zh" for s in ("jieba", "thulac", "snownlp")]
    assert lattices.segmentation_paths(config, "multi30k_en_de", "bpe2000+bpe8000", "train") == [
        f"results/data/multi30k_en_de/bpe{n}/train.en-de.en" for n in (2000, 8000)]


def test_one_best_transformer_on_a_segmentation_takes_no_spans() -> None:
    config = config_with("transformer", ["thulac"])
    assert sources.source_of_test_set(config, "probe", "tatoeba_zh_en", "test") == "results/data/tatoeba_zh_en/lattice/thulac/test.zh-en.zh"
    assert sources.extra_input_flags(config, "probe", "tatoeba_zh_en", ("train", "dev")) == ""


def test_a_family_that_reads_spans_needs_a_lattice() -> None:
    """Declared by lattice.py's FAMILY_NEEDS (inputs starts, ends), not known by name."""
    with pytest.raises(checks.WorkflowConfigError, match=r"experiments\.probe\.lattice: family 'lattice_transformer' needs"):
        families.check_family_needs(config_with("lattice_transformer", None))


@pytest.mark.parametrize("lattice, corpus, message", [
    (["jieba", "fugashi"], "tatoeba_zh_en", r"experiments\.probe\.lattice\[1\]: 'fugashi' is not prepared"),
    (["bpe8000", "bpe16000"], "multi30k_en_de", r"experiments\.probe\.lattice\[1\]: 'bpe16000' is not prepared"),
])
def test_check_lattices_names_the_key(lattice, corpus: str, message: str) -> None:
    config = config_with("lattice_transformer", lattice, corpus)
    with pytest.raises(checks.WorkflowConfigError, match=message):
        lattices.check_lattices(config)


def test_embedded_default_and_ablation_lattices_are_prepared() -> None:
    from snakemake.utils import update_config

    def lattices_of(config: dict) -> set[str]:
        lattices.check_lattices(config)
        return {lattices.lattice_name(config["experiments"][e]["lattice"]) for e, _ in runs.experiment_runs(config)
                if config["experiments"][e].get("lattice")}

    assert lattices_of(CONFIG) == {"jieba+thulac+snownlp", "jieba"}  # the lattice and its 1-best baseline's words
    ablations = copy.deepcopy(CONFIG)
    update_config(ablations, yaml.safe_load((Path(__file__).parent.parent / "configs/ablations.yaml").read_text()))
    assert lattices_of(ablations) == {"jieba+thulac+snownlp", "jieba", "bpe2000+bpe4000+bpe8000"}


def test_subword_lattices_of_real_bpe_segmentations_contain_every_segmentation() -> None:
    """BPE at three merge sizes (subword-nmt, '@@ ' joiners) over the same tokenised lines:
    every line's lattice is valid and each segmentation is one of its paths."""
    rng = random.Random(3)
    words = [stem + suffix for stem in ("play", "walk", "climb", "paint", "look") for suffix in ("", "s", "ed", "ing", "ers")]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) + " ." for _ in range(200)]
    counts = bpe.word_counts(lines)
    encoders = [bpe.bpe_from_codes(bpe.learn_codes(counts, merges)) for merges in (5, 20, 60)]
    distinct = 0
    for line in lines:
        segmentations = [encoder.process_line(line).split() for encoder in encoders]
        edges = build_lattice(segmentations)
        check_lattice(edges)
        for tokens in segmentations:
            assert set(path_edges(tokens)) <= set(edges)
        distinct += len({tuple(tokens) for tokens in segmentations}) > 1
        # BPE sizes of one merge order refine each other, so the minimum subword units are
        # the units of the smallest size: its path gets the subword positions 0, 1, 2, ...
        finest = {(e.start, e.end) for e in path_edges(segmentations[0])}
        units = [(u.start, u.end) for e, u in zip(edges, renumber_nodes(edges, "subword"), strict=True) if (e.start, e.end) in finest]
        assert units == [(k, k + 1) for k in range(len(segmentations[0]))]
    assert distinct > 100  # the sizes really segment differently, so lattices have several paths


# ----------------------------------------------------------------------------- chain reduction
# A lattice built from one segmentation is a chain: its edges are that segmentation's words in
# order, each starting where the previous one ends.  On a chain the lattice encoder must reduce
# to known models (docs/models/lattice.md, "Chain reduction"):
# * +LPE without LSA, positions in minimum units (node ranks: 0, 1, 2, ...), is the Transformer
#   on the same words: the same loss and gradients with the same parameters.  With the
#   character positions that footnote 1 gives a *word* lattice it is the Transformer with its
#   positions at the words' character offsets instead.
# * LSA is Shaw et al.'s relative self-attention with clipping distance k = 2: of the eight
#   relations only five occur, each a clipped distance d = clip(n - m, -2, 2) from query m to
#   key n (self 0, left_adjacent +1: the key is the next word, right_adjacent -1, preceding
#   >= +2, succeeding <= -2); includes / included / intersects never occur.
CHAIN_RELATIONS = ("succeeding", "right_adjacent", "self", "left_adjacent", "preceding")  # d = -2 .. +2
MIRROR = Path(os.environ.get("NMT_DATA_MIRROR") or Path(__file__).resolve().parents[2] / "shared" / "data")
# used when the corpus mirror is absent: Tatoeba-like sentences, segmented by jieba all the same
FALLBACK = ["我们明天去北京看看长城。", "汤姆不知道玛丽为什么哭了。", "这本书是我昨天在图书馆借的。", "你会说中文吗?"]
SMALL_MODEL = {"d_model": 32, "heads": 4, "encoder_layers": 2, "decoder_layers": 2, "ffn_dim": 64, "dropout": 0.0,
               "normalize_before": True}


def tatoeba_pairs(count: int = 12) -> list[tuple[str, str]]:
    """(Chinese, English) lines spread over the Tatoeba file of the mirror, NFKC as the workflow
    normalises them (config ``unicode_form``); a fixed list without the mirror."""
    path = MIRROR / "zh-en" / "cmn.txt.gz"
    if not path.exists():
        return [(zh, "a b c") for zh in FALLBACK]
    with gzip.open(path, "rt", encoding="utf-8-sig") as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle if line.strip()]
    rows = rows[:: len(rows) // count][:count]
    return [(unicodedata.normalize("NFKC", zh), unicodedata.normalize("NFKC", en)) for en, zh, *_ in rows]


@pytest.fixture(scope="module")
def jieba_chain(tmp_path_factory) -> dict[str, Path]:
    """The workflow's data steps on real lines: jieba segmentation (``segment`` rule), the
    one-segmenter lattice (``lattice`` rule) and its model inputs in both position units
    (``lattice_inputs``), with the English side as target."""
    from nmtmodels.text.lattice import write_inputs
    from workflow_scripts.data.segment import segment_file

    root = tmp_path_factory.mktemp("chain")
    pairs = tatoeba_pairs()
    (root / "norm.zh").write_text("".join(zh + "\n" for zh, _ in pairs), encoding="utf-8")
    (root / "train.en").write_text("".join(en + "\n" for _, en in pairs), encoding="utf-8")
    segment_file("zh", "jieba", str(root / "norm.zh"), str(root / "seg.zh"))
    build_file([str(root / "seg.zh")], str(root / "chain.lattice"))
    files = {"seg": root / "seg.zh", "lattice": root / "chain.lattice", "tgt": root / "train.en"}
    for unit in POSITION_UNITS:
        names = {part: root / f"{unit}.{part}" for part in ("tokens", "starts", "ends")}
        write_inputs(str(files["lattice"]), *(str(names[part]) for part in ("tokens", "starts", "ends")), unit)
        files.update({f"{unit}.{part}": path for part, path in names.items()})
    return files


def test_a_one_segmenter_lattice_is_its_segmentation_as_a_chain(jieba_chain) -> None:
    segmentations = [line.split() for line in jieba_chain["seg"].read_text(encoding="utf-8").splitlines()]
    assert sum(len(words) > 1 and any(len(w) > 1 for w in words) for words in segmentations) >= 3  # real multi-char words
    lines = {key: jieba_chain[key].read_text(encoding="utf-8").splitlines()
             for key in ("char.tokens", "char.starts", "char.ends", "subword.starts", "subword.ends")}
    for k, words in enumerate(segmentations):
        assert lines["char.tokens"][k].split() == words  # the edge tokens are the 1-best's words, in order
        offsets = [sum(len(w) for w in words[:i]) for i in range(len(words) + 1)]  # characters before each word
        assert [int(x) for x in lines["char.starts"][k].split()] == offsets[:-1]
        assert [int(x) for x in lines["char.ends"][k].split()] == offsets[1:]
        assert [int(x) for x in lines["subword.starts"][k].split()] == list(range(len(words)))
        assert [int(x) for x in lines["subword.ends"][k].split()] == list(range(1, len(words) + 1))


def chain_batch(files: dict[str, Path], unit: str):
    """Every line of the chain in one padded batch, read as nmt-train reads it."""
    from nmtmodels.data import ExtraField, ParallelDataset
    from nmtmodels.models.lattice import SPAN_PAD
    from nmtmodels.vocab import Vocabulary

    tokens = files[f"{unit}.tokens"]
    data = ParallelDataset.from_files(
        tokens, files["tgt"], Vocabulary.from_corpus([tokens]), Vocabulary.from_corpus([files["tgt"]]),
        extras={name: ExtraField(str(files[f"{unit}.{name}"]), SPAN_PAD) for name in ("starts", "ends")},
        log=lambda message: None)
    return data.collate(range(len(data)))


def chain_models(positions: str, lsa: bool, src_vocab: int, tgt_vocab: int, seed: int = 0):
    """The lattice model and a Transformer with the same parameters (in float64)."""
    from nmtmodels.config import ModelConfig
    from nmtmodels.registry import build_model

    torch.manual_seed(seed)
    lattice = build_model(ModelConfig.from_dict({**SMALL_MODEL, "family": "lattice_transformer",
                                                 "options": {"positions": positions, "lsa": lsa}}), src_vocab, tgt_vocab)
    if lsa:  # they start at zero (the plain encoder): random, so that they matter
        with torch.no_grad():
            lattice.encoder.relation_keys.normal_()
            lattice.encoder.relation_values.normal_()
    transformer = build_model(ModelConfig.from_dict({**SMALL_MODEL, "family": "transformer"}), src_vocab, tgt_vocab)
    shared = {k: v for k, v in lattice.state_dict().items() if not k.startswith("encoder.relation_")}
    transformer.load_state_dict(shared)
    return lattice.double(), transformer.double()


def loss_and_grads(model, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The trainer's label-smoothed loss (eps 0.1) and the gradient of every parameter."""
    from nmtmodels.training.loss import label_smoothed_nll_loss

    model.zero_grad()
    loss, _ = label_smoothed_nll_loss(model(batch, features_only=True), model.output_layer, batch.tgt_out, 0.1)
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def vocab_sizes(batch) -> tuple[int, int]:
    return int(batch.src.max()) + 1, int(batch.tgt_out.max()) + 1


def test_lpe_without_lsa_on_a_chain_is_the_transformer_in_minimum_unit_positions(jieba_chain) -> None:
    batch = chain_batch(jieba_chain, "subword")
    lattice, transformer = chain_models("lattice", False, *vocab_sizes(batch))
    mine, mine_grads = loss_and_grads(lattice, batch)
    theirs, their_grads = loss_and_grads(transformer, batch)
    torch.testing.assert_close(mine, theirs, rtol=1e-12, atol=1e-12)
    assert mine_grads.keys() == their_grads.keys()
    for name, grad in mine_grads.items():
        torch.testing.assert_close(grad, their_grads[name], rtol=1e-10, atol=1e-12, msg=name)


def test_lpe_on_a_word_chain_in_character_positions_moves_the_transformers_positions(jieba_chain) -> None:
    """The workflow's word lattices count LPE positions in characters (footnote 1): on a chain
    that is the Transformer with each word at its first character's offset, not at its index."""
    batch = chain_batch(jieba_chain, "char")
    lattice, transformer = chain_models("lattice", False, *vocab_sizes(batch))
    lattice.eval(), transformer.eval()
    with torch.no_grad():
        assert not torch.allclose(lattice(batch), transformer(batch))  # word indices != character offsets
        from nmtmodels.models.lattice import spans_with_eos

        starts, _ = spans_with_eos(batch.extras["starts"], batch.extras["ends"], batch.src_pad_mask)
        memory = transformer.encoder(batch.src, batch.src_pad_mask, positions=starts)
        moved, _ = transformer.decode(batch.tgt_in, {"memory": memory, "memory_pad_mask": batch.src_pad_mask})
        torch.testing.assert_close(lattice(batch), moved)


class ShawAttention(torch.nn.Module):
    """Shaw et al. (2018) relative self-attention by brute force: ``e_mn = q_m (k_n + w^K_d)^T /
    sqrt(d_head)``, ``o_m = sum_n alpha_mn (v_n + w^V_d)`` with d = clip(n - m, -clip, clip), the
    tables ``w`` of 2 clip + 1 rows shared by the heads; explicit (M, M, d_head) tensors, one head
    at a time.  Wraps an encoder layer's attention and uses its projections."""

    def __init__(self, attention, keys: torch.Tensor, values: torch.Tensor, clip: int = 2) -> None:
        super().__init__()
        self.attention, self.clip = attention, clip
        self.keys, self.values = torch.nn.Parameter(keys.clone()), torch.nn.Parameter(values.clone())

    def forward(self, x, key_padding_mask=None, relations=None, **unused):
        assert relations is None
        attn, (b, m, _) = self.attention, x.shape
        h, d = attn.heads, attn.head_dim
        q = attn.q_proj(x).view(b, m, h, d)
        k, v = attn.kv_proj(x).view(b, m, 2, h, d).unbind(2)
        index = torch.arange(m)
        distance = (index[None, :] - index[:, None]).clamp(-self.clip, self.clip) + self.clip  # [query m, key n]
        w_k, w_v = self.keys[distance], self.values[distance]  # (M, M, d_head)
        heads = []
        for head in range(h):
            scores = torch.einsum("bmd,bmnd->bmn", q[:, :, head], k[:, None, :, head] + w_k) / math.sqrt(d)
            alpha = scores.masked_fill(key_padding_mask[:, None, :], float("-inf")).softmax(-1)
            heads.append(torch.einsum("bmn,bmnd->bmd", alpha, v[:, None, :, head] + w_v))
        return attn.out_proj(torch.cat(heads, dim=-1)), None


class NoPositions(torch.nn.Module):
    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return torch.zeros(*positions.shape, 1, dtype=torch.float64)


def test_relations_on_a_chain_are_the_clipped_distances(jieba_chain) -> None:
    from nmtmodels.models.lattice import RELATIONS, spans_with_eos

    for unit in POSITION_UNITS:
        batch = chain_batch(jieba_chain, unit)
        starts, ends = spans_with_eos(batch.extras["starts"], batch.extras["ends"], batch.src_pad_mask)
        ids = relation_ids(starts, ends)
        for row in range(batch.src.size(0)):
            n = int((~batch.src_pad_mask[row]).sum())  # the words and </s>
            index = torch.arange(n)
            expected = (index[None, :] - index[:, None]).clamp(-2, 2) + 2
            table = torch.tensor([RELATIONS.index(name) for name in CHAIN_RELATIONS])
            assert torch.equal(ids[row, :n, :n], table[expected])


@pytest.mark.parametrize("positions", ["lattice", "none"])  # +LPE+LSA and the paper's +LSA
def test_lsa_on_a_chain_is_shaw_relative_attention_with_clipping_distance_2(jieba_chain, positions: str) -> None:
    from nmtmodels.models.lattice import RELATIONS

    batch = chain_batch(jieba_chain, "subword")
    lattice, transformer = chain_models(positions, True, *vocab_sizes(batch))
    rows = [RELATIONS.index(name) for name in CHAIN_RELATIONS]
    for index, layer in enumerate(transformer.encoder.layers):
        layer.self_attn = ShawAttention(layer.self_attn, lattice.encoder.relation_keys[index, rows].detach(),
                                        lattice.encoder.relation_values[index, rows].detach())
    if positions == "none":
        transformer.encoder.embedding.positions = NoPositions()
    mine, mine_grads = loss_and_grads(lattice, batch)
    theirs, their_grads = loss_and_grads(transformer, batch)
    torch.testing.assert_close(mine, theirs, rtol=1e-12, atol=1e-12)
    for name, grad in their_grads.items():
        if ".self_attn.keys" in name or ".self_attn.values" in name:
            continue
        torch.testing.assert_close(mine_grads[name.replace(".self_attn.attention.", ".self_attn.")], grad,
                                   rtol=1e-9, atol=1e-12, msg=name)
    unused = [RELATIONS.index(name) for name in ("includes", "included", "intersects")]
    for table, which in (("relation_keys", "keys"), ("relation_values", "values")):
        grads = mine_grads[f"encoder.{table}"]
        assert torch.count_nonzero(grads[:, unused]) == 0  # relations that no chain has get no gradient
        for index in range(len(transformer.encoder.layers)):
            torch.testing.assert_close(grads[index, rows], their_grads[f"encoder.layers.{index}.self_attn.{which}"],
                                       rtol=1e-9, atol=1e-12)
