"""The embedded store's ANN indexes: same answers as the exact scan, derived data that a crash,
a stale copy, forget, re-vectorize or restore can never make serve a wrong vector."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from mnemoql.engine.drafts import SavePlan
from mnemoql.engine.models import EMPTY_FILTERS, Filters, MemoryMeta, VectorSet
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.store.embedded._ann import AnnIndexes, AnnSettings
from tests.store._builders import chunks_for, concept, event, plan, rel

D = 32
META = MemoryMeta("test-embedder", D, "2026-03-01T09:00:00+08:00")
ANN = AnnSettings(min_vectors=0)


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, D)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def batch(rng: np.random.Generator, n: int, day: str = "2026-03-01") -> SavePlan:
    """``n`` events with a summary vector and two chunk vectors, each MENTIONing a concept."""
    vecs, cvecs = unit(rng, n), unit(rng, 2 * n)
    events = []
    for i in range(n):
        ev = event(f"e{i}", vecs[i], content=f"event {i} " + "y" * 60)
        ev.chunks = chunks_for(ev.content, [cvecs[2 * i], cvecs[2 * i + 1]])
        events.append(ev)
    entities = [concept(f"c{k}", f"{day} topic {k}", vector=unit(rng, 1)[0]) for k in range(3)]
    rels = [rel("MENTIONS", f"e{i}", f"c{i % 3}") for i in range(n)]
    p = plan(events, entities, rels, day=day, meta=META)
    return p


async def opened(path: Path, ann: AnnSettings = ANN) -> EmbeddedStore:
    store = EmbeddedStore(path, ann=ann)
    await store.open()
    return store


async def both(tmp: Path, plans: list[SavePlan]) -> tuple[EmbeddedStore, EmbeddedStore]:
    exact = await opened(tmp / "exact", AnnSettings(mode="exact"))
    ann = await opened(tmp / "ann")
    for p in plans:
        await exact.apply_save(p)
        await ann.apply_save(p)
    return exact, ann


def index_of(store: EmbeddedStore, kind: str) -> object:
    db = store._database
    return db.ann.index(kind, db.generation)


async def same_routes(
    exact: EmbeddedStore, ann: EmbeddedStore, queries: np.ndarray, **kw: object
) -> None:
    for q in queries:
        for route in ("summary", "chunk"):
            args = (kw.get("filters", EMPTY_FILTERS), kw.get("exclude", frozenset()))
            want = await exact.route(route, q, *args, 40, kw.get("restrict"))  # type: ignore[arg-type]
            got = await ann.route(route, q, *args, 40, kw.get("restrict"))  # type: ignore[arg-type]
            assert [(h.event_id, h.chunk_index) for h in got] == [
                (h.event_id, h.chunk_index) for h in want
            ]
            assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6)


async def test_index_answers_exactly_like_the_scan_on_small_data(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    exact, ann = await both(tmp_path, [batch(rng, 150), batch(rng, 150, day="2026-03-05")])
    try:
        assert index_of(ann, "summary") is not None and index_of(ann, "chunk") is not None
        assert index_of(exact, "summary") is None
        qs = unit(rng, 12)
        await same_routes(exact, ann, qs)
        await same_routes(exact, ann, qs, filters=Filters(date_from="2026-03-04"))
        await same_routes(exact, ann, qs, exclude=frozenset(f"event_{i}" for i in range(1, 60)))
        await same_routes(exact, ann, qs, restrict=frozenset(f"event_{i}" for i in range(30)))
        for q in qs:
            want = await exact.similar_entities("Concept", q, 3, -1.0)
            got = await ann.similar_entities("Concept", q, 3, -1.0)
            assert [e.id for e, _ in got] == [e.id for e, _ in want]
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
    finally:
        await exact.close()
        await ann.close()


async def test_the_index_is_used_and_saved_beside_the_database(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    store = await opened(tmp_path / "m")
    await store.apply_save(batch(rng, 200))
    ann_dir = store.file.with_name(store.file.name + ".ann")
    await store.close()
    assert (ann_dir / "manifest.json").is_file() and (ann_dir / "summary.usearch").is_file()
    again = await opened(tmp_path / "m")
    try:
        h = index_of(again, "summary")
        assert h is not None and h.covered == 200  # type: ignore[attr-defined]
        v = again._database.events.vecs[17]
        hits = await again.route("summary", v, EMPTY_FILTERS, frozenset(), 1)
        assert hits[0].event_id == "event_18" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    finally:
        await again.close()
    exact_only = await opened(tmp_path / "x", AnnSettings(mode="exact"))
    await exact_only.apply_save(batch(rng, 10))
    await exact_only.close()
    assert not exact_only.file.with_name(exact_only.file.name + ".ann").exists()


def copy_memory(src: EmbeddedStore, dst: Path) -> None:
    """Copy a memory while it is open (database, WAL and the index directory)."""
    dst.mkdir(parents=True)
    for f in src.file.parent.iterdir():
        target = dst / f.name
        if f.is_dir():
            # a file being written is a *.tmp renamed into place when complete: a copy taken
            # meanwhile could see it vanish (seen in CI), and it is no part of the index yet
            shutil.copytree(f, target, ignore=shutil.ignore_patterns("*.tmp"))
        else:
            shutil.copy2(f, target)


async def test_a_copy_made_mid_write_catches_up_and_drops_forgotten_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemoql.engine.store.embedded import _ann as _embedded_ann

    monkeypatch.setattr(_embedded_ann, "FROZEN_TAIL_ROWS", 0)  # thaw and catch up at once
    rng = np.random.default_rng(3)
    store = await opened(tmp_path / "a")
    await store.apply_save(batch(rng, 200))
    old_vec = unit(rng, 1)[0]
    last = (await store.apply_save(plan([event("x", old_vec)], meta=META))).event_ids[0]
    await store.close()  # index saved, holding `last` under the newest seq
    store = await opened(tmp_path / "a")
    last_seq = int(store._database.events.seqs[store._database.events.n - 1])
    # forgetting the newest node frees MAX(seq) + 1: the next node takes the same key
    await store.forget(last)
    new_vec = unit(rng, 1)[0]
    reborn = (await store.apply_save(plan([event("n", new_vec)], meta=META))).event_ids[0]
    view = store._database.events
    assert int(view.seqs[view.row_of[reborn]]) == last_seq
    await store.apply_save(batch(rng, 100, day="2026-03-02"))  # indexed in memory only
    await store.forget("event_5")
    copy_memory(store, tmp_path / "copy")
    copy = await opened(tmp_path / "copy")
    try:
        db = copy._database
        for thawed in (False, True):  # the saved file mapped as it is, then its mutable copy
            if thawed:
                await asyncio.to_thread(db.ann.flush)
                h = index_of(copy, "summary")
                assert h is not None and h.covered == db.events.n  # type: ignore[attr-defined]
                assert not h.index.contains(5)  # type: ignore[attr-defined]  # event_5's seq
            hits = await copy.route("summary", new_vec, EMPTY_FILTERS, frozenset(), 3)
            assert hits[0].event_id == reborn and hits[0].score == pytest.approx(1.0, abs=1e-5)
            hits = await copy.route("summary", old_vec, EMPTY_FILTERS, frozenset(), 40)
            assert all(x.event_id not in ("event_5", last) for x in hits)
        copy_memory(store, tmp_path / "copy2")  # the same copy, scanned exactly
        exact = await opened(tmp_path / "copy2", AnnSettings(mode="exact"))
        try:
            await same_routes(exact, copy, unit(rng, 8))
        finally:
            await exact.close()
    finally:
        await copy.close()
        await store.close()


async def test_forget_never_returns_the_event_again(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    exact, ann = await both(tmp_path, [batch(rng, 120)])
    try:
        target = exact._database.events.vecs[9]  # event_10
        for s in (exact, ann):
            await s.forget("event_10")
        hits = await ann.route("chunk", target, EMPTY_FILTERS, frozenset(), 40)
        assert "event_10" not in [h.event_id for h in hits]
        await same_routes(exact, ann, np.stack([target, *unit(rng, 5)]))
    finally:
        await exact.close()
        await ann.close()


async def test_revectorize_and_a_stale_saved_index(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    exact, ann = await both(tmp_path, [batch(rng, 150)])
    stale = tmp_path / "stale"
    await ann.close()
    ann_dir = ann.file.with_name(ann.file.name + ".ann")
    shutil.copytree(ann_dir, stale)  # the index of the old vectors
    ann = await opened(tmp_path / "ann")
    try:
        view = exact._database.events
        ids = view.ids[: view.n]
        new = unit(rng, len(ids))
        vectors = VectorSet(
            events={i: new[k] for k, i in enumerate(ids)},
            entities={},
            chunks=[],
            meta=META,
        )
        for s in (exact, ann):
            await s.replace_vectors(vectors)
        await same_routes(exact, ann, new[:6])
        await ann.close()
        shutil.rmtree(ann_dir)
        shutil.copytree(stale, ann_dir)  # a crash left the old index in place
        ann = await opened(tmp_path / "ann")
        h = index_of(ann, "summary")
        assert h is not None
        for k in range(0, 150, 15):  # the index holds the new vectors, not the old ones
            keys = h.search(new[k], 1)  # type: ignore[attr-defined]
            assert keys is not None and int(keys[0]) == int(view.seqs[k])
        await same_routes(exact, ann, new[6:12])
    finally:
        await exact.close()
        await ann.close()


async def test_a_restored_memory_gets_an_index(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    src = await opened(tmp_path / "src")
    await src.apply_save(batch(rng, 80))
    records = [r async for r in src.export_records(vectors=True)]
    dst = await opened(tmp_path / "dst")
    try:
        await dst.import_records(records)
        h = index_of(dst, "summary")
        assert h is not None and h.covered == 80  # type: ignore[attr-defined]
        q = src._database.events.vecs[3]
        want = await src.route("summary", q, EMPTY_FILTERS, frozenset(), 10)
        got = await dst.route("summary", q, EMPTY_FILTERS, frozenset(), 10)
        assert [x.event_id for x in got] == [x.event_id for x in want]
    finally:
        await src.close()
        await dst.close()


async def test_another_writer_is_caught_up_without_rebuilding_the_index(tmp_path: Path) -> None:
    """A second connection to the same file (another process: `mnemoql import`, a second
    server) saves and forgets; the first store's indexes follow by key, with no rebuild,
    and answer like the exact scan. Only a vector change (re-vectorize) rebuilds them."""
    rng = np.random.default_rng(7)
    mine = await opened(tmp_path / "m")
    other = await opened(tmp_path / "m", AnnSettings(mode="exact", persist=False))
    exact = await opened(tmp_path / "x", AnnSettings(mode="exact"))
    try:
        first = batch(rng, 150)
        for s in (mine, exact):
            await s.apply_save(first)
        db = mine._database
        mine_ann = db.ann
        await mine.route("summary", unit(rng, 1)[0], EMPTY_FILTERS, frozenset(), 5)
        builds, caught = mine_ann.builds, db.caught_up
        assert builds >= 2 and index_of(mine, "summary") is not None

        later = batch(rng, 60, day="2026-03-02")
        for s in (other, exact):
            await s.apply_save(later)
            await s.forget("event_7")
        target = exact._database.events.vecs[exact._database.events.row_of["event_7"]]
        await same_routes(exact, mine, np.stack([target, *unit(rng, 6)]))
        assert db.caught_up > caught  # the mirrors did reload ...
        assert mine_ann.builds == builds  # ... and the indexes followed instead of rebuilding
        h = index_of(mine, "summary")
        assert h is not None and h.covered == db.events.n  # type: ignore[attr-defined]
        gone = int(db.events.seqs[0]) + 6  # event_7's seq: its key left the index
        assert not h.index.contains(gone)  # type: ignore[attr-defined]
        hits = await mine.route("chunk", target, EMPTY_FILTERS, frozenset(), 40)
        assert "event_7" not in [x.event_id for x in hits]

        view = exact._database.events
        ids = view.ids[: view.n]
        new = unit(rng, len(ids))
        vectors = VectorSet(
            events={i: new[k] for k, i in enumerate(ids) if view.live[k]},
            entities={},
            chunks=[],
            meta=META,
        )
        for s in (other, exact):
            await s.replace_vectors(vectors)
        await same_routes(exact, mine, new[:6])
        assert mine_ann.builds > builds  # new vectors: the indexes were built again
        h = index_of(mine, "summary")
        assert h is not None
        keys = h.search(new[3], 1)  # type: ignore[attr-defined]
        assert keys is not None and int(keys[0]) == int(db.events.seqs[3])
    finally:
        for s in (mine, other, exact):
            await s.close()


async def test_a_node_given_a_forgotten_seq_is_found_through_the_index(tmp_path: Path) -> None:
    """Forgetting the newest event frees its seq for the next node; the live mirror then
    holds that seq twice (the dead row and the new one) and the index key must reach the new
    one, as the exact scan does."""
    rng = np.random.default_rng(8)
    exact, ann = await both(tmp_path, [batch(rng, 120)])
    try:
        vec = unit(rng, 1)[0]
        for s in (exact, ann):
            last = (await s.apply_save(plan([event("x", unit(rng, 1)[0])], meta=META))).event_ids
            await s.forget(last[0])
            await s.apply_save(plan([event("n", vec)], meta=META))
        view = ann._database.events
        assert view.seqs[view.n - 1] == view.seqs[view.n - 2]  # the seq came back
        hits = await ann.route("summary", vec, EMPTY_FILTERS, frozenset(), 3)
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        await same_routes(exact, ann, np.stack([vec, *unit(rng, 4)]))
    finally:
        await exact.close()
        await ann.close()


async def test_a_forget_elsewhere_of_a_node_its_mirror_never_held_reaches_the_index(
    tmp_path: Path,
) -> None:
    """The other process forgets the newest event before its mirrors ever held it, and the
    next node takes that seq: this store's index must drop the old key and index the new
    vector under it (else the new node is never proposed)."""
    rng = np.random.default_rng(9)
    mine = await opened(tmp_path / "m")
    other = await opened(tmp_path / "m", AnnSettings(mode="exact", persist=False))
    try:
        await mine.apply_save(batch(rng, 120))
        last = (await mine.apply_save(plan([event("x", unit(rng, 1)[0])], meta=META))).event_ids
        db = mine._database
        old_seq = int(db.events.seqs[db.events.n - 1])
        assert last[0] not in other._database.events.row_of  # its mirror is behind
        await other.forget(last[0])
        vec = unit(rng, 1)[0]
        await other.apply_save(plan([event("n", vec)], meta=META))
        hits = await mine.route("summary", vec, EMPTY_FILTERS, frozenset(), 3)
        view = db.events
        assert int(view.seqs[view.row_of[hits[0].event_id]]) == old_seq  # the seq came back
        assert hits[0].event_id != last[0] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    finally:
        await mine.close()
        await other.close()


async def test_a_frozen_saved_index_serves_and_takes_its_edits_when_thawed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saved index is mapped read-only at open and copied in the background: saves and
    forgets meanwhile wait (new rows scanned exactly, forgotten ones filtered), and the copy
    takes them. usearch would crash on an edit of the mapped file."""
    from mnemoql.engine.store.embedded import _ann as _embedded_ann

    monkeypatch.setattr(_embedded_ann, "FROZEN_TAIL_ROWS", 0)  # every write thaws it
    rng = np.random.default_rng(12)
    path = tmp_path / "a"
    store = await opened(path)
    await store.apply_save(batch(rng, 150))
    await store.close()
    gate = threading.Event()
    thaw = AnnIndexes._thaw

    def held(self: AnnIndexes, kind: str) -> None:
        gate.wait(30)
        thaw(self, kind)

    monkeypatch.setattr(AnnIndexes, "_thaw", held)
    store = await opened(path)
    exact = await opened(tmp_path / "x", AnnSettings(mode="exact"))
    try:
        await exact.apply_save(batch(np.random.default_rng(12), 150))
        h = index_of(store, "summary")
        assert h is not None and h.frozen  # type: ignore[attr-defined]
        later = batch(rng, 40, day="2026-03-02")
        for s in (store, exact):
            await s.apply_save(later)
            await s.forget("event_3")
        assert h.frozen and h.covered == 150  # type: ignore[attr-defined]
        await same_routes(exact, store, unit(rng, 6))
        gate.set()
        await asyncio.to_thread(store._database.ann.flush)
        assert not h.frozen and h.covered == store._database.events.n  # type: ignore[attr-defined]
        assert not h.index.contains(int(store._database.events.seqs[2]))  # type: ignore[attr-defined]
        await same_routes(exact, store, unit(rng, 6))
    finally:
        gate.set()
        await store.close()
        await exact.close()


async def test_an_event_one_index_cannot_reach_is_found_through_the_other(
    tmp_path: Path,
) -> None:
    """HNSW graphs have regions a search does not reach. The route pool rescores both
    indexes' candidates in both routes, so an event the summary index misses is still in the
    summary route when the chunk index proposes it (its chunks lie near its summary)."""
    rng = np.random.default_rng(11)
    vecs = unit(rng, 300)
    events = []
    for i in range(300):
        ev = event(f"e{i}", vecs[i], content=f"event {i} " + "y" * 60)
        near = vecs[i] + 0.05 * unit(rng, 2)
        ev.chunks = chunks_for(ev.content, list(near / np.linalg.norm(near, axis=1)[:, None]))
        events.append(ev)
    exact, ann = await both(tmp_path, [plan(events, [], [], meta=META)])
    try:
        q = vecs[7] + 0.1 * unit(rng, 1)[0]
        want = await exact.route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        top = want.summary[0].event_id
        view = ann._database.events
        hole = np.uint64(view.seqs[view.ids.index(top)])
        h = index_of(ann, "summary")
        search = h.search  # type: ignore[attr-defined]

        def blind(query: np.ndarray, count: int) -> np.ndarray | None:
            keys = search(query, count)
            return None if keys is None else keys[keys != hole]

        h.search = blind  # type: ignore[attr-defined]
        alone = await ann.route("summary", q, EMPTY_FILTERS, frozenset(), 10)
        assert top not in [x.event_id for x in alone]  # the hole is real for the route alone
        got = await ann.route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        assert [x.event_id for x in got.summary] == [x.event_id for x in want.summary]
        assert [x.event_id for x in got.chunk] == [x.event_id for x in want.chunk]
        assert set(got.events) == set(want.events)
    finally:
        await exact.close()
        await ann.close()


async def test_a_saved_index_of_other_graph_parameters_serves_until_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A graph keeps the quality it was built with: files saved with other parameters (M 16 /
    efConstruction 64 before, or none named) are rebuilt in the background, and until the new
    index is in, the old file answers (exactly rescored) instead of a scan of every vector.
    The new files name their parameters."""
    import json

    from mnemoql.engine.store.embedded import _ann as _embedded_ann
    from mnemoql.engine.store.embedded._hnsw import GRAPH

    rng = np.random.default_rng(12)
    store = await opened(tmp_path / "m")
    await store.apply_save(batch(rng, 200))
    ann_dir = store.file.with_name(store.file.name + ".ann")
    await store.close()
    manifest = json.loads((ann_dir / "manifest.json").read_text())
    assert {k: v["graph"] for k, v in manifest["indexes"].items()} == {
        k: GRAPH for k in manifest["indexes"]
    }
    again = await opened(tmp_path / "m")
    try:
        assert again._database.ann.builds == 0  # the saved files were loaded
    finally:
        await again.close()
    old_graph = {"connectivity": 16, "expansion_add": 64}
    for info in manifest["indexes"].values():
        info["graph"] = old_graph
    manifest["indexes"]["chunk"].pop("graph")
    manifest["graph"] = old_graph  # session 9's form: one graph for every file
    (ann_dir / "manifest.json").write_text(json.dumps(manifest))

    gate = threading.Event()
    build = _embedded_ann.AnnIndexes._build

    def held(self: AnnIndexes, kind: str) -> None:
        gate.wait(10)
        build(self, kind)

    monkeypatch.setattr(_embedded_ann.AnnIndexes, "_build", held)
    old = await opened(tmp_path / "m")
    try:
        ann = old._database.ann
        stale = index_of(old, "summary")
        assert stale is not None and stale.stale and stale.frozen  # type: ignore[attr-defined]
        calls = []
        search = stale.search  # type: ignore[attr-defined]
        stale.search = lambda q, n: calls.append(n) or search(q, n)  # type: ignore[attr-defined]
        v = old._database.events.vecs[17]
        hits = await old.route("summary", v, EMPTY_FILTERS, frozenset(), 1)
        assert hits[0].event_id == "event_18"
        assert calls  # the old index answered while its replacement was being built
        assert ann.builds == 0
        gate.set()
        ann.flush()
        assert ann.builds >= 2  # summary and chunk built afresh
        fresh = index_of(old, "summary")
        assert fresh is not stale and not fresh.stale  # type: ignore[attr-defined]
        hits = await old.route("summary", v, EMPTY_FILTERS, frozenset(), 1)
        assert hits[0].event_id == "event_18"
    finally:
        gate.set()
        await old.close()
    saved = json.loads((ann_dir / "manifest.json").read_text())
    assert "graph" not in saved
    assert {k: v["graph"] for k, v in saved["indexes"].items()} == {
        k: GRAPH for k in saved["indexes"]
    }


async def test_a_saved_index_stays_mapped_until_rows_wait_and_thaws_handing_the_gil_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory that is only read, or written a little, keeps its saved index mapped (the rows
    it lacks are rescored exactly): the mutable copy stalls the whole process while usearch
    loads it (it holds the GIL from start to end: seconds at 1M events). Once more rows wait
    than ``FROZEN_TAIL_ROWS``, the index thaws, loading with usearch's progress callback, which
    gives the GIL away while it loads, and the copy holds the file's rows and the new ones."""
    import types

    from mnemoql.engine.store.embedded import _ann as _embedded_ann
    from mnemoql.engine.store.embedded import _ann_files

    rng = np.random.default_rng(21)
    path = tmp_path / "a"
    store = await opened(path)
    await store.apply_save(batch(rng, 150))
    await store.close()
    yields: list[float] = []
    clock = types.SimpleNamespace(monotonic=_ann_files.time.monotonic, sleep=yields.append)
    monkeypatch.setattr(_ann_files, "time", clock)
    monkeypatch.setattr(_ann_files, "_YIELD_EVERY_S", 0.0)
    monkeypatch.setattr(_embedded_ann, "FROZEN_TAIL_ROWS", 40)
    store = await opened(path)
    exact = await opened(tmp_path / "x", AnnSettings(mode="exact"))
    try:
        await exact.apply_save(batch(np.random.default_rng(21), 150))
        h = index_of(store, "summary")
        few, more = batch(rng, 15, day="2026-03-02"), batch(rng, 30, day="2026-03-03")
        for s in (store, exact):
            await s.apply_save(few)  # 15 summary rows (30 chunk rows) wait: mapped still
        await asyncio.to_thread(store._database.ann.flush)
        assert h is not None and h.frozen and not yields  # type: ignore[attr-defined]
        assert h.covered == 150  # type: ignore[attr-defined]
        await same_routes(exact, store, unit(rng, 4))  # the waiting rows are found exactly
        for s in (store, exact):
            await s.apply_save(more)  # 45 (90) wait: thawed in the background
        await asyncio.to_thread(store._database.ann.flush)
        assert not h.frozen  # type: ignore[attr-defined]
        assert yields and set(yields) == {0}  # one sleep(0) per node at a 0 s interval
        seqs = store._database.events.seqs[: store._database.events.n]
        assert len(seqs) == 195 and len(h.index) == 195  # type: ignore[attr-defined]
        assert all(h.index.contains(int(s)) for s in seqs)  # type: ignore[attr-defined]
        await same_routes(exact, store, unit(rng, 4))
    finally:
        await store.close()
        await exact.close()
