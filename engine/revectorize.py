"""Re-vectorize (SPEC §1.12): compute every vector first, then swap them in one go.

Any embedding failure aborts before the store is touched, so the old vectors, chunks and
MemoryMeta stay exactly as they were.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from mnemoql.engine.errors import MnemoError, RevectorizeFailed
from mnemoql.engine.models import Chunk, MemoryMeta, Vector, VectorSet
from mnemoql.engine.providers.base import Embedder
from mnemoql.engine.store.base import Store
from mnemoql.engine.text import chunk_ranges, text_hash

STEP = 50  # texts per embed call: progress granularity (providers batch further themselves)

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass(frozen=True, slots=True)
class RevectorizeReport:
    model: str
    dimensions: int
    events: int
    persons: int
    concepts: int
    locations: int
    chunks: int


async def revectorize(
    store: Store,
    embedder: Embedder,
    lock: asyncio.Lock,
    now: Callable[[], datetime],
    progress: Progress | None = None,
) -> RevectorizeReport:
    """Re-embed every summary, name and chunk with the configured model and swap them in."""
    report = progress or (lambda phase, done, total: None)
    async with lock:
        events, entities = await store.all_for_revectorize()
        chunks: list[Chunk] = []
        for ev in events:
            for i, (s, e) in enumerate(chunk_ranges(len(ev.content))):
                piece = ev.content[s:e]
                chunks.append(Chunk(ev.id, i, s, e, piece, text_hash(piece)))
        texts = list(
            dict.fromkeys(
                [ev.summary for ev in events]
                + [ent.name for ent in entities]
                + [c.text for c in chunks]
            )
        )
        vectors: dict[str, Vector] = {}
        report("embedding", 0, len(texts))
        try:
            for start in range(0, len(texts), STEP):
                batch = texts[start : start + STEP]
                matrix = await embedder.embed(batch, "passage")
                vectors.update(zip(batch, np.asarray(matrix, dtype=np.float32), strict=True))
                report("embedding", min(start + STEP, len(texts)), len(texts))
        except MnemoError as exc:
            raise RevectorizeFailed(
                f"revectorize failed: {exc.message}; old vectors and metadata are unchanged",
                zh=f"重新向量化失败：{exc.zh}；旧向量与元数据未改动",
                cause=exc.code,
            ) from exc
        for c in chunks:
            c.embedding = vectors[c.text]
        meta = MemoryMeta(embedder.model, embedder.dimensions, now().isoformat())
        report("writing", 0, 1)
        await store.replace_vectors(
            VectorSet(
                events={ev.id: vectors[ev.summary] for ev in events},
                entities={ent.id: vectors[ent.name] for ent in entities},
                chunks=chunks,
                meta=meta,
            )
        )
        report("writing", 1, 1)
    labels = [ent.label for ent in entities]
    return RevectorizeReport(
        model=meta.model,
        dimensions=meta.dimensions,
        events=len(events),
        persons=labels.count("Person"),
        concepts=labels.count("Concept"),
        locations=labels.count("Location"),
        chunks=len(chunks),
    )
