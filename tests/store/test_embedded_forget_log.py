"""The embedded store's forget logs are bounded (issue 30): the topic and date removal log
(``recall_removed``, ``_schema.RECALL_BOUND_DDL``) and the ANN forget log (``ann_forgotten``,
``_epoch.record_forgotten``) keep a horizon of recent records. A real second process forgets;
this process follows it by rows while its mark is within the horizon, and reloads in full
(ending where a fresh open ends) once the log was pruned past it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np

from mnemoql import Memory
from mnemoql.engine.models import EMPTY_FILTERS
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.store.embedded._ann import AnnSettings
from tests.store.test_embedded_mirror import (
    assert_like_a_full_load,
    batch,
    contents,
    db_of,
    opened,
)
from tests.store.test_embedded_recall_catchup import answers

ROOT = Path(__file__).resolve().parents[2]
KEEP = 4  # the horizon the other process prunes to (the log holds at most KEEP + KEEP // 4)

# the other process: forgets the given events on the store, with a small ANN log horizon
FORGET_ON_STORE = """
import asyncio, sys
from mnemoql.engine.store.embedded import EmbeddedStore, _epoch
from mnemoql.engine.store.embedded._ann import AnnSettings

_epoch.FORGOTTEN_KEEP = int(sys.argv[2])

async def main(path, ids):
    store = EmbeddedStore(path, ann=AnnSettings(mode="exact", persist=False))
    await store.open()
    try:
        for event_id in ids:
            await store.forget(event_id)
    finally:
        await store.close()

asyncio.run(main(sys.argv[1], sys.argv[3:]))
"""

# the other process: forgets the given events through a Memory, with a small removal horizon
FORGET_ON_MEMORY = """
import asyncio, sqlite3, sys
from pathlib import Path
from mnemoql import Memory
from mnemoql.engine.models import EMPTY_FILTERS

async def main(data_dir, keep, ids):
    async with Memory(data_dir, embedding={"provider": "hashing"}) as m:
        with sqlite3.connect(Path(data_dir) / "memory.db") as conn:
            conn.execute("UPDATE recall_clock SET keep = ?", (keep,))
        for event_id in ids:
            await m.forget(event_id)

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3:]))
"""


def other_process(script: str, target: Path, *ids: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    subprocess.run(
        [sys.executable, "-c", script, str(target), str(KEEP), *ids],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip


def ann_log(path: Path) -> tuple[int, int]:
    """(records in ann_forgotten, the highest number pruned) of the store at ``path``."""
    with sqlite3.connect(path / "default.sqlite3") as conn:
        count = conn.execute("SELECT COUNT(*) FROM ann_forgotten").fetchone()[0]
        row = conn.execute("SELECT value FROM ann_state WHERE key = 'forgotten_pruned'").fetchone()
    return int(count), int(row[0]) if row else 0


async def test_mirrors_follow_a_forget_within_the_horizon_and_reload_beyond_it(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(11)
    path = tmp_path / "m"
    mine = await opened(path)
    try:
        await mine.apply_save(batch(rng, 60, "a"))
        db = db_of(mine)
        probe = np.full(16, 0.25, np.float32)
        loads = db.full_loads

        other_process(FORGET_ON_STORE, path, "event_3")  # one record: within the horizon
        await mine.route("summary", probe, EMPTY_FILTERS, frozenset(), 3)
        assert db.full_loads == loads, "a forget within the horizon cost a full reload"
        assert not db.events.live[db.events.row_of["event_3"]]
        assert ann_log(path) == (1, 0)

        gone = [f"event_{i}" for i in range(10, 30)]
        other_process(FORGET_ON_STORE, path, *gone)  # 20 records: pruned past this mark
        count, pruned = ann_log(path)
        assert count <= KEEP + KEEP // 4 and pruned > db.forgotten
        await mine.route("summary", probe, EMPTY_FILTERS, frozenset(), 3)
        assert db.full_loads == loads + 1, "followed a pruned log by rows"
        live = {db.events.ids[r] for r in range(db.events.n) if db.events.live[r]}
        assert not live & set(gone)
        await assert_like_a_full_load(mine)
    finally:
        await mine.close()


async def test_a_saved_index_behind_the_pruned_log_serves_stale_until_rebuilt(
    tmp_path: Path,
) -> None:
    """Closed with its indexes saved; the other process forgets past the horizon; the next
    open takes the saved index as stale (a key may linger in it) and builds a fresh one
    (a saved index within the horizon is adopted with no build: test_embedded_ann)."""
    rng = np.random.default_rng(12)
    path = tmp_path / "m"
    mine = await opened(path)
    await mine.apply_save(batch(rng, 60, "a"))
    await mine._call(db_of(mine).ann.flush)
    await mine.close()

    other_process(FORGET_ON_STORE, path, *[f"event_{i}" for i in range(10, 30)])
    assert ann_log(path)[1] > 0

    again = await opened(path)
    try:
        ann = db_of(again).ann
        await again._call(ann.flush)
        assert ann.builds >= 1, "the saved index was used as if it had followed the log"
        fresh = ann._indexes["summary"]
        assert not fresh.behind and not fresh.frozen and fresh.forgotten >= ann_log(path)[1]
        await assert_like_a_full_load(again)
    finally:
        await again.close()


async def test_the_ann_log_stays_bounded_after_many_forgets(tmp_path: Path) -> None:
    rng = np.random.default_rng(13)
    path = tmp_path / "m"
    store = EmbeddedStore(path, ann=AnnSettings(mode="exact", persist=False))
    await store.open()
    try:
        await store.apply_save(batch(rng, 60, "a"))
    finally:
        await store.close()
    other_process(FORGET_ON_STORE, path, *[f"event_{i}" for i in range(1, 51)])
    count, pruned = ann_log(path)
    assert 0 < count <= KEEP + KEEP // 4
    assert pruned >= 50 - KEEP - KEEP // 4
    fresh = await opened(path)
    try:
        assert contents(db_of(fresh))["events"].keys() == {f"event_{i}" for i in range(51, 61)}
    finally:
        await fresh.close()


def recall_log(data_dir: Path) -> tuple[int, int]:
    """(records in recall_removed, the newest stamp pruned) of the memory's one database."""
    with sqlite3.connect(data_dir / "memory.db") as conn:
        count = conn.execute("SELECT COUNT(*) FROM recall_removed").fetchone()[0]
        pruned = conn.execute("SELECT pruned FROM recall_clock").fetchone()[0]
    return int(count), int(pruned)


async def test_topic_index_follows_within_the_horizon_and_reloads_beyond_it(
    tmp_path: Path,
) -> None:
    async with Memory(tmp_path, embedding={"provider": "hashing"}) as mine:
        engine = mine.engine
        ids = []
        for k in range(12):
            saved = await mine.save(
                f"Note {k}: Alice planted bulbs in bed {k}.", topic_path=f"garden->bed{k % 3}"
            )
            ids += saved.event_ids
        await engine.topics()
        assert engine.recall.full_loads == 1
        day = (await engine.store.get_events(ids[:1]))[0].create_date

        other_process(FORGET_ON_MEMORY, tmp_path, ids[0])  # 2 records: within the horizon
        got = await answers(engine, day)
        assert engine.recall.full_loads == 1, "a removal within the horizon cost a reload"
        assert engine.recall.catch_ups >= 1
        assert ids[0] not in got["day"]
        assert recall_log(tmp_path)[1] == 0

        other_process(FORGET_ON_MEMORY, tmp_path, *ids[1:7])  # 12 records: pruned past
        count, pruned = recall_log(tmp_path)
        assert count <= KEEP + KEEP // 4
        assert engine.recall._mark is not None and pruned > engine.recall._mark.clock
        got = await answers(engine, day)
        assert engine.recall.full_loads == 2, "followed a pruned log by rows"
        assert not set(ids[:7]) & set(got["day"])

    async with Memory(tmp_path, embedding={"provider": "hashing"}) as fresh:
        want = await answers(fresh.engine, day)
    assert got == want
