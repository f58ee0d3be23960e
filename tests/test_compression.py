"""ESC compression data: the two noises, supervised pairs, token F1 / compression ratio, CLI."""
from __future__ import annotations

import collections
import gzip
import json
import random
import re

import pytest

from workflow_scripts.data import bpe
from workflow_scripts.data import compression as cp

CORPUS = ["a man rides a red bike", "two dogs play in the snow", "a girl sings", "people walk on a busy street"]


def test_additive_noise_appends_a_subsample_without_replacement() -> None:
    words = "the cat sleeps".split()
    other = ["x1", "x2", "x3", "x4", "x5", "x6"]  # distinct words: a repeat would mean replacement
    for seed in range(50):
        noisy = cp.additive_sampling_noise(words, [other], random.Random(seed), ratio=2.0, other_sentences=1)
        assert noisy[:3] == words
        added = noisy[3:]
        assert len(added) == 6 and sorted(added) == sorted(other)  # all 6 positions, each once
        noisy = cp.additive_sampling_noise(words, [other], random.Random(seed), ratio=1.0, other_sentences=1)
        assert len(noisy[3:]) == 3 and len(set(noisy[3:])) == 3 and set(noisy[3:]) <= set(other)
    # repeated words in the other sentence: the multiset of added words is contained in it
    other = ["a", "a", "b"]
    for seed in range(30):
        added = cp.additive_sampling_noise(["w"], [other], random.Random(seed), ratio=20, other_sentences=1)[1:]
        assert not collections.Counter(added) - collections.Counter(other)
        assert collections.Counter(added) == collections.Counter(other)  # asked for more than exist: all of them


def test_additive_noise_samples_from_several_random_sentences() -> None:
    corpus = [[f"s{i}w{j}" for j in range(10)] for i in range(20)]
    words = ["q"] * 8
    sources = set()
    for seed in range(20):
        noisy = cp.additive_sampling_noise(words, corpus, random.Random(seed), ratio=0.5, other_sentences=2)
        added = noisy[8:]
        assert len(added) == 4  # round(0.5 * 8 / 2) = 2 per sentence
        sources.update(word.split("w")[0] for word in added)
    assert len(sources) > 5
    assert cp.additive_sampling_noise(words, corpus, random.Random(0), ratio=0.0, other_sentences=2) == words
    with pytest.raises(ValueError):
        cp.additive_sampling_noise(words, corpus, random.Random(0), ratio=0.5, other_sentences=0)


def test_additive_noise_never_draws_the_sentence_or_its_duplicates() -> None:
    """Other sentences are other by content: neither the sentence (which is in the corpus
    noisy_pairs passes) nor a duplicate of it is drawn; the differing ones are drawn uniformly."""
    sentence = ["a", "b"]
    corpus = [["a", "b"], ["a", "b"], ["c", "d"], ["a", "b"], ["e", "f"]]
    picked = collections.Counter()
    for seed in range(400):
        noisy = cp.additive_sampling_noise(sentence, corpus, random.Random(seed), ratio=1.0, other_sentences=1)
        assert noisy[:2] == sentence
        added = noisy[2:]
        assert len(added) == 2  # round(1.0 * 2 / 1): all of a two-word other sentence
        assert added in (["c", "d"], ["e", "f"])
        picked[added[0]] += 1
    assert 150 < picked["c"] < 250 and 150 < picked["e"] < 250  # each of the 2 others: p = 1/2


@pytest.mark.parametrize("copies", [1, 2, 200])
def test_additive_noise_without_another_sentence_adds_nothing(copies: int) -> None:
    """The only candidates are the sentence itself (and copies): no noise, whatever the seed;
    with one other sentence among many copies (past the rejection limit) it is always drawn."""
    sentence = ["a", "b", "c"]
    for seed in range(20):
        rng = random.Random(seed)
        assert cp.additive_sampling_noise(sentence, [list(sentence)] * copies, rng, ratio=1.0, other_sentences=2) == sentence
        corpus = [list(sentence)] * copies + [["x", "y", "z"]]
        noisy = cp.additive_sampling_noise(sentence, corpus, rng, ratio=1.0, other_sentences=2)
        assert noisy[:3] == sentence
        assert len(noisy) == 3 + 2 * 2 and set(noisy[3:]) <= {"x", "y", "z"}  # round(3 / 2) = 2 words per draw


def test_empty_sentence_gets_no_noise() -> None:
    corpus = [["x", "y"], ["z"]]
    for seed in range(10):
        assert cp.additive_sampling_noise([], corpus, random.Random(seed), ratio=2.0, other_sentences=3) == []
    pairs = list(cp.noisy_pairs(["p q", "", "r s t"], seed=1, ratio=1.0, other_sentences=1, window=0))
    assert pairs[1] == ("", "")


def test_noisy_pairs_add_no_words_of_duplicate_lines() -> None:
    """A line duplicated in the corpus draws only from the other lines (disjoint vocabularies
    tell where each added word came from); a line with no other line gets none."""
    lines = ["x1 x2 x3", "y1 y2", "x1 x2 x3", "z1 z2 z3 z4"]
    for seed in range(20):
        for (noisy, clean), line in zip(cp.noisy_pairs(lines, seed=seed, ratio=1.0, other_sentences=2, window=0), lines, strict=True):
            added = collections.Counter(noisy.split()) - collections.Counter(clean.split())
            assert clean == line
            assert sum(added.values()) > 0
            assert not set(added) & set(line.split())  # x-words are only added to y and z lines
    for noisy, clean in cp.noisy_pairs(["u v", "u v"], seed=0, ratio=1.0, other_sentences=2, window=1):
        assert clean == "u v" and sorted(noisy.split()) == ["u", "v"]  # only shuffled


@pytest.mark.parametrize("window", [0, 1, 3])
def test_shuffle_keeps_the_bag_of_words_and_respects_the_window(window: int) -> None:
    words = [f"w{i}" for i in range(12)]
    changed = False
    for seed in range(30):
        shuffled = cp.shuffle_noise(words, random.Random(seed), window=window)
        assert sorted(shuffled) == sorted(words)
        changed |= shuffled != words
        if window:
            assert all(abs(shuffled.index(w) - i) <= window for i, w in enumerate(words))
    assert changed
    assert cp.shuffle_noise([], random.Random(0)) == []


def test_noisy_pairs_are_deterministic_and_contain_the_sentence() -> None:
    a = list(cp.noisy_pairs(CORPUS, seed=3, ratio=0.5, other_sentences=2, window=0))
    assert a == list(cp.noisy_pairs(CORPUS, seed=3, ratio=0.5, other_sentences=2, window=0))
    for (noisy, clean), line in zip(a, CORPUS):
        assert clean == line
        assert not collections.Counter(clean.split()) - collections.Counter(noisy.split())
        assert len(noisy.split()) > len(clean.split())


def test_token_f1_and_compression_ratio_by_hand() -> None:
    assert cp.token_f1("a b c".split(), "a b d e".split()) == pytest.approx(2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4))
    assert cp.token_f1("a a".split(), "a".split()) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert cp.token_f1([], "a".split()) == 0.0
    scores = cp.compression_scores(["a b c d", "x y"], ["a b", "x y"], [["a c", "a b"], ["y"]])
    # F1: sentence 1 best reference "a b" -> 1.0; sentence 2: p=1/2, r=1 -> 2/3
    assert scores["f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert scores["compression_ratio"] == pytest.approx(100 * (0.5 + 1.0) / 2)
    assert scores["reference_compression_ratio"] == pytest.approx(100 * (0.5 + 0.5) / 2)
    with pytest.raises(ValueError):
        cp.compression_scores(["a"], [], [["a"]])
    assert cp.remove_bpe("cy@@ cl@@ ist rides") == "cyclist rides"


def test_supervised_pairs_one_per_reference() -> None:
    records = cp.tokenized_records([{"text": "A b.", "summaries": ["A.", "b."]}], lambda t: t.lower())
    assert records == [("a b.", ["a.", "b."])]
    assert cp.supervised_pairs(records) == [("a b.", "a."), ("a b.", "b.")]


def _codes(tmp_path):
    counts = bpe.word_counts(CORPUS + ["Cats sleep .", "Dogs run fast ."])
    (tmp_path / "codes").write_text(bpe.learn_codes(counts, 10))
    vocab = bpe.word_counts(map(bpe.bpe_from_codes((tmp_path / "codes").read_text()).process_line, CORPUS))
    (tmp_path / "vocab").write_text(bpe.vocabulary_text(vocab))
    return ["--codes", str(tmp_path / "codes"), "--vocab", str(tmp_path / "vocab"), "--threshold", "1"]


def test_random_deletion_keeps_as_many_whole_words_as_the_compressor_in_order() -> None:
    sources = ["a new@@ york city of the world", "one two three", "single", ""]
    compressed = ["city world", "x y z w", "", ""]  # 2 words; more than the source has; none; none
    out = cp.random_deletion(sources, compressed, seed=3)
    assert [len(cp.bpe_words(line)) for line in out] == [2, 3, 1, 0]  # at least one while the source has words
    for source, line in zip(sources, out):
        words = cp.bpe_words(source)
        kept = cp.bpe_words(line)
        assert all(word in words for word in kept)  # whole BPE words: "new@@ york" is never cut
        assert [words.index(w) for w in kept] == sorted(words.index(w) for w in kept)  # the source's order
    assert out == cp.random_deletion(sources, compressed, seed=3)  # seeded
    draws = {tuple(cp.random_deletion(sources[:1], compressed[:1], seed=s)) for s in range(40)}
    assert len(draws) > 5  # random: not always the same words (C(6, 2) = 15 choices)
    with pytest.raises(ValueError, match="4 source lines, but 3 compressed lines"):
        cp.random_deletion(sources, compressed[:3], seed=1)


def test_bpe_words_group_the_pieces_of_a_word() -> None:
    assert cp.bpe_words("new@@ york ci@@ t@@ y .") == ["new@@ york", "ci@@ t@@ y", "."]
    assert cp.bpe_words("") == []


def test_cli_random_delete(tmp_path) -> None:
    (tmp_path / "src").write_text("the big@@ gest dog runs\nhello world\n", encoding="utf-8")
    (tmp_path / "lengths").write_text("dog runs\nhello\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["random-delete", "--source", str(tmp_path / "src"), "--lengths-from", str(tmp_path / "lengths"),
            "--seed", "1", "--output", str(out)]
    assert cp.main(args) == 0
    assert [len(cp.bpe_words(line)) for line in out.read_text().splitlines()] == [2, 1]
    (tmp_path / "lengths").write_text("dog runs\n", encoding="utf-8")
    out.unlink()
    assert cp.main(args) == 1 and not out.exists()  # a line count that differs: one line, no output


def test_cli_denoise_pairs_evaluate(tmp_path) -> None:
    codes = _codes(tmp_path)
    (tmp_path / "tok").write_text("\n".join(CORPUS) + "\n")
    assert cp.main(["denoise", "--input", str(tmp_path / "tok"), *codes, "--src-out", str(tmp_path / "n.src"),
                    "--tgt-out", str(tmp_path / "n.tgt"), "--window", "2", "--seed", "1", "--ratio", "0.5",
                    "--other-sentences", "2"]) == 0
    noisy = (tmp_path / "n.src").read_text().splitlines()
    clean = (tmp_path / "n.tgt").read_text().splitlines()
    assert len(noisy) == len(clean) == 4
    assert [cp.remove_bpe(line) for line in clean] == CORPUS

    data = tmp_path / "set.jsonl.gz"
    with gzip.open(data, "wt", encoding="utf-8") as handle:
        for text, refs in [("Cats sleep.", ["Cats sleep."]), ("Dogs run fast.", ["Dogs run.", "Dogs run fast."]),
                           ("A girl sings.", ["Girl sings."])]:
            handle.write(json.dumps({"id": text, "text": text, "summaries": refs}) + "\n")
    prep = json.dumps({"src": "en", "tgt": "de", "preprocess": {"en": {"tokenizer": "moses"}, "de": {"tokenizer": "moses"}}})
    common = ["pairs", "--sets", str(data), "--lang", "en", "--preprocess", prep, *codes]
    assert cp.main([*common, "--src-out", str(tmp_path / "t.src"), "--tgt-out", str(tmp_path / "t.tgt"), "--limit", "2"]) == 0
    assert [cp.remove_bpe(x) for x in (tmp_path / "t.tgt").read_text().splitlines()] == ["Cats sleep .", "Dogs run .", "Dogs run fast ."]
    assert len((tmp_path / "t.src").read_text().splitlines()) == 3
    assert cp.main([*common, "--skip", "1", "--src-out", str(tmp_path / "e.src"), "--tgt-out", str(tmp_path / "e.tgt"),
                    "--refs-out", str(tmp_path / "e.refs")]) == 0
    refs = [json.loads(x) for x in (tmp_path / "e.refs").read_text().splitlines()]
    assert refs == [{"source": "Dogs run fast .", "references": ["Dogs run .", "Dogs run fast ."]},
                    {"source": "A girl sings .", "references": ["Girl sings ."]}]
    (tmp_path / "hyp").write_text("Dogs run\nA girl sings .\n")
    assert cp.main(["evaluate", "--hyp", str(tmp_path / "hyp"), "--refs", str(tmp_path / "e.refs"),
                    "--output", str(tmp_path / "scores.json")]) == 0
    scores = json.loads((tmp_path / "scores.json").read_text())
    # "Dogs run" vs "Dogs run .": p 1, r 2/3 -> 0.8; "A girl sings ." vs "Girl sings .": 2 shared, p 1/2, r 2/3 -> 4/7
    assert scores["f1"] == pytest.approx(100 * (0.8 + 4 / 7) / 2)
    assert scores["compression_ratio"] == pytest.approx(100 * (2 / 4 + 1) / 2)
    # a broken record names file and line; nothing is written
    with gzip.open(data, "at", encoding="utf-8") as handle:
        handle.write('{"text": "no summaries"}\n')
    assert cp.main([*common, "--src-out", str(tmp_path / "bad.src"), "--tgt-out", str(tmp_path / "bad.tgt")]) == 1
    assert not (tmp_path / "bad.src").exists()
    with pytest.raises(Exception, match="line 4"):
        cp.read_compression_set(str(data))


# --- workflow configuration: source inputs, compressor inputs, cross-reference checks ------

import copy  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402

from workflow_scripts.dag import checks, compression, sources  # noqa: E402


def _config_with_ablations() -> dict:
    """config.yaml with configs/ablations.yaml merged over it (as --configfile does): all four ESC rows."""
    from snakemake.utils import update_config

    root = Path(__file__).parent.parent
    config = yaml.safe_load((root / "config.yaml").read_text())
    update_config(config, yaml.safe_load((root / "configs/ablations.yaml").read_text()))
    return config


CONFIG = _config_with_ablations()


def test_esc_experiments_read_the_compressed_source_of_their_compressor() -> None:
    inputs = sources.model_inputs(CONFIG, "esc_bbf_semi", "multi30k_en_de")
    assert inputs["train_src"] == "results/data/multi30k_en_de/bpe8000/train.en-de.en"
    assert inputs["extra_compressed_train"] == "results/compression/esc_semi/multi30k_en_de/compressed/train.txt"
    assert inputs["extra_compressed_valid"] == "results/compression/esc_semi/multi30k_en_de/compressed/dev.txt"
    assert sources.extra_inputs_of_test_set(CONFIG, "esc_bsf", "multi30k_en_de", "test_2016_flickr") == [
        "results/compression/esc_unsup/multi30k_en_de/compressed/test_2016_flickr.txt"]
    assert "--extra-tokens compressed=results/compression/esc_unsup" in sources.extra_input_flags(CONFIG, "esc_btf", "multi30k_en_de",
                                                                                                  ("train", "dev"))
    assert "results/compression/esc_unsup/multi30k_en_de/compression_eval.scores.json" in compression.compression_targets(CONFIG)


def test_compressor_inputs_and_search_flags() -> None:
    unsup = compression.compressor_inputs(CONFIG, "esc_unsup", "multi30k_en_de")
    assert unsup["train_src"].endswith("esc_unsup/multi30k_en_de/denoise/train.src")
    assert unsup["vocab"] == "results/data/multi30k_en_de/bpe8000/vocab.en-de.en" and "init" not in unsup
    semi = compression.compressor_inputs(CONFIG, "esc_semi", "multi30k_en_de")
    assert semi["train_src"].endswith("esc_semi/multi30k_en_de/supervised/train.src")
    assert semi["init"] == "results/compression/esc_unsup/multi30k_en_de/train/checkpoint_best.pt"
    assert compression.compressor_settings(CONFIG, "esc_unsup")["model"]["family"] == "transformer"
    flags = compression.compressor_decode_flags(CONFIG, "esc_unsup").split()
    decode = CONFIG["compression"]["compressors"]["esc_unsup"]["decode"]
    assert flags[flags.index("--max-len-ratio") + 1] == str(decode["max_len_ratio"])
    assert flags[flags.index("--coverage-penalty") + 1] == str(decode["coverage_penalty"])
    assert compression.compression_source(CONFIG, "esc_semi", "multi30k_en_de", "compression_eval").endswith("supervised/eval.src")


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["experiments"]["esc_bsf"].update(compressor="nope"), "experiments.esc_bsf.compressor: unknown compressor 'nope'"),
    (lambda c: c["experiments"]["esc_bsf"].update(subwords="bpe4000"), "experiments.esc_bsf.subwords: must equal"),
    (lambda c: c["compression"]["compressors"]["esc_semi"].update(init_from="x"), "esc_semi.init_from: unknown compressor 'x'"),
    (lambda c: c["compression"].update(train_sets=["gigaword"]), "compression.train_sets: 'gigaword' names no entry"),
    (lambda c: c["compression"]["compressors"]["esc_unsup"]["decode"].update(max_len_ratio=0),
     "esc_unsup.decode (decoding).max_len_ratio: must be > 0"),
    (lambda c: c["compression"]["compressors"].update(rand={"kind": "random_deletion", "subwords": "bpe8000"}),
     "compression.compressors.rand.lengths_of: a random_deletion compressor needs the learned compressor"),
    (lambda c: c["compression"]["compressors"].update(rand={"kind": "random_deletion", "subwords": "bpe8000", "lengths_of": "x"}),
     "compression.compressors.rand.lengths_of: 'x' is not a learned compressor (learned: esc_unsup, esc_semi)"),
    (lambda c: c["compression"]["compressors"].update(rand={"kind": "random_deletion", "subwords": "bpe4000",
                                                             "lengths_of": "esc_unsup"}),
     "compression.compressors.rand.subwords: must equal that of lengths_of 'esc_unsup' (bpe8000)"),
    (lambda c: c["compression"]["compressors"].update(rand={"kind": "random_deletion", "subwords": "bpe8000",
                                                             "lengths_of": "esc_unsup", "train": {}}),
     "compression.compressors.rand.train: a random_deletion compressor trains and decodes nothing"),
    (lambda c: c["compression"]["compressors"]["esc_unsup"].update(lengths_of="esc_semi"),
     "compression.compressors.esc_unsup.lengths_of: only a random_deletion compressor takes it"),
])
def test_compression_config_errors_name_the_key(edit, message) -> None:
    config = copy.deepcopy(CONFIG)
    compression.check_compression(config)
    edit(config)
    with pytest.raises(checks.WorkflowConfigError, match=re.escape(message)):
        compression.check_compression(config)


def test_compression_set_parts_split_the_dev_set_into_dev_and_evaluation() -> None:
    assert compression.compression_set_part(CONFIG, "train") == (["broadcast", "bnc"], "")
    assert compression.compression_set_part(CONFIG, "dev") == (["google"], "--limit 200")
    assert compression.compression_set_part(CONFIG, "eval") == (["google"], "--skip 200")
    assert compression.compressor_bpe_files(CONFIG, "esc_unsup", "multi30k_en_de") == {
        "codes": "results/data/multi30k_en_de/bpe8000/codes.en-de.en", "vocab": "results/data/multi30k_en_de/bpe8000/vocab.en-de.en"}


MIRROR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no data mirror at ../shared/data")
@pytest.mark.parametrize("name", sorted(CONFIG["compression"]["data"]))
def test_compression_sets_mirror_copies_match_their_sha256_and_parse(name) -> None:
    from workflow_scripts.data.fetch import content_sha256

    entry = CONFIG["compression"]["data"][name]
    assert content_sha256(MIRROR / entry["mirror"]) == entry["sha256"]
    records = cp.read_compression_set(str(MIRROR / entry["mirror"]))
    assert len(records) > CONFIG["compression"]["dev_records"]
