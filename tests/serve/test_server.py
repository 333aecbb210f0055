"""``fstcrf serve`` as a process on a free loopback port (always killed at the end,
every wait bounded): concurrent requests are batched and answered as one at a time,
SIGHUP and /v1/admin/reload swap changed model files while requests are in flight
(none fails; a file that does not load leaves the old model serving, its error in
/ready and the log), SIGTERM drains the requests in flight and exits 0; and the
command's refusals: an exposed address without a token, models that do not load,
the extra not installed."""

import json
import math
import os
import re
import shutil
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import needs_serve  # noqa: F401  (skips the module without the extra serve)
import httpx
import pytest

from fstcrf.cli import main
from fstcrf.cli.serve import check_exposure, is_loopback, model_paths
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.errors import FstcrfError

SENTENCES = [
    {"word": s["word"], "pos": s["pos"]} for s in read_conll(DATA_DIR / "demo_test.txt").sentences
]  # 200 sentences


def post(url: str, body: dict, token: str | None = None, timeout: float = 60.0) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(f"{url}/v1/models/default/tag", json=body, headers=headers, timeout=timeout)


def same(answer, expected) -> bool:
    """Whether two answers are equal, their probabilities to 1e-12 relative: span
    probabilities may differ in the last bits with the batch a sentence is decoded in
    (fstcrf.engine.spans groups a batch's tokens), labels never do."""
    if isinstance(expected, float):
        return isinstance(answer, float) and math.isclose(answer, expected, rel_tol=1e-12, abs_tol=1e-300)
    if isinstance(expected, dict):
        return (
            isinstance(answer, dict)
            and answer.keys() == expected.keys()
            and all(same(answer[key], expected[key]) for key in expected)
        )
    if isinstance(expected, list):
        return isinstance(answer, list) and len(answer) == len(expected) and all(map(same, answer, expected))
    return answer == expected


def metric(url: str, name: str) -> float:
    """The value of an unlabelled metric (a histogram's _count or _sum, a gauge)."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return float(re.search(rf"^{name} (\S+)$", text, re.M).group(1))


@pytest.mark.slow
def test_concurrent_requests_are_batched_and_answered_as_one_at_a_time(demo_chunker, start_server):
    # no request tagged on the event loop: answered that fast, 16 client threads seldom overlap
    server = start_server(str(demo_chunker), "--tokenizer", "regex", "--max-wait-ms", "20", "--inline-tokens", "0")
    bodies = [
        {"sentences": SENTENCES[3 * n : 3 * n + 1 + n % 3], "decode": "mbr" if n % 4 == 0 else "viterbi"}
        for n in range(32)
    ]
    alone = [post(server.url, body).json() for body in bodies]
    batches_before = metric(server.url, "fstcrf_batch_requests_count")
    # a request of another group (nbest) holds the decoder for about a second while the others
    # arrive: they wait, and are batched, however the client's threads and the machine run
    holding = {"sentences": SENTENCES * 4, "nbest": 20}
    with ThreadPoolExecutor(17) as pool:
        held = pool.submit(post, server.url, holding)
        wait_for_metric(server, "fstcrf_requests_in_flight", 2)  # the holding request and the scrape
        together = list(pool.map(lambda body: post(server.url, body), bodies))
        assert held.result().status_code == 200
    assert [response.status_code for response in together] == [200] * len(bodies)
    assert all(same(response.json(), expected) for response, expected in zip(together, alone))
    batches = metric(server.url, "fstcrf_batch_requests_count") - batches_before - 1  # the holding request's own
    assert batches < len(bodies)  # some batches held several requests
    assert metric(server.url, "fstcrf_batch_requests_sum") == 2 * len(bodies) + 1


@pytest.mark.slow
def test_two_stage_answers_do_not_depend_on_the_batch(two_stage_model, start_server):
    sentences = [
        {"word": s["word"], "pos": s["pos"], "chunk": s["chunk"]}
        for s in read_conll(DATA_DIR / "demo_test.txt").sentences[:40]
    ]
    server = start_server(str(two_stage_model), "--tokenizer", "regex", "--max-wait-ms", "20")
    bodies = [{"sentences": sentences[n : n + 4]} for n in range(0, 40, 2)]
    alone = [post(server.url, body).json() for body in bodies]
    with ThreadPoolExecutor(8) as pool:
        together = [response.json() for response in pool.map(lambda body: post(server.url, body), bodies)]
    assert together == alone  # labels alone: no probability to differ in its last bits


def _keep_posting(url: str, body: dict, token: str, stop: threading.Event, answers: list) -> None:
    while not stop.is_set():
        response = post(url, body, token)
        answers.append((response.status_code, response.json()))


@pytest.mark.slow
def test_reloads_swap_changed_files_while_requests_flow(demo_chunker, demo_order2_chunker, tmp_path, start_server):
    served = tmp_path / "served.model"
    shutil.copy(demo_chunker, served)
    server = start_server(str(served), "--tokenizer", "regex", environment={"FSTCRF_TOKEN": "t0ken"})
    body = {"sentences": SENTENCES[:50]}
    first = post(server.url, body, "t0ken").json()
    stop, answers = threading.Event(), []
    posters = [threading.Thread(target=_keep_posting, args=(server.url, body, "t0ken", stop, answers)) for _ in "ab"]
    for poster in posters:
        poster.start()
    try:
        time.sleep(0.3)
        shutil.copy(demo_order2_chunker, tmp_path / "next.model")
        os.replace(tmp_path / "next.model", served)
        server.signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while httpx.get(f"{server.url}/ready", timeout=10).json()["models"]["default"]["generation"] != 1:
            assert time.monotonic() < deadline, server.logged()
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        stop.set()
        for poster in posters:
            poster.join(60)
    second = post(server.url, body, "t0ken").json()
    assert first != second  # the second-order chunker labels differently
    assert {status for status, _ in answers} == {200} and len(answers) > 4
    assert all(answer in (first, second) for _, answer in answers)
    assert answers[-1][1] == second

    served.write_bytes(b"not a model file")
    server.signal(signal.SIGHUP)
    deadline = time.monotonic() + 30
    while "reload_error" not in (ready := httpx.get(f"{server.url}/ready", timeout=10)).json()["models"]["default"]:
        assert time.monotonic() < deadline, server.logged()
        time.sleep(0.05)
    assert ready.status_code == 200 and "served.model" in ready.json()["models"]["default"]["reload_error"]
    assert post(server.url, body, "t0ken").json() == second  # the old model serves on
    assert "reload of model default failed" in server.logged()

    shutil.copy(demo_chunker, served)
    headers = {"Authorization": "Bearer t0ken"}
    reloaded = httpx.post(f"{server.url}/v1/admin/reload", headers=headers, timeout=60)
    assert reloaded.json() == {"models": {"default": "reloaded"}}
    assert "reload_error" not in httpx.get(f"{server.url}/ready", timeout=10).json()["models"]["default"]
    assert post(server.url, body, "t0ken").json() == first


def wait_for_metric(server, name: str, count: int, timeout: float = 30.0) -> None:
    """Wait until the gauge ``name`` reaches ``count`` (a failure after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while metric(server.url, name) < count:
        assert time.monotonic() < deadline, server.logged()
        time.sleep(0.01)


@pytest.mark.slow
def test_sigterm_drains_the_requests_in_flight_and_exits_0(demo_chunker, start_server):
    # each request (about 4,000 tokens) over the batch limit, so that each runs alone and the
    # others wait in the queue while it decodes, however fast the machine parses them
    server = start_server(str(demo_chunker), "--tokenizer", "regex", "--threads", "1", "--max-batch-tokens", "1000")
    heavy = {"sentences": SENTENCES * 2, "nbest": 20}  # 400 sentences, about half a second each
    with ThreadPoolExecutor(4) as pool:
        flying = [pool.submit(post, server.url, heavy) for _ in range(4)]
        wait_for_metric(server, "fstcrf_queued_requests", 2)  # one more decodes
        server.signal(signal.SIGTERM)
        statuses = [future.result(timeout=60).status_code for future in flying]
    assert statuses == [200] * 4
    assert server.wait(60) == 0
    assert "SIGTERM: draining" in server.logged()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/live", timeout=5)


@pytest.mark.slow
def test_the_drain_is_bounded(demo_chunker, start_server):
    limits = ["--max-sentences", "4000", "--max-request-bytes", "50000000", "--max-nbest", "100"]
    server = start_server(
        str(demo_chunker), "--tokenizer", "regex", "--threads", "1", "--drain-seconds", "0.1", *limits
    )
    heavy = {"sentences": SENTENCES * 20, "nbest": 100}  # tens of seconds of decoding
    with ThreadPoolExecutor(2) as pool:
        flying = [pool.submit(post, server.url, heavy) for _ in range(2)]
        wait_for_metric(server, "fstcrf_queued_requests", 1)  # one more decodes
        started = time.monotonic()
        server.signal(signal.SIGTERM)
        assert server.wait(60) == 0
        assert time.monotonic() - started < 10
        for future in flying:  # cut off: the server's 503, or the connection closed
            try:
                response = future.result(timeout=60)
            except httpx.TransportError:
                continue
            assert response.status_code == 503, response.text


def _stalled_upload(url: str) -> socket.socket:
    """A connection that sent a request's headers and the first byte of its 100-byte body."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = socket.create_connection((host, int(port)), timeout=30)
    connection.sendall(b"POST /v1/models/default/tag HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    return connection


def _answer_of(connection: socket.socket) -> tuple[int, dict]:
    """(status, JSON body) of the answer read from ``connection`` until it closes."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_a_body_that_stops_arriving_is_a_408_and_holds_no_drain(demo_chunker, start_server):
    """A stalled upload: 408 JSON after --read-timeout; and on SIGTERM the server
    stops waiting for it at once (a 503), not at the end of --drain-seconds (it
    waited 30 s and answered a plain-text 500)."""
    server = start_server(str(demo_chunker), "--tokenizer", "regex", "--read-timeout", "0.5")
    with _stalled_upload(server.url) as connection:
        status, error = _answer_of(connection)
    assert status == 408 and error["field"] == "body" and error["limit"] == "read_timeout_seconds"
    server = start_server(str(demo_chunker), "--tokenizer", "regex", "--drain-seconds", "30")
    with _stalled_upload(server.url) as connection:
        time.sleep(0.5)
        started = time.monotonic()
        server.signal(signal.SIGTERM)
        status, error = _answer_of(connection)
        assert server.wait(60) == 0
    assert time.monotonic() - started < 20  # well within the drain of 30 s
    assert status == 503 and "draining" in error["error"]


@pytest.mark.slow
def test_a_second_ctrl_c_forces_the_exit_without_a_traceback(demo_chunker, start_server):
    server = start_server(str(demo_chunker), "--tokenizer", "regex", "--threads", "1", "--max-nbest", "100")
    heavy = {"sentences": SENTENCES * 2, "nbest": 100}  # seconds of decoding
    with ThreadPoolExecutor(2) as pool:
        flying = [pool.submit(post, server.url, heavy) for _ in range(2)]
        wait_for_metric(server, "fstcrf_queued_requests", 1)  # one more decodes
        server.signal(signal.SIGINT)
        time.sleep(0.2)
        server.signal(signal.SIGINT)
        assert server.wait(30) == 0
        for future in flying:  # cut off: the server's 503, or the connection closed
            try:
                future.result(timeout=60)
            except httpx.TransportError:
                continue
    assert "SIGINT: draining" in server.logged() and "Traceback" not in server.logged()


def test_an_address_other_machines_reach_needs_a_token_or_insecure(demo_chunker, capsys):
    assert main(["-q", "serve", str(demo_chunker), "--host", "0.0.0.0"]) == 2
    assert "--host 0.0.0.0 is reachable from other machines" in capsys.readouterr().err
    check_exposure("0.0.0.0", "a token", insecure=False)
    check_exposure("0.0.0.0", None, insecure=True)
    check_exposure("localhost", None, insecure=False)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("0.0.0.0")
    with pytest.raises(FstcrfError, match="reachable"):
        check_exposure("::", None, insecure=False)


def test_models_are_named_default_by_stem_or_as_given(tmp_path):
    assert model_paths(["a/chunker.model"]) == {"default": "a/chunker.model"}
    assert model_paths(["a/chunker.model", "b/ner.model"]) == {"chunker": "a/chunker.model", "ner": "b/ner.model"}
    assert model_paths(["np=a/chunker.model"]) == {"np": "a/chunker.model"}
    with pytest.raises(FstcrfError, match="two models are named chunker"):
        model_paths(["a/chunker.model", "b/chunker.model"])
    with pytest.raises(FstcrfError, match="a model's name"):
        model_paths(["bad name=a.model"])


def test_a_model_that_does_not_load_stops_the_command(tmp_path, capsys):
    broken = tmp_path / "broken.model"
    broken.write_bytes(b"nothing")
    assert main(["-q", "serve", str(broken), "--port", "0"]) == 2
    assert "model default:" in capsys.readouterr().err


def test_without_the_extra_serve_the_command_names_it(demo_chunker, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "starlette", None)
    assert main(["-q", "serve", str(demo_chunker)]) == 2
    assert "pip install 'fstcrf[serve]'" in capsys.readouterr().err
