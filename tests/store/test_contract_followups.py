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

from collections.abc import Sequence
from datetime import date

import numpy as np

from mnemoql.engine.config import RecordWeights
from mnemoql.engine.cursors import CursorStore
from mnemoql.engine.models import Vector
from mnemoql.engine.retrieval.pipeline import Retriever, SearchRequest
from mnemoql.engine.sessions import SessionStore
from mnemoql.engine.store.base import Store
from tests.store._builders import DIMS, META, axis, event, plan, vec

A, B = "Which one was it?", "And the other thing?"
TURNS = 44


class QueryEmbedder:
    """Question A is axis 0, question B axis 3 (the store's vectors are made by hand)."""

    model = META.model
    dimensions = DIMS

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> Vector:
        return np.stack([axis(0) if t == A else axis(3) for t in texts])


def _a_turn(i: int) -> Vector:
    c = 0.99 - 0.01 * (i // 2) if i % 2 == 0 else 0.10 - 0.002 * i
    return vec(c, float(np.sqrt(1 - c * c)))


def _b_turn(i: int) -> Vector:
    c = 0.9 - 0.01 * i
    return vec(0, 0, float(np.sqrt(1 - c * c)), c)


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
    cursors = CursorStore()
    r = Retriever(
        store,
        QueryEmbedder(),  # type: ignore[arg-type]
        SessionStore(cursors=cursors),
        cursors,
        today=lambda: date(2026, 3, 2),
        # the chunk route alone for the first call; a follow-up adds the neighbour share
        records=RecordWeights(
            lexical_weight=0.0,
            speaker_weight=0.0,
            window_weight=0.0,
            neighbour_share=0.0,
            followup_lexical_weight=0.0,
            followup_speaker_weight=0.0,
            followup_window_weight=0.0,
            followup_neighbour_share=followup_share,
        ),
    )
    r.mmr_lambda = 1.0  # rank order only (the hand-made vectors are near one another)
    seen: list[bool] = []
    weights = r.record_weights

    def spy(followup: bool = False):  # type: ignore[no-untyped-def]
        seen.append(followup)
        return weights(followup)

    r.record_weights = spy  # type: ignore[method-assign]
    return r, seen


async def _ids(r: Retriever, query: str | None, session: str, cursor: str | None = None):  # type: ignore[no-untyped-def]
    out = await r.search(SearchRequest(query=query, cursor=cursor), session)
    return [i.event_id for i in out.page.items], out.page.cursor


def _odd(ids: list[str]) -> list[str]:
    return [i for i in ids if int(i.rsplit("_e", 1)[1]) % 2 == 1]


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
