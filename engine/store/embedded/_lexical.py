"""The embedded store's lexical route: BM25 (SQLite FTS5 ``bm25()``) over chunks and summaries.

Layout
    ``lexical`` is a contentless FTS5 table: it holds only the inverted index of each row's
    tokens (``engine.store.lexical.indexed_text``), never a copy of the text. ``lexical_rows``
    names what each FTS row is: an event's chunk (``part`` = chunk_index) or its summary
    (``part`` = -1), under an INTEGER PRIMARY KEY that VACUUM cannot renumber.
    ``lexical_state`` records the token version and the highest node ``seq`` indexed, and
    ``lexical_df`` how many rows hold each term (fts5vocab would count them by walking the
    term's whole posting list: 0.1-0.3 s for a common word at 100k events).

Derived, never the only copy
    Rows are written in the save's own transaction. At open the index is rebuilt when it is
    missing or was built by another token version, and caught up when events were written past
    its ``seq`` (a database written by an older mnemoql). Re-vectorize and restore rebuild it.
    A contentless row can only be deleted by repeating its tokens, which are recomputed from
    the chunk text and summary the store keeps. The route joins every hit back to
    ``lexical_rows`` and to the live event view, so it can never return an event the store no
    longer holds.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

from mnemoql.engine.drafts import EventDraft
from mnemoql.engine.models import Hit
from mnemoql.engine.store import lexical
from mnemoql.engine.store.embedded._index import EventView, Mask

DDL = """
CREATE TABLE IF NOT EXISTS lexical_rows (
    rowid    INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    part     INTEGER NOT NULL               -- chunk_index, or -1 for the summary
);
CREATE INDEX IF NOT EXISTS lexical_rows_event ON lexical_rows (event_id, part);
CREATE VIRTUAL TABLE IF NOT EXISTS lexical USING fts5 (
    terms, content = '', tokenize = "unicode61 remove_diacritics 0 tokenchars '._+#-'"
);
CREATE TABLE IF NOT EXISTS lexical_df (
    term TEXT PRIMARY KEY,
    rows INTEGER NOT NULL                   -- index rows holding the term (BM25's df)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lexical_state (
    key     TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    seq     INTEGER NOT NULL,               -- highest nodes.seq whose event is indexed
    rows    INTEGER NOT NULL DEFAULT 0      -- rows in the index (BM25's N)
);
"""

SUMMARY_PART = -1
# Rows fetched per wanted event before filters (exclusions, dates, entities) thin them out;
# multiplied while the page is not full and more rows match.
_FETCH_PER_EVENT = 4
# FTS5 scores every row a query matches (bm25() costs ~5 us a row here), so a query keeps its
# rarest terms while their rows add up to at most this many; a term in more than half the rows
# has no weight anyway (FTS5 clamps its idf to 1e-6). Small memories are never pruned.
MATCH_BUDGET = 2_000

Part = tuple[int, str]  # (part, text)


def create(conn: sqlite3.Connection) -> None:
    conn.executescript(DDL)


_DF_UP = (
    "INSERT INTO lexical_df (term, rows) VALUES (?, 1) "
    "ON CONFLICT (term) DO UPDATE SET rows = rows + 1"
)
_DF_DOWN = "UPDATE lexical_df SET rows = rows - 1 WHERE term = ?"


def _insert_rows(conn: sqlite3.Connection, event_id: str, parts: Iterable[Part]) -> int:
    added = 0
    for part, text in parts:
        tokens = lexical.doc_terms(text)
        if not tokens:
            continue
        cur = conn.execute(
            "INSERT INTO lexical_rows (event_id, part) VALUES (?, ?)", (event_id, part)
        )
        conn.execute(
            "INSERT INTO lexical (rowid, terms) VALUES (?, ?)", (cur.lastrowid, " ".join(tokens))
        )
        conn.executemany(_DF_UP, [(t,) for t in set(tokens)])
        added += 1
    return added


def index_event(
    conn: sqlite3.Connection, event_id: str, seq: int, summary: str, chunks: Iterable[Part]
) -> None:
    """Index one new event (inside the save's transaction) and advance the indexed ``seq``."""
    added = _insert_rows(conn, event_id, [(SUMMARY_PART, summary), *chunks])
    conn.execute(
        "INSERT INTO lexical_state (key, version, seq, rows) VALUES ('index', ?, ?, ?) "
        "ON CONFLICT (key) DO UPDATE SET seq = max(seq, excluded.seq), rows = rows + ?3",
        (lexical.LEXICAL_VERSION, seq, added),
    )


def _event_parts(conn: sqlite3.Connection, event_id: str) -> list[Part]:
    row = conn.execute("SELECT summary FROM nodes WHERE id = ?", (event_id,)).fetchone()
    parts: list[Part] = [(SUMMARY_PART, row[0] or "")] if row else []
    parts += conn.execute(
        "SELECT chunk_index, text FROM chunks WHERE event_id = ? ORDER BY chunk_index",
        (event_id,),
    ).fetchall()
    return parts


def unindex_event(conn: sqlite3.Connection, event_id: str) -> None:
    """Remove an event's rows (call before its node and chunks are deleted)."""
    texts = dict(_event_parts(conn, event_id))
    rows = conn.execute(
        "SELECT rowid, part FROM lexical_rows WHERE event_id = ?", (event_id,)
    ).fetchall()
    for rowid, part in rows:
        if part in texts:
            tokens = lexical.doc_terms(texts[part])
            conn.execute(
                "INSERT INTO lexical (lexical, rowid, terms) VALUES ('delete', ?, ?)",
                (rowid, " ".join(tokens)),
            )
            conn.executemany(_DF_DOWN, [(t,) for t in set(tokens)])
    conn.execute("DELETE FROM lexical_df WHERE rows <= 0")
    conn.execute("DELETE FROM lexical_rows WHERE event_id = ?", (event_id,))
    conn.execute("UPDATE lexical_state SET rows = max(0, rows - ?)", (len(rows),))


def rebuild(conn: sqlite3.Connection) -> int:
    """Drop every row and index every event again (inside a transaction); returns events."""
    conn.execute("INSERT INTO lexical (lexical) VALUES ('delete-all')")
    conn.execute("DELETE FROM lexical_rows")
    conn.execute("DELETE FROM lexical_df")
    conn.execute("DELETE FROM lexical_state")
    return catch_up(conn, 0)


def catch_up(conn: sqlite3.Connection, after_seq: int) -> int:
    """Index the events with ``seq > after_seq`` that have no rows yet; returns how many."""
    events = conn.execute(
        "SELECT id, seq, summary FROM nodes WHERE label = 'Event' AND seq > ? "
        "AND NOT EXISTS (SELECT 1 FROM lexical_rows r WHERE r.event_id = nodes.id) ORDER BY seq",
        (after_seq,),
    ).fetchall()
    for event_id, _seq, summary in events:
        chunks = conn.execute(
            "SELECT chunk_index, text FROM chunks WHERE event_id = ? ORDER BY chunk_index",
            (event_id,),
        ).fetchall()
        _insert_rows(conn, event_id, [(SUMMARY_PART, summary or ""), *chunks])
    last = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM nodes").fetchone()[0]
    rows = conn.execute("SELECT COUNT(*) FROM lexical_rows").fetchone()[0]
    conn.execute(
        "INSERT INTO lexical_state (key, version, seq, rows) VALUES ('index', ?, ?, ?) "
        "ON CONFLICT (key) DO UPDATE SET version = excluded.version, seq = excluded.seq, "
        "rows = excluded.rows",
        (lexical.LEXICAL_VERSION, int(last), rows),
    )
    return len(events)


def state(conn: sqlite3.Connection) -> tuple[str, int] | None:
    """(token version, indexed seq), or None when the index was never built."""
    row = conn.execute("SELECT version, seq FROM lexical_state WHERE key = 'index'").fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def needs(conn: sqlite3.Connection) -> str | None:
    """What open() must do: "rebuild", "catch_up" or None (cheap: two indexed lookups)."""
    found = state(conn)
    has_events = conn.execute("SELECT 1 FROM nodes WHERE label = 'Event' LIMIT 1").fetchone()
    if found is None:
        return "rebuild" if has_events else None
    if found[0] != lexical.LEXICAL_VERSION:
        return "rebuild"
    last = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM nodes").fetchone()[0]
    return "catch_up" if int(last) > found[1] else None


_FETCH = """
SELECT r.event_id, r.part, -m.rank, c.start_pos, c.end_pos
FROM (SELECT rowid, rank FROM lexical WHERE lexical MATCH ?1 ORDER BY rank LIMIT ?2) AS m
JOIN lexical_rows r ON r.rowid = m.rowid
LEFT JOIN chunks c ON c.event_id = r.event_id AND c.chunk_index = r.part
ORDER BY m.rank, r.event_id, r.part
"""
_FETCH_RESTRICTED = """
SELECT r.event_id, r.part, -bm25(lexical), c.start_pos, c.end_pos
FROM lexical_rows r
JOIN lexical ON lexical.rowid = r.rowid
LEFT JOIN chunks c ON c.event_id = r.event_id AND c.chunk_index = r.part
WHERE r.event_id IN (SELECT value FROM json_each(?2)) AND lexical MATCH ?1
"""


def hits(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    view: EventView,
    mask: Mask,
    limit: int,
    restrict: frozenset[str] | None,
) -> list[Hit]:
    """Top ``limit`` events by their best BM25 row among the ``mask``ed events of ``view``,
    ordered by score DESC then id; a hit on a chunk carries its range."""
    if not terms or limit <= 0 or not mask.any():
        return []
    kept = select_terms(conn, terms, MATCH_BUDGET)
    if not kept:
        return []
    match = lexical.fts5_match(kept)
    if restrict is not None:
        rows = conn.execute(_FETCH_RESTRICTED, (match, json.dumps(sorted(restrict)))).fetchall()
        return _best(rows, view, mask, limit)
    fetch = limit * _FETCH_PER_EVENT
    while True:
        rows = conn.execute(_FETCH, (match, fetch)).fetchall()
        found = _best(rows, view, mask, limit)
        if len(found) >= limit or len(rows) < fetch:
            return found
        fetch *= 4


def select_terms(conn: sqlite3.Connection, terms: Sequence[str], budget: int) -> list[str]:
    """The query terms present in the index, all of them while the rows they match add up to
    at most ``budget``; past that the terms of more than half the rows are dropped and the
    rest kept rarest first within the budget (the rarest always, unless over 2x budget)."""
    df: dict[str, int] = {}
    for term in terms:
        row = conn.execute("SELECT rows FROM lexical_df WHERE term = ?", (term,)).fetchone()
        if row is not None and int(row[0]) > 0:
            df[term] = int(row[0])
    if sum(df.values()) <= budget:
        return [t for t in terms if t in df]
    total = conn.execute("SELECT rows FROM lexical_state WHERE key = 'index'").fetchone()
    n = int(total[0]) if total else 0
    df = {t: d for t, d in df.items() if 2 * d <= n}
    kept: list[str] = []
    used = 0
    for term in sorted(df, key=lambda t: (df[t], t)):
        if used + df[term] > budget and (kept or df[term] > 2 * budget):
            break
        kept.append(term)
        used += df[term]
    return kept


def _best(
    rows: Iterable[tuple[str, int, float, int | None, int | None]],
    view: EventView,
    mask: Mask,
    limit: int,
) -> list[Hit]:
    best: dict[str, Hit] = {}
    for event_id, part, score, start, end in rows:
        row = view.row_of.get(event_id)
        if row is None or row >= view.n or not mask[row]:
            continue
        old = best.get(event_id)
        if old is not None and _preference(old.score, _part(old)) >= _preference(score, part):
            continue
        if part >= 0 and start is not None and end is not None:
            best[event_id] = Hit(event_id, float(score), int(part), int(start), int(end))
        else:
            best[event_id] = Hit(event_id, float(score))
    ranked = sorted(best.values(), key=lambda h: (-h.score, h.event_id))
    return ranked[:limit]


def _part(h: Hit) -> int:
    return SUMMARY_PART if h.chunk_index is None else h.chunk_index


def _preference(score: float, part: int) -> tuple[float, bool, int]:
    """Higher wins: the better score; on a tie a chunk (it gives the quote a region) over the
    summary, then the earlier chunk."""
    return score, part >= 0, -part


def index_saved(
    conn: sqlite3.Connection, drafts: Iterable[EventDraft], refs: dict[str, str]
) -> None:
    """Index the events one save plan just inserted (``refs``: draft ref -> allocated id)."""
    for ev in drafts:
        event_id = refs[ev.ref]
        seq = conn.execute("SELECT seq FROM nodes WHERE id = ?", (event_id,)).fetchone()[0]
        parts = [(c.chunk_index, c.text) for c in ev.chunks]
        index_event(conn, event_id, int(seq), ev.summary, parts)


def ensure(conn: sqlite3.Connection) -> int:
    """Create the tables if missing, then rebuild or catch up as ``needs`` says (one
    transaction); returns how many events were indexed."""
    create(conn)
    todo = needs(conn)
    if todo is None:
        return 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = state(conn)
        done = rebuild(conn) if todo == "rebuild" or found is None else catch_up(conn, found[1])
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return done
