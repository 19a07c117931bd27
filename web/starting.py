"""The ASGI app ``mnemoql serve`` listens with while the service loads (``StartingApp``)."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only the names: this module loads before the service (see StartingApp)
    from starlette.applications import Starlette
    from starlette.types import Receive, Scope, Send


class StartingApp:
    """The ASGI app ``mnemoql serve`` listens with, so the port answers while the service loads.

    uvicorn accepts connections only after the app's start-up, and importing the service
    (GraphQL, numpy, the engine) takes ~1 s with bytecode and ~2.5 s without
    (``bench/results/startup.md``). This app completes uvicorn's start-up at once, builds the
    real app in a worker thread and runs its lifespan (providers, the default space's store) in a
    background task. Until that is done, ``/healthz`` answers 200 (the process is up),
    ``/readyz`` 503, and every other request waits for the service, then goes to it. When the
    start-up fails, ``on_failure`` stops the server. A failure the operator can fix (a coded
    ``MnemoError``: a store that cannot open, a full disk, a lock held elsewhere; an ``OSError``
    on a file) becomes ``error``, one line that ``mnemoql serve`` prints before it exits with 2;
    anything else is a bug, logged with its traceback as uvicorn logs it (exit 3, uvicorn's code
    for a failed start-up).
    """

    def __init__(self, build: Callable[[], Starlette], on_failure: Callable[[], None]) -> None:
        self._build = build
        self._on_failure = on_failure
        self.app: Starlette | None = None  # the real app, once its start-up completed
        self.failed = False
        self.error: str | None = None  # the one-line reason of an operator-caused failure
        self._settled: asyncio.Event | None = None  # set when the app is up or failed
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self.app is None:
            path = scope.get("path")
            if scope["type"] == "http" and path in {"/healthz", "/readyz"}:
                up = path == "/healthz"
                await _send_json(send, 200 if up else 503, "ok" if up else "unavailable")
                return
            assert self._settled is not None
            await self._settled.wait()
            if self.app is None:  # the start-up failed and the server is stopping
                if scope["type"] == "http":
                    await _send_json(send, 503, "unavailable")
                else:
                    await send({"type": "websocket.close", "code": 1011})
                return
        await self.app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._settled, self._stop = asyncio.Event(), asyncio.Event()
                self._task = asyncio.create_task(self._run())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._stop is not None:
                    self._stop.set()
                if self._task is not None:
                    await self._task
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _run(self) -> None:
        assert self._settled is not None and self._stop is not None
        log = logging.getLogger("uvicorn.error")
        started = False
        try:
            app = await asyncio.to_thread(self._build)
            if self._stop.is_set():
                return
            # the lifespan is entered and left in this one task, as uvicorn would
            async with app.router.lifespan_context(app):
                started = True
                self.app = app
                self._settled.set()
                log.info("mnemoql is up; /readyz says when the embedding model is loaded")
                await self._stop.wait()
        except Exception as exc:
            reason = operator_error(exc)
            if reason is None or started:
                log.error("".join(traceback.format_exception(exc)))
            if not started:
                self.failed = True
                if reason is None:
                    log.error("Application startup failed. Exiting.")
                else:
                    self.error = reason
                    # the reason is the last line; uvicorn's shutdown chatter would bury it
                    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
                self._on_failure()
        finally:
            self._settled.set()


def listen_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (checked before uvicorn starts, which would log
    the bind error between its start-up lines and exit 3), or None."""
    try:
        family, kind, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        return f"cannot listen on {host}:{port}: {exc.strerror}"
    with socket.socket(family, kind) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            s.bind(address)
        except OSError as exc:
            what = (exc.strerror or str(exc)).lower()
            return f"cannot listen on {host}:{port}: {what} (choose another --port)"
    return None


def operator_error(exc: BaseException) -> str | None:
    """``CODE: message`` for a failure the operator can fix, None for a bug."""
    from mnemoql.engine.errors import MnemoError
    from mnemoql.engine.locale_choice import configured_locale
    from mnemoql.engine.redact import mask_text
    from mnemoql.engine.store.faults import storage_fault

    if isinstance(exc, OSError):
        fault = storage_fault(exc)
        if fault is not None:
            exc = fault
        else:
            name = f"{exc.filename}: " if exc.filename is not None else ""
            return f"{type(exc).__name__}: {name}{(exc.strerror or str(exc)).lower()}"
    if isinstance(exc, MnemoError):
        return f"{exc.code}: {mask_text(exc.text(configured_locale()))}".splitlines()[0]
    return None


async def _send_json(send: Send, status: int, state: str) -> None:
    body = json.dumps({"status": state}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
