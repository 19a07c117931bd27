"""The GraphQL view at ``/graphql``: strawberry's ASGI app with our request context (the
caller's memory space, session and locale), guards (deadlines, parse budgets, refusal pauses,
subscription slots), Apollo's persisted queries, the vendored GraphiQL page, and the
GraphQL-over-HTTP media types and statuses of ``web.graphql_http``. ``web.app`` mounts it.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from pathlib import Path
from typing import Any

from cross_web import AsyncHTTPRequestAdapter, HTTPException
from starlette.datastructures import State
from starlette.requests import Request
from starlette.responses import FileResponse, Response
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

from mnemoql.engine.errors import MnemoError
from mnemoql.engine.locale_choice import preferred
from mnemoql.engine.messages import DEFAULT_LOCALE, Locale, message
from mnemoql.engine.spaces import Spaces
from mnemoql.resolvers import build_schema
from mnemoql.resolvers.context import RequestContext
from mnemoql.web.auth import Grant, TokenTable, grant_of, token_from_params
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
    ClientLimits,
    MutationDeadline,
    ParseBudget,
    RefusalPause,
    collector_paused,
    input_guard,
    note_body,
    within_deadline,
)
from mnemoql.web.guards.subscriptions import LimitedTransportWSHandler, LimitedWSHandler
from mnemoql.web.observe import OperationLabel
from mnemoql.web.observe import current as observation
from mnemoql.web.persisted import NOT_FOUND as PERSISTED_NOT_FOUND
from mnemoql.web.persisted import PersistedQueries, PersistedQueryRefused

GRAPHIQL = Path(__file__).parent / "static" / "graphiql.html"
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
        return FileResponse(GRAPHIQL)
