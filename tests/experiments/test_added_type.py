"""The added-type experiment's code path on a small slice of synthetic NER data."""

from needs_pynini import pynini  # noqa: F401  (skips the module without pynini: the joint grammar is compiled)

import json

from fstcrf.corpus.conll import Corpus, Sentence
from fstcrf.experiments import added_type


def corpus(sentences: int) -> Corpus:
    words = ["Paris", "is", "in", "France", "says", "John", "of", "Euro", "Cup", "fans"]
    tags = ["B-LOC", "O", "O", "B-LOC", "O", "B-PER", "O", "B-MISC", "I-MISC", "O"]
    rows = []
    for i in range(sentences):
        shift = i % len(words)
        order = words[shift:] + words[:shift]
        labels = tags[shift:] + tags[:shift]
        labels = [
            "B-" + label[2:] if label.startswith("I-") and (j == 0 or labels[j - 1] == "O") else label
            for j, label in enumerate(labels)
        ]
        rows.append(Sentence({"word": order, "pos": ["NN"] * len(order), "chunk": ["O"] * len(order), "ner": labels}))
    return Corpus(("word", "pos", "chunk", "ner"), rows)


def test_naive_merge_keeps_the_old_entity_where_they_overlap():
    old = [["B-PER", "I-PER", "O", "O"]]
    new = [["O", "B-MISC", "I-MISC", "B-MISC"]]
    assert added_type.naive_merge(old, new) == [["B-PER", "I-PER", "O", "B-MISC"]]


def test_the_experiment_runs_on_a_small_slice(tmp_path):
    data = {"eng.train": corpus(40), "eng.testb": corpus(12)}
    messages = []
    result = added_type.run(data, threads=1, max_iter=5, log=messages.append)
    assert result["decoder"] == "factorised" and len(messages) == 3
    assert set(result["f1"]) == set(added_type.SYSTEMS)
    assert 0 <= result["mcnemar_composition_vs_merge"]["p_value"] <= 1
    table = added_type.markdown(result)
    assert "| composition |" in table and "McNemar" in table
    json.dumps(result)
