"""One sentence per call is the batch path made cheap, not another path: on every
CoNLL-2000 test sentence, a chunker's predicate rows, scores, labels, entity
probabilities, marginals and k-best probabilities one sentence per call are those of
one call on the whole test set, bit for bit; so are an entity tagger's MBR labels at a
fixed threshold and their entities' probabilities on CoNLL-2003 test sentences."""

import numpy as np
import pytest

from fstcrf.corpus.conll import read_conll
from fstcrf.features.defaults import default_template
from fstcrf.engine.spans import path_chunks
from fstcrf.model.chain import ChainCRF


def _bits(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).tobytes()


@pytest.mark.slow
def test_one_sentence_per_call_gives_the_batch_results_bit_for_bit(data_file):
    train = read_conll(data_file("conll2000/train.txt"))
    test = read_conll(data_file("conll2000/test.txt")).sentences
    model = ChainCRF(template=default_template("chunk", train.column_names), max_iter=15).fit(train)

    encoded, pot = model.encode(test), model.potentials(test)
    labels, spans = model.predict(test), model.predict_spans(test)
    marginals = model.predict_marginals(test)
    _, kbest = model.kbest(test, 3)
    for b, sentence in enumerate(test):
        rows = slice(int(encoded.offsets[b]), int(encoded.offsets[b + 1]))
        one = model.encode([sentence])
        assert _bits(one.indptr) == _bits(encoded.indptr[rows.start : rows.stop + 1] - encoded.indptr[rows.start])
        entries = slice(int(encoded.indptr[rows.start]), int(encoded.indptr[rows.stop]))
        assert _bits(one.indices) == _bits(encoded.indices[entries])
        assert _bits(model.potentials([sentence]).emissions) == _bits(pot.emissions[rows])
        assert model.predict([sentence]) == [labels[b]]
        assert model.predict_spans([sentence]) == [spans[b]]
        assert _bits(model.predict_marginals([sentence])[0]) == _bits(marginals[b])
        assert _bits(model.kbest([sentence], 3)[1]) == _bits(kbest[b : b + 1])


@pytest.mark.slow
def test_an_entity_tagger_s_mbr_labels_and_entity_probabilities_one_sentence_per_call_are_the_batch_s(data_file):
    columns = "word,pos,chunk,ner"
    train = read_conll(data_file("conll2003/eng.train"), columns=columns)
    test = [sentence for sentence in read_conll(data_file("conll2003/eng.testb"), columns=columns) if len(sentence)]
    train = train[:2000]
    model = ChainCRF(template=default_template("ner", train.column_names), max_iter=10).fit(train, target="ner")
    test = test[:1000]
    # a fixed threshold decodes each sentence alone (the search's threshold is the batch's)
    labels = model.predict_mbr(test, threshold=0.3, temperature=1.3)
    spans = [path_chunks(sentence) for sentence in labels]
    assert sum(map(len, spans)) > 500  # entities to compare
    probabilities = model.span_probabilities(test, spans, temperature=1.3)
    for b, sentence in enumerate(test):
        assert model.predict_mbr([sentence], threshold=0.3, temperature=1.3) == [labels[b]]
        assert _bits(model.span_probabilities([sentence], [spans[b]], temperature=1.3)[0]) == _bits(probabilities[b])
