"""Sentence splitting (nmtmodels.text.sentences): the Moses splitter's rules for en and de, the
end marks of Chinese and Japanese, and lines without a sentence end."""
from __future__ import annotations

import pytest

from nmtmodels.config import ConfigError
from nmtmodels.text.sentences import joiner, sentence_splitter


@pytest.mark.parametrize(("lang", "line", "sentences"), [
    ("en", "Mr. Smith went to Washington. He saw 3.5 dogs! Did he? Yes.",
     ["Mr. Smith went to Washington.", "He saw 3.5 dogs!", "Did he?", "Yes."]),  # "Mr." is a non-breaking prefix
    ("de", "Dr. Müller kam um 3 Uhr. Er sah z.B. Hunde. Gut.", ["Dr. Müller kam um 3 Uhr.", "Er sah z.B. Hunde.", "Gut."]),
    ("zh", "我喜欢猫。你呢？他说：“好！”然后走了", ["我喜欢猫。", "你呢？", "他说：“好！”", "然后走了"]),
    ("ja", "猫が好きです。あなたは？", ["猫が好きです。", "あなたは？"]),
    ("en", "no end mark here", ["no end mark here"]),
    ("zh", "", [""]),
])
def test_lines_split_into_their_sentences(lang, line, sentences):
    assert sentence_splitter(lang)(line) == sentences


def test_unspaced_languages_join_without_spaces_and_unknown_languages_are_refused():
    assert (joiner("zh"), joiner("ja"), joiner("de")) == ("", "", " ")
    with pytest.raises(ConfigError, match="no sentence splitter for language 'xx'"):
        sentence_splitter("xx")
