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

from mnemoql.engine.drafts import RelationDraft
from mnemoql.engine.models import Vector
from mnemoql.engine.retrieval.pipeline import Retriever
from mnemoql.engine.store.base import Store
from tests.store._builders import axis, concept, event, person, plan, rel
from tests.store._messages import at, message_retriever, page, record_of

TURNS = 40


def _turn_vector(i: int) -> Vector:
    return at(0.95 - 0.01 * i if i % 2 == 0 else 0.60 - 0.01 * i)


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
    # the chunk route and the person route only (BM25 would find the name's word too)
    return message_retriever(store, lambda _q: axis(0), person_weight=person_weight)


async def _ids(r: Retriever, query: str, session: str = "s") -> list[str]:
    return (await page(r, query, session))[0]


def _caroline(ids: list[str]) -> list[str]:
    return [i for i in ids if record_of(i) % 2 == 1]


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
