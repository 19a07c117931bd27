"""A retriever over hand-made conversation turns, shared by the records-ranking contract tests
(follow-ups, the person route): one place builds the retriever, its query embedder and the
records' weights with every route but the one under test switched off."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

import numpy as np

from mnemoql.engine.config import RecordWeights
from mnemoql.engine.cursors import CursorStore
from mnemoql.engine.models import Vector
from mnemoql.engine.retrieval.pipeline import Retriever, SearchRequest
from mnemoql.engine.retrieval.ranking import Ranker
from mnemoql.engine.sessions import SessionStore
from mnemoql.engine.store.base import Store
from tests.store._builders import DIMS, META, vec

# every route of the records' ranking beside the chunk route, off
ROUTES_OFF: dict[str, Any] = {
    "lexical_weight": 0.0,
    "speaker_weight": 0.0,
    "window_weight": 0.0,
    "neighbour_share": 0.0,
    "person_weight": 0.0,
    "dated_weight": 0.0,
    "followup_lexical_weight": 0.0,
    "followup_speaker_weight": 0.0,
    "followup_window_weight": 0.0,
    "followup_neighbour_share": 0.0,
}


class QueryEmbedder:
    """A query's vector is ``vector_of(query)`` (the store's vectors are made by hand)."""

    model = META.model
    dimensions = DIMS

    def __init__(self, vector_of: Callable[[str], Vector]) -> None:
        self.vector_of = vector_of

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> Vector:
        return np.stack([self.vector_of(t) for t in texts])


def _today() -> date:
    return date(2026, 3, 2)


def message_retriever(
    store: Store, vector_of: Callable[[str], Vector], **weights: Any
) -> Retriever:
    """A retriever ranking records by the chunk route alone plus ``weights``
    (``RecordWeights`` fields), in rank order only (MMR lambda 1: the hand-made vectors are
    near one another)."""
    cursors = CursorStore()
    ranker = Ranker(store, _today, records=RecordWeights(**{**ROUTES_OFF, **weights}))
    ranker.mmr_lambda = 1.0
    return Retriever(
        store,
        QueryEmbedder(vector_of),  # type: ignore[arg-type]
        SessionStore(cursors=cursors),
        cursors,
        today=_today,
        ranker=ranker,
    )


def at(c: float) -> Vector:
    """A unit vector at cosine ``c`` with axis 0."""
    return vec(c, float(np.sqrt(1 - c * c)))


async def page(
    r: Retriever, query: str | None, session: str = "s", cursor: str | None = None
) -> tuple[list[str], str | None]:
    """The ids a search delivers, and its page's cursor."""
    out = await r.search(SearchRequest(query=query, cursor=cursor), session)
    return [i.event_id for i in out.page.items], out.page.cursor


def record_of(event_id: str) -> int:
    """The record number of a positional id (``talk_ch1_e7`` -> 7)."""
    return int(event_id.rsplit("_e", 1)[1])
