"""The Neo4j store: ``engine.store.base.Store`` over the official async driver (Neo4j 5.26).

Layout
    SPEC §1.2's labels, relationship types and properties, plus a ``space`` property on every
    node so one database holds many memory spaces: uniqueness is on ``(space, id)`` per label
    (composite uniqueness constraints exist in Community Edition) and every query is scoped
    by space. Vectors are LIST<FLOAT> properties, L2-normalised on write like the embedded
    store. Retrieval scores exactly with ``vector.similarity.cosine`` and converts its
    (1+cos)/2 back to raw cosine. The four vector indexes of SPEC §1.2 exist (created at the
    first save, rebuilt by re-vectorize); they are database-wide, so with spaces of different
    widths the last re-vectorize sets their width. A fifth one, on chunks, exists only for
    stores with ``space_indexes`` off (the chunk route of a large space reads its own).
    Events and chunks also carry a label of their space, and a space past
    ``index_min_events`` gets its own two vector indexes on those labels (created after the
    save, restore or open that finds it that large, rebuilt by re-vectorize, dropped with the
    space). The routes of a large space (``_routes.py``) over-fetch candidates from its own
    index (else the shared one), filter them and rescore them exactly, and fall back to the
    exact scan whenever that cannot fill the page (docs/DECISIONS.md, "Neo4j routes").

Transactions
    Each write is one managed transaction (``execute_write`` retries transient failures, so
    the transaction functions have no side effects outside the database). A write first
    MERGEs the space's ``MnemoSpace`` node and bumps its counter: that write lock serialises
    saves of one space across processes, which keeps id allocation (from the high-water marks
    on that node) safe. Schema statements run in their own auto-commit transactions (Neo4j
    refuses schema and data changes in one transaction).

All Cypher text is static (see ``_cypher.py``); labels and relationship types reach it only
through allow-lists.

The class is the ``Store`` protocol, its reads inherited from ``StoreReads`` (``_store_reads``);
its methods hand their work to the module of its concept:
``_reads`` (rows by id, lists, the graph, topics), ``_names`` (entity lookups by name),
``_routes`` and ``_lexical`` (retrieval), ``_save`` (saves), ``_write`` (forgets, bindings,
re-vectorize), ``_schema``, ``_dump`` (export), ``_restore`` (import) and ``_changes``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from neo4j import AsyncDriver, AsyncManagedTransaction
from neo4j.exceptions import ClientError

from mnemoql.engine.drafts import SavePlan, SaveResult, TopicDraft
from mnemoql.engine.errors import InvalidInput, StoreUnavailable
from mnemoql.engine.models import Filters, Hit, Vector, VectorSet
from mnemoql.engine.redact import mask_url
from mnemoql.engine.store import rules
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _dump as dump
from mnemoql.engine.store.neo4j import _restore as restore
from mnemoql.engine.store.neo4j import _routes as routes
from mnemoql.engine.store.neo4j import _write as write
from mnemoql.engine.store.neo4j._names import Names
from mnemoql.engine.store.neo4j._runner import UNREACHABLE, Runner, T, TxFn
from mnemoql.engine.store.neo4j._save import SaveTx
from mnemoql.engine.store.neo4j._schema import Schema
from mnemoql.engine.store.neo4j._sessions import DROP_ALL as DROP_STATE
from mnemoql.engine.store.neo4j._sessions import Neo4jState
from mnemoql.engine.store.neo4j._store_reads import StoreReads
from mnemoql.engine.store.window import window_route_by_parts

__all__ = ["Neo4jStore"]

log = logging.getLogger(__name__)

SPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


# ---------------------------------------------------------------- the store


class Neo4jStore(StoreReads):
    """Neo4j implementation of ``engine.store.base.Store`` for one memory space.

    Args:
        uri: Bolt URI, e.g. ``bolt://127.0.0.1:7687`` or ``neo4j+s://xxx.databases.neo4j.io``.
        user: user name (``neo4j`` for a managed server).
        password: the password (never logged).
        database: database name; None uses the server's default database.
        space: the memory space all reads and writes are scoped to.
        connection_timeout: seconds to wait for a connection before StoreUnavailable.
        index_min_events: spaces this large (by insertion count) search through the vector
            indexes (plus exact rescoring); None scans exactly at every size.
        index_overfetch: how many candidates per wanted event a route asks its index for.
        space_indexes: give spaces past ``index_min_events`` their own vector indexes (the
            database-wide ones are shared by every space; docs/DECISIONS.md).
    """

    def __init__(
        self,
        uri: str,
        user: str,
        password: str,
        database: str | None = None,
        space: str = "default",
        *,
        connection_timeout: float = 5.0,
        index_min_events: int | None = routes.INDEX_MIN_EVENTS,
        index_overfetch: int = routes.INDEX_OVERFETCH,
        space_indexes: bool = True,
    ) -> None:
        if not SPACE_NAME.match(space):
            raise InvalidInput(
                f"space {space!r} is not allowed: use 1-64 letters, digits, '_' or '-'",
                zh=f"空间名不合法：{space}",
            )
        self.uri = uri
        self.user = user
        self.database = database
        self.space = space
        self.runner = Runner(uri, user, password, database, space, connection_timeout)
        self._writes: int | None = None  # committed writes of the space as this store counts
        self._sessions: Neo4jState | None = None
        self.index_min_events = index_min_events
        self.index_overfetch = index_overfetch
        self.space_indexes = space_indexes
        # the shared index's fetch grows with its crowding; off only to measure the old route
        self.share_fetch = True
        self.space_names = q.space_schema(space)
        self.index = routes.IndexState(self.runner, self.space_names, self)
        self.schema = Schema(self.runner, self, changed=self.index.invalidate)
        # entity lookups by name go through the name index once it is ONLINE and the space's
        # entities all carry their keys (``_cypher.NAME_INDEX``); the scan answers before
        self.names = Names(self.runner)

    def __repr__(self) -> str:
        return f"Neo4jStore({self.uri!r}, database={self.database!r}, space={self.space!r})"

    # ------------------------------------------------------------ plumbing

    @property
    def driver(self) -> AsyncDriver:
        return self.runner.driver

    async def _write(self, fn: TxFn[T]) -> T:
        """``fn`` as one write transaction; any exception rolls everything back."""
        return await self.runner.write(fn)

    # ------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Connect, refuse a server without vector support, then create the constraints and
        indexes of SPEC §1.2 that are missing."""
        if self.runner.connected:
            return
        try:
            await self.runner.connect()
            await self.runner.check_version()
            await self.schema.ensure()
            await self.names.key()
            await self.changed_elsewhere()  # the baseline of the writes counter
        except (*UNREACHABLE, OSError) as exc:
            await self.close()
            raise self.runner.unavailable(exc) from exc
        except ClientError as exc:
            await self.close()
            if exc.code == "Neo.ClientError.Database.DatabaseNotFound":
                raise StoreUnavailable(
                    f"Neo4j at {mask_url(self.uri)} has no database {self.database!r}; create it "
                    "or leave the database unset to use the server's default",
                    zh="Neo4j 数据库不存在",
                ) from exc
            raise
        except BaseException:
            await self.close()
            raise

    def session_state(self, budget: int) -> Neo4jState:
        """The space's evidence sessions and cursors as nodes every replica shares
        (``_sessions``), with the bookmarks that make a follow-up read its session's writes."""
        if self._sessions is None:
            self._sessions = Neo4jState(self.runner, budget)
        return self._sessions

    async def close(self) -> None:
        if self._sessions is not None:  # its sweep, if one runs, before the driver goes
            await self._sessions.close()
        await self.index.close()
        await self.runner.close()

    async def ping(self, timeout: float = 2.0) -> bool:
        return await self.runner.ping(timeout)

    async def drop_space(self) -> int:
        """Delete every node of this space (tests, admin); returns how many were deleted."""
        deleted = await self.schema.drop_space()
        rows = await self.runner.run(DROP_STATE, writable=True)  # its sessions and cursors
        return deleted + int(rows[0]["n"])

    # ------------------------------------------------------------ writes

    async def apply_save(self, plan: SavePlan) -> SaveResult:
        rules.check_plan(plan)

        size = 0
        names_indexed = await self.names.usable()

        async def work(tx: AsyncManagedTransaction) -> SaveResult:
            nonlocal size
            save = SaveTx(tx, self.space, plan, names_indexed=names_indexed)
            result = await save.run()
            size = save.space_size
            return result

        result = await self._write(work)
        self._wrote()
        if not self.schema.vector_indexes and not result.replayed:
            await self.schema.create_vector_indexes(plan.meta.dimensions)
        if (
            not self.schema.space_indexed
            and self.index_min_events is not None
            and size >= self.index_min_events
        ):
            await self.schema.ensure_space_indexes(plan.meta.dimensions)
        return result

    async def replace_vectors(self, vectors: VectorSet) -> None:
        async def work(tx: AsyncManagedTransaction) -> None:
            await write.replace_vectors(tx, self.space, vectors)

        await self._write(work)
        self._wrote()
        # The routes fall back to exact scans without the indexes: a failure only costs speed.
        await self.schema.rebuild_vector_indexes(vectors.meta.dimensions)

    # ------------------------------------------------------------ retrieval routes (the window)

    async def window_route(
        self,
        query: Vector,
        seeds: Sequence[str],
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
        *,
        span: int = 1,
        alpha: float = 0.5,
    ) -> list[Hit]:
        return await window_route_by_parts(
            self, query, seeds, filters, exclude, limit, restrict, span=span, alpha=alpha
        )

    # ------------------------------------------------------------ topics

    async def bind_topic(self, draft: TopicDraft, event_ids: Sequence[str], timestamp: int) -> None:
        draft.check()

        async def work(tx: AsyncManagedTransaction) -> None:
            await write.bind_topic(tx, self.space, draft, event_ids, timestamp)

        await self._write(work)
        self._wrote()

    # ------------------------------------------------------------ deletion

    async def forget(self, event_id: str) -> list[str]:
        async def work(tx: AsyncManagedTransaction) -> list[str]:
            return await write.forget(tx, self.space, event_id)

        deleted = await self._write(work)
        self._wrote()
        return deleted

    # ------------------------------------------------------------ whole-memory dump

    async def export_records(self, *, vectors: bool = False) -> AsyncIterator[dict[str, Any]]:
        async for record in dump.export_records(self.runner, vectors):
            yield record

    async def import_records(self, records: Iterable[dict[str, Any]]) -> dict[str, int]:
        """Batches of one transaction each into an empty space, undone on failure (see
        ``_restore.py``)."""
        counts = await restore.Importer(self.runner, self.schema).run(records)
        self._wrote()
        await self.schema.ensure_space_indexes()
        return counts

    # ------------------------------------------------------------ other writers

    def _wrote(self) -> None:
        """One more committed write of this process (each bumps the space's ``writes``)."""
        if self._writes is not None:
            self._writes += 1

    async def changed_elsewhere(self) -> bool:
        """True when another process committed a write to this space since the last call
        (the space's ``writes`` counter ran ahead of this store's own count)."""
        rows = await self._run(qwrite.GET_WRITES)
        current = int(rows[0]["n"] or 0) if rows else 0
        changed = self._writes is not None and current != self._writes
        self._writes = current
        return changed
