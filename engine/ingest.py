"""The save pipeline (SPEC §1.3): validate -> meta check -> extract -> choose the topic -> chunk
-> embed -> merge entities -> one write transaction (with the topic binding, SPEC §2.3).

Extraction and embedding run outside the save lock, so concurrent saves overlap on the slow
part; entity merging, id allocation and the write happen under one process-wide lock.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from mnemoql.engine import checks
from mnemoql.engine.binding import TopicChoice, choose_topic
from mnemoql.engine.config import Limits
from mnemoql.engine.errors import (
    Conflict,
    ExtractionInvalid,
    Forgotten,
    InvalidId,
    InvalidInput,
    MnemoError,
)
from mnemoql.engine.messages import (
    CATALOGUE,
    DEFAULT_LOCALE,
    Locale,
    message,
    template,
)
from mnemoql.engine.meta import check_vectors
from mnemoql.engine.models import (
    CALLER_ID,
    Chunk,
    Entity,
    EntityDraft,
    EntityLabel,
    EventDraft,
    MemoryMeta,
    RelationDraft,
    SavePlan,
    SaveResult,
    Vector,
)
from mnemoql.engine.providers.base import ConceptJudge, Embedder, Extractor
from mnemoql.engine.store.base import Store
from mnemoql.engine.text import chunk_ranges, content_hash, normalise_name, text_hash
from mnemoql.prompts.extraction import EntityItem, EventItem, Extraction, ProfileItem

log = logging.getLogger(__name__)

_ALLOCATED = re.compile(r"^(event|person|concept|location)_\d+$")
IDEMPOTENCY_KEY_MAX = 200
CONCEPT_CANDIDATES = 5
CONCEPT_MIN_COSINE = 0.75


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
        extraction = _single_event(extraction) if item.id is not None else extraction
        topic = choose_topic(
            item.content,
            extraction,
            known,
            now.date(),
            topic_path=item.topic_path,
            related_topics=item.related_topics,
            profile=item.activation_profile,
        )
        prepared = await self._embed(item, extraction)
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

    async def _embed(self, item: SaveInput, ex: Extraction) -> _Prepared:
        ranges = chunk_ranges(len(item.content))
        chunk_texts = [item.content[s:e] for s, e in ranges]
        entity_names = [e.name for e in (*ex.persons, *ex.concepts, *ex.locations)]
        summaries = [e.summary for e in ex.events]
        texts = [*summaries, *entity_names, *chunk_texts]
        unique = list(dict.fromkeys(texts))
        matrix = (
            await self.embedder.embed(unique, "passage") if unique else np.zeros((0, 0), np.float32)
        )
        row = {t: i for i, t in enumerate(unique)}

        def vec(text: str) -> Vector:
            found: Vector = matrix[row[text]]
            return found

        chunks = [
            Chunk(
                "", i, s, e, item.content[s:e], text_hash(item.content[s:e]), vec(item.content[s:e])
            )
            for i, (s, e) in enumerate(ranges)
        ]
        return _Prepared(
            summaries={e.ref: vec(e.summary) for e in ex.events},
            names={e.ref: vec(e.name) for e in (*ex.persons, *ex.concepts, *ex.locations)},
            chunks=chunks,
        )

    async def _write(
        self,
        item: SaveInput,
        ex: Extraction,
        prep: _Prepared,
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
        entities, alias_of = await self._merge_entities(ex, prep)
        events = [
            EventDraft(
                ref=ev.ref,
                summary=ev.summary.strip(),
                content=item.content,
                time=(ev.time or item.time or None),
                content_hash=digest,
                embedding=prep.summaries[ev.ref],
                chunks=[_copy_chunk(c) for c in prep.chunks],
                given_id=item.id,
            )
            for ev in ex.events
        ]
        plan = SavePlan(
            events=events,
            entities=entities,
            relations=_relations(ex, alias_of),
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

    async def _merge_entities(
        self, ex: Extraction, prep: _Prepared
    ) -> tuple[list[EntityDraft], dict[str, str]]:
        """Drafts for the store, and ref -> canonical ref for refs folded into another."""
        drafts: list[EntityDraft] = []
        alias_of: dict[str, str] = {}
        groups: tuple[tuple[EntityLabel, list[EntityItem]], ...] = (
            ("Person", ex.persons),
            ("Concept", ex.concepts),
            ("Location", ex.locations),
        )
        for label, items in groups:
            seen: dict[str, EntityDraft] = {}
            keys = {normalise_name(n) for it in items for n in (it.name, *it.aliases) if n.strip()}
            existing = await self.store.find_entities(label, keys) if keys else []
            by_key: dict[str, Entity] = {}
            for ent in existing:
                for n in (ent.name, *ent.aliases):
                    by_key.setdefault(normalise_name(n), ent)
            for it in items:
                names = [n for n in (it.name, *it.aliases) if n.strip()]
                norm = [normalise_name(n) for n in names]
                twin = next((seen[k] for k in norm if k in seen), None)
                if twin is not None:  # the same entity twice in one extraction
                    alias_of[it.ref] = twin.ref
                    _add_aliases(twin, names)
                    continue
                match = next((by_key[k] for k in norm if k in by_key), None)
                if match is None and label == "Concept":
                    match = await self._align(it, prep.names[it.ref])
                draft = EntityDraft(
                    ref=it.ref,
                    label=label,
                    name=it.name.strip(),
                    aliases=[a.strip() for a in it.aliases if a.strip()],
                    description=it.description or None,
                    embedding=prep.names[it.ref],
                )
                if match is not None:
                    draft.merge_into = match.id
                    known = {normalise_name(n) for n in (match.name, *match.aliases)}
                    draft.aliases = [
                        n for n in dict.fromkeys(names) if normalise_name(n) not in known
                    ]
                    draft.embedding = None  # merged nodes keep their vector
                drafts.append(draft)
                for k in norm:
                    seen[k] = draft
        return drafts, alias_of

    async def _align(self, item: EntityItem, vector: Vector) -> Entity | None:
        """Concept alignment (SPEC §1.3.4b): vector candidates judged in order."""
        if self.judge is None:
            return None
        candidates = await self.store.similar_entities(
            "Concept", vector, CONCEPT_CANDIDATES, CONCEPT_MIN_COSINE
        )
        for ent, _cos in candidates:
            try:
                p = await self.judge.same_concept(
                    (item.name, item.aliases, item.description),
                    (ent.name, ent.aliases, ent.description),
                )
            except MnemoError as exc:  # a failing judge means "not the same"
                log.warning("concept judge failed for %s vs %s: %s", item.name, ent.id, exc.code)
                continue
            if p >= self.judge_threshold:
                return ent
        return None


@dataclass(slots=True)
class _Prepared:
    summaries: dict[str, Vector]
    names: dict[str, Vector]
    chunks: list[Chunk]


def _copy_chunk(c: Chunk) -> Chunk:
    return Chunk(c.event_id, c.chunk_index, c.start, c.end, c.text, c.text_hash, c.embedding)


def _add_aliases(draft: EntityDraft, names: Sequence[str]) -> None:
    known = {normalise_name(n) for n in (draft.name, *draft.aliases)}
    for n in names:
        if normalise_name(n) not in known:
            draft.aliases.append(n.strip())
            known.add(normalise_name(n))


def _relations(ex: Extraction, alias_of: dict[str, str]) -> list[RelationDraft]:
    def ref(r: str) -> str:
        return alias_of.get(r, r)

    rels: dict[tuple[str, str, str, str], RelationDraft] = {}

    def add(draft: RelationDraft) -> None:
        key = (draft.type, draft.source, draft.target, str(draft.event_ref or ""))
        rels.setdefault(key, draft)

    for ev in ex.events:
        for p in ev.participants:
            props: dict[str, Any] = {"role": p.role} if p.role else {}
            add(RelationDraft("PARTICIPATED_IN", ref(p.person), ev.ref, props))
        for loc in ev.locations:
            add(RelationDraft("OCCURRED_AT", ev.ref, ref(loc)))
        for c in ev.concepts:
            add(RelationDraft("MENTIONS", ev.ref, ref(c)))
    first_event = ex.events[0].ref
    for att in ex.attitudes:
        add(
            RelationDraft(
                "HAS_ATTITUDE",
                ref(att.person),
                ref(att.target),
                {"attitude": att.attitude},
                event_ref=att.event or first_event,
            )
        )
    return list(rels.values())


def _single_event(ex: Extraction) -> Extraction:
    """A caller id names one event: fold several extracted events into the first."""
    if len(ex.events) <= 1:
        return ex
    head = ex.events[0]
    merged = EventItem(
        ref=head.ref,
        summary="；".join(e.summary.strip() for e in ex.events),
        time=next((e.time for e in ex.events if e.time), None),
        participants=[p for e in ex.events for p in e.participants],
        locations=list(dict.fromkeys(x for e in ex.events for x in e.locations)),
        concepts=list(dict.fromkeys(x for e in ex.events for x in e.concepts)),
    )
    refs = {e.ref for e in ex.events}
    attitudes = [
        a.model_copy(update={"event": head.ref}) if a.event in refs else a for a in ex.attitudes
    ]
    try:
        return ex.model_copy(update={"events": [merged], "attitudes": attitudes})
    except ValidationError as exc:  # pragma: no cover - the inputs were valid already
        raise refused_extraction(exc.errors(include_url=False)) from exc


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


def parse_extraction(data: Any) -> Extraction:
    """Validate a client-sent extraction with SPEC's wording on failure, its details in both
    languages; unknown fields are refused (relations are stated inside events and attitudes,
    never beside them)."""
    if unknown := checks.unknown_extraction_fields(data):
        shown = ", ".join(checks.clip(f, 60) for f in unknown[:5])
        en, zh = (message("extraction.unknown_fields", lc, fields=shown) for lc in ("en", "zh"))
        raise _invalid(en, zh)
    try:
        return Extraction.model_validate(data)
    except ValidationError as exc:
        raise refused_extraction(exc.errors(include_url=False)) from exc


def refused_extraction(errors: Sequence[ErrorDetails]) -> ExtractionInvalid:
    """EXTRACTION_INVALID for pydantic's errors of an extraction (``loc`` from the
    extraction's root), each ``field: problem`` in both languages."""
    return _invalid(_problems(errors, "en"), _problems(errors, "zh"))


def _invalid(en: str, zh: str) -> ExtractionInvalid:
    """EXTRACTION_INVALID with its reason in each language."""
    return ExtractionInvalid(
        message("extraction.invalid", "en", reason=en),
        zh=message("extraction.invalid", "zh", reason=zh),
    )


def input_problem(error: ErrorDetails, locale: Locale, *, allowed: str | None = None) -> str:
    """One pydantic error of an input as its problem in ``locale`` (``input.<type>``, else
    pydantic's words); ``allowed`` names the fields an unknown field's problem lists (without
    it, pydantic's words)."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "extra_forbidden" and allowed is not None:
        return message("input.extra_forbidden", locale, fields=allowed)
    if kind == "model_type":
        return message("input.model_type", locale, class_name=ctx.get("class_name", "object"))
    if f"input.{kind}" in CATALOGUE and kind != "extra_forbidden":
        return message(f"input.{kind}", locale)
    return message("input.other", locale, detail=error["msg"])


def _problems(errors: Sequence[ErrorDetails], locale: Locale) -> str:
    """Each error as ``field: problem`` in ``locale``: the model's own checks by their type
    (``extraction.<name>``), field types as a save input's (``input.<type>``)."""
    said = []
    for error in errors:
        kind, ctx = error["type"], error.get("ctx") or {}
        if (name := kind.removeprefix("extraction_")) != kind and f"extraction.{name}" in CATALOGUE:
            values = {k: template(f"extraction.kind.{v}", locale) if k == "kind" else v
                      for k, v in ctx.items()}  # fmt: skip
            problem = message(f"extraction.{name}", locale, **values)
        else:
            problem = input_problem(error, locale)
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        field = where.removeprefix(".")
        said.append(message("input.problem", locale, field=field, problem=problem) if field
                    else problem)  # fmt: skip
    return message("input.sep", locale).join(said)
