"""The HTTP front end of ``fstcrf serve`` (a Starlette application): its routes, the
bearer token, the limits of a request's body, and every error answered as JSON
``{"error": message, "field": ..., "limit": ...}`` without a traceback.

Routes (``/v1/...`` need the bearer token when the server has one):

- ``POST /v1/models/{name}/tag``: tag a request's sentences (:mod:`fstcrf.serve.parsing`,
  :mod:`fstcrf.serve.answers`), batched with other requests' (:mod:`fstcrf.serve.batching`);
- ``GET /v1/models`` and ``GET /v1/models/{name}``: the served models;
- ``GET /v1/document``: what the page opens with (``{"conll": ..., "title": ...,
  "low_confidence": ...}``, given by ``fstcrf view --edit``; ``{}`` without);
- ``POST /v1/admin/reload``: reload the model files that changed (only on a server
  with a token);
- ``GET /live``, ``GET /ready``: liveness and readiness; ``GET /metrics``: Prometheus text;
- ``GET /`` and ``GET /static/{file}``: the page (:mod:`fstcrf.serve.page`)."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from functools import partial

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fstcrf.engine.threads import INTERRUPT_GRACE
from fstcrf.errors import FstcrfError, RequestError, ServerBusyError
from fstcrf.serve.answers import Paces, answer_batch
from fstcrf.serve.batching import Batcher
from fstcrf.serve.metrics import Metrics
from fstcrf.serve.page import page_files
from fstcrf.serve.parsing import DecodeOptions, TagRequest, parse_tag_request
from fstcrf.serve.registry import Registry, ServedModel
from fstcrf.serve.settings import Batching, Limits
from fstcrf.serve.tokenizer import Tokenizer

LOG = logging.getLogger("fstcrf")

#: Bodies up to this size are read and checked on the event loop; larger ones in a thread.
INLINE_BODY_BYTES = 64 << 10

#: The longest field name an error repeats from a request.
SHOWN_FIELD = 200


@dataclass(frozen=True)
class OpenedDocument:
    """What the page opens with (``fstcrf view --edit``): CoNLL lines in the model's
    layout, tagged at once, the page's heading and its low-confidence threshold."""

    conll: str
    title: str
    low_confidence: float


@dataclass
class Service:
    """What the application serves with: the models, the limits, the batching, the
    tokenizer of texts, the bearer token (None: none asked), the origins CORS allows,
    what the page opens with (None: an empty form), and whether the server
    drains (SIGTERM received: not ready); the batcher, the metrics and the decoding
    paces it keeps."""

    registry: Registry
    limits: Limits
    batching: Batching
    tokenizer: Tokenizer
    token: str | None = None
    cors_origins: tuple[str, ...] = ()
    document: OpenedDocument | None = None
    draining: bool = False
    batcher: Batcher = field(init=False)
    metrics: Metrics = field(init=False)
    paces: Paces = field(init=False, default_factory=Paces)

    def __post_init__(self) -> None:
        self.batcher = Batcher(
            self.batching.max_batch_tokens,
            self.batching.max_wait_ms / 1000,
            self.batching.max_queued,
            self.batching.inline_tokens,
        )
        self.metrics = Metrics(lambda: self.batcher.queued)


def error_response(message: str, status: int, field: str | None = None, limit: str | None = None) -> JSONResponse:
    """The JSON answer of an error (ASCII-escaped, so that any text it repeats can be sent)."""
    content: dict = {"error": message}
    if field is not None:
        content["field"] = field if len(field) <= SHOWN_FIELD else field[: SHOWN_FIELD - 3] + "..."
    if limit is not None:
        content["limit"] = limit
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {"Retry-After": "1"} if status == 503 else None
    return AsciiJSONResponse(content, status, headers)


class AsciiJSONResponse(JSONResponse):
    """JSON with every character beyond ASCII escaped."""

    def render(self, content) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


async def _request_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestError)
    return error_response(str(error), error.status, error.field, error.limit)


async def _busy(request: Request, error: Exception) -> Response:
    return error_response(str(error), 503)


async def _decoding_error(request: Request, error: Exception) -> Response:
    """A model's refusal to decode a request (e.g. a grammar no sequence of a sentence's
    length fits): the request's fault, 422."""
    return error_response(str(error), 422)


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    if error.status_code == 404:
        return error_response(f"no route {request.url.path}", 404, "path")
    if error.status_code == 405:
        allowed = (error.headers or {}).get("Allow", "")
        response = error_response(f"{request.method} is not allowed here; allowed: {allowed}", 405, "method")
        response.headers["Allow"] = allowed
        return response
    return error_response(str(error.detail), error.status_code)


async def _internal_error(request: Request, error: Exception) -> Response:
    LOG.error("internal error answering %s %s", request.method, request.url.path, exc_info=error)
    return error_response("internal error; the server's log has the details", 500)


class JSONRefusingCORS(CORSMiddleware):
    """Starlette's CORS middleware, its refusal of a preflight request a JSON error
    like every other (naming what CORS does not allow: origin, method, headers)."""

    def preflight_response(self, request_headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 400:
            return response
        refused = bytes(response.body).decode()
        what = refused.removeprefix("Disallowed CORS ")
        return error_response(f"{refused} (the server's --cors-origin)", 400, what.split(", ")[0])


class Measured:
    """ASGI middleware counting each HTTP request in the metrics, by its route's
    pattern (see :mod:`fstcrf.serve.metrics`) and status."""

    def __init__(self, app, metrics: Metrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), [500]

        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.in_flight.dec()
            route = scope.get("route")
            pattern = getattr(route, "path", None) if route is not None else None
            self.metrics.request(pattern or "unmatched", status[0], time.perf_counter() - started)


def create_app(service: Service) -> Starlette:
    """The application serving ``service``'s models."""
    files = page_files()

    def check_token(request: Request) -> None:
        if service.token is None:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        sent = given.strip().encode("latin-1")  # the header's bytes (Starlette decodes them as Latin-1)
        if scheme.lower() != "bearer" or not hmac.compare_digest(sent, service.token.encode("utf-8")):
            raise RequestError("this server needs the header Authorization: Bearer TOKEN", "authorization", 401)

    async def tag(request: Request) -> Response:
        try:
            return await answered(request)
        except asyncio.CancelledError:  # the drain ended before the answer: 503, not uvicorn's 500
            if not service.draining:
                raise
            raise ServerBusyError("the server stopped before this request's answer was ready (drain_seconds)") from None

    async def answered(request: Request) -> Response:
        check_token(request)
        model = service.registry.get(request.path_params["name"])
        with service.batcher.arriving():
            body = await read_body(request, service.limits, lambda: service.draining)
            arguments = (body, model, service.limits, service.tokenizer)
            if len(body) <= INLINE_BODY_BYTES:
                parsed = parse_tag_request(*arguments)
            else:
                parsed = await run_in_threadpool(parse_tag_request, *arguments)
        if not parsed.sentences:
            return JSONResponse(_nothing_tagged(model, parsed.options))
        group = (model.name, model.generation, parsed.options)
        run = partial(_counted_batch, service.metrics, model, parsed.options, paces=service.paces)
        try:
            answer = await asyncio.wait_for(
                service.batcher.submit(group, parsed, parsed.num_tokens, run), service.limits.timeout_seconds
            )
        except asyncio.TimeoutError:
            raise ServerBusyError(
                f"no answer within {service.limits.timeout_seconds:g} s (the server's timeout_seconds)"
            ) from None
        return JSONResponse(answer)

    async def models(request: Request) -> Response:
        check_token(request)
        return JSONResponse({"models": [model.describe() for model in service.registry.models.values()]})

    async def one_model(request: Request) -> Response:
        check_token(request)
        return JSONResponse(service.registry.get(request.path_params["name"]).describe())

    async def document(request: Request) -> Response:
        check_token(request)
        return JSONResponse({} if service.document is None else asdict(service.document))

    async def reload(request: Request) -> Response:
        if service.token is None:
            raise RequestError(
                "reloading over HTTP needs a server started with --token; send SIGHUP to reload", "path", 403
            )
        check_token(request)
        outcome = await run_in_threadpool(service.registry.reload)
        return JSONResponse({"models": outcome})

    async def live(request: Request) -> Response:
        return JSONResponse({"status": "live"})

    async def ready(request: Request) -> Response:
        registry = service.registry
        models = {
            name: {"checksum": model.checksum, "generation": model.generation}
            | ({"reload_error": registry.errors[name]} if name in registry.errors else {})
            for name, model in registry.models.items()
        }
        status = "draining" if service.draining else "ready"
        return JSONResponse({"status": status, "models": models}, 503 if service.draining else 200)

    async def metrics(request: Request) -> Response:
        text, content_type = service.metrics.exposition()
        return Response(text, headers={"Content-Type": content_type})

    async def index(request: Request) -> Response:
        return static_file("index.html")

    async def static(request: Request) -> Response:
        name = request.path_params["file"]
        if name not in files:
            raise HTTPException(404)
        return static_file(name)

    def static_file(name: str) -> Response:
        data, content_type = files[name]
        return Response(data, headers={"Content-Type": content_type, "Cache-Control": "no-cache"})

    @asynccontextmanager
    async def lifespan(app: Starlette):
        service.batcher.start()
        yield
        await service.batcher.close(INTERRUPT_GRACE)  # the drain is over: a batch still running is left

    middleware = [Middleware(Measured, metrics=service.metrics)]
    if service.cors_origins:
        middleware.append(
            Middleware(
                JSONRefusingCORS,
                allow_origins=list(service.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type"],
            )
        )
    return Starlette(
        routes=[
            Route("/v1/models/{name}/tag", tag, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{name}", one_model, methods=["GET"]),
            Route("/v1/document", document, methods=["GET"]),
            Route("/v1/admin/reload", reload, methods=["POST"]),
            Route("/live", live, methods=["GET"]),
            Route("/ready", ready, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
            Route("/", index, methods=["GET"]),
            Route("/static/{file}", static, methods=["GET"]),
        ],
        middleware=middleware,
        exception_handlers={
            RequestError: _request_error,
            ServerBusyError: _busy,
            FstcrfError: _decoding_error,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
        lifespan=lifespan,
    )


#: How often a body still arriving checks whether the server is draining (seconds).
_DRAIN_CHECK_SECONDS = 0.25


async def read_body(request: Request, limits: Limits, draining) -> bytes:
    """A request's body; RequestError naming the limit once it is over
    ``limits.max_request_bytes`` bytes (413) or still arriving after
    ``limits.read_timeout_seconds`` (408); ServerBusyError (503) once ``draining()``
    says the server is stopping (a body still arriving then would hold the drain)."""
    reading = asyncio.ensure_future(_body_of(request, limits.max_request_bytes))
    deadline = time.monotonic() + limits.read_timeout_seconds
    try:
        while True:
            done, _ = await asyncio.wait({reading}, timeout=min(_DRAIN_CHECK_SECONDS, deadline - time.monotonic()))
            if done:
                return reading.result()
            if draining():
                raise ServerBusyError("the server stopped before this request's body arrived (it is draining)")
            if time.monotonic() >= deadline:
                raise RequestError(
                    f"the body did not arrive within {limits.read_timeout_seconds:g} s "
                    "(the server's read_timeout_seconds)",
                    "body",
                    408,
                    "read_timeout_seconds",
                )
    finally:
        reading.cancel()


async def _body_of(request: Request, limit: int) -> bytes:
    """A request's body; RequestError (413) naming the limit once it is over ``limit`` bytes."""

    def too_large(size: str) -> RequestError:
        return RequestError(
            f"the body has {size} bytes; at most {limit} are read (the server's max_request_bytes)",
            "body",
            413,
            "max_request_bytes",
        )

    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(declared)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(f"more than {limit}")
        chunks.append(chunk)
    return b"".join(chunks)


def _nothing_tagged(model: ServedModel, options: DecodeOptions) -> dict:
    """The answer to a request without sentences: no results, and the empty view and
    training data it asked for."""
    answer: dict = {"results": []}
    if options.view:
        answer["html"] = ""
    if options.partial_labels:
        answer["partial_labels"] = {"columns": list(model.file_columns), "sentences": [], "conll": "", "left_out": []}
    return answer


def _counted_batch(
    metrics: Metrics,
    model: ServedModel,
    options: DecodeOptions,
    requests: list[TagRequest],
    abandoned: list[threading.Event],
    paces: Paces,
) -> list:
    """:func:`~fstcrf.serve.answers.answer_batch`, the batch counted in ``metrics``."""
    sentences = sum(len(request.sentences) for request in requests)
    metrics.batch(model.name, len(requests), sentences, sum(request.num_tokens for request in requests))
    return answer_batch(model, options, requests, abandoned, paces)
