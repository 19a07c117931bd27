"""What one search asks of the embedded store, in as few trips as it can (issue #30, "a search
near its index"): the route pool carries the concepts delivery shows, the two ANN indexes are
searched side by side, and the lexical route rides on the pool's catch-up."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from mnemoql.engine.models import EMPTY_FILTERS, Entity
from mnemoql.engine.store.embedded import EmbeddedStore, _routes
from mnemoql.engine.store.embedded._ann import AnnSettings
from mnemoql.engine.store.embedded._db import Database
from mnemoql.engine.store.embedded._hnsw import Hnsw
from tests.store._builders import axis, chunks_for, concept, event, plan, rel, vec

MANY = 55  # MENTIONS of one event: past the 50 an evidence page shows


async def _delivery_concepts(store: EmbeddedStore, ids: list[str]) -> dict[str, object]:
    """The concepts as delivery reads them without a pool (``Retriever._concepts``)."""
    rows = await store.neighbours(ids, "MENTIONS", "out", 50)
    others = list(dict.fromkeys(r.other_id for mine in rows.values() for r in mine))
    names = {n.id: n.name for n in await store.get_nodes(others) if isinstance(n, Entity)}
    return {
        i: tuple((r.other_id, names.get(r.other_id, r.other_id)) for r in mine)
        for i, mine in rows.items()
    }


async def test_the_pool_carries_each_events_concepts_as_delivery_reads_them(
    tmp_path: Path,
) -> None:
    store = EmbeddedStore(tmp_path)
    await store.open()
    try:
        concepts = [concept(f"c{i}", f"topic {i}", vector=axis(3)) for i in range(MANY)]
        result = await store.apply_save(
            plan(
                [event("a", axis(0), chunk_vectors=[axis(0)]), event("b", vec(1, 1))],
                concepts,
                [rel("MENTIONS", "a", f"c{i}") for i in range(MANY)] + [rel("MENTIONS", "b", "c7")],
            )
        )
        a, b = result.event_ids
        pool = await store.route_pool(axis(0), EMPTY_FILTERS, frozenset(), 5)
        assert pool.concepts is not None, "the embedded pool leaves concepts to delivery"
        assert sorted(pool.concepts) == sorted(pool.events) == sorted([a, b])
        assert pool.concepts == await _delivery_concepts(store, [a, b])
        # by concept id as strings order (concept_10 before concept_2), the first 50
        ids = sorted(result.created["Concept"])[:50]
        assert [c for c, _ in pool.concepts[a]] == ids and len(ids) == 50
        assert pool.concepts[b] == ((result.refs["c7"], "topic 7"),)
    finally:
        await store.close()


async def test_the_concepts_names_are_read_once_and_stay_right(tmp_path: Path) -> None:
    """``Names``: a second search over the same events reads no name again and gives the same
    concepts, named as delivery names them."""
    store = EmbeddedStore(tmp_path)
    await store.open()
    try:
        result = await store.apply_save(
            plan(
                [event("a", axis(0)), event("b", vec(1, 1))],
                [concept("c0", "graph", vector=axis(3)), concept("c1", "cursor", vector=axis(4))],
                [
                    rel("MENTIONS", "a", "c0"),
                    rel("MENTIONS", "a", "c1"),
                    rel("MENTIONS", "b", "c1"),
                ],
            )
        )
        a, b = result.event_ids
        rows = store.threads.rows
        assert rows is not None
        statements: list[str] = []
        first = await store.route_pool(axis(0), EMPTY_FILTERS, frozenset(), 5)
        assert first.concepts == await _delivery_concepts(store, [a, b])
        assert [name for _, name in first.concepts[a]] == ["graph", "cursor"]
        # every statement of the pool's connections from now on, those opened later too (the
        # second search may run on a compute thread that has no connection yet)
        opener = rows._conn

        def traced() -> sqlite3.Connection:
            conn = opener()
            conn.set_trace_callback(statements.append)
            return conn

        rows._conn = traced  # type: ignore[method-assign]
        for conn in rows._open:
            conn.set_trace_callback(statements.append)
        again = await store.route_pool(axis(0), EMPTY_FILTERS, frozenset(), 5)
        assert again.concepts == first.concepts
        assert statements, "the second search read nothing through the pool"
        assert not [s for s in statements if "coalesce(name" in s], "names read again"
    finally:
        await store.close()


def database_trips(store: EmbeddedStore) -> list[str]:
    """The names of the functions the store runs on its database thread from now on."""
    trips: list[str] = []
    inner = store.threads.call

    async def call(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        trips.append(getattr(fn, "__name__", repr(fn)))
        return await inner(fn, *args, **kwargs)

    store.threads.call = call  # type: ignore[method-assign]
    return trips


@contextmanager
def index_threads(slow: str = "") -> Iterator[list[tuple[str, str]]]:
    """(thread name, index kind) of every ANN index search meanwhile; a search of the
    ``slow`` kind's index first waits 50 ms."""
    seen: list[tuple[str, str]] = []
    original = Hnsw.search

    def search(self: Hnsw, query: np.ndarray, count: int) -> np.ndarray | None:
        seen.append((threading.current_thread().name, self.kind))
        if self.kind == slow:
            time.sleep(0.05)
        return original(self, query, count)

    Hnsw.search = search  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        Hnsw.search = original  # type: ignore[method-assign]


async def _ann_and_exact(tmp_path: Path) -> tuple[dict[str, EmbeddedStore], np.ndarray]:
    """The same 600 events with chunks in a store searched by its indexes and one scanned
    exactly, and a query between two of them."""
    rng = np.random.default_rng(3)
    dims = len(axis(0))
    vecs = rng.standard_normal((600, dims)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    events = []
    for i, v in enumerate(vecs):
        ev = event(f"e{i:04d}", v, content=f"event {i} " + "y" * 40)
        ev.chunks = chunks_for(ev.content, [v])
        events.append(ev)
    stores = {}
    for name, ann in (("exact", AnnSettings(mode="exact")), ("ann", AnnSettings(min_vectors=0))):
        stores[name] = EmbeddedStore(tmp_path / name, ann=ann)
        await stores[name].open()
        await stores[name].apply_save(plan(events))
    return stores, vecs[0] + 0.3 * vecs[1]


async def test_the_two_indexes_are_searched_on_two_threads_with_the_exact_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_routes, "spare_core", lambda: True)  # a core is idle
    stores, q = await _ann_and_exact(tmp_path)
    try:
        # the summary index slow: the side thread has started the chunk index's search
        with index_threads(slow="summary") as seen:
            got = await stores["ann"].route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        want = await stores["exact"].route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        assert [h.event_id for h in got.summary] == [h.event_id for h in want.summary]
        assert [h.event_id for h in got.chunk] == [h.event_id for h in want.chunk]
        kinds = {kind: name for name, kind in seen}
        assert set(kinds) == {"summary", "chunk"}, seen
        assert kinds["chunk"].startswith("mnemoql-ann-"), seen  # the side thread
        assert not kinds["summary"].startswith("mnemoql-ann-"), seen  # beside it
    finally:
        for s in stores.values():
            await s.close()


async def test_the_summary_pages_rows_are_read_while_the_chunk_index_is_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compute thread reads the rows of the summary route's likely page while the side
    thread searches the chunk index, then only the rest: the same rows, in the same order,
    as the exact store reads at once."""
    monkeypatch.setattr(_routes, "spare_core", lambda: True)
    stores, q = await _ann_and_exact(tmp_path)
    early_read, reads = threading.Event(), []
    more, search = _routes.more_pool_rows, Hnsw.search

    def counted(conn, view, names, ids, known):  # type: ignore[no-untyped-def]
        reads.append([i for i in ids if i not in known[0]])
        early_read.set()
        return more(conn, view, names, ids, known)

    def chunk_waits(self: Hnsw, query: np.ndarray, count: int) -> np.ndarray | None:
        if self.kind == "chunk":  # until the summary page's rows were read beside it
            assert early_read.wait(10), "no rows were read while the chunk index was searched"
        return search(self, query, count)

    monkeypatch.setattr(_routes, "more_pool_rows", counted)
    monkeypatch.setattr(Hnsw, "search", chunk_waits)
    try:
        got = await stores["ann"].route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        monkeypatch.setattr(Hnsw, "search", search)
        want = await stores["exact"].route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        assert [h.event_id for h in got.summary] == [h.event_id for h in want.summary]
        assert len(reads) == 3  # early and the rest (ann), all at once (exact)
        early, rest = reads[0], reads[1]
        assert early == [h.event_id for h in got.summary]  # the likely page was the page
        assert not set(early) & set(rest)  # nothing read twice
        assert list(got.events) == list(want.events)
        for i, mine in got.events.items():
            theirs = want.events[i]
            assert (mine.summary, mine.content, mine.content_hash, mine.has_chunks) == (
                theirs.summary,
                theirs.content,
                theirs.content_hash,
                theirs.has_chunks,
            )
            np.testing.assert_allclose(mine.embedding, theirs.embedding, rtol=1e-6)
        assert got.chunk_hashes == want.chunk_hashes
        assert got.concepts == want.concepts
    finally:
        for s in stores.values():
            await s.close()


async def test_a_side_search_not_started_yet_runs_on_the_searching_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every side thread busy: the chunk index's search is taken back (``beside``) and run
    after the summary index's on the compute thread, with the same pages."""
    monkeypatch.setattr(_routes, "spare_core", lambda: True)
    stores, q = await _ann_and_exact(tmp_path)
    side = stores["ann"].threads.side
    assert side is not None
    release = threading.Event()
    blockers = [side.submit(release.wait) for _ in range(side._max_workers)]
    try:
        with index_threads() as seen:
            got = await stores["ann"].route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        release.set()
        want = await stores["exact"].route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        assert [h.event_id for h in got.summary] == [h.event_id for h in want.summary]
        assert [h.event_id for h in got.chunk] == [h.event_id for h in want.chunk]
        assert [kind for _, kind in seen] == ["summary", "chunk"], seen
        assert all(name.startswith("mnemoql-vec-") for name, _ in seen), seen
    finally:
        release.set()
        for b in blockers:
            b.result()
        for s in stores.values():
            await s.close()


async def test_without_a_spare_core_both_indexes_are_searched_on_the_compute_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy machine (``spare_core`` False): no side thread is asked, the summary index then
    the chunk index on the compute thread, the exact pages."""
    monkeypatch.setattr(_routes, "spare_core", lambda: False)
    stores, q = await _ann_and_exact(tmp_path)
    side = stores["ann"].threads.side
    assert side is not None
    handed: list[object] = []
    submit = side.submit
    side.submit = lambda *a, **k: handed.append(a) or submit(*a, **k)  # type: ignore[method-assign]
    try:
        with index_threads() as seen:
            got = await stores["ann"].route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        want = await stores["exact"].route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        assert [h.event_id for h in got.summary] == [h.event_id for h in want.summary]
        assert [h.event_id for h in got.chunk] == [h.event_id for h in want.chunk]
        assert [kind for _, kind in seen] == ["summary", "chunk"], seen
        assert all(name.startswith("mnemoql-vec-") for name, _ in seen), seen
        assert handed == []
    finally:
        for s in stores.values():
            await s.close()


async def test_the_pools_lexical_route_sees_another_processes_write(tmp_path: Path) -> None:
    """The pool catches up once, before both its vector and lexical routes."""
    first, second = EmbeddedStore(tmp_path), EmbeddedStore(tmp_path)
    await first.open()
    try:
        await first.apply_save(plan([event("a", axis(0), content="a storm at the lighthouse")]))
        await second.open()
        try:
            saved = await second.apply_save(
                plan(
                    [
                        event(
                            "b", axis(1), content="order XK-4471-B shipped", chunk_vectors=[axis(1)]
                        )
                    ],
                    key="k2",
                )
            )
        finally:
            await second.close()
        pool = await first.route_pool(
            axis(0), EMPTY_FILTERS, frozenset(), 5, text="where is XK-4471-B"
        )
        assert [h.event_id for h in pool.lexical] == saved.event_ids
        assert saved.event_ids[0] in pool.events and saved.event_ids[0] in (pool.concepts or {})
    finally:
        await first.close()


async def test_a_pool_without_a_trip_still_sees_a_write_made_since_by_another_process(
    tmp_path: Path,
) -> None:
    """The pool asks ``Watch`` on its compute thread whether anything was committed since
    its last catch-up: a quiet pool makes no trip, the one after another process's commit
    catches up first, and the one after this process's own save makes none (``settle``: the
    save brought the mirrors along, and the catch-up would find nothing)."""
    first, second = EmbeddedStore(tmp_path), EmbeddedStore(tmp_path)
    await first.open()
    await second.open()
    try:
        a = (await first.apply_save(plan([event("a", axis(0))]))).event_ids[0]
        trips = database_trips(first)
        for _ in range(2):
            pool = await first.route_pool(axis(1), EMPTY_FILTERS, frozenset(), 5)
            assert [h.event_id for h in pool.summary] == [a]
        assert trips == [], trips  # the own save's commit, then quiet pools: no trip
        b = (await second.apply_save(plan([event("b", axis(1))], key="k2"))).event_ids[0]
        pool = await first.route_pool(axis(1), EMPTY_FILTERS, frozenset(), 5)
        assert [h.event_id for h in pool.summary] == [b, a]  # the other process's event, first
        assert b in pool.events
        assert trips == ["catch_up"], trips
        c = (await first.apply_save(plan([event("c", vec(1, 2))], key="k3"))).event_ids[0]
        trips.clear()
        pool = await first.route_pool(axis(1), EMPTY_FILTERS, frozenset(), 5)
        assert [h.event_id for h in pool.summary] == [b, c, a]
        assert trips == [], trips  # no catch-up after the own save
        d = (await second.apply_save(plan([event("d", vec(1, 3))], key="k4"))).event_ids[0]
        e = (await first.apply_save(plan([event("e", vec(1, 4))], key="k5"))).event_ids[0]
        trips.clear()  # the own save followed the other's commit: the mirrors hold both
        pool = await first.route_pool(axis(1), EMPTY_FILTERS, frozenset(), 5)
        assert {d, e} <= {h.event_id for h in pool.summary}
        assert trips == [], trips
    finally:
        await second.close()
        await first.close()


async def test_a_pool_goes_to_the_database_thread_once_and_reads_on_its_own_connection(
    tmp_path: Path,
) -> None:
    """The catch-up is the pool's only trip to the database thread: the lexical route and the
    candidates' rows are read on the compute threads' connections, in one read transaction,
    with the summary vectors taken from the mirror (no BLOB read, no ROW_NUMBER window, no
    per-event EXISTS) -- and the events are the ones ``get_events`` gives."""
    store = EmbeddedStore(tmp_path)
    await store.open()
    try:
        saved = await store.apply_save(
            plan(
                [
                    event(
                        "a", axis(0), content="a storm at the lighthouse", chunk_vectors=[axis(0)]
                    ),
                    event("b", vec(1, 1), content="the lighthouse keeper"),
                    event("c", None, summary="no vector, but the lighthouse again"),
                ],
                [concept("k", "keeper", vector=axis(3))],
                [rel("MENTIONS", "a", "k")],
            )
        )
        a, b, c = saved.event_ids
        trips = database_trips(store)
        await store.route_pool(axis(0), EMPTY_FILTERS, frozenset(), 5, text="lighthouse")
        # the own save brought the mirrors along: no catch-up (before: the lexical route and
        # pool_rows went to the database thread too)
        assert trips == [], trips
        await store.route_pool(axis(0), EMPTY_FILTERS, frozenset(), 5, text="lighthouse")
        assert trips == [], trips  # nothing committed since: no trip at all
        statements: list[tuple[str, str]] = []  # (thread, statement)
        rows = store.threads.rows
        assert rows is not None and rows.opened >= 1, "the pool read nothing on its own"
        opened = rows._conn

        def traced() -> sqlite3.Connection:  # whichever thread reads, its statements
            conn = opened()
            conn.set_trace_callback(
                lambda sql: statements.append((threading.current_thread().name, sql))
            )
            return conn

        rows._conn = traced  # type: ignore[method-assign]
        pool = await store.route_pool(axis(0), EMPTY_FILTERS, frozenset(), 5, text="lighthouse")
        assert sorted(pool.events) == sorted([a, b, c])
        assert {h.event_id for h in pool.lexical} == {a, c}  # b: no chunk, summary unrelated
        # the lexical route on a side thread (or taken back by the compute thread when no
        # side thread had started it), the pool's reads on the compute thread
        lexical = [t for t, sql in statements if "lexical" in sql]
        assert lexical and all(t.startswith(("mnemoql-ann-", "mnemoql-vec-")) for t in lexical)
        reads = [  # the pool's own: not the lexical route's (nor FTS5's data_version checks)
            sql
            for t, sql in statements
            if t.startswith("mnemoql-vec-") and "lexical" not in sql and "data_version" not in sql
        ]
        assert reads[0] == "BEGIN" and reads[-1] == "COMMIT", reads
        assert not [s for s in reads if "ROW_NUMBER" in s or "EXISTS" in s], reads
        # one BLOB read, for the event the mirror holds no vector of
        assert [s for s in reads if "embedding" in s] == [reads[-2]], reads
        want = {e.id: e for e in await store.get_events([a, b, c], with_vectors=True)}
        for event_id, got in pool.events.items():
            expected = want[event_id]
            assert (got.id, got.summary, got.content, got.has_chunks, got.content_hash) == (
                expected.id,
                expected.summary,
                expected.content,
                expected.has_chunks,
                expected.content_hash,
            )
            assert (got.time, got.create_time, got.create_date) == (
                expected.time,
                expected.create_time,
                expected.create_date,
            )
            if expected.embedding is None:
                assert got.embedding is None
            else:
                assert got.embedding is not None
                assert (
                    np.asarray(got.embedding).tobytes() == np.asarray(expected.embedding).tobytes()
                )
        assert pool.chunk_hashes[a] and not pool.chunk_hashes[b] and not pool.chunk_hashes[c]
        assert pool.concepts is not None and [x for x, _ in pool.concepts[a]] == [saved.refs["k"]]
    finally:
        await store.close()
    assert store.threads.rows is None


async def test_a_save_moves_no_other_connections_data_version_before_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save's pages stay in memory until its commit (``Database._write_unspilled``): a page
    cache that spilled mid-transaction wrote to the log and moved ``Watch``'s version before
    anything was committed, and every search then waited for a catch-up behind the rest of
    the save. Here a save of ~6 MB of text (far past the page cache) reads ``Watch`` inside
    its transaction, after all its writes: nothing moved yet; after the commit it has. (The
    log was just checkpointed, as SQLite does past 1000 pages: the spill restarts it.)"""
    from mnemoql.engine.store.embedded import _save

    store = EmbeddedStore(tmp_path)
    await store.open()
    try:
        await store.apply_save(plan([event("a", axis(0))]))  # the tables, the first commit

        def checkpointed(db: Database) -> None:  # the log copied back: the next write restarts it
            db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

        await store._call(checkpointed, store._database)
        watch = store.threads.watch
        assert watch is not None
        before = watch.version()
        inside: list[int] = []
        original = _save.apply_save

        def spying(conn, plan):  # type: ignore[no-untyped-def]
            written = original(conn, plan)
            inside.append(watch.version())  # still in the save's transaction
            return written

        monkeypatch.setattr(_save, "apply_save", spying)
        body = "the heron waited by the pond, " * 2_000  # 60 KB a note
        notes = [event(f"n{i}", axis(1), content=f"{i} {body}") for i in range(100)]
        await store.apply_save(plan(notes, key="long"))
        assert inside == [before], "another connection saw the save before its commit"
        assert watch.version() != before  # committed: now it has moved
    finally:
        await store.close()
