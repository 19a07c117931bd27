"""The embedded store's full-text index is derived: rebuilt when missing or built by another
token version, caught up when a writer that did not know it added events."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mnemoql.engine.models import EMPTY_FILTERS
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.store.embedded._lexical import unindex_event
from tests.store._builders import axis, event, plan

ONE = {"chunk_vectors": [axis(0)]}


async def _seeded(path: Path) -> tuple[EmbeddedStore, list[str]]:
    store = EmbeddedStore(path)
    await store.open()
    result = await store.apply_save(
        plan(
            [
                event("a", axis(0), content="the lighthouse keeper logged a storm", **ONE),
                event("b", axis(0), content="we baked sourdough bread on Sunday", **ONE),
            ]
        )
    )
    return store, result.event_ids


async def _lex(store: EmbeddedStore, text: str) -> list[str]:
    return [h.event_id for h in await store.lexical_route(text, EMPTY_FILTERS, frozenset(), 10)]


async def test_a_missing_index_is_rebuilt_at_open(tmp_path: Path) -> None:
    store, (a, b) = await _seeded(tmp_path)
    await store.close()
    conn = sqlite3.connect(store.file)
    conn.executescript(
        "DROP TABLE lexical; DROP TABLE lexical_df; DROP TABLE lexical_rows; "
        "DROP TABLE lexical_state;"
    )
    conn.close()
    again = EmbeddedStore(tmp_path)
    await again.open()
    try:
        assert await _lex(again, "lighthouse storm") == [a]
        assert await _lex(again, "sourdough") == [b]
    finally:
        await again.close()


async def test_an_index_of_another_version_is_rebuilt(tmp_path: Path) -> None:
    store, (a, _b) = await _seeded(tmp_path)
    await store.close()
    conn = sqlite3.connect(store.file)
    with conn:  # an older token version, and its rows no longer what we would write
        conn.execute("UPDATE lexical_state SET version = 'older'")
        conn.execute("INSERT INTO lexical (lexical) VALUES ('delete-all')")
    conn.close()
    again = EmbeddedStore(tmp_path)
    await again.open()
    try:
        assert await _lex(again, "lighthouse") == [a]
    finally:
        await again.close()


async def test_events_written_past_the_index_are_caught_up(tmp_path: Path) -> None:
    store, (a, b) = await _seeded(tmp_path)
    await store.close()
    conn = sqlite3.connect(store.file)
    with conn:  # as if an older mnemoql had written event b: no rows, state behind it
        unindex_event(conn, b)
        seq = conn.execute("SELECT seq FROM nodes WHERE id = ?", (a,)).fetchone()[0]
        conn.execute("UPDATE lexical_state SET seq = ?", (seq,))
        assert (
            conn.execute("SELECT rows FROM lexical_df WHERE term = 'sourdough'").fetchone() is None
        )
    conn.close()
    again = EmbeddedStore(tmp_path)
    await again.open()
    try:
        assert await _lex(again, "sourdough bread") == [b]
        assert await _lex(again, "lighthouse") == [a]
    finally:
        await again.close()


async def test_term_counts_follow_saves_and_forget(tmp_path: Path) -> None:
    store, (a, _b) = await _seeded(tmp_path)
    try:
        extra = await store.apply_save(
            plan([event("c", axis(0), content="a storm over the bread market", **ONE)])
        )
        conn = sqlite3.connect(store.file)

        def rows(term: str) -> int | None:
            found = conn.execute("SELECT rows FROM lexical_df WHERE term = ?", (term,)).fetchone()
            return None if found is None else int(found[0])

        assert (rows("storm"), rows("sourdough"), rows("market")) == (2, 1, 1)
        await store.forget(extra.event_ids[0])
        assert (rows("storm"), rows("sourdough"), rows("market")) == (1, 1, None)
        conn.close()
        assert await _lex(store, "storm") == [a]
    finally:
        await store.close()
