"""How a follow-up ranks messages saved one at a time (issue #25 item 5), on every store.

A search that continues one (its cursor's next page, or the same question asked again in the
session) ranks records with ``records.followup_*`` instead of the first call's weights; a new
question in a session that was given other evidence ranks as a first call. The retriever reads
the store only through the ``Store`` protocol (the chunk route restricted to the session's
latest events), so both stores must tell the two apart the same way.

Two conversations, hand-made 8-dimensional vectors: chapter 1 answers question A (axis 0),
chapter 2 question B (axis 3). In chapter 1 the even turns match A (cosine 0.99 falling by
0.01 a turn), the odd turns barely (0.10 falling): short replies whose neighbours match.
"""

from __future__ import annotations

from mnemoql.engine.models import Vector
from mnemoql.engine.retrieval.pipeline import Retriever
from mnemoql.engine.store.base import Store
from tests.store._builders import axis, event, plan, vec
from tests.store._messages import at, message_retriever, page, record_of

A, B = "Which one was it?", "And the other thing?"
TURNS = 44


def _query(text: str) -> Vector:
    """Question A is axis 0, question B axis 3."""
    return axis(0) if text == A else axis(3)


def _a_turn(i: int) -> Vector:
    return at(0.99 - 0.01 * (i // 2) if i % 2 == 0 else 0.10 - 0.002 * i)


def _b_turn(i: int) -> Vector:
    c = 0.9 - 0.01 * i
    return vec(0, 0, float((1 - c * c) ** 0.5), c)


async def _talk(store: Store) -> None:
    def turn(chapter: int, i: int, v: Vector) -> object:
        return event(
            f"c{chapter}t{i}",
            v,
            content=f"User: record {chapter} {i}",
            chunk_vectors=[v],
            given_id=f"talk_ch{chapter}_e{i}",
        )

    await store.apply_save(plan([turn(1, i, _a_turn(i)) for i in range(TURNS)]))  # type: ignore[misc]
    await store.apply_save(plan([turn(2, i, _b_turn(i)) for i in range(TURNS)]))  # type: ignore[misc]


def _retriever(store: Store, followup_share: float) -> tuple[Retriever, list[bool]]:
    # the chunk route alone for the first call; a follow-up adds the neighbour share
    r = message_retriever(store, _query, followup_neighbour_share=followup_share)
    seen: list[bool] = []
    weights = r.ranker.record_weights

    def spy(followup: bool = False):  # type: ignore[no-untyped-def]
        seen.append(followup)
        return weights(followup)

    r.ranker.record_weights = spy  # type: ignore[method-assign]
    return r, seen


_ids = page


def _odd(ids: list[str]) -> list[str]:
    return [i for i in ids if record_of(i) % 2 == 1]


async def test_the_same_question_again_ranks_as_a_follow_up(store: Store) -> None:
    await _talk(store)
    r, seen = _retriever(store, 1.0)
    first, _ = await _ids(r, A, "s")
    assert first == ["talk_ch1_e0", "talk_ch1_e2", "talk_ch1_e4", "talk_ch1_e6"]
    again, _ = await _ids(r, A, "s")
    assert seen == [False, True]
    # the short replies next to the matching turns that are left come in with them
    assert _odd(again)


async def test_with_follow_ups_ranked_as_first_calls_the_replies_stay_out(store: Store) -> None:
    await _talk(store)
    r, seen = _retriever(store, 0.0)
    await _ids(r, A, "s")
    again, _ = await _ids(r, A, "s")
    assert again == ["talk_ch1_e8", "talk_ch1_e10", "talk_ch1_e12", "talk_ch1_e14"]
    # the same weights: nothing to tell apart, so no follow-up is looked for
    assert seen == [False, False]


async def test_a_new_question_in_the_session_ranks_as_a_first_call(store: Store) -> None:
    await _talk(store)
    r, seen = _retriever(store, 1.0)
    await _ids(r, A, "s")
    other, _ = await _ids(r, B, "s")
    assert other == ["talk_ch2_e0", "talk_ch2_e1", "talk_ch2_e2", "talk_ch2_e3"]
    assert seen == [False, False]
    # another session that asks A for the first time: a first call too
    await _ids(r, A, "t")
    assert seen[-1] is False


async def test_the_next_page_of_a_cursor_is_a_follow_up(store: Store) -> None:
    await _talk(store)
    r, seen = _retriever(store, 1.0)
    _, cursor = await _ids(r, A, "s")
    page, _ = await _ids(r, None, "s", cursor)
    assert seen == [False, True]
    assert _odd(page)
