"""How errors leave the API: expected ones with their stable code, the rest masked."""

from __future__ import annotations

import logging

from graphql import GraphQLError
from strawberry.extensions import MaskErrors

from engine.errors import MnemoError

log = logging.getLogger("mnemoql.errors")


class CodedErrors(MaskErrors):
    """Maps ``MnemoError`` to ``extensions.code``; masks anything unexpected.

    GraphQL validation errors (unknown fields, wrong argument types) keep their message and get
    ``GRAPHQL_VALIDATION_FAILED``; an unexpected exception is logged with its traceback and the
    client sees only ``INTERNAL_SERVER_ERROR``.
    """

    def __init__(self) -> None:
        super().__init__(error_message="Internal server error")

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        return [self._one(e) for e in errors]

    def _one(self, error: GraphQLError) -> GraphQLError:
        original = error.original_error
        if isinstance(original, MnemoError):
            return GraphQLError(
                original.message,
                nodes=error.nodes,
                source=error.source,
                positions=error.positions,
                path=error.path,
                extensions=original.extensions(),
            )
        # a GraphQLError wrapping another: graphql-core refusing a variable's value (NaN or
        # Infinity for a Float) -- the client's mistake, reported like any validation error
        if original is None or isinstance(original, GraphQLError):
            code = (error.extensions or {}).get("code", "GRAPHQL_VALIDATION_FAILED")
            return GraphQLError(
                error.message,
                nodes=error.nodes,
                source=error.source,
                positions=error.positions,
                path=error.path,
                extensions={**(error.extensions or {}), "code": code},
            )
        log.error("internal error at %s", error.path, exc_info=original)
        return GraphQLError(
            "Internal server error",
            nodes=error.nodes,
            positions=error.positions,
            path=error.path,
            extensions={"code": "INTERNAL_SERVER_ERROR"},
        )
