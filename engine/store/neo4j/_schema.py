"""The Neo4j store's schema: constraints, indexes, a space's own vector indexes, dropping a space.

The constraints and indexes of SPEC §1.2 are created when the store opens (those missing). The
database-wide vector indexes exist from the first save (their width is the memory's), and are
rebuilt by re-vectorize. A space past ``index_min_events`` insertions gets its own two vector
indexes on its space labels (docs/DECISIONS.md, "Neo4j with many spaces"). A failure to build a
vector index only costs speed -- the routes use another index or scan exactly -- so it is
logged, not raised. Whatever changes an index tells the routes to read the index state again
(``changed``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from neo4j.exceptions import ClientError

from mnemoql.engine.store.neo4j import _changes as changes
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_read as qread
from mnemoql.engine.store.neo4j import _cypher_route as qroute
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _lexical as lexical
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j._routes import Tuning
from mnemoql.engine.store.neo4j._runner import Runner

log = logging.getLogger(__name__)

_BATCH = 10_000  # nodes per statement when labelling or deleting a whole space


class Schema:
    """The schema of one store's database and space."""

    def __init__(self, runner: Runner, tuning: Tuning, changed: Callable[[], None]) -> None:
        self.runner = runner
        self.tuning = tuning
        self.changed = changed
        self.names = q.space_schema(runner.space)
        self.vector_indexes = False  # the database-wide ones exist
        self.space_indexed = False  # this space's own exist (as far as this store knows)

    async def ensure(self) -> None:
        """Create the constraints and indexes that are missing."""
        # Constraints own an index of the same name, so one SHOW INDEXES sees both.
        existing = {r["name"] for r in await self.runner.run(q.SHOW_INDEXES)}
        for name, statement in {**q.CONSTRAINTS, **q.INDEXES, **changes.INDEXES}.items():
            if name not in existing:
                await self.runner.schema(statement)
        if lexical.INDEX not in existing:  # Neo4j fills it from the nodes already there
            await self.runner.schema(lexical.CREATE_INDEX)
        self.vector_indexes = all(n in existing for n in self.shared_vector_indexes())
        if not self.vector_indexes:
            dims = await self._dims()
            if dims is not None:
                await self.create_vector_indexes(dims)
        if {self.names.events_index, self.names.chunks_index} <= existing:
            self.space_indexed = True  # another store made them; a rebuild drops them first
        await self.ensure_space_indexes()

    async def _dims(self) -> int | None:
        rows = await self.runner.run(qread.GET_META)
        meta = rec.meta(rows[0]["m"]) if rows else None
        return None if meta is None else meta.dimensions

    def shared_vector_indexes(self) -> list[str]:
        """The database-wide vector indexes this store keeps: SPEC §1.2's four, and the chunk
        index only with ``space_indexes`` off. With own indexes a large space reads its own
        chunk index, and a space below ``index_min_events`` scans exactly, so the shared one
        would only serve a large space while its own index populates (exact chunk scans
        instead) and it would double the HNSW insertions of every chunk: writes went at 337
        against 743 events/s with it (docs/DECISIONS.md, "Neo4j with many spaces"). One that
        exists (made by a store with ``space_indexes`` off) is kept and used."""
        names = list(q.VECTOR_INDEXES.values())
        return names if self.tuning.space_indexes else [*names, q.CHUNK_VECTOR_INDEX]

    async def create_vector_indexes(self, dims: int) -> None:
        statements = list(q.CREATE_VECTOR_INDEX.values())
        if not self.tuning.space_indexes:
            statements.append(q.CREATE_CHUNK_VECTOR_INDEX)
        for statement in statements:
            await self.runner.schema(statement, {"dims": dims})
        self.vector_indexes = True
        self.changed()  # the route strategy re-reads the index state

    async def rebuild_vector_indexes(self, dims: int) -> None:
        """SPEC §1.12.5: the four vector indexes (and a shared chunk index) at the new width,
        outside the data transaction; then this space's own."""
        try:
            for statement in [*q.DROP_VECTOR_INDEX.values(), q.DROP_CHUNK_VECTOR_INDEX]:
                await self.runner.schema(statement)
            await self.create_vector_indexes(dims)
        except ClientError as exc:
            self.vector_indexes = False
            log.warning("rebuilding the Neo4j vector indexes failed: %s", exc.message)
        await self.ensure_space_indexes(dims, rebuild=True)

    async def ensure_space_indexes(self, dims: int | None = None, *, rebuild: bool = False) -> None:
        """This space's own vector indexes, when it has at least ``index_min_events``
        insertions (its nodes labelled first if an older version wrote them); ``rebuild`` drops
        them first (re-vectorize: another width). A failure only costs speed (the routes use
        the shared index or scan exactly), so it is logged, not raised."""
        tuning = self.tuning
        if not tuning.space_indexes or tuning.index_min_events is None:
            return
        if self.space_indexed and not rebuild:
            return
        try:
            if rebuild:
                for statement in self.names.drop:
                    await self.runner.schema(statement)
                self.space_indexed = False
            rows = await self.runner.run(qroute.SPACE_SIZE)
            if not rows or int(rows[0]["n"] or 0) < tuning.index_min_events:
                return
            if dims is None:
                dims = await self._dims()
                if dims is None:
                    return
            if not rows[0]["labelled"]:
                await self._label_space()
            for statement in self.names.create:
                await self.runner.schema(statement, {"dims": dims})
        except ClientError as exc:
            log.warning(
                "creating the vector indexes of space %r failed: %s", self.runner.space, exc.message
            )
            return
        self.space_indexed = True
        self.changed()

    async def _label_space(self) -> None:
        """Give every event and chunk of a space written before the per-space labels its
        label, in batches, then mark the space labelled."""
        labels = q.space_params(self.runner.space)
        for statement in (q.LABEL_EVENTS, q.LABEL_CHUNKS):
            while True:
                rows = await self.runner.run(statement, {**labels, "batch": _BATCH}, writable=True)
                if not rows or int(rows[0]["n"]) < _BATCH:
                    break
        await self.runner.run(q.MARK_LABELLED, writable=True)
        log.info("labelled the events and chunks of space %r", self.runner.space)

    async def drop_space(self) -> int:
        """Delete every node of the space and its own indexes; returns how many were deleted."""
        total = 0
        while True:
            rows = await self.runner.run(qwrite.DROP_SPACE, {"batch": _BATCH}, writable=True)
            deleted = int(rows[0]["deleted"]) if rows else 0
            total += deleted
            if deleted < _BATCH:
                break
        for statement in self.names.drop:
            await self.runner.schema(statement)
        self.space_indexed = False
        self.changed()
        return total
