"""The spaCy pipeline experiment on a slice of CoNLL-2000: its figures recomputed from
the pipeline it saves (which loads with the chunker's own copy of the model)."""

from needs_spacy import spacy

import json

import pytest
from spacy.tokens import Doc

from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.experiments import spacy_pipeline
from fstcrf.model import load_model
from fstcrf.spacy.component import MODEL_FILE


@pytest.mark.slow
def test_spacy_pipeline_experiment_on_a_slice(data_dir, tmp_path, capsys):
    saved, out = tmp_path / "pipeline", tmp_path / "result.json"
    arguments = ["--data", str(data_dir), "--epochs", "1", "--max-iter", "5", "--train-sentences", "150"]
    arguments += ["--test-sentences", "60", "--save", str(saved), "--out", str(out)]
    assert spacy_pipeline.main(arguments) == 0
    assert "chunk F1 on spaCy's tags (the pipeline)" in capsys.readouterr().out
    result = json.loads(out.read_text("utf-8"))
    assert (result["train_sentences"], result["test_sentences"], result["chunker_iterations"]) == (150, 60, 5)

    test = read_conll(data_dir / "conll2000" / "test.txt", columns="word,pos,chunk").sentences[:60]
    nlp = spacy.load(saved)
    assert nlp.pipe_names == ["tagger", "fstcrf"]
    docs = list(nlp.pipe(Doc(nlp.vocab, words=s["word"]) for s in test))
    tags = [[token.tag_ for token in doc] for doc in docs]
    correct = sum(a == b for found, s in zip(tags, test) for a, b in zip(found, s["pos"]))
    assert result["spacy_tagger_accuracy"] == pytest.approx(100 * correct / result["test_tokens"])
    chunker = load_model(saved / "fstcrf" / MODEL_FILE)
    on_spacy_tags = chunker.predict([s.with_column("pos", t) for s, t in zip(test, tags)])
    gold = [s["chunk"] for s in test]
    assert result["pipeline_chunk_f1"] == pytest.approx(score_chunks(gold, on_spacy_tags).f1)
    assert result["file_pos_chunk_f1"] == pytest.approx(score_chunks(gold, chunker.predict(test)).f1)
    assert 0 < result["pipeline_chunk_f1"] < result["file_pos_chunk_f1"]
