"""A small batch's rows of a template with value lists by ListRows (no token table)
are transform_rows' bit for bit: on random templates of the item kinds the kernel
computes (the derived column seen_entity and seen_lower's training words included),
random words (escaped ones, boundary look-alikes) and batches of one to three
sentences; and ListRows leaves to transform_rows the templates, columns and values it
does not take."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import parse_template
from tests.strategies import oracle_settings

WORD = st.sampled_from(["a", "Ab", "ab|", "_x", "a\\b", "__BOS-1__", "__EOS+1__z", "Ünï", "1-2", "AB", "x y", "Lee"])
LABEL = st.sampled_from(["O", "B-PER", "I-PER", "B-LOC"])
SENTENCE = st.lists(st.tuples(WORD, st.sampled_from(["NN", "VB"]), LABEL), min_size=1, max_size=6)
ITEM = st.sampled_from(
    [
        "word[0]",
        "lower(word[-1])",
        "pos[1]|word[0]",
        "prefixes(word[0],1,3)",
        "suffixes(lower(word[1]),1,2)",
        "ngrams(word[0],1,3)",
        "bag(lower(word),-2,1)",
        "bag(pos,1,2)",
        "types(word,-1,1)",
        "seen_lower(word[0])",
        "seen_lower(word[0])|shape(word[0])",
        "seen_entity[0]",
        "seen_entity[-1]|word[0]",
    ]
)


def _sentence(tokens) -> Sentence:
    words, tags, labels = map(list, zip(*tokens))
    return Sentence({"word": words, "pos": tags, "ner": labels})


def _assert_same_rows(extractor: FeatureExtractor, sentences) -> None:
    expected = extractor.transform_rows(sentences)
    rows = extractor.list_rows()
    assert rows is not None
    indptr, indices = rows.rows(sentences)
    assert indptr.dtype == expected.indptr.dtype and indices.dtype == expected.indices.dtype
    assert indptr.tobytes() == expected.indptr.tobytes()
    assert indices.tobytes() == expected.indices.tobytes()


@oracle_settings(60)
@given(
    lines=st.lists(ITEM, min_size=1, max_size=6, unique=True),
    train=st.lists(SENTENCE, min_size=10, max_size=14),
    batch=st.lists(SENTENCE, min_size=1, max_size=3),
)
def test_the_rows_of_a_small_batch_are_transform_rows_bit_for_bit(lines, train, batch):
    if not any(kind in line for line in lines for kind in ("prefixes", "suffixes", "ngrams", "bag", "types")):
        lines = [*lines, "ngrams(word[0],1,2)"]  # a template with value lists
    extractor = FeatureExtractor("bias\n" + "\n".join(lines), target="ner").fit([_sentence(s) for s in train])
    sentences = [_sentence(s) for s in batch]
    _assert_same_rows(extractor, sentences)
    for sentence in sentences:  # and one at a time, after the store has the batch's values
        _assert_same_rows(extractor, [sentence])


def _fitted(template) -> FeatureExtractor:
    columns = {"word": ["Ann", "saw", "Lee"], "pos": ["NN", "VB", "NN"], "score": ["1", "0.5", "2"]}
    train = [Sentence({**columns, "ner": ["B-PER", "O", "B-PER"]})] * 12
    return FeatureExtractor(template, target="ner").fit(train)


def test_templates_it_does_not_take_have_no_list_rows(tmp_path):
    gazetteer = tmp_path / "places.txt"
    gazetteer.write_text("LOC\tLee\n", encoding="utf-8")
    assert _fitted("bias\nword[0]\npos[-1]|word[0]").list_rows() is None  # single values: window rows
    assert _fitted("ngrams(word[0],1,2)\nvalue(score[0])").list_rows() is None  # a real-valued line
    assert _fitted(f"ngrams(word[0],1,2)\ngazetteer(word[0],{gazetteer})").list_rows() is None  # named lists
    extractor = _fitted(parse_template("ngrams(word[0],1,2)\nseen_entity[0]"))
    assert extractor.list_rows() is extractor.list_rows()  # made once per template object


def test_a_missing_column_or_a_value_not_a_string_is_left_to_transform_rows():
    extractor = _fitted("bias\nngrams(word[0],1,2)\npos[0]")
    rows = extractor.list_rows()
    assert rows is not None
    assert rows.rows([Sentence({"word": ["Ann"]})]) is None
    assert rows.rows([Sentence({"word": ["Ann", "x"], "pos": ["NN", "VB"]}), Sentence({"word": ["y"]})]) is None
    assert rows.rows([Sentence({"word": ["Ann", 3], "pos": ["NN", "VB"]})]) is None
    indptr, _ = rows.rows([Sentence({"word": ["Ann", "x"], "pos": ["NN", "VB"]})])
    assert np.diff(indptr).min() > 0
