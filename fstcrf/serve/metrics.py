"""The server's Prometheus metrics (through prometheus-client, in a registry of the
server's own): requests and errors by route and status, request latency, the requests in flight, batch sizes
in requests, sentences and tokens, the sentences and tokens tagged per model, and the
requests waiting for the decoder.

Routes are counted by their pattern (``/v1/models/{name}/tag``), never by the path a
client sent, so that no client can make the label sets grow: a path no route matches
is counted as "unmatched"."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

#: Latency buckets, seconds.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

#: Batch size buckets (requests or sentences in a batch).
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)

#: Batch size buckets in tokens.
TOKEN_BUCKETS = (16, 64, 256, 1024, 4096, 16384, 65536)


class Metrics:
    """The metrics of one server, and their Prometheus text."""

    def __init__(self, queued: Callable[[], float]):
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "fstcrf_requests", "Requests answered, by route and status", ["route", "status"], registry=self.registry
        )
        self.errors = Counter(
            "fstcrf_request_errors",
            "Requests answered with an error (status 400 or more), by route and status",
            ["route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "fstcrf_request_seconds",
            "Seconds from a request's arrival to its answer, by route",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.batch_requests = Histogram(
            "fstcrf_batch_requests", "Requests tagged in one batch", buckets=SIZE_BUCKETS, registry=self.registry
        )
        self.batch_sentences = Histogram(
            "fstcrf_batch_sentences", "Sentences tagged in one batch", buckets=SIZE_BUCKETS, registry=self.registry
        )
        self.batch_tokens = Histogram(
            "fstcrf_batch_tokens", "Tokens tagged in one batch", buckets=TOKEN_BUCKETS, registry=self.registry
        )
        self.sentences = Counter("fstcrf_sentences", "Sentences tagged, by model", ["model"], registry=self.registry)
        self.tokens = Counter("fstcrf_tokens", "Tokens tagged, by model", ["model"], registry=self.registry)
        self.in_flight = Gauge("fstcrf_requests_in_flight", "Requests being answered", registry=self.registry)
        self.waiting = Gauge("fstcrf_queued_requests", "Requests waiting for the decoder", registry=self.registry)
        self.waiting.set_function(queued)

    def request(self, route: str, status: int, seconds: float) -> None:
        """Count an answered request."""
        self.requests.labels(route, str(status)).inc()
        if status >= 400:
            self.errors.labels(route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def batch(self, model: str, requests: int, sentences: int, tokens: int) -> None:
        """Count a batch given to the decoder."""
        self.batch_requests.observe(requests)
        self.batch_sentences.observe(sentences)
        self.batch_tokens.observe(tokens)
        self.sentences.labels(model).inc(sentences)
        self.tokens.labels(model).inc(tokens)

    def exposition(self) -> tuple[bytes, str]:
        """(the Prometheus text of every metric, its content type)."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
