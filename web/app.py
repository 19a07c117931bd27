"""The edge: a Starlette app serving GraphQL, GraphiQL, the explorer and health checks.

``create_app`` builds nothing at import time; the lifespan opens the HTTP client for model
providers and the memory spaces (``engine.spaces``: the ``default`` space at start-up, others on
first use), and closes them on shutdown. After the start-up it loads the local embedding model
(``/readyz`` answers 503 until it is in memory) and then jieba, in the background. Bearer
tokens (``web.auth``) pick the caller's space and scopes; ``web.guards`` limits body sizes and
operation times. The GraphQL view mounted at ``/graphql`` is ``web.graphql_view``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

from mnemoql.engine.config import Settings
from mnemoql.engine.providers.base import Embedder
from mnemoql.engine.spaces import DEFAULT_SPACE, Spaces
from mnemoql.engine.store.base import Store
from mnemoql.web import metrics, tracing
from mnemoql.web.auth import BearerAuth, TokenTable, is_loopback
from mnemoql.web.graphql_view import MemoryGraphQL
from mnemoql.web.guards import (
    BodyLimit,
    ClientLimits,
    HostGuard,
    HostRule,
    RateLimit,
    cors,
    freeze_heap,
    thaw_heap,
)
from mnemoql.web.mcp.mount import McpMount
from mnemoql.web.observe import Observe
from mnemoql.web.service import limit_blas_threads, open_store, serving_spaces, warm_up

if TYPE_CHECKING:
    from mnemoql.engine.memory import Memory
    from mnemoql.engine.providers.factory import Providers

log = logging.getLogger("mnemoql")
STATIC = Path(__file__).parent / "static"
# /atlas loads only its own origin's scripts; the ForceAtlas2 layout runs in a worker that
# graphology-layout-forceatlas2 starts from a blob: URL; 'self' covers the same-origin websocket
ATLAS_CSP = (
    "default-src 'self'; script-src 'self'; worker-src 'self' blob:; "
    "connect-src 'self'; img-src 'self' data:; style-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def host_rule(settings: Settings) -> HostRule:
    """The ``Host`` / ``Origin`` rule of a service with these settings (guards.hosts)."""
    return HostRule(
        loopback_bind=is_loopback(settings.host),
        allowed_hosts=settings.http.allowed_hosts,
        cors_origins=settings.http.cors_origins,
    )


async def _warm_and_freeze(providers: Providers, warmed: asyncio.Event, memory: Memory) -> None:
    await warm_up(providers, warmed, memory)  # a large memory's recall index is start-up heap too
    freeze_heap()  # what start-up loaded is never collected again (guards.freeze_heap)


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def create_app(
    settings: Settings,
    *,
    store: Store | None = None,
    embedder: Embedder | None = None,
    http_client: httpx.AsyncClient | None = None,
) -> Starlette:
    """The whole service. ``store`` (the default space's), ``embedder`` and ``http_client`` may
    be injected (tests).

    Raises:
        ValueError: the tokens file is missing or invalid.
    """
    tokens = TokenTable.from_settings(settings.auth)
    mcp = McpMount(settings, tokens)
    client_limits = ClientLimits(settings.http)
    if tokens.open and not is_loopback(settings.host):
        log.warning(
            "serving %s with no access tokens: anyone who can reach it may read and change the "
            "memory (docs/security.md)",
            settings.host,
        )

    def store_for(space: str) -> Store:
        if store is not None and space == DEFAULT_SPACE:
            return tracing.instrument_store(store)
        return tracing.instrument_store(open_store(settings, space))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        limit_blas_threads(settings.retrieval.blas_threads)
        async with contextlib.AsyncExitStack() as stack:
            if settings.telemetry.traces:
                stack.callback(tracing.start())  # last out: flushes the spans
            spaces = await stack.enter_async_context(
                serving_spaces(
                    settings, http_client=http_client, embedder=embedder, store_for=store_for
                )
            )
            providers = spaces.providers
            tracing.instrument_embedder(providers.embedder)
            await stack.enter_async_context(mcp.serving(spaces))  # MCP sessions end first
            # the default space opens now, so a store that cannot open stops the start-up
            app.state.memory = await spaces.get(DEFAULT_SPACE)
            app.state.spaces = spaces
            app.state.warmed = warmed = asyncio.Event()
            if getattr(providers.embedder, "warm_up", None) is None:
                warmed.set()  # nothing to load (hashing, a remote model): ready at once
            app.state.warming = warming = asyncio.create_task(
                _warm_and_freeze(providers, warmed, app.state.memory)
            )
            stack.callback(thaw_heap)  # after the warm-up task has stopped
            stack.push_async_callback(_cancel, warming)
            log.info("mnemoql ready: %s", providers.describe())
            yield

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        spaces: Spaces | None = getattr(request.app.state, "spaces", None)
        warmed: asyncio.Event | None = getattr(request.app.state, "warmed", None)
        ok = (
            spaces is not None
            and warmed is not None
            and warmed.is_set()  # the embedding model is loaded
            and await spaces.ready()
        )
        # a store that answers but cannot write (a full disk, a lock held elsewhere) is not
        # ready either; /healthz stays 200: the process is alive and reads still work
        faults = await spaces.write_faults() if ok and spaces is not None else {}
        body: dict[str, Any] = {"status": "ready" if ok and not faults else "unavailable"}
        if faults:
            body["writes"] = faults
        return JSONResponse(body, status_code=200 if body["status"] == "ready" else 503)

    async def explorer(request: Request) -> Response:
        return FileResponse(STATIC / "explorer.html")

    async def atlas(request: Request) -> Response:
        return FileResponse(STATIC / "atlas.html", headers={"content-security-policy": ATLAS_CSP})

    app = Starlette(
        lifespan=lifespan,
        middleware=[  # outermost first (web.guards)
            Middleware(Observe),  # request id, metrics, the request's span
            Middleware(HostGuard, rule=host_rule(settings)),
            *cors(settings.http.cors_origins),
            Middleware(RateLimit, limits=client_limits, tokens=tokens),
            Middleware(BearerAuth, tokens=tokens),
            Middleware(
                BodyLimit,
                max_bytes=settings.limits.max_body_bytes,
                timeout_s=settings.limits.body_timeout_s,
            ),
        ],
    )
    app.state.locale = settings.locale  # the edge guards' refusals (guards.replies)
    graphql = MemoryGraphQL(
        app.state,
        limits=settings.limits,
        tokens=tokens,
        client_limits=client_limits,
        locale=settings.locale,
        graphql_ide="graphiql",
        max_subscriptions_per_connection=None,  # capped per client (guards.subscriptions)
    )
    app.router.routes.extend(
        [
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/explorer", explorer),
            Route("/atlas", atlas),  # the neighbourhood-first explorer (WebGL, docs/explorer.md)
            Route("/graphql", graphql),  # any method: the view answers others with a JSON 405
            WebSocketRoute("/graphql", graphql),
            Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
            *([Route("/metrics", metrics.endpoint(tokens))] if settings.telemetry.metrics else []),
            Mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static"),
        ]
    )
    app.state.settings = settings
    return app
