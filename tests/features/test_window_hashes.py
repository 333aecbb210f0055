"""The hashes of single values at an offset (``fh_window_hashes``), against the token
table's neighbours and the boundary names hashed in Python."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.engine import kernel
from fstcrf.features.hashing import utf8_hashes
from fstcrf.features.item_lists import ObservationHashes, WindowPlan
from fstcrf.features.template import Observation, escape_value
from fstcrf.features.token_table import TokenTable
from tests.strategies import oracle_settings

WORDS = st.lists(st.sampled_from(["a", "b", "_x", "c|d", "__BOS-1__", "é"]), min_size=1, max_size=7)


def _reference(table: TokenTable, hashes: np.ndarray, offset: int, salt: int) -> list[int]:
    """Each token's neighbour at ``offset``: its hash, or the hash of its boundary name."""
    rows, names = table.neighbours(offset)
    known = np.concatenate([hashes, utf8_hashes(names, salt)])
    return known[rows].tolist()


@oracle_settings(150)
@given(
    sentences=st.lists(st.integers(1, 8), min_size=1, max_size=5),
    offsets=st.lists(st.integers(-12, 12), min_size=1, max_size=6),
    salt=st.integers(0, 5),
)
def test_window_hashes_are_each_neighbours_or_its_boundary_names(sentences, offsets, salt):
    table = TokenTable([Sentence({"word": ["w"] * length}) for length in sentences])
    sources = np.random.default_rng(len(offsets)).integers(0, 2**63, size=(2, table.num_tokens)).astype(np.uint64)
    source = np.arange(len(offsets), dtype=np.int32) % 2
    out = np.empty((len(offsets), table.num_tokens), dtype=np.uint64)
    kernel.window_hashes(table.offsets, sources, source, np.array(offsets, dtype=np.int64), salt, out)
    for j, offset in enumerate(offsets):
        assert out[j].tolist() == _reference(table, sources[source[j]], offset, salt)


@oracle_settings(100)
@given(sentences=st.lists(WORDS, min_size=1, max_size=4), offset=st.integers(-3, 3), salt=st.integers(0, 3))
def test_an_observations_hashes_are_those_of_its_escaped_values_and_boundaries(sentences, offset, salt):
    table = TokenTable([Sentence({"word": words}) for words in sentences])
    observation = Observation("word", offset, "lower")
    words = [word for sentence in sentences for word in sentence]
    own = utf8_hashes([escape_value(word.lower()) for word in words], salt)
    found = ObservationHashes(table, salt).window(WindowPlan([observation]))[0]
    assert found.tolist() == _reference(table, own, offset, salt)
