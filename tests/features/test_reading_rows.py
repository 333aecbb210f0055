"""The rows of lines that read a lower tagger's label under each of its values
(``fh_reading_rows``), against keys chained and looked up in Python; and a few
tokens' reading rows (one kernel call) against a batch's (keys per distinct context)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.engine import kernel
from fstcrf.errors import ShapeError
from fstcrf.features import dictionary
from fstcrf.features.extractor import FeatureExtractor
from tests.strategies import oracle_settings

MASK = 2**64 - 1


def _mix(x: int) -> int:
    """fh_mix, the splitmix64 finaliser, in Python."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _table(keys: list[int]) -> np.ndarray:
    capacity = 1 << max(4, (4 * len(keys) // 3).bit_length())
    slots = np.empty(2 * capacity, dtype=np.uint64)
    kernel.build_table(np.array(keys, dtype=np.uint64), slots, "the test keys")
    return slots


@st.composite
def reading_instances(draw):
    """Hashes of J observations at N tokens and of V read observations under K values,
    R lines over them, and a table holding some of the keys they make."""
    num_tokens, num_values = draw(st.integers(0, 6)), draw(st.integers(0, 4))
    num_observations, num_read = draw(st.integers(0, 3)), draw(st.integers(1, 2))
    small = st.integers(0, 3)  # few distinct hashes: tokens and values alike, keys repeated
    value_hashes = draw(st.lists(small, min_size=num_observations * num_tokens, max_size=num_observations * num_tokens))
    read_hashes = draw(st.lists(small, min_size=num_read * num_values, max_size=num_read * num_values))
    lines = draw(
        st.lists(st.lists(st.integers(0, num_observations + num_read - 1), max_size=3), min_size=0, max_size=4)
    )
    seeds = draw(st.lists(st.integers(0, MASK), min_size=len(lines), max_size=len(lines)))
    return (
        np.array(value_hashes, dtype=np.uint64).reshape(num_observations, num_tokens),
        np.array(read_hashes, dtype=np.uint64).reshape(num_read, num_values),
        seeds,
        lines,
        draw(st.randoms(use_true_random=False)),
    )


def _keys(value_hashes, read_hashes, seed: int, items: list[int], t: int, k: int) -> int:
    key = seed
    for item in items:
        if item < len(value_hashes):
            key = _mix(key ^ int(value_hashes[item, t]))
        else:
            key = _mix(key ^ int(read_hashes[item - len(value_hashes), k]))
    return key


@oracle_settings(100)
@given(instance=reading_instances())
def test_reading_rows_are_each_tokens_keys_under_each_value_looked_up(instance):
    value_hashes, read_hashes, seeds, lines, random = instance
    num_tokens, num_values = value_hashes.shape[1], read_hashes.shape[1]
    every = {
        _keys(value_hashes, read_hashes, seed, items, t, k)
        for t in range(num_tokens)
        for k in range(num_values)
        for seed, items in zip(seeds, lines)
    }
    known = sorted(key for key in every if random.random() < 0.6) + [random.getrandbits(64) for _ in range(3)]
    known = list(dict.fromkeys(known))  # distinct, a few keys no line makes
    column = {key: c for c, key in enumerate(known)}
    item_ptr = np.cumsum([0] + [len(items) for items in lines]).astype(np.int32)
    items = np.array([item for line in lines for item in line], dtype=np.int32)
    kernel_lines = kernel.ReadingLines(
        len(value_hashes), read_hashes, np.array(seeds, dtype=np.uint64), item_ptr, items, _table(known)
    )
    indptr, indices = kernel.reading_rows(kernel_lines, value_hashes)
    expected_ptr, expected = [0], []
    for t in range(num_tokens):
        for k in range(num_values):
            found = [
                column.get(_keys(value_hashes, read_hashes, seed, line, t, k), -1) for seed, line in zip(seeds, lines)
            ]
            expected += sorted(c for c in found if c >= 0)
            expected_ptr.append(len(expected))
    assert indptr.tolist() == expected_ptr
    assert indices.tolist() == expected


def test_reading_lines_that_do_not_fit_their_hashes_are_refused_before_the_kernel():
    read_hashes, seeds, slots = np.zeros((1, 2), dtype=np.uint64), np.zeros(1, dtype=np.uint64), _table([5])
    for item_ptr, items in [([0, 1], [3]), ([0, 1], [-1]), ([0, 2], [0]), ([1, 1], [0])]:
        with pytest.raises(ShapeError, match="reading_rows"):
            kernel.ReadingLines(
                2, read_hashes, seeds, np.array(item_ptr, dtype=np.int32), np.array(items, dtype=np.int32), slots
            )
    lines = kernel.ReadingLines(
        2, read_hashes, seeds, np.array([0, 1], dtype=np.int32), np.array([2], dtype=np.int32), slots
    )
    for value_hashes in (
        np.zeros((1, 3), dtype=np.uint64),
        np.zeros((2, 3), dtype=np.int64),
        np.zeros(3, dtype=np.uint64),
    ):
        with pytest.raises(ShapeError, match="reading_rows"):
            kernel.reading_rows(lines, value_hashes)


TEMPLATE = "bias\nword[0]\npos[0]\npos[0]|word[-1]\nword[+1]|pos[0]\nlower(pos[0])|suffix2(word[0])\n"
WORDS = st.lists(st.sampled_from(["the", "cat", "a", "Dog", "ran", "."]), min_size=1, max_size=6)


@oracle_settings(60)
@given(
    sentences=st.lists(WORDS, min_size=1, max_size=5),
    values=st.lists(st.sampled_from(["DT", "NN", "dt"]), min_size=1, max_size=3),
)
def test_a_few_tokens_read_the_rows_a_batch_reads(sentences, values):
    """One kernel call on every token (a few tokens) and keys per distinct context (a
    batch) give the same rows, entry for entry."""
    train = [Sentence({"word": ["the", "cat", "ran", "."], "pos": ["DT", "NN", "VB", "."]})]
    extractor = FeatureExtractor(TEMPLATE).fit(
        train + [Sentence({"word": s, "pos": ["DT"] * len(s)}) for s in sentences]
    )
    corpus = [Sentence({"word": words}) for words in sentences]
    few = extractor.transform_reading_rows(corpus, "pos", values)[1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dictionary, "TOKENWISE_READING", 0)
        batch = extractor.transform_reading_rows(corpus, "pos", values)[1]
    assert few.indptr.tolist() == batch.indptr.tolist()
    assert few.indices.tolist() == batch.indices.tolist()
