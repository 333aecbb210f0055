"""Token attribute dicts: python-crfsuite's flattening and the extractor's matrix."""

import math

import numpy as np
import pycrfsuite
import pytest
from hypothesis import given, settings, strategies as st

from fstcrf.features.attributes import (
    ATTRIBUTES,
    AttributeExtractor,
    AttributeTemplate,
    FeatureValueError,
    attribute_pairs,
)
from fstcrf.corpus.conll import Sentence
from fstcrf.errors import FstcrfError, ModelFileError, TemplateError

names = st.text(alphabet="ab:=_ é1", min_size=1, max_size=4)
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
leaves = st.one_of(names, finite, st.integers(-1000, 1000), st.booleans(), names.map(lambda text: text.encode("utf-8")))
values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.dictionaries(names, inner, max_size=3), st.lists(names, max_size=3)),
    max_leaves=8,
)
tokens = st.one_of(st.dictionaries(names, values, max_size=5), st.lists(names, max_size=4))


@settings(max_examples=80, deadline=None)
@given(tokens)
def test_attribute_names_and_values_match_pycrfsuite(token):
    expected = pycrfsuite.ItemSequence([token]).items()[0]
    assert dict(attribute_pairs(token)) == expected


def test_documented_examples():
    token = {
        "word": "Paris",
        "title": True,
        "lower": False,
        "length": 5,
        "w": {"-1": "the"},
        "tags": ["a", "b"],
        b"raw": b"x",
    }
    assert attribute_pairs(token) == [
        ("word:Paris", 1.0),
        ("title", 1.0),
        ("lower", 0.0),
        ("length", 5.0),
        ("w:-1:the", 1.0),
        ("tags:a", 1.0),
        ("tags:b", 1.0),
        ("raw:x", 1.0),
    ]
    assert attribute_pairs(["a", "b"]) == [("a", 1.0), ("b", 1.0)]


@pytest.mark.parametrize(
    "token, found",
    [
        ({"x": None}, "NoneType"),
        ({"x": (1, 2)}, "tuple"),
        ({"x": float("nan")}, "nan"),
        ({"x": float("inf")}, "inf"),
        ({"x": {"y": -math.inf}}, "'x:y'"),
        ({3: "a"}, "int"),
        ({"x": [{"y": 1}]}, "dict"),
        ("word", "str"),
        (None, "NoneType"),
        ({"x": 10**400}, "too large"),
        ({"x": b"\xff"}, "UTF-8"),
        ({"x": complex(1, 1)}, "complex"),
    ],
)
def test_bad_values_name_sentence_and_token(token, found):
    sentences = [Sentence({"attributes": [{"ok": 1}]}), Sentence({"attributes": [{"ok": 1}, token]})]
    with pytest.raises(FeatureValueError, match=r"sentence 1, token 1: .*" + found.replace("(", r"\(")):
        AttributeExtractor().fit(sentences)
    assert issubclass(FeatureValueError, ValueError)


def sentence(*token_list):
    return Sentence({"attributes": list(token_list)})


def test_matrix_holds_values_most_frequent_first_and_sums_repeats():
    corpus = [
        sentence({"a": "x", "r": 2.5}, {"a": "x", "n": {"b": 1}, "n:b": 2}),
        sentence(["a:x", "r"], {"r": -1, "z": 0, "off": False}),
    ]
    extractor = AttributeExtractor()
    matrix = extractor.fit_transform(corpus)
    assert extractor.predicate_names_ == ["a:x", "r", "n:b"]  # z and off are never nonzero
    assert matrix.dtype == np.float64 and matrix.has_canonical_format
    np.testing.assert_array_equal(matrix.toarray(), [[1, 2.5, 0], [1, 0, 3], [1, 1, 0], [0, -1, 0]])
    np.testing.assert_array_equal(extractor.transform(corpus).toarray(), matrix.toarray())
    unseen = extractor.transform([sentence({"new": 1, "r": 4}, [])]).toarray()
    np.testing.assert_array_equal(unseen, [[0, 4, 0], [0, 0, 0]])


def test_random_matrix_equals_dense_sum_of_pairs():
    rng = np.random.default_rng(3)
    pool = ["a", "b", "c", "d", "e"]
    corpus = [
        sentence(
            *[{name: float(rng.integers(-2, 3)) for name in rng.choice(pool, 3)} for _ in range(rng.integers(1, 5))]
        )
        for _ in range(20)
    ]
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
    for bad in (
        None,
        {"kind": "template"},
        {**data, "predicates": ["a", "a"]},
        {**data, "min_count": 0},
        {**data, "reads": ""},
        {**data, "reads": 3},
        {**data, "reads": "attributes"},
    ):
        with pytest.raises(ModelFileError):
            AttributeExtractor.from_dict(bad)
    for bad_reads in ("", 3, "attributes"):
        with pytest.raises(FstcrfError, match="reads must be|holds the token dicts"):
            AttributeTemplate(bad_reads)
    assert ATTRIBUTES.text == "attributes" and ATTRIBUTES.columns == ("attributes",)
    assert ATTRIBUTES.predicates == () and isinstance(ATTRIBUTES.extractor(3), AttributeExtractor)
    with pytest.raises(FstcrfError):
        extractor.transform_reading([], "pos", ["NN"])
    with pytest.raises(TemplateError, match="sentence 0"):
        extractor.transform([Sentence({"word": ["a"]})])
    with pytest.raises(FstcrfError, match="min_count"):
        AttributeExtractor(0).fit([sentence({"a": 1})])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.dictionaries(st.sampled_from("abc"), st.sampled_from(["x", "y", 1.5, True]), max_size=3),
                st.sampled_from(["NN", "VB", "DT"]),
            ),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=4,
    ),
    st.lists(st.sampled_from(["NN", "VB", "DT", "JJ"]), min_size=1, max_size=4),
)
def test_reading_rows_under_each_lower_label_add_up_to_the_matrix(sentences, values):
    """Row n * K + k of the reading matrix plus row n of the dicts' matrix is row n of
    transform() with the lower label of every token set to values[k]."""
    corpus = [
        Sentence({"attributes": [token for token, _ in pairs], "pos": [label for _, label in pairs]})
        for pairs in sentences
    ]
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
    assert again.reads == "pos" and again.parsed_template().columns == ("attributes", "pos")
    assert again.parsed_template().offsets_of("pos") == {0} and again.parsed_template().offsets_of("w") == set()
    for bad in ("", 3, "attributes"):
        with pytest.raises(ModelFileError):
            AttributeExtractor.from_dict({**data, "reads": bad})
    with pytest.raises(TemplateError, match="no column 'pos'"):
        extractor.transform([Sentence({"attributes": [{"w": "a"}]})])
    with pytest.raises(FeatureValueError, match="token 1: the lower label in column 'pos' is None"):
        extractor.transform([Sentence({"attributes": [{"w": "a"}, {"w": "b"}], "pos": ["DT", None]})])
    with pytest.raises(TemplateError, match="reads the lower labels of column 'pos', not 'chunk'"):
        extractor.transform_reading(corpus, "chunk", ["NP"])


def dense_of_known(corpus, vocabulary, reads=None):
    """The oracle of transform: each token's attribute_pairs (and its lower label's
    attribute) summed into the columns of ``vocabulary``, unknown names dropped."""
    rows = []
    for s in corpus:
        for position, token in enumerate(s["attributes"]):
            row = np.zeros(len(vocabulary))
            pairs = attribute_pairs(token) + ([(f"{reads}:{s[reads][position]}", 1.0)] if reads else [])
            for name, value in pairs:
                if name in vocabulary:
                    row[vocabulary[name]] += value
            rows.append(row)
    return np.array(rows).reshape(len(rows), len(vocabulary))


odd_leaves = st.one_of(leaves, finite.map(np.float64), st.integers(-5, 5).map(np.int32), st.integers(2**62, 2**70))
odd_tokens = st.one_of(st.dictionaries(names, st.one_of(odd_leaves, values), max_size=5), st.lists(names, max_size=4))


@settings(max_examples=120, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(odd_tokens, st.sampled_from(["NN", "a:b", "é"])), min_size=1, max_size=4),
        min_size=1,
        max_size=4,
    ),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_transform_read_in_c_equals_the_pairs_of_every_token(sentences, reads, random):
    """transform (token dicts read in C, the rest in Python) against attribute_pairs
    summed over the names of a vocabulary holding some of the corpus's names and
    some it lacks; names and values hold the separator, so keys split ambiguously."""
    column = "pos" if reads else None
    corpus = [
        Sentence({"attributes": [token for token, _ in pairs], "pos": [label for _, label in pairs]})
        for pairs in sentences
    ]
    seen = sorted(
        {name for s in corpus for token in s["attributes"] for name, _ in attribute_pairs(token)}
        | {f"pos:{label}" for s in corpus for label in s["pos"]}
    )
    chosen = [name for name in seen if random.random() < 0.7] + ["a:b:c", "pos", "zz"]
    extractor = AttributeExtractor(reads=column)
    extractor.predicate_names_ = chosen
    extractor.vocabulary_ = {name: index for index, name in enumerate(chosen)}
    matrix = extractor.transform(corpus)
    assert matrix.has_canonical_format
    np.testing.assert_array_equal(matrix.toarray(), dense_of_known(corpus, extractor.vocabulary_, column))


@pytest.mark.parametrize(
    "token, found",
    [
        ({"x": None}, "NoneType"),
        ({"x": float("nan")}, "nan"),
        ({"x": -math.inf}, "inf"),
        ({3: "a"}, "int"),
        ("word", "str"),
        ({"x": 10**400}, "too large"),
        ({"x": np.float64("nan")}, "nan"),
        ({"pos": "NN"}, "holds the key 'pos'"),
    ],
)
def test_transform_names_the_sentence_and_token_of_a_bad_value(token, found):
    extractor = AttributeExtractor(reads="pos").fit([Sentence({"attributes": [{"x": 1}], "pos": ["DT"]})])
    corpus = [
        Sentence({"attributes": [{"x": 2}], "pos": ["DT"]}),
        Sentence({"attributes": [{"x": 1}, token], "pos": ["DT", "DT"]}),
    ]
    with pytest.raises(FeatureValueError, match=r"sentence 1, token 1: .*" + found):
        extractor.transform(corpus)
    with pytest.raises(FeatureValueError, match=r"sentence 0, token 0: .*labels are strings"):
        extractor.transform([Sentence({"attributes": [{"x": 1}], "pos": [None]})])


@settings(max_examples=120, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(odd_tokens, st.sampled_from(["NN", "a:b", "é"])), min_size=1, max_size=4),
        min_size=1,
        max_size=5,
    ),
    st.booleans(),
    st.integers(1, 3),
)
@pytest.mark.slow
def test_fit_read_in_c_keeps_the_names_of_the_pairs_most_frequent_first(sentences, reads, min_count):
    """fit_transform (names numbered in C as they first occur) against the pairs of
    every token: the names nonzero at min_count tokens or more, most frequent first
    and ties in order of first occurrence, and each token's values summed."""
    column = "pos" if reads else None
    corpus = [
        Sentence({"attributes": [token for token, _ in pairs], "pos": [label for _, label in pairs]})
        for pairs in sentences
    ]
    first_seen, rows = {}, []
    for s in corpus:
        for position, token in enumerate(s["attributes"]):
            row = {}
            for name, value in attribute_pairs(token) + ([(f"pos:{s['pos'][position]}", 1.0)] if reads else []):
                first_seen.setdefault(name, len(first_seen))
                row[name] = row.get(name, 0.0) + value
            rows.append(row)
    counts = {name: sum(1 for row in rows if row.get(name, 0.0) != 0) for name in first_seen}
    expected = sorted(
        (name for name in first_seen if counts[name] >= min_count), key=lambda name: (-counts[name], first_seen[name])
    )
    extractor = AttributeExtractor(min_count, reads=column)
    matrix = extractor.fit_transform(corpus)
    assert extractor.predicate_names_ == expected
    dense = np.array([[row.get(name, 0.0) for name in expected] for row in rows]).reshape(len(rows), len(expected))
    np.testing.assert_array_equal(matrix.toarray(), dense)
    np.testing.assert_array_equal(extractor.transform(corpus).toarray(), dense)
