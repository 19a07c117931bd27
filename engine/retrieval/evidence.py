"""What an evidence call delivers (SPEC §1.5, §1.10), as plain records.

``render`` turns these into the compact text for a model; the GraphQL layer maps the same
records to typed fields, so every part of the text also exists as structured data. Nothing here
carries scores, vectors or configuration.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from mnemoql.engine.messages import DEFAULT_LOCALE, Locale, message
from mnemoql.engine.models import POSITIONAL_ID

Operation = Literal["search", "expand", "nearby"]

CHAIN_LIMIT = 20
CURSOR_TTL_MINUTES = 15


@dataclass(frozen=True, slots=True)
class Quote:
    """An exact excerpt ``content[start:end]`` of an event whose content has ``total`` code
    points."""

    text: str
    start: int
    end: int
    total: int


@dataclass(frozen=True, slots=True)
class QuoteRef:
    """The excerpt repeats one already delivered: ``event id``'s ``[start, end)``."""

    id: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Excerpt:
    """A delivered excerpt as the session history records it (``text -> event, range``)."""

    text: str
    event_id: str
    start: int
    end: int


class NoteCode(StrEnum):
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
    LONG_CONTENT = "LONG_CONTENT"
    LEGACY_NO_CHUNKS = "LEGACY_NO_CHUNKS"
    ENTITY_NOT_FOUND = "ENTITY_NOT_FOUND"


@dataclass(frozen=True, slots=True)
class Note:
    """A remark on an item or a page; ``value`` fills the template (a length, a term)."""

    code: NoteCode
    value: str | int | None = None

    def message(self, locale: Locale = DEFAULT_LOCALE) -> str:
        """The note's text in ``locale`` (catalogue key ``note.<code>``)."""
        return message(f"note.{self.code.value}", locale, value=self.value)


@dataclass(frozen=True, slots=True)
class ConceptRef:
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class SharedConcept:
    """A concept mentioned by two or more delivered events."""

    id: str
    name: str
    event_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """One delivered event.

    At most one of ``quote`` and ``quote_ref`` is set; neither when the budget ran out or the
    event has no content. ``total`` is the content length in code points.
    """

    event_id: str
    create_time: str
    time: str | None
    summary: str
    quote: Quote | None = None
    quote_ref: QuoteRef | None = None
    total: int = 0
    notes: tuple[Note, ...] = ()
    concepts: tuple[ConceptRef, ...] = ()
    # the summary as a page's text shows it (``quotes.shown_summary``): empty when the quote
    # holds it, else cut; None: the whole summary. ``summary`` itself stays whole for clients.
    shown: str | None = None


@dataclass(frozen=True, slots=True)
class Continuations:
    """Where a model can go next: expand entries (concepts) and nearby anchors of the page."""

    expand_concepts: tuple[str, ...] = ()
    nearby_events: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EvidencePage:
    """The result of search / expand / nearby on Events.

    Attributes:
        operation: Which call produced it.
        target: The target label (always Event for evidence pages).
        cursor: The new cursor token, None when nothing was delivered.
        chain_count: Events delivered along the chain so far, this call included.
        items: Delivered events in rank order (record order for nearby).
        shared_concepts: Concepts shared by several items.
        continuations: Entries for expand / nearby.
        excluded_count: Session ids that were excluded from candidates.
        notes: Page-level notes (e.g. an entity filter term that matched nothing).
        search_again: The next best call is the next page of this search (``search(cursor)``;
            over MCP also the same search again): its ranking held more candidates than it
            delivered (a query search only). On the
            LongMemEval bench asking again found more evidence per event than every
            expand/nearby chain (docs/DECISIONS.md, "The next best call").
    """

    operation: Operation
    target: str = "Event"
    cursor: str | None = None
    chain_count: int = 0
    items: tuple[EvidenceItem, ...] = ()
    shared_concepts: tuple[SharedConcept, ...] = ()
    continuations: Continuations = field(default_factory=Continuations)
    excluded_count: int = 0
    notes: tuple[Note, ...] = ()
    search_again: bool = False
    chain_limit: int = CHAIN_LIMIT
    cursor_ttl_minutes: int = CURSOR_TTL_MINUTES


@dataclass(frozen=True, slots=True)
class ReadResult:
    """``content[start:end]`` of one event; ``next`` is ``end`` while text remains."""

    event_id: str
    text: str
    start: int
    end: int
    total: int
    next: int | None


def shared_concepts(items: Sequence[EvidenceItem]) -> tuple[SharedConcept, ...]:
    """Concepts mentioned by at least two items, in order of first mention."""
    holders: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for item in items:
        for concept in item.concepts:
            names.setdefault(concept.id, concept.name)
            ids = holders.setdefault(concept.id, [])
            if item.event_id not in ids:
                ids.append(item.event_id)
    return tuple(
        SharedConcept(cid, names[cid], tuple(ids)) for cid, ids in holders.items() if len(ids) > 1
    )


def continuations(items: Iterable[EvidenceItem]) -> Continuations:
    """Every concept of the delivered items (expand) and every positional id (nearby)."""
    concepts: dict[str, None] = {}
    anchors: dict[str, None] = {}
    for item in items:
        concepts.update((c.id, None) for c in item.concepts)
        if POSITIONAL_ID.match(item.event_id):
            anchors[item.event_id] = None
    return Continuations(tuple(concepts), tuple(anchors))
