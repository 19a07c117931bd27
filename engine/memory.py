"""The facade the resolvers call: one ``Memory`` per memory space.

It owns the store, the providers, the save pipeline, the session and cursor stores, and
answers every operation of the API with domain objects. Nothing here knows about GraphQL.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from pydantic import TypeAdapter

from mnemoql.engine import checks
from mnemoql.engine.activation import DEFAULT_LIMIT, Activation, Activator
from mnemoql.engine.changes import Changes
from mnemoql.engine.checks import clip
from mnemoql.engine.config import Settings
from mnemoql.engine.cursors import CursorStore
from mnemoql.engine.dates import parse_day
from mnemoql.engine.errors import InvalidInput, NotFound, out_of_range
from mnemoql.engine.ingest import Ingestor
from mnemoql.engine.memory_writes import MemoryWrites
from mnemoql.engine.meta import vectors_are_ours
from mnemoql.engine.models import (
    Counts,
    Direction,
    GraphSnapshot,
    MemoryMeta,
    Neighbour,
    Node,
    NodeLabel,
    NodePage,
    Page,
    RelType,
    SortSpec,
    Where,
)
from mnemoql.engine.recall import Recall, Recollection, TopicTree
from mnemoql.engine.retrieval.delivery import Outcome
from mnemoql.engine.retrieval.pipeline import Retriever, SearchRequest
from mnemoql.engine.retrieval.ranking import Ranker
from mnemoql.engine.retrieval.targeted import TargetedPage
from mnemoql.engine.session_state import LocalState, SharedState
from mnemoql.engine.sessions import Clock, SessionStore
from mnemoql.engine.store.base import Store
from mnemoql.engine.topics import TopicNode

if TYPE_CHECKING:
    from mnemoql.engine.providers.factory import Providers

GRAPH_MAX_NODES = 5000
GRAPH_MAX_RELATIONS = 30000
READ_MAX = 10000
READ_DEFAULT = 2000
TIME_HINT_MAX = 200  # the longest hint the grammar reads is a range of two dates


@dataclass(slots=True)
class TextRange:
    """An exact ``[start, end)`` code-point range of an event's original text."""

    event_id: str
    text: str
    start: int
    end: int
    total: int

    @property
    def next(self) -> int | None:
        return self.end if self.end < self.total else None


@dataclass(slots=True)
class MemoryIndex:
    model: str
    dimensions: int
    stored: MemoryMeta | None
    counts: Counts
    store: str
    embedder: str
    extractor: str
    judge: str | None

    @property
    def mismatch(self) -> bool:
        """The stored vectors do not fit the configured model: another model or width, or
        none at all (a restore without vectors, ``MemoryMeta.stale``)."""
        return not vectors_are_ours(self.stored, self.model, self.dimensions)


class EvidencePages:
    """A kept evidence page (``Outcome``) as JSON text, for the session's page ledger."""

    def __init__(self) -> None:
        self._adapter = TypeAdapter(Outcome)

    def encode(self, page: object) -> str:
        return self._adapter.dump_json(page).decode() if isinstance(page, Outcome) else "null"

    def decode(self, text: str) -> object:
        return self._adapter.validate_json(text) if text != "null" else None


class Memory(MemoryWrites):
    """Everything one memory space can do; its writes are ``MemoryWrites``'s (``memory_writes``)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        providers: Providers,
        *,
        clock: Clock = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.providers = providers
        # sessions and cursors live where every process of this memory sees them (issue 30)
        ttl, budget = settings.sessions.ttl_s, int(settings.sessions.budget_mb * 1024 * 1024)
        make = getattr(store, "session_state", None)
        state: SharedState = make(budget) if callable(make) else LocalState(budget)
        self.cursors = CursorStore(clock, ttl, state=state)
        self.sessions = SessionStore(clock, ttl, cursors=self.cursors, pages=EvidencePages())
        self.changes = Changes()  # the live feed of committed writes (memoryChanges)
        lock = asyncio.Lock()  # saves, revectorize, forget and topic binding (SPEC §1.3.6)
        self.recall = Recall(store, lock, now=lambda: self.ingestor.now())
        self.activator = Activator(self.recall, providers.chat, providers.embedder)
        self.ingestor = Ingestor(
            store,
            providers.embedder,
            providers.extractor,
            providers.judge,
            timezone=settings.timezone,
            judge_threshold=settings.alignment.threshold,
            max_content_chars=settings.limits.max_content_chars,
            lock=lock,
            topics=self.recall,
            limits=settings.limits,
        )

        def today() -> date:
            return self.ingestor.now().date()

        ranker = Ranker(
            store,
            today,
            lexical=settings.retrieval.lexical,
            coverage_weight=settings.retrieval.coverage_weight,
            lexical_weight=settings.retrieval.lexical_weight,
            window_span=settings.retrieval.window_span,
            window_alpha=settings.retrieval.window_alpha,
            window_weight=settings.retrieval.window_weight,
            summary_weight=settings.retrieval.summary_weight,
            time_weight=settings.retrieval.time_weight,
            records=settings.retrieval.records,
        )
        self.retriever = Retriever(
            store, providers.embedder, self.sessions, self.cursors, today, ranker=ranker
        )

    # ---- evidence ----

    async def search(
        self, request: SearchRequest, session: str | None, *, repeatable: bool = False
    ) -> Outcome:
        """Evidence for a query, entities and/or a time hint (SPEC §1.4); with
        ``request.cursor``, the next page of that cursor's search.

        ``repeatable`` (GraphQL): the same arguments in the same session answer the page they
        were given before, instead of the next one (docs/followups.md).

        Raises:
            InvalidText / LimitExceeded: text that is not valid Unicode, or larger than the
                caps (``checks.search_query``), before anything is embedded.
        """
        self._check_query(request.query)
        entities = request.entities
        named = [entities] if isinstance(entities, str) else list(entities or ())
        checks.texts((f"entities[{i}]", e) for i, e in enumerate(named))
        if request.time_hint is not None:
            checks.text(request.time_hint, "timeHint")
            checks.size("timeHint", len(request.time_hint), TIME_HINT_MAX, "characters")
        checks.texts([("session", session)] if session is not None else [])
        checks.texts([("cursor", request.cursor)] if request.cursor is not None else [])
        if request.cursor is not None:
            await self.cursors.load(request.cursor)
        return await self.retriever.search(request, session, repeatable=repeatable)

    async def search_entities(self, target: str, query: str | None) -> TargetedPage:
        self._check_query(query)
        return await self.retriever.targeted(target, query)

    async def expand(
        self,
        cursor: str,
        concept_id: str,
        limit: int,
        session: str | None,
        *,
        repeatable: bool = False,
    ) -> Outcome:
        checks.texts([("cursor", cursor), ("conceptId", concept_id)])
        await self.cursors.load(cursor)
        return await self.retriever.expand(
            cursor, concept_id, limit, session, repeatable=repeatable
        )

    async def nearby(
        self,
        cursor: str,
        event_id: str,
        before: int,
        after: int,
        session: str | None,
        *,
        repeatable: bool = False,
    ) -> Outcome:
        checks.texts([("cursor", cursor), ("eventId", event_id)])
        await self.cursors.load(cursor)
        return await self.retriever.nearby(
            cursor, event_id, before, after, session, repeatable=repeatable
        )

    async def remember_writes(self, session: str | None) -> None:
        """After a write made for ``session``: when the session state orders reads (Neo4j's
        bookmarks), record this process's writes in the session, so its next call reads them
        on any replica (issue 30)."""
        if session and getattr(self.cursors.state, "causal", False):
            await self.sessions.touch(session)

    async def cursor_session(self, cursor: str) -> str | None:
        """The session a live cursor belongs to (None when unknown or expired): the session a
        follow-up continues in when its caller names none."""
        return await self.cursors.owner(cursor)

    def _check_query(self, query: str | None) -> None:
        """A search text: valid Unicode, at most ``max_search_chars``, and within the window
        the embedding model reads at once (the local model tells its token count; a longer
        query would cost several passes on the one embedder thread every client shares)."""
        if query is None:
            return
        checks.text(query, "query")
        limit = self.settings.limits.max_search_chars
        checks.size("query", len(query), limit, "characters", "max_search_chars")
        count = getattr(self.providers.embedder, "query_tokens", None)
        window = getattr(self.providers.embedder, "window", None)
        if count is not None and isinstance(window, int):
            tokens = count(query)
            if tokens is not None:
                checks.size("query", tokens, window, "tokens for the embedding model")

    # ---- topics and associative recall (SPEC §2) ----

    async def topics(self) -> TopicTree:
        await self._catch_up()
        return await self.recall.tree()

    async def topic(self, path: str) -> TopicNode | None:
        await self._catch_up()
        return await self.recall.topic(path)

    async def recall_topic(self, topic_path: str) -> Recollection:
        checks.text(topic_path, "topicPath")
        await self._catch_up()
        return await self.recall.by_topic(topic_path)

    async def recall_date(self, day: str) -> Recollection:
        """Every memory saved on ``day``: ``2026-03-01``, or any phrase of the date grammar
        that names one day (``yesterday``, ``last Friday``, 上周五, ``12月1日``), read on the
        memory's clock (``engine.dates``)."""
        checks.text(day, "date")
        checks.size("date", len(day), TIME_HINT_MAX, "characters")
        try:
            when = parse_day(day, self.ingestor.now().date())
        except (ValueError, OverflowError):
            raise InvalidInput(
                f"invalid date {clip(day)!r}: name one day, e.g. 2026-03-01, yesterday, "
                "last Friday, 上周五 or 12月1日",
                zh=f"日期格式无效：{clip(day)}（应为一天，如 2026-03-01、昨天、上周五）",
                argument="date",
            ) from None
        await self._catch_up()
        return await self.recall.by_date(when)

    async def activate(
        self, lines: Sequence[str], evaluate: bool = False, limit: int = DEFAULT_LIMIT
    ) -> Activation:
        checks.texts((f"input[{i}]", line) for i, line in enumerate(lines))
        await self._catch_up()
        return await self.activator.activate(lines, evaluate, limit)

    # ---- reads ----

    async def read(self, event_id: str, start: int = 0, limit: int = READ_DEFAULT) -> TextRange:
        """SPEC §1.6 read: exact text, no session, no model, no meta check."""
        if not 1 <= limit <= READ_MAX:
            raise out_of_range("limit", 1, READ_MAX, limit)
        checks.text(event_id, "eventId")
        events = await self.store.get_events([event_id])
        if not events:
            raise NotFound(
                f"no event with id {event_id!r}", zh=f"事件不存在：{event_id}", id=event_id
            )
        content = events[0].content
        if not content:
            raise NotFound(f"event {event_id} has no original content", zh="该事件没有原文 content")
        total = len(content)
        if not 0 <= start <= total:
            raise InvalidInput(
                f"start must be between 0 and {total}",
                zh=f"start 超出范围（total={total}）",
                argument="start",
            )
        end = min(start + limit, total)
        return TextRange(event_id, content[start:end], start, end, total)

    async def nodes(self, ids: Sequence[str]) -> list[Node | None]:
        checks.texts(("id", i) for i in ids)
        return await self.store.get_nodes(ids)

    async def list_nodes(
        self,
        label: NodeLabel,
        where: Where | None,
        sort: SortSpec,
        page: Page,
    ) -> NodePage:
        """One keyset page of a label (forward or backward, ``engine.models.Page``)."""
        limit = self.settings.limits.max_page_size
        if not 0 <= page.size <= limit:
            raise out_of_range("last" if page.backward else "first", 0, limit, page.size)
        checks.where(where, self.settings.limits.max_where_conditions)
        checks.texts(checks.where_strings(where))
        for name, position in (("after", page.after), ("before", page.before)):
            if position is not None:
                checks.texts(checks.strings(list(position), name))
                checks.position(sort[0], (position[0], position[1]), name)
        return await self.store.list_nodes(label, where, sort, page)

    async def neighbours(
        self,
        node_ids: Sequence[str],
        rel_type: RelType | None,
        direction: Direction,
        limit: int,
        after: str | None = None,
        before: str | None = None,
        *,
        backward: bool = False,
    ) -> dict[str, list[Neighbour]]:
        return await self.store.neighbours(
            node_ids, rel_type, direction, limit, after, before, backward=backward
        )

    async def graph(
        self,
        max_nodes: int = GRAPH_MAX_NODES,
        max_relations: int = GRAPH_MAX_RELATIONS,
        *,
        topics: bool = False,
    ) -> GraphSnapshot:
        if not 1 <= max_nodes <= GRAPH_MAX_NODES:
            raise out_of_range("maxNodes", 1, GRAPH_MAX_NODES, max_nodes)
        if not 0 <= max_relations <= GRAPH_MAX_RELATIONS:
            raise out_of_range("maxRelationships", 0, GRAPH_MAX_RELATIONS, max_relations)
        return await self.store.graph(max_nodes, max_relations, topics=topics)

    async def neighbourhood(self, node_id: str, first: int = 100) -> GraphSnapshot:
        """A node with up to ``first`` direct neighbours and the relations between them."""
        if not 1 <= first <= GRAPH_MAX_NODES:
            raise out_of_range("first", 1, GRAPH_MAX_NODES, first)
        (center,) = await self.store.get_nodes([node_id])
        if center is None:
            raise NotFound(f"no node with id {node_id!r}", id=node_id, zh=f"节点不存在：{node_id}")
        rows = (await self.store.neighbours([node_id], None, "both", first + 1))[node_id]
        others = await self.store.get_nodes(list(dict.fromkeys(r.other_id for r in rows[:first])))
        nodes = [center, *(n for n in others if n is not None)]
        return GraphSnapshot(
            nodes=nodes,
            relations=[r.rel for r in rows[:first]],
            truncated_nodes=len(rows) > first,
            truncated_relations=len(rows) > first,
        )

    async def index(self) -> MemoryIndex:
        p = self.providers
        return MemoryIndex(
            model=p.embedder.model,
            dimensions=p.embedder.dimensions,
            stored=await self.store.get_meta(),
            counts=await self.store.counts(),
            # the store itself, not a wrapper around it (``web.neo4j_boot.VersionChecked``)
            store=type(getattr(self.store, "inner", self.store)).__name__,
            embedder=type(p.embedder).__name__,
            extractor=type(p.extractor).__name__,
            judge=type(p.judge).__name__ if p.judge else None,
        )
