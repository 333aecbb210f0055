"""The hashed predicate dictionary and bulk transform (issue 18 item 3).

Oracle: the predicate names of every token built one by one from the
documented naming scheme (test_features.reference_names), looked up in the
fitted names; and fit_transform, which numbers the names it builds through a
dict, against transform, which never builds a name."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fstcrf.features as features
from fstcrf.conll import Sentence, read_conll
from fstcrf.errors import FstcrfError
from fstcrf.features import SHA_PEREIRA_CHUNKING, FeatureExtractor, HashCollisionError
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
    monkeypatch.setattr(features, "_string_hashes", colliding_at_salt_zero(features._string_hashes))
    train = [Sentence({"word": ["ab", "aA", "b|", "bb"], "pos": ["DT", "NN", "NN", "DT"]})]
    test = [Sentence({"word": ["aA", "zz", "bb", "ab"], "pos": ["NN", "DT", "NN", "NN"]})]
    template = features.parse_template("bias\nword[0]\nword[-1]|pos[0]\n")
    with pytest.raises(HashCollisionError):        # salt 0 collides: the table refuses it
        features._HashedDictionary(features._predicate_keys(template, FeatureExtractor(template).fit(
            train).predicate_names_, 0), 0)
    extractor = FeatureExtractor(template).fit(train)
    assert extractor._dictionary.salt == 1
    assert len(set(extractor._dictionary.keys.tolist())) == extractor.num_predicates
    assert_rows_match_reference(extractor, test, template)
    # the salt travels with the extractor's data
    data, arrays = extractor.to_payload()
    assert data["salt"] == 1
    again = FeatureExtractor.from_payload(data, arrays)
    assert (again.transform(test) != extractor.transform(test)).nnz == 0


def test_no_salt_without_collisions_is_a_typed_error(monkeypatch):
    monkeypatch.setattr(features, "_string_hashes",
                        lambda values, salt: np.zeros(len(values), dtype=np.uint64))
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
