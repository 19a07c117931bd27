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

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from mnemoql.engine.models import Chunk
from mnemoql.engine.retrieval.evidence import Excerpt, Note, NoteCode, Quote, QuoteRef
from mnemoql.engine.retrieval.terms import QUOTE_SCOPE, term_spans

QUOTE_CAP = 120
PACKAGE_BUDGET = 1000
# The most of a summary an evidence item shows when the summary is the content's own words
# (an offline extractor's leading sentence): the exact quote is the evidence, the summary
# only says what the record is about (docs/DECISIONS.md, "Records ranking").
SUMMARY_SHOWN = 100
# How far a quote's end moves to reach a word boundary. Longer "words" (a URL, a hash, a run
# without spaces) are cut where the window fell rather than dropped from the quote.
WORD_SHIFT = 24

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
        opens: list[int] = []
        closes: list[int] = []
        for occurrences in spans.values():  # a term occurs a few times: plain Python
            starts = sorted(
                ((max(b - length, 0), min(a, size - 1)) for a, b in occurrences),
                key=lambda lo_hi: lo_hi[0],
            )
            # Merge one term's intervals so a start position counts the term once.
            reach = -1
            for lo, hi in starts:
                lo = max(lo, reach + 1)
                if lo <= hi:
                    opens.append(lo)
                    closes.append(hi + 1)
                reach = max(reach, hi)
        # The earliest start with the most terms: a sweep over the few interval ends (the
        # running count over the start positions, first maximum wins).
        steps = sorted([(x, 1) for x in opens] + [(x, -1) for x in closes if x < size])
        count = top = at = 0
        for k, (x, step) in enumerate(steps):
            count += step
            if (k + 1 == len(steps) or steps[k + 1][0] != x) and count > top:
                top, at = count, x
        p = start + at
    return p, min(p + length, end)


def _cjk(ch: str) -> bool:
    """A character of a script written without spaces (Han, kana): every position beside it is
    a word boundary."""
    o = ord(ch)
    return (
        0x2E80 <= o <= 0x9FFF  # radicals, CJK punctuation, kana, CJK ideographs (ext. A too)
        or 0xF900 <= o <= 0xFAFF  # compatibility ideographs
        or 0xFF66 <= o <= 0xFF9F  # half-width katakana
        or 0x20000 <= o <= 0x3FFFF  # ideographs of the supplementary planes
    )


def _wordy(ch: str) -> bool:
    """A character that belongs to a space-separated word: letters, digits, combining marks."""
    if _cjk(ch):
        return False
    return ch.isalnum() or ch == "_" or unicodedata.category(ch)[0] == "M"


_JOINERS = "'’"  # inside a word when letters stand on both sides ("don't", "O’Brien")


def _inside_word(text: str, i: int) -> bool:
    """True when position ``i`` (between ``text[i-1]`` and ``text[i]``) splits a word."""
    if i <= 0 or i >= len(text):
        return False
    before, after = text[i - 1], text[i]
    if _wordy(before) and _wordy(after):
        return True
    if after in _JOINERS and _wordy(before) and i + 1 < len(text) and _wordy(text[i + 1]):
        return True
    return before in _JOINERS and _wordy(after) and i >= 2 and _wordy(text[i - 2])


def _starts_word(text: str, i: int) -> bool:
    return i == 0 or (i < len(text) and not _inside_word(text, i) and not text[i].isspace())


def _ends_word(text: str, i: int) -> bool:
    return i == len(text) or (i > 0 and not _inside_word(text, i) and not text[i - 1].isspace())


def snap_to_words(
    content: str,
    window: tuple[int, int],
    region: tuple[int, int],
    terms: frozenset[str],
    length: int,
) -> tuple[int, int]:
    """Move a quote's ends onto word boundaries without losing a term or growing past ``length``.

    The window from ``choose_window`` starts wherever its terms allowed, often inside a word
    ("hem by hand" of "them by hand"), and a chunk region can start inside one too ("rson at
    Café"). The start moves to the nearest word start at which every term occurrence of the
    window still fits (first to the right, else to the left, inside the region); the end then
    moves back to the last word end that keeps the terms. In CJK text every character is a
    word, so only spaced scripts move. An end moves at most ``WORD_SHIFT`` code points; when
    no boundary is that near (a URL, a long token) it stays where it was.

    Args:
        content: The event's full content.
        window: ``[p, q)`` from ``choose_window``.
        region: ``[start, end)`` the quote must stay in.
        terms: The query's terms (their occurrences in the window are kept whole).
        length: The most code points the quote may have.

    Returns:
        ``[s, t)`` inside ``region``, ``t - s <= length``, an exact range of ``content``.
    """
    p, q = window
    lo_region, hi_region = max(0, region[0]), min(region[1], len(content))
    if q <= p:
        return p, q
    spans = [s for occ in term_spans(content[p:q], terms).values() for s in occ] if terms else []
    first = p + min(a for a, _ in spans) if spans else q - 1
    last = p + max(b for _, b in spans) if spans else None
    ahead = min(first, p + WORD_SHIFT)
    s = next((i for i in range(p, ahead + 1) if _starts_word(content, i)), None)
    if s is None:
        floor = max(lo_region, (last or q) - length, p - WORD_SHIFT)
        s = next((i for i in range(p - 1, floor - 1, -1) if _starts_word(content, i)), p)
    t = min(s + length, hi_region)
    keep = max(s + 1, last or 0, t - WORD_SHIFT)  # never into the last term, nor a long word
    if not _ends_word(content, t):
        t = next((i for i in range(t - 1, keep - 1, -1) if _ends_word(content, i)), t)
    return s, t


def quote_window(
    content: str, region: tuple[int, int], terms: frozenset[str], length: int
) -> tuple[int, int]:
    """The quote range: ``choose_window``'s best window for the terms, on word boundaries."""
    window = choose_window(content, region, terms, length)
    return snap_to_words(content, window, region, terms, length)


def _flat(text: str) -> str:
    return " ".join(text.split())


def shown_summary(summary: str, content: str, quote: str | None) -> str:
    """What an evidence item shows of its event's summary.

    A summary written by a client or a model is shown whole. One made of the content's own
    words (each ``；``-joined part found in the content, spaces folded) repeats what the quote
    shows: it is left out when the quote holds it, else cut to ``SUMMARY_SHOWN`` code points
    with "…". The event keeps its summary; only the page is shorter.
    """
    parts = [_flat(p.rstrip("…")) for p in summary.split("；")]
    # Each word of a part (no space in it) is in the content wherever the part is in its
    # folded words: most summaries are told apart without folding the whole content.
    words = (w for p in parts for w in p.split(" "))
    if not all(parts) or not all(content.find(w, 0, QUOTE_SCOPE) >= 0 for w in words):
        return summary
    flat = _flat(content[:QUOTE_SCOPE])
    if not all(p in flat for p in parts):
        return summary
    if quote is not None and _flat(summary.rstrip("…")) in _flat(quote):
        return ""
    if len(summary) <= SUMMARY_SHOWN:
        return summary
    return summary[: SUMMARY_SHOWN - 1].rstrip() + "…"


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
        start, end = quote_window(content, quote_region(total, best_chunk), self.terms, length)
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
