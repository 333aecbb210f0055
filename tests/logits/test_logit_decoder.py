"""LogitDecoder: its loss's gradient against finite differences, and fits that
raise the dev log-likelihood and undo overconfident logits."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.errors import LabelError, ShapeError
from fstcrf.logits import LogitDecoder, decode_logits

from strategies import oracle_settings

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def dev_set(seed: int, sentences: int = 30, length: int = 8):
    """Gold iob2 labels and noisy logits of them."""
    rng = np.random.default_rng(seed)
    gold = decode_logits(rng.normal(scale=3, size=(sentences, length, 5)), LABELS, scheme="iob2").labels
    index = np.array([[LABELS.index(label) for label in sentence] for sentence in gold])
    logits = rng.normal(scale=1.5, size=(sentences, length, 5))
    logits[np.arange(sentences)[:, None], np.arange(length)[None, :], index] += 2.0
    return logits, gold


@oracle_settings(25)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["iob1", "iob2", "bioes", None]))
def test_the_gradient_equals_finite_differences(seed, scheme):
    rng = np.random.default_rng(seed)
    labels = ["O", "B-X", "I-X", "E-X", "S-X"] if scheme == "bioes" else ["O", "B-X", "I-X", "B-Y", "I-Y"]
    decoder = LogitDecoder(labels, scheme=scheme, l2=0.1)
    gold = decode_logits(rng.normal(scale=3, size=(4, 5, 5)), labels, scheme=scheme or "iob1").labels
    data = decoder.labelled(rng.normal(scale=2, size=(4, 5, 5)), gold)
    theta = rng.normal(size=len(decoder.parameters()))
    theta[0] = rng.uniform(0.3, 2.0)
    value, gradient = decoder.loss(theta, data)
    step = 1e-6
    for i in range(len(theta)):
        shift = np.zeros_like(theta)
        shift[i] = step
        numeric = (decoder.loss(theta + shift, data)[0] - decoder.loss(theta - shift, data)[0]) / (2 * step)
        assert gradient[i] == pytest.approx(numeric, abs=1e-6), (i, decoder.pairs)
    assert np.isfinite(value)


def test_the_fit_raises_the_dev_likelihood():
    logits, gold = dev_set(0)
    logits += np.array([0.0, 1.5, 0.0, 1.5, 0.0])  # the model over-predicts entity starts
    decoder = LogitDecoder(LABELS, scheme="iob2")
    before = decoder.log_likelihood(logits, gold)
    assert decoder.fit(logits, gold) is decoder
    assert decoder.log_likelihood_ == pytest.approx(decoder.log_likelihood(logits, gold))
    assert decoder.log_likelihood_ > before + 1.0
    assert decoder.scale_ > 0 and decoder.n_iter_ > 0
    assert set(decoder.start_bias_) == set(decoder.end_bias_) == {"B", "I", "O"}
    assert ("O", "I") not in decoder.transition_bias_  # iob2 has no such edge
    decoded = decoder.decode(logits[:3], lengths=[8, 5, 1])
    assert [len(sentence) for sentence in decoded.labels] == [8, 5, 1]


def test_the_fitted_scale_undoes_overconfident_logits():
    """The CRF of scale s over 3 z is the CRF of scale 3 s over z: the optimum scale
    of logits three times too confident is a third, and the biases are the same."""
    logits, gold = dev_set(4)
    plain = LogitDecoder(LABELS, scheme="iob2").fit(logits, gold)
    confident = LogitDecoder(LABELS, scheme="iob2").fit(3 * logits, gold)
    assert confident.scale_ == pytest.approx(plain.scale_ / 3, rel=1e-3)
    for pair, bias in plain.transition_bias_.items():
        assert confident.transition_bias_[pair] == pytest.approx(bias, abs=1e-3)


def test_an_unfitted_decoder_decodes_as_decode_logits():
    logits, _ = dev_set(1)
    assert LogitDecoder(LABELS, scheme="iob2").decode(logits).labels == decode_logits(logits, LABELS, "iob2").labels


def test_one_sentence_per_call_decodes_as_the_batch_bit_for_bit():
    logits, gold = dev_set(3, sentences=8)
    decoder = LogitDecoder(LABELS, scheme="iob2", max_iter=5).fit(logits, gold)
    lengths = [8, 5, 1, 3]
    for scale in (decoder.scale_, 1.0):  # the kernel's scores are made again when a parameter changes
        decoder.scale_, decoder.start_bias_["B"] = scale, decoder.start_bias_["B"] + 0.5
        batch = decoder.decode(logits[:4], lengths=lengths)
        offsets = batch.potentials.offsets
        for b, length in enumerate(lengths):
            alone = decoder.decode(logits[b, :length])
            assert alone.labels == [batch.labels[b]]
            assert alone.scores.tobytes() == batch.scores[b : b + 1].tobytes()
            assert np.array_equal(alone.paths, batch.paths[offsets[b] : offsets[b + 1]])
            rows = slice(offsets[b], offsets[b + 1])
            assert alone.potentials.emissions.tobytes() == batch.potentials.emissions[rows].tobytes()
            for scores in ("transitions", "start", "final"):
                assert getattr(alone.potentials, scores).tobytes() == getattr(batch.potentials, scores).tobytes()


def test_bad_dev_labels_are_named():
    logits, gold = dev_set(2, sentences=3, length=4)
    decoder = LogitDecoder(LABELS, scheme="iob2")
    with pytest.raises(LabelError, match="'B-ORG' of sentence 1, token 2"):
        decoder.fit(logits, [gold[0], gold[1][:2] + ["B-ORG"] + gold[1][3:], gold[2]])
    with pytest.raises(LabelError, match="sentence 0 are not a sequence"):
        decoder.fit(logits, [["O", "I-PER", "O", "O"], gold[1], gold[2]])
    with pytest.raises(ShapeError, match="sentence 2 has 4 tokens"):
        decoder.fit(logits, [gold[0], gold[1], gold[2][:3]])
    with pytest.raises(ShapeError, match="one label sequence per sentence"):
        decoder.fit(logits, gold[:2])
