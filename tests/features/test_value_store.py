"""The store of what each column value gives template items (hashes of its single
transformed values, of its prefixes, suffixes and n-grams, its texts), kept across
batches and computed in C where it can: against the hashes of the named, escaped
values the plain path gives; and the simpler hashes of single values alone
(:class:`ValueHashes`)."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.engine import kernel
from fstcrf.errors import ShapeError
from fstcrf.features import hashing
from fstcrf.features.hashing import (
    ListTable,
    SeenTable,
    SingleTable,
    TextTable,
    ValueHashes,
    ValueStore,
    utf8_blob,
    utf8_hashes,
)
from fstcrf.features.template import escape_value, escaped, parse_template, plainly_joined, transform_function
from fstcrf.features.value_lists import SEEN, UNSEEN, per_value
from tests.strategies import oracle_settings

#: Characters of 1 to 4 UTF-8 bytes, a lone surrogate, the characters escaping reads,
#: the n-gram marks, and runs that repeat (equal n-grams within a word).
PIECES = st.sampled_from(list("aaZ09_|\\ é€\U0001f600<>") + ["\ud800", "__BOS-1__", "abab"])
WORD = st.lists(PIECES, max_size=8).map("".join)
#: Words past the longest the kernel takes go the named way.
LONG_WORD = st.integers(60, 70).map(lambda n: ("ab" * n)[:n])
#: ASCII words, which the kernel transforms (but for those escaping changes): printable
#: characters, runs of one class, the lengths around the longest it takes with marks.
ASCII_WORD = st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
    st.lists(st.sampled_from(["Ab", "CD", "ef", "12", "-", ".", "Aa1-"]), max_size=6).map("".join),
    st.integers(58, 66).map(lambda n: ("Ab1-" * n)[:n]),
)
WORDS = st.one_of(
    st.lists(st.one_of(WORD, WORD, LONG_WORD), min_size=1, max_size=12),
    st.lists(ASCII_WORD, min_size=1, max_size=12),
)
TRANSFORMS = st.sampled_from(
    [None, "lower", "shape", "shape2", "longshape", "prefix1", "prefix2", "prefix9", "suffix3", "suffix6"]
)
LIST_TABLES = st.builds(
    lambda kind, low, extra, transform: ListTable(kind, low, low + extra, transform),
    st.sampled_from(["prefixes", "suffixes", "ngrams"]),
    st.integers(1, 7),
    st.integers(0, 3),
    st.sampled_from([None, "lower", "shape", "shape2", "suffix4"]),
)


def _transformed(transform, value):
    return transform_function(transform)(value) if transform else value


def _named_list(table, value, salt):
    observation = parse_template(f"{table.kind}(word[0],{table.low},{table.high})").predicates[0].observations[0]
    return utf8_hashes(escaped(per_value(observation, None)(_transformed(table.transform, value))), salt).tolist()


def _entries(store, rows, place, table):
    """What the store's tables hold for ``rows`` in the table placed at ``place``."""
    if isinstance(table, ListTable):
        spans = store.list_span[place, rows]
        return [store.list_hashes[a:b].tolist() for a, b in spans.tolist()]
    if isinstance(table, TextTable):
        spans = store.text_span[place, rows]
        return [store.text_bytes[a:b].tobytes().decode("utf-8", "surrogatepass") for a, b in spans.tolist()]
    return store.single[place, rows].tolist()


def _expected(table, words, salt):
    if isinstance(table, ListTable):
        return [_named_list(table, word, salt) for word in words]
    if isinstance(table, TextTable):
        return [_transformed(table.transform, word) for word in words]
    if isinstance(table, SeenTable):
        marks = [SEEN if _transformed(table.transform, word).lower() in table.seen else UNSEEN for word in words]
        return utf8_hashes(marks, salt).tolist()
    return utf8_hashes([escape_value(_transformed(table.transform, word)) for word in words], salt).tolist()


TABLES = st.one_of(
    LIST_TABLES,
    TRANSFORMS.map(SingleTable),
    TRANSFORMS.map(TextTable),
    st.tuples(TRANSFORMS, st.frozensets(st.sampled_from(["a", "ab", "éa", "<>"]))).map(lambda pair: SeenTable(*pair)),
)


@oracle_settings(150)
@given(
    batches=st.lists(st.tuples(WORDS, st.lists(TABLES, min_size=1, max_size=4)), min_size=1, max_size=4),
    limit=st.integers(0, 40),
    salt=st.integers(0, 15),
)
def test_each_table_holds_what_the_named_values_give_across_batches(batches, limit, salt):
    store = ValueStore(salt, max_values=limit // 4, max_entries=limit)  # small limits empty it now and then
    for words, tables in batches:
        for _ in range(2):  # the second time with the places kept for the list
            rows, places, _ = store.tables(words, tables)
            for table, place in zip(tables, places):
                assert _entries(store, rows, place, table) == _expected(table, words, salt)
        assert len(store.row) <= limit // 4 + len(words)  # bounded
        # a table new to the store gets the lists of every value it holds
        lists = [table for table in tables if isinstance(table, ListTable)]
        held = sum(len(_named_list(table, value, salt)) for table in lists for value in store.values)
        assert len(store.list_hashes) <= limit + held


def test_seen_tables_are_one_table_per_set_of_words_and_their_number_is_bounded():
    """Two models' sets of training words are two tables even when equal (telling them
    apart by content would compare them at every lookup); a store given a new set at
    every batch empties itself past CACHE_TABLES tables."""
    store = ValueStore(0)
    words = ["Ab", "x"]
    one, other = frozenset({"ab"}), frozenset({"ab"})
    _, places, _ = store.tables(words, [SeenTable(None, one), SeenTable(None, other), SeenTable(None, one)])
    assert places[0] != places[1] and places[0] == places[2]
    assert (
        store.single[places[1], :2].tolist()
        == store.single[places[0], :2].tolist()
        == utf8_hashes([SEEN, UNSEEN], 0).tolist()
    )
    for _ in range(2 * hashing.CACHE_TABLES):
        rows, places, _ = store.tables(words, [SeenTable("lower", frozenset({"x"}))])
        assert store.single[places[0], rows].tolist() == utf8_hashes([UNSEEN, SEEN], 0).tolist()
        assert len(store.place) <= hashing.CACHE_TABLES + 1
        assert len(store.complete) <= hashing.CACHE_TABLES


#: Every transform the kernel writes: its shapes, and prefixes and suffixes of each length.
KERNEL_TRANSFORMS = [None, "lower", "shape", "longshape", "shape2"] + [
    f"{kind}{length}" for kind in ("prefix", "suffix") for length in range(1, 10)
]


@oracle_settings(200)
@given(words=st.lists(ASCII_WORD.filter(lambda word: len(word) <= 64), max_size=10), salt=st.integers(0, 15))
def test_the_kernel_transforms_ascii_as_the_template_names_them(words, salt):
    """The kernel's hashes of each transform of ASCII words, its transformed texts and
    their substring hashes are those of the template's transform functions, escaped."""
    blob = hashing.kernel_blob(words)
    if any(mark in "".join(words) for mark in "\\|_"):
        assert blob is None  # escaping could change them: the named way
        return
    assert blob is not None
    tables = tuple(SingleTable(transform) for transform in KERNEL_TRANSFORMS)
    assert all(table.in_kernel() for table in tables)
    hashes = np.zeros((len(tables) + 1, len(words) + 5), dtype=np.uint64)  # rows reversed, from column 3
    rows = np.arange(len(tables), 0, -1, dtype=np.int64)
    kernel.transform_hashes(blob, *hashing.kernel_kinds(tables), salt, rows, 3, hashes)
    assert not hashes[0].any() and not hashes[:, :3].any() and not hashes[:, 3 + len(words) :].any()
    for table, row in zip(tables, hashes[rows, 3 : 3 + len(words)].tolist()):
        names = [escape_value(_transformed(table.transform, word)) for word in words]
        assert row == utf8_hashes(names, salt).tolist(), table.transform
        spans, out = np.empty((len(words), 2), dtype=np.int64), np.empty(blob.size, dtype=np.uint8)
        count = kernel.transform_texts(blob, hashing.kernel_transform(table.transform), 5, spans, out)
        assert count == sum(len(_transformed(table.transform, word)) for word in words)
        texts = [out[a - 5 : b - 5].tobytes().decode("ascii") for a, b in spans.tolist()]
        assert texts == [_transformed(table.transform, word) for word in words]
        for kind, low, high in [("ngrams", 1, 6), ("suffixes", 2, 4), ("prefixes", 1, 3)]:
            lists = ListTable(kind, low, high, table.transform)
            room = np.empty(lists.capacity(blob.size, blob.count), dtype=np.uint64)
            count = kernel.transform_substring_hashes(
                blob,
                hashing.kernel_transform(table.transform),
                kind == "ngrams",
                kind,
                low,
                high,
                salt,
                7,
                spans,
                room,
            )
            if kind == "ngrams" and max(map(len, words), default=0) > kernel.MAX_SUBSTRING_SOURCE - 2:
                assert count is None  # too long with its marks: the named way
                continue
            assert count == spans[-1, 1] - 7 if words else count == 0
            got = [room[a - 7 : b - 7].tolist() for a, b in spans.tolist()]
            assert got == [_named_list(lists, word, salt) for word in words], (table.transform, kind)


def test_the_kernel_transforms_refuse_what_they_cannot_write():
    blob = hashing.kernel_blob(["abc", "de"])
    spans, room = np.empty((2, 2), dtype=np.int64), np.empty(100, dtype=np.uint64)
    text = np.empty(5, dtype=np.uint8)
    for values in (["é"], ["a" * (kernel.MAX_SUBSTRING_SOURCE + 1)], ["a_b"], ["a|b"], ["a\\b"]):
        assert hashing.kernel_blob(values) is None
    raw = kernel.Strings(*utf8_blob(["é", "a"]))  # given anyway: refused, not read as ASCII
    one = (*hashing.kernel_kinds((SingleTable(None),)), 0, np.zeros(1, dtype=np.int64))
    with pytest.raises(RuntimeError):
        kernel.transform_hashes(raw, *one, 0, np.empty((1, 2), dtype=np.uint64))
    for rows, first, shape in (([1], 0, (1, 2)), ([-1], 0, (1, 2)), ([0], 1, (1, 2)), ([0], -1, (1, 2))):
        with pytest.raises(RuntimeError):  # a row past the table, columns past the stride
            kernel.transform_hashes(blob, *one[:3], np.array(rows, np.int64), first, np.empty(shape, np.uint64))
    assert kernel.transform_texts(raw, (kernel.IDENTITY, 0), 0, spans, text) is None
    assert (
        kernel.transform_substring_hashes(raw, (kernel.IDENTITY, 0), False, "ngrams", 1, 2, 0, 0, spans, room) is None
    )
    prefix = kernel.TRANSFORM_KINDS["prefix"]
    for kinds, lengths in (([prefix], [0]), ([99], [0]), ([-1], [0])):  # a prefix of no length, unknown kinds
        with pytest.raises(RuntimeError):
            kernel.transform_hashes(
                blob,
                np.array(kinds, np.int32),
                np.array(lengths, np.int32),
                0,
                np.zeros(1, np.int64),
                0,
                np.empty((1, 2), dtype=np.uint64),
            )
        assert kernel.transform_texts(blob, (kinds[0], lengths[0]), 0, spans, text) is None
    assert kernel.transform_texts(blob, (kernel.IDENTITY, 0), 0, spans, text[:4]) is None  # 5 bytes, room for 4
    assert (
        kernel.transform_substring_hashes(blob, (kernel.IDENTITY, 0), False, "ngrams", 1, 3, 0, 0, spans, room[:8])
        is None
    )
    assert (
        kernel.transform_substring_hashes(blob, (kernel.IDENTITY, 0), False, "ngrams", 2, 1, 0, 0, spans, room) is None
    )
    with pytest.raises(ShapeError):
        kernel.transform_texts(blob, (kernel.IDENTITY, 0), 0, spans[:1], text)


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


def test_threads_sharing_a_store_that_empties_get_the_hashes_of_their_own_words():
    store = ValueStore(0, max_values=8, max_entries=50)  # emptied by nearly every call
    tables = [ListTable("ngrams", 1, 4, None), SingleTable("lower"), TextTable("shape")]
    batches = [[f"w{k}{j}" * (1 + j % 3) for j in range(20)] for k in range(40)]

    def entries_of(words):
        rows, places, tables_read = store.tables(words, tables)
        # what a batch reads: the arrays it was given, whatever other batches do after
        lists = [tables_read.list_hashes[a:b].tolist() for a, b in tables_read.list_span[places[0], rows].tolist()]
        return lists, tables_read.single[places[1], rows].tolist(), tables_read.text_span[places[2], rows].tolist()

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(entries_of, batches * 5))
    for words, (lists, singles, _) in zip(batches * 5, got):
        assert lists == [_named_list(tables[0], word, 0) for word in words]
        assert singles == _expected(tables[1], words, 0)


def test_extractors_sharing_an_emptying_store_in_threads_get_their_own_rows(monkeypatch):
    from fstcrf.features import hashing
    from fstcrf.features.extractor import FeatureExtractor

    batches = [[Sentence({"word": [f"W{k}x{j}" for j in range(6)]})] for k in range(30)]
    template = "lower(word[0])\nshape(word[-1])|prefix2(word[0])\nngrams(word[0],1,3)\ntypes(word,-1,1)"
    extractor = FeatureExtractor(template).fit(sum(batches[:10], []))

    def names_of(sentences):
        matrix = extractor.transform(sentences).tocoo()
        return sorted(zip(matrix.row.tolist(), matrix.col.tolist()))

    expected = [names_of(sentences) for sentences in batches]
    assert any(expected[20])  # predicates of the training batches are found
    monkeypatch.setattr(hashing, "_STORES", {})
    monkeypatch.setattr(hashing, "_VALUE_HASHES", {})
    monkeypatch.setattr(hashing, "CACHE_VALUES", 3)  # the shared stores made now empty at every batch
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(names_of, batches * 3)) == expected * 3


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
            function = transform_function(transform) if transform else str
            assert found.tolist() == utf8_hashes([escape_value(function(word)) for word in words], 5).tolist()
        assert len(cache.row) <= max_values + len(words)  # bounded


@oracle_settings(100)
@given(words=st.lists(st.one_of(WORD, st.just("a\nb"), st.just("")), min_size=1, max_size=12), salt=st.integers(0, 15))
def test_line_hashes_of_plainly_joined_values_are_the_hashes_of_their_escaped_names(words, salt):
    text = plainly_joined(words)
    if text is None:  # a value escaping changes, or one holding the newline that joins them
        assert escaped(words) != words or any("\n" in word or word.startswith("_") for word in words)
        return
    assert escaped(words) == words
    found = np.empty(len(words), dtype=np.uint64)
    assert kernel.line_hashes(text.encode("utf-8", "surrogatepass"), salt, found)
    assert found.tolist() == utf8_hashes(words, salt).tolist()
    more = np.zeros(len(words) + 1, dtype=np.uint64)  # a text of fewer lines: refused, nothing written
    assert not kernel.line_hashes(text.encode("utf-8", "surrogatepass"), salt, more)
    assert not more.any()
