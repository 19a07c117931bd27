"""The embedded store's synchronous half: one SQLite connection and the numpy mirrors.

Every method here runs on the store's single database thread (``EmbeddedStore`` guarantees
it), so the connection is never shared and writes are serialised. The published mirror views
(``events``, ``entities``) are the only state other threads read.

This module holds what keeps the mirrors in step with the database: open and close, the loads
and the catch-up of other processes' commits, and the writes. The reads of committed rows that
touch no mirror are the base class, ``_reads.Reads``.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from mnemoql.engine.drafts import SavePlan, SaveResult, TopicDraft
from mnemoql.engine.models import ENTITY_LABELS, EntityLabel, VectorSet
from mnemoql.engine.store.embedded import _lexical as lexical
from mnemoql.engine.store.embedded import _save as save
from mnemoql.engine.store.embedded import _write as write
from mnemoql.engine.store.embedded._ann import FOREIGN_INLINE_ROWS, AnnIndexes, AnnSettings
from mnemoql.engine.store.embedded._epoch import (
    ensure_tables,
    forgotten_mark,
    new_epoch,
    record_forgotten,
)
from mnemoql.engine.store.embedded._index import (
    EntityView,
    EventView,
    append_entities,
    append_events,
    build_entity_view,
    build_event_view,
    drop_entity_rows,
    drop_event_rows,
)
from mnemoql.engine.store.embedded._load import Loaded, advance, load_all, max_seq
from mnemoql.engine.store.embedded._mirror import MirrorFiles
from mnemoql.engine.store.embedded._query import (
    IN_SET,
    json_set,
)
from mnemoql.engine.store.embedded._reads import Reads
from mnemoql.engine.store.embedded._recall import topic_mark
from mnemoql.engine.store.embedded._schema import (
    connect,
)
from mnemoql.engine.store.embedded._warm import PageWarmer
from mnemoql.engine.topics.changes import TopicMark

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")


def _replace_vectors(conn: sqlite3.Connection, vectors: VectorSet) -> None:
    """The new vectors and, in the same transaction, a new epoch again: another process that
    caught up between ``vectors_changing`` and this commit built its indexes from the old
    vectors under the first new epoch, and must see the epoch change once more."""
    write.replace_vectors(conn, vectors)
    new_epoch(conn)


class Database(Reads):
    def __init__(
        self, file: Path, dimensions_hint: int | None, ann: AnnSettings | None = None
    ) -> None:
        super().__init__()
        self.file = file
        self._hint = dimensions_hint
        self.events: EventView = build_event_view(dimensions_hint or 0, [])
        self.entities: dict[EntityLabel, EntityView] = {
            label: build_entity_view(dimensions_hint or 0, []) for label in ENTITY_LABELS
        }
        # bumped whenever the mirrors are rebuilt (rows renumbered): an index's ``covered``
        # prefix belongs to one generation
        self.generation = 0
        settings = ann or AnnSettings()
        self.ann = AnnIndexes(settings, file, self._snapshot)
        self.files = MirrorFiles(
            file, settings.persist and settings.mirror_files, settings.mirror_min_rows
        )
        # every node with seq <= upto is in the mirrors (a forgotten one as a dead row), of
        # vector epoch ``epoch``: a catch-up reads only what changed since (``advance``)
        self.upto = 0
        self.epoch = ""
        self.forgotten = 0  # the forget log's position the mirrors follow from (Loaded)
        self._forgot: tuple[int, int] | None = None  # the log's position around our forget
        self.full_loads = 0  # mirrors loaded from SQLite in full (tests count them)
        self.rows_read = 0  # rows the last load or catch-up read from SQLite
        # PRAGMA data_version when the mirrors were last loaded: it changes only when another
        # connection (another process: `mnemoql import`, `restore`, `revectorize` beside a
        # running service) commits, never for this connection's own writes
        self._version: int | None = None
        self.caught_up = 0  # grows by one each time the mirrors catch up with another writer
        self.warmer: PageWarmer | None = None  # reads the files into the page cache after open
        # the topic marks just before and after this connection's last save or binding, read
        # inside its transaction: the caller's topic index moves its mark past its own write
        # only when nothing else came between (engine.recall.Recall.wrote)
        self.write_marks: tuple[TopicMark, TopicMark] | None = None

    def _snapshot(self) -> tuple[int, EventView, dict[EntityLabel, EntityView]]:
        return self.generation, self.events, self.entities

    # ------------------------------------------------------------ lifecycle

    def open(self) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        self._conn = connect(str(self.file))
        indexed = lexical.ensure(self._conn)
        if indexed:
            log.info("lexical index of %s: %d events indexed", self.file, indexed)
        self._version = self._data_version()
        ensure_tables(self._conn)
        try:
            from_files = self._load_files()
        except Exception:  # derived data: whatever went wrong, SQLite has the vectors
            log.exception("could not use the vector mirror files of %s", self.file)
            from_files = False
        if not from_files:
            self._load_mirrors()
        self.ann.opened(self._conn, self.epoch)
        if self.ann.settings.prefetch:
            # never the database or its WAL: closing any descriptor of a file drops every
            # POSIX lock this process holds on it, so a plain read of the database let
            # another process write beside our connection (a corrupt file in
            # bench.second_writer at 100k events, issue #30)
            self.warmer = PageWarmer([self.ann.dir, self.files.root])
            self.warmer.start()

    def close(self) -> None:
        if self.warmer is not None:
            self.warmer.close()
        try:
            if self._conn is not None and self.files.stale(self._loaded(), closing=True):
                self.files.write(self._conn, self._loaded(), wait=True)
        finally:
            self.files.close()
            self.ann.close()
            super().close()

    def ping(self) -> bool:
        return bool(self.conn.execute("SELECT 1").fetchone() == (1,))

    # ------------------------------------------------------------ mirrors

    def _data_version(self) -> int:
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def mirrors_current(self) -> bool:
        """Whether the mirrors hold every commit: no other connection has committed since they
        last followed (this connection's own commits move no ``data_version`` of its own, and
        each write brings the mirrors along before its call returns)."""
        return self._data_version() == self._version

    def catch_up(self) -> int:
        """Bring the mirrors up to date if another connection committed since they were
        loaded, so a search never reads vectors the database no longer holds (or misses new
        ones); returns ``caught_up``. Costs one PRAGMA when nothing changed, and otherwise
        reads only what changed (``_load.advance``)."""
        self._follow_other_writers()
        return self.caught_up

    def _follow_other_writers(self) -> None:
        version = self._data_version()
        if version != self._version:
            self._version = version
            self._advance()
            self.caught_up += 1

    def _loaded(self) -> Loaded:
        return Loaded(self.events, self.entities, self.upto, self.epoch, forgotten=self.forgotten)

    def _advance(self) -> None:
        """Read only what another writer changed; a full reload when that cannot do (a new
        vector epoch or width, a reused seq)."""
        if self._dims() != self.events.dims:
            self._load_mirrors()
            return
        got = advance(self.conn, self._loaded())
        if got is None:
            self._load_mirrors()
            return
        self.events, self.upto, self.rows_read = got.events, got.upto, got.rows
        self.forgotten = got.forgotten
        for label, view in got.entities.items():
            self.entities[label] = view
        for kind, seqs in got.dropped.items():
            self.ann.dropped(kind, seqs)
        for kind, rows in got.filled.items():
            self.ann.filled(kind, rows)
        self.ann.forgotten = self.forgotten
        self.ann.synced(FOREIGN_INLINE_ROWS)
        self._maybe_write_files()

    def _load_files(self) -> bool:
        """The mirrors from their files and the rows SQLite changed since; False when the
        files are missing or disagree with the database (the caller loads in full)."""
        dims = self._dims()
        epoch = ensure_tables(self.conn)
        got = self.files.read(self.conn, dims, epoch)
        if got is None:
            return False
        mostly_new = max_seq(self.conn) - got.upto > got.events.n  # the block load is faster
        caught = None if mostly_new else advance(self.conn, got)
        if caught is None or not self._counts_agree(caught):
            log.info("the vector mirror files of %s are behind: loading from SQLite", self.file)
            self.files.rows = -1
            return False
        self.events, self.upto, self.epoch = caught.events, caught.upto, caught.epoch
        self.forgotten = caught.forgotten
        self.entities.update(caught.entities)
        self.rows_read = caught.rows
        self.generation += 1
        self._maybe_write_files()
        return True

    def _counts_agree(self, got: Loaded) -> bool:
        """The live event rows are exactly the database's events up to ``upto``."""
        view = got.events
        live = int(view.live[: view.n].sum())
        row = self.conn.execute(
            "SELECT COUNT(*) FROM nodes WHERE label = 'Event' AND seq <= ?", (got.upto,)
        ).fetchone()
        return int(row[0]) == live

    def _maybe_write_files(self) -> None:
        if not self.conn.in_transaction and self.files.stale(self._loaded()):
            self.files.write(self.conn, self._loaded())

    def _dims(self) -> int:
        meta = self.get_meta()
        if meta is not None:
            return meta.dimensions
        if self._hint:
            return self._hint
        row = self.conn.execute(
            "SELECT length(embedding) / 4 FROM nodes WHERE embedding IS NOT NULL LIMIT 1"
        ).fetchone()
        return int(row[0]) if row else 0

    def _load_mirrors(self) -> None:
        """Rebuild every mirror from the database (open, another process's writes,
        re-vectorize, restore, a new width). On a reload the rows are renumbered: the ANN
        indexes are detached first and re-attached to the new rows after (``reloaded``)."""
        dims = self._dims()
        again = self.generation > 0
        if again:
            self.ann.detach()
        got = load_all(self.conn, dims)
        self.events, self.upto, self.epoch, self.rows_read = (
            got.events,
            got.upto,
            got.epoch,
            got.rows,
        )
        self.forgotten = got.forgotten
        self.entities.update(got.entities)
        self.generation += 1
        self.full_loads += 1
        if again:
            self.ann.reloaded(self.conn, self.epoch)
        self._maybe_write_files()

    # ------------------------------------------------------------ writes

    def _write(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kw: P.kwargs
    ) -> T:
        """``fn`` as one transaction: BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any exception."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            out = fn(conn, *args, **kw)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return out

    def _write_unspilled(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kw: P.kwargs
    ) -> T:
        """``_write`` with the transaction's pages held in memory until its commit (a save, a
        topic binding, a forget: bounded by the save caps). A page cache that spills in the
        middle writes to the log and moves every other connection's ``data_version`` before
        anything is committed: ``Watch`` then sent each search to catch up behind the rest of
        a long save (bench/results/search_during_save.md). Rewrites of every vector keep
        spilling (``_write``): their pages would not fit in memory."""
        conn = self.conn
        conn.execute("PRAGMA cache_spill = OFF")
        try:
            return self._write(fn, *args, **kw)
        finally:
            conn.execute("PRAGMA cache_spill = ON")

    def apply_save(self, plan: SavePlan) -> SaveResult:
        self.write_marks = None
        self.catch_up()  # the new rows go after every row another writer committed
        written, upto = self._write_unspilled(self._save, plan)
        if written.meta is not None and written.meta.dimensions != self.events.dims:
            self._load_mirrors()  # first save fixes the dimension: rebuild at that width
            return written.result
        try:
            seq_of = self._seqs(written)
            for ev in written.events:
                ev.seq = seq_of[ev.id]
            self.events = append_events(self.events, written.events)
            filled: dict[str, list[int]] = {}
            for label, items in written.entities.items():
                view = self.entities[label]
                filled[label] = [
                    row
                    for node_id, vec in items
                    if vec is not None
                    and (row := view.row_of.get(node_id, -1)) >= 0
                    and not view.has_vec[row]
                    and int(view.seqs[row]) == seq_of.get(node_id, -1)
                ]
                self.entities[label] = append_entities(view, items, seq_of)
            self.upto = upto
        except Exception:
            self._load_mirrors()  # the commit stands; never leave the mirrors behind it
            filled = {}
        for kind, rows in filled.items():
            self.ann.filled(kind, rows)
        self.ann.synced()
        self._maybe_write_files()
        return written.result

    def _save(self, conn: sqlite3.Connection, plan: SavePlan) -> tuple[save.Written, int]:
        """The save transaction. Another writer that committed between ``catch_up`` and this
        transaction's lock is caught up here first (it cannot commit while we hold it), so
        every node up to the highest seq at our commit is in the mirrors afterwards."""
        self._follow_other_writers()
        before = topic_mark(conn)
        written = save.apply_save(conn, plan)
        self.write_marks = (before, topic_mark(conn))
        return written, max_seq(conn)

    def _seqs(self, written: save.Written) -> dict[str, int]:
        ids = [e.id for e in written.events] + [i for v in written.entities.values() for i, _ in v]
        if not ids:
            return {}
        rows = self.conn.execute(
            f"SELECT id, seq FROM nodes WHERE id IN {IN_SET}", (json_set(ids),)
        )
        return {r[0]: int(r[1]) for r in rows}

    def vectors_changing(self) -> None:
        """Before a write that replaces vectors wholesale (re-vectorize, restore): saved ANN
        indexes become stale first, so a crash in between cannot leave them looking valid.
        The mirrors (and ``ann.epoch``) keep the old vectors until the reload after it."""
        self._write(new_epoch)

    def rewrite(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kw: P.kwargs
    ) -> T:
        """``fn`` as one transaction that writes data wholesale (a restore), then every mirror
        rebuilt from the database."""
        out = self._write(fn, *args, **kw)
        self._load_mirrors()
        return out

    def replace_vectors(self, vectors: VectorSet) -> None:
        self.vectors_changing()
        self._write(_replace_vectors, vectors)
        self._load_mirrors()

    def bind_topic(self, draft: TopicDraft, event_ids: list[str], timestamp: int) -> None:
        self.write_marks = None
        self._write_unspilled(self._bind_topic, draft, event_ids, timestamp)

    def _bind_topic(
        self, conn: sqlite3.Connection, draft: TopicDraft, event_ids: list[str], timestamp: int
    ) -> None:
        before = topic_mark(conn)
        write.bind_topic(conn, draft, event_ids, timestamp)
        self.write_marks = (before, topic_mark(conn))

    def forget(self, event_id: str) -> list[str]:
        self._forgot = None
        deleted = self._write_unspilled(self._forget, event_id)
        ev = self.events
        rows = [r for r in (ev.row_of.get(i) for i in deleted) if r is not None and ev.live[r]]
        self.events = drop_event_rows(ev, rows)
        self.ann.dropped("summary", ev.seqs[rows])
        self.ann.dropped("chunk", ev.seqs[rows])
        for label, view in self.entities.items():
            mine = [r for r in (view.row_of.get(i) for i in deleted) if r is not None]
            if mine:
                self.entities[label] = drop_entity_rows(view, mine)
                self.ann.dropped(label, view.seqs[mine])
        if self._forgot is not None and self._forgot[0] == self.forgotten:
            # nothing recorded between the mirrors' position and this forget: they follow
            # past it (else the next catch-up reads the records in between, as always)
            self.forgotten = self.ann.forgotten = self._forgot[1]
        return deleted

    def _forget(self, conn: sqlite3.Connection, event_id: str) -> list[str]:
        """The forget transaction, recording the deleted nodes' seqs for the ANN indexes. The
        seqs are read from the database inside the transaction, before the delete: this
        process's mirrors may not hold a node another process saved since they caught up,
        and every process's index must still learn that its key is gone (a later node can
        take the same seq)."""
        seq_of = {
            r[0]: int(r[1])
            for r in conn.execute(
                "SELECT id, seq FROM nodes WHERE id = ?1 OR id IN (SELECT target FROM relations "
                "WHERE source = ?1 UNION SELECT source FROM relations WHERE target = ?1 UNION "
                "SELECT source FROM relations WHERE event_key = ?1 UNION SELECT target FROM "
                "relations WHERE event_key = ?1)",
                (event_id,),
            )
        }
        deleted = write.forget(conn, event_id)
        views: list[EventView | EntityView] = [self.events, *self.entities.values()]
        seqs = {seq_of[i] for i in deleted if i in seq_of}
        seqs.update(
            int(view.seqs[row])
            for view in views
            for row in (view.row_of.get(i) for i in deleted if i not in seq_of)
            if row is not None
        )
        before = forgotten_mark(conn)[0]
        record_forgotten(conn, sorted(seqs))
        self._forgot = (before, forgotten_mark(conn)[0])
        return deleted
