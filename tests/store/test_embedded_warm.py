"""The page-cache warm-up after open (``embedded._warm``): reads the files in order, within
its budget, not at all for small memories, and stops when the store closes."""

from __future__ import annotations

from pathlib import Path

from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.store.embedded._ann import AnnSettings
from mnemoql.engine.store.embedded._warm import PageWarmer, available_memory, files_under

MB = 1 << 20


def files(tmp_path: Path) -> list[Path]:
    (tmp_path / "index").mkdir()
    out = [tmp_path / "index" / "b.usearch", tmp_path / "index" / "a.usearch", tmp_path / "db"]
    for i, f in enumerate(out):
        f.write_bytes(bytes([i]) * MB)
    return out


def run(warmer: PageWarmer) -> PageWarmer:
    warmer.start()
    assert warmer.done.wait(30)
    warmer.close()
    return warmer


def test_every_file_is_read_once_directories_first_in_name_order(tmp_path: Path) -> None:
    made = files(tmp_path)
    paths = [tmp_path / "index", tmp_path / "db", tmp_path / "index", tmp_path / "missing"]
    assert files_under(paths) == [made[1], made[0], made[2]]
    warmer = run(PageWarmer(paths, min_bytes=0, memory=lambda: 1 << 40))
    assert warmer.read == 3 * MB


def test_reading_stops_at_half_the_available_memory(tmp_path: Path) -> None:
    files(tmp_path)
    paths = [tmp_path / "index", tmp_path / "db"]
    warmer = run(PageWarmer(paths, min_bytes=0, memory=lambda: 3 * MB))  # budget 1.5 MB
    assert warmer.read == 2 * MB  # two whole files of 1 MB, then the budget is spent
    unknown = run(PageWarmer(paths, min_bytes=0, memory=lambda: None))
    assert unknown.read == 0


def test_small_memories_are_left_alone(tmp_path: Path) -> None:
    files(tmp_path)
    warmer = run(PageWarmer([tmp_path], min_bytes=4 * MB, memory=lambda: 1 << 40))
    assert warmer.read == 0


def test_close_stops_the_reading(tmp_path: Path) -> None:
    big = tmp_path / "sparse"
    with open(big, "wb") as f:
        f.truncate(64 << 30)  # 64 GB of holes: reads cost no disk, only time
    warmer = PageWarmer([big], min_bytes=0, memory=lambda: 1 << 42)
    warmer.start()
    warmer.close()
    assert warmer.done.is_set() and 0 <= warmer.read < 64 << 30


def test_available_memory_is_known_here() -> None:
    avail = available_memory()
    assert avail is None or avail > 0


async def test_the_store_warms_only_when_asked(tmp_path: Path) -> None:
    for prefetch in (True, False):
        store = EmbeddedStore(tmp_path / f"m{prefetch}.db", ann=AnnSettings(prefetch=prefetch))
        await store.open()
        try:
            warmer = store._database.warmer
            assert (warmer is not None) is prefetch
            if warmer is not None:
                assert warmer.done.wait(30) and warmer.read == 0  # a small memory
                assert store.file not in warmer.paths  # see the test below
        finally:
            await store.close()


async def test_the_warm_up_never_opens_the_database_files(tmp_path: Path) -> None:
    """Closing any descriptor of a SQLite file drops the process's locks on it: a warm-up that
    read the database let a second writing process corrupt it (issue #30). Only the derived
    files (indexes, vector mirrors) are read."""
    store = EmbeddedStore(tmp_path / "memory.db", ann=AnnSettings(prefetch=True))
    await store.open()
    try:
        warmer = store._database.warmer
        assert warmer is not None
        sqlite_files = {store.file, store.file.with_name(store.file.name + "-wal")}
        assert not sqlite_files & set(files_under(warmer.paths) + warmer.paths)
    finally:
        await store.close()
