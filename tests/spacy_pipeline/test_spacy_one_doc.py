"""On real CoNLL-2003 sentences, the component decoding one Doc per call (``nlp(doc)``)
gives the entities and probabilities of ``nlp.pipe`` over all of them, and of the
model's own ``predict_spans`` on the whole batch, bit for bit."""

from needs_spacy import spacy

import pytest
from spacy.tokens import Doc

from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.model import ChainCRF
from fstcrf.spacy.factory import FACTORY
from fstcrf.spacy.writing import PROBABILITY

TRAIN_SENTENCES = 1000
TEST_SENTENCES = 600


def entities_of(doc) -> list[tuple[int, int, str, float]]:
    return [(span.start, span.end - 1, span.label_, span._.get(PROBABILITY)) for span in doc.ents]


@pytest.mark.slow
def test_one_doc_per_call_is_the_batch_bit_for_bit(data_file, tmp_path):
    train = read_conll(data_file("conll2003/eng.train"), columns="word,pos,chunk,ner")
    test = read_conll(data_file("conll2003/eng.testb"), columns="word,pos,chunk,ner")
    words = [Sentence({"word": s["word"], "ner": s["ner"]}) for s in train.sentences[:TRAIN_SENTENCES] if len(s)]
    model = ChainCRF(template="words-rich", max_iter=10).fit(words, target="ner")
    path = tmp_path / "ner-words.model"
    model.save(path)
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"model": str(path), "reads": {"word": "text"}, "probabilities": True})
    sentences = [Sentence({"word": s["word"]}) for s in test.sentences[:TEST_SENTENCES] if len(s)]

    def docs():  # the corpus's tokens as they are (spaCy's tokenizer splits a few otherwise)
        return [Doc(nlp.vocab, words=sentence["word"]) for sentence in sentences]

    batch = [entities_of(doc) for doc in nlp.pipe(docs(), batch_size=1000)]
    one_at_a_time = [entities_of(nlp(doc)) for doc in docs()]
    expected = [[(e.first, e.last, e.type, e.probability) for e in found] for found in model.predict_spans(sentences)]
    assert sum(map(len, expected)) > 300
    assert one_at_a_time == batch == expected
