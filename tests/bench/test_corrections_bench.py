"""fstcrf bench corrections: the simulated person's rules, both arms on the demo corpus
(each sentence ends right; pasting fixes exactly what it names), and the table."""

from __future__ import annotations

from fstcrf.bench.corrections import (
    Correction,
    Sentence,
    constrained,
    format_corrections,
    next_correction,
    pasted,
    simulate,
)
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.spans import path_chunks
from fstcrf.model import ChainCRF


def test_the_person_fixes_the_first_error_or_the_least_confident_wrong_chunk():
    gold = {(0, 1, "NP"), (2, 2, "VP"), (5, 6, "NP")}
    output = {(0, 0, "NP"), (1, 1, "NP"), (2, 2, "VP"), (3, 3, "PP"), (5, 6, "NP")}
    assert next_correction(output, gold, "left-to-right") == Correction(True, (0, 1, "NP"))
    confidence = {(0, 0, "NP"): 0.9, (1, 1, "NP"): 0.8, (2, 2, "VP"): 0.5, (3, 3, "PP"): 0.6, (5, 6, "NP"): 0.99}
    assert next_correction(output, gold, "least-confident", confidence) == Correction(False, (3, 3, "PP"))
    assert next_correction(gold, gold, "left-to-right") is None
    # a missed chunk no wrong chunk overlaps is marked, after a wrong chunk that begins at the same token
    assert next_correction({(2, 2, "VP")}, {(0, 1, "NP"), (2, 2, "VP")}, "left-to-right").span == (0, 1, "NP")
    assert next_correction({(0, 0, "ADVP")}, {(0, 1, "NP")}, "left-to-right") == Correction(True, (0, 1, "NP"))
    # pasting: marking replaces every overlapping chunk, so the split chunk above costs one correction
    assert pasted(output, gold, "left-to-right", confidence) == 2


def test_what_the_person_read_is_kept_and_removed_chunks_are_outside():
    state = Sentence()
    gold = {(0, 1, "NP"), (3, 3, "VP")}
    state.note_read({(0, 1, "NP"), (4, 4, "PP")}, gold, "left-to-right", {})
    assert state.read == {(0, 1, "NP")} and state.outside == {2}
    state.corrections.append(Correction(False, (4, 4, "PP")))
    constraints = state.constraints("outside")
    assert [tuple(span[:3]) for span in constraints.spans] == [(0, 1, "NP")]
    assert constraints.fixed == {2: "O", 4: "O"}
    assert state.constraints("forbidden").forbidden[0][:3] == (4, 4, "PP")


def test_both_arms_end_every_sentence_right_on_the_demo_corpus():
    train, test = read_conll(DATA_DIR / "demo_train.txt"), read_conll(DATA_DIR / "demo_test.txt")
    model = ChainCRF(template="chunking-extended", max_iter=3, threads=1).fit(train, target="chunk")
    sentences = test.sentences[:60]
    gold = [set(path_chunks(sentence["chunk"])) for sentence in sentences]
    counts = constrained(model, sentences, gold, "left-to-right", "outside", True)
    first = [set(path_chunks(labels)) for labels in model.predict(sentences)]
    assert [count == 0 for count in counts] == [chunks == truth for chunks, truth in zip(first, gold)]
    result = simulate(model, test, "chunk", "demo")
    assert result["sentences"] == len(test.sentences) and result["sentences wrong"] > 0
    for arm in result["arms"]:
        assert arm["pasting"] > 0 and arm["constrained"] > 0
    table = format_corrections([result])
    assert "| demo | left-to-right | tokens O | yes |" in table and "| demo | least-confident |" in table
