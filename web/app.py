"""The edge: a Starlette app serving GraphQL, GraphiQL, the explorer and health checks.

``create_app`` builds nothing at import time; the lifespan opens the store and the HTTP client
for model providers, and closes them on shutdown.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL

from engine.config import Settings
from engine.memory import Memory
from engine.providers.base import Embedder
from engine.store.base import Store
from resolvers import build_schema
from resolvers.context import RequestContext

log = logging.getLogger("mnemoql")
STATIC = Path(__file__).parent / "static"
SESSION_HEADER = "x-memory-session"


def open_store(settings: Settings) -> Store:
    """The configured store, not yet opened."""
    if settings.store == "neo4j":
        from web.neo4j_boot import neo4j_store

        return neo4j_store(settings)
    from engine.store.embedded import EmbeddedStore

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return EmbeddedStore(settings.data_dir / "memory.db")


class MemoryGraphQL(GraphQL[RequestContext, None]):
    """Strawberry's ASGI app with our context and the vendored GraphiQL page."""

    def __init__(self, app_state: Any, **kwargs: Any) -> None:
        limits = kwargs.pop("limits")
        super().__init__(
            build_schema(max_depth=limits.max_query_depth, max_aliases=limits.max_aliases),
            **kwargs,
        )
        self.app_state = app_state

    async def get_context(self, request: Request | WebSocket, response: Any) -> RequestContext:
        memory: Memory = self.app_state.memory
        return RequestContext(memory=memory, session=request.headers.get(SESSION_HEADER))

    async def render_graphql_ide(self, request: Request) -> Response:
        return FileResponse(STATIC / "graphiql.html")


def create_app(
    settings: Settings,
    *,
    store: Store | None = None,
    embedder: Embedder | None = None,
    http_client: httpx.AsyncClient | None = None,
) -> Starlette:
    """The whole service. ``store``/``embedder``/``http_client`` may be injected (tests)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        from engine.providers.factory import build_providers

        async with contextlib.AsyncExitStack() as stack:
            client = http_client or await stack.enter_async_context(httpx.AsyncClient())
            the_store = store or open_store(settings)
            await the_store.open()
            stack.push_async_callback(the_store.close)
            providers = build_providers(settings, client)
            if embedder is not None:
                providers.embedder = embedder
            app.state.memory = Memory(settings, the_store, providers)
            log.info("mnemoql ready: %s", providers.describe())
            yield

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        memory: Memory | None = getattr(request.app.state, "memory", None)
        ok = memory is not None and await memory.store.ping()
        return JSONResponse(
            {"status": "ready" if ok else "unavailable"}, status_code=200 if ok else 503
        )

    async def explorer(request: Request) -> Response:
        return FileResponse(STATIC / "explorer.html")

    app = Starlette(lifespan=lifespan)
    graphql = MemoryGraphQL(app.state, limits=settings.limits, graphql_ide="graphiql")
    app.router.routes.extend(
        [
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/explorer", explorer),
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            Mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static"),
        ]
    )
    app.state.settings = settings
    return app
