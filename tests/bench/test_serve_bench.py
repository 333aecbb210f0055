"""fstcrf.bench.serve's pieces on small data (no timing is asserted): both servers
answer the same request format, wrk with the bench's Lua script loads them and its
summary is read, a server left busy by a run is waited for, and the table names
each target as met or not."""

import json
import sys

import pytest

from fstcrf.bench.crfsuite import template_spec, token_attributes
from fstcrf.bench.harness import fstcrf_command
from fstcrf.bench.serve import (
    WRK_SCRIPT,
    ServerUnderLoad,
    request_bodies,
    format_serve,
    load,
)
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.model.chain import load_model

from needs import import_or_skip, program_or_skip

pycrfsuite = pytest.importorskip("pycrfsuite")


@pytest.mark.slow
def test_both_servers_answer_and_wrk_loads_them(demo_chunker, tmp_path):
    program_or_skip("wrk", "wrk")
    import_or_skip("uvicorn", "the servers need the extra serve")
    model = load_model(demo_chunker)
    sentences = [{"word": s["word"], "pos": s["pos"]} for s in read_conll(DATA_DIR / "demo_test.txt").sentences]
    spec = {"columns": list(model.columns_), "target": model.target_}
    spec["predicates"] = template_spec(model.extractor_.template)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    trainer = pycrfsuite.Trainer(verbose=False)
    for sentence in read_conll(DATA_DIR / "demo_train.txt").sentences:
        trainer.append(token_attributes(spec["predicates"], sentence.columns), sentence["chunk"])
    trainer.set_params({"max_iterations": 5})
    trainer.train(str(tmp_path / "crfsuite.model"))
    script = tmp_path / "bodies.lua"
    script.write_text(WRK_SCRIPT)
    servers = []
    try:
        servers.append(
            ServerUnderLoad(
                "fstcrf",
                fstcrf_command("serve", str(demo_chunker), "--port", "0", "--tokenizer", "regex"),
                "/live",
                tmp_path / "fstcrf.log",
            )
        )
        baseline = ["fstcrf.bench.crfsuite_service", str(tmp_path / "spec.json"), str(tmp_path / "crfsuite.model")]
        servers.append(
            ServerUnderLoad("crfsuite", [sys.executable, "-m", *baseline], "/live", tmp_path / "crfsuite.log")
        )
        fstcrf_side, crfsuite_side = servers
        body = {"sentences": sentences[:5]}
        ours = fstcrf_side.post("/v1/models/default/tag", {**body, "entity_probabilities": False})
        theirs = crfsuite_side.post("/tag", body)
        assert [len(r["labels"]) for r in ours["results"]] == [len(r["labels"]) for r in theirs["results"]]
        for server, path, side in (
            (fstcrf_side, "/v1/models/default/tag", "fstcrf"),
            (crfsuite_side, "/tag", "crfsuite"),
        ):
            bodies = request_bodies(sentences, 3, side, tmp_path / f"{side}.jsonl")
            assert len(bodies.read_text().splitlines()) == len(sentences) // 3
            summary = load(server.url + path, bodies, script, 4, 1)
            assert summary["requests"] > 0 and summary["errors"] == 0 and summary["p50_us"] > 0
            server.wait_until_idle()
            assert server.resident_mib() > 10
    finally:
        for server in servers:
            server.stop()


def _figures(rate: float, p99: float) -> dict:
    return {
        "requests_per_second": rate,
        "sentences_per_second": rate,
        "p50_ms": 1.0,
        "p99_ms": p99,
        "max_ms": 2 * p99,
        "errors": 0,
        "requests": 100,
        "rss_mib": 100.0,
    }


def test_the_table_names_each_target():
    runs = []
    for size in (1, 20):
        for concurrency in (1, 8, 64):
            ours = _figures(100.0 * size, 5.0)
            ours["sentences_per_second"] = 100.0 * size * (3 if size == 20 else 1)
            runs.append(
                {"sentences": size, "concurrency": concurrency, "fstcrf": ours, "crfsuite": _figures(90.0 * size, 9.0)}
            )
    result = {
        "model": "m",
        "sentences": 2012,
        "tokens": 47377,
        "seconds": 10,
        "threads": 2,
        "f1": {"fstcrf": 93.1, "crfsuite": 93.0},
        "tag_sentences_per_second": 10_000.0,
        "tag_copies": 5,
        "runs": runs,
        "soak": None,
        "cpus": 2,
        "load_average": (1.0, 1.0, 1.0),
    }
    text = format_serve(result)
    assert "| 20 | 64 | fstcrf | 2,000 | 6,000 |" in text and "F1 of each side's labels: fstcrf 93.10" in text
    assert (
        "3.33x the baseline's (target >= 2x: met)" in text
        and "60% of `fstcrf tag`'s 10,000 (target >= 50%: met)" in text
    )
    assert "at 3 of 3 concurrencies, a lower p99 at 3 of 3 (target: all: met)" in text
