"""The store of what each column value gives template items (hashes of its single
transformed values, of its prefixes, suffixes and n-grams, its texts), kept across
batches and computed in C where it can: against the hashes of the named, escaped
values the plain path gives; and the simpler hashes of single values alone
(:class:`ValueHashes`)."""

from concurrent.futures import ThreadPoolExecutor
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.engine import kernel
from fstcrf.errors import HashCollisionError, ShapeError
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


@oracle_settings(100)
@given(batches=st.lists(st.tuples(WORDS, st.lists(TABLES, min_size=1, max_size=5)), min_size=1, max_size=5))
def test_a_store_grows_past_the_room_it_reserved_keeping_every_entry(batches):
    """A store made with room for one value, one table of each category and one list
    hash or text byte grows every array by copies, and each table still holds what
    every value gives it; an array a batch was given is left as it was."""
    with (
        mock.patch.object(hashing, "FIRST_VALUES", 1),
        mock.patch.object(hashing, "FIRST_TABLES", dict.fromkeys(("single", "list", "text"), 1)),
        mock.patch.object(hashing, "FIRST_ENTRIES", 1),
    ):
        store = ValueStore(5)
    met: list[str] = []
    for words, tables in batches:
        _, _, given_tables = store.tables(words, tables)
        read = _rows_read(given_tables)
        kept = [array.copy() for array in read]
        met += words
        rows, places, _ = store.tables(met, tables)
        for table, place in zip(tables, places):
            assert _entries(store, rows, place, table) == _expected(table, met, 5)
        assert all(map(np.array_equal, read, kept))


def _rows_read(tables) -> list[np.ndarray]:
    """The parts of a batch's StoreTables it reads: each table's first num_rows entries."""
    rows = tables.num_rows
    spans = [tables.single[:, :rows], tables.list_span[:, :rows], tables.text_span[:, :rows]]
    return [*spans, tables.list_hashes, tables.text_bytes]


@oracle_settings(100)
@given(
    word_batches=st.lists(WORDS, min_size=2, max_size=6),
    first=st.lists(TABLES, min_size=1, max_size=4),
    second=st.lists(TABLES, max_size=3),
    salt=st.integers(0, 15),
)
def test_lists_of_tables_that_share_tables_fill_them_in_turn(word_batches, first, second, salt):
    """Two lists of tables, the second sharing the first's first table, asked for in
    turn with new words each time: each table holds every word's entries, whichever
    list last filled it, each written once."""
    store = ValueStore(salt)
    lists = [first, first[:1] + second]
    for k, words in enumerate(word_batches):
        tables = lists[k % 2]
        rows, places, _ = store.tables(words, tables)
        for table, place in zip(tables, places):
            assert _entries(store, rows, place, table) == _expected(table, words, salt)
        lists_held = [(t, store.values[:done]) for t, done in store.filled.items() if isinstance(t, ListTable)]
        assert len(store.list_hashes) == sum(len(_named_list(t, v, salt)) for t, values in lists_held for v in values)


def test_seen_tables_whose_words_hash_alike_are_marked_in_python(monkeypatch):
    """A set of seen words two of which hash alike (a table the kernel cannot build)
    is marked in Python, with the same marks; a second set of one list of tables too."""

    def collide(keys, what):
        raise HashCollisionError(f"{what}: two of them have the same key")

    words = ["Ab", "x", "cD"]
    one, other = frozenset({"ab"}), frozenset({"cd", "x"})
    tables = [SeenTable(None, one), SingleTable(None), SeenTable("lower", other)]
    for patched in (False, True):
        if patched:
            monkeypatch.setattr(kernel, "key_table", collide)
        store = ValueStore(3)
        rows, places, _ = store.tables(words, tables)
        for table, place in zip(tables, places):
            assert _entries(store, rows, place, table) == _expected(table, words, 3)


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


def _kernel_store(words, tables, salt=0, first=3, capacity=None, text=None):
    """What a StoreWriter writes of ``words`` (or of ``text`` given for them) for
    ``tables`` (each with its kernel fields), placed in reverse order from row 1 on,
    at columns from ``first`` and past 5 list hashes and 7 text bytes already there:
    (the written counts or None, the entries of each table by word)."""
    text = hashing.kernel_text(words) if text is None else text
    rows = len(tables) + 1
    places = list(range(len(tables), 0, -1))
    fields = np.array([(*hashing.kernel_fields(table), place) for table, place in zip(tables, places)], np.int64)
    stride = first + len(words) + 2
    single = np.zeros((rows, stride), np.uint64)
    list_span, text_span = np.zeros((rows, stride, 2), np.int64), np.zeros((rows, stride, 2), np.int64)
    characters = sum(map(len, words))
    if capacity is None:
        capacity = sum(table.capacity(characters, len(words)) for table in tables if isinstance(table, ListTable))
    hashes, text_bytes = np.zeros(5 + capacity, np.uint64), np.zeros(7 + characters * len(tables), np.uint8)
    seen_sets = {id(table.seen): table.seen for table in tables if isinstance(table, SeenTable)}
    assert len(seen_sets) <= 1  # the kernel takes one set of words at a time
    seen = None
    for words_seen in seen_sets.values():
        slots = kernel.key_table(utf8_hashes(list(words_seen), salt), "the test's seen words")
        seen = (slots, utf8_hashes([SEEN, UNSEEN], salt))
    writer = kernel.StoreWriter()
    written = writer(
        text, len(words), fields, salt, first, single, list_span, 5, hashes, text_span, 7, text_bytes, seen
    )
    columns = slice(first, first + len(words))
    assert not single[0].any() and not single[:, :first].any() and not single[:, columns.stop :].any()
    assert not hashes[:5].any() and not text_bytes[:7].any()
    entries = []
    for table, place in zip(tables, places):
        if isinstance(table, ListTable):
            entries.append([hashes[a:b].tolist() for a, b in list_span[place, columns].tolist()])
        elif isinstance(table, TextTable):
            entries.append([text_bytes[a:b].tobytes().decode("ascii") for a, b in text_span[place, columns].tolist()])
        else:
            entries.append(single[place, columns].tolist())
    return written, entries


#: Every transform the kernel writes: its shapes, and prefixes and suffixes of each length.
KERNEL_TRANSFORMS = [None, "lower", "shape", "longshape", "shape2"] + [
    f"{kind}{length}" for kind in ("prefix", "suffix") for length in range(1, 10)
]


@oracle_settings(200)
@given(
    words=st.lists(ASCII_WORD.filter(lambda word: len(word) <= 62), min_size=1, max_size=10),
    salt=st.integers(0, 15),
    seen_at=st.lists(st.integers(0, 9), max_size=4),
    others=st.lists(WORD, max_size=3),
)
def test_the_kernel_fills_a_store_as_the_template_names_ascii_values(words, salt, seen_at, others):
    """The kernel's single hashes, seen marks, substring lists and texts of every
    transform of ASCII words, written together in one call, are those of the
    template's transform functions, escaped and hashed in Python (the seen words some
    of the words' transforms lower-cased, and others); it refuses words escaping could
    change."""
    seen = frozenset(
        [_transformed(transform, words[k % len(words)]).lower() for k in seen_at for transform in (None, "shape")]
        + [word.lower() for word in others]
    )
    tables = [
        table
        for transform in KERNEL_TRANSFORMS
        for table in (
            SingleTable(transform),
            SeenTable(transform, seen),
            TextTable(transform),
            ListTable("ngrams", 1, 6, transform),
            ListTable("suffixes", 2, 4, transform),
            ListTable("prefixes", 1, 3, transform),
        )
    ]
    written, entries = _kernel_store(words, tables, salt)
    if any(mark in "".join(words) for mark in "\\|_"):
        assert written is None  # escaping could change them: the named way
        return
    assert written is not None
    for table, got in zip(tables, entries):
        assert got == _expected(table, words, salt), table
    texts = [table for table in tables if isinstance(table, TextTable)]
    assert written[1] == sum(len(_transformed(table.transform, w)) for table in texts for w in words)


def test_the_kernel_store_refuses_what_it_cannot_write():
    assert hashing.kernel_text(["é", "a"]) is None
    table = [ListTable("ngrams", 1, 3, None)]
    for values in (["a" * (kernel.MAX_SUBSTRING_SOURCE + 1)], ["a_b"], ["a|b"], ["a\\b"], ["a", "b\nc"]):
        assert _kernel_store(values, table)[0] is None, values
    words = ["abc", "de"]
    assert _kernel_store(words, table)[0] is not None
    assert _kernel_store(words, table, capacity=8)[0] is None  # no room
    for text in (b"abc", b"abc\nde\nf", b"abc\xc3\xa9\nde", b"abc\nd\x80"):  # too few, too many, not ASCII
        assert _kernel_store(words, table, text=text)[0] is None, text
    assert _kernel_store([], table, text=b"")[0] is None  # no strings
    long = ["a" * (kernel.MAX_SUBSTRING_SOURCE - 1)]  # too long with its marks
    assert _kernel_store(long, [SingleTable(None)])[0] is not None
    assert _kernel_store(long, [ListTable("ngrams", 1, 2, None)])[0] is None
    text = hashing.kernel_text(words)
    single, spans = np.zeros((2, 4), np.uint64), np.zeros((2, 4, 2), np.int64)
    room, text_bytes = np.zeros(50, np.uint64), np.zeros(50, np.uint8)
    writer = kernel.StoreWriter()

    def stored(fields, first=0, list_base=0, text_base=0):
        table = np.array([fields], np.int64)
        return writer(text, 2, table, 0, first, single, spans, list_base, room, spans.copy(), text_base, text_bytes)

    good = (*hashing.kernel_fields(ListTable("ngrams", 1, 3, None)), 1)
    assert stored(good) is not None
    assert stored(good, first=3) is None  # columns past the stride
    assert stored(good, list_base=51) is None and stored(good, text_base=-1) is None  # bases past the buffers
    assert stored(good, list_base=45) is None  # no room left past the base
    for change in ((7, 2), (7, -1), (0, 3), (1, 99), (3, 2), (4, 5), (5, 0), (6, 0), (6, 65)):
        bad = list(good)
        bad[change[0]] = change[1]  # a place past the table, kinds and bounds it lacks
        assert stored(bad) is None, change
    prefix = (kernel.STORE_CATEGORIES["single"], kernel.TRANSFORM_KINDS["prefix"], 0, 0, 0, 0, 0, 0)
    assert stored(prefix) is None  # a prefix of no length
    seen_table = np.array([(*hashing.kernel_fields(SeenTable(None, frozenset({"abc"}))), 1)], np.int64)
    slots, marks = kernel.key_table(utf8_hashes(["abc"], 0), "words"), utf8_hashes([SEEN, UNSEEN], 0)

    def seen_marks(seen):
        single[:] = 0
        return writer(text, 2, seen_table, 0, 0, single, spans, 0, room, spans.copy(), 0, text_bytes, seen)

    assert seen_marks((slots, marks)) is not None and single[1, :2].tolist() == marks.tolist()
    assert seen_marks(None) is None  # a seen table without the table of its words
    assert seen_marks((slots[:-2], marks)) is None  # a capacity not a power of two
    with pytest.raises(ShapeError):
        seen_marks((slots[:-1], marks))
    with pytest.raises(ShapeError):
        seen_marks((slots, marks[:1]))
    with pytest.raises(ShapeError):
        writer(text, 2, np.zeros((1, 3), np.int64), 0, 0, single, spans, 0, room, spans, 0, text_bytes)


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
