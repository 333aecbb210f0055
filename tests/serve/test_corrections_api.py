"""Corrections through the JSON API (Starlette's test client): a request's constraints
give the answers the models give under the same constraints (a single model's labels,
entity probabilities, marginals, n best and MBR; a composed pipeline's top component;
a two-stage tagger), a sentence they leave no label sequence fails its request alone and the error names
it as the request numbers it, the view's low-confidence threshold is the request's, and the corrected
sentences come back as partial-label training data that ``fstcrf train --init``
continues to learn from: the chunks the person marked become more probable."""

import re
from functools import partial

import needs_serve  # noqa: F401  (skips the module without the extra serve)
import numpy as np
import pytest
from test_api import TEST_SENTENCES, columns_of, serving, tag

from fstcrf.bench.corrections import next_correction
from fstcrf.cli import main
from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.corpus.labels import corrected_labels
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.budget import limits
from fstcrf.engine.constraints import Constraints, Span
from fstcrf.engine.spans import path_chunks
from fstcrf.errors import RequestError
from fstcrf.model.decoders import load_decoder
from fstcrf.serve.answers import answer_batch
from fstcrf.serve.batching import run_batch
from fstcrf.serve.parsing import DecodeOptions, TagRequest
from fstcrf.serve.registry import load_served


def corrections_of(sentences) -> list[Constraints | None]:
    """Constraints of every other sentence from its gold chunks: its first chunk
    required, its last forbidden, a token outside every chunk fixed to O."""
    given: list[Constraints | None] = []
    for b, sentence in enumerate(sentences):
        chunks = path_chunks(sentence["chunk"])
        outside = [t for t, label in enumerate(sentence["chunk"]) if label == "O"]
        if b % 2 or not chunks:
            given.append(None)
            continue
        given.append(
            Constraints(spans=[Span(*chunks[0])], forbidden=[Span(*chunks[-1])], fixed={t: "O" for t in outside[:1]})
        )
    return given


def as_json(constraints: list[Constraints | None]) -> list:
    return [None if c is None else c.to_dict() for c in constraints]


def test_a_single_model_answers_under_the_constraints(demo_chunker):
    model = load_decoder(str(demo_chunker))
    given = corrections_of(TEST_SENTENCES)
    body = {"sentences": [columns_of(s) for s in TEST_SENTENCES], "constraints": as_json(given)}
    with serving({"default": demo_chunker}) as client:
        results = tag(client, {**body, "marginals": True, "nbest": 3})["results"]
        mbr = tag(client, {**body, "decode": "mbr"})["results"]
    labels = model.predict(TEST_SENTENCES, constraints=given)
    assert [result["labels"] for result in results] == labels
    assert labels != model.predict(TEST_SENTENCES)  # the constraints change some labels
    spans = [path_chunks(sentence) for sentence in labels]
    probabilities = model.span_probabilities(TEST_SENTENCES, spans, constraints=given)
    marginals = model.predict_marginals(TEST_SENTENCES, constraints=given)
    ranked, ranked_p = model.kbest(TEST_SENTENCES, 3, constraints=given)
    index = {label: i for i, label in enumerate(model.labels_)}
    for b, result in enumerate(results):
        np.testing.assert_allclose([e["probability"] for e in result["entities"]], probabilities[b], rtol=1e-12)
        expected = [marginals[b][t, index[label]] for t, label in enumerate(labels[b])]
        np.testing.assert_allclose(result["marginals"], expected, rtol=1e-12)
        assert [item["labels"] for item in result["nbest"]] == ranked[b]
        np.testing.assert_allclose([item["probability"] for item in result["nbest"]], ranked_p[b][: len(ranked[b])])
        if given[b] is not None:  # a required chunk is certain
            required = tuple(given[b].spans[0][:3])
            held = [e["probability"] for e in result["entities"] if (e["first"], e["last"], e["type"]) == required]
            assert held == [pytest.approx(1.0, abs=1e-12)]  # to rounding: 1 - 7e-15 under other compiler flags
    assert [result["labels"] for result in mbr] == model.predict_mbr(TEST_SENTENCES, constraints=given)


def test_a_pipeline_keeps_its_top_component_and_a_two_stage_tagger_both_stages_to_them(
    pipeline_folder, two_stage_model
):
    given = [Constraints(spans=[Span(0, 1, "ENT")]), None, Constraints(fixed={0: "O", 1: "O"})]
    sentences = TEST_SENTENCES[: len(given)]
    joint = load_decoder(str(pipeline_folder / "pipeline.model"))
    tagger = load_decoder(str(two_stage_model))
    models = {"pipeline": pipeline_folder / "pipeline.model", "two": two_stage_model}
    with serving(models) as client:
        body = {"sentences": [{"word": s["word"]} for s in sentences], "constraints": as_json(given)}
        joint_results = tag(client, body, "pipeline")["results"]
        body = {
            "sentences": [columns_of(s, ("word", "pos", "chunk")) for s in sentences],
            "constraints": as_json(given),
        }
        two_results = tag(client, body, "two")["results"]
    expected = joint.predict(sentences, constraints={2: given})
    assert [[c["labels"] for c in result["components"]] for result in joint_results] == [
        [expected[k][b] for k in range(3)] for b in range(len(given))
    ]
    assert joint_results[0]["entities"][0] == {"first": 0, "last": 1, "type": "ENT", "probability": 1.0}
    assert [result["labels"] for result in two_results] == tagger.predict(sentences, constraints=given)
    assert two_results[2]["labels"][:2] == ["O", "O"]


def test_a_sentence_left_no_label_sequence_fails_its_own_request_only(demo_chunker):
    model = load_served("default", str(demo_chunker), 0, None)
    options = DecodeOptions("viterbi", True, False, None, None, "joint", 5, False)
    sentences = TEST_SENTENCES[:2]
    clash = Constraints(fixed={0: "B-VP"}, spans=[Span(0, 1, "NP")])
    fine = TagRequest(sentences, None, None, options, [Constraints(fixed={0: "O"}), None])
    faulty = TagRequest(sentences, None, None, options, [None, clash])
    answered, refused = run_batch(partial(answer_batch, model, options), [fine, faulty])
    assert answered["results"][0]["labels"][0] == "O"
    assert isinstance(refused, RequestError) and refused.field == "constraints[1]"
    # named as the request numbers it, not by the method that decoded it
    assert str(refused).startswith("sentence 1: its constraints leave no label sequence")
    assert "token 0 fixed to B-VP" in str(refused)


def test_constraints_over_the_work_budget_are_the_servers_refusal_naming_the_sentence(demo_chunker):
    model = load_served("default", str(demo_chunker), 0, None)
    options = DecodeOptions("viterbi", True, False, None, None, "joint", 5, False)
    sentences = TEST_SENTENCES[:3]
    n = len(sentences[1])
    overlapping = [Span(first, n - 1, "NP", weight=0.5) for first in range(n)]
    given = [Constraints(forbidden=[Span(0, 0, "NP")]), Constraints(forbidden=overlapping), None]
    with limits(max_work=2_000):  # sentence 0 keeps to it alone, sentence 1 does not
        (refused,) = run_batch(
            partial(answer_batch, model, options), [TagRequest(sentences, None, None, options, given)]
        )
    assert isinstance(refused, RequestError) and refused.field == "constraints[1]" and refused.limit == "max_work"
    assert str(refused).startswith("sentence 1: constraining") and "--max-work" not in str(refused)
    assert "too large for this server's budget" in str(refused)


def test_whether_a_sentence_keeps_to_the_work_budget_does_not_depend_on_its_neighbours(demo_chunker):
    """Two sentences that each keep to max_work alone are answered when a request (or
    a slice) holds both, though their lattice together would not keep to it."""
    model = load_served("default", str(demo_chunker), 0, None)
    options = DecodeOptions("viterbi", True, False, None, None, "joint", 5, False)
    sentence = TEST_SENTENCES[1]
    n = len(sentence)
    given = Constraints(forbidden=[Span(first, n - 1, "NP", weight=0.5) for first in range(n)])
    with limits(max_work=1):
        (refused,) = run_batch(
            partial(answer_batch, model, options), [TagRequest([sentence], None, None, options, [given])]
        )
    cells = int(re.search(r"([\d,]+) table cells", str(refused)).group(1).replace(",", ""))
    alone = TagRequest([sentence], None, None, options, [given])
    both = TagRequest([sentence, sentence], None, None, options, [given, given])
    with limits(max_work=cells * 3 // 2):
        (one,) = run_batch(partial(answer_batch, model, options), [alone])
        (two,) = run_batch(partial(answer_batch, model, options), [both])
    assert not isinstance(two, Exception), two
    assert [result["labels"] for result in two["results"]] == [one["results"][0]["labels"]] * 2


def test_the_view_flags_chunks_below_the_requests_threshold(demo_chunker):
    sentence = columns_of(TEST_SENTENCES[0])
    required = Constraints(spans=[Span(*path_chunks(TEST_SENTENCES[0]["chunk"])[0])])
    with serving({"default": demo_chunker}) as client:
        answers = {
            low: tag(
                client,
                {"sentences": [sentence], "constraints": [required.to_dict()], "view": True, "low_confidence": low},
            )
            for low in (0.0, 0.99999)
        }
    chunks = len(answers[0.0]["results"][0]["entities"])
    assert 'class="span low"' not in answers[0.0]["html"]
    assert answers[0.99999]["html"].count('class="span low"') == chunks - 1  # all but the required one (p = 1)
    assert "below 0.99999" in answers[0.99999]["html"]


def test_the_corrected_sentences_come_back_as_partial_labels(demo_chunker, pipeline_folder):
    model = load_decoder(str(demo_chunker))
    given = corrections_of(TEST_SENTENCES)
    given[2] = Constraints(spans=[Span(0, 1, "NP", weight=2.0)])  # soft: no token looked at
    body = {"sentences": [columns_of(s, ("word", "pos", "chunk")) for s in TEST_SENTENCES]}
    text = "the light might build a quiet house .\n\nmany old cities quietly grow ."
    with serving({"default": demo_chunker, "pipeline": pipeline_folder / "pipeline.model"}) as client:
        data = tag(client, {**body, "constraints": as_json(given), "partial_labels": True})["partial_labels"]
        words = tag(
            client, {"text": text, "constraints": [None, {"fixed": {"0": "O"}}], "partial_labels": True}, "pipeline"
        )
        none = tag(client, {**body, "partial_labels": True})["partial_labels"]
    assert data["columns"] == ["word", "pos", "chunk"]
    written = [b for b, c in enumerate(given) if c is not None and b != 2]
    assert data["sentences"] == written
    read = read_conll_text(data["conll"], data["columns"], tmp := pipeline_folder / "partial.txt")
    labels = model.predict(TEST_SENTENCES, constraints=given)
    for sentence, b in zip(read, written):
        assert sentence["word"] == TEST_SENTENCES[b]["word"] and sentence["pos"] == TEST_SENTENCES[b]["pos"]
        assert sentence["chunk"] == corrected_labels(given[b], labels[b], model.labels_)  # not the gold column sent
    assert none == {"columns": ["word", "pos", "chunk"], "sentences": [], "conll": "", "left_out": []}
    pipeline = words["partial_labels"]
    assert pipeline["columns"] == ["word", "pos", "chunk", "ner"] and pipeline["sentences"] == [1]
    (sentence,) = read_conll_text(pipeline["conll"], pipeline["columns"], tmp)
    components = words["results"][1]["components"]
    assert sentence["pos"] == components[0]["labels"] and sentence["chunk"] == components[1]["labels"]
    assert sentence["ner"][0] == "O" and set(sentence["ner"][1:]) == {"?"}


def test_a_sentence_conll_lines_cannot_hold_is_left_out_of_the_partial_labels_alone(demo_chunker, tmp_path):
    sentences = [
        {"word": ["the", "-DOCSTART-", "rose"], "pos": ["DT", "NN", "VBD"]},
        {"word": ["a b", "fell"], "pos": ["DT", "VBD"]},
        {"word": ["prices", "fell"], "pos": ["NNS", "VBD"]},
    ]
    fixed = {"fixed": {"0": "B-NP"}}
    with serving({"default": demo_chunker}) as client:
        answer = tag(client, {"sentences": sentences, "constraints": [fixed] * 3, "partial_labels": True})
    assert [result["labels"][0] for result in answer["results"]] == ["B-NP"] * 3  # tagged under the corrections
    data = answer["partial_labels"]
    assert data["sentences"] == [2]
    assert [(item["sentence"], item["token"]) for item in data["left_out"]] == [(0, 1), (1, 0)]
    assert "-DOCSTART-" in data["left_out"][0]["reason"] and "'a b'" in data["left_out"][1]["reason"]
    (read,) = read_conll_text(data["conll"], data["columns"], tmp_path / "partial.txt")
    assert read["word"] == ["prices", "fell"]


def read_conll_text(text: str, columns: list[str], path) -> list[Sentence]:
    path.write_text(text, encoding="utf-8")
    return read_conll(path, columns).sentences


@pytest.mark.slow
def test_train_init_learns_from_the_corrections_a_person_made(demo_chunker, tmp_path):
    model = load_decoder(str(demo_chunker))
    test = read_conll(DATA_DIR / "demo_test.txt").sentences[:100]
    predicted = model.predict(test)
    wrong = [b for b, labels in enumerate(predicted) if labels != test[b]["chunk"]]
    marked = []  # the first correction of each wrong sentence a chunk is marked in (a person's first fix)
    for b in wrong:
        correction = next_correction(
            set(path_chunks(predicted[b])), set(path_chunks(test[b]["chunk"])), "left-to-right"
        )
        if correction.mark:
            marked.append((b, Constraints(spans=[Span(*correction.span)])))
    assert len(marked) >= 4
    sentences = [test[b] for b, _ in marked]
    body = {"sentences": [columns_of(s) for s in sentences], "constraints": [c.to_dict() for _, c in marked]}
    with serving({"default": demo_chunker}) as client:
        data = tag(client, {**body, "partial_labels": True})["partial_labels"]
    training = (DATA_DIR / "demo_train.txt").read_text(encoding="utf-8")
    (tmp_path / "more.txt").write_text(training + data["conll"], encoding="utf-8")  # the page's advice
    continued = {}
    for name, corpus in (("with", tmp_path / "more.txt"), ("without", DATA_DIR / "demo_train.txt")):
        arguments = [str(corpus), "--columns", ",".join(data["columns"]), "--init", str(demo_chunker)]
        assert main(["-q", "train", *arguments, "--max-iter", "5", "-o", str(tmp_path / f"{name}.model")]) == 0
        continued[name] = load_decoder(str(tmp_path / f"{name}.model"))
    spans = [[tuple(c.spans[0][:3])] for _, c in marked]
    probability = {
        name: np.concatenate(chain.span_probabilities(sentences, spans))
        for name, chain in (("before", model), *continued.items())
    }
    # the corrections, not the five more iterations, made the chunks the person marked more probable
    assert np.all(probability["with"] > probability["before"]), probability
    assert np.all(probability["with"] > probability["without"]), probability
    held = {name: sum(holds(chain.predict(sentences), marked)) for name, chain in continued.items()}
    assert held["with"] > held["without"] and held["with"] > len(marked) // 2, held


def holds(labels: list[list[str]], marked: list) -> list[bool]:
    """Whether each sentence's labels hold the chunk the person marked in it."""
    return [tuple(c.spans[0][:3]) in path_chunks(found) for found, (_, c) in zip(labels, marked)]
