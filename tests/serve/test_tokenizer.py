"""Text to sentences and tokens: the regular-expression rule as documented, spaCy's
rules where spaCy is installed, paragraphs cut at blank lines, a byte-order mark
taken as a space, and every token's offsets pointing at its characters in the text."""

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
            assert "\ufeff" not in token.text


@pytest.mark.parametrize("name", ["regex", "spacy"])
def test_a_byte_order_mark_separates_tokens_as_a_space_does(name):
    if name == "spacy" and not available("spacy"):
        pytest.skip("spaCy is not installed")
    text = "\ufeffThe light\ufeffmight build it ."
    (sentence,) = tokenizer(name)(text)
    assert texts([sentence]) == [["The", "light", "might", "build", "it", "."]]
    assert (sentence[0].start, sentence[2].start) == (1, 11)


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


def test_spacy_leaves_a_run_of_many_symbols_to_the_regex_rule():
    """spaCy's time grows with the square of such a run (16,000 "(" took 20 s, its
    affixes stripped one at a time): a run holding more than SPACY_MOST_SYMBOLS
    symbols is split by the regex rule, the rest of the text by spaCy's."""
    if not available("spacy"):
        pytest.skip("spaCy is not installed")
    from fstcrf.serve.tokenizer import SPACY_MOST_SYMBOLS

    hostile = "(" * (SPACY_MOST_SYMBOLS + 1) + "don't"
    text = f"Don't stop {hostile} now.  Then\tgo!"
    sentences = tokenizer("spacy")(text)
    assert texts(sentences) == [
        ["Do", "n't", "stop", *["("] * (SPACY_MOST_SYMBOLS + 1), "don't", "now", "."],
        ["Then", "go", "!"],
    ]
    assert all(text[token.start : token.end] == token.text for sentence in sentences for token in sentence)
    fewer = "(" * (SPACY_MOST_SYMBOLS - 1) + "don't"  # the apostrophe is one of the symbols
    assert texts(tokenizer("spacy")(fewer)) == [["("] * (SPACY_MOST_SYMBOLS - 1) + ["do", "n't"]]
    assert texts(tokenizer("spacy")("(" * 16_000)) == [["("] * 16_000]


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.sampled_from("(\"'.a b\n$"), max_size=120))
def test_every_token_is_its_characters_where_runs_of_symbols_are_split_by_regex(text):
    if not available("spacy"):
        pytest.skip("spaCy is not installed")
    for sentence in tokenizer("spacy")(text):
        assert sentence
        for token in sentence:
            assert token.text and text[token.start : token.end] == token.text and not token.text.isspace()
            assert "\ufeff" not in token.text
