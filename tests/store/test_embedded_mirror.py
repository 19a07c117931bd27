"""The embedded store's vector mirrors on disk (``embedded._mirror``) and its incremental
catch-up (``embedded._load.advance``): a reopened or caught-up store holds exactly the vectors
a full SQLite load would, reads only what changed, and falls back to the full load whenever
the files cannot vouch for themselves."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mnemoql.engine.drafts import SavePlan
from mnemoql.engine.models import EMPTY_FILTERS, MemoryMeta, VectorSet
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.store.embedded._ann import AnnSettings
from mnemoql.engine.store.embedded._db import Database
from tests.store._builders import chunks_for, concept, event, plan, rel

D = 16
META = MemoryMeta("test-embedder", D, "2026-03-01T09:00:00+08:00")
FILES = AnnSettings(min_vectors=0, mirror_min_rows=0)  # files for any size
NO_FILES = AnnSettings(mode="exact", persist=False)  # the plain full load: the reference


def unit(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    v = rng.standard_normal((n, D)).astype(np.float32)
    out: npt.NDArray[np.float32] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def batch(rng: np.random.Generator, n: int, tag: str, day: str = "2026-03-01") -> SavePlan:
    """``n`` events with a summary vector and two chunk vectors, each MENTIONing a concept."""
    vecs, cvecs = unit(rng, n), unit(rng, 2 * n)
    events = []
    for i in range(n):
        ev = event(f"e{i}", vecs[i], content=f"{tag} event {i} " + "y" * 60)
        ev.chunks = chunks_for(ev.content, [cvecs[2 * i], cvecs[2 * i + 1]])
        events.append(ev)
    entities = [concept(f"c{k}", f"{tag} topic {k}", vector=unit(rng, 1)[0]) for k in range(3)]
    rels = [rel("MENTIONS", f"e{i}", f"c{i % 3}") for i in range(n)]
    return plan(events, entities, rels, day=day, meta=META)


async def opened(path: Path, ann: AnnSettings = FILES) -> EmbeddedStore:
    store = EmbeddedStore(path, ann=ann)
    await store.open()
    return store


def db_of(store: EmbeddedStore) -> Database:
    return store._database


def contents(db: Database) -> dict[str, Any]:
    """Everything a search can read from the mirrors, keyed by ids (row order aside)."""
    ev = db.events
    live = [r for r in range(ev.n) if ev.live[r]]
    events = {ev.ids[r]: (int(ev.seqs[r]), bool(ev.has_vec[r]), ev.vecs[r].tobytes()) for r in live}
    chunks = {
        (ev.ids[int(ev.crow[c])], int(ev.cidx[c])): (
            int(ev.cstart[c]),
            int(ev.cend[c]),
            ev.cvecs[c].tobytes(),
        )
        for c in range(ev.nc)
        if ev.live[int(ev.crow[c])]
    }
    entities = {
        label: {view.ids[r]: view.vecs[r].tobytes() for r in range(view.n) if view.has_vec[r]}
        for label, view in db.entities.items()
    }
    return {"events": events, "chunks": chunks, "entities": entities}


async def assert_like_a_full_load(store: EmbeddedStore) -> None:
    """The store's mirrors hold what a fresh full SQLite load of the same file holds."""
    await store.route("summary", np.full(D, 0.25, np.float32), EMPTY_FILTERS, frozenset(), 3)
    fresh = await opened(store.path, NO_FILES)
    try:
        assert db_of(fresh).full_loads == 1
        assert contents(db_of(store)) == contents(db_of(fresh))
    finally:
        await fresh.close()


async def written(store: EmbeddedStore) -> None:
    """Wait for the background write of the mirror files."""
    db = db_of(store)
    await store._call(db.files.flush)


async def write_now(store: EmbeddedStore) -> None:
    """Write the mirror files of the store's current mirrors (and wait)."""
    db = db_of(store)
    assert await store._call(db.files.write, db.conn, db._loaded(), True)


async def test_a_reopened_store_reads_its_mirrors_from_the_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    path = tmp_path / "m"
    store = await opened(path)
    try:
        for k in range(3):
            await store.apply_save(batch(rng, 40, f"b{k}"))
        await store.forget("event_5")
        await write_now(store)
        files = db_of(store).files
        assert files.writes >= 1 and list(files.root.glob("*/manifest.json"))
    finally:
        await store.close()
    again = await opened(path)
    try:
        db = db_of(again)
        assert db.full_loads == 0  # no SQLite load of the mirrors ...
        assert db.rows_read == 0  # ... and nothing changed since the files
        await assert_like_a_full_load(again)
        hits = await again.route("summary", db.events.vecs[0], EMPTY_FILTERS, frozenset(), 3)
        assert hits[0].event_id == db.events.ids[0] and hits[0].score == pytest.approx(1.0)
        assert "event_5" not in db.events.row_of or not db.events.live[db.events.row_of["event_5"]]
    finally:
        await again.close()


async def test_rows_written_after_the_files_are_read_from_sqlite(tmp_path: Path) -> None:
    """Files a few rows behind (a crash, or too few new rows to rewrite): the open reads only
    the newer rows, applies the forgets recorded since, and matches a full load."""
    rng = np.random.default_rng(2)
    path = tmp_path / "m"
    store = await opened(path)
    await store.apply_save(batch(rng, 50, "old"))
    await written(store)
    writes = db_of(store).files
    assert writes.writes == 1
    await store.apply_save(batch(rng, 7, "new", day="2026-03-02"))
    await store.forget("event_3")  # an event the files hold
    await store.close()  # 7 events behind: not worth a rewrite
    assert writes.writes == 1
    again = await opened(path)
    try:
        db = db_of(again)
        assert db.full_loads == 0
        assert db.rows_read == 7 + 14 + 3  # the new events, their chunks, the new concepts
        assert not db.events.live[db.events.row_of["event_3"]]
        await assert_like_a_full_load(again)
    finally:
        await again.close()


async def test_files_that_disagree_cost_a_full_load(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    path = tmp_path / "m"
    store = await opened(path)
    await store.apply_save(batch(rng, 30, "a"))
    await written(store)
    root = db_of(store).files.root
    await store.close()
    (folder,) = [p.parent for p in root.glob("*/manifest.json")]

    chunk_file = folder / "chunks.f32"
    saved = chunk_file.read_bytes()
    chunk_file.write_bytes(saved[:-4])  # truncated
    again = await opened(path)
    try:
        assert db_of(again).full_loads == 1
        await assert_like_a_full_load(again)
    finally:
        await again.close()

    # the full load wrote new files; a manifest of another width is ignored
    (folder,) = [p.parent for p in root.glob("*/manifest.json")]
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "dims": D * 2}))
    again = await opened(path)
    try:
        assert db_of(again).full_loads == 1
    finally:
        await again.close()


async def test_an_older_copy_of_the_database_never_uses_newer_files(tmp_path: Path) -> None:
    """A copy of the database taken before the files were written (a backup put back)
    beside files that hold more: the token names other files, so the open loads from SQLite
    and serves none of the rows the copy lacks."""
    rng = np.random.default_rng(4)
    path = tmp_path / "m"
    store = await opened(path)
    await store.apply_save(batch(rng, 30, "a"))
    await written(store)
    await store.close()
    backup = tmp_path / "backup"
    shutil.copy(path / "default.sqlite3", backup)
    store = await opened(path)
    assert db_of(store).full_loads == 0
    await store.apply_save(batch(rng, 30, "b", day="2026-03-02"))
    await write_now(store)
    await store.close()
    shutil.copy(backup, path / "default.sqlite3")
    for extra in ("-wal", "-shm"):
        (path / f"default.sqlite3{extra}").unlink(missing_ok=True)
    again = await opened(path)
    try:
        assert db_of(again).full_loads == 1
        assert db_of(again).events.n == 30
        await assert_like_a_full_load(again)
    finally:
        await again.close()


async def test_revectorized_memory_ignores_the_old_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    path = tmp_path / "m"
    store = await opened(path)
    await store.apply_save(batch(rng, 30, "a"))
    await written(store)
    await store.close()
    other = await opened(path, NO_FILES)  # re-vectorize in a process that writes no files
    view = db_of(other).events
    new = unit(rng, view.n)
    await other.replace_vectors(
        VectorSet(
            events={view.ids[k]: new[k] for k in range(view.n)}, entities={}, chunks=[], meta=META
        )
    )
    await other.close()
    again = await opened(path)
    try:
        assert db_of(again).full_loads == 1
        await assert_like_a_full_load(again)
        assert db_of(again).events.vecs[0].tobytes() == new[0].tobytes()
    finally:
        await again.close()


async def test_catch_up_reads_only_what_another_writer_changed(tmp_path: Path) -> None:
    """Another connection saves and forgets; the next route reads just its new rows (counted)
    and marks the forgotten one dead, no full reload, and searches see the new events."""
    rng = np.random.default_rng(6)
    path = tmp_path / "m"
    mine = await opened(path)
    other = await opened(path, NO_FILES)
    try:
        await mine.apply_save(batch(rng, 80, "a"))
        db = db_of(mine)
        loads = db.full_loads
        later = batch(rng, 25, "b", day="2026-03-02")
        target = np.asarray(later.events[4].embedding)
        await other.apply_save(later)
        await other.forget("event_9")
        hits = await mine.route("summary", target, EMPTY_FILTERS, frozenset(), 3)
        assert db.full_loads == loads  # no full reload ...
        assert db.rows_read == 25 + 50 + 3  # ... only the new events, chunks and concepts
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert hits[0].event_id == "event_85"
        assert not db.events.live[db.events.row_of["event_9"]]
        chunk_hits = await mine.route("chunk", target, EMPTY_FILTERS, frozenset(), 100)
        assert "event_9" not in {h.event_id for h in chunk_hits}
        await assert_like_a_full_load(mine)
        await other.apply_save(batch(rng, 3, "c", day="2026-03-03"))
        await mine.route("summary", target, EMPTY_FILTERS, frozenset(), 3)
        assert db.full_loads == loads and db.rows_read == 3 + 6 + 3
    finally:
        await mine.close()
        await other.close()


async def test_a_save_racing_another_writer_keeps_every_row(tmp_path: Path) -> None:
    """Another writer commits between this store's catch-up and its save's lock: the save's
    transaction catches up first, so the other rows are not skipped behind this save's."""
    rng = np.random.default_rng(7)
    path = tmp_path / "m"
    mine = await opened(path)
    other = await opened(path, NO_FILES)
    try:
        await mine.apply_save(batch(rng, 20, "a"))
        db = db_of(mine)
        db.catch_up = lambda: db.caught_up  # type: ignore[method-assign]  # the race's window
        await other.apply_save(batch(rng, 5, "b"))
        await mine.apply_save(batch(rng, 5, "c"))
        del db.catch_up
        seqs = db.events.seqs[: db.events.n]
        assert db.events.n == 30 and bool(np.all(seqs[1:] > seqs[:-1]))
        await assert_like_a_full_load(mine)
    finally:
        await mine.close()
        await other.close()


async def test_a_reused_seq_elsewhere_costs_a_full_reload(tmp_path: Path) -> None:
    """The other writer forgets this store's newest event and its next node takes that seq:
    the new node's row cannot go among the old ones, so the mirrors reload in full."""
    rng = np.random.default_rng(8)
    path = tmp_path / "m"
    mine = await opened(path)
    other = await opened(path, NO_FILES)
    try:
        await mine.apply_save(batch(rng, 20, "a"))
        last = (await mine.apply_save(plan([event("x", unit(rng, 1)[0])], meta=META))).event_ids
        db = db_of(mine)
        loads = db.full_loads
        await other.forget(last[0])
        vec = unit(rng, 1)[0]
        await other.apply_save(plan([event("n", vec)], meta=META))
        hits = await mine.route("summary", vec, EMPTY_FILTERS, frozenset(), 3)
        assert db.full_loads == loads + 1
        assert hits[0].score == pytest.approx(1.0, abs=1e-5) and hits[0].event_id != last[0]
        await assert_like_a_full_load(mine)
    finally:
        await mine.close()
        await other.close()


async def test_an_entity_vector_filled_in_elsewhere_is_caught_up(tmp_path: Path) -> None:
    """A merge gives a node that had no vector one, in place (no new seq): the catch-up and
    the reopen from files both see it."""
    rng = np.random.default_rng(9)
    path = tmp_path / "m"
    mine = await opened(path)
    other = await opened(path, NO_FILES)
    try:
        first = batch(rng, 10, "a")
        first.entities.append(concept("bare", "bare concept", vector=None))
        first.relations.append(rel("MENTIONS", "e0", "bare"))
        await mine.apply_save(first)
        db = db_of(mine)
        bare_id = next(
            i
            for r, i in enumerate(db.entities["Concept"].ids)
            if not db.entities["Concept"].has_vec[r]
        )
        await written(mine)
        vec = unit(rng, 1)[0]
        merge = plan(
            [event("m", unit(rng, 1)[0])],
            [concept("again", "bare concept", vector=vec, merge_into=bare_id)],
            [rel("MENTIONS", "m", "again")],
            meta=META,
        )
        await other.apply_save(merge)
        top = await mine.entity_vector_top("Concept", vec, 1)
        assert top[0][0].id == bare_id and top[0][1] == pytest.approx(1.0, abs=1e-5)
        await assert_like_a_full_load(mine)
        await mine.close()
        mine = await opened(path)
        assert db_of(mine).full_loads == 0
        await assert_like_a_full_load(mine)
    finally:
        await mine.close()
        await other.close()


async def test_an_entity_vector_filled_in_here_reaches_the_index(tmp_path: Path) -> None:
    """The same merge in this process: the index it already covers learns the new vector."""
    rng = np.random.default_rng(10)
    store = await opened(tmp_path / "m")
    try:
        first = batch(rng, 10, "a")
        first.entities.append(concept("bare", "bare concept", vector=None))
        await store.apply_save(first)
        db = db_of(store)
        view = db.entities["Concept"]
        bare_id = next(i for r, i in enumerate(view.ids) if not view.has_vec[r])
        assert db.ann.index("Concept", db.generation) is not None
        vec = unit(rng, 1)[0]
        merge = plan(
            [event("m", unit(rng, 1)[0])],
            [concept("again", "bare concept", vector=vec, merge_into=bare_id)],
            meta=META,
        )
        await store.apply_save(merge)
        top = await store.entity_vector_top("Concept", vec, 1)
        assert top[0][0].id == bare_id and top[0][1] == pytest.approx(1.0, abs=1e-5)
    finally:
        await store.close()


async def test_a_delete_the_files_cannot_know_of_costs_a_full_load(tmp_path: Path) -> None:
    """A node removed without an ``ann_forgotten`` record (an older writer, a hand edit):
    the live rows no longer match the database's events, so the open loads from SQLite."""
    rng = np.random.default_rng(11)
    path = tmp_path / "m"
    store = await opened(path)
    await store.apply_save(batch(rng, 30, "a"))
    await write_now(store)
    await store.close()
    conn = sqlite3.connect(path / "default.sqlite3")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("DELETE FROM nodes WHERE id = 'event_2'")
    conn.commit()
    conn.close()
    again = await opened(path)
    try:
        assert db_of(again).full_loads == 1
        assert "event_2" not in db_of(again).events.row_of
        await assert_like_a_full_load(again)
    finally:
        await again.close()


@pytest.mark.parametrize(
    ("environ", "files_written"),
    [
        ({"MNEMOQL_EMBEDDED__MIRROR_MIN_ROWS": "0"}, True),
        ({"MNEMOQL_EMBEDDED__MIRROR_MIN_ROWS": "0", "MNEMOQL_EMBEDDED__MIRROR_FILES": "false"}, False),
        ({"MNEMOQL_EMBEDDED__MIRROR_MIN_ROWS": "0", "MNEMOQL_EMBEDDED__PERSIST": "false"}, False),
        ({}, False),  # 120 rows are below the default 20,000
    ],
)
async def test_the_mirror_file_settings_reach_the_store(
    tmp_path: Path, environ: dict[str, str], files_written: bool
) -> None:
    from mnemoql.engine.config import load_settings
    from mnemoql.web.service import open_store

    settings = load_settings({"MNEMOQL_DATA_DIR": str(tmp_path), **environ})
    store = open_store(settings)
    assert isinstance(store, EmbeddedStore)
    await store.open()
    try:
        await store.apply_save(batch(np.random.default_rng(2), 40, "s"))
    finally:
        await store.close()  # a store that keeps files writes them on close
    manifests = list((tmp_path / "memory.db.mirror").glob("*/manifest.json"))
    assert bool(manifests) is files_written
