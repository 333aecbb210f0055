"""The hashes of prefixes, suffixes and n-grams that tagging computes in C and keeps
across batches, and those of single transformed values it keeps likewise, against
the hashes of the named, escaped values the plain path gives."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.engine import kernel
from fstcrf.features.hashing import SubstringCache, ValueHashes, substring_lists, utf8_blob, utf8_hashes
from fstcrf.features.template import escape_value, parse_template, transform_function
from fstcrf.features.token_table import TokenTable
from fstcrf.features.template import escaped
from fstcrf.features.value_lists import ItemValues, per_value
from fstcrf.features.resources import Resources
from tests.strategies import oracle_settings

#: Characters of 1 to 4 UTF-8 bytes, a lone surrogate, the characters escaping reads,
#: the n-gram marks, and runs that repeat (equal n-grams within a word).
PIECES = st.sampled_from(list("aaZ09_|\\ é€\U0001f600<>") + ["\ud800", "__BOS-1__", "abab"])
WORD = st.lists(PIECES, max_size=8).map("".join)
#: Words past the longest the kernel takes go the named way.
LONG_WORD = st.integers(60, 70).map(lambda n: ("ab" * n)[:n])
WORDS = st.lists(st.one_of(WORD, WORD, LONG_WORD), min_size=1, max_size=12)
ITEM = st.tuples(
    st.sampled_from(["prefixes", "suffixes", "ngrams"]), st.integers(1, 7), st.integers(0, 3), st.integers(-2, 2)
).map(lambda item: f"{item[0]}(word[{item[3]:+d}],{item[1]},{item[1] + item[2]})")


def _observation(line):
    return parse_template(line).predicates[0].observations[0]


def _named_hashes(observation, value, salt):
    return utf8_hashes(escaped(per_value(observation, None)(value)), salt).tolist()


@oracle_settings(200)
@given(words=WORDS, line=ITEM, salt=st.integers(0, 15))
def test_the_hashes_of_each_value_are_those_of_its_named_list(words, line, salt):
    observation = _observation(line)
    values = list(dict.fromkeys(words))
    codes = np.array([values.index(word) for word in words], dtype=np.int64)
    ptr, hashes = SubstringCache(observation, salt).token_hashes(codes, values)
    assert ptr.tolist()[0] == 0 and len(ptr) == len(words) + 1
    for t, word in enumerate(words):
        assert hashes[ptr[t] : ptr[t + 1]].tolist() == _named_hashes(observation, word, salt)


@oracle_settings(80)
@given(batches=st.lists(WORDS, min_size=1, max_size=4), line=ITEM, limit=st.integers(0, 40))
def test_the_cache_across_batches_gives_what_computing_anew_gives(batches, line, limit):
    observation = _observation(line)
    cache = SubstringCache(observation, 3, limit=limit, max_values=limit // 4)  # small limits empty it
    for words in batches:
        values = list(dict.fromkeys(words))
        codes = np.array([values.index(word) for word in words], dtype=np.int64)
        cached = cache.token_hashes(codes, values)
        fresh = SubstringCache(observation, 3).token_hashes(codes, values)
        assert cached[0].tolist() == fresh[0].tolist()
        assert cached[1].tolist() == fresh[1].tolist()
        assert len(cache.hashes) <= limit + len(fresh[1])  # bounded
        assert len(cache.row) <= limit // 4 + len(values)


@oracle_settings(100)
@given(sentences=st.lists(WORDS, min_size=1, max_size=5), line=ITEM, salt=st.integers(0, 3))
def test_the_lists_of_a_table_are_those_of_the_named_value_lists(sentences, line, salt):
    observation = _observation(line)
    table = TokenTable([Sentence({"word": words}) for words in sentences])
    ptr, hashes = substring_lists(table, observation, salt)
    named = ItemValues(table, Resources({}, {})).lists(observation)
    assert ptr.tolist() == named.ptr.tolist()
    assert hashes.tolist() == utf8_hashes(named.names, salt)[named.codes].tolist()


def _kernel_hashes(values, kind, low, high, capacity):
    blob, offsets = utf8_blob(values)
    ptr, hashes = np.empty(len(values) + 1, dtype=np.int64), np.empty(capacity, dtype=np.uint64)
    kernel.substring_hashes(blob, offsets, kind, low, high, 0, ptr, hashes)
    return ptr, hashes


def test_the_kernel_refuses_bad_bounds_long_strings_and_a_short_buffer():
    assert _kernel_hashes(["abc"], "ngrams", 1, 2, 5)[0].tolist() == [0, 5]
    for values, low, high, capacity in [
        (["abc"], 0, 2, 10),  # lengths from 1
        (["abc"], 3, 2, 10),  # reversed
        (["a" * (kernel.MAX_SUBSTRING_SOURCE + 1)], 1, 1, 1000),  # longer than the kernel takes
        (["abc"], 1, 2, 4),  # five n-grams, room for four
    ]:
        with pytest.raises(RuntimeError):
            _kernel_hashes(values, "ngrams", low, high, capacity)


def test_threads_sharing_a_cache_that_empties_get_the_hashes_of_their_own_words():
    from concurrent.futures import ThreadPoolExecutor

    observation = _observation("ngrams(word[0],1,4)")
    cache = SubstringCache(observation, 0, limit=50)  # emptied by nearly every call
    batches = [[f"w{k}{j}" * (1 + j % 3) for j in range(20)] for k in range(40)]

    def hashes_of(words):
        values = list(dict.fromkeys(words))
        codes = np.array([values.index(word) for word in words], dtype=np.int64)
        return cache.token_hashes(codes, values)[1].tolist()

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(hashes_of, batches * 5))
    for words, hashes in zip(batches * 5, got):
        assert hashes == [h for word in words for h in _named_hashes(observation, word, 0)]


TRANSFORMS = st.sampled_from([None, "lower", "shape", "shape2", "longshape", "prefix2", "suffix3"])


def _transformed_hashes(words, transform, salt):
    function = transform_function(transform) if transform else str
    return utf8_hashes([escape_value(function(word)) for word in words], salt).tolist()


@oracle_settings(80)
@given(
    batches=st.lists(st.tuples(WORDS, st.lists(TRANSFORMS, min_size=1, max_size=3)), min_size=1, max_size=4),
    max_values=st.integers(0, 12),
)
def test_value_hashes_across_batches_are_those_of_the_escaped_transformed_values(batches, max_values):
    cache = ValueHashes(5, max_values=max_values)  # small limits empty it now and then
    for words, transforms in batches:
        hashes = [np.empty(len(words), dtype=np.uint64) for _ in transforms]
        cache.hashes(words, transforms, hashes)
        for transform, found in zip(transforms, hashes):
            assert found.tolist() == _transformed_hashes(words, transform, 5)
        assert len(cache.row) <= max_values + len(words)  # bounded


def test_tables_sharing_an_emptying_value_cache_in_threads_get_their_own_hashes(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from fstcrf.features import hashing
    from fstcrf.features.extractor import FeatureExtractor

    batches = [[Sentence({"word": [f"W{k}x{j}" for j in range(6)]})] for k in range(30)]
    extractor = FeatureExtractor("lower(word[0])\nshape(word[-1])|prefix2(word[0])").fit(sum(batches[:10], []))

    def names_of(sentences):
        matrix = extractor.transform(sentences).tocoo()
        return sorted(zip(matrix.row.tolist(), matrix.col.tolist()))

    expected = [names_of(sentences) for sentences in batches]
    assert any(expected[20])  # predicates of the training batches are found
    monkeypatch.setattr(hashing, "_VALUE_HASHES", {})
    monkeypatch.setattr(hashing, "CACHE_VALUES", 3)  # the shared caches made now empty at every batch
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(names_of, batches * 3)) == expected * 3
