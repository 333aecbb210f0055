"""The server process: the application run by uvicorn on a socket the command line
bound, with the signals of a service: SIGTERM (and Ctrl-C) stop accepting
connections, let the requests in flight finish for at most the drain time and end
the process with status 0; SIGHUP reloads the model files that changed, in a thread
of its own, while requests are served."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading
from contextlib import contextmanager

import uvicorn

from fstcrf.serve.app import Service, create_app

LOG = logging.getLogger("fstcrf")


class ServiceServer(uvicorn.Server):
    """uvicorn's server with a service's signals (see the module doc)."""

    def __init__(self, config: uvicorn.Config, service: Service):
        super().__init__(config)
        self.service = service
        self.loop: asyncio.AbstractEventLoop | None = None

    @contextmanager
    def capture_signals(self):
        """Handle SIGINT, SIGTERM and SIGHUP while serving; restore the handlers after.
        (uvicorn's own raises the stopping signal again once it has stopped, which
        would end the process by that signal instead of with status 0.)"""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self.loop = asyncio.get_running_loop()
        handlers = {signal.SIGINT: self.handle_exit, signal.SIGTERM: self.handle_exit}
        if hasattr(signal, "SIGHUP"):
            handlers[signal.SIGHUP] = self.handle_reload
        previous = {number: signal.signal(number, handler) for number, handler in handlers.items()}
        try:
            yield
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def handle_exit(self, sig, frame) -> None:
        """Stop: not ready from now on, then uvicorn's graceful shutdown."""
        if not self.service.draining:
            LOG.info("%s: draining the requests in flight, then stopping", signal.Signals(sig).name)
        self.service.draining = True
        super().handle_exit(sig, frame)

    def handle_reload(self, sig, frame) -> None:
        """Reload the changed model files in a thread (the event loop serves on)."""
        loop = self.loop
        if loop is not None:
            loop.call_soon_threadsafe(self._reload_in_thread)

    def _reload_in_thread(self) -> None:
        assert self.loop is not None
        LOG.info("SIGHUP: reloading the model files that changed")
        future = self.loop.run_in_executor(None, self.service.registry.reload)
        future.add_done_callback(_log_failure)


def _log_failure(future: asyncio.Future) -> None:
    if not future.cancelled() and future.exception() is not None:
        LOG.error("reload failed", exc_info=future.exception())


class ForcedExitFilter(logging.Filter):
    """Drops uvicorn's report of the lifespan task cancelled, which a second Ctrl-C
    (a forced exit, skipping the lifespan's end) makes: a traceback (Starlette's,
    as the record's text), not an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        cancelled = record.exc_info is not None and isinstance(record.exc_info[1], asyncio.CancelledError)
        return not (cancelled or record.getMessage().rstrip().endswith("asyncio.exceptions.CancelledError"))


def run_server(service: Service, listener: socket.socket, drain_seconds: float, access_log: bool) -> None:
    """Serve ``service`` on the bound, listening socket ``listener`` until a stopping signal."""
    config = uvicorn.Config(
        create_app(service),
        log_config=None,
        access_log=access_log,
        timeout_graceful_shutdown=drain_seconds,  # type: ignore[arg-type]  # a float works: asyncio.wait_for
        server_header=False,
        lifespan="on",
    )
    uvicorn_log, forced_exit = logging.getLogger("uvicorn.error"), ForcedExitFilter()
    uvicorn_log.addFilter(forced_exit)
    try:
        ServiceServer(config, service).run(sockets=[listener])
    finally:
        uvicorn_log.removeFilter(forced_exit)
