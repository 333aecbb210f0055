"""The JSON API in this process (Starlette's test client): answers against the models'
own decoding (labels, entity probabilities, marginals, the n best, a composed
pipeline's components, a two-stage tagger's labels), text with character offsets,
CoNLL lines, the view, and every fault answered with a 4xx JSON error naming the
field, and the limit when one is exceeded."""

import hashlib
import json
import math
import re

import needs_serve  # noqa: F401  (skips the module without the extra serve)
import numpy as np
import pytest
from starlette.testclient import TestClient

from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.spans import path_chunks
from fstcrf.model.decoders import load_decoder
from fstcrf.serve.app import Service, create_app
from fstcrf.serve.registry import Registry
from fstcrf.serve.settings import Batching, Limits
from fstcrf.serve.tokenizer import make_tokenizer

TEST_SENTENCES = read_conll(DATA_DIR / "demo_test.txt").sentences[:12]


def serving(models: dict, token: str | None = None, cors: tuple[str, ...] = (), **limits) -> TestClient:
    """A test client of a server of ``models`` (name -> path) with the regex tokenizer."""
    registry = Registry({name: str(path) for name, path in models.items()})
    registry.load()
    service = Service(registry, Limits(**limits), Batching(), make_tokenizer("regex"), token, cors)
    return TestClient(create_app(service), raise_server_exceptions=False)


def columns_of(sentence, names=("word", "pos")) -> dict:
    return {name: sentence[name] for name in names}


def tag(client, body, name="default", status=200) -> dict:
    response = client.post(f"/v1/models/{name}/tag", json=body)
    assert response.status_code == status, response.text
    return response.json()


def test_sentences_get_the_models_labels_entity_probabilities_marginals_and_n_best(demo_chunker):
    model = load_decoder(str(demo_chunker))
    with serving({"default": demo_chunker}) as client:
        answer = tag(client, {"sentences": [columns_of(s) for s in TEST_SENTENCES], "marginals": True, "nbest": 3})
    results = answer["results"]
    labels = model.predict(TEST_SENTENCES)
    assert [result["labels"] for result in results] == labels
    spans = [path_chunks(sentence) for sentence in labels]
    probabilities = model.span_probabilities(TEST_SENTENCES, spans)
    marginals = model.predict_marginals(TEST_SENTENCES)
    index = {label: i for i, label in enumerate(model.labels_)}
    ranked, ranked_p = model.kbest(TEST_SENTENCES, 3)
    for b, result in enumerate(results):
        assert [(e["first"], e["last"], e["type"]) for e in result["entities"]] == spans[b]
        np.testing.assert_allclose([e["probability"] for e in result["entities"]], probabilities[b], rtol=1e-12)
        expected = [marginals[b][t, index[label]] for t, label in enumerate(labels[b])]
        np.testing.assert_allclose(result["marginals"], expected, rtol=1e-12)
        assert [item["labels"] for item in result["nbest"]] == ranked[b]
        np.testing.assert_allclose([item["probability"] for item in result["nbest"]], ranked_p[b][: len(ranked[b])])


def test_entity_probabilities_can_be_left_out_and_mbr_decodes_each_request_alone(demo_chunker):
    model = load_decoder(str(demo_chunker))
    body = {"sentences": [columns_of(s) for s in TEST_SENTENCES], "entity_probabilities": False}
    with serving({"default": demo_chunker}) as client:
        plain = tag(client, body)["results"]
        mbr = tag(client, {**body, "decode": "mbr"})["results"]
        fixed = tag(client, {**body, "decode": "mbr", "mbr_threshold": 0.3})["results"]
    assert all("probability" not in entity for result in plain for entity in result["entities"])
    assert [result["labels"] for result in mbr] == model.predict_mbr(TEST_SENTENCES)
    assert [result["labels"] for result in fixed] == model.predict_mbr(TEST_SENTENCES, 0.3)


def test_one_endpoint_serves_a_pos_chunk_ner_pipeline_from_text(pipeline_folder):
    joint = load_decoder(str(pipeline_folder / "pipeline.model"))
    text = "the light might build a quiet house .\n\nmany old cities quietly grow ."
    with serving({"pipeline": pipeline_folder / "pipeline.model"}) as client:
        described = client.get("/v1/models/pipeline").json()
        answer = tag(client, {"text": text, "marginals": True}, "pipeline")
    assert described["kind"] == "composed" and described["columns"] == ["word"]
    assert described["predicts"] == ["pos", "chunk", "ner"]
    results = answer["results"]
    assert [[token["text"] for token in result["tokens"]] for result in results] == [
        "the light might build a quiet house .".split(),
        "many old cities quietly grow .".split(),
    ]
    sentences = [{"word": [token["text"] for token in result["tokens"]]} for result in results]
    from fstcrf.corpus.conll import Sentence

    sentences = [Sentence(columns) for columns in sentences]
    expected = joint.predict(sentences)
    probabilities = joint.span_probabilities_by_component(
        sentences, {k: [path_chunks(labels) for labels in expected[k]] for k in (1, 2)}
    )
    for b, result in enumerate(results):
        components = result["components"]
        assert [component["column"] for component in components] == ["pos", "chunk", "ner"]
        assert [component["labels"] for component in components] == [expected[k][b] for k in range(3)]
        assert result["labels"] == components[2]["labels"] and result["entities"] == components[2]["entities"]
        assert components[0]["entities"] == [] and len(components[0]["marginals"]) == len(result["tokens"])
        for k in (1, 2):
            found = components[k]["entities"]
            np.testing.assert_allclose([e["probability"] for e in found], probabilities[k][b], rtol=1e-12)
            for entity in found:  # character offsets into the text sent
                tokens = result["tokens"][entity["first"] : entity["last"] + 1]
                assert entity["start"] == tokens[0]["start"] and entity["end"] == tokens[-1]["end"]
                assert entity["text"] == text[entity["start"] : entity["end"]]
                assert entity["text"].split() == [token["text"] for token in tokens]


def test_a_composed_model_decodes_in_cascade_when_asked(pipeline_folder):
    joint = load_decoder(str(pipeline_folder / "pipeline.model"))
    sentences = [{"word": s["word"]} for s in TEST_SENTENCES]
    with serving({"default": pipeline_folder / "pipeline.model"}) as client:
        cascade = tag(client, {"sentences": sentences, "mode": "cascade"})["results"]
        refused = tag(client, {"sentences": sentences, "nbest": 2}, status=422)
    expected = joint.predict(TEST_SENTENCES, mode="cascade")
    assert [[c["labels"] for c in result["components"]] for result in cascade] == [
        [expected[k][b] for k in range(3)] for b in range(len(TEST_SENTENCES))
    ]
    assert refused["field"] == "nbest" and "single models" in refused["error"]


def test_a_two_stage_tagger_gives_its_labels(two_stage_model):
    tagger = load_decoder(str(two_stage_model))
    sentences = [columns_of(s, ("word", "pos", "chunk")) for s in TEST_SENTENCES]
    with serving({"default": two_stage_model}) as client:
        answer = tag(client, {"sentences": sentences})
        refused = tag(client, {"sentences": sentences, "marginals": True}, status=422)
    assert [result["labels"] for result in answer["results"]] == tagger.predict(TEST_SENTENCES)
    assert all("probability" not in e for result in answer["results"] for e in result["entities"])
    assert refused["field"] == "marginals"


@pytest.mark.pynini
def test_a_model_trained_under_a_grammar_is_served_like_any(tmp_path):
    from fstcrf.cli import main

    model_path = tmp_path / "grammar.model"
    train = str(DATA_DIR / "demo_train.txt")
    assert main(["-q", "train", train, "--grammar", "iob2", "--max-iter", "3", "-o", str(model_path)]) == 0
    model = load_decoder(str(model_path))
    with serving({"default": model_path}) as client:
        results = tag(client, {"sentences": [columns_of(s) for s in TEST_SENTENCES]})["results"]
    assert [result["labels"] for result in results] == model.predict(TEST_SENTENCES)


def test_conll_lines_with_gold_labels_give_a_view_with_gold_rows(demo_chunker):
    lines = "\n\n".join(
        "\n".join(" ".join(fields) for fields in zip(s["word"], s["pos"], s["chunk"])) for s in TEST_SENTENCES[:3]
    )
    with serving({"default": demo_chunker}) as client:
        answer = tag(client, {"conll": lines, "view": True})
        first = TEST_SENTENCES[0]
        without_gold = tag(client, {"conll": "\n".join(f"{w} {p}" for w, p in zip(first["word"], first["pos"]))})
    assert len(answer["results"]) == 3 and len(without_gold["results"]) == 1
    assert answer["html"].count('class="sentence"') == 3 and 'class="gold"' in answer["html"]
    shown = answer["html"].count('class="span')
    assert shown == sum(len(result["entities"]) for result in answer["results"])


def test_the_models_are_listed_with_their_files_checksums(demo_chunker, pipeline_folder):
    models = {"chunker": demo_chunker, "pipeline": pipeline_folder / "pipeline.model"}
    with serving(models) as client:
        listed = client.get("/v1/models").json()["models"]
    assert [model["name"] for model in listed] == ["chunker", "pipeline"]
    for model in listed:
        digest = hashlib.sha256(models[model["name"]].read_bytes()).hexdigest()
        assert model["checksum"] == f"sha256:{digest}"
    assert listed[0]["kind"] == "single" and listed[0]["columns"] == ["word", "pos"]
    assert listed[0]["labels"] == list(load_decoder(str(demo_chunker)).labels_)


#: The start of a body holding one sentence of one token.
A_SENTENCE = b'{"sentences": [{"word": ["a"], "pos": ["DT"]}]'

#: (body, status, field, limit): requests each refused, with the field (and limit) named.
FAULTS = [
    (b"\xff{}", 400, "body", None),
    (b'{"sentences": [', 400, "body", None),
    (b'{"sentences": [], "mbr_threshold": NaN}', 400, "body", None),
    (b"[]", 422, "body", None),
    (b'{"sentences": 3}', 422, "sentences", None),
    (b'{"sentences": [{"word": ["a"]}]}', 422, "sentences[0].pos", None),
    (b'{"sentences": [{"word": ["a"], "pos": ["DT"], "lemma": ["a"]}]}', 422, "sentences[0].lemma", None),
    (b'{"sentences": [{"word": ["a", "b"], "pos": ["DT"]}]}', 422, "sentences[0]", None),
    (b'{"sentences": [{"word": [1], "pos": ["DT"]}]}', 422, "sentences[0].word[0]", None),
    (b'{"sentences": [{"word": [""], "pos": ["DT"]}]}', 422, "sentences[0].word[0]", None),
    (b'{"sentences": [{"word": ["\\ud800"], "pos": ["DT"]}]}', 422, "sentences[0].word[0]", None),
    (b'{"sentences": [{"word": [], "pos": []}]}', 422, "sentences[0].word", None),
    (b'{"sentences": [], "text": "a"}', 422, "text", None),
    (b'{"text": "a b"}', 422, "text", None),
    (b'{"conll": "a DT\\nb"}', 422, "conll", None),
    (b'{"sentences": [], "decode": "beam"}', 422, "decode", None),
    (b'{"sentences": [], "nbest": 0}', 422, "nbest", None),
    (b'{"sentences": [], "nbest": 21}', 422, "nbest", "max_nbest"),
    (b'{"sentences": [], "marginals": "yes"}', 422, "marginals", None),
    (b'{"sentences": [], "mode": "joint"}', 422, "mode", None),
    (b'{"sentences": [], "mbr_threshold": 0.5}', 422, "mbr_threshold", None),
    (b'{"sentences": [], "decode": "mbr", "mbr_threshold": 1.5}', 422, "mbr_threshold", None),
    (b'{"sentences": [], "bogus": 1}', 422, "bogus", None),
    (b'{"sentences": [], "low_confidence": 0.3}', 422, "low_confidence", None),
    (b'{"sentences": [], "view": true, "low_confidence": 2}', 422, "low_confidence", None),
    (b'{"sentences": [], "partial_labels": 1}', 422, "partial_labels", None),
    (A_SENTENCE + b', "constraints": {}}', 422, "constraints", None),
    (A_SENTENCE + b', "constraints": []}', 422, "constraints", None),
    (A_SENTENCE + b', "constraints": [3]}', 422, "constraints[0]", None),
    (A_SENTENCE + b', "constraints": [{"allowed": {"0": {"O": 1}}}]}', 422, "constraints[0]", None),
    (A_SENTENCE + b', "constraints": [{"fixed": {"1": "O"}}]}', 422, "constraints[0]", None),
    (A_SENTENCE + b', "constraints": [{"fixed": {"\\u00b2": "O"}}]}', 422, "constraints[0]", None),
    (
        A_SENTENCE + b', "constraints": [{"spans": [{"first": 0, "last": 0, "type": "B-NP"}]}]}',
        422,
        "constraints[0]",
        None,
    ),
    (
        A_SENTENCE + b', "constraints": [{"fixed": {"0": "B-VP"}, "spans": [{"first": 0, "last": 0, "type": "NP"}]}]}',
        422,
        "constraints[0]",
        None,
    ),
    (
        b'{"sentences": [' + b'{"word": ["a"], "pos": ["DT"]},' * 3 + b'{"word": ["a"], "pos": ["DT"]}]}',
        422,
        "sentences",
        "max_sentences",
    ),
    (
        b'{"sentences": [{"word": ["a", "b", "c", "d"], "pos": ["DT", "DT", "DT", "DT"]}]}',
        422,
        "sentences[0].word",
        "max_tokens",
    ),
    (b'{"text": "' + b"word " * 300 + b'"}', 413, "body", "max_request_bytes"),
    # integers too long for a float, or for Python to read (4,300 digits)
    (b'{"text": 1' + b"0" * 400 + b"}", 422, "text", None),
    (b'{"sentences": [1' + b"0" * 400 + b"]}", 422, "sentences[0]", None),
    (A_SENTENCE + b', "constraints": [{"fixed": {"1' + b"0" * 30 + b'": "O"}}]}', 422, "constraints[0]", None),
    (A_SENTENCE + b', "constraints": [{"fixed": {"00": "O"}}]}', 422, "constraints[0]", None),
    (
        A_SENTENCE
        + b', "constraints": [{"spans": [{"first": 0, "last": 0, "type": "NP", "weight": 1'
        + b"0" * 400
        + b"}]}]}",
        422,
        "constraints[0]",
        None,
    ),
    (A_SENTENCE + b', "constraints": [{"scores": {"0": {"O": 1e17}}}]}', 422, "constraints[0]", None),
]


@pytest.mark.parametrize(("body", "status", "field", "limit"), FAULTS, ids=range(len(FAULTS)))
def test_each_fault_is_a_4xx_json_error_naming_the_field(demo_chunker, body, status, field, limit):
    with serving({"default": demo_chunker}, max_sentences=3, max_tokens=3, max_request_bytes=1000) as client:
        response = client.post("/v1/models/default/tag", content=body)
    assert response.status_code == status, response.text
    error = response.json()
    assert error["field"] == field and error.get("limit") == limit and error["error"]
    assert "Traceback" not in response.text


def test_json_nested_too_deeply_is_refused(demo_chunker):
    """Deeper than Python's parser reads, and deeper than MAX_DEPTH in any field
    (970 deep parsed, then failed to show in the error: a 500)."""
    from fstcrf.serve.parsing import MAX_DEPTH

    def nested(depth: int) -> bytes:
        return b"[" * depth + b"]" * depth

    with serving({"default": demo_chunker}) as client:
        bodies = [
            nested(200_000),
            b'{"sentences": [], "decode": ' + nested(970) + b"}",
            A_SENTENCE + b', "constraints": [{"allowed": {"0": ' + nested(965) + b"}}]}",
            b'{"sentences": [], "nbest": ' + nested(MAX_DEPTH) + b"}",
        ]
        responses = [client.post("/v1/models/default/tag", content=body) for body in bodies]
        fits = client.post(
            "/v1/models/default/tag", content=b'{"sentences": [], "nbest": ' + nested(MAX_DEPTH - 1) + b"}"
        )
    for response in responses:
        assert response.status_code == 400 and response.json()["field"] == "body", response.text
    assert f"more than {MAX_DEPTH} deep" in responses[-1].json()["error"]
    assert fits.status_code == 422 and fits.json()["field"] == "nbest"


def test_a_json_constant_is_named_as_such(demo_chunker):
    with serving({"default": demo_chunker}) as client:
        answers = [
            client.post("/v1/models/default/tag", content=b'{"sentences": [], "nbest": ' + name + b"}")
            for name in (b"NaN", b"-Infinity")
        ]
    assert [answer.json()["error"] for answer in answers] == [
        "the body is not JSON: NaN is not a JSON number",
        "the body is not JSON: -Infinity is not a JSON number",
    ]


def test_an_integer_longer_than_python_reads_is_refused(demo_chunker):
    with serving({"default": demo_chunker}) as client:
        response = client.post("/v1/models/default/tag", content=b'{"sentences": [], "nbest": 1' + b"0" * 5000 + b"}")
    assert response.status_code == 400 and response.json()["field"] == "body"
    assert "4,300 digits" in response.json()["error"]


def test_a_token_beyond_latin_1_is_compared_as_utf_8(demo_chunker):
    with serving({"default": demo_chunker}, token="tökén→") as client:
        right = client.get("/v1/models", headers={"Authorization": "Bearer tökén→".encode()})
        wrong = client.get("/v1/models", headers={"Authorization": "Bearer tökén".encode()})
    assert right.status_code == 200 and wrong.status_code == 401


def test_unknown_models_routes_and_methods_are_json_errors(demo_chunker):
    with serving({"default": demo_chunker}) as client:
        model = client.post("/v1/models/other/tag", json={"sentences": []})
        route = client.get("/v2/nothing")
        method = client.get("/v1/models/default/tag")
    assert model.status_code == 404 and model.json()["field"] == "name" and "default" in model.json()["error"]
    assert route.status_code == 404 and route.json()["field"] == "path"
    assert method.status_code == 405 and method.json()["field"] == "method"
    assert method.headers["Allow"] == "POST"


def test_a_token_guards_the_api_but_not_the_probes(demo_chunker):
    with serving({"default": demo_chunker}, token="s3cret") as client:
        missing = client.get("/v1/models")
        wrong = client.get("/v1/models", headers={"Authorization": "Bearer s3cre"})
        right = client.get("/v1/models", headers={"Authorization": "Bearer s3cret"})
        probes = [client.get(path).status_code for path in ("/live", "/ready", "/metrics", "/")]
        reload_wrong = client.post("/v1/admin/reload", headers={"Authorization": "Bearer x"})
        reload_right = client.post("/v1/admin/reload", headers={"Authorization": "Bearer s3cret"})
    assert missing.status_code == wrong.status_code == 401 and missing.json()["field"] == "authorization"
    assert missing.headers["WWW-Authenticate"] == "Bearer"
    assert right.status_code == 200 and probes == [200, 200, 200, 200]
    assert reload_wrong.status_code == 401 and reload_right.json() == {"models": {"default": "unchanged"}}


def test_cors_headers_only_for_the_origins_given(demo_chunker):
    origin = {"Origin": "https://app.example.org"}
    with serving({"default": demo_chunker}) as client:
        closed = client.get("/v1/models", headers=origin)
    with serving({"default": demo_chunker}, cors=("https://app.example.org",)) as client:
        opened = client.get("/v1/models", headers=origin)
        other = client.get("/v1/models", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in closed.headers
    assert opened.headers["access-control-allow-origin"] == "https://app.example.org"
    assert "access-control-allow-origin" not in other.headers


def test_a_preflight_that_cors_refuses_is_a_json_error(demo_chunker):
    asked = {"Access-Control-Request-Method": "POST"}
    with serving({"default": demo_chunker}, cors=("https://app.example.org",)) as client:
        allowed = client.options("/v1/models", headers={"Origin": "https://app.example.org", **asked})
        refused = client.options("/v1/models", headers={"Origin": "https://evil.example", **asked})
    assert allowed.status_code == 200
    assert refused.status_code == 400 and refused.json()["field"] == "origin"
    assert "Disallowed CORS origin" in refused.json()["error"]


def test_metrics_count_requests_errors_batches_and_tokens(demo_chunker):
    sentences = [columns_of(s) for s in TEST_SENTENCES[:3]]
    with serving({"default": demo_chunker}) as client:
        tag(client, {"sentences": sentences})
        client.post("/v1/models/default/tag", content=b"{")
        text = client.get("/metrics").text
    tokens = sum(len(s["word"]) for s in sentences)
    assert 'fstcrf_requests_total{route="/v1/models/{name}/tag",status="200"} 1.0' in text
    assert 'fstcrf_request_errors_total{route="/v1/models/{name}/tag",status="400"} 1.0' in text
    assert f'fstcrf_tokens_total{{model="default"}} {float(tokens)}' in text
    assert "fstcrf_batch_sentences_sum 3.0" in text and "fstcrf_request_seconds_bucket" in text


def test_the_page_and_its_files_are_served(demo_chunker):
    with serving({"default": demo_chunker}) as client:
        page = client.get("/")
        script = client.get("/static/page.js")
        imported = re.findall(r'^import .* from "\./([a-z]+\.js)";$', script.text, re.M)
        modules = [client.get(f"/static/{name}") for name in imported]
        style = client.get("/static/view.css")
        missing = client.get("/static/secret.py")
    assert page.headers["content-type"].startswith("text/html") and 'src="static/page.js"' in page.text
    assert not re.search(r'(src|href)="(\w+:)?//', page.text)  # nothing fetched from elsewhere
    assert script.headers["content-type"].startswith("text/javascript")
    assert sorted(imported) == ["api.js", "corrections.js", "download.js", "editor.js"]
    assert all(module.status_code == 200 and "export " in module.text for module in modules)
    assert "fetch(" in modules[0].text and "fetch(" not in script.text + "".join(m.text for m in modules[1:])
    assert "td.span" in style.text and missing.status_code == 404


def test_an_empty_text_has_no_results(demo_chunker, pipeline_folder):
    with serving({"default": pipeline_folder / "pipeline.model"}) as client:
        assert tag(client, {"text": "  \n\n "}) == {"results": []}
        assert tag(client, {"sentences": [], "view": True}) == {"results": [], "html": ""}
        # the training data asked for, empty, in the model's layout (the page reads it)
        answer = tag(client, {"text": " ", "view": True, "partial_labels": True})
        assert answer["partial_labels"] == {
            "columns": ["word", "pos", "chunk", "ner"],
            "sentences": [],
            "conll": "",
            "left_out": [],
        }


def test_json_answers_hold_finite_numbers(demo_chunker):
    with serving({"default": demo_chunker}) as client:
        answer = tag(client, {"sentences": [columns_of(s) for s in TEST_SENTENCES], "marginals": True})
    numbers = [e["probability"] for r in answer["results"] for e in r["entities"]]
    numbers += [p for r in answer["results"] for p in r["marginals"]]
    assert all(math.isfinite(p) and 0 <= p <= 1 + 1e-12 for p in numbers)
    json.dumps(answer, allow_nan=False)
