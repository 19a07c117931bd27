"""The compact, line-oriented text a model reads (SPEC §1.10), in Chinese or English.

Only what the page holds is printed: ids, write times, summaries, exact quotes with their
ranges, concepts, the cursor and the next steps. Never scores, vectors or configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mnemoql.engine.models import Entity
from mnemoql.engine.retrieval.evidence import (
    ConceptRef,
    EvidenceItem,
    EvidencePage,
    Locale,
    ReadResult,
    SharedConcept,
)

if TYPE_CHECKING:
    from mnemoql.engine.retrieval.pipeline import TargetedPage


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


_ZH = _Words(
    new="新增",
    chain="追查链",
    cursor_ttl="（{minutes} 分钟内有效）",
    written="写入",
    time="时间：",
    summary="摘要：",
    quote="原文[{start},{end})/{total}：「{text}」",
    same_as="原文同 {id}[{start},{end})",
    concepts="概念：",
    shared="共享概念：",
    next="可继续：",
    search_again="search(cursor) 取下一页（新的事件）",
    item_sep="；",
    list_sep=", ",
    ids_open="（",
    ids_close="）",
    disclaimer="注：分数为检索启发式，不代表事实置信度；摘要需以原文核实；"
    "共享概念与来源相邻不代表因果或先后。",
    empty="未找到新的事件。空结果不代表记忆不存在（本会话已排除 {excluded} 个已交付事件；"
    "可用 reset_seen 重新检索）。",
    read_head="{id} 原文[{start},{end})/{total}：",
)

_EN = _Words(
    new="new",
    chain="chain",
    cursor_ttl=" (valid for {minutes} minutes)",
    written="written",
    time="time: ",
    summary="summary: ",
    quote="source[{start},{end})/{total}: “{text}”",
    same_as="same as {id}[{start},{end})",
    concepts="concepts: ",
    shared="shared concepts: ",
    next="next: ",
    search_again="search(cursor): the next page (new events)",
    item_sep="; ",
    list_sep=", ",
    ids_open=" (",
    ids_close=")",
    disclaimer="note: ranking scores are retrieval heuristics, not confidence in facts; verify "
    "summaries against the source; shared concepts and neighbouring sources do not imply cause "
    "or order.",
    empty="No new events found. An empty result does not mean the memory does not exist "
    "({excluded} delivered events of this session were excluded; use reset_seen to search "
    "again).",
    read_head="{id} source[{start},{end})/{total}:",
)

_WORDS: dict[Locale, _Words] = {"zh": _ZH, "en": _EN}


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
    lines = [head, f"{w.summary}{item.summary}"] if item.summary else [head]
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


def render_empty(excluded_count: int, locale: Locale = "zh") -> str:
    """The text for a call that delivered nothing new."""
    return _WORDS[locale].empty.format(excluded=excluded_count)


def render(page: EvidencePage, locale: Locale = "zh") -> str:
    """The compact text of an evidence page.

    Args:
        page: A search / expand / nearby result.
        locale: ``"zh"`` (the original wording) or ``"en"``.

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


def render_read(result: ReadResult, locale: Locale = "zh") -> str:
    """The text of a read: a header with range and total, the text, then ``next=`` if any."""
    w = _WORDS[locale]
    head = w.read_head.format(
        id=result.event_id, start=result.start, end=result.end, total=result.total
    )
    lines = [head, result.text]
    if result.next is not None:
        lines.append(f"next={result.next}")
    return "\n".join(lines)


def render_targeted(page: TargetedPage, locale: Locale = "zh") -> str:
    """The text of a Person/Concept search: each match with its one-hop neighbours."""
    zh = locale == "zh"
    lines: list[str] = []
    for n, hit in enumerate(page.hits, 1):
        mark = " （名称匹配）" if zh and hit.exact else ""
        lines.append(f"#{n} {hit.node.id} {hit.node.name}{mark}")
        for rel, other in hit.neighbours:
            label = other.name if isinstance(other, Entity) else other.summary
            arrow = "->" if rel.direction == "out" else "<-"
            lines.append(f"  {arrow}{rel.rel.type} {other.id} {label}")
    head = f"[memory_database_search] operation=search target={page.target}"
    if not lines:
        return head + "\n" + ("未找到匹配的节点。" if zh else "No matching node.")
    return "\n".join([head, *lines])
