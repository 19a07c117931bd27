"""Entity lookups by name: through the space's name index once it can answer, else a scan.

``find_entities`` (every save plans its merges with it) and ``resolve_terms`` (entity filters,
Person/Concept searches) read the space-scoped name index (``_cypher.NAME_INDEX``) once the
space's entities all carry their name keys and the index is ONLINE; until then, or when the
index fails, they scan the space's entities. Kept apart from the store because it holds state
of its own (whether the space is keyed, and the index state last read and when) and, when the
store opens, keys the names of a space written before the keys existed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from neo4j.exceptions import ClientError

from mnemoql.engine.models import Entity, EntityLabel
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_read as qread
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j import _write as write
from mnemoql.engine.store.neo4j._routes import INDEX_STATE_TTL
from mnemoql.engine.store.neo4j._runner import Runner
from mnemoql.engine.text import normalise_name

log = logging.getLogger(__name__)


class Names:
    """The name lookups of one store's space and what they know of its name index."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.keyed = False  # the space's entities all carry their name keys
        self.seen = -INDEX_STATE_TTL  # monotonic time of the index state read
        self.online = False

    async def key(self) -> None:
        """Give the space's entities written before the name keys theirs (in batches), then
        mark the space named; a space without its node yet is new (named when created)."""
        rows = await self.runner.run(q.SPACE_NAMED)
        if rows and not rows[0]["named"]:
            while True:
                done = await self.runner.run(q.KEY_NAMES, {"batch": 10_000, **self._params()},
                                             writable=True)  # fmt: skip
                if not done or int(done[0]["n"]) < 10_000:
                    break
            await self.runner.run(q.MARK_NAMED, writable=True)
            log.info("keyed the entity names of space %r", self.runner.space)
        self.keyed = True

    def _params(self) -> dict[str, str]:
        return {"name_prefix": q.name_prefix(self.runner.space)}

    async def usable(self) -> bool:
        """Whether entity lookups by name can read the name index: the space's entities are
        keyed and the index is ONLINE (read again at most every INDEX_STATE_TTL seconds until
        it is; a populating index answers nothing, so the scan answers meanwhile)."""
        if not self.keyed:
            return False
        aged = time.monotonic() - self.seen >= INDEX_STATE_TTL
        if not self.online and aged:
            rows = await self.runner.run(q.NAME_INDEX_STATE, {"name": q.NAME_INDEX})
            self.online = bool(rows) and rows[0]["state"] == "ONLINE"
            self.seen = time.monotonic()
        return self.online

    async def find_entities(
        self, label: EntityLabel, normalised_names: Iterable[str]
    ) -> list[Entity]:
        lbl = q.entity_label(label)
        keys = sorted({normalise_name(n) for n in normalised_names} - {""})
        if not keys:
            return []
        if await self.usable():
            rows = await self._by_key(qread.FIND_ENTITIES_BY_KEY[lbl], keys)
            if rows is not None:
                return [rec.entity(n) for n in write.oldest_first(rows)]
        rows = await self.runner.run(qread.FIND_ENTITIES[lbl], {"keys": keys})
        return [rec.entity(r["n"]) for r in rows]

    async def resolve_terms(self, normalised_term: str) -> frozenset[str]:
        term = normalise_name(normalised_term)
        if term and await self.usable():
            rows = await self._by_key(qread.RESOLVE_TERM_BY_KEY, [term])
            if rows is not None:
                return frozenset(r["id"] for r in rows)
        rows = await self.runner.run(qread.RESOLVE_TERM, {"term": term})
        return frozenset(r["id"] for r in rows)

    async def _by_key(self, query: str, keys: list[str]) -> list[dict[str, Any]] | None:
        """A lookup through the name index, in batches of keys; None (the scan answers) when
        the index fails (dropped, or not ONLINE after all)."""
        out: list[dict[str, Any]] = []
        try:
            for i in range(0, len(keys), q.NAME_LOOKUP_BATCH):
                batch = keys[i : i + q.NAME_LOOKUP_BATCH]
                out += await self.runner.run(query, {"keys": batch, **self._params()})
        except ClientError as exc:
            log.info("the name index is unavailable, scanning: %s", exc.code)
            self.online = False
            self.seen = time.monotonic()
            return None
        return out
