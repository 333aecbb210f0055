"""The kernel's feature loops refuse arrays of the wrong shape with ShapeError instead
of reading or writing past them."""

import numpy as np
import pytest

from fstcrf.errors import ShapeError
from fstcrf.model.chain import ChainCRF

from corpora import TEMPLATE, chunk_corpus


@pytest.fixture(scope="module")
def setting():
    model = ChainCRF(TEMPLATE, max_iter=3).fit(chunk_corpus(1, 20))
    encoded = model.encode(chunk_corpus(2, 5).sentences)
    features = model.scorer().features
    return features.kernel_dictionary, encoded.tokens(0, encoded.num_sequences), features


def test_emissions_refuse_an_output_of_another_shape(setting):
    dictionary, tokens, features = setting
    theta = np.zeros(features.num_features)
    for shape in [(tokens.num_tokens - 1, features.num_states), (tokens.num_tokens, features.num_states + 1)]:
        with pytest.raises(ShapeError, match="emit has shape"):
            dictionary.emissions(tokens, theta, 1.0, np.empty(shape))


def test_expected_counts_refuse_marginals_or_counts_of_another_shape(setting):
    dictionary, tokens, features = setting
    S, F, n = features.num_states, features.num_features, tokens.num_tokens
    with pytest.raises(ShapeError, match="accumulate"):
        dictionary.accumulate(tokens, np.zeros((n - 1, S)), 1.0, np.zeros(F))
    with pytest.raises(ShapeError, match="accumulate"):
        dictionary.accumulate(tokens, np.zeros((n, S)), 1.0, np.zeros(F - 1))
    counts = np.zeros(F)
    dictionary.accumulate(tokens, np.full((n, S), 1.0 / S), 1.0, counts)
    assert counts.sum() > 0


def test_path_counts_refuse_paths_or_counts_of_another_shape(setting):
    dictionary, tokens, features = setting
    F, n = features.num_features, tokens.num_tokens
    path = np.zeros(n, dtype=np.int32)
    with pytest.raises(ShapeError, match="add_paths"):
        dictionary.add_paths(tokens, path[:-1], None, 1.0, np.zeros(F))
    with pytest.raises(ShapeError, match="add_paths"):
        dictionary.add_paths(tokens, path, path[:-1], 1.0, np.zeros(F))
    with pytest.raises(ShapeError, match="add_paths"):
        dictionary.add_paths(tokens, path, None, 1.0, np.zeros(F + 1))
