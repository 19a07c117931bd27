"""Small hand-made save plans for the store contract suite (8-dimensional unit vectors)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnemoql.engine.drafts import EntityDraft, EventDraft, RelationDraft, SavePlan
from mnemoql.engine.models import Chunk, EntityLabel, MemoryMeta, RelType, Vector
from mnemoql.engine.store.base import Store
from mnemoql.engine.text import content_hash, text_hash

DIMS = 8
META = MemoryMeta(model="test-embedder", dimensions=DIMS, updated_at="2026-03-01T09:00:00+08:00")


def vec(*weights: float) -> Vector:
    """A unit vector from leading weights (the rest zero): ``vec(0, 1)`` is axis 1."""
    v = np.zeros(DIMS, dtype=np.float32)
    v[: len(weights)] = weights
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


def axis(i: int) -> Vector:
    v = np.zeros(DIMS, dtype=np.float32)
    v[i] = 1.0
    return v


def at_cosine(c: float) -> Vector:
    """A unit vector whose cosine with ``axis(0)`` is ``c``."""
    return vec(c, float(np.sqrt(max(0.0, 1.0 - c * c))))


def chunks_for(content: str, vectors: Sequence[Vector]) -> list[Chunk]:
    """One chunk per vector over equal slices of ``content`` (event_id filled by the store)."""
    out = []
    n = len(vectors)
    step = max(1, len(content) // max(1, n))
    for i, v in enumerate(vectors):
        start = i * step
        end = len(content) if i == n - 1 else start + step
        text = content[start:end]
        out.append(Chunk("", i, start, end, text, text_hash(text), v))
    return out


def event(
    ref: str,
    vector: Vector | None = None,
    *,
    summary: str | None = None,
    content: str | None = None,
    chunk_vectors: Sequence[Vector] = (),
    given_id: str | None = None,
    time: str | None = None,
) -> EventDraft:
    body = content if content is not None else f"content of {ref}: " + "x" * 40
    return EventDraft(
        ref=ref,
        summary=summary if summary is not None else f"summary of {ref}",
        content=body,
        time=time,
        content_hash=content_hash(body),
        embedding=vector,
        chunks=chunks_for(body, chunk_vectors),
        given_id=given_id,
    )


def entity(
    ref: str,
    label: EntityLabel,
    name: str,
    aliases: Sequence[str] = (),
    vector: Vector | None = None,
    *,
    description: str | None = None,
    merge_into: str | None = None,
) -> EntityDraft:
    return EntityDraft(ref, label, name, list(aliases), description, vector, merge_into)


def person(
    ref: str, name: str, aliases: Sequence[str] = (), vector: Vector | None = None, **kw: Any
) -> EntityDraft:
    return entity(ref, "Person", name, aliases, vector, **kw)


def concept(
    ref: str, name: str, aliases: Sequence[str] = (), vector: Vector | None = None, **kw: Any
) -> EntityDraft:
    return entity(ref, "Concept", name, aliases, vector, **kw)


def location(
    ref: str, name: str, aliases: Sequence[str] = (), vector: Vector | None = None, **kw: Any
) -> EntityDraft:
    return entity(ref, "Location", name, aliases, vector, **kw)


def rel(
    kind: RelType, source: str, target: str, *, event_ref: str | None = None, **props: Any
) -> RelationDraft:
    """A relation draft; ``event_ref`` names the event a HAS_ATTITUDE was stated in."""
    return RelationDraft(kind, source, target, dict(props), event_ref=event_ref)


def plan(
    events: Sequence[EventDraft] = (),
    entities: Sequence[EntityDraft] = (),
    relations: Sequence[RelationDraft] = (),
    *,
    day: str = "2026-03-01",
    clock: str = "10:00:00",
    key: str | None = None,
    meta: MemoryMeta = META,
) -> SavePlan:
    return SavePlan(
        events=list(events),
        entities=list(entities),
        relations=list(relations),
        create_time=f"{day}T{clock}+08:00",
        create_date=day,
        meta=meta,
        idempotency_key=key,
    )


async def save_one(store: Store, vector: Vector | None = None, **kw: Any) -> str:
    """Save a plan of one event (kw: event() options plus day/clock); return its id."""
    plan_kw = {k: kw.pop(k) for k in ("day", "clock") if k in kw}
    result = await store.apply_save(plan([event("e", vector, **kw)], **plan_kw))
    return result.event_ids[0]
