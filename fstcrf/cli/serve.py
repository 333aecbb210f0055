"""``fstcrf serve``: models behind an HTTP JSON API and a page (:mod:`fstcrf.serve`;
needs the extra ``serve``).  It binds the loopback address unless told otherwise, and
an address other machines reach only with a bearer token or an explicit --insecure."""

from __future__ import annotations

import argparse
import gc
import ipaddress
import logging
import os
import re
import socket
from pathlib import Path

from fstcrf.cli.options import POSITIVE, add_command, port_number, real_number, whole_number
from fstcrf.errors import FstcrfError
from fstcrf.serve.settings import (
    DEFAULT_DRAIN_SECONDS,
    DEFAULT_HOST,
    DEFAULT_MODEL_NAME,
    DEFAULT_PORT,
    TOKEN_VARIABLE,
    Batching,
    Limits,
)

LOG = logging.getLogger("fstcrf")

#: What a model's name may hold (it is a path segment of the API).
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _serve(args: argparse.Namespace) -> int:
    from fstcrf.extras import require

    for module in ("starlette", "uvicorn", "prometheus_client"):
        require(module, "fstcrf serve")
    from fstcrf.serve.app import Service
    from fstcrf.serve.registry import Registry
    from fstcrf.serve.server import run_server
    from fstcrf.serve.tokenizer import default_tokenizer, make_tokenizer

    token = args.token or os.environ.get(TOKEN_VARIABLE) or None
    check_exposure(args.host, token, args.insecure)
    registry = Registry(model_paths(args.models), args.threads)
    registry.load()
    service = Service(
        registry,
        Limits(
            args.max_request_bytes, args.max_sentences, args.max_tokens, args.max_nbest, args.timeout, args.read_timeout
        ),
        Batching(args.max_batch_tokens, args.max_wait_ms, args.max_queued, args.inline_tokens),
        make_tokenizer(args.tokenizer or default_tokenizer()),
        token,
        tuple(args.cors_origin),
    )
    listener = bound_socket(args.host, args.port)
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    LOG.info(
        "fstcrf serve: %s on http://%s:%d/ (the page at /, the API under /v1)",
        ", ".join(f"{name} ({path})" for name, path in registry.paths.items()),
        shown,
        port,
    )
    # what is loaded lives as long as the server: the collector need not walk it at each
    # collection (a one-sentence call's time doubled with a few models loaded, docs/benchmarks.md)
    gc.freeze()
    run_server(service, listener, args.drain_seconds, args.access_log)
    LOG.info("fstcrf serve: stopped")
    return 0


def model_paths(arguments: list[str]) -> dict[str, str]:
    """The model files by name, from MODEL or NAME=MODEL arguments: a single model
    without a name is "default", several are named by their files' stems."""
    paths: dict[str, str] = {}
    for argument in arguments:
        name, equals, path = argument.partition("=")
        if not equals or Path(argument).exists():
            name, path = (DEFAULT_MODEL_NAME if len(arguments) == 1 else Path(argument).stem), argument
        if not MODEL_NAME.fullmatch(name):
            raise FstcrfError(
                f"{argument}: a model's name is letters, digits, '_', '.' and '-' (not first); give NAME=MODEL"
            )
        if name in paths:
            raise FstcrfError(f"two models are named {name}; name them with NAME=MODEL")
        paths[name] = path
    return paths


def check_exposure(host: str, token: str | None, insecure: bool) -> None:
    """Refuse an address other machines reach without a token, unless ``insecure``."""
    if token is not None or insecure or is_loopback(host):
        return
    raise FstcrfError(
        f"--host {host} is reachable from other machines: give a bearer token (--token, or the "
        f"environment variable {TOKEN_VARIABLE}), or --insecure to serve without one"
    )


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address."""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(str(address[4][0]).split("%")[0]).is_loopback for address in found)


def bound_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: a free port) and listening."""
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listener = socket.socket(family, kind, protocol)
    except OSError as error:
        raise FstcrfError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(2048)
    except OSError as error:
        listener.close()
        raise FstcrfError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    listener.set_inheritable(True)
    return listener


def add_parsers(commands) -> None:
    """Register fstcrf serve on the subparsers ``commands``."""
    limits, batching = Limits(), Batching()
    serve = add_command(
        commands,
        "serve",
        "serve models over HTTP: a JSON API that tags sentences or text (requests batched "
        "together), a page that shows the chunks and entities with their probabilities, "
        "liveness, readiness and Prometheus metrics (needs fstcrf[serve])",
        _serve,
        inputs=("models",),
    )
    serve.add_argument(
        "models",
        nargs="+",
        metavar="MODEL|NAME=MODEL",
        help="model files (single, composed or two-stage), each served as NAME (a single model "
        f"without one: {DEFAULT_MODEL_NAME}; several: their files' stems)",
    )
    serve.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="the address to listen on; one other machines reach needs --token or --insecure "
        "(default %(default)s: this machine only)",
    )
    serve.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help="the port to listen on; 0: a free one (default %(default)s)",
    )
    serve.add_argument(
        "--token",
        default=None,
        help=f"a bearer token every /v1 request must send (Authorization: Bearer TOKEN); also read "
        f"from the environment variable {TOKEN_VARIABLE}, which keeps it out of the process list "
        "(default: none)",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow a --host other machines reach without --token (default: refused)",
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web origin (e.g. https://app.example.org) whose pages may call the API from a "
        "browser; repeat for more (default: none, no CORS headers)",
    )
    serve.add_argument(
        "--max-request-bytes",
        type=POSITIVE,
        default=limits.max_request_bytes,
        metavar="N",
        help="the largest request body read; a larger one gets 413 (default %(default)s)",
    )
    serve.add_argument(
        "--max-sentences",
        type=POSITIVE,
        default=limits.max_sentences,
        metavar="N",
        help="the most sentences of one request; more get 422 (default %(default)s)",
    )
    serve.add_argument(
        "--max-tokens",
        type=POSITIVE,
        default=limits.max_tokens,
        metavar="N",
        help="the most tokens of one sentence; more get 422 (default %(default)s)",
    )
    serve.add_argument(
        "--max-nbest",
        type=POSITIVE,
        default=limits.max_nbest,
        metavar="N",
        help="the largest nbest (and k) a request may ask for (default %(default)s)",
    )
    serve.add_argument(
        "--timeout",
        type=real_number(0.001, 86400.0),
        default=limits.timeout_seconds,
        metavar="SECONDS",
        help="how long a request may wait for its answer, queued and decoded; past it, 503 (default %(default)s)",
    )
    serve.add_argument(
        "--read-timeout",
        type=real_number(0.001, 86400.0),
        default=limits.read_timeout_seconds,
        metavar="SECONDS",
        help="how long a request's body may take to arrive; past it, 408 (default %(default)s)",
    )
    serve.add_argument(
        "--max-batch-tokens",
        type=POSITIVE,
        default=batching.max_batch_tokens,
        metavar="N",
        help="the most tokens tagged in one batch of requests (default %(default)s)",
    )
    serve.add_argument(
        "--max-wait-ms",
        type=real_number(0.0, 10000.0),
        default=batching.max_wait_ms,
        metavar="MS",
        help="how long a batch waits for more requests being read once the decoder is free (default %(default)s)",
    )
    serve.add_argument(
        "--max-queued",
        type=POSITIVE,
        default=batching.max_queued,
        metavar="N",
        help="the most requests waiting for the decoder; more get 503 (default %(default)s)",
    )
    serve.add_argument(
        "--inline-tokens",
        type=whole_number(0),
        default=batching.inline_tokens,
        metavar="N",
        help="a lone request of at most N tokens, with none other waiting, is tagged on the event loop "
        "rather than handed to the decoder's thread (0: never; default %(default)s)",
    )
    serve.add_argument(
        "--drain-seconds",
        type=real_number(0.0, 86400.0),
        default=DEFAULT_DRAIN_SECONDS,
        metavar="SECONDS",
        help="on SIGTERM, how long requests in flight may take to finish before the server exits (default %(default)s)",
    )
    serve.add_argument(
        "--threads",
        type=POSITIVE,
        default=None,
        help="threads each model decodes a batch on (default: as the model file says)",
    )
    serve.add_argument(
        "--tokenizer",
        choices=("spacy", "regex"),
        default=None,
        help="how text is split into sentences and tokens: spaCy's English rules (needs "
        "fstcrf[spacy]; no model is downloaded) or a regular expression (default: spacy "
        "where it is installed, else regex)",
    )
    serve.add_argument(
        "--access-log",
        action="store_true",
        help="log every request (default: off)",
    )
