"""The potentials of a model's last small batch, kept for the next call on the same
sentences (fstcrf.model.recent): the same numbers as made afresh, never a changed
sentence's or changed weights'."""

from __future__ import annotations

import copy

import pytest

from fstcrf.corpus.conll import read_conll
from fstcrf.model import ChainCRF
from fstcrf.model.recent import KEPT_TOKENS, recent_potentials


@pytest.fixture(scope="module")
def chunker(demo_chunker):
    return ChainCRF.load(demo_chunker)


@pytest.fixture(scope="module")
def sentences():
    from conftest import DEMO_TRAIN

    return read_conll(DEMO_TRAIN, ("word", "pos", "chunk"))[:5].sentences


def _same(a, b) -> bool:
    return a.emissions.tobytes() == b.emissions.tobytes() and a.offsets.tolist() == b.offsets.tolist()


def test_a_second_call_on_equal_sentences_takes_the_first_call_s_potentials(chunker, sentences):
    first = recent_potentials(chunker, sentences[:1])
    copy = [sentences[0].with_columns({})]  # equal, another object
    assert recent_potentials(chunker, copy) is first
    assert _same(first, chunker.decoding_potentials(sentences[:1])[1])


def test_a_sentence_changed_in_place_or_another_one_gets_its_own_potentials(chunker, sentences):
    sentence = sentences[1].with_columns({})
    kept = recent_potentials(chunker, [sentence])
    sentence["word"][0] = "Elsewhere"
    changed = recent_potentials(chunker, [sentence])
    assert changed is not kept and _same(changed, chunker.decoding_potentials([sentence])[1])
    other = recent_potentials(chunker, sentences[2:3])
    assert _same(other, chunker.decoding_potentials(sentences[2:3])[1])


def test_weights_changed_in_place_get_new_potentials(chunker, sentences):
    model = copy.copy(chunker)
    model.weights_ = chunker.weights_.copy()  # writable, as those of a model being trained
    before = recent_potentials(model, sentences[3:4])
    model.weights_ *= 2.0
    after = recent_potentials(model, sentences[3:4])
    assert _same(after, model.decoding_potentials(sentences[3:4])[1]) and not _same(after, before)


def test_a_large_batch_is_not_kept(chunker, sentences):
    many = sentences * (KEPT_TOKENS // sum(map(len, sentences)) + 1)
    assert recent_potentials(chunker, many) is not recent_potentials(chunker, many)
