"""Text to sentences and tokens: the regular-expression rule as documented, spaCy's
rules where spaCy is installed, paragraphs cut at blank lines, and every token's
offsets pointing at its characters in the text."""

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.extras import available
from fstcrf.serve.tokenizer import make_tokenizer, regex_sentences


tokenizer = cache(make_tokenizer)


def texts(sentences) -> list[list[str]]:
    return [[token.text for token in sentence] for sentence in sentences]


def test_the_regex_rule_splits_words_punctuation_and_sentences():
    text = "The U.S. economy grew 3.5% in state-of-the-art ways, didn't it? Yes!  Then (again) no. 'Quoted'."
    assert texts(regex_sentences(text)) == [
        ["The", "U.S", ".", "economy", "grew", "3.5", "%", "in", "state-of-the-art", "ways", ",", "didn't", "it", "?"],
        ["Yes", "!"],
        ["Then", "(", "again", ")", "no", "."],
        ["'", "Quoted", "'", "."],
    ]


def test_a_blank_line_ends_a_paragraph_and_its_sentence():
    tokenize = make_tokenizer("regex")
    text = "a heading without a stop\n  \n\tthe body starts. Here\nand goes on"
    sentences = tokenize(text)
    assert texts(sentences) == [
        ["a", "heading", "without", "a", "stop"],
        ["the", "body", "starts", "."],
        ["Here", "and", "goes", "on"],
    ]
    assert all(text[token.start : token.end] == token.text for sentence in sentences for token in sentence)


@pytest.mark.parametrize("name", ["regex", "spacy"])
@settings(max_examples=40, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_every_token_is_its_characters_in_the_text(name, text):
    if name == "spacy" and not available("spacy"):
        pytest.skip("spaCy is not installed")
    for sentence in tokenizer(name)(text):
        assert sentence
        for token in sentence:
            assert token.text and text[token.start : token.end] == token.text and not token.text.isspace()


def test_spacy_splits_as_its_english_rules_do():
    if not available("spacy"):
        pytest.skip("spaCy is not installed")
    sentences = make_tokenizer("spacy")("Don't stop. The U.S. economy grew!")
    assert texts(sentences) == [["Do", "n't", "stop", "."], ["The", "U.S.", "economy", "grew", "!"]]


@pytest.mark.parametrize("name", ["regex", "spacy"])
def test_a_paragraph_of_over_a_million_characters_is_split(name):
    if name == "spacy" and not available("spacy"):
        pytest.skip("spaCy is not installed")
    sentences = make_tokenizer(name)("a" * 1_000_001 + " b")
    assert texts(sentences) == [["a" * 1_000_001, "b"]]
