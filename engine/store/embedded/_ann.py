"""Approximate nearest-neighbour indexes over the embedded store's vector mirrors.

One HNSW graph (``usearch``, int8 vectors, inner product on unit vectors) per mirror matrix:
event summaries, chunks (every chunk under its event's key) and each entity label. The index
only *proposes* candidates: a route over-fetches from it, keeps the candidates that pass the
space's filters, rescores them exactly from the float32 mirror and cuts the page, so scores,
order and ties are the exact scan's whenever the true top rows are among the candidates
(bench/results/search_latency.md measures how often). docs/DECISIONS.md says why usearch.

This module keeps the set of indexes in step with the mirrors and the database; one index over
its rows is ``_hnsw``, the saved files are ``_ann_files``, the database's vector epoch and
forget log (its tables ``ann_state`` and ``ann_forgotten``) are ``_epoch``.

Derived data, never the only copy:
    Keys are the nodes' SQLite ``seq`` numbers, stable across reloads. An index covers a prefix
    ``[0, covered)`` of its mirror's rows; searches scan the rows beyond it exactly, so a row is
    searchable the moment the mirror has it, indexed or not. Small catch-ups run inline after
    each commit (on the database thread); large ones (the first build past the threshold, a
    rebuild after re-vectorize or restore, a reopened memory whose index is behind) run on one
    background thread and are swapped in when done.
Persistence (``<database>.ann/``):
    Saved after each background build and on close, each file written beside and renamed over,
    the manifest last. It names the database's *vector epoch* (``_epoch``, changed before every
    re-vectorize and restore), and forgetting records each deleted node's seq in the forget
    log in the same transaction. At open an index is used only if its epoch is the database's;
    the keys of forgotten nodes are removed from it and every mirror row it lacks is added, so
    a crash, a stale copy or a copy made mid-write can cost a rebuild but never serves a vector
    the database does not hold. A saved index further behind the forget log than its horizon
    serves as *stale* until a fresh build replaces it (``_epoch``, "Bounded forget log").
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mnemoql.engine.store.embedded._ann_files import AnnFiles, mutable_copy
from mnemoql.engine.store.embedded._epoch import ensure_tables, forgotten, forgotten_mark
from mnemoql.engine.store.embedded._hnsw import (
    EXPANSION_ADD,
    KINDS,
    Hnsw,
    Kind,
    add_rows,
    first_missing,
    matrix_rows,
    new_index,
    remove_keys,
)
from mnemoql.engine.store.embedded._index import I64, EntityView, EventView

log = logging.getLogger(__name__)

INLINE_ROWS = 4096  # catch-ups up to this many rows run inline after a commit
# a saved, mapped index is copied (thawed) only once more rows than this wait beyond it: until
# then every search rescores them exactly beside the index's candidates (~1,000 chunk rows, a
# few hundred saves, cost about a millisecond), and the copy, which stalls the process, waits
FROZEN_TAIL_ROWS = 1024
# after another process's commit the first route waits for the catch-up: more rows than this
# go to the background thread (the exact scan covers them meanwhile; 1,000 events and their
# chunks cost ~1 CPU second to add)
FOREIGN_INLINE_ROWS = 256
BUILD_BATCH = 65_536  # rows per add call while a fresh index is built (nothing searches it)


@dataclass(frozen=True, slots=True)
class AnnSettings:
    """When the embedded store uses its ANN indexes (``MNEMOQL_EMBEDDED__*``).

    Args:
        mode: ``auto`` (indexes above ``min_vectors``) or ``exact`` (always scan exactly).
        min_vectors: a matrix with fewer rows is scanned exactly and gets no index.
        overfetch: at most this many candidates fetched per row of the page, before filters
            and rescoring (``_search``).
        first_overfetch: the first fetch per row of the page; it grows (up to ``overfetch``)
            only while the rescored page is unstable (``_search``, "Adaptive over-fetch").
        persist: keep the indexes (and, with ``mirror_files``, the vector mirrors of a memory
            of at least ``mirror_min_rows`` rows: ``_mirror``) beside the database.
        build_threads: threads of a background build (the inline catch-ups use one).
        prefetch: read a large memory's files into the page cache after open
            (``_warm``).
    """

    mode: Literal["auto", "exact"] = "auto"
    min_vectors: int = 20_000
    overfetch: int = 10
    persist: bool = True
    build_threads: int = 1
    mirror_files: bool = True
    mirror_min_rows: int = 20_000
    prefetch: bool = True
    first_overfetch: int = 3


# ---------------------------------------------------------------- the set of indexes


ViewsGetter = Callable[[], tuple[int, EventView, Mapping[Any, EntityView]]]


class AnnIndexes:
    """The ANN indexes of one database file, kept in step with its mirrors.

    Edits come from the database thread (``synced``, ``dropped``, ``detach``, ``reloaded``);
    builds, catch-ups and saves run on one background thread; searches come from any thread.
    """

    def __init__(self, settings: AnnSettings, file: Path, views: ViewsGetter) -> None:
        self.settings = settings
        self.dir = file.with_name(file.name + ".ann")
        self.files = AnnFiles(self.dir)
        self._views = views
        self.epoch = ""  # the vector epoch of the mirrors' current vectors
        # the forget log position the mirrors follow from (set after their drops reached the
        # indexes): a fresh build starts from it
        self.forgotten = 0
        self.builds = 0  # indexes built from scratch (tests count them)
        self._indexes: dict[Kind, Hnsw] = {}
        self._pending: set[Kind] = set()  # kinds with a background job queued or running
        self._again: set[Kind] = set()  # kinds asked for again while their job was pending
        self._guard = threading.Lock()  # _indexes / _pending
        self._worker: ThreadPoolExecutor | None = None
        self._closed = False
        self._stopping = False

    def _halt(self) -> bool:
        return self._stopping or self._closed

    @property
    def enabled(self) -> bool:
        return self.settings.mode == "auto"

    def index(self, kind: Kind, generation: int) -> Hnsw | None:
        """The kind's index if it belongs to this mirror generation."""
        h = self._indexes.get(kind)
        return h if h is not None and h.generation == generation else None

    def _view_of(self, kind: Kind) -> tuple[int, EventView | EntityView]:
        gen, events, entities = self._views()
        return gen, (events if kind in ("summary", "chunk") else entities[kind])

    def _submit(self, kind: Kind, job: Callable[[], None]) -> None:
        """Queue ``job`` for ``kind`` on the background thread. While one is queued or running,
        a new request is remembered instead, and the kind is looked at again when it ends (a
        catch-up that stopped because the mirrors were reloaded under it is then redone)."""
        with self._guard:
            if self._closed or self._stopping:
                return
            if kind in self._pending:
                self._again.add(kind)
                return
            self._pending.add(kind)
            if self._worker is None:
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="mnemoql-ann")

        def run() -> None:
            try:
                job()
            except Exception:  # the exact scan keeps answering; log and try again later
                log.exception("building the %s index failed", kind)
            finally:
                with self._guard:
                    self._pending.discard(kind)
                    again = kind in self._again
                    self._again.discard(kind)
                if again:
                    self._submit(kind, functools.partial(self._resume, kind))

        assert self._worker is not None
        self._worker.submit(run)

    # ---- database thread ----

    def opened(self, conn: sqlite3.Connection, epoch: str | None = None) -> None:
        """After the mirrors loaded (of vector epoch ``epoch``, by default the database's):
        adopt the saved indexes that are still valid, and queue whatever is missing or
        behind."""
        latest = ensure_tables(conn)
        self.epoch = latest if epoch is None else epoch
        self.forgotten, pruned = forgotten_mark(conn)
        if not self.enabled:
            return
        saved = self._load_saved(forgotten(conn), pruned) if self.settings.persist else {}
        gen = self._views()[0]
        for kind in KINDS:
            h = saved.get(kind)
            if h is not None:
                h.generation = gen
                self._indexes[kind] = h
        self.synced()  # thaws, rebuilds or catches up those that need it

    def synced(self, inline: int = INLINE_ROWS) -> None:
        """After the mirrors grew: index the new rows (inline when at most ``inline``, else on
        the background thread), build what crossed the threshold."""
        if not self.enabled:
            return
        for kind in KINDS:
            gen, view = self._view_of(kind)
            rows = matrix_rows(view, kind)
            h = self.index(kind, gen)
            if h is None:
                if rows < self.settings.min_vectors or not view.dims:
                    continue
                if rows <= INLINE_ROWS and kind not in self._pending:
                    h = Hnsw(kind, new_index(view.dims, kind == "chunk"), gen, self.epoch)
                    self.builds += 1
                    add_rows(h, view, gen, rows)
                    with self._guard:
                        self._indexes[kind] = h
                else:
                    self._submit(kind, functools.partial(self._build, kind))
            elif rows - h.covered <= inline and kind not in self._pending and not h.frozen:
                add_rows(h, view, gen, rows)
            elif h.frozen and not h.stale and rows - h.covered <= FROZEN_TAIL_ROWS and not h.refill:
                # a saved index serves from its mapped file while the rows it lacks are few
                # (searches rescore them exactly): its copy stalls the whole process while
                # usearch loads it (~2-3 s at 1M events), which a memory that is only read, or
                # written a little, never needs
                continue
            else:
                self._submit(kind, functools.partial(self._resume, kind))

    def dropped(self, kind: Kind, seqs: npt.NDArray[np.int64]) -> None:
        """Rows forgotten: their keys leave the index (they are filtered out already)."""
        h = self._indexes.get(kind)
        if h is not None and seqs.size:
            with h.lock:
                h.remove(seqs.astype(np.uint64))

    def filled(self, kind: Kind, rows: list[int]) -> None:
        """Entity rows that had no vector got one in place (a merge): rows below ``covered``
        are added here, as no catch-up goes back to them (rows above it follow anyway)."""
        gen, view = self._view_of(kind)
        h = self.index(kind, gen)
        if h is None or not rows:
            return
        with h.lock:
            if h.frozen:
                h.refill += rows
                return
            below = np.asarray([r for r in rows if r < h.covered], dtype=np.int64)
            if below.size:
                keys = view.seqs[below].astype(np.uint64)
                fresh = ~np.asarray(h.index.contains(keys), dtype=np.bool_).reshape(-1)
                if fresh.any():
                    h.index.add(keys[fresh], view.vecs[below][fresh], threads=1)

    def detach(self) -> None:
        """Before the mirrors are reloaded (rows renumbered): no search uses an index until
        ``reloaded`` has re-attached it to the new rows (they scan exactly meanwhile)."""
        for h in list(self._indexes.values()):
            with h.lock:
                h.generation = -1

    def reloaded(self, conn: sqlite3.Connection, epoch: str | None = None) -> None:
        """After the mirrors were reloaded from the database (another process wrote to it;
        re-vectorize, restore, a new width here). Keys are seqs, so an index of the same
        vector epoch stays valid: the keys of nodes forgotten meanwhile leave it, ``covered``
        moves to the first new row it lacks, and the rows from there on are added (inline
        when few). A changed epoch (re-vectorize or restore, here or elsewhere) or a changed
        width drops the indexes and queues fresh builds. ``epoch``: that of the reloaded
        mirrors (by default the database's)."""
        latest = ensure_tables(conn)
        epoch = latest if epoch is None else epoch
        position, pruned = forgotten_mark(conn)
        self.forgotten = position
        gen = self._views()[0]
        if epoch != self.epoch:
            with self._guard:
                self._indexes = {}
            self.epoch = epoch
        elif self._indexes:
            gone = forgotten(conn)
            for kind, h in list(self._indexes.items()):
                _, view = self._view_of(kind)
                if h.index.ndim != view.dims:
                    with self._guard:
                        self._indexes.pop(kind, None)
                    continue
                with h.lock:
                    h.remove(gone)
                    if h.forgotten < pruned:
                        h.behind = True  # records it never applied are gone: rebuilt
                    else:
                        h.forgotten = position
                    h.covered = first_missing(h.index, view, kind, h.pending_removals())
                    h.generation = gen
        self.synced()

    # ---- background thread ----

    def _build(self, kind: Kind) -> None:
        """A fresh index of the current mirror; built again if the mirrors were reloaded
        meanwhile (another process wrote), so a queued build is never lost."""
        while not self._halt():
            since = self.forgotten  # before the view: it holds at least these drops
            gen, view = self._view_of(kind)
            epoch = self.epoch
            h = Hnsw(kind, new_index(view.dims, kind == "chunk"), gen, epoch)
            h.forgotten = since
            self.builds += 1
            rows = matrix_rows(view, kind)
            add_rows(h, view, gen, rows, self.settings.build_threads, BUILD_BATCH, self._halt)
            if self._install(h):
                return

    def _resume(self, kind: Kind) -> None:
        """Whatever the kind needs now: a fresh build in place of a stale index, a thaw of a
        saved one, a catch-up of its index, or a build."""
        gen, view = self._view_of(kind)
        h = self.index(kind, gen)
        if h is not None and h.stale:
            self._build(kind)
        elif h is not None and h.frozen:
            self._thaw(kind)
        elif h is not None:
            self._catch_up(kind)
        elif (
            kind not in self._indexes
            and view.dims
            and matrix_rows(view, kind) >= self.settings.min_vectors
        ):
            self._build(kind)

    def _catch_up(self, kind: Kind) -> None:
        gen, _ = self._view_of(kind)
        h = self.index(kind, gen)
        if h is not None and self._follow(h):
            self._save_if_changed(h)

    def _install(self, h: Hnsw) -> bool:
        if not self._follow(h):
            return False
        with self._guard:
            self._indexes[h.kind] = h
        self._save(h)
        return True

    def _follow(self, h: Hnsw) -> bool:
        """Add rows until the index has every row of the current mirror; False when the
        mirror was rebuilt meanwhile (the index is then useless) or the store closed."""
        while True:
            gen, view = self._view_of(h.kind)
            if gen != h.generation or h.epoch != self.epoch or self._closed or h.frozen:
                return False
            rows = matrix_rows(view, h.kind)
            if rows <= h.covered:
                return True
            add_rows(h, view, gen, rows, self.settings.build_threads, halt=self._halt)
            if self._halt():
                return False

    # ---- persistence ----

    def _save_if_changed(self, h: Hnsw) -> None:
        if not self.files.holds(h):
            self._save(h)

    def _save(self, h: Hnsw) -> None:
        if not self.settings.persist or self._closed:
            return
        self.files.save(h)

    def _load_saved(self, gone: npt.NDArray[np.uint64], pruned: int) -> dict[Kind, Hnsw]:
        return self.files.load(self.epoch, self.forgotten, gone, pruned, self._view_of)

    def _thaw(self, kind: Kind) -> None:
        """Swap a frozen index for a mutable copy, apply what waited, then catch up. The copy,
        the removals noted so far and the check of every key run outside the lock (the copy
        is not searched yet, the mapped file never changes): searches go on meanwhile."""
        h = self._indexes.get(kind)
        if h is None or not h.frozen:
            return
        index = mutable_copy(h)
        # not kept in the file (restored at 128); usearch has the setter, its stub hides it
        index.expansion_add = EXPANSION_ADD
        with h.lock:
            noted = len(h.removals)
            early = h.pending_removals()
        remove_keys(index, early)
        gen, view = self._view_of(kind)
        exact = first_missing(index, view, kind)  # every key checked (the open bisected)
        with h.lock:
            late = h.removals[noted:]
            if late:
                remove_keys(index, np.unique(np.concatenate(late)))
            h.index, h.frozen, h.removals = index, False, []
            refill, h.refill = h.refill, []
            if h.generation == gen:
                h.covered = min(h.covered, exact)
        if refill:
            self.filled(kind, refill)
        self._resume(kind)

    def flush(self) -> None:
        """Wait until no background build or catch-up is queued (benchmarks, tests)."""
        while True:
            with self._guard:
                worker, busy = self._worker, bool(self._pending)
            if worker is None or not busy:
                return
            worker.submit(lambda: None).result()

    def close(self) -> None:
        """Stop background work and save every index that is ahead of its file."""
        with self._guard:
            worker, self._worker = self._worker, None
            self._stopping = True  # a job ending now queues nothing new
        if worker is not None:
            worker.shutdown(wait=True, cancel_futures=True)
        for h in list(self._indexes.values()):
            try:
                self._save_if_changed(h)
            except OSError as exc:
                log.warning("could not save the %s index: %s", h.kind, exc)
        self._closed = True


def rows_of_keys(seqs: I64, n: int, keys: npt.NDArray[np.uint64]) -> I64:
    """Mirror rows of ANN keys, in the keys' order; keys of no row are dropped. A seq can
    appear twice in a live mirror (the newest node forgotten, the next one given its seq):
    the later row is the node the key now stands for, the earlier one is dead."""
    if keys.size == 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    k = keys.astype(np.int64)
    rows = np.searchsorted(seqs[:n], k, side="right") - 1
    ok = rows >= 0
    ok[ok] &= seqs[rows[ok]] == k[ok]
    out: I64 = rows[ok]
    return out
