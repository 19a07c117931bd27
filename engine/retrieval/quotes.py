"""Quotes, the package budget and quoteRef (SPEC §1.5).

Each delivered event, in rank order, gets an exact excerpt of at most 120 code points, chosen in
its best chunk (or ``content[:32000]``) to cover as many distinct query terms as possible. The
whole package spends at most 1000 code points; an excerpt that repeats one already delivered
(in the session's history or earlier in the package) becomes a free ``QuoteRef``.

Typical use, inside a session's lock::

    budget = QuoteBudget(terms, lookup=session.excerpt_lookup)
    for event in ranked:
        result = budget.take(event.id, event.content, best_chunk=chunk_range.get(event.id))
    ...  # build the page; on success commit budget.pending to the session
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from mnemoql.engine.models import Chunk
from mnemoql.engine.retrieval.evidence import Excerpt, Note, NoteCode, Quote, QuoteRef
from mnemoql.engine.retrieval.terms import QUOTE_SCOPE, term_spans

QUOTE_CAP = 120
PACKAGE_BUDGET = 1000

# text -> (event_id, start, end) of an excerpt delivered earlier, or None
ExcerptLookup = Callable[[str], tuple[str, int, int] | None]


def quote_region(content_len: int, best_chunk: tuple[int, int] | None) -> tuple[int, int]:
    """The range a quote is chosen in.

    Args:
        content_len: Length of the event's content in code points.
        best_chunk: ``[start, end)`` of the best-scoring chunk starting before 32000, or None
            (no query vector, or a legacy event without chunks).

    Returns:
        ``[start, min(end, 32000))`` of the chunk, else ``[0, min(content_len, 32000))``.
    """
    if best_chunk is not None and best_chunk[0] < min(QUOTE_SCOPE, content_len):
        return best_chunk[0], min(best_chunk[1], QUOTE_SCOPE, content_len)
    return 0, min(content_len, QUOTE_SCOPE)


def best_chunk(chunks: Sequence[Chunk], query: npt.ArrayLike) -> tuple[int, int] | None:
    """The ``[start, end)`` of the chunk most similar to ``query`` among those starting before
    32000 that have an embedding (ties: lower chunk_index); None if there is none.

    Use it when the chunk route's best chunk is missing or starts at or beyond 32000.
    """
    usable = sorted(
        (c for c in chunks if c.start < QUOTE_SCOPE and c.embedding is not None),
        key=lambda c: c.chunk_index,
    )
    if not usable:
        return None
    q = np.asarray(query, dtype=np.float64).ravel()
    mat = np.stack([np.asarray(c.embedding, dtype=np.float64).ravel() for c in usable])
    norms = np.linalg.norm(mat, axis=1) * (np.linalg.norm(q) or 1.0)
    sims = np.divide(mat @ q, norms, out=np.zeros(len(usable)), where=norms > 0)
    top = usable[int(np.argmax(sims))]
    return top.start, top.end


def choose_window(
    content: str, region: tuple[int, int], terms: frozenset[str], length: int
) -> tuple[int, int]:
    """The quote range: the start ``p`` in ``region`` whose window ``[p, p+length)`` fully
    contains the most distinct query terms, earliest on ties, clipped to the region end.

    Term occurrences are found once; each occurrence ``[a, b)`` fits the windows starting in
    ``[b - length, a]``, so a difference array over start positions counts distinct terms per
    start in O(region + occurrences).

    Args:
        content: The event's full content.
        region: ``[start, end)`` from ``quote_region``.
        terms: Query terms; with none, ``p`` is the region start.
        length: Window length ``L`` (``min(120, budget)``), at least 1.

    Returns:
        ``(p, min(p + length, region_end))``, code points, end exclusive.
    """
    start = max(0, region[0])
    end = min(region[1], len(content))
    if end <= start or length <= 0:
        return start, start
    last = max(start, end - length)  # later starts only lose terms off the region's end
    p = start
    spans = term_spans(content[start:end], terms) if terms else {}
    if spans:
        size = last - start + 1
        diff = np.zeros(size + 1, dtype=np.int64)
        for occurrences in spans.values():
            occ = np.asarray(occurrences, dtype=np.int64)
            lo = np.maximum(occ[:, 1] - length, 0)
            hi = np.minimum(occ[:, 0], size - 1)
            order = np.argsort(lo, kind="stable")
            lo, hi = lo[order], hi[order]
            # Merge one term's intervals so a start position counts the term once.
            reach = np.concatenate(([-1], np.maximum.accumulate(hi)[:-1]))
            lo = np.maximum(lo, reach + 1)
            keep = lo <= hi
            np.add.at(diff, lo[keep], 1)
            np.add.at(diff, hi[keep] + 1, -1)
        p = start + int(np.argmax(np.cumsum(diff[:-1])))
    return p, min(p + length, end)


@dataclass(frozen=True, slots=True)
class QuoteResult:
    """What one event gets: a quote, a quoteRef, or neither (budget used up, no content)."""

    event_id: str
    quote: Quote | None
    quote_ref: QuoteRef | None
    total: int
    notes: tuple[Note, ...] = ()


class QuoteBudget:
    """Spends one package's quote budget over events taken in rank order.

    Args:
        terms: The query's terms (empty for entity/date-only searches).
        lookup: Finds an excerpt in the session's history (``Session.excerpt_lookup``).
        budget: The package budget in code points.
        cap: The per-quote cap in code points.

    Attributes:
        remaining: Budget left.
        pending: Excerpts delivered by this package, to record in the session on commit.
    """

    def __init__(
        self,
        terms: frozenset[str],
        lookup: ExcerptLookup | None = None,
        *,
        budget: int = PACKAGE_BUDGET,
        cap: int = QUOTE_CAP,
    ) -> None:
        self.terms = terms
        self.remaining = budget
        self.cap = cap
        self.pending: list[Excerpt] = []
        self._history = lookup
        self._package: dict[str, Excerpt] = {}

    def _earlier(self, text: str) -> tuple[str, int, int] | None:
        found = self._history(text) if self._history is not None else None
        if found is not None:
            return found
        mine = self._package.get(text)
        return None if mine is None else (mine.event_id, mine.start, mine.end)

    def take(
        self, event_id: str, content: str, best_chunk: tuple[int, int] | None = None
    ) -> QuoteResult:
        """Quote the next event in rank order.

        Args:
            event_id: The event's id.
            content: Its full content.
            best_chunk: Its best chunk's range (see ``quote_region``), or None.

        Returns:
            The quote or quoteRef, with the budget-exhausted note and/or the long-content hint.
        """
        total = len(content)
        notes: list[Note] = []
        if total > QUOTE_SCOPE:
            notes.append(Note(NoteCode.LONG_CONTENT, total))
        length = min(self.cap, self.remaining)
        if length <= 0:
            notes.insert(0, Note(NoteCode.BUDGET_EXHAUSTED))
            return QuoteResult(event_id, None, None, total, tuple(notes))
        start, end = choose_window(content, quote_region(total, best_chunk), self.terms, length)
        text = content[start:end]
        if not text:
            return QuoteResult(event_id, None, None, total, tuple(notes))
        earlier = self._earlier(text)
        if earlier is not None:
            return QuoteResult(event_id, None, QuoteRef(*earlier), total, tuple(notes))
        self.remaining -= len(text)
        excerpt = Excerpt(text, event_id, start, end)
        self.pending.append(excerpt)
        self._package[text] = excerpt
        return QuoteResult(event_id, Quote(text, start, end, total), None, total, tuple(notes))


@dataclass(frozen=True, slots=True)
class QuoteSource:
    """One delivered event as ``package_quotes`` needs it."""

    event_id: str
    content: str
    best_chunk: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class QuotePackage:
    results: list[QuoteResult]
    pending: list[Excerpt] = field(default_factory=list)
    remaining: int = 0


def package_quotes(
    sources: Sequence[QuoteSource],
    terms: frozenset[str],
    lookup: ExcerptLookup | None = None,
    *,
    budget: int = PACKAGE_BUDGET,
    cap: int = QUOTE_CAP,
) -> QuotePackage:
    """Quote every delivered event in rank order with one budget.

    Args:
        sources: Delivered events, in rank order.
        terms: The query's terms.
        lookup: The session's excerpt lookup.
        budget: The package budget.
        cap: The per-quote cap.

    Returns:
        One result per source, the excerpts to commit, and the budget left.
    """
    spender = QuoteBudget(terms, lookup, budget=budget, cap=cap)
    results = [spender.take(s.event_id, s.content, s.best_chunk) for s in sources]
    return QuotePackage(results, spender.pending, spender.remaining)
