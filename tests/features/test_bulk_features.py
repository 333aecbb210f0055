"""The hashed predicate dictionary and bulk transform (issue 18 item 3).

Oracle: the predicate names of every token built one by one from the
documented naming scheme (test_features.reference_names), looked up in the
fitted names; and fit_transform, which numbers the names it builds through a
dict, against transform, which never builds a name."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fstcrf.features.dictionary as dictionary
import fstcrf.features.extractor as features
from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.errors import FeatureValueError, FstcrfError
from fstcrf.errors import HashCollisionError
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import SHA_PEREIRA_CHUNKING
from test_features import MIXED_TEMPLATE, reference_names, row_names, sentence_lists


def assert_rows_match_reference(extractor, sentences, template):
    matrix = extractor.transform(sentences)
    known = set(extractor.predicate_names_)
    for row, names in enumerate(reference_names(sentences, template)):
        assert row_names(extractor, matrix, row) == names & known
    return matrix


@pytest.mark.slow
def test_transform_equals_the_names_on_a_corpus_sample(data_file):
    sentences = list(read_conll(data_file("conll2000/train.txt")))
    train, test = sentences[:400], sentences[-150:]
    extractor = FeatureExtractor(SHA_PEREIRA_CHUNKING).fit(train)
    assert_rows_match_reference(extractor, test, SHA_PEREIRA_CHUNKING)
    # bit for bit: the same CSR arrays as the dict-numbered fit_transform
    direct = FeatureExtractor(SHA_PEREIRA_CHUNKING).fit_transform(train)
    hashed = extractor.transform(train)
    assert hashed.has_canonical_format and direct.has_canonical_format
    np.testing.assert_array_equal(hashed.indptr, direct.indptr)
    np.testing.assert_array_equal(hashed.indices, direct.indices)
    np.testing.assert_array_equal(hashed.data, direct.data)


@settings(max_examples=60, deadline=None)
@given(train=sentence_lists(), min_count=st.integers(1, 2))
def test_transform_of_the_training_set_equals_fit_transform(train, min_count):
    direct = FeatureExtractor(MIXED_TEMPLATE, min_count).fit_transform(train)
    hashed = FeatureExtractor(MIXED_TEMPLATE, min_count).fit(train).transform(train)
    assert direct.shape == hashed.shape and (direct != hashed).nnz == 0
    np.testing.assert_array_equal(direct.indptr, hashed.indptr)


def colliding_at_salt_zero(real):
    """A string hash under which, at salt 0, every value hashes like its first
    character (so "ab" and "aA" collide), and at other salts is ``real``."""

    def hashes(values, salt):
        return real([value[:1] for value in values] if salt == 0 else values, salt)

    return hashes


def test_a_forced_collision_is_detected_and_rehashed(monkeypatch, tmp_path):
    for module in (features, dictionary):  # fit's keys and the names' keys
        monkeypatch.setattr(module, "utf8_hashes", colliding_at_salt_zero(module.utf8_hashes))
    train = [Sentence({"word": ["ab", "aA", "b|", "bb"], "pos": ["DT", "NN", "NN", "DT"]})]
    test = [Sentence({"word": ["aA", "zz", "bb", "ab"], "pos": ["NN", "DT", "NN", "NN"]})]
    template = features.parse_template("bias\nword[0]\nword[-1]|pos[0]\n")
    with pytest.raises(HashCollisionError):  # salt 0 collides: the table refuses it
        dictionary.HashedDictionary(
            dictionary.predicate_keys(template, FeatureExtractor(template).fit(train).predicate_names_, 0), 0
        )
    extractor = FeatureExtractor(template).fit(train)
    assert extractor.dictionary.salt == 1
    assert len(set(extractor.dictionary.keys.tolist())) == extractor.num_predicates
    assert_rows_match_reference(extractor, test, template)
    # the salt travels with the extractor's data
    data, arrays = extractor.to_payload()
    assert data["salt"] == 1
    again = FeatureExtractor.from_payload(data, arrays)
    assert (again.transform(test) != extractor.transform(test)).nnz == 0


def test_no_salt_without_collisions_is_a_typed_error(monkeypatch):
    monkeypatch.setattr(dictionary, "utf8_hashes", lambda values, salt: np.zeros(len(values), dtype=np.uint64))
    train = [Sentence({"word": ["a", "b"], "pos": ["DT", "NN"]})]
    with pytest.raises(HashCollisionError, match="collide under each of 16 salts") as caught:
        FeatureExtractor("word[0]\n").fit(train)
    assert isinstance(caught.value, FstcrfError) and isinstance(caught.value, ValueError)


def test_loaded_names_are_decoded_only_when_asked():
    train = [Sentence({"word": ["the", "cät", "a|b"], "pos": ["DT", "NN", "NN"]})]
    fitted = FeatureExtractor("bias\nword[0]\nword[-1]|pos[0]\n").fit(train)
    loaded = FeatureExtractor.from_payload(*fitted.to_payload())
    loaded.transform(train)
    assert loaded._names is None
    assert loaded.predicate_names_ == fitted.predicate_names_
    assert loaded.vocabulary_ == fitted.vocabulary_


def test_an_empty_corpus_and_a_template_without_known_predicates():
    train = [Sentence({"word": ["a"], "pos": ["DT"]})]
    extractor = FeatureExtractor("word[0]\npos[-1]|pos[0]\n", min_count=1).fit(train)
    assert extractor.transform([]).shape == (0, extractor.num_predicates)
    matrix = extractor.transform([Sentence({"word": ["b", "c"], "pos": ["NN", "DT"]})])
    assert matrix.shape == (2, extractor.num_predicates) and matrix.nnz == 0


# -- real-valued predicates: value(column[offset]) ------------------------------------

NUMERIC_TEMPLATE = "bias\nword[0]\nvalue(score[0])\nvalue(score[-1])\nword[0]|pos[+1]\n"


@st.composite
def scored_sentences(draw):
    sentences = []
    for _ in range(draw(st.integers(0, 4))):
        length = draw(st.integers(1, 5))
        words = draw(st.lists(st.sampled_from(["a", "b", "c|"]), min_size=length, max_size=length))
        tags = draw(st.lists(st.sampled_from(["DT", "NN"]), min_size=length, max_size=length))
        scores = draw(
            st.lists(st.sampled_from(["0", "1.5", "-2", "1e3", "0.0", "7"]), min_size=length, max_size=length)
        )
        sentences.append(Sentence({"word": words, "pos": tags, "score": scores}))
    return sentences


@settings(max_examples=60, deadline=None)
@given(train=scored_sentences(), test=scored_sentences())
def test_real_valued_entries_are_the_numbers_read_token_by_token(train, test):
    """Oracle: each token's binary names from the naming scheme, plus the number
    read from the score column at each offset (none outside the sentence or for 0)."""
    template = features.parse_template(NUMERIC_TEMPLATE)
    binary = features.parse_template("bias\nword[0]\nword[0]|pos[+1]\n")
    extractor = FeatureExtractor(template).fit(train)
    for sentences, matrix in (
        (train, FeatureExtractor(template).fit_transform(train)),
        (test, extractor.transform(test)),
    ):
        assert matrix.has_canonical_format
        expected_names = reference_names(sentences, binary)
        row = 0
        for sentence in sentences:
            for position in range(len(sentence)):
                expected = {name: 1.0 for name in expected_names[row] if name in extractor.vocabulary_}
                for offset, name in ((0, "value(score[0])"), (-1, "value(score[-1])")):
                    inside = 0 <= position + offset < len(sentence)
                    number = float(sentence["score"][position + offset]) if inside else 0.0
                    if number and name in extractor.vocabulary_:
                        expected[name] = number
                entries = matrix[row]
                assert {extractor.predicate_names_[c]: v for c, v in zip(entries.indices, entries.data)} == expected
                row += 1


def test_non_numbers_name_the_sentence_and_token():
    good = Sentence({"word": ["a", "b"], "score": ["1", "2"]})
    bad = Sentence({"word": ["a", "b", "c"], "score": ["1", "2", "many"]})
    with pytest.raises(
        FeatureValueError,
        match=r"sentence 2, token 3: value\(score\[0\]\) reads "
        r"'many'",
    ):
        FeatureExtractor("value(score[0])\n").fit([good, bad])
    extractor = FeatureExtractor("value(score[0])\n").fit([good])
    with pytest.raises(FeatureValueError, match="sentence 1, token 2.*'nan'"):
        extractor.transform([Sentence({"word": ["a", "b"], "score": ["1", "nan"]})])


def test_value_stands_alone_and_is_not_varied_by_a_reading():
    with pytest.raises(features.TemplateError, match="<string>:1: .*stands alone on its line"):
        features.parse_template("value(score[0])|word[0]\n")
    with pytest.raises(features.TemplateError, match="unknown transform 'values'"):
        features.parse_template("values(score[0])\n")
    train = [Sentence({"word": ["a", "b"], "pos": ["1", "2"], "score": ["3", "0"]})]
    extractor = FeatureExtractor("word[0]\nvalue(score[0])\nvalue(pos[0])\n").fit(train)
    with pytest.raises(features.TemplateError, match="reads column 'pos' as a number"):
        extractor.transform_reading([Sentence({"word": ["a"], "score": ["3"]})], "pos", ["1", "2"])
    reading = FeatureExtractor("word[0]|pos[0]\nvalue(score[0])\n").fit(train)
    base, _, _ = reading.transform_reading([Sentence({"word": ["a", "b"], "score": ["2.5", "0"]})], "pos", ["1", "2"])
    assert base.to_scipy().toarray().tolist() == [[0.0, 0.0, 2.5], [0.0, 0.0, 0.0]]


def test_a_model_with_a_real_valued_predicate_trains_saves_and_loads(tmp_path):
    from fstcrf.model import ChainCRF, load_model

    rng = np.random.default_rng(5)
    sentences = []
    for _ in range(30):
        scores = rng.normal(size=6)
        sentences.append(
            Sentence(
                {
                    "word": ["w"] * 6,
                    "score": [f"{x:.3f}" for x in scores],
                    "tag": ["P" if x > 0 else "N" for x in scores],
                }
            )
        )
    model = ChainCRF("bias\nvalue(score[0])\n", max_iter=30).fit(sentences, target="tag")
    predicted = [label for labels in model.predict(sentences) for label in labels]
    gold = [label for sentence in sentences for label in sentence["tag"]]
    assert np.mean(np.array(predicted) == np.array(gold)) > 0.9  # the sign of the number decides
    model.save(tmp_path / "m.model")
    loaded = load_model(tmp_path / "m.model")
    assert loaded.predict(sentences) == model.predict(sentences)
    assert loaded.extractor_.predicate_names_ == ["bias", "value(score[0])"]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 150), st.integers(1, 40), st.integers(0, 2**32), st.booleans())
def test_predicate_rows_are_the_known_columns_ascending(num_tokens, num_templates, seed, collide):
    """fh_predicate_rows against numpy: each token's row holds the columns of the keys
    its templates find, ascending.  With ``collide`` two templates share a seed and
    an item, so their keys and columns are equal (the ranks tie and the row falls
    back to insertion); a third of the keys are unknown."""
    from fstcrf.engine import kernel

    rng = np.random.default_rng(seed)
    num_observations = 3
    value_hashes = rng.integers(0, 2**63, size=(num_observations, num_tokens), dtype=np.uint64)
    seeds = rng.integers(0, 2**63, size=num_templates, dtype=np.uint64)
    items = rng.integers(0, num_observations, size=num_templates).astype(np.int32)
    if collide and num_templates > 1:
        seeds[1], items[1] = seeds[0], items[0]
    item_ptr = np.arange(num_templates + 1, dtype=np.int32)
    keys = np.repeat(seeds[None, :], num_tokens, axis=0)  # [N, K]
    for k in range(num_templates):
        column = np.ascontiguousarray(keys[:, k])
        kernel.chain_keys(column, np.ascontiguousarray(value_hashes[items[k]]))
        keys[:, k] = column
    known = np.unique(keys)
    known = rng.permutation(known[rng.random(len(known)) < 0.67])  # key -> its column
    column_of = {int(key): column for column, key in enumerate(known.tolist())}
    capacity = 1 << max(4, int(4 * len(known) // 3).bit_length())
    slots = np.empty(2 * capacity, dtype=np.uint64)
    kernel.build_table(known, slots, "the known keys")
    indptr = np.empty(num_tokens + 1, dtype=np.int64)
    indices = np.empty(num_tokens * num_templates, dtype=np.int32)
    kernel.predicate_rows(value_hashes, seeds, item_ptr, items, slots, indptr, indices)
    for t in range(num_tokens):
        expected = sorted(column_of[int(key)] for key in keys[t] if int(key) in column_of)
        assert indices[indptr[t] : indptr[t + 1]].tolist() == expected
