"""The training entities as a gazetteer (the derived column seen_entity): the marks
against a plain search of every entry, the jackknife, the majority type, a model
that keeps its entities in its file, and the errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.errors import ModelFileError, TemplateError
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.seen_entities import SeenEntities, entities_in, jackknifed
from fstcrf.model.chain import ChainCRF, load_model
from tests.strategies import oracle_settings

WORDS = st.sampled_from(["a", "b", "c", "New", "York", "."])
ENTRIES = st.dictionaries(st.lists(WORDS, min_size=1, max_size=3).map(tuple), st.sampled_from(["LOC", "ORG"]))


def _reference_marks(entries, words):
    """At each unmarked position the longest entry that matches there, found by trying
    every entry."""
    marks, position = ["O"] * len(words), 0
    while position < len(words):
        matching = [e for e in entries if tuple(words[position : position + len(e)]) == e]
        if not matching:
            position += 1
            continue
        best = max(matching, key=len)
        marks[position : position + len(best)] = ["B-" + entries[best]] + ["I-" + entries[best]] * (len(best) - 1)
        position += len(best)
    return marks


@oracle_settings(300)
@given(entries=ENTRIES, sentences=st.lists(st.lists(WORDS, max_size=8), max_size=4))
def test_the_marks_are_the_longest_entries_left_to_right_within_each_sentence(entries, sentences):
    expected = [mark for words in sentences for mark in _reference_marks(entries, words)]
    assert SeenEntities.from_entries(entries).marks(sentences) == expected


def _sentence(words, labels):
    return Sentence({"word": list(words), "ner": list(labels)})


def test_entities_take_their_most_frequent_type_and_any_chunk_scheme():
    sentences = [
        _sentence(["New", "York", "is"], ["B-LOC", "I-LOC", "O"]),
        _sentence(["New", "York", "won"], ["I-ORG", "I-ORG", "O"]),  # IOB1 reads as a chunk too
        _sentence(["in", "New", "York"], ["O", "B-LOC", "I-LOC"]),
    ]
    assert entities_in(sentences[1], "ner") == [(("New", "York"), "ORG")]
    entities = SeenEntities.of([entities_in(s, "ner") for s in sentences])
    assert entities.entries == {("New", "York"): "LOC"}
    assert entities.marks([["to", "New", "York", "."]]) == ["O", "B-LOC", "I-LOC", "O"]
    assert entities.marks([["to", "New"], ["York"]]) == ["O", "O", "O"]  # not across sentences


def test_a_training_sentence_is_marked_only_from_the_other_blocks():
    # 20 sentences, two per block: "Xk" occurs once (never marked), "Both" in every block
    sentences = [_sentence([f"X{k}", "Both"], ["B-PER", "B-ORG"]) for k in range(20)]
    marks, entities = jackknifed(sentences, "ner")
    assert marks == ["O", "B-ORG"] * 20  # in the sentences' order
    assert entities.marks([["X3", "Both"]]) == ["B-PER", "B-ORG"]  # all of them kept for tagging
    # "Y" in sentences 0 and 1 only: the same block, so neither marks the other
    pair = [_sentence(["Y"], ["B-LOC"])] * 2 + [_sentence(["z"], ["O"])] * 18
    assert jackknifed(pair, "ner")[0][:2] == ["O", "O"]


TEMPLATE = "bias\nword[0]\nseen_entity[-1]\nseen_entity[0]\nseen_entity[-1]|seen_entity[0]"


def _corpus():
    rng = np.random.default_rng(0)
    names = [("Ann", "Lee"), ("Bo",), ("Cy", "Di", "Ed")]
    sentences = []
    for _ in range(60):
        words, labels = [], []
        for _ in range(4):
            if rng.random() < 0.4:
                name = names[rng.integers(len(names))]
                words += name
                labels += ["B-PER"] + ["I-PER"] * (len(name) - 1)
            else:
                words.append(str(rng.choice(["saw", "and", "then", "."])))
                labels.append("O")
        sentences.append(_sentence(words, labels))
    return sentences


def test_a_model_keeps_its_training_entities_in_its_file(tmp_path):
    corpus = _corpus()
    model = ChainCRF(TEMPLATE, max_iter=15).fit(corpus, target="ner")
    assert model.extractor_.resources_.entities.entries[("Cy", "Di", "Ed")] == "PER"
    path = tmp_path / "m.model"
    model.save(path)
    loaded = load_model(path)
    unseen = [Sentence({"word": ["then", "Cy", "Di", "Ed", "saw", "Bo"]})]
    assert loaded.predict(unseen) == model.predict(unseen)
    assert loaded.extractor_.resources_.entities.entries == model.extractor_.resources_.entities.entries
    rows = loaded.extractor_.transform_rows(unseen)
    names = [loaded.extractor_.predicate_names_[c] for c in rows.indices[rows.indptr[2] : rows.indptr[3]]]
    assert "seen_entity[0]=I-PER" in names


def test_bad_uses_and_corrupt_files_raise_typed_errors():
    with pytest.raises(TemplateError, match="target"):
        FeatureExtractor(TEMPLATE).fit(_corpus())  # no labels' column named
    with pytest.raises(TemplateError, match="lacks"):
        FeatureExtractor(TEMPLATE, target="chunk").fit(_corpus())
    with pytest.raises(TemplateError, match="word"):
        FeatureExtractor(TEMPLATE, target="ner").fit([Sentence({"token": ["a"], "ner": ["O"]})])
    for bad in ([["only one"]], [[1, "PER"]], {"a": "PER"}):
        with pytest.raises(ModelFileError):
            SeenEntities.from_payload(bad)


def test_the_rows_of_a_model_reading_lower_labels_hold_the_marks():
    corpus = [s.with_column("pos", ["N"] * len(s)) for s in _corpus()]
    extractor = FeatureExtractor(TEMPLATE + "\npos[0]|word[0]", target="ner").fit(corpus)
    unseen = [Sentence({"word": ["then", "Bo", "saw"]})]  # no pos column: the lower labels are varied
    base, _, _ = extractor.transform_reading(unseen, "pos", ["N"])
    names = {extractor.predicate_names_[c] for c in base.indices[base.indptr[1] : base.indptr[2]]}
    assert "seen_entity[0]=B-PER" in names
