"""What the Python API returns: frozen dataclasses, the same for ``Memory`` and ``Client``.

Each type mirrors its GraphQL type field for field (snake_case names), so a program can move
between the in-process memory and a served one without changing how it reads results. Each has
``from_domain`` (the engine's records, for ``Memory``) and ``from_json`` (a GraphQL response,
for ``Client``); the engine is imported inside ``from_domain`` only, so ``import mnemoql``
stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from mnemoql.engine.ingest import SaveOutcome
    from mnemoql.engine.memory import TextRange as TextRangeDomain
    from mnemoql.engine.retrieval import evidence as ev
    from mnemoql.engine.retrieval.delivery import Outcome
    from mnemoql.engine.retrieval.targeted import TargetedPage

Locale = Literal["zh", "en"]
Target = Literal["Event", "Person", "Concept"]


@dataclass(frozen=True, slots=True)
class Merge:
    """An existing entity a save merged an extracted one into."""

    entity_id: str
    aliases_added: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SaveResult:
    """What a save wrote, or replayed (``replayed``: nothing new was written)."""

    event_ids: tuple[str, ...]
    created_persons: tuple[str, ...]
    created_concepts: tuple[str, ...]
    created_locations: tuple[str, ...]
    merged: tuple[Merge, ...]
    refs: dict[str, str]  # extraction ref -> the node id it became
    replayed: bool
    message: str
    topic_path: str | None = None
    topic_source: str | None = None

    @classmethod
    def from_domain(cls, o: SaveOutcome, locale: Locale) -> SaveResult:
        r = o.result
        return cls(
            event_ids=tuple(r.event_ids),
            created_persons=tuple(r.created.get("Person", [])),
            created_concepts=tuple(r.created.get("Concept", [])),
            created_locations=tuple(r.created.get("Location", [])),
            merged=tuple(Merge(i, tuple(a)) for i, a in r.merged),
            refs=dict(r.refs),
            replayed=r.replayed,
            message=o.message(locale),
            topic_path=o.topic.draft.path if o.topic is not None else None,
            topic_source=o.topic.source if o.topic is not None else None,
        )

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SaveResult:
        return cls(
            event_ids=tuple(d["eventIds"]),
            created_persons=tuple(d["createdPersons"]),
            created_concepts=tuple(d["createdConcepts"]),
            created_locations=tuple(d["createdLocations"]),
            merged=tuple(Merge(m["entityId"], tuple(m["aliasesAdded"])) for m in d["merged"]),
            refs={r["ref"]: r["nodeId"] for r in d["refs"]},
            replayed=d["replayed"],
            message=d["message"],
            topic_path=d["topicPath"],
            topic_source=d["topicSource"],
        )


@dataclass(frozen=True, slots=True)
class Quote:
    """An exact excerpt: ``text == content[start:end]`` of a text of ``total`` code points."""

    text: str
    start: int
    end: int
    total: int


@dataclass(frozen=True, slots=True)
class QuoteRef:
    """The excerpt repeats one delivered earlier in this session: that event's range."""

    event_id: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Note:
    """A remark on a page or an item (``BUDGET_EXHAUSTED``, ``LONG_CONTENT``, ...)."""

    code: str
    value: str | None
    message: str  # in the locale of the memory or client (MNEMOQL_LOCALE, or locale=)


@dataclass(frozen=True, slots=True)
class ConceptRef:
    concept_id: str
    name: str


@dataclass(frozen=True, slots=True)
class SharedConcept:
    """A concept several items of the page mention: a way to ``expand``."""

    concept_id: str
    name: str
    event_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """One delivered event: its summary, a short exact quote (or a ``quote_ref`` to one
    delivered before), and the concepts it mentions."""

    event_id: str
    summary: str
    create_time: str
    time: str | None
    quote: Quote | None
    quote_ref: QuoteRef | None
    total: int
    notes: tuple[Note, ...]
    concepts: tuple[ConceptRef, ...]


@dataclass(frozen=True, slots=True)
class EntityHit:
    """A Person or Concept match of a targeted search (score 1.0: matched by name)."""

    node_id: str
    label: str
    name: str
    score: float
    exact: bool


@dataclass(frozen=True, slots=True)
class EvidencePage:
    """What ``search``, ``expand`` and ``nearby`` return: at most 4 new events and a cursor
    (15 minutes) to continue with ``expand(page.cursor, concept)`` or ``nearby(...)``.

    ``text`` is the compact rendering for a model (SPEC §1.10) in the locale asked for.
    """

    operation: str
    target: str
    session: str
    cursor: str | None
    chain_count: int
    chain_limit: int
    items: tuple[EvidenceItem, ...]
    shared_concepts: tuple[SharedConcept, ...]
    expand_concepts: tuple[str, ...]
    nearby_events: tuple[str, ...]
    excluded_count: int
    search_again: bool
    notes: tuple[Note, ...]
    entity_hits: tuple[EntityHit, ...]
    text: str

    @classmethod
    def from_outcome(cls, out: Outcome, locale: Locale) -> EvidencePage:
        from mnemoql.engine.retrieval.render import render

        p = out.page
        return cls(
            operation=p.operation,
            target=p.target,
            session=out.session_id,
            cursor=p.cursor,
            chain_count=p.chain_count,
            chain_limit=p.chain_limit,
            items=tuple(_item(i, locale) for i in p.items),
            shared_concepts=tuple(
                SharedConcept(s.id, s.name, tuple(s.event_ids)) for s in p.shared_concepts
            ),
            expand_concepts=tuple(p.continuations.expand_concepts),
            nearby_events=tuple(p.continuations.nearby_events),
            excluded_count=p.excluded_count,
            search_again=p.search_again,
            notes=tuple(_note(n, locale) for n in p.notes),
            entity_hits=(),
            text=render(p, locale),
        )

    @classmethod
    def from_targeted(cls, t: TargetedPage, session: str, locale: Locale) -> EvidencePage:
        from mnemoql.engine.retrieval.evidence import CHAIN_LIMIT
        from mnemoql.engine.retrieval.render import render_targeted

        hits = tuple(
            EntityHit(h.node.id, h.node.label, h.node.name, h.score, h.exact) for h in t.hits
        )
        return cls("search", t.target, session, None, 0, CHAIN_LIMIT, (), (), (), (), 0, False,
                   (), hits, render_targeted(t, locale))  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> EvidencePage:
        return cls(
            operation=d["operation"],
            target=d["target"],
            session=d["session"],
            cursor=d["cursor"],
            chain_count=d["chainCount"],
            chain_limit=d["chainLimit"],
            items=tuple(_item_json(i) for i in d["items"]),
            shared_concepts=tuple(
                SharedConcept(s["conceptId"], s["name"], tuple(s["eventIds"]))
                for s in d["sharedConcepts"]
            ),
            expand_concepts=tuple(d["expandConcepts"]),
            nearby_events=tuple(d["nearbyEvents"]),
            excluded_count=d["excludedCount"],
            search_again=d["searchAgain"],
            notes=tuple(_note_json(n) for n in d["notes"]),
            entity_hits=tuple(_hit_json(h) for h in d["entityHits"]),
            text=d["text"],
        )


@dataclass(frozen=True, slots=True)
class TextRange:
    """``content[start:end]`` of one event, verbatim; ``next`` is where to continue reading
    (None at the end)."""

    event_id: str
    text: str
    start: int
    end: int
    total: int
    next: int | None

    @classmethod
    def from_domain(cls, r: TextRangeDomain) -> TextRange:
        return cls(r.event_id, r.text, r.start, r.end, r.total, r.next)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TextRange:
        return cls(d["eventId"], d["text"], d["start"], d["end"], d["total"], d["next"])


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """The ids ``forget`` deleted: the event and every entity no other event used."""

    deleted_ids: tuple[str, ...]


def _hit_json(h: dict[str, Any]) -> EntityHit:
    node = h["node"]
    return EntityHit(node["id"], node["__typename"], node["name"], h["score"], h["exact"])


def _note(n: ev.Note, locale: Locale) -> Note:
    return Note(n.code.value, None if n.value is None else str(n.value), n.message(locale))


def _note_json(n: dict[str, Any]) -> Note:
    return Note(n["code"], n["value"], n["message"])


def _item(i: ev.EvidenceItem, locale: Locale) -> EvidenceItem:
    q, r = i.quote, i.quote_ref
    return EvidenceItem(
        event_id=i.event_id,
        summary=i.summary,
        create_time=i.create_time,
        time=i.time,
        quote=Quote(q.text, q.start, q.end, q.total) if q else None,
        quote_ref=QuoteRef(r.id, r.start, r.end) if r else None,
        total=i.total,
        notes=tuple(_note(n, locale) for n in i.notes),
        concepts=tuple(ConceptRef(c.id, c.name) for c in i.concepts),
    )


def _item_json(i: dict[str, Any]) -> EvidenceItem:
    q, r = i["quote"], i["quoteRef"]
    return EvidenceItem(
        event_id=i["eventId"],
        summary=i["summary"],
        create_time=i["createTime"],
        time=i["time"],
        quote=Quote(q["text"], q["start"], q["end"], q["total"]) if q else None,
        quote_ref=QuoteRef(r["eventId"], r["start"], r["end"]) if r else None,
        total=i["total"],
        notes=tuple(_note_json(n) for n in i["notes"]),
        concepts=tuple(ConceptRef(c["conceptId"], c["name"]) for c in i["concepts"]),
    )


def follow(
    cursor: str | EvidencePage, session: str | None, default: str | None
) -> tuple[str, str | None]:
    """The cursor and session a follow-up continues: the session named in the call, else the
    page's (a page stands for its cursor and its session), else the caller's ``default``.

    Raises:
        CursorInvalid: the page delivered nothing, so it has no cursor.
    """
    if isinstance(cursor, EvidencePage):
        if cursor.cursor is None:
            from mnemoql.errors import CursorInvalid

            raise CursorInvalid(
                "this page delivered nothing, so it has no cursor to follow",
                zh="游标无效或已过期，请重新 search",
            )
        return cursor.cursor, session or cursor.session
    return cursor, session or default
