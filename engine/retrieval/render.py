"""The compact, line-oriented text a model reads (SPEC §1.10), in Chinese or English.

Only what the page holds is printed: ids, write times, summaries, exact quotes with their
ranges, concepts, the cursor and the next steps. Never scores, vectors or configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from mnemoql.engine.messages import DEFAULT_LOCALE, LOCALES, Locale, template
from mnemoql.engine.models import Entity
from mnemoql.engine.retrieval.evidence import (
    ConceptRef,
    EvidenceItem,
    EvidencePage,
    ReadResult,
    SharedConcept,
)

if TYPE_CHECKING:
    from mnemoql.engine.retrieval.targeted import TargetedPage


@dataclass(frozen=True, slots=True)
class _Words:
    new: str
    chain: str
    cursor_ttl: str
    written: str
    time: str
    summary: str
    quote: str
    same_as: str
    concepts: str
    shared: str
    next: str
    search_again: str
    item_sep: str
    list_sep: str
    ids_open: str
    ids_close: str
    disclaimer: str
    empty: str
    read_head: str


def _words(locale: Locale) -> _Words:
    """The words of ``locale`` from the catalogue (``render.<field>`` keys)."""
    return _Words(**{f.name: template(f"render.{f.name}", locale) for f in fields(_Words)})


_WORDS: dict[Locale, _Words] = {locale: _words(locale) for locale in LOCALES}


def _concepts(concepts: tuple[ConceptRef, ...], w: _Words) -> str:
    return w.item_sep.join(f"{c.id} {c.name}" for c in concepts)


def _shared(shared: tuple[SharedConcept, ...], w: _Words) -> str:
    return w.item_sep.join(
        f"{c.id} {c.name}{w.ids_open}{w.list_sep.join(c.event_ids)}{w.ids_close}" for c in shared
    )


def _item(rank: int, item: EvidenceItem, w: _Words, locale: Locale) -> list[str]:
    head = f"#{rank} {item.event_id} | {w.written} {item.create_time}"
    if item.time:
        head += f" | {w.time}{item.time}"
    # an empty summary: the quote below holds it (quotes.shown_summary)
    summary = item.summary if item.shown is None else item.shown
    lines = [head, f"{w.summary}{summary}"] if summary else [head]
    if item.quote is not None:
        q = item.quote
        lines.append(w.quote.format(start=q.start, end=q.end, total=q.total, text=q.text))
    elif item.quote_ref is not None:
        r = item.quote_ref
        lines.append(w.same_as.format(id=r.id, start=r.start, end=r.end))
    lines.extend(note.message(locale) for note in item.notes)
    if item.concepts:
        lines.append(w.concepts + _concepts(item.concepts, w))
    return lines


def _next(page: EvidencePage, w: _Words) -> str:
    # the measured best follow-up first (docs/DECISIONS.md, "The next best call")
    entries = [w.search_again] if page.search_again else []
    entries.append("read(event_id)")
    if page.cursor is not None and page.continuations.expand_concepts:
        ids = ", ".join(page.continuations.expand_concepts)
        entries.append(f"expand(cursor, concept_id∈{{{ids}}})")
    if page.cursor is not None and page.continuations.nearby_events:
        ids = ", ".join(page.continuations.nearby_events)
        entries.append(f"nearby(cursor, event_id∈{{{ids}}})")
    return " | ".join(entries)


def render_empty(excluded_count: int, locale: Locale = DEFAULT_LOCALE) -> str:
    """The text for a call that delivered nothing new."""
    return _WORDS[locale].empty.format(excluded=excluded_count)


def render(page: EvidencePage, locale: Locale = DEFAULT_LOCALE) -> str:
    """The compact text of an evidence page.

    Args:
        page: A search / expand / nearby result.
        locale: ``"en"`` or ``"zh"`` (the original wording); default ``MNEMOQL_LOCALE``'s
            default, English. Callers pass the request's locale.

    Returns:
        Newline-separated text with no trailing newline. A page without items renders its
        page notes followed by the empty-result sentence.
    """
    w = _WORDS[locale]
    notes = [note.message(locale) for note in page.notes]
    if not page.items:
        return "\n".join([*notes, render_empty(page.excluded_count, locale)])
    lines = [
        f"[memory_database_search] operation={page.operation} target={page.target} "
        f"{w.new}={len(page.items)} {w.chain}={page.chain_count}/{page.chain_limit}"
    ]
    if page.cursor is not None:
        lines.append(f"cursor={page.cursor}{w.cursor_ttl.format(minutes=page.cursor_ttl_minutes)}")
    lines.extend(notes)
    for rank, item in enumerate(page.items, start=1):
        lines.extend(_item(rank, item, w, locale))
    if page.shared_concepts:
        lines.append(w.shared + _shared(page.shared_concepts, w))
    lines.append(w.next + _next(page, w))
    lines.append(w.disclaimer)
    return "\n".join(lines)


def render_read(result: ReadResult, locale: Locale = DEFAULT_LOCALE) -> str:
    """The text of a read: a header with range and total, the text, then ``next=`` if any."""
    w = _WORDS[locale]
    head = w.read_head.format(
        id=result.event_id, start=result.start, end=result.end, total=result.total
    )
    lines = [head, result.text]
    if result.next is not None:
        lines.append(f"next={result.next}")
    return "\n".join(lines)


def render_targeted(page: TargetedPage, locale: Locale = DEFAULT_LOCALE) -> str:
    """The text of a Person/Concept search: each match with its one-hop neighbours."""
    lines: list[str] = []
    for n, hit in enumerate(page.hits, 1):
        mark = template("render.name_match", locale) if hit.exact else ""
        lines.append(f"#{n} {hit.node.id} {hit.node.name}{mark}")
        for rel, other in hit.neighbours:
            label = other.name if isinstance(other, Entity) else other.summary
            arrow = "->" if rel.direction == "out" else "<-"
            lines.append(f"  {arrow}{rel.rel.type} {other.id} {label}")
    head = f"[memory_database_search] operation=search target={page.target}"
    if not lines:
        return head + "\n" + template("render.no_node", locale)
    return "\n".join([head, *lines])
