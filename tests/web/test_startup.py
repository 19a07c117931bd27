"""Start-up: ``mnemoql serve`` answers /healthz while the service loads, /readyz only once the
service and the local embedding model are up; a failed start-up the operator can fix is one
line and exit 2, a bug in it a traceback and exit 3.

In-process tests drive ``StartingApp`` through its ASGI lifespan with a build that waits for the
test, so nothing depends on timing; the subprocess tests run the real command.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemoql.engine.model_settings import LOCAL_DIMENSIONS
from mnemoql.engine.models import Vector
from mnemoql.engine.providers.base import EmbedKind
from mnemoql.engine.providers.hashing import HashingEmbedder
from mnemoql.web.starting import StartingApp
from tests.api.conftest import offline_settings, running

ROOT = Path(__file__).resolve().parents[2]


# -- StartingApp, in process --------------------------------------------------------------------


class Lifespan:
    """Plays uvicorn's part of the ASGI lifespan protocol against one app."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def startup(self) -> str:
        self.task = asyncio.create_task(
            self.app({"type": "lifespan", "asgi": {"version": "3.0"}}, self.inbox.get, self.outbox.put)
        )
        await self.inbox.put({"type": "lifespan.startup"})
        return str((await self.outbox.get())["type"])

    async def shutdown(self) -> str:
        await self.inbox.put({"type": "lifespan.shutdown"})
        answer = str((await self.outbox.get())["type"])
        assert self.task is not None
        await self.task
        return answer


def tiny_app(events: list[str]) -> Starlette:
    """A stand-in for the real app: a lifespan that records itself, /readyz and a route."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        events.append("entered")
        yield
        events.append("left")

    async def ready(request: Request) -> Response:
        return JSONResponse({"status": "ready"})

    async def hello(request: Request) -> Response:
        return JSONResponse({"hello": "world"})

    return Starlette(lifespan=lifespan, routes=[Route("/readyz", ready), Route("/hello", hello)])


@contextlib.asynccontextmanager
async def client_of(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
        yield c


async def test_healthz_answers_while_the_service_loads_and_requests_wait_for_it() -> None:
    release = threading.Event()
    events: list[str] = []
    stopped: list[bool] = []

    def build() -> Starlette:
        assert release.wait(30)
        events.append("built")
        return tiny_app(events)

    app = StartingApp(build, on_failure=lambda: stopped.append(True))
    life = Lifespan(app)
    assert await life.startup() == "lifespan.startup.complete"  # at once: uvicorn listens
    async with client_of(app) as c:
        health = await c.get("/healthz")
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        ready = await c.get("/readyz")
        assert (ready.status_code, ready.json()) == (503, {"status": "unavailable"})
        waiting = asyncio.create_task(c.get("/hello"))
        await asyncio.sleep(0.05)
        assert not waiting.done() and events == []  # held, not refused
        release.set()
        hello = await waiting
        assert (hello.status_code, hello.json()) == (200, {"hello": "world"})
        assert events == ["built", "entered"]
        assert (await c.get("/readyz")).json() == {"status": "ready"}  # the real app's now
    assert await life.shutdown() == "lifespan.shutdown.complete"
    assert events == ["built", "entered", "left"] and stopped == [] and not app.failed


async def test_a_failed_start_up_is_logged_and_stops_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    stopped: list[bool] = []

    def build() -> Starlette:
        assert release.wait(30)
        raise RuntimeError("the store cannot open")

    app = StartingApp(build, on_failure=lambda: stopped.append(True))
    life = Lifespan(app)
    await life.startup()
    async with client_of(app) as c:
        waiting = asyncio.create_task(c.get("/graphql"))
        await asyncio.sleep(0.05)
        with caplog.at_level(logging.ERROR, logger="uvicorn.error"):
            release.set()
            answer = await waiting
        assert answer.status_code == 503  # the held request is answered, not left hanging
        assert (await c.get("/healthz")).status_code == 200
        assert (await c.get("/readyz")).status_code == 503
    assert stopped == [True] and app.failed
    assert "the store cannot open" in caplog.text
    assert "Application startup failed. Exiting." in caplog.text
    assert await life.shutdown() == "lifespan.shutdown.complete"


async def test_a_failing_lifespan_counts_as_a_failed_start_up() -> None:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        raise RuntimeError("no store")
        yield

    stopped: list[bool] = []
    app = StartingApp(lambda: Starlette(lifespan=lifespan), on_failure=lambda: stopped.append(True))
    life = Lifespan(app)
    await life.startup()
    async with client_of(app) as c:
        assert (await c.get("/anything")).status_code == 503
    assert stopped == [True] and app.failed
    await life.shutdown()


# -- /readyz waits for the embedding model ------------------------------------------------------


class SlowModel(HashingEmbedder):
    """A hashing embedder whose warm-up waits for the test (or fails)."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(LOCAL_DIMENSIONS)
        self.release = asyncio.Event()
        self.fail = fail
        self.warmed = False

    async def warm_up(self) -> None:
        await self.release.wait()
        if self.fail:
            raise RuntimeError("no AVX2 here")
        self.warmed = True

    async def embed(self, texts: Any, kind: EmbedKind = "passage") -> Vector:
        out: Vector = np.asarray(await super().embed(texts, kind))
        return out


async def _ready(c: httpx.AsyncClient) -> int:
    for _ in range(500):  # a bound, not a timing: each round yields to the warm-up task
        if (r := await c.get("/readyz")).status_code == 200:
            return r.status_code
        await asyncio.sleep(0.01)
    return 503


async def test_readyz_waits_for_the_embedding_model(tmp_path: Path) -> None:
    model = SlowModel()
    async with running(offline_settings(tmp_path), embedder=model) as api:
        ready = await api.client.get("/readyz")
        assert (ready.status_code, ready.json()) == (503, {"status": "unavailable"})
        assert (await api.client.get("/healthz")).status_code == 200
        # requests are served meanwhile; they just may pay for loading the model themselves
        data = await api.gql("{ memoryIndex { counts { events } } }")
        assert data["memoryIndex"]["counts"]["events"] == 0
        model.release.set()
        assert await _ready(api.client) == 200
        assert model.warmed


async def test_a_model_that_fails_to_warm_up_does_not_block_readiness(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = SlowModel(fail=True)
    with caplog.at_level(logging.WARNING, logger="mnemoql"):
        async with running(offline_settings(tmp_path), embedder=model) as api:
            model.release.set()
            assert await _ready(api.client) == 200
    assert "warming up" in caplog.text and "no AVX2 here" in caplog.text


async def test_the_offline_extractor_warms_jieba_after_the_model(tmp_path: Path) -> None:
    from mnemoql.engine.providers import _blocks

    model = SlowModel()
    async with running(offline_settings(tmp_path), embedder=model) as api:
        model.release.set()
        assert await _ready(api.client) == 200
        for _ in range(500):
            if _blocks._posseg is not None:
                break
            await asyncio.sleep(0.01)
        assert _blocks._posseg is not None


# -- the real command ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve(data_dir: Path, port: int) -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, "MNEMOQL_EMBEDDING__PROVIDER": "hashing"}
    env.pop("DEEPSEEK_API_KEY", None)
    cmd = [sys.executable, "-m", "mnemoql.web.cli", "serve", "--data-dir", str(data_dir), "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for(url: str, proc: subprocess.Popen[str], deadline_s: float = 90.0) -> httpx.Response:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        with contextlib.suppress(httpx.TransportError):
            r = httpx.get(url, timeout=5.0)
            if r.status_code == 200:
                return r
        time.sleep(0.02)
    raise AssertionError(f"{url} did not answer 200")


def test_mnemoql_serve_becomes_healthy_then_ready_and_stops_cleanly(tmp_path: Path) -> None:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with serve(tmp_path / "data", port) as proc:
        assert _wait_for(f"{base}/healthz", proc).json() == {"status": "ok"}
        assert _wait_for(f"{base}/readyz", proc).json() == {"status": "ready"}
        body = httpx.post(f"{base}/graphql", json={"query": "{ memoryIndex { dimensions } }"}, timeout=30).json()
        assert body == {"data": {"memoryIndex": {"dimensions": LOCAL_DIMENSIONS}}}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        out = proc.stdout.read() if proc.stdout else ""
    assert "mnemoql is up" in out and "Traceback" not in out


def test_mnemoql_serve_exits_2_with_one_line_when_the_store_cannot_open(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with serve(not_a_dir, _free_port()) as proc:
        assert proc.wait(90) == 2
        out = proc.stdout.read() if proc.stdout else ""
    assert "Traceback" not in out and "ERROR" not in out
    # refused before anything listens: no banner, no uvicorn start-up lines before the reason
    assert out.strip().splitlines() == [
        f"mnemoql serve: STORE_UNAVAILABLE: cannot create the data directory {not_a_dir}: "
        "it exists and is not a directory"
    ]


def test_only_what_an_operator_can_fix_becomes_one_line(tmp_path: Path) -> None:
    """Only what an operator can fix is one line; an unexpected error keeps its traceback."""
    from mnemoql.web.starting import operator_error

    assert operator_error(RuntimeError("a bug")) is None
    assert operator_error(PermissionError(13, "Permission denied", "/x")) == (
        "PermissionError: /x: permission denied"
    )
