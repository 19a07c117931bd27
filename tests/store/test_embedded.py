"""What is particular to the embedded store: its file layout, spaces and lifecycle errors."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from mnemoql.engine.errors import InvalidInput, StoreUnavailable
from mnemoql.engine.models import EMPTY_FILTERS
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.store.embedded._db import Database
from mnemoql.engine.store.embedded._pool import CHUNK_HASHES_SQL
from tests.store._builders import axis, save_one


async def test_each_space_is_its_own_database_file(tmp_path: Path) -> None:
    a, b = EmbeddedStore(tmp_path, "alpha"), EmbeddedStore(tmp_path, "beta")
    await a.open()
    await b.open()
    try:
        assert await save_one(a, axis(0)) == "event_1"
        assert await save_one(a, axis(0)) == "event_2"
        assert await save_one(b, axis(1)) == "event_1"
        assert (await a.counts()).events == 2 and (await b.counts()).events == 1
        hits = await b.route("summary", axis(0), EMPTY_FILTERS, frozenset(), 5)
        assert [h.event_id for h in hits] == ["event_1"]
        assert hits[0].score == pytest.approx(0.0, abs=1e-6)
    finally:
        await a.close()
        await b.close()
    assert sorted(p.name for p in tmp_path.glob("*.sqlite3")) == ["alpha.sqlite3", "beta.sqlite3"]


async def test_a_database_file_path_holds_the_default_space(tmp_path: Path) -> None:
    default = EmbeddedStore(tmp_path / "memory.db")
    other = EmbeddedStore(tmp_path / "memory.db", "work")
    assert (default.file, other.file) == (tmp_path / "memory.db", tmp_path / "memory-work.db")
    await default.open()
    await other.open()
    try:
        await save_one(default, axis(0))
        assert (await other.counts()).events == 0
    finally:
        await default.close()
        await other.close()
    assert (tmp_path / "memory.db").is_file()


async def test_the_database_uses_wal_and_foreign_keys(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path)
    await store.open()
    await save_one(store, axis(0))
    await store.close()
    with sqlite3.connect(store.file) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


async def test_a_search_reads_chunk_hashes_from_the_covering_index(tmp_path: Path) -> None:
    """The route pool's chunk-hash query never touches the chunk rows (text and vector):
    at 1M events their pages are the ones not in the page cache."""
    store = EmbeddedStore(tmp_path)
    await store.open()
    await save_one(store, axis(0))
    await store.close()
    with sqlite3.connect(store.file) as conn:
        plan = conn.execute(f"EXPLAIN QUERY PLAN {CHUNK_HASHES_SQL}", ("[]",)).fetchall()
    assert any("COVERING INDEX chunks_hash" in row[-1] for row in plan), plan


@pytest.mark.parametrize("space", ["", "../escape", "a/b", "with space", "x" * 65, "-lead"])
def test_unsafe_space_names_are_rejected(tmp_path: Path, space: str) -> None:
    with pytest.raises(InvalidInput):
        EmbeddedStore(tmp_path, space)


async def test_use_before_open_and_after_close_is_a_coded_error(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path)
    assert await store.ping() is False
    with pytest.raises(StoreUnavailable):
        await store.counts()
    await store.open()
    await store.open()  # idempotent
    assert await store.ping() is True
    await store.close()
    await store.close()  # idempotent
    assert await store.ping() is False
    with pytest.raises(StoreUnavailable):
        await store.route("summary", axis(0), EMPTY_FILTERS, frozenset(), 3)


async def test_an_unopenable_location_is_store_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = EmbeddedStore(blocker)
    with pytest.raises(StoreUnavailable):
        await store.open()
    assert await store.ping() is False


async def _save_heron_notes(store: EmbeddedStore) -> None:
    """300 events of ~29 KB each (9 MB of text): 100 `contains` over them take a while."""
    from tests.store._builders import event, plan

    body = "the heron waited by the pond " * 1_000
    for start in range(0, 300, 50):
        batch = [event(f"e{i}", axis(0), content=f"{i} {body}") for i in range(start, start + 50)]
        await store.apply_save(plan(batch))


async def test_a_caller_that_stops_waiting_stops_the_statement(tmp_path: Path) -> None:
    """Issue #13, case 5: a deadline stops the work it times out, not only the request. A slow
    filter (100 `contains` over 9 MB of text) is interrupted on the database thread, which is
    free for the next call at once."""
    import asyncio

    from mnemoql.engine.models import AnyOf, Cond, Page
    store = EmbeddedStore(tmp_path)
    await store.open()
    try:
        await _save_heron_notes(store)
        slow = AnyOf(tuple(Cond("content", "contains", f"zebra{i}") for i in range(100)))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(
                store.list_nodes("Event", slow, ("create_time", "DESC"), Page(5)), 0.3
            )
        assert store.interrupted == 1
        assert (await store.counts()).events == 300  # the thread answers; nothing was harmed
        cheap = AnyOf((Cond("content", "contains", "299 the heron"),))
        page = await store.list_nodes("Event", cheap, ("create_time", "DESC"), Page(5))
        assert len(page.nodes) == 1
    finally:
        await store.close()


async def test_a_costly_listing_does_not_hold_the_database_thread(tmp_path: Path) -> None:
    """Issue #13, fair service: a listing with 100 `contains` over 9 MB of text runs on the
    reader's own connection and thread, so a search's reads (here `counts` and a route) answer
    while it is still running, and the listing sees every committed save."""
    import asyncio

    from mnemoql.engine.models import AnyOf, Cond, Page
    store = EmbeddedStore(tmp_path)
    await store.open()
    try:
        await _save_heron_notes(store)
        slow = AnyOf(tuple(Cond("content", "contains", f"zebra{i}") for i in range(100)))
        listing = asyncio.create_task(
            store.list_nodes("Event", slow, ("create_time", "DESC"), Page(5))
        )
        await asyncio.sleep(0.05)  # the listing has started on the reader
        counts = await store.counts()
        hits = await store.route("summary", axis(0), EMPTY_FILTERS, frozenset(), 3)
        assert not listing.done()  # answered while the listing still ran
        assert counts.events == 300 and len(hits) == 3
        page = await listing
        assert page.total == 0 and page.nodes == []
        cheap = AnyOf((Cond("content", "contains", "299 the heron"),))
        found = await store.list_nodes("Event", cheap, ("create_time", "DESC"), Page(5))
        assert found.total == 1 and len(found.nodes) == 1
    finally:
        await store.close()


async def test_readiness_does_not_call_the_stores_own_long_write_busy(tmp_path: Path) -> None:
    """/readyz asks ``write_fault`` while a revectorize or a large import holds this store's
    own write lock: that is work, not a fault. Another process's lock is still STORAGE_BUSY."""
    store = EmbeddedStore(tmp_path, "alpha")
    await store.open()
    holding, release = threading.Event(), threading.Event()

    def long_write(db: Database) -> None:  # the store's own writer, mid-transaction
        db.conn.execute("BEGIN IMMEDIATE")
        holding.set()
        release.wait(10)
        db.conn.execute("ROLLBACK")

    try:
        assert await store.write_fault() is None
        work = asyncio.ensure_future(store._call(long_write, store._database))
        await asyncio.to_thread(holding.wait, 10)
        assert await store.write_fault() is None
        release.set()
        await work
        other = sqlite3.connect(store.file, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another process's lock, held
            fault = await store.write_fault()
            assert fault is not None and fault.code == "STORAGE_BUSY"
        finally:
            other.execute("ROLLBACK")
            other.close()
    finally:
        release.set()
        await store.close()


async def test_the_evidence_path_answers_while_a_save_holds_the_database_thread(
    tmp_path: Path,
) -> None:
    """Issue #30, many agents on one memory: a save holds the database thread for its whole
    transaction (seconds for a long document). A search, its follow-ups (the next page,
    ``expand``, ``nearby``) and ``read`` read committed rows on the compute threads' own
    connections, so they all answer while the database thread is held; before, the meta check
    alone waited for the whole save."""
    from mnemoql import Memory

    async with Memory(tmp_path, locale="en", embedding={"provider": "hashing"}) as memory:
        notes = [
            f"Note {i}: the lighthouse keeper logged the storm over Harbour {i % 3}." for i in range(9)
        ]
        ids = [(await memory.save(t, id=f"log_ch1_e{i}")).event_ids[0] for i, t in enumerate(notes)]
        page = await memory.search("lighthouse storm harbour", session="warm")  # caught up
        assert page.items
        store = memory._memory.store if memory._memory is not None else None
        assert isinstance(store, EmbeddedStore)
        holding, release = threading.Event(), threading.Event()

        def long_save(db: Database) -> None:  # a save mid-transaction, on the database thread
            db.conn.execute("BEGIN IMMEDIATE")
            holding.set()
            release.wait(60)
            db.conn.execute("ROLLBACK")

        held = asyncio.ensure_future(store._call(long_save, store._database))
        try:
            await asyncio.to_thread(holding.wait, 10)

            async def evidence() -> None:
                first = await memory.search("lighthouse storm harbour", session="busy")
                assert first.items and first.cursor
                around = await memory.nearby(first, first.items[0].event_id, before=2, after=2)
                assert around.operation == "nearby"
                given = {i.event_id for i in (*first.items, *around.items)}
                more = await memory.search(cursor=first.cursor, session="busy")
                assert more.items and given.isdisjoint(i.event_id for i in more.items)
                if first.expand_concepts:
                    await memory.expand(first, first.expand_concepts[0], limit=2)
                text = await memory.read(ids[4], start=0, limit=7)
                assert text.text == notes[4][:7]

            # the guard only turns a wait for the held thread into a failure, never a race
            await asyncio.wait_for(evidence(), 60)
            assert not held.done(), "the save's transaction was still open throughout"
        finally:
            release.set()
            await held
