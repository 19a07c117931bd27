"""The Person/Concept search of ``Retriever`` (``pipeline``): the top entities of a label by
exact name, then by the query's vector, each with its one-hop neighbours (newest first within a
relationship type). No session history, no cursor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import Entity, EntityLabel, Event, MemoryMeta, Neighbour, Vector
from mnemoql.engine.store.base import Store
from mnemoql.engine.text import normalise_name


@dataclass(frozen=True, slots=True)
class TargetedHit:
    node: Entity
    score: float
    exact: bool
    neighbours: tuple[tuple[Neighbour, Entity | Event], ...]


@dataclass(frozen=True, slots=True)
class TargetedPage:
    target: str
    query: str
    hits: tuple[TargetedHit, ...]


TARGET_TOP = 3
TARGET_NEIGHBOURS = 20


class TargetedSearch:
    """``Retriever``'s Person/Concept search; ``Retriever`` sets the store and the meta check
    and query embedding its other operations share."""

    store: Store
    _check_meta: Callable[[], Awaitable[MemoryMeta | None]]
    _embed_query: Callable[[str], Awaitable[Vector]]

    async def targeted(self, target: str, query: str | None) -> TargetedPage:
        """Person/Concept search: top 3 plus one-hop context; no history, no cursor."""
        if target not in ("Person", "Concept"):
            raise InvalidInput(
                "target must be Event, Person or Concept",
                zh="target_label 仅支持 Event/Person/Concept",
            )
        text = (query or "").strip()
        if not text:
            raise InvalidInput(
                "a Person/Concept search needs a query", zh="定向检索需要 query_text"
            )
        await self._check_meta()
        label: EntityLabel = "Person" if target == "Person" else "Concept"
        exact_ids = await self.store.resolve_terms(normalise_name(text))
        exact_nodes = [
            n
            for n in await self.store.get_nodes(sorted(exact_ids))
            if isinstance(n, Entity) and n.label == label
        ]
        ranked: list[tuple[Entity, float, bool]] = [(n, 1.0, True) for n in exact_nodes][
            :TARGET_TOP
        ]
        if len(ranked) < TARGET_TOP:
            vector = await self._embed_query(text)
            seen = {n.id for n, _, _ in ranked}
            for ent, cos in await self.store.entity_vector_top(
                label, vector, TARGET_TOP + len(seen)
            ):
                if ent.id not in seen and len(ranked) < TARGET_TOP:
                    ranked.append((ent, cos, False))
        hits = []
        rows = await self.store.neighbours([n.id for n, _, _ in ranked], None, "both", 200)
        for node, score, exact in ranked:
            mine = rows.get(node.id, [])
            others = await self.store.get_nodes([r.other_id for r in mine])
            pairs = [(r, o) for r, o in zip(mine, others, strict=True) if o is not None]
            pairs.sort(key=lambda p: (p[0].rel.type, _neg_time(p[1])))
            hits.append(TargetedHit(node, score, exact, tuple(pairs[:TARGET_NEIGHBOURS])))
        return TargetedPage(target, text, tuple(hits))

def _neg_time(node: Entity | Event) -> str:
    # create_time DESC inside one relationship type: invert the ISO string's sort order.
    return "".join(chr(0x10FFFF - ord(c)) for c in node.create_time)
