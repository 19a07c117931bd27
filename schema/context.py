"""What schema types may ask of the request context (filled in by ``resolvers.context``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from strawberry.types import Info as _Info

if TYPE_CHECKING:
    from mnemoql.engine.memory import Memory
    from mnemoql.engine.messages import Locale as MessageLocale
    from mnemoql.engine.models import Chunk, Direction, Neighbour, Node, RelType


class Loaders(Protocol):
    """Per-request batching (DataLoaders) against N+1 queries."""

    async def node(self, node_id: str) -> Node | None: ...

    async def neighbours(
        self,
        node_id: str,
        rel_type: RelType,
        direction: Direction,
        limit: int,
        after: str | None,
        before: str | None = None,
        backward: bool = False,
    ) -> list[Neighbour]: ...

    async def chunks(self, event_id: str) -> list[Chunk]: ...


class Context(Protocol):
    memory: Memory
    loaders: Loaders
    session: str | None
    named_session: str | None  # the X-Memory-Session header only
    locale: MessageLocale  # Accept-Language, else MNEMOQL_LOCALE (schema.locale.chosen)


Info = _Info[Context, None]
