"""Websocket operations within the client's and the service's subscription caps
(``limits.ClientLimits``): strawberry's handlers for both websocket protocols, holding one slot
per running operation (a subscription, or a query sent over the socket) while it runs.

An operation over a cap gets the protocol's error message with the code ``RATE_LIMITED``; the
socket and its other operations go on. The client is the token the socket authenticated with
(its header or its ``connection_init`` payload), else its address.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLError
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import ErrorMessage
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.subscriptions.protocols.graphql_ws.types import (
    ErrorMessage as LegacyErrorMessage,
)

from mnemoql.web.auth import token_from_params
from mnemoql.web.guards.limits import ClientLimits, Refusal, client_key


def _slots(handler: Any) -> tuple[ClientLimits | None, str]:
    """The view's ``ClientLimits`` and the client of this socket."""
    view = handler.view
    limits: ClientLimits | None = getattr(view, "client_limits", None)
    scope = handler.websocket.ws.scope
    params = getattr(handler.context, "connection_params", None)
    return limits, client_key(scope, view.tokens, token_from_params(params))


def _error(refused: Refusal) -> GraphQLError:
    return GraphQLError(
        refused.message, extensions={"code": "RATE_LIMITED", "retryAfter": refused.retry_after_s}
    )


class LimitedTransportWSHandler(BaseGraphQLTransportWSHandler[Any, Any]):
    """graphql-transport-ws with subscription slots."""

    async def run_operation(self, operation: Any) -> None:
        limits, key = _slots(self)
        if limits is None:
            await super().run_operation(operation)
            return
        refused = limits.open_subscription(key)
        if refused is not None:
            self.operations.pop(operation.id, None)
            message: ErrorMessage = {
                "id": operation.id, "type": "error", "payload": [_error(refused).formatted]
            }  # fmt: skip
            await self.send_message(message)
            return
        try:
            await super().run_operation(operation)
        finally:
            limits.close_subscription(key)


class LimitedWSHandler(BaseGraphQLWSHandler[Any, Any]):
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
            message: LegacyErrorMessage = {
                "type": "error", "id": operation_id, "payload": _error(refused).formatted
            }  # fmt: skip
            await self.send_message(message)
            return
        try:
            await super().handle_async_results(operation_id, query, operation_name, variables)
        finally:
            limits.close_subscription(key)
