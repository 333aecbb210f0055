"""Random requests thrown at every endpoint of a real server: random JSON values and
byte strings, and tag requests shaped nearly right (known and unknown fields, columns
of random Unicode text, lone surrogates, wrong types).  Each is answered 2xx or 4xx,
an error as JSON without a traceback, and the server keeps serving: a valid request
is answered at the end and the log holds no internal error."""

import json

import needs_serve  # noqa: F401  (skips the module without the extra serve)
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ServerProcess

pytestmark = pytest.mark.slow  # a server process and some 450 requests, about 15 s

#: Every route, and paths that match none.
ENDPOINTS = [
    ("POST", "/v1/models/default/tag"),
    ("POST", "/v1/models/other/tag"),
    ("GET", "/v1/models/default/tag"),
    ("GET", "/v1/models"),
    ("GET", "/v1/models/default"),
    ("POST", "/v1/admin/reload"),
    ("GET", "/live"),
    ("GET", "/ready"),
    ("GET", "/metrics"),
    ("GET", "/"),
    ("GET", "/static/page.js"),
    ("GET", "/static/../app.py"),
    ("POST", "/v1/models/%ff/tag"),
    ("PUT", "/v1/models"),
]

#: The fields of a tag request, and a few it does not know.
FIELDS = ["sentences", "text", "conll", "decode", "entity_probabilities", "marginals", "nbest", "mbr_threshold"]
FIELDS += ["mode", "k", "view", "Sentences", ""]

#: Any code point, lone surrogates included (sent escaped, as JSON allows).
ANY_CHARACTER = st.characters(codec=None, categories=None)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(ANY_CHARACTER, max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=16,
)
tokens = st.lists(st.text(ANY_CHARACTER, min_size=0, max_size=10), min_size=0, max_size=6)
sentence = st.dictionaries(
    st.sampled_from(["word", "pos", "chunk", "lemma"]), tokens | json_values, min_size=1, max_size=3
)
tag_bodies = st.dictionaries(
    st.sampled_from(FIELDS),
    st.lists(sentence, max_size=3) | st.text(ANY_CHARACTER, max_size=40) | json_values,
    max_size=4,
)
bodies = (
    tag_bodies.map(lambda body: json.dumps(body, ensure_ascii=True).encode("ascii"))
    | json_values.map(lambda value: json.dumps(value).encode("ascii"))
    | st.binary(max_size=64)
)


@pytest.fixture(scope="module")
def server(demo_chunker, tmp_path_factory):
    process = ServerProcess(
        [str(demo_chunker), "--tokenizer", "regex", "--max-nbest", "3", "--max-tokens", "50"],
        tmp_path_factory.mktemp("fuzz") / "server.log",
    )
    try:
        process.wait_until_listening()
        with httpx.Client(base_url=process.url, timeout=30) as client:
            yield process, client
    finally:
        process.stop()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(endpoint=st.sampled_from(ENDPOINTS), body=bodies)
def test_every_answer_is_2xx_or_a_4xx_json_error(server, endpoint, body):
    _, client = server
    method, path = endpoint
    response = client.request(method, path, content=body)
    assert 200 <= response.status_code < 500, (response.status_code, response.text)
    assert "Traceback" not in response.text
    if response.status_code >= 400:
        assert response.json()["error"]


any_token = st.text(ANY_CHARACTER, min_size=1, max_size=70)


@st.composite
def well_formed(draw) -> dict:
    """A tag request of the right shape whose tokens are any text (lone surrogates
    included), with options a chunker takes."""
    lengths = draw(st.lists(st.integers(1, 8), min_size=1, max_size=4))
    sentences = [
        {
            "word": draw(st.lists(any_token, min_size=n, max_size=n)),
            "pos": draw(st.lists(any_token, min_size=n, max_size=n)),
        }
        for n in lengths
    ]
    options = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "decode": st.sampled_from(["viterbi", "mbr"]),
                "marginals": st.booleans(),
                "entity_probabilities": st.booleans(),
                "view": st.booleans(),
            },
        )
    )
    if options.get("decode") != "mbr" and draw(st.booleans()):
        options["nbest"] = draw(st.integers(1, 3))
    return {"sentences": sentences, **options}


def has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(character) <= 0xDFFF for character in text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=well_formed())
def test_any_text_in_well_formed_requests_is_tagged(server, body):
    _, client = server
    response = client.post("/v1/models/default/tag", content=json.dumps(body, ensure_ascii=True).encode("ascii"))
    tokens = [token for sentence in body["sentences"] for column in sentence.values() for token in column]
    if any(map(has_surrogate, tokens)):
        assert response.status_code == 422 and "surrogate" in response.json()["error"]
        return
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [len(result["labels"]) for result in results] == [len(sentence["word"]) for sentence in body["sentences"]]


def test_the_server_serves_on_after_the_random_requests(server):
    process, client = server
    answer = client.post("/v1/models/default/tag", json={"sentences": [{"word": ["the", "dog"], "pos": ["DT", "NN"]}]})
    assert answer.status_code == 200 and len(answer.json()["results"][0]["labels"]) == 2
    assert process.process.poll() is None
    assert "internal error" not in process.logged() and "Exception in ASGI" not in process.logged()
