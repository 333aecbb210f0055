"""A batch decoded in slices: the answers equal those of one call, a request whose
client stopped waiting is dropped between slices (a timed-out request stops holding
the decoder), and a model's refusal names the sentence of the request at fault."""

import threading
import time

import needs_serve  # noqa: F401  (skips the module without the extra serve)
import pytest

from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.errors import InfeasibleError, RequestError
from fstcrf.serve import answers
from fstcrf.serve.parsing import parse_tag_request
from fstcrf.serve.registry import Registry
from fstcrf.serve.settings import Limits
from fstcrf.serve.tokenizer import make_tokenizer
from test_api import columns_of, serving

SENTENCES = read_conll(DATA_DIR / "demo_test.txt").sentences[:12]


@pytest.fixture
def chunker(demo_chunker):
    registry = Registry({"default": str(demo_chunker)})
    registry.load()
    return registry.get("default")


def request(model, sentences, **fields):
    body = {"sentences": [columns_of(s) for s in sentences], **fields}
    import json

    return parse_tag_request(json.dumps(body).encode(), model, Limits(), make_tokenizer("regex"))


def counted_calls(monkeypatch, pause: float = 0.0) -> list:
    """Make every slice one sentence and record each call of answers.decoded (its sentences)."""
    calls: list = []
    decoded = answers.decoded

    def recording(model, options, sentences, constraints=None):
        calls.append(len(sentences))
        time.sleep(pause)
        return decoded(model, options, sentences, constraints)

    monkeypatch.setattr(answers, "decoded", recording)
    monkeypatch.setattr(answers, "FIRST_SLICE_TOKENS", 1)
    monkeypatch.setattr(answers, "SLICE_SECONDS", 1e-9)
    return calls


def test_answers_decoded_in_slices_equal_those_of_one_call(chunker, monkeypatch):
    requests = [request(chunker, SENTENCES[:5], entity_probabilities=True, marginals=True, nbest=2)]
    requests.append(request(chunker, SENTENCES[5:], entity_probabilities=True, marginals=True, nbest=2))
    whole = answers.answer_batch(chunker, requests[0].options, requests)
    calls = counted_calls(monkeypatch)
    sliced = answers.answer_batch(chunker, requests[0].options, requests)
    assert calls == [1] * len(SENTENCES)
    assert sliced == whole


def test_a_request_abandoned_is_dropped_at_the_next_slice(chunker, monkeypatch):
    calls = counted_calls(monkeypatch)
    first, second = request(chunker, SENTENCES[:6]), request(chunker, SENTENCES[6:])
    abandoned = [threading.Event(), threading.Event()]
    decoded = answers.decoded

    def abandoning(model, options, sentences, constraints=None):
        if len(calls) == 2:  # the first request's client leaves while its third sentence decodes
            abandoned[0].set()
        return decoded(model, options, sentences, constraints)

    monkeypatch.setattr(answers, "decoded", abandoning)
    result = answers.answer_batch(chunker, first.options, [first, second], abandoned)
    assert result[0] is None and len(result[1]["results"]) == 6
    assert len(calls) == 3 + 6  # three of the first request's sentences, then the second's


def test_a_timed_out_request_stops_holding_the_decoder(demo_chunker, monkeypatch):
    calls = counted_calls(monkeypatch, pause=0.05)
    body = {"sentences": [columns_of(s) for s in SENTENCES]}
    with serving({"default": demo_chunker}, timeout_seconds=0.2) as client:
        started = time.perf_counter()
        response = client.post("/v1/models/default/tag", json=body)
        assert response.status_code == 503 and "timeout_seconds" in response.json()["error"]
        calls_then = len(calls)
        after = client.post("/v1/models/default/tag", json={"sentences": body["sentences"][:2]})
        waited = time.perf_counter() - started
    assert after.status_code == 200, after.text
    # the timed-out request decoded about 0.2 s of its 0.6 s and at most one sentence more
    assert calls_then < len(SENTENCES) and len(calls) <= calls_then + 1 + 2 and waited < 0.6


def test_a_refusal_without_a_sentence_names_the_sentences_or_constraints(chunker, monkeypatch):
    def refusing(model, options, sentences, constraints=None):
        raise InfeasibleError("no label sequence of this length")

    monkeypatch.setattr(answers, "decoded", refusing)
    plain = request(chunker, SENTENCES[:2])
    constrained = request(chunker, SENTENCES[:2], constraints=[None, {"fixed": {"0": "O"}}])
    for given, field in ((plain, "sentences"), (constrained, "constraints")):
        with pytest.raises(RequestError) as refused:
            answers.answer_batch(chunker, given.options, [given])
        assert refused.value.field == field


def test_a_refusal_in_a_later_slice_names_its_sentence_in_the_request(chunker, monkeypatch):
    counted_calls(monkeypatch)
    impossible = {"fixed": {"0": "I-NP"}, "allowed": {"0": ["O"]}}
    given = request(chunker, SENTENCES[:4], constraints=[None, None, impossible, None])
    with pytest.raises(RequestError) as refused:
        answers.answer_batch(chunker, given.options, [given])
    assert refused.value.field == "constraints[2]"


def test_constraints_over_the_budget_are_the_requests_fault(chunker):
    overlapping = {"forbidden": [{"first": t, "last": 99, "type": "NP", "weight": 1.0} for t in range(100)]}
    long = Sentence({"word": ["the"] * 100, "pos": ["DT"] * 100})
    given = request(chunker, [long], constraints=[overlapping])
    with pytest.raises(RequestError, match="max_work") as refused:
        answers.answer_batch(chunker, given.options, [given])
    assert refused.value.field == "constraints[0]" and refused.value.limit == "max_work"
    assert "--max-work" not in str(refused.value)


def test_a_batch_s_first_slice_is_sized_by_the_pace_of_the_last():
    paces = answers.Paces()
    assert paces.slice_tokens("a") == answers.FIRST_SLICE_TOKENS
    paces.record("a", 0.01, 100)  # 100 us a token
    assert paces.slice_tokens("a") == pytest.approx(answers.SLICE_SECONDS / 1e-4)
    for key in range(answers.MOST_PACES):
        paces.record(key, 1.0, 1)
    assert len(paces.seconds_per_token) <= answers.MOST_PACES


def test_batches_after_the_first_go_in_one_slice_when_fast(chunker, monkeypatch):
    calls = []
    decoded = answers.decoded

    def recording(model, options, sentences, constraints=None):
        calls.append(sum(len(sentence) for sentence in sentences))
        return decoded(model, options, sentences, constraints)

    monkeypatch.setattr(answers, "decoded", recording)
    monkeypatch.setattr(answers, "FIRST_SLICE_TOKENS", 20)
    paces = answers.Paces()
    given = request(chunker, SENTENCES)
    first = answers.answer_batch(chunker, given.options, [given], paces=paces)
    sliced_first = len(calls)
    second = answers.answer_batch(chunker, given.options, [given], paces=paces)
    assert first == second and sliced_first > 1 and len(calls) == sliced_first + 1
