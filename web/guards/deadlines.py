"""Per-operation time limits: ``query_timeout_s`` for a query, ``mutation_timeout_s`` for a
mutation. ``within_deadline`` runs one GraphQL operation under the query deadline;
``MutationDeadline`` (a schema extension) moves it once the operation turns out to be a
mutation. Running out gives a ``TIMEOUT`` error. Subscriptions are not limited.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from mnemoql.engine.messages import Locale, message

log = logging.getLogger("mnemoql.guards")


@dataclass(slots=True)
class _Deadline:
    timeout: asyncio.Timeout
    query_s: float
    mutation_s: float
    mutation: bool = False

    @property
    def seconds(self) -> float:
        return self.mutation_s if self.mutation else self.query_s


_CURRENT: ContextVar[_Deadline | None] = ContextVar("mnemoql_deadline", default=None)


class MutationDeadline(SchemaExtension):
    """Gives a mutation the longer ``mutation_timeout_s`` once its type is known."""

    def on_execute(self) -> Iterator[None]:
        deadline = _CURRENT.get()
        if deadline is not None and (
            self.execution_context.operation_type is OperationType.MUTATION
        ):
            deadline.mutation = True
            loop = asyncio.get_running_loop()
            deadline.timeout.reschedule(loop.time() + deadline.mutation_s)
        yield


def timeout_message(seconds: float, locale: Locale = "en") -> str:
    """What a caller is told when an operation ran out of time (GraphQL and MCP alike)."""
    return message("timeout", locale, seconds=f"{seconds:g}")


def timeout_result(seconds: float, locale: Locale = "en") -> ExecutionResult:
    """A ``TIMEOUT`` error whose message is in ``locale``; both languages in its extensions."""
    en, zh = timeout_message(seconds), timeout_message(seconds, "zh")
    shown = zh if locale == "zh" else en
    error = GraphQLError(shown, extensions={"code": "TIMEOUT", "en": en, "zh": zh})
    return ExecutionResult(data=None, errors=[error])


async def within_deadline(
    run: Callable[[], Awaitable[ExecutionResult]],
    query_s: float,
    mutation_s: float,
    locale: Locale = "en",
) -> ExecutionResult:
    """``run()`` under the query deadline (a mutation's is moved by ``MutationDeadline``);
    running out answers in ``locale`` (the request's language)."""
    timeout = asyncio.timeout(query_s)
    deadline = _Deadline(timeout, query_s, mutation_s)
    token = _CURRENT.set(deadline)
    try:
        async with timeout:
            return await run()
    except TimeoutError:
        if not timeout.expired():
            raise
        kind = "mutation" if deadline.mutation else "query"
        log.warning("a GraphQL %s ran out of time (%g s) and was cancelled", kind, deadline.seconds)
        return timeout_result(deadline.seconds, locale)
    finally:
        _CURRENT.reset(token)
