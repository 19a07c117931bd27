"""The records' BM25 route with the question's word forms (issue #25, round 6), on every store.

A message states "They quoted me $2,500 ..., a gift from my colleague"; the questions ask
about "the initial quote" and "my colleagues". BM25 keeps words as written, so without word
forms no message matches the questions' words and the chunk route alone ranks; with
``records.lexical_word_forms`` ("number", the default: nouns in both numbers; "all": verb
forms too) the route reads "colleague" (and "quoted") through the store's own full-text index
(FTS5 embedded, Lucene in Neo4j).

One conversation of 12 turns, hand-made vectors: turn 0 nearest the question (0.95 falling),
the matching turn (11) farthest.
"""

from __future__ import annotations

from mnemoql.engine.models import Vector
from mnemoql.engine.store.base import Store
from tests.store._builders import axis, event, plan
from tests.store._messages import at, message_retriever, page

TURNS = 12
MATCHING = "talk_ch1_e11"
QUOTE = "How much more did I pay after the initial quote?"
COLLEAGUES = "What did I get from my colleagues?"


def _v(i: int) -> Vector:
    return at(0.95 - 0.05 * i)


async def _talk(store: Store) -> None:
    def content(i: int) -> str:
        if i == 11:
            return "User: They quoted me $2,500 for the trip to Japan, a gift from my colleague."
        return f"User: turn number {i} about the weather and the garden"

    events = [
        event(f"t{i}", _v(i), content=content(i), chunk_vectors=[_v(i)], given_id=f"talk_ch1_e{i}")
        for i in range(TURNS)
    ]
    await store.apply_save(plan(events))


async def _first(store: Store, forms: str, question: str) -> list[str]:
    r = message_retriever(store, lambda _q: axis(0), lexical_weight=2.0, lexical_word_forms=forms)
    return (await page(r, question, f"{forms}-{question}"))[0]


async def test_a_plural_in_the_question_finds_the_singular(store: Store) -> None:
    await _talk(store)
    assert (await _first(store, "number", COLLEAGUES))[0] == MATCHING


async def test_all_word_forms_find_the_verb_form_and_number_alone_does_not(store: Store) -> None:
    await _talk(store)
    assert (await _first(store, "all", QUOTE))[0] == MATCHING
    assert MATCHING not in await _first(store, "number", QUOTE)


async def test_without_word_forms_the_chunk_route_alone_ranks(store: Store) -> None:
    await _talk(store)
    for question in (COLLEAGUES, QUOTE):
        ids = await _first(store, "off", question)
        assert ids == ["talk_ch1_e0", "talk_ch1_e1", "talk_ch1_e2", "talk_ch1_e3"]
