"""The settings of ``fstcrf serve`` and their defaults: the limits a request must keep
to, how requests are batched and how the server stops.  Plain Python, so that the
command line reads the defaults without importing the web stack."""

from __future__ import annotations

from dataclasses import dataclass

#: The address and port the server listens on by default (loopback only).
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080

#: The name of a single model served without one.
DEFAULT_MODEL_NAME = "default"

#: The environment variable a bearer token may be given in (kept out of ``ps``).
TOKEN_VARIABLE = "FSTCRF_TOKEN"


@dataclass(frozen=True)
class Limits:
    """What one request may hold and take; over a limit, the request is refused with
    413 (bytes), 408 (time to arrive) or 422 (the rest), the error naming the limit.

    Attributes:
        max_request_bytes: bytes of a request's body.
        max_sentences: sentences of a request (given, or found in its text).
        max_tokens: tokens of one sentence.
        max_nbest: the largest ``nbest`` (and ``k`` of the cascade mode "kbest").
        timeout_seconds: seconds a request may wait for its answer (queued and
            decoded); past it, 503, and its decoding stops at the next slice
            (:mod:`fstcrf.serve.answers`).
        read_timeout_seconds: seconds a request's body may take to arrive; past
            it, 408.
    """

    max_request_bytes: int = 1 << 20
    max_sentences: int = 1000
    max_tokens: int = 1000
    max_nbest: int = 20
    timeout_seconds: float = 30.0
    read_timeout_seconds: float = 30.0


@dataclass(frozen=True)
class Batching:
    """How concurrent requests are tagged together.

    Attributes:
        max_batch_tokens: tokens of one batch (a request holding more is a batch
            of its own).
        max_wait_ms: milliseconds a batch waits for more requests once its first
            one is queued and the decoder is free, while other requests are being
            read (with none coming, it runs at once; while the decoder is busy,
            requests gather anyway).
        max_queued: requests waiting for the decoder; more are refused with 503.
        inline_tokens: a batch of at most this many tokens, with no other request
            waiting or being read, is tagged on the event loop itself rather than
            handed to the decoder's thread and back (0: never), which spares a lone
            small request the hand-off and the wait for the interpreter lock.
    """

    max_batch_tokens: int = 8192
    max_wait_ms: float = 1.0
    max_queued: int = 1024
    inline_tokens: int = 64


#: Seconds SIGTERM leaves requests in flight to finish before the server exits.
DEFAULT_DRAIN_SECONDS = 30.0
