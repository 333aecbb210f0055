"""The fast paths of feature extraction against the plain ones they replace: UTF-8
hashes of a whole list at once, escaping a whole list at once, seen_lower marks, the
predicate rows of a table's two halves looked up in two threads, and the lines that
read a token's own value looked up once per distinct value."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fstcrf.features.dictionary as dictionary_module
from fstcrf.corpus.conll import Sentence
from fstcrf.engine import kernel
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.hashing import utf8_hashes
from fstcrf.features.template import escape_value, escaped
from tests.strategies import oracle_settings

#: Characters of 1 to 4 UTF-8 bytes, a lone surrogate, and the characters escaping reads.
CHARACTERS = st.sampled_from(list("aZ09_|\\\n é€\U0001f600") + ["\ud800", "__BOS-1__", "__EOS+2__"])
VALUES = st.lists(st.lists(CHARACTERS, max_size=6).map("".join), max_size=12)


def _one_by_one_hashes(values, salt):
    """The hashes of each value's UTF-8 bytes (surrogates passed), encoded one by one."""
    encoded = [value.encode("utf-8", "surrogatepass") for value in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(piece) for piece in encoded], out=offsets[1:])
    hashes = np.empty(len(encoded), dtype=np.uint64)
    kernel.string_hashes(np.frombuffer(b"".join(encoded) + b"\0", dtype=np.uint8), offsets, salt, hashes)
    return hashes


@oracle_settings(200)
@given(values=VALUES, salt=st.integers(0, 15))
def test_utf8_hashes_of_a_list_are_those_of_each_value(values, salt):
    assert utf8_hashes(values, salt).tolist() == _one_by_one_hashes(values, salt).tolist()


@oracle_settings(200)
@given(values=VALUES)
def test_escaping_a_list_escapes_each_value(values):
    assert escaped(values) == [escape_value(value) for value in values]


WORDS = st.lists(st.sampled_from(["a", "B", "ab|", "_x", "Ünï", "1-2", "a\\b", "__BOS-1__"]), min_size=1, max_size=9)


#: Single items crossed, value lists, value lists crossed with single items.
TEMPLATE = "\n".join(
    ["bias", "word[0]|shape(word[-1])", "ngrams(word[0],1,3)", "bag(lower(word),-2,1)|suffix1(word[0])"]
)


@oracle_settings(40)
@given(train=st.lists(WORDS, min_size=1, max_size=6), test=st.lists(WORDS, min_size=1, max_size=30))
def test_the_list_rows_of_two_halves_are_those_of_the_whole(train, test):
    extractor = FeatureExtractor(TEMPLATE).fit([Sentence({"word": words}) for words in train])
    sentences = [Sentence({"word": words}) for words in test]
    whole = extractor.transform_rows(sentences)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dictionary_module, "LIST_ROWS_HALF", 1)  # halves from 2 tokens on
        halves = extractor.transform_rows(sentences)
    assert halves.indptr.tolist() == whole.indptr.tolist()
    assert halves.indices.tolist() == whole.indices.tolist()
    assert halves.data.tolist() == whole.data.tolist()


@oracle_settings(100)
@given(
    words=st.lists(st.sampled_from(["a", "A", "b", "Bé", "c|"]), min_size=1, max_size=12),
    seen=st.frozensets(st.sampled_from(["a", "bé", "c|", "d"])),
)
def test_seen_marks_say_whether_each_token_was_seen_lower_cased(words, seen):
    from fstcrf.features.value_lists import SEEN, UNSEEN, seen_marks

    values = list(dict.fromkeys(words))
    codes = np.array([values.index(word) for word in words], dtype=np.int64)
    marks = seen_marks(codes, values, seen)
    expected = [SEEN if word.lower() in seen else UNSEEN for word in words]
    assert marks.names == list(dict.fromkeys(SEEN if value.lower() in seen else UNSEEN for value in values))
    assert marks.ptr.tolist() == list(range(len(words) + 1))
    assert [marks.names[code] for code in marks.codes.tolist()] == expected


#: Lines reading the token's own word (looked up once per distinct word), and others.
GROUPED_TEMPLATE = "\n".join(
    [
        "bias",
        "word[0]",
        "ngrams(word[0],1,3)",
        "lower(word[0])|suffixes(word[0],1,2)",
        "seen_lower(word[0])|shape(word[0])",
        "word[-1]|word[0]",
        "bag(lower(word),-2,1)",
        "prefixes(word[+1],1,2)",
    ]
)


@oracle_settings(40)
@given(
    train=st.lists(WORDS, min_size=1, max_size=6),
    test=st.lists(WORDS, min_size=1, max_size=30),
    halves=st.booleans(),
)
def test_lines_of_a_token_own_value_looked_up_once_per_value_give_the_same_rows(train, test, halves):
    training = [Sentence({"word": words}) for words in train]
    sentences = [Sentence({"word": words}) for words in test]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dictionary_module, "LIST_ROWS_HALF", 1 if halves else 10**9)
        patch.setattr(dictionary_module, "GROUPED_TOKENS", 0)  # groups however few the tokens
        grouped = FeatureExtractor(GROUPED_TEMPLATE).fit(training).transform_rows(sentences)
        # a dictionary lays its lines out once: a fresh one, laid out without groups
        patch.setattr(dictionary_module, "own_value_lines", lambda template, chosen: (None, []))
        each_token = FeatureExtractor(GROUPED_TEMPLATE).fit(training).transform_rows(sentences)
    assert grouped.indptr.tolist() == each_token.indptr.tolist()
    assert grouped.indices.tolist() == each_token.indices.tolist()


def test_own_value_lines_are_those_reading_one_column_at_the_token_itself():
    from fstcrf.features.dictionary import own_value_lines
    from fstcrf.features.template import parse_template

    template = parse_template(GROUPED_TEMPLATE + f"\npos[0]\nword[0]|pos[0]\ngazetteer(word[0],{__file__})")
    assert own_value_lines(template, range(len(template))) == ("word", [0, 1, 2, 3, 4])
    assert own_value_lines(template, [5, 6, 8]) == ("pos", [8])
    assert own_value_lines(template, [0, 5, 6]) == (None, [])


def test_the_kernel_refuses_groups_out_of_range():
    from fstcrf.engine.kernel.features import list_rows

    slots = np.zeros(2 * 16, dtype=np.uint64)
    value_ptr = np.array([[0, 1, 2]], dtype=np.int64)  # one item, two tokens, a value each
    hashes = np.array([1, 2], dtype=np.uint64)
    line = (np.array([0, 1], dtype=np.int32), np.array([0], dtype=np.int32))
    indptr, indices = np.empty(3, dtype=np.int64), np.empty(2, dtype=np.int32)
    good = (1, np.array([0, 1], dtype=np.int64), np.array([0, 1, 2], dtype=np.int64))
    list_rows(value_ptr, hashes, np.array([7], dtype=np.uint64), *line, slots, 1, indptr, indices, good)
    assert indptr.tolist() == [0, 0, 0]  # an empty table knows no key
    for groups in [
        (1, np.array([0, 2], dtype=np.int64), good[2]),  # group 2 of 2
        (1, np.array([0, -1], dtype=np.int64), good[2]),
        (1, good[1], np.array([0, 2, 1], dtype=np.int64)),  # decreasing room
        (2, good[1], good[2]),  # more grouped lines than lines
    ]:
        with pytest.raises(RuntimeError, match="ff_list_rows"):
            list_rows(value_ptr, hashes, np.array([7], dtype=np.uint64), *line, slots, 1, indptr, indices, groups)
