"""Feature templates and the predicate matrix."""

import json
import pickle
import re

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.corpus.conll import Corpus, Sentence, read_conll
from fstcrf.errors import FstcrfError, ModelFileError, TemplateError
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import (
    CHUNKING_EXTENDED,
    CRFPP_CHUNKING,
    Observation,
    SHA_PEREIRA_CHUNKING,
    load_template,
    parse_template,
)


def corpus_of(*sentences):
    """A word/pos corpus from sentences given as lists of (word, pos) pairs."""
    return Corpus(
        ("word", "pos"),
        [Sentence({"word": [word for word, _ in tokens], "pos": [pos for _, pos in tokens]}) for tokens in sentences],
    )


def row_names(extractor, matrix, row):
    return {extractor.predicate_names_[column] for column in matrix[row].indices}


def test_parse_template_reads_items_comments_and_bias():
    template = parse_template("# a comment\n\nbias\n word [ -1 ] | word[0]  # pair\nlower(word[1])\npos[+2]\n")
    assert len(template) == 4
    bias, pair, lowered, pos = template
    assert bias.observations == () and bias.name == "bias"
    assert pair.observations == (Observation("word", -1), Observation("word", 0))
    assert lowered.observations == (Observation("word", 1, "lower"),)
    assert template.text == "bias\nword[-1]|word[0]\nlower(word[+1])\npos[+2]\n"
    assert template.columns == ("word", "pos")
    assert parse_template(template.text) == template
    assert pair.line == 4


@pytest.mark.parametrize(
    "line, message",
    [
        ("word[x]", r"cannot parse 'word\[x\]'"),
        ("word[0", "cannot parse"),
        ("word(0)", "cannot parse"),
        ("word[0]|", "cannot parse ''"),
        ("bias|word[0]", "cannot parse 'bias'"),
        ("upper(word[0])", "unknown transform 'upper'.*lower, shape"),
        ("suffix0(word[0])", "unknown transform"),
        ("lower(lower(word[0]))", "cannot parse"),
        ("word[0]|word[+0]", r"'word\[0\]\|word\[\+0\]' repeats an item"),
    ],
)
def test_syntax_errors_name_source_and_line(line, message):
    with pytest.raises(TemplateError, match=r"^my\.tpl:3: " + message):
        parse_template(f"bias\n# comment\n{line}\n", source="my.tpl")


def test_repeated_template_names_its_first_line():
    with pytest.raises(TemplateError, match=r"<string>:3: 'word\[\+1\]' repeats line 1"):
        parse_template("word[1]\nbias\nword[+1]\n")


def test_template_without_predicates_is_an_error():
    with pytest.raises(TemplateError, match="defines no predicates"):
        parse_template("# nothing\n\n")


def test_load_template_names_the_file(tmp_path):
    path = tmp_path / "chunk.tpl"
    path.write_text("bias\nword[0]\n")
    assert load_template(path).text == "bias\nword[0]\n"
    path.write_text("bias\nword[0]|\n")
    with pytest.raises(TemplateError, match=f"{path}:2:"):
        load_template(path)
    path.write_bytes(b"bias\n\xff\n")
    with pytest.raises(TemplateError, match=f"{path}:2: .*0xff"):
        load_template(path)


def test_shipped_templates():
    expected = parse_template("""
        bias
        word[-2]
        word[-1]
        word[0]
        word[1]
        word[2]
        word[-1]|word[0]
        word[0]|word[1]
        pos[-2]
        pos[-1]
        pos[0]
        pos[1]
        pos[2]
        pos[-2]|pos[-1]
        pos[-1]|pos[0]
        pos[0]|pos[1]
        pos[1]|pos[2]
        pos[-2]|pos[-1]|pos[0]
        pos[-1]|pos[0]|pos[1]
        pos[0]|pos[1]|pos[2]
    """)
    assert SHA_PEREIRA_CHUNKING == expected
    assert set(CRFPP_CHUNKING) == set(expected) and len(CRFPP_CHUNKING) == 20
    assert SHA_PEREIRA_CHUNKING.columns == ("word", "pos")
    # Table 1, two more word pairs and five word-POS pairs
    extended = parse_template(
        "word[-2]|word[-1]\nword[+1]|word[+2]\nword[0]|pos[0]\nword[-1]|pos[0]\n"
        "word[0]|pos[+1]\nword[+1]|pos[0]\nword[0]|pos[-1]\n"
    )
    assert set(CHUNKING_EXTENDED) == set(expected) | set(extended) and len(CHUNKING_EXTENDED) == 27


def test_positions_outside_the_sentence_get_boundary_values():
    corpus = corpus_of([("He", "PRP"), ("ran", "VBD")], [("Go", "VB")])
    extractor = FeatureExtractor("word[-2]\nword[-1]|word[0]\nword[+1]\npos[2]")
    matrix = extractor.fit_transform(corpus)
    assert row_names(extractor, matrix, 0) == {
        "word[-2]=__BOS-2__",
        "word[-1]|word[0]=__BOS-1__|He",
        "word[+1]=ran",
        "pos[+2]=__EOS+1__",
    }
    assert row_names(extractor, matrix, 1) == {
        "word[-2]=__BOS-1__",
        "word[-1]|word[0]=He|ran",
        "word[+1]=__EOS+1__",
        "pos[+2]=__EOS+2__",
    }
    assert row_names(extractor, matrix, 2) == {
        "word[-2]=__BOS-2__",
        "word[-1]|word[0]=__BOS-1__|Go",
        "word[+1]=__EOS+1__",
        "pos[+2]=__EOS+2__",
    }


def test_values_never_share_a_name():
    corpus = corpus_of(
        [("a|b", "X"), ("c", "X")],
        [("a", "X"), ("b|c", "X")],
        [("__BOS-1__", "X")],
        [("\\__BOS-1__", "X")],
        [("a\\", "X"), ("|c", "X")],
    )
    extractor = FeatureExtractor("word[-1]|word[0]\nword[0]|word[+1]")
    matrix = extractor.fit_transform(corpus)
    names = extractor.predicate_names_
    assert len(names) == len(set(names))
    assert "word[0]|word[+1]=a\\|b|c" in names and "word[0]|word[+1]=a|b\\|c" in names
    assert "word[-1]|word[0]=__BOS-1__|\\__BOS-1__" in names
    assert "word[-1]|word[0]=__BOS-1__|\\\\__BOS-1__" in names
    assert "word[0]|word[+1]=a\\\\|\\|c" in names
    assert matrix.shape == (8, len(names))


def test_transforms():
    corpus = corpus_of([("McDonald's", "NNP"), ("1,234.50", "CD"), ("É", "NN")])
    extractor = FeatureExtractor(
        "lower(word[0])\nshape(word[0])\nprefix2(word[0])\nsuffix3(word[0])\nsuffix3(word[-1])"
    )
    matrix = extractor.fit_transform(corpus)
    assert row_names(extractor, matrix, 0) == {
        "lower(word[0])=mcdonald's",
        "shape(word[0])=XxXx'x",
        "prefix2(word[0])=Mc",
        "suffix3(word[0])=d's",
        "suffix3(word[-1])=__BOS-1__",
    }
    assert row_names(extractor, matrix, 1) == {
        "lower(word[0])=1,234.50",
        "shape(word[0])=d,d.d",
        "prefix2(word[0])=1,",
        "suffix3(word[0])=.50",
        "suffix3(word[-1])=d's",
    }
    assert row_names(extractor, matrix, 2) >= {"lower(word[0])=é", "shape(word[0])=X", "prefix2(word[0])=É"}


def test_unknown_columns_name_the_available_ones():
    corpus = corpus_of([("He", "PRP")])
    with pytest.raises(TemplateError, match="'chunk'.*word, pos"):
        FeatureExtractor("chunk[0]").fit(corpus)
    with pytest.raises(TemplateError, match="'chunk'.*word, pos"):
        FeatureExtractor("chunk[0]").fit(corpus.sentences)


def test_fit_keeps_predicates_seen_min_count_times():
    corpus = corpus_of([("the", "DT"), ("cat", "NN")], [("the", "DT"), ("dog", "NN")])
    extractor = FeatureExtractor("bias\nword[0]\npos[0]", min_count=2)
    assert extractor.fit(corpus) is extractor
    assert extractor.predicate_names_ == ["bias", "word[0]=the", "pos[0]=DT", "pos[0]=NN"]
    assert extractor.vocabulary_ == {name: index for index, name in enumerate(extractor.predicate_names_)}
    matrix = extractor.transform(corpus)
    assert matrix.toarray().tolist() == [[1, 1, 1, 0], [1, 0, 0, 1], [1, 1, 1, 0], [1, 0, 0, 1]]


def test_transform_drops_unknown_predicates():
    extractor = FeatureExtractor("word[0]\nword[-1]").fit(corpus_of([("a", "X"), ("b", "X")]))
    matrix = extractor.transform(corpus_of([("b", "X"), ("a", "X"), ("z", "X")]))
    assert row_names(extractor, matrix, 0) == {"word[0]=b", "word[-1]=__BOS-1__"}
    assert row_names(extractor, matrix, 1) == {"word[0]=a"}
    assert row_names(extractor, matrix, 2) == {"word[-1]=a"}


def test_matrix_is_binary_csr_float64_in_token_order():
    corpus = corpus_of([("a", "X"), ("b", "Y")], [("c", "Z")])
    extractor = FeatureExtractor(SHA_PEREIRA_CHUNKING)
    matrix = extractor.fit_transform(corpus)
    assert matrix.format == "csr" and matrix.dtype == np.float64
    assert matrix.shape == (3, len(extractor.predicate_names_))
    assert matrix.has_canonical_format
    assert set(matrix.data.tolist()) == {1.0}
    assert np.diff(matrix.indptr).tolist() == [20, 20, 20]
    assert "word[0]=c" in row_names(extractor, matrix, 2)
    again = extractor.transform(corpus)
    assert (again != matrix).nnz == 0


def test_empty_corpus():
    extractor = FeatureExtractor("bias\nword[0]")
    assert extractor.fit_transform(corpus_of()).shape == (0, 0)
    assert extractor.transform(corpus_of()).shape == (0, 0)


def test_unfitted_extractor_and_bad_min_count():
    with pytest.raises(FstcrfError, match="not fitted"):
        FeatureExtractor("bias").transform(corpus_of([("a", "X")]))
    with pytest.raises(FstcrfError, match="not fitted"):
        FeatureExtractor("bias").to_dict()
    with pytest.raises(FstcrfError, match="min_count"):
        FeatureExtractor("bias", min_count=0).fit(corpus_of([("a", "X")]))
    with pytest.raises(TemplateError, match="Template or template text"):
        FeatureExtractor(3).fit(corpus_of([("a", "X")]))


def test_to_dict_round_trips_through_json_and_pickle():
    train = corpus_of([("He", "PRP"), ("ran", "VBD")], [("She", "PRP"), ("sat", "VBD")])
    test = corpus_of([("He", "PRP"), ("sat", "VBD"), ("x", "?")])
    extractor = FeatureExtractor(SHA_PEREIRA_CHUNKING, min_count=1).fit(train)
    data = json.loads(json.dumps(extractor.to_dict()))
    assert data["predicates"] == extractor.predicate_names_
    restored = FeatureExtractor.from_dict(data)
    assert restored.predicate_names_ == extractor.predicate_names_
    assert (restored.transform(test) != extractor.transform(test)).nnz == 0
    unpickled = pickle.loads(pickle.dumps(extractor))
    assert (unpickled.transform(test) != extractor.transform(test)).nnz == 0


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"template": "bias\n", "min_count": 1},
        {"template": "bias\n", "min_count": "1", "predicates": []},
        {"template": "bias\n", "min_count": 1, "predicates": ["bias", 3]},
        {"template": "bias|\n", "min_count": 1, "predicates": []},
        {"template": "bias\n", "min_count": 1, "predicates": ["bias", "bias"]},
    ],
)
def test_from_dict_rejects_bad_data(data):
    with pytest.raises(ModelFileError):
        FeatureExtractor.from_dict(data)


def reference_names(sentences, template):
    """Predicate names of every token, computed one token at a time."""

    def escape(value):
        value = value.replace("\\", "\\\\").replace("|", "\\|")
        return "\\" + value if re.fullmatch(r"__(BOS-|EOS\+)[0-9]+__", value) else value

    transforms = {None: lambda value: value, "lower": str.lower, "suffix2": lambda value: value[-2:]}
    rows = []
    for sentence in sentences:
        for position in range(len(sentence)):
            names = set()
            for predicate in template:
                values = []
                for observation in predicate.observations:
                    target = position + observation.offset
                    if target < 0:
                        values.append(f"__BOS-{-target}__")
                    elif target >= len(sentence):
                        values.append(f"__EOS+{target - len(sentence) + 1}__")
                    else:
                        value = sentence[observation.column][target]
                        values.append(escape(transforms[observation.transform](value)))
                names.add(f"{predicate.name}={'|'.join(values)}" if values else "bias")
            rows.append(names)
    return rows


token_text = st.one_of(
    st.text(alphabet="aAb|\\_BOS-1", min_size=1, max_size=4),
    st.sampled_from(["__BOS-1__", "\\__EOS+2__", "__BOS-x__", "__EOS+3__|"]),
)


@st.composite
def sentence_lists(draw):
    sentences = []
    for _ in range(draw(st.integers(0, 4))):
        length = draw(st.integers(1, 5))
        words = draw(st.lists(token_text, min_size=length, max_size=length))
        tags = draw(st.lists(st.sampled_from(["DT", "NN"]), min_size=length, max_size=length))
        sentences.append(Sentence({"word": words, "pos": tags}))
    return sentences


MIXED_TEMPLATE = parse_template(SHA_PEREIRA_CHUNKING.text + "lower(word[0])|pos[+3]\nsuffix2(word[-3])\n")


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(train=sentence_lists(), test=sentence_lists())
def test_matrix_matches_a_token_by_token_reference(train, test):
    extractor = FeatureExtractor(MIXED_TEMPLATE).fit(train)
    expected_train = reference_names(train, MIXED_TEMPLATE)
    assert set(extractor.predicate_names_) == set().union(*expected_train)
    matrix = extractor.transform(test)
    known = set(extractor.predicate_names_)
    for row, names in enumerate(reference_names(test, MIXED_TEMPLATE)):
        assert row_names(extractor, matrix, row) == names & known


READING_TEMPLATE = parse_template(
    "bias\nword[0]\npos[0]\npos[0]|word[-1]\nword[+1]|pos[0]\n"
    "word[-1]|word[0]|pos[0]\npos[0]|word[+1]|lower(pos[0])\n"
    "lower(pos[0])|suffix2(word[0])\n"
)


@settings(max_examples=100, deadline=None)
@given(
    train=sentence_lists(),
    test=sentence_lists(),
    min_count=st.integers(1, 2),
    values=st.lists(st.sampled_from(["DT", "NN", "dt", "VB", "\\|"]), min_size=1, max_size=4),
)
@pytest.mark.slow
def test_reading_matrices_equal_the_matrix_with_the_column_set_to_each_value(train, test, min_count, values):
    """transform_reading looks up every value at once; the oracle substitutes each value
    into the column at every token and transforms the corpus.  "dt" and "DT" share
    their lower-cased predicates; min_count 2 may leave a template no predicate."""
    extractor = FeatureExtractor(READING_TEMPLATE, min_count).fit(train)
    base, by_value, predicates = extractor.transform_reading(
        [Sentence({"word": s["word"]}) for s in test], "pos", values
    )
    base = base.to_scipy()
    num_tokens, num_predicates = base.shape
    reads = [name for name in extractor.predicate_names_ if "pos[0]" in name.partition("=")[0]]
    assert len(set(predicates.tolist())) == len(predicates)
    assert set(predicates.tolist()) <= {extractor.vocabulary_[name] for name in reads}
    assert by_value.shape == (num_tokens * len(values), len(predicates))
    # the same rows over the full matrix's columns, entries in their stored order
    full = scipy.sparse.csr_matrix(
        (by_value.data, predicates[by_value.indices], by_value.indptr), shape=(by_value.shape[0], num_predicates)
    )
    assert all(np.all(np.diff(full.indices[a:b]) > 0) for a, b in zip(full.indptr, full.indptr[1:]))
    for k, value in enumerate(values):
        reading = full[k :: len(values)]  # row n * K + k is token n
        substituted = [Sentence({"word": s["word"], "pos": [value] * len(s)}) for s in test]
        expected = extractor.transform(substituted)
        assert ((base + reading) != expected).nnz == 0
        assert base.multiply(reading).nnz == 0  # no predicate counted twice


def test_reading_a_column_at_another_offset_is_refused():
    train = corpus_of([("the", "DT"), ("cat", "NN")])
    extractor = FeatureExtractor(parse_template("pos[0]\npos[-1]|word[0]\n")).fit(train)
    with pytest.raises(TemplateError, match=r"offsets -1"):
        extractor.transform_reading(train, "pos", ["DT", "NN"])


@pytest.mark.slow
def test_conll2000_train_has_every_template_at_every_token(data_file):
    train = read_conll(data_file("conll2000/train.txt"))
    extractor = FeatureExtractor(SHA_PEREIRA_CHUNKING)
    matrix = extractor.fit_transform(train)
    assert matrix.shape == (211727, len(extractor.predicate_names_))
    assert (np.diff(matrix.indptr) == 20).all()
    test = read_conll(data_file("conll2000/test.txt"))
    test_matrix = extractor.transform(test)
    assert test_matrix.shape == (47377, matrix.shape[1])
    assert (np.diff(test_matrix.indptr) <= 20).all() and test_matrix.nnz < 20 * 47377
    pruned = FeatureExtractor(SHA_PEREIRA_CHUNKING, min_count=2).fit(train)
    assert set(pruned.predicate_names_) < set(extractor.predicate_names_)


@pytest.mark.slow
def _matrix_by_name(extractor: FeatureExtractor, corpus) -> scipy.sparse.csr_matrix:
    """The oracle: each token's predicate names looked up in ``vocabulary_``."""
    values, occurrences = extractor.occurrences(corpus)
    rows, columns = [], []
    for occurrence in occurrences:
        column_of = np.array([extractor.vocabulary_.get(name, -1) for name in occurrence.names] + [-1])
        found = column_of[occurrence.predicate]
        rows.append(np.flatnonzero(found >= 0))
        columns.append(found[found >= 0])
    rows, columns = np.concatenate(rows), np.concatenate(columns)
    return scipy.sparse.csr_matrix(
        (np.ones(len(rows)), (rows, columns)), shape=(values.table.num_tokens, extractor.num_predicates)
    )


@pytest.mark.slow
def test_integer_lookup_transform_equals_name_lookup(data_file):
    """transform goes through the integer index; it must give exactly the
    matrix that looking predicates up by name gives, on held-out data with
    unknown values and with values that need escaping."""
    train = read_conll(data_file("conll2000/train.txt"))
    test = read_conll(data_file("conll2000/test.txt"))
    odd = [Sentence({"word": ["a|b", "\\x", "__BOS-1__", "The"], "pos": ["NN", "|", "DT", "DT"], "chunk": ["O"] * 4})]
    for template in (SHA_PEREIRA_CHUNKING, CRFPP_CHUNKING):
        for min_count in (1, 3):
            extractor = FeatureExtractor(template, min_count).fit(list(train) + odd)
            for corpus in (list(test)[:500], odd):
                by_name = _matrix_by_name(extractor, corpus)
                by_index = extractor.transform(corpus)
                assert by_name.shape == by_index.shape
                assert (by_name != by_index).nnz == 0


def test_column_of_finds_each_fitted_predicate_by_its_key_and_nothing_else():
    corpus = [Sentence({"word": ["a", "b|c", "__BOS-1__"], "pos": ["DT", "NN", "NN"]})]
    extractor = FeatureExtractor(CRFPP_CHUNKING).fit(corpus)
    for column, name in enumerate(extractor.predicate_names_):
        assert extractor.column_of(name) == column
    assert extractor.column_of("w[0]=never-seen") is None
    assert extractor.column_of("no-such-template=a") is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**62), max_size=60) | st.lists(st.integers(0, 5), max_size=60))
def test_factorize_numbers_keys_by_first_occurrence(keys):
    """The hash-table factorisation against a sort: codes, first occurrences and counts."""
    keys = np.array(keys, dtype=np.int64)
    from fstcrf.features.value_lists import factorize

    codes, first, counts = factorize(keys)
    distinct, first_expected, inverse, counts_expected = np.unique(
        keys, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(first_expected)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    np.testing.assert_array_equal(codes, rank[inverse.reshape(-1)])
    np.testing.assert_array_equal(first, first_expected[order])
    np.testing.assert_array_equal(counts, counts_expected[order])
    np.testing.assert_array_equal(keys[first], distinct[order])
