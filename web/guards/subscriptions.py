"""Websocket operations within the client's and the service's subscription caps
(``limits.ClientLimits``): strawberry's handlers for both websocket protocols, holding one slot
per running operation (a subscription, or a query sent over the socket) while it runs.

An operation over a cap gets the protocol's error message with the code ``RATE_LIMITED``; the
socket and its other operations go on. The client is the token the socket authenticated with
(its header or its ``connection_init`` payload), else its address.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from graphql import GraphQLError
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import ErrorMessage
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.subscriptions.protocols.graphql_ws.types import (
    ErrorMessage as LegacyErrorMessage,
)

from mnemoql.resolvers.context import RequestContext
from mnemoql.web.auth import TokenTable, token_from_params
from mnemoql.web.guards.limits import ClientLimits, Refusal, client_key


@runtime_checkable
class LimitedView(Protocol):
    """What these handlers read from their view (``web.graphql_view.MemoryGraphQL``)."""

    tokens: TokenTable
    client_limits: ClientLimits | None


def _slots(
    handler: BaseGraphQLTransportWSHandler[RequestContext, None]
    | BaseGraphQLWSHandler[RequestContext, None],
) -> tuple[ClientLimits | None, str]:
    """The view's ``ClientLimits`` and the client of this socket."""
    view, socket = handler.view, handler.websocket
    # strawberry types them as its base classes; ours are MemoryGraphQL and strawberry.asgi's
    assert isinstance(view, LimitedView) and isinstance(socket, ASGIWebSocketAdapter)
    params = handler.context.connection_params
    return view.client_limits, client_key(socket.ws.scope, view.tokens, token_from_params(params))


def _error(refused: Refusal, context: RequestContext) -> GraphQLError:
    """The refusal in the socket's language (its ``Accept-Language``, else ``MNEMOQL_LOCALE``),
    both languages in the extensions."""
    extensions = {"code": "RATE_LIMITED", "retryAfter": refused.retry_after_s}
    shown = refused.zh if context.locale == "zh" else refused.message
    return GraphQLError(shown, extensions={**extensions, "en": refused.message, "zh": refused.zh})


class LimitedTransportWSHandler(BaseGraphQLTransportWSHandler[RequestContext, None]):
    """graphql-transport-ws with subscription slots."""

    async def run_operation(self, operation: Operation[RequestContext, None]) -> None:
        limits, key = _slots(self)
        if limits is None:
            await super().run_operation(operation)
            return
        refused = limits.open_subscription(key)
        if refused is not None:
            self.operations.pop(operation.id, None)
            error = _error(refused, self.context).formatted
            message: ErrorMessage = {"id": operation.id, "type": "error", "payload": [error]}
            await self.send_message(message)
            return
        try:
            await super().run_operation(operation)
        finally:
            limits.close_subscription(key)


class LimitedWSHandler(BaseGraphQLWSHandler[RequestContext, None]):
    """The legacy graphql-ws protocol with subscription slots."""

    async def handle_async_results(
        self,
        operation_id: str,
        query: str,
        operation_name: str | None,
        variables: dict[str, object] | None,
    ) -> None:
        limits, key = _slots(self)
        if limits is None:
            await super().handle_async_results(operation_id, query, operation_name, variables)
            return
        refused = limits.open_subscription(key)
        if refused is not None:
            self.tasks.pop(operation_id, None)
            error = _error(refused, self.context).formatted
            message: LegacyErrorMessage = {"type": "error", "id": operation_id, "payload": error}
            await self.send_message(message)
            return
        try:
            await super().handle_async_results(operation_id, query, operation_name, variables)
        finally:
            limits.close_subscription(key)
