"""How errors leave the API: every client mistake with its message and a stable code, only true
internal faults masked.

Codes, by where an error comes from:

- ``MnemoError`` raised by the engine or a resolver: its own code (``engine.errors``).
- ``GRAPHQL_PARSE_FAILED``: the document is not GraphQL (a syntax error, too many tokens).
- ``GRAPHQL_VALIDATION_FAILED``: the document does not fit the schema (unknown field, wrong
  literal argument, depth or alias limit, several operations and no ``operationName``).
- ``BAD_USER_INPUT``: a variable or argument value that does not fit its type (``$n: Int!``
  given ``"abc"``, missing or null; an unknown input field inside a variable).
- ``BAD_REQUEST``: an ``operationName`` the document does not define.
- ``OPERATION_NOT_SUPPORTED``: an operation type the transport does not carry (a query over
  the legacy ``graphql-ws`` websocket protocol, which carries subscriptions only).
- ``INTERNAL_SERVER_ERROR``: anything else. Logged once with its traceback; the client sees
  only ``Internal server error``.

Expected errors are never logged with a traceback (``MemorySchema.process_errors``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from graphql import GraphQLError, GraphQLSyntaxError, OperationDefinitionNode
from strawberry import Schema
from strawberry.extensions import MaskErrors, SchemaExtension
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionContext

from mnemoql.engine.errors import MnemoError
from mnemoql.schema.locale import request_locale
from mnemoql.schema.wording import zh_wording

log = logging.getLogger("mnemoql.errors")

INTERNAL = "INTERNAL_SERVER_ERROR"
PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"
BAD_USER_INPUT = "BAD_USER_INPUT"
BAD_REQUEST = "BAD_REQUEST"
NOT_SUPPORTED = "OPERATION_NOT_SUPPORTED"


def request_error(message: str, code: str, **details: Any) -> GraphQLError:
    """An error about the request as a whole (no field path), with its code."""
    return GraphQLError(message, extensions={"code": code, **details})


def _with(error: GraphQLError, message: str, extensions: dict[str, Any]) -> GraphQLError:
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        extensions=extensions,
    )


def code_of(error: GraphQLError) -> str:
    """The stable code ``CodedErrors`` gives this error (``INTERNAL_SERVER_ERROR`` when it
    is none of the expected kinds)."""
    original = error.original_error
    if isinstance(original, MnemoError):
        return original.code
    if isinstance(error, GraphQLSyntaxError):
        return PARSE_FAILED
    if isinstance(original, CannotGetOperationTypeError):
        return BAD_REQUEST
    if isinstance(original, InvalidOperationTypeError):
        return NOT_SUPPORTED
    given = (error.extensions or {}).get("code")
    if original is None:
        if isinstance(given, str):
            return given
        # no path: the validator; a path: argument coercion during execution
        return VALIDATION_FAILED if error.path is None else BAD_USER_INPUT
    if isinstance(original, GraphQLError) and error.path is None:
        # graphql-core's variable coercion wraps the coercion error of the value
        return BAD_USER_INPUT
    return INTERNAL


class CodedErrors(MaskErrors):
    """Gives every error ``extensions.code`` (see the module docstring); masks internal ones."""

    def __init__(self) -> None:
        super().__init__(error_message="Internal server error")

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        return [self._one(e) for e in errors]

    def _one(self, error: GraphQLError) -> GraphQLError:
        code = code_of(error)
        original = error.original_error
        if isinstance(original, MnemoError):
            # the message in the request's language; both languages in the extensions
            locale = request_locale(self.execution_context.context)
            return _with(error, original.text(locale), original.extensions())
        if code == INTERNAL:
            log.error("internal error at %s", error.path, exc_info=original)
            return GraphQLError(
                "Internal server error",
                nodes=error.nodes,
                positions=error.positions,
                path=error.path,
                extensions={"code": INTERNAL},
            )
        message = error.message
        if code == NOT_SUPPORTED:
            # the only transport that refuses an operation type after parsing it (HTTP answers
            # before: web.graphql_http)
            message += (
                " over this websocket protocol: the legacy graphql-ws carries subscriptions "
                "only; send queries and mutations over HTTP or graphql-transport-ws"
            )
        extensions = {**(error.extensions or {}), "code": code}
        # both languages, as for a MnemoError (an error that brought its own keeps them)
        extensions.setdefault("zh", zh_wording(message, code))
        extensions.setdefault("en", message)
        locale = request_locale(self.execution_context.context)
        shown = extensions["zh"] if locale == "zh" else extensions["en"]
        return _with(error, shown, extensions)


class MemorySchema(Schema):
    """The strawberry schema, without strawberry's logging of every error with its traceback:
    expected errors are the client's business, internal ones ``CodedErrors`` logs once."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        for error in errors:
            if code_of(error) != INTERNAL:
                log.debug("client error %s: %s", code_of(error), error.message)


class OneOperation(SchemaExtension):
    """A document with several operations needs ``operationName`` (GraphQL spec, "GetOperation"):
    strawberry would silently run the first one."""

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        named = getattr(context, "_provided_operation_name", None)
        if document is not None and named is None:
            operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
            if len(operations) > 1:
                names = ", ".join(o.name.value for o in operations if o.name) or "none"
                # set before validation runs, so strawberry returns it as the request's error
                context.pre_execution_errors = [
                    request_error(
                        "the document has several operations; say which to run with "
                        f"operationName (operations: {names})",
                        VALIDATION_FAILED,
                    )
                ]
        yield
