"""The scores of a model that reads a lower tagger's labels (``reads=``) under every
lower label at once: the features of a batch extracted once for all K lower labels,
the emissions of any block of its sentences from them, and their gradient, as joint
decoding and joint training use them (:mod:`fstcrf.model.joint_features`)."""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.features.encoding import EncodedSentences, FactoredFeatures, ReadingFeatures
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.sparse_rows import met_columns

#: A batch's reading rows keep the model's feature dictionary as it is when their entries
#: are fewer than its predicates over this (a sentence or a few).
WHOLE_DICTIONARY_SHARE = 16

#: Per feature dictionary, its reading dictionary of the latest predicates array the
#: extractor gave.
_dictionaries: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def reading_features(
    extractor: FeatureExtractor,
    reads: str,
    model_features: FactoredFeatures,
    sentences: list[Sentence],
    lower_labels: Sequence[str],
) -> ReadingFeatures:
    """The features of a fitted model's ``reading_emissions(sentences, lower_labels)``
    (its extractor, the column it reads, its feature dictionary), extracted once for
    :func:`reading_block` (see :class:`ReadingFeatures`): a batch's reading rows over
    the predicates it meets and their own dictionary, a few sentences' (fewer entries
    than the predicates over WHOLE_DICTIONARY_SHARE) over the model's dictionary as it
    is (narrowing them would cost more than it saves; the sums are the same)."""
    base, by_value = extractor.transform_reading_rows(sentences, reads, lower_labels)
    lengths = np.array([len(sentence) for sentence in sentences], dtype=np.int64)
    dictionary, features = model_features, None
    if by_value.nnz * WHOLE_DICTIONARY_SHARE >= by_value.shape[1]:
        by_value, predicates = met_columns(by_value)
        dictionary, features = reading_dictionary(model_features, predicates)
    return ReadingFeatures(
        EncodedSentences(base, lengths),
        EncodedSentences(by_value, lengths * len(lower_labels)),
        dictionary,
        features,
        len(lower_labels),
    )


def reading_dictionary(model_features: FactoredFeatures, predicates: np.ndarray) -> tuple[FactoredFeatures, np.ndarray]:
    """The feature dictionary of the reading predicates int [M], in that order (a
    token's rows then read neighbouring weights; every sum keeps its terms and their
    order), and the index int [F_M] of each of its features in the model's weights;
    kept for the latest ``predicates`` array the extractor gave."""
    kept = _dictionaries.get(model_features)
    if kept is not None and kept[0] is predicates:
        return kept[1], kept[2]
    ptr = model_features.ptr
    counts = ptr[predicates + 1] - ptr[predicates]
    reading_ptr = np.zeros(len(predicates) + 1, dtype=np.int64)
    np.cumsum(counts, out=reading_ptr[1:])
    features = np.repeat(ptr[predicates] - reading_ptr[:-1], counts) + np.arange(reading_ptr[-1])
    dictionary = FactoredFeatures(
        model_features.state_label, model_features.num_labels, reading_ptr, model_features.output[features]
    )
    _dictionaries[model_features] = (predicates, dictionary, features)
    return dictionary, features


def reading_block(
    model_features: FactoredFeatures, features: ReadingFeatures, first: int, last: int, weights: np.ndarray
) -> np.ndarray:
    """float [n, K, S]: the reading emissions of sentences first..last-1 (n tokens)
    from their :func:`reading_features`, under a model's feature dictionary and
    ``weights`` [F + T]."""
    shared = model_features.emissions(features.common.tokens(first, last), weights[: model_features.num_features])
    reading_weights = weights[: model_features.num_features] if features.whole else weights[features.feature_index]
    scores = features.dictionary.emissions(features.by_value.tokens(first, last), reading_weights).reshape(
        len(shared), features.num_values, -1
    )
    scores += shared[:, None, :]  # [n, K, S]
    return scores


def add_reading_counts(
    model_features: FactoredFeatures,
    features: ReadingFeatures,
    first: int,
    last: int,
    pair_marginals: np.ndarray,
    out: np.ndarray,
) -> None:
    """Add to ``out`` [F + T] the expected feature counts of sentences first..last-1
    (n tokens) under pair_marginals float [n, K, S], the probability that the lower
    label is the k-th value and the state s (the gradient of the scores of
    :func:`reading_block` in the weights, transitions aside)."""
    F = model_features.num_features
    model_features.accumulate(features.common.tokens(first, last), pair_marginals.sum(axis=1), out[:F])
    reading = np.zeros(features.dictionary.num_features)
    features.dictionary.accumulate(
        features.by_value.tokens(first, last), pair_marginals.reshape(-1, pair_marginals.shape[2]), reading
    )
    if features.whole:
        out[:F] += reading
    else:
        out[features.feature_index] += reading  # each reading feature is a distinct weight
