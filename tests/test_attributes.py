"""Token attribute dicts: python-crfsuite's flattening and the extractor's matrix."""
import math

import numpy as np
import pycrfsuite
import pytest
from hypothesis import given, settings, strategies as st

from fstcrf.attributes import (ATTRIBUTES, AttributeExtractor, FeatureValueError, attribute_pairs)
from fstcrf.conll import Sentence
from fstcrf.errors import FstcrfError, ModelFileError, TemplateError

names = st.text(alphabet="ab:=_ é1", min_size=1, max_size=4)
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
leaves = st.one_of(names, finite, st.integers(-1000, 1000), st.booleans(),
                   names.map(lambda text: text.encode("utf-8")))
values = st.recursive(leaves, lambda inner: st.one_of(st.dictionaries(names, inner, max_size=3),
                                                      st.lists(names, max_size=3)), max_leaves=8)
tokens = st.one_of(st.dictionaries(names, values, max_size=5), st.lists(names, max_size=4))


@settings(max_examples=80, deadline=None)
@given(tokens)
def test_attribute_names_and_values_match_pycrfsuite(token):
    expected = pycrfsuite.ItemSequence([token]).items()[0]
    assert dict(attribute_pairs(token)) == expected


def test_documented_examples():
    token = {"word": "Paris", "title": True, "lower": False, "length": 5, "w": {"-1": "the"},
             "tags": ["a", "b"], b"raw": b"x"}
    assert attribute_pairs(token) == [("word:Paris", 1.0), ("title", 1.0), ("lower", 0.0), ("length", 5.0),
                                      ("w:-1:the", 1.0), ("tags:a", 1.0), ("tags:b", 1.0), ("raw:x", 1.0)]
    assert attribute_pairs(["a", "b"]) == [("a", 1.0), ("b", 1.0)]


@pytest.mark.parametrize("token, found", [
    ({"x": None}, "NoneType"), ({"x": (1, 2)}, "tuple"), ({"x": float("nan")}, "nan"),
    ({"x": float("inf")}, "inf"), ({"x": {"y": -math.inf}}, "'x:y'"), ({3: "a"}, "int"),
    ({"x": [{"y": 1}]}, "dict"), ("word", "str"), (None, "NoneType"), ({"x": 10 ** 400}, "too large"),
    ({"x": b"\xff"}, "UTF-8"), ({"x": complex(1, 1)}, "complex")])
def test_bad_values_name_sentence_and_token(token, found):
    sentences = [Sentence({"attributes": [{"ok": 1}]}), Sentence({"attributes": [{"ok": 1}, token]})]
    with pytest.raises(FeatureValueError, match=r"sentence 1, token 1: .*" + found.replace("(", r"\(")):
        AttributeExtractor().fit(sentences)
    assert issubclass(FeatureValueError, ValueError)


def sentence(*token_list):
    return Sentence({"attributes": list(token_list)})


def test_matrix_holds_values_most_frequent_first_and_sums_repeats():
    corpus = [sentence({"a": "x", "r": 2.5}, {"a": "x", "n": {"b": 1}, "n:b": 2}),
              sentence(["a:x", "r"], {"r": -1, "z": 0, "off": False})]
    extractor = AttributeExtractor()
    matrix = extractor.fit_transform(corpus)
    assert extractor.predicate_names_ == ["a:x", "r", "n:b"]      # z and off are never nonzero
    assert matrix.dtype == np.float64 and matrix.has_canonical_format
    np.testing.assert_array_equal(matrix.toarray(), [[1, 2.5, 0], [1, 0, 3], [1, 1, 0], [0, -1, 0]])
    np.testing.assert_array_equal(extractor.transform(corpus).toarray(), matrix.toarray())
    unseen = extractor.transform([sentence({"new": 1, "r": 4}, [])]).toarray()
    np.testing.assert_array_equal(unseen, [[0, 4, 0], [0, 0, 0]])


def test_random_matrix_equals_dense_sum_of_pairs():
    rng = np.random.default_rng(3)
    pool = ["a", "b", "c", "d", "e"]
    corpus = [sentence(*[{name: float(rng.integers(-2, 3)) for name in rng.choice(pool, 3)}
                         for _ in range(rng.integers(1, 5))]) for _ in range(20)]
    extractor = AttributeExtractor(min_count=3)
    matrix = extractor.fit_transform(corpus).toarray()
    dense = np.zeros((matrix.shape[0], len(pool)))
    rows = [token for s in corpus for token in s["attributes"]]
    for row, token in enumerate(rows):
        for name, value in attribute_pairs(token):
            dense[row, pool.index(name)] += value
    counts = np.count_nonzero(dense, axis=0)
    kept = [pool.index(name) for name in extractor.predicate_names_]
    assert sorted(kept) == sorted(np.flatnonzero(counts >= 3).tolist())
    assert list(counts[kept]) == sorted(counts[kept], reverse=True)
    np.testing.assert_array_equal(matrix, dense[:, kept])


def test_dict_round_trip_and_template():
    extractor = AttributeExtractor(2).fit([sentence({"a": 1}, {"a": 2, "b": 1})])
    data = extractor.to_dict()
    assert data == {"kind": "attributes", "min_count": 2, "predicates": ["a"]}
    assert AttributeExtractor.from_dict(data).vocabulary_ == {"a": 0}
    for bad in (None, {"kind": "template"}, {**data, "predicates": ["a", "a"]}, {**data, "min_count": 0}):
        with pytest.raises(ModelFileError):
            AttributeExtractor.from_dict(bad)
    assert ATTRIBUTES.text == "attributes" and ATTRIBUTES.columns == ("attributes",)
    assert ATTRIBUTES.predicates == () and isinstance(ATTRIBUTES.extractor(3), AttributeExtractor)
    with pytest.raises(FstcrfError):
        extractor.transform_reading([], "pos", ["NN"])
    with pytest.raises(TemplateError, match="sentence 0"):
        extractor.transform([Sentence({"word": ["a"]})])
    with pytest.raises(FstcrfError, match="min_count"):
        AttributeExtractor(0).fit([sentence({"a": 1})])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.dictionaries(st.sampled_from("abc"), st.sampled_from(["x", "y", 1.5, True]),
                                                   max_size=3),
                                   st.sampled_from(["NN", "VB", "DT"])), min_size=1, max_size=4),
                min_size=1, max_size=4),
       st.lists(st.sampled_from(["NN", "VB", "DT", "JJ"]), min_size=1, max_size=4))
def test_reading_rows_under_each_lower_label_add_up_to_the_matrix(sentences, values):
    """Row n * K + k of the reading matrix plus row n of the dicts' matrix is row n of
    transform() with the lower label of every token set to values[k]."""
    corpus = [Sentence({"attributes": [token for token, _ in pairs], "pos": [label for _, label in pairs]})
              for pairs in sentences]
    extractor = AttributeExtractor(reads="pos").fit(corpus)
    base, reading, met = extractor.transform_reading(corpus, "pos", values)
    assert np.all(np.diff(met) > 0)
    N, K, P = sum(len(s) for s in corpus), len(values), extractor.num_predicates
    dense_base = base.to_scipy().toarray()
    dense_reading = np.zeros((N * K, P))
    dense_reading[:, met] = reading.to_scipy().toarray()
    for k, value in enumerate(values):
        substituted = [Sentence({"attributes": s["attributes"], "pos": [value] * len(s)}) for s in corpus]
        expected = extractor.transform(substituted).toarray()
        np.testing.assert_array_equal(dense_base + dense_reading[k::K], expected)


def test_an_extractor_reading_lower_labels_keeps_its_column():
    corpus = [Sentence({"attributes": [{"w": "a"}, {"w": "b"}], "pos": ["DT", "NN"]})]
    extractor = AttributeExtractor(reads="pos").fit(corpus)
    assert set(extractor.predicate_names_) == {"w:a", "w:b", "pos:DT", "pos:NN"}
    data = extractor.to_dict()
    assert data["reads"] == "pos"
    again = AttributeExtractor.from_dict(data)
    assert again.reads == "pos" and again._template().columns == ("attributes", "pos")
    assert again._template().offsets_of("pos") == {0} and again._template().offsets_of("w") == set()
    for bad in ("", 3, "attributes"):
        with pytest.raises(ModelFileError):
            AttributeExtractor.from_dict({**data, "reads": bad})
    with pytest.raises(TemplateError, match="no column 'pos'"):
        extractor.transform([Sentence({"attributes": [{"w": "a"}]})])
    with pytest.raises(FeatureValueError, match="token 1: the lower label in column 'pos' is None"):
        extractor.transform([Sentence({"attributes": [{"w": "a"}, {"w": "b"}], "pos": ["DT", None]})])
    with pytest.raises(TemplateError, match="reads the lower labels of column 'pos', not 'chunk'"):
        extractor.transform_reading(corpus, "chunk", ["NP"])
