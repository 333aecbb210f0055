"""On the CoNLL-2000 test set, the component's chunks are those of ``fstcrf tag``."""

from needs_spacy import spacy

import pytest
from spacy.tokens import Doc

from fstcrf import cli
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.schemes import read_chunks
from fstcrf.spacy.factory import FACTORY

TRAIN_SENTENCES = 1000


@pytest.mark.slow
def test_chunks_are_those_of_fstcrf_tag(data_file, tmp_path):
    train, test = data_file("conll2000/train.txt"), data_file("conll2000/test.txt")
    subset = tmp_path / "train.txt"
    blocks = train.read_text("utf-8").split("\n\n")
    subset.write_text("\n\n".join(blocks[:TRAIN_SENTENCES]) + "\n\n", "utf-8")
    model, tagged = tmp_path / "chunker.model", tmp_path / "tagged.txt"
    assert cli.main(["-q", "train", str(subset), "--max-iter", "30", "-o", str(model)]) == 0
    assert cli.main(["-q", "tag", str(model), str(test), "-o", str(tagged)]) == 0
    expected = [
        read_chunks(tags) for tags in read_conll(tagged, columns="word,pos,chunk,predicted").column("predicted")
    ]

    corpus = read_conll(test)
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"model": str(model)})
    docs = nlp.pipe(Doc(nlp.vocab, words=s["word"], tags=s["pos"]) for s in corpus)
    found = [[(span.start, span.end - 1, span.label_) for span in doc.spans["chunks"]] for doc in docs]
    assert len(found) == len(corpus) == 2012
    assert sum(map(len, found)) > 20_000
    assert found == expected
