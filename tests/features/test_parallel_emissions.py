"""Emission scores computed in several threads (runs of whole sentences) against one
thread: the same numbers, bit for bit, for any cut of the sentences and any weights."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fstcrf.features.encoding as encoding
from fstcrf.model.chain import ChainCRF

from corpora import TEMPLATE, chunk_corpus
from strategies import oracle_settings


@pytest.fixture(scope="module")
def model():
    return ChainCRF(TEMPLATE, max_iter=5).fit(chunk_corpus(1, 30))


@pytest.fixture(scope="module")
def encoded(model):
    return model.encode(chunk_corpus(2, 25).sentences)


@oracle_settings(60)
@given(data=st.data())
def test_emissions_in_threads_are_those_of_one_thread(model, encoded, data):
    first = data.draw(st.integers(0, encoded.num_sequences - 1))
    last = data.draw(st.integers(first + 1, encoded.num_sequences))
    threads = data.draw(st.integers(2, 5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    features = model.scorer().features
    theta = rng.normal(size=features.num_features)
    alone = features.emissions(encoded.tokens(first, last), theta, 0.5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encoding, "PARALLEL_EMISSION_TOKENS", 1)
        parallel = features.sentence_emissions(encoded, first, last, theta, 0.5, threads)
    np.testing.assert_array_equal(parallel, alone)


def test_a_model_decodes_the_same_on_one_thread_and_on_two(model):
    test = chunk_corpus(3, 40)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encoding, "PARALLEL_EMISSION_TOKENS", 1)
        model.threads = 2
        two = model.predict_marginals(test)
        model.threads = 1
        one = model.predict_marginals(test)
    for got, expected in zip(two, one):
        np.testing.assert_array_equal(got, expected)
