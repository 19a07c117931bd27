"""The per-request context: the memory of the caller's space and fresh DataLoaders."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from strawberry.dataloader import DataLoader

from engine.memory import Memory
from engine.models import Chunk, Direction, Neighbour, Node, RelType

_NKey = tuple[str, RelType, Direction, int, str | None]


class RequestLoaders:
    """Batches node, relation and chunk reads made while resolving one request."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._nodes = DataLoader[str, Node | None](load_fn=self._load_nodes)
        self._rels = DataLoader[_NKey, list[Neighbour]](load_fn=self._load_neighbours)
        self._chunks = DataLoader[str, list[Chunk]](load_fn=self._load_chunks)

    async def node(self, node_id: str) -> Node | None:
        return await self._nodes.load(node_id)

    async def neighbours(
        self, node_id: str, rel_type: RelType, direction: Direction, limit: int, after: str | None
    ) -> list[Neighbour]:
        return await self._rels.load((node_id, rel_type, direction, limit, after))

    async def chunks(self, event_id: str) -> list[Chunk]:
        return await self._chunks.load(event_id)

    async def _load_nodes(self, ids: Sequence[str]) -> list[Node | None]:
        nodes = await self.memory.nodes(list(ids))
        return list(nodes)

    async def _load_neighbours(self, keys: Sequence[_NKey]) -> list[list[Neighbour]]:
        groups: dict[tuple[RelType, Direction, int, str | None], list[str]] = defaultdict(list)
        for node_id, rel, direction, limit, after in keys:
            groups[(rel, direction, limit, after)].append(node_id)
        found: dict[_NKey, list[Neighbour]] = {}
        for (rel, direction, limit, after), ids in groups.items():
            rows = await self.memory.neighbours(ids, rel, direction, limit, after)
            for node_id in ids:
                found[(node_id, rel, direction, limit, after)] = rows.get(node_id, [])
        return [found[k] for k in keys]

    async def _load_chunks(self, ids: Sequence[str]) -> list[list[Chunk]]:
        rows = await self.memory.store.get_chunks(list(ids))
        return [rows.get(i, []) for i in ids]


@dataclass
class RequestContext:
    memory: Memory
    session: str | None = None
    scopes: frozenset[str] = frozenset({"read", "write"})
    loaders: RequestLoaders = field(init=False)

    def __post_init__(self) -> None:
        self.loaders = RequestLoaders(self.memory)
