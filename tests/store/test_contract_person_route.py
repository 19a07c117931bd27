"""The person route (issue #25 item 4, "who in the question"), on every store.

A question that names a Person the memory knows ("What did Caroline research?") ranks the
messages adjacent to that Person (a named speaker's own turns, PARTICIPATED_IN; turns that
mention them) as one more list of the records' fusion (``records.person_weight``). The route is
the chunk route under an entity filter, read through the ``Store`` protocol, so both stores
rank it alike.

One conversation of 40 turns, hand-made 8-dimensional vectors; the question is axis 0.
Melanie's turns (even) are nearer it (0.95 falling) than Caroline's (odd, 0.60 falling).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import numpy as np

from mnemoql.engine.config import RecordWeights
from mnemoql.engine.cursors import CursorStore
from mnemoql.engine.models import RelationDraft, Vector
from mnemoql.engine.retrieval.pipeline import Retriever, SearchRequest
from mnemoql.engine.sessions import SessionStore
from mnemoql.engine.store.base import Store
from tests.store._builders import DIMS, META, axis, concept, event, person, plan, rel, vec

TURNS = 40


class QueryEmbedder:
    model = META.model
    dimensions = DIMS

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> Vector:
        return np.stack([axis(0) for _ in texts])


def _turn_vector(i: int) -> Vector:
    c = 0.95 - 0.01 * i if i % 2 == 0 else 0.60 - 0.01 * i
    return vec(c, float(np.sqrt(1 - c * c)))


async def _talk(store: Store) -> None:
    speakers = ("Melanie", "Caroline")
    events = [
        event(
            f"t{i}",
            _turn_vector(i),
            content=f"{speakers[i % 2]}: turn number {i}",
            chunk_vectors=[_turn_vector(i)],
            given_id=f"talk_ch1_e{i}",
        )
        for i in range(TURNS)
    ]
    people = [person("mel", "Melanie"), person("car", "Caroline"), concept("pot", "Pottery")]
    links: list[RelationDraft] = [
        rel("PARTICIPATED_IN", "mel" if i % 2 == 0 else "car", f"t{i}") for i in range(TURNS)
    ]
    links.append(rel("MENTIONS", "t0", "pot"))
    await store.apply_save(plan(events, people, links))


def _retriever(store: Store, person_weight: float) -> Retriever:
    cursors = CursorStore()
    r = Retriever(
        store,
        QueryEmbedder(),  # type: ignore[arg-type]
        SessionStore(cursors=cursors),
        cursors,
        today=lambda: date(2026, 3, 2),
        # the chunk route and the person route only (BM25 would find the name's word too)
        records=RecordWeights(
            lexical_weight=0.0,
            speaker_weight=0.0,
            window_weight=0.0,
            followup_lexical_weight=0.0,
            followup_window_weight=0.0,
            followup_neighbour_share=0.0,
            person_weight=person_weight,
        ),
    )
    r.mmr_lambda = 1.0  # rank order only (the hand-made vectors are near one another)
    return r


async def _ids(r: Retriever, query: str, session: str = "s") -> list[str]:
    out = await r.search(SearchRequest(query=query), session)
    return [i.event_id for i in out.page.items]


def _caroline(ids: list[str]) -> list[str]:
    return [i for i in ids if int(i.rsplit("_e", 1)[1]) % 2 == 1]


async def test_a_question_naming_a_person_ranks_their_turns(store: Store) -> None:
    await _talk(store)
    ids = await _ids(_retriever(store, 2.0), "What did Caroline research?")
    # her best turn first (in both lists), before Melanie's nearer ones
    assert ids[0] == "talk_ch1_e1"
    assert len(_caroline(ids)) >= 2


async def test_without_the_person_route_the_nearer_speaker_fills_the_page(store: Store) -> None:
    await _talk(store)
    ids = await _ids(_retriever(store, 0.0), "What did Caroline research?")
    assert ids == ["talk_ch1_e0", "talk_ch1_e2", "talk_ch1_e4", "talk_ch1_e6"]


async def test_a_name_the_memory_does_not_know_as_a_person_changes_nothing(store: Store) -> None:
    await _talk(store)
    r = _retriever(store, 2.0)
    # an unknown name, and a Concept's name: no Person, no route
    for query in ("What did Zelda research?", "What about Pottery?"):
        ids = await _ids(r, query, query)
        assert ids == ["talk_ch1_e0", "talk_ch1_e2", "talk_ch1_e4", "talk_ch1_e6"]
