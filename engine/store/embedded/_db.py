"""The embedded store's synchronous half: one SQLite connection and the numpy mirrors.

Every method here runs on the store's single database thread (``EmbeddedStore`` guarantees
it), so the connection is never shared and writes are serialised. The published mirror views
(``events``, ``entities``) are the only state other threads read.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import (
    ENTITY_LABELS,
    REL_TYPES,
    Binding,
    Chunk,
    Counts,
    Direction,
    Entity,
    EntityLabel,
    Event,
    Filters,
    GraphSnapshot,
    Hit,
    MemoryMeta,
    Neighbour,
    Node,
    NodeLabel,
    NodePage,
    Page,
    Relation,
    RelType,
    SavePlan,
    SaveResult,
    SortSpec,
    Topic,
    TopicDraft,
    VectorSet,
    Where,
)
from mnemoql.engine.store.embedded import _lexical as lexical
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
    event_mask,
)
from mnemoql.engine.store.embedded._load import Loaded, advance, load_all, max_seq
from mnemoql.engine.store.embedded._mirror import MirrorFiles
from mnemoql.engine.store.embedded._query import (
    IN_SET,
    event_filter_sql,
    json_set,
)
from mnemoql.engine.store.embedded._reader import OwnThread, list_nodes
from mnemoql.engine.store.embedded._recall import topic_changes, topic_mark
from mnemoql.engine.store.embedded._schema import (
    BINDING_COLS,
    CHUNK_COLS,
    ENTITY_COLS,
    EVENT_COLS,
    META_SQL,
    NODE_COLS,
    TOPIC_COLS,
    connect,
    relation,
    row_binding,
    row_chunk,
    row_entity,
    row_event,
    row_meta,
    row_node,
    row_topic,
)
from mnemoql.engine.store.embedded._warm import PageWarmer
from mnemoql.engine.store.rules import json_result
from mnemoql.engine.text import normalise_name
from mnemoql.engine.topics.changes import TopicChanges, TopicMark

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")


def _replace_vectors(conn: sqlite3.Connection, vectors: VectorSet) -> None:
    """The new vectors and, in the same transaction, a new epoch again: another process that
    caught up between ``vectors_changing`` and this commit built its indexes from the old
    vectors under the first new epoch, and must see the epoch change once more."""
    write.replace_vectors(conn, vectors)
    new_epoch(conn)


class Database(OwnThread):
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

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("the embedded store is not open")
        return self._conn

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

    def apply_save(self, plan: SavePlan) -> SaveResult:
        self.write_marks = None
        self.catch_up()  # the new rows go after every row another writer committed
        written, upto = self._write(self._save, plan)
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

    def _save(self, conn: sqlite3.Connection, plan: SavePlan) -> tuple[write.Written, int]:
        """The save transaction. Another writer that committed between ``catch_up`` and this
        transaction's lock is caught up here first (it cannot commit while we hold it), so
        every node up to the highest seq at our commit is in the mirrors afterwards."""
        self._follow_other_writers()
        before = topic_mark(conn)
        written = write.apply_save(conn, plan)
        self.write_marks = (before, topic_mark(conn))
        return written, max_seq(conn)

    def _seqs(self, written: write.Written) -> dict[str, int]:
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
        self._write(self._bind_topic, draft, event_ids, timestamp)

    def _bind_topic(
        self, conn: sqlite3.Connection, draft: TopicDraft, event_ids: list[str], timestamp: int
    ) -> None:
        before = topic_mark(conn)
        write.bind_topic(conn, draft, event_ids, timestamp)
        self.write_marks = (before, topic_mark(conn))

    def forget(self, event_id: str) -> list[str]:
        self._forgot = None
        deleted = self._write(self._forget, event_id)
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

    # ------------------------------------------------------------ meta, counts, idempotency

    def get_meta(self) -> MemoryMeta | None:
        return row_meta(self.conn.execute(META_SQL).fetchone())

    def counts(self) -> Counts:
        row = self.conn.execute(
            "SELECT (SELECT COUNT(*) FROM nodes WHERE label = 'Event'), "
            "(SELECT COUNT(*) FROM nodes WHERE label = 'Person'), "
            "(SELECT COUNT(*) FROM nodes WHERE label = 'Concept'), "
            "(SELECT COUNT(*) FROM nodes WHERE label = 'Location'), "
            "(SELECT COUNT(*) FROM chunks), (SELECT COUNT(*) FROM relations)"
        ).fetchone()
        return Counts(*row)

    def replay(self, key: str) -> SaveResult | None:
        row = self.conn.execute("SELECT result FROM idempotency WHERE key = ?", (key,)).fetchone()
        return None if row is None else json_result(row[0])

    def events_with_hash(self, content_hash: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT id FROM nodes WHERE content_hash = ? AND +label = 'Event' "
            "ORDER BY create_time, seq",
            (content_hash,),
        )
        return [r[0] for r in rows]

    def all_for_revectorize(self) -> tuple[list[Event], list[Entity]]:
        events = self.conn.execute(
            f"SELECT {EVENT_COLS} FROM nodes WHERE label = 'Event' ORDER BY seq"
        )
        entities = self.conn.execute(
            f"SELECT {ENTITY_COLS} FROM nodes WHERE label <> 'Event' ORDER BY seq"
        )
        return [row_event(r, False) for r in events], [row_entity(r) for r in entities]

    # ------------------------------------------------------------ entities

    def find_entities(self, label: EntityLabel, names: Iterable[str]) -> list[Entity]:
        keys = {normalise_name(n) for n in names}
        rows = self.conn.execute(
            f"SELECT {ENTITY_COLS} FROM nodes WHERE id IN (SELECT node_id FROM names "
            f"WHERE label = ? AND norm IN {IN_SET}) ORDER BY seq",
            (label, json_set(keys)),
        )
        return [row_entity(r) for r in rows]

    def resolve_terms(self, term: str) -> frozenset[str]:
        rows = self.conn.execute(
            "SELECT node_id FROM names WHERE norm = ?", (normalise_name(term),)
        )
        return frozenset(r[0] for r in rows)

    def entities_by_ids(self, ids: Sequence[str]) -> dict[str, Entity]:
        rows = self.conn.execute(
            f"SELECT {ENTITY_COLS} FROM nodes WHERE label <> 'Event' AND id IN {IN_SET}",
            (json_set(ids),),
        )
        return {r[1]: row_entity(r) for r in rows}

    # ------------------------------------------------------------ events

    def events_in_groups(self, filters: Filters) -> frozenset[str]:
        where, params = event_filter_sql(Filters(groups=filters.groups), frozenset(), None)
        rows = self.conn.execute(f"SELECT id FROM nodes WHERE {where}", params)
        return frozenset(r[0] for r in rows)

    def recent_events(
        self, filters: Filters, exclude: frozenset[str], limit: int, restrict: frozenset[str] | None
    ) -> list[str]:
        where, params = event_filter_sql(filters, exclude, restrict)
        rows = self.conn.execute(
            f"SELECT id FROM nodes WHERE {where} ORDER BY create_time DESC, id DESC LIMIT ?",
            [*params, max(0, limit)],
        )
        return [r[0] for r in rows]

    def get_events(self, ids: Sequence[str], with_vectors: bool) -> list[Event]:
        rows = self.conn.execute(
            f"SELECT {EVENT_COLS} FROM nodes WHERE +label = 'Event' AND id IN {IN_SET}",
            (json_set(ids),),
        )
        found = {r[0]: row_event(r, with_vectors) for r in rows}
        return [found[i] for i in ids if i in found]

    def get_chunks(self, event_ids: Sequence[str], with_vectors: bool) -> dict[str, list[Chunk]]:
        out: dict[str, list[Chunk]] = {i: [] for i in event_ids}
        rows = self.conn.execute(
            f"SELECT {CHUNK_COLS} FROM chunks WHERE event_id IN {IN_SET} "
            "ORDER BY event_id, chunk_index",
            (json_set(event_ids),),
        )
        for r in rows:
            out[r[0]].append(row_chunk(r, with_vectors))
        return out

    def id_counts(self, ids: Sequence[str]) -> dict[str, int]:
        out = dict.fromkeys(ids, 0)
        rows = self.conn.execute(
            f"SELECT id, COUNT(*) FROM nodes WHERE id IN {IN_SET} GROUP BY id", (json_set(ids),)
        )
        out.update({r[0]: r[1] for r in rows})
        return out

    def events_mentioning(self, concept_id: str) -> frozenset[str]:
        rows = self.conn.execute(
            "SELECT source FROM relations WHERE target = ? AND type = 'MENTIONS'", (concept_id,)
        )
        return frozenset(r[0] for r in rows)

    def lexical_hits(
        self,
        terms: Sequence[str],
        filters: Filters,
        exclude: frozenset[str],
        restrict: frozenset[str] | None,
        limit: int,
    ) -> list[Hit]:
        allowed = self.events_in_groups(filters) if filters.groups else None
        view = self.events
        mask = event_mask(view, filters, exclude, restrict, allowed)
        return lexical.hits(self.conn, terms, view, mask, limit, restrict)

    def positional_events(self, prefix: str, chapter: str) -> list[str]:
        head = f"{prefix}_ch{chapter}_e"
        tail = re.compile(r"[0-9]+")
        rows = self.conn.execute(
            "SELECT id FROM nodes WHERE id >= ? AND id < ? AND +label = 'Event'",
            (head, head[:-1] + "f"),
        )
        found = [r[0] for r in rows if r[0].startswith(head) and tail.fullmatch(r[0][len(head) :])]
        return sorted(found, key=lambda i: (int(i[len(head) :]), i))

    # ------------------------------------------------------------ graph reads

    def get_nodes(self, ids: Sequence[str]) -> list[Node | None]:
        rows = self.conn.execute(
            f"SELECT {NODE_COLS} FROM nodes WHERE id IN {IN_SET}", (json_set(ids),)
        )
        found = {r[1]: row_node(r) for r in rows}
        return [found.get(i) for i in ids]

    def list_nodes(
        self, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
    ) -> NodePage:
        return list_nodes(self.conn, label, where, sort, page)

    def neighbours(
        self,
        node_ids: Sequence[str],
        rel_type: RelType | None,
        direction: Direction,
        limit_per_node: int,
        after: str | None,
        before: str | None = None,
        backward: bool = False,
    ) -> dict[str, list[Neighbour]]:
        if rel_type is not None and rel_type not in REL_TYPES:
            raise InvalidInput(
                f"unknown relationship type {rel_type!r}", zh=f"未知关系类型 {rel_type!r}"
            )
        if direction not in ("out", "in", "both"):
            raise InvalidInput(
                f"direction must be out, in or both (got {direction!r})",
                zh=f"direction 须为 out、in 或 both（收到 {direction!r}）",
            )
        if limit_per_node < 0:
            raise InvalidInput(
                "limit_per_node must not be negative", zh="limit_per_node 不能为负数"
            )
        branch = (
            "SELECT q.value AS node, r.type, r.source, r.target, r.props, r.event_key, "
            "r.{other} AS other, '{dir}' AS dir FROM json_each(?1) q "
            "JOIN relations r ON r.{end} = q.value WHERE (?2 IS NULL OR r.type = ?2)"
        )
        parts = []
        if direction in ("out", "both"):
            parts.append(branch.format(other="target", dir="out", end="source"))
        if direction in ("in", "both"):
            parts.append(branch.format(other="source", dir="in", end="target"))
        if after is not None and before is not None:
            raise InvalidInput(
                "neighbours pages forward (after) or backward (before), not both",
                zh="neighbours 只能向前（after）或向后（before）翻页，不能同时两者",
            )
        backward = backward or before is not None
        # backward: the rows just before `before` (or the end), walked in reverse and turned
        # round below
        order, cmp, bound = (
            ("type DESC, other DESC, dir DESC, event_key DESC", "<", before)
            if backward
            else ("type, other, dir, event_key", ">", after)
        )
        sql = (
            "SELECT node, type, source, target, props, other, dir FROM (SELECT *, ROW_NUMBER() "
            f"OVER (PARTITION BY node ORDER BY {order}) AS rn FROM ("
            + " UNION ALL ".join(parts)
            + f") WHERE (?3 IS NULL OR other {cmp} ?3)) WHERE rn <= ?4 ORDER BY node, rn"
        )
        unique = list(dict.fromkeys(node_ids))
        out: dict[str, list[Neighbour]] = {i: [] for i in unique}
        for node, kind, src, dst, props, other, way in self.conn.execute(
            sql, (json_set(unique), rel_type, bound, limit_per_node)
        ):
            out[node].append(Neighbour(node, relation(kind, src, dst, props), other, way))
        if backward:
            for rows in out.values():
                rows.reverse()
        return out

    def graph(self, max_nodes: int, max_relations: int, topics: bool = False) -> GraphSnapshot:
        if max_nodes < 0 or max_relations < 0:
            raise InvalidInput("graph caps must not be negative", zh="图的上限不能为负数")
        rows = self.conn.execute(
            f"SELECT {NODE_COLS} FROM nodes ORDER BY lrank, id LIMIT ?", (max_nodes + 1,)
        ).fetchall()
        truncated_nodes = len(rows) > max_nodes
        rows = rows[:max_nodes]
        rel_sql = "SELECT type, source, target, props FROM relations"
        args: list[Any] = []
        if truncated_nodes:
            sel = "(SELECT id FROM nodes ORDER BY lrank, id LIMIT ?)"
            rel_sql += f" WHERE source IN {sel} AND target IN {sel}"
            args += [max_nodes, max_nodes]
        rel_sql += " ORDER BY type, source, target, event_key LIMIT ?"
        rels = [relation(*r) for r in self.conn.execute(rel_sql, [*args, max_relations + 1])]
        snapshot = GraphSnapshot(
            nodes=[row_node(r) for r in rows],
            relations=rels[:max_relations],
            truncated_nodes=truncated_nodes,
            truncated_relations=len(rels) > max_relations,
        )
        if topics and not truncated_nodes:
            self._add_topics(snapshot, max_nodes - len(rows), rels, max_relations)
        return snapshot

    def _add_topics(
        self, snapshot: GraphSnapshot, room: int, rels: list[Relation], max_relations: int
    ) -> None:
        """Topic nodes by id into the ``room`` left, with their SUBTOPIC and BINDS links."""
        found = self.conn.execute(
            f"SELECT {TOPIC_COLS} FROM topics ORDER BY path LIMIT ?", (room + 1,)
        ).fetchall()
        kept = [row_topic(r) for r in found[:room]]
        snapshot.topics = kept
        snapshot.truncated_nodes = len(found) > room
        sql = f"SELECT {BINDING_COLS} FROM topic_bindings b"
        args: list[Any] = []
        if snapshot.truncated_nodes:
            sql += f" WHERE b.path IN {IN_SET}"
            args.append(json_set(t.path for t in kept))
        sql += " ORDER BY b.path, b.event_id LIMIT ?"
        binds = [
            row_binding(r).relation() for r in self.conn.execute(sql, [*args, max_relations + 1])
        ]
        paths = {t.path for t in kept}
        links = [
            link for t in kept if t.parent in paths and (link := t.subtopic_relation()) is not None
        ]
        merged = sorted([*rels, *binds, *links], key=lambda r: (r.type, r.source, r.target))
        snapshot.relations = merged[:max_relations]
        snapshot.truncated_relations = len(merged) > max_relations

    # ------------------------------------------------------------ topics

    def topic_rows(self) -> tuple[list[Topic], list[Binding]]:
        topics = self.conn.execute(f"SELECT {TOPIC_COLS} FROM topics ORDER BY seq")
        bindings = self.conn.execute(
            f"SELECT {BINDING_COLS} FROM topic_bindings b JOIN nodes e ON e.id = b.event_id "
            "JOIN topics t ON t.path = b.path ORDER BY e.seq, t.seq"
        )
        return [row_topic(r) for r in topics], [row_binding(r) for r in bindings]

    def topic_changes(self, since: TopicMark | None) -> TopicChanges | None:
        return topic_changes(self.conn, since)

    def event_dates(self) -> list[tuple[str, str]]:
        rows: list[tuple[str, str]] = self.conn.execute(
            "SELECT id, COALESCE(create_date, '') FROM nodes WHERE label = 'Event' ORDER BY seq"
        ).fetchall()
        return rows
