"""The edge: a Starlette app serving GraphQL, GraphiQL, the explorer and health checks.

``create_app`` builds nothing at import time; the lifespan opens the HTTP client for model
providers and the memory spaces (``engine.spaces``: the ``default`` space at start-up, others on
first use), and closes them on shutdown. After the start-up it loads the local embedding model
(``/readyz`` answers 503 until it is in memory) and then jieba, in the background. Bearer
tokens (``web.auth``) pick the caller's space and scopes; ``web.guards`` limits body sizes and
operation times.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from cross_web import AsyncHTTPRequestAdapter, HTTPException
from starlette.applications import Starlette
from starlette.datastructures import State
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError, MissingQueryError
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType
from strawberry.types.unset import UNSET, UnsetType

from mnemoql.engine.config import Settings
from mnemoql.engine.errors import MnemoError
from mnemoql.engine.messages import DEFAULT_LOCALE, Locale, message, preferred
from mnemoql.engine.providers.base import Embedder
from mnemoql.engine.spaces import DEFAULT_SPACE, Spaces
from mnemoql.engine.store.base import Store
from mnemoql.resolvers import build_schema
from mnemoql.resolvers.context import RequestContext
from mnemoql.web import metrics, tracing
from mnemoql.web.auth import (
    BearerAuth,
    Grant,
    TokenTable,
    grant_of,
    is_loopback,
    token_from_params,
)
from mnemoql.web.graphql_http import (
    JSON,
    MethodRefused,
    content_type,
    error_response,
    negotiate,
    shape,
    unknown_operation,
    websocket_required,
)
from mnemoql.web.guards import (
    BodyLimit,
    ClientLimits,
    HostGuard,
    HostRule,
    MutationDeadline,
    ParseBudget,
    RateLimit,
    RefusalPause,
    collector_paused,
    cors,
    freeze_heap,
    input_guard,
    note_body,
    thaw_heap,
    within_deadline,
)
from mnemoql.web.guards.subscriptions import LimitedTransportWSHandler, LimitedWSHandler
from mnemoql.web.mcp.mount import McpMount
from mnemoql.web.observe import Observe, OperationLabel
from mnemoql.web.observe import current as observation
from mnemoql.web.persisted import NOT_FOUND as PERSISTED_NOT_FOUND
from mnemoql.web.persisted import PersistedQueries, PersistedQueryRefused
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
SESSION_HEADER = "x-memory-session"
ACCEPTED: UnsetType = UNSET  # on_ws_connect's "no payload" (strawberry declares UNSET as Any)
SESSION_COOKIE = "mnemoql_session"
_COOKIE_VALUE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


def client_session(request: Request | WebSocket, response: Response | WebSocket) -> str:
    """The default session of a client without a token that names none (issue 30): the
    ``mnemoql_session`` cookie it sent back, else a new one set on this response. Browsers,
    ``httpx.Client`` and ``requests.Session`` keep it, so a client's calls stay one session on
    any replica; a websocket without it is one session for its life."""
    value = request.cookies.get(SESSION_COOKIE, "")
    if not _COOKIE_VALUE.match(value):
        value = secrets.token_urlsafe(16)
        if isinstance(response, Response):
            response.set_cookie(SESSION_COOKIE, value, httponly=True, samesite="lax")
    return f"client:{value}"


class MemoryGraphQL(GraphQL[RequestContext, None]):
    """Strawberry's ASGI app with our context, guards, the vendored GraphiQL page and the
    GraphQL-over-HTTP media types and statuses of ``web.graphql_http``."""

    # websocket operations hold subscription slots (guards.subscriptions)
    graphql_transport_ws_handler_class = LimitedTransportWSHandler
    graphql_ws_handler_class = LimitedWSHandler

    def __init__(self, app_state: State, **kwargs: Any) -> None:
        limits = kwargs.pop("limits")
        self.tokens: TokenTable = kwargs.pop("tokens")
        self.client_limits: ClientLimits | None = kwargs.pop("client_limits", None)
        self.locale: Locale = kwargs.pop("locale", DEFAULT_LOCALE)  # MNEMOQL_LOCALE
        super().__init__(
            build_schema(
                max_depth=limits.max_query_depth,
                max_aliases=limits.max_aliases,
                max_tokens=limits.max_query_tokens,
                extensions=[MutationDeadline, input_guard(limits), OperationLabel],
            ),
            **kwargs,
        )
        self.app_state = app_state
        self.limits = limits
        self.parse_budget = ParseBudget()
        self.refusal_pause = RefusalPause()
        self.persisted = PersistedQueries()  # Apollo's automatic persisted queries

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> RequestContext:
        named = request.headers.get(SESSION_HEADER)
        grant = grant_of(request.scope)
        # a token's calls share the token's session; a websocket learns its token later
        anonymous = not named and (
            grant.caller is None if grant is not None else isinstance(request, WebSocket)
        )
        context = RequestContext(
            None,
            session=named,
            client_session=client_session(request, response) if anonymous else None,
            locale=preferred(request.headers.get("accept-language"), self.locale),
        )
        if grant is not None:
            await self._bind(context, grant)
        return context

    async def _bind(self, context: RequestContext, grant: Grant) -> None:
        spaces: Spaces = self.app_state.spaces
        try:
            memory = await spaces.get(grant.space)
        except MnemoError as exc:
            context.failure = exc
            return
        context.bind(memory, grant.space, grant.scopes, grant.caller)

    def is_websocket_origin_allowed(self, request: WebSocket, origin: str) -> bool:
        return True  # guards.HostGuard has checked Host and Origin: one rule for every route

    async def pick_websocket_subprotocol(self, request: WebSocket) -> str | None:
        # graphql-transport-ws when the client offers it at all: the legacy graphql-ws carries
        # subscriptions only, and clients such as gql offer it first
        if GRAPHQL_TRANSPORT_WS_PROTOCOL in request.scope.get("subprotocols", []):
            return GRAPHQL_TRANSPORT_WS_PROTOCOL
        return await super().pick_websocket_subprotocol(request)

    async def on_ws_connect(self, context: RequestContext) -> UnsetType | dict[str, object] | None:
        if context.scopes or context.failure is not None:
            return ACCEPTED
        grant = self.tokens.lookup(token_from_params(context.connection_params))
        if grant is None:
            raise ConnectionRejectionError({"code": "UNAUTHENTICATED"})
        await self._bind(context, grant)
        return ACCEPTED

    def parse_json(self, data: str | bytes) -> Any:
        # strawberry answers these with a 500: bytes that are not UTF-8, nesting deeper than
        # the parser's recursion limit, and JSON that is not an object (it calls `.get`)
        note_body(data)  # InputGuard skips its walk for lone surrogates when none can be there
        try:
            with collector_paused(len(data)):
                parsed = super().parse_json(data)
        except (UnicodeDecodeError, RecursionError) as exc:
            raise HTTPException(400, message("http.not_json", "en")) from exc
        if not isinstance(parsed, dict | list):
            raise HTTPException(400, message("http.not_object", "en"))
        return parsed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        started = time.perf_counter()
        request = Request(scope, receive)
        media = negotiate(request.headers.get("accept"))
        request.state.media_type = media
        request.state.codes = set()
        try:
            response = await self.run(request)
        except HTTPException as exc:
            allow = getattr(exc, "allow", "GET, POST" if exc.status_code == 405 else None)
            locale = preferred(request.headers.get("accept-language"), self.locale)
            response = error_response(
                exc.status_code, exc.reason, media, allow=allow, locale=locale
            )
            if (seen := observation()) is not None:
                seen.codes.append(
                    json.loads(bytes(response.body))["errors"][0]["extensions"]["code"]
                )
        await self.refusal_pause.after(request.state.codes, started)  # guards.RefusalPause
        await response(scope, receive, send)

    async def execute_single(
        self,
        request: Request,
        request_adapter: AsyncHTTPRequestAdapter,
        sub_response: Response,
        context: RequestContext,
        root_value: None,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        try:
            request_data, register = self.persisted.resolve(request_data)
        except PersistedQueryRefused as exc:
            return ExecutionResult(data=None, errors=[exc.error])
        method = request_adapter.method
        allowed = {OperationType.QUERY}
        if method == "POST":
            allowed.add(OperationType.MUTATION)

        async def run() -> ExecutionResult:
            return await self.schema.execute(
                request_data.query,
                root_value=root_value,
                variable_values=request_data.variables,
                context_value=context,
                operation_name=request_data.operation_name,
                allowed_operation_types=allowed,
                operation_extensions=request_data.extensions,
            )

        try:
            result = await within_deadline(
                run,
                self.limits.query_timeout_s,
                self.limits.mutation_timeout_s,
                locale=context.locale,
            )
            query = request_data.query
            ran = result.data is not None or any(e.path for e in result.errors or [])
            if register is not None and query is not None and ran:
                self.persisted.register(register, query)  # it parsed, validated and ran
            return result
        except InvalidOperationTypeError as exc:
            if exc.operation_type is OperationType.SUBSCRIPTION:
                return websocket_required(exc.operation_type)
            raise MethodRefused(message("http.mutation_post", "en"), allow="POST") from exc
        except CannotGetOperationTypeError as exc:
            return unknown_operation(exc.as_http_error_reason())
        except MissingQueryError as exc:
            raise HTTPException(400, message("http.no_query", "en")) from exc

    async def parse_http_body(
        self, request: AsyncHTTPRequestAdapter
    ) -> GraphQLRequestData | list[GraphQLRequestData]:
        size = len(await request.get_body()) if request.method == "POST" else 0
        await self.parse_budget.turn(size)  # large bodies take turns (guards.ParseBudget)
        started = time.perf_counter()
        try:
            data = await super().parse_http_body(request)
        finally:
            self.parse_budget.spent(size, time.perf_counter() - started)
        for item in data if isinstance(data, list) else [data]:
            if not isinstance(item.operation_name, str | None):
                raise HTTPException(400, message("http.operation_name", "en"))
        return data

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        sub = await super().get_sub_response(request)
        sub.media_type = request.state.media_type  # read back by create_response
        request.state.sub_response = sub  # process_result sets a request error's status here
        return sub

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        codes = {(e.extensions or {}).get("code") for e in result.errors or []}
        if (seen := observation()) is not None:  # the metrics' code: the first error's
            seen.codes.extend(str((e.extensions or {}).get("code")) for e in result.errors or [])
        getattr(request.state, "codes", set[object]()).update(codes)  # read by __call__
        if "STORE_UNAVAILABLE" in codes:
            # the next request of this space (or /readyz) tries to reopen its store
            grant = grant_of(request.scope)
            if grant is not None:
                self.app_state.spaces.mark_down(grant.space)
        if PERSISTED_NOT_FOUND in codes:  # a cache must not keep the miss (web.persisted)
            request.state.sub_response.headers["cache-control"] = "no-store"
        body = await super().process_result(request, result)
        status = shape(body, request.state.media_type)
        if status != 200:
            request.state.sub_response.status_code = status
        return body

    def create_response(
        self, response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse], sub_response: Response
    ) -> Response:
        response = super().create_response(response_data, sub_response)
        media = getattr(sub_response, "media_type", None) or JSON
        response.headers["content-type"] = content_type(media)
        return response

    async def render_graphql_ide(self, request: Request) -> Response:
        return FileResponse(STATIC / "graphiql.html")


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
