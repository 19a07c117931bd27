"""The save pipeline (SPEC §1.3): validate -> meta check -> extract -> choose the topic -> chunk
-> embed -> merge entities -> one write transaction (with the topic binding, SPEC §2.3).

Extraction and embedding run outside the save lock, so concurrent saves overlap on the slow
part; entity merging, id allocation and the write happen under one process-wide lock. The
extraction as input (a client's parsed, refusals worded) is ``engine.extraction_input``; the
parts of the plan (vectors, entity merges, relations) are ``engine.save_plan``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field

from mnemoql.engine import checks, save_plan
from mnemoql.engine.binding import TopicChoice, choose_topic
from mnemoql.engine.drafts import EventDraft, SavePlan, SaveResult
from mnemoql.engine.errors import Conflict, Forgotten, InvalidId, InvalidInput
from mnemoql.engine.extraction_input import single_event
from mnemoql.engine.messages import DEFAULT_LOCALE, Locale, message, template
from mnemoql.engine.meta import check_vectors
from mnemoql.engine.models import CALLER_ID, MemoryMeta
from mnemoql.engine.providers.base import ConceptJudge, Embedder, Extractor
from mnemoql.engine.service_settings import Limits
from mnemoql.engine.store.base import Store
from mnemoql.engine.text import content_hash
from mnemoql.prompts.extraction import Extraction, ProfileItem

_ALLOCATED = re.compile(r"^(event|person|concept|location)_\d+$")
IDEMPOTENCY_KEY_MAX = 200


class SaveInput(BaseModel):
    """One memory to save, as a client sends it."""

    model_config = ConfigDict(extra="forbid")

    content: str
    id: str | None = None
    time: str | None = None
    topic_path: str | None = None
    related_topics: list[str] = Field(default_factory=list)
    activation_profile: ProfileItem | None = None
    extraction: Extraction | None = None
    # checked by Ingestor.validate (a coded error), not here: a pydantic failure in the
    # resolver would reach the client as an internal error
    idempotency_key: str | None = None
    dedupe_by_hash: bool = False


@dataclass(slots=True)
class SaveOutcome:
    result: SaveResult
    topic: TopicChoice | None = None  # None for replays and date-only records

    def message(self, locale: Locale = DEFAULT_LOCALE) -> str:
        """The save's one line in ``locale`` (``describe``)."""
        return describe(self.result, locale)


class TopicIndex(Protocol):
    """What the pipeline asks of the topic index (``engine.recall.Recall``)."""

    async def context(self) -> TopicContextLike: ...

    def saved(self, plan: SavePlan, result: SaveResult) -> None:
        """Index a committed save; called under the save lock."""


class TopicContextLike(Protocol):
    @property
    def tree_text(self) -> str:
        """The topic tree's text (for the extraction model)."""

    @property
    def paths(self) -> list[str]:
        """Every known topic path (for the offline topic rule)."""


Now = Callable[[], datetime]


class Ingestor:
    """Runs saves against one store. Shared by every request of a memory space."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        extractor: Extractor,
        judge: ConceptJudge | None,
        *,
        timezone: str,
        judge_threshold: float,
        max_content_chars: int,
        now: Now | None = None,
        lock: asyncio.Lock | None = None,
        topics: TopicIndex | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.extractor = extractor
        self.judge = judge
        self.tz = ZoneInfo(timezone)
        self.judge_threshold = judge_threshold
        self.max_content_chars = max_content_chars
        self.limits = limits or Limits()
        self._now = now or (lambda: datetime.now(self.tz))
        # Saves, revectorize and forget share this lock (SPEC §1.3.6).
        self.lock = lock or asyncio.Lock()
        self.topics = topics

    def now(self) -> datetime:
        return self._now().astimezone(self.tz)

    async def check_meta(self) -> None:
        """EMBEDDING_MISMATCH unless the stored vectors are ours (``engine.meta``)."""
        meta = await self.store.get_meta()
        check_vectors(meta, self.embedder.model, self.embedder.dimensions)

    def validate(self, item: SaveInput) -> None:
        """Refuse, with a coded error and before any work, what no save may hold."""
        checks.text(item.content, "content")
        if not item.content.strip():
            raise InvalidInput(
                "content must not be empty", zh="content 不能为空", argument="content"
            )
        checks.visible(item.content, "content")
        if len(item.content) > self.max_content_chars:
            raise InvalidInput(
                f"content has {len(item.content)} characters; the limit is "
                f"{self.max_content_chars} (MNEMOQL_LIMITS__MAX_CONTENT_CHARS)",
                zh=f"content 超过 {self.max_content_chars} 字上限",
                argument="content",
            )
        named = (("id", item.id), ("time", item.time), ("topicPath", item.topic_path),
                 ("idempotencyKey", item.idempotency_key))  # fmt: skip
        checks.texts((arg, v) for arg, v in named if v is not None)
        checks.texts((f"relatedTopics[{i}]", p) for i, p in enumerate(item.related_topics))
        if item.idempotency_key is not None:
            checks.size("idempotencyKey", len(item.idempotency_key), IDEMPOTENCY_KEY_MAX,
                        "characters")  # fmt: skip
        checks.profile(item.activation_profile)
        if item.id is not None and (not CALLER_ID.match(item.id) or _ALLOCATED.match(item.id)):
            raise InvalidId(
                f"id {checks.clip(item.id)!r} is not allowed: use letters, digits and _.:- (at "
                "most 128), for example book_ch3_e12; event_N style ids are allocated by the "
                "service and topic:... ids name topics",
                zh=f"ID 不合法：{checks.clip(item.id)}",
                argument="id",
            )
        if item.extraction is not None:
            checks.extraction(item.extraction, self.limits)

    async def save(self, item: SaveInput) -> SaveOutcome:
        """Save one memory; raises MnemoError subclasses and writes nothing on failure."""
        self.validate(item)
        await self.check_meta()
        if item.idempotency_key and (prior := await self.store.replay(item.idempotency_key)):
            return await self._replayed(item, prior)
        now = self.now()
        tree, known = "", []
        if self.topics is not None:
            context = await self.topics.context()
            # the tree is for the extraction model: not needed when the client extracted
            tree = context.tree_text if item.extraction is None else ""
            known = context.paths
        extraction = item.extraction or await self.extractor.extract(
            item.content, now.isoformat(), topic_tree=tree or None
        )
        extraction = single_event(extraction) if item.id is not None else extraction
        topic = choose_topic(
            item.content,
            extraction,
            known,
            now.date(),
            topic_path=item.topic_path,
            related_topics=item.related_topics,
            profile=item.activation_profile,
        )
        prepared = await save_plan.embed(self.embedder, item.content, extraction)
        async with self.lock:
            return await self._write(item, extraction, prepared, now, topic)

    async def _replayed(self, item: SaveInput, prior: SaveResult) -> SaveOutcome:
        """The recorded result of an idempotency key, if it still names this content.

        Raises:
            Forgotten: an event the key saved was forgotten since (nothing is saved again:
                the memory was removed on purpose; a new key saves it anew).
            Conflict: the key saved other content.
        """
        key = checks.clip(item.idempotency_key or "")
        found = {e.id: e for e in await self.store.get_events(prior.event_ids)}
        gone = [i for i in prior.event_ids if i not in found]
        if gone:
            raise Forgotten(
                f"idempotencyKey {key!r} saved {', '.join(prior.event_ids)}, and "
                f"{', '.join(gone)} has been forgotten since; nothing was saved. Use a new "
                "idempotencyKey to save this content again",
                zh=f"该幂等键保存的事件已被删除：{', '.join(gone)}",
                argument="idempotencyKey",
                forgotten_ids=gone,
            )
        digest = content_hash(item.content)
        if any(e.content_hash != digest for e in found.values()):
            raise Conflict(
                f"idempotencyKey {key!r} was used for other content (saved as "
                f"{', '.join(prior.event_ids)}); use a new key for new content",
                zh="该幂等键已用于其他内容",
                argument="idempotencyKey",
                event_ids=prior.event_ids,
            )
        return SaveOutcome(prior)

    # ---- steps ----

    async def _write(
        self,
        item: SaveInput,
        ex: Extraction,
        prep: save_plan.Prepared,
        now: datetime,
        topic: TopicChoice | None = None,
    ) -> SaveOutcome:
        if item.idempotency_key and (prior := await self.store.replay(item.idempotency_key)):
            return await self._replayed(item, prior)
        digest = content_hash(item.content)
        if item.dedupe_by_hash and (existing := await self.store.events_with_hash(digest)):
            prior = SaveResult(event_ids=existing, created={}, merged=[], refs={}, replayed=True)
            return SaveOutcome(prior)
        if item.id is not None and (await self.store.id_counts([item.id])).get(item.id, 0):
            raise Conflict(
                f"an event with id {item.id!r} already exists",
                zh=f"ID 已存在：{item.id}",
                argument="id",
            )
        entities, alias_of = await save_plan.merge_entities(
            self.store, self.judge, self.judge_threshold, ex, prep
        )
        events = [
            EventDraft(
                ref=ev.ref,
                summary=ev.summary.strip(),
                content=item.content,
                time=(ev.time or item.time or None),
                content_hash=digest,
                embedding=prep.summaries[ev.ref],
                chunks=[save_plan.copy_chunk(c) for c in prep.chunks],
                given_id=item.id,
            )
            for ev in ex.events
        ]
        plan = SavePlan(
            events=events,
            entities=entities,
            relations=save_plan.relations(ex, alias_of),
            create_time=now.isoformat(timespec="seconds"),
            create_date=now.date().isoformat(),
            meta=MemoryMeta(self.embedder.model, self.embedder.dimensions, now.isoformat()),
            idempotency_key=item.idempotency_key,
            topic=topic.draft if topic is not None else None,
        )
        result = await self.store.apply_save(plan)
        if result.replayed:  # a concurrent save with the same key committed first
            return await self._replayed(item, result)
        if self.topics is not None:
            self.topics.saved(plan, result)
        return SaveOutcome(result, topic)


def describe(result: SaveResult, locale: Locale = DEFAULT_LOCALE) -> str:
    """The one-line summary of SPEC §1.3.10 (its wording in zh), in ``locale``."""
    ids = ", ".join(result.event_ids)
    if result.replayed:
        return message("save.replayed", locale, ids=ids)
    parts = [message("save.saved", locale, count=len(result.event_ids), ids=ids)]
    for label in ("Person", "Concept", "Location"):
        if created := result.created.get(label):
            parts.append(message("save.created", locale, ids=", ".join(created)))
    alias_sep = template("save.alias_sep", locale)
    for node_id, aliases in result.merged:
        added = alias_sep.join(f'+"{a}"' for a in aliases)
        parts.append(
            message("save.merged", locale, id=node_id)
            + (message("save.aliases", locale, added=added) if added else "")
        )
    return template("save.sep", locale).join(parts)
