"""The embedded store's vector mirrors kept on disk, so a large memory opens in seconds.

Reading a million events' vectors out of SQLite BLOBs takes a minute on a small machine. So
the mirrors are also written, as derived data, to ``<database>.mirror/<token>/``: one raw
float32 file per matrix (event summaries, chunks, each entity label), one ``.npz`` of the small
per-row arrays (seqs, dates, flags, chunk positions) and the ids as JSON, the manifest last. At
open the matrix files are memory-mapped copy-on-write (nothing is read until a search touches a
row; rows appended later go to private pages, never to the file) and stand in for the SQLite
load, and only what changed since is read from SQLite
(``_load.advance``: nodes above the files' highest seq, forgotten seqs, filled-in
entity vectors).

Never the only copy, and never trusted blindly:
    The database names the one valid directory: ``ann_state['mirror']`` holds its token,
    committed *before* the files are written. A crash while writing leaves the database
    naming a directory with no manifest (a full load then, and new files); a copy of the
    database made before the write names an older token whose directory is gone or other
    (a full load); any database that names the token was copied after that state committed,
    so it holds every node the files hold or lists it in ``ann_forgotten``. The manifest also
    carries the vector epoch (re-vectorize and restore change it), the width and every file's
    size; at open the live event rows are counted against SQLite. Anything that disagrees
    costs a full load, never a vector SQLite does not hold. Two processes on one file write
    different token directories, and the last token committed wins.
When they are written:
    After a full load of a memory of at least ``min_rows`` rows, and whenever the mirrors
    hold twice the rows of the files (at least ``STALE_ROWS`` more), on a background thread;
    on close, synchronously, when the files lack a tenth of the rows. Rows behind cost the next
    open a SQLite read of just those rows.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from mnemoql.engine.models import ENTITY_LABELS, EntityLabel
from mnemoql.engine.store.embedded._index import EntityView, EventView, capacity
from mnemoql.engine.store.embedded._load import Loaded

log = logging.getLogger(__name__)

FORMAT = 1
STALE_ROWS = 10_000  # never rewrite for fewer new rows than this
ORPHAN_AGE_S = 3600.0  # a directory without a manifest older than this is a dead write
_EVENT_ARRAYS = ("has_vec", "dates", "seqs", "live", "crow", "cidx", "cstart", "cend")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one write puts on disk: the rows ``[0, n)`` of each view, copied where the views
    can still change in place (entity vectors) and referenced where they cannot."""

    token: str
    epoch: str
    upto: int
    dims: int
    events: EventView
    ids: list[str]
    entities: dict[EntityLabel, tuple[list[str], npt.NDArray[Any], npt.NDArray[Any], Any]]
    forgotten: int = 0  # the forget log's position the rows follow from (_epoch.forgotten_mark)

    @property
    def rows(self) -> int:
        return self.events.n + self.events.nc + sum(len(e[0]) for e in self.entities.values())


def mirror_token(conn: sqlite3.Connection) -> str:
    row = conn.execute("SELECT value FROM ann_state WHERE key = 'mirror'").fetchone()
    return "" if row is None else str(row[0])


def _set_token(conn: sqlite3.Connection, token: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "INSERT INTO ann_state (key, value) VALUES ('mirror', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (token,),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


# ---------------------------------------------------------------- raw files


def _fsync_dir(path: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_raw(path: Path, array: npt.NDArray[Any]) -> int:
    """The rows, then zeros up to ``capacity`` rows (a sparse tail where the file system has
    them): the file is mapped whole at open, and appends fill the tail in place."""
    flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    row = array.dtype.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))

    def fill(f: BinaryIO) -> None:
        f.write(flat.data)
        f.truncate(capacity(array.shape[0]) * row)

    return _durable(path, fill)


def _write_npz(path: Path, arrays: dict[str, npt.NDArray[Any]]) -> int:
    return _durable(path, lambda f: np.savez(f, **arrays))  # type: ignore[arg-type]


def _write_json(path: Path, value: Any) -> int:
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return _durable(path, lambda f: f.write(body))


def _durable(path: Path, fill: Callable[[BinaryIO], object]) -> int:
    """``path`` written by ``fill`` and on disk (fsync) before this returns; its size."""
    with open(path, "wb") as f:
        fill(f)
        f.flush()
        os.fsync(f.fileno())
    return path.stat().st_size


def _mapped(path: Path, rows: int, dims: int) -> npt.NDArray[np.float32]:
    """The matrix file of ``rows`` rows mapped copy-on-write, with room up to ``capacity``:
    nothing is read at open (pages come from the page cache, or the disk, when a search first
    touches them, and are shared with the page cache), and rows appended later land in the
    mapping's private pages, never in the file."""
    cap = capacity(rows)
    if path.stat().st_size != cap * dims * 4:
        raise ValueError(f"{path} does not hold {cap} rows of {dims}")
    mm = np.memmap(path, dtype=np.float32, mode="c", shape=(cap, dims))
    return mm.view(np.ndarray)


def _padded(array: npt.NDArray[Any], cap: int) -> npt.NDArray[Any]:
    """``array`` in a buffer with room for ``cap`` rows (appends then need no copy)."""
    out = np.zeros((cap, *array.shape[1:]), dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


# ---------------------------------------------------------------- the directory


class MirrorFiles:
    """The on-disk mirrors of one database file. ``read`` and ``write`` run on the database
    thread (they use its connection); the files themselves are written on a thread of their
    own. ``writes`` and ``rows`` (rows of the files last written or read) are for tests."""

    def __init__(self, file: Path, enabled: bool, min_rows: int) -> None:
        self.root = file.with_name(file.name + ".mirror")
        self.enabled = enabled
        self.min_rows = min_rows
        self.writes = 0
        self.rows = -1  # rows the valid files hold; -1: none known to be valid
        self.epoch = ""
        self._worker: ThreadPoolExecutor | None = None
        self._running: Future[None] | None = None
        self._lock = threading.Lock()

    # ---- reading ----

    def read(self, conn: sqlite3.Connection, dims: int, epoch: str) -> Loaded | None:
        """The mirrors the database's token names, if they are complete and of this epoch
        and width; None otherwise (the caller loads from SQLite)."""
        if not self.enabled or not dims:
            return None
        token = mirror_token(conn)
        if not token:
            return None
        folder = self.root / token
        try:
            manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
        except (OSError, ValueError):
            return None
        if (
            manifest.get("format") != FORMAT
            or manifest.get("token") != token
            or manifest.get("epoch") != epoch
            or manifest.get("dims") != dims
        ):
            return None
        try:
            for name, size in manifest["files"].items():
                if (folder / name).stat().st_size != size:
                    return None
            loaded = self._load(folder, manifest)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring the saved vector mirrors in %s: %s", folder, exc)
            return None
        self.rows, self.epoch = (
            loaded.events.n + loaded.events.nc + sum(v.n for v in loaded.entities.values()),
            epoch,
        )
        return loaded

    def _load(self, folder: Path, manifest: dict[str, Any]) -> Loaded:
        dims, n, nc = int(manifest["dims"]), int(manifest["n"]), int(manifest["nc"])
        vecs = _mapped(folder / "events.f32", n, dims)
        cvecs = _mapped(folder / "chunks.f32", nc, dims)
        with np.load(folder / "events.npz") as z:
            a = {k: z[k] for k in _EVENT_ARRAYS}
        ids: list[str] = json.loads((folder / "events.json").read_text("utf-8"))
        if len(ids) != n or any(a[k].shape[0] != n for k in ("has_vec", "dates", "seqs", "live")):
            raise ValueError("event arrays disagree with the manifest")
        if any(a[k].shape[0] != nc for k in ("crow", "cidx", "cstart", "cend")):
            raise ValueError("chunk arrays disagree with the manifest")
        seqs, crow = a["seqs"], a["crow"]
        if n > 1 and not bool(np.all(seqs[1:] >= seqs[:-1])):
            raise ValueError("event seqs out of order")
        if nc and (
            not bool(np.all(crow[1:] >= crow[:-1])) or int(crow[0]) < 0 or int(crow[-1]) >= n
        ):
            raise ValueError("chunk rows out of order")
        starts = np.flatnonzero(np.r_[True, crow[1:] != crow[:-1]]) if nc else crow[:0]
        ng, cap, ccap = starts.shape[0], capacity(n), capacity(nc)
        events = EventView(
            dims=dims,
            n=n,
            ids=ids,
            row_of=dict(zip(ids, range(n), strict=True)),  # a repeated id: its latest row
            vecs=vecs,
            has_vec=_padded(a["has_vec"].astype(np.bool_), cap),
            dates=_padded(a["dates"].astype(np.int32), cap),
            seqs=_padded(seqs.astype(np.int64), cap),
            live=_padded(a["live"].astype(np.bool_), cap),
            nc=nc,
            cvecs=cvecs,
            crow=_padded(crow.astype(np.int64), ccap),
            cidx=_padded(a["cidx"].astype(np.int64), ccap),
            cstart=_padded(a["cstart"].astype(np.int64), ccap),
            cend=_padded(a["cend"].astype(np.int64), ccap),
            ng=ng,
            gstart=_padded(starts.astype(np.int64), capacity(ng)),
            gevent=_padded(crow[starts].astype(np.int64), capacity(ng)),
        )
        entities: dict[EntityLabel, EntityView] = {}
        for label in ENTITY_LABELS:
            m = int(manifest["entities"][label])
            evecs = _mapped(folder / f"{label}.f32", m, dims)
            with np.load(folder / f"{label}.npz") as z:
                has_vec, eseqs = z["has_vec"].astype(np.bool_), z["seqs"].astype(np.int64)
            eids: list[str] = json.loads((folder / f"{label}.json").read_text("utf-8"))
            if len(eids) != m or has_vec.shape[0] != m or eseqs.shape[0] != m:
                raise ValueError(f"{label} arrays disagree with the manifest")
            entities[label] = EntityView(
                dims,
                m,
                eids,
                dict(zip(eids, range(m), strict=True)),
                evecs,
                _padded(has_vec, capacity(m)),
                _padded(eseqs, capacity(m)),
            )
        # files from before the bounded forget log carry no position: 0, reloaded once pruned
        return Loaded(
            events,
            entities,
            int(manifest["upto"]),
            str(manifest["epoch"]),
            forgotten=int(manifest.get("forgotten", 0)),
        )

    # ---- writing ----

    def stale(self, got: Loaded, closing: bool = False) -> bool:
        """Whether the files should be written again for mirrors like ``got``: while open once
        they hold half the rows or less (so a long import rewrites them a few times, not after
        every tenth), on close once they lack a tenth."""
        if not self.enabled or not got.events.dims:
            return False
        rows = got.events.n + got.events.nc + sum(v.n for v in got.entities.values())
        if rows < self.min_rows:
            return False
        if self.rows < 0 or self.epoch != got.epoch:
            return True
        return rows - self.rows >= max(STALE_ROWS, self.rows // 10 if closing else self.rows)

    def write(self, conn: sqlite3.Connection, got: Loaded, wait: bool = False) -> bool:
        """Name a new directory in the database, then write ``got`` into it (in the
        background unless ``wait``). False when a write is still running or the database
        was busy (the next chance writes)."""
        with self._lock:
            if self._running is not None and not self._running.done():
                if not wait:
                    return False
                running = self._running
            else:
                running = None
        if running is not None:
            running.result()
        snap = self._snapshot(got)
        try:
            _set_token(conn, snap.token)
        except sqlite3.Error as exc:
            log.warning("could not record new vector mirror files: %s", exc)
            return False
        self.rows, self.epoch = snap.rows, snap.epoch  # claimed now: no second write queued
        if wait:
            self._write_safely(snap)
            return True
        with self._lock:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="mnemoql-mirror")
            self._running = self._worker.submit(self._write_safely, snap)
        return True

    def _snapshot(self, got: Loaded) -> Snapshot:
        ev = got.events
        entities = {
            label: (
                view.ids[: view.n],
                view.vecs[: view.n].copy(),  # merges fill entity vectors in place
                view.has_vec[: view.n].copy(),
                view.seqs[: view.n].copy(),
            )
            for label, view in got.entities.items()
        }
        return Snapshot(
            secrets.token_hex(8),
            got.epoch,
            got.upto,
            ev.dims,
            ev,
            ev.ids[: ev.n],
            entities,
            got.forgotten,
        )

    def _write_safely(self, snap: Snapshot) -> None:
        try:
            self._write_files(snap)
            self.writes += 1
        except Exception as exc:  # the SQLite load still works; log and write again later
            # the rows stay claimed: tried again once the mirrors have grown (not at once,
            # which would rewrite after every save while a disk is full)
            log.warning("could not write the vector mirrors to %s: %s", self.root, exc)

    def _write_files(self, snap: Snapshot) -> None:
        folder = self.root / snap.token
        folder.mkdir(parents=True, exist_ok=True)
        ev, n, nc = snap.events, snap.events.n, snap.events.nc
        files = {
            "events.f32": _write_raw(folder / "events.f32", ev.vecs[:n]),
            "chunks.f32": _write_raw(folder / "chunks.f32", ev.cvecs[:nc]),
            "events.npz": _write_npz(
                folder / "events.npz",
                {
                    "has_vec": ev.has_vec[:n],
                    "dates": ev.dates[:n],
                    "seqs": ev.seqs[:n],
                    "live": ev.live[:n],
                    "crow": ev.crow[:nc],
                    "cidx": ev.cidx[:nc],
                    "cstart": ev.cstart[:nc],
                    "cend": ev.cend[:nc],
                },
            ),
            "events.json": _write_json(folder / "events.json", snap.ids),
        }
        for label, (ids, vecs, has_vec, seqs) in snap.entities.items():
            files[f"{label}.f32"] = _write_raw(folder / f"{label}.f32", vecs)
            files[f"{label}.npz"] = _write_npz(
                folder / f"{label}.npz", {"has_vec": has_vec, "seqs": seqs}
            )
            files[f"{label}.json"] = _write_json(folder / f"{label}.json", ids)
        manifest = {
            "format": FORMAT,
            "token": snap.token,
            "epoch": snap.epoch,
            "dims": snap.dims,
            "upto": snap.upto,
            "forgotten": snap.forgotten,
            "n": n,
            "nc": nc,
            "entities": {label: len(e[0]) for label, e in snap.entities.items()},
            "files": files,
        }
        _write_json(folder / "manifest.json.tmp", manifest)
        os.replace(folder / "manifest.json.tmp", folder / "manifest.json")
        _fsync_dir(folder)
        self._clean(folder)

    def _clean(self, keep: Path) -> None:
        """Remove older complete directories and abandoned incomplete ones (best effort: a
        directory another process is still writing is younger than ``ORPHAN_AGE_S``)."""
        mine = (keep / "manifest.json").stat().st_mtime
        for other in self.root.iterdir():
            if other == keep or not other.is_dir():
                continue
            try:
                done = other / "manifest.json"
                age = time.time() - other.stat().st_mtime
                if (done.is_file() and done.stat().st_mtime <= mine) or age > ORPHAN_AGE_S:
                    shutil.rmtree(other, ignore_errors=True)
            except OSError:
                continue

    def flush(self) -> None:
        """Wait for a background write (tests, benchmarks, close)."""
        with self._lock:
            running = self._running
        if running is not None:
            running.result()

    def close(self) -> None:
        self.flush()
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=True)
