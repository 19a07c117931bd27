"""The embedded store's side of following another process's topic and date changes
(``engine.topics.changes``; issue 30).

The schema keeps a change clock and a removal log by triggers (``_schema.RECALL_DDL``); this
module reads a mark and what changed since one, in one read snapshot, from indexed lookups
only: bindings by ``stamp``, removals by ``stamp``, topics and events by ``seq``. The log is
bounded (``_schema.RECALL_BOUND_DDL``): a mark older than its oldest kept entry gets None, and
the caller reloads in full.
"""

from __future__ import annotations

import sqlite3

from mnemoql.engine.store.embedded._schema import BINDING_COLS, TOPIC_COLS, row_binding, row_topic
from mnemoql.engine.store.embedded._txn import read_snapshot
from mnemoql.engine.topics.changes import Removed, TopicChanges, TopicMark


def topic_mark(conn: sqlite3.Connection) -> TopicMark:
    """The clock, the highest node seq and the highest topic seq (three index lookups)."""
    row = conn.execute(
        "SELECT (SELECT stamp FROM recall_clock WHERE id = 1), "
        "(SELECT COALESCE(MAX(seq), 0) FROM nodes), (SELECT COALESCE(MAX(seq), 0) FROM topics)"
    ).fetchone()
    return TopicMark(int(row[0] or 0), int(row[1]), int(row[2]))


def pruned_stamp(conn: sqlite3.Connection) -> int:
    """The newest removal stamp the bounded log has dropped (0: it holds every removal)."""
    row = conn.execute("SELECT pruned FROM recall_clock WHERE id = 1").fetchone()
    return int(row[0] or 0) if row is not None else 0


def topic_changes(conn: sqlite3.Connection, since: TopicMark | None) -> TopicChanges | None:
    """What changed since ``since`` (just the current mark when ``since`` is None); None when
    the file went back behind the mark (another file put in its place) or the removal log no
    longer reaches back to it (pruned past the mark): reload."""
    with read_snapshot(conn):
        mark = topic_mark(conn)
        if since is None:
            return TopicChanges(mark)
        if mark.clock < since.clock or mark.topic_seq < since.topic_seq:
            return None
        if since.clock < pruned_stamp(conn):
            return None
        removed: list[Removed] = []
        lowest = since.seq
        for event_id, path, day, seq in conn.execute(
            "SELECT event_id, path, day, seq FROM recall_removed WHERE stamp > ? "
            "ORDER BY stamp, rowid",
            (since.clock,),
        ):
            removed.append(Removed(event_id, path, day))
            if seq is not None:
                # the newest node forgotten, the next one is given its seq again: read events
                # from there, not only above the mark
                lowest = min(lowest, int(seq) - 1)
        topics = [
            row_topic(r)
            for r in conn.execute(
                f"SELECT {TOPIC_COLS} FROM topics WHERE seq > ? ORDER BY seq", (since.topic_seq,)
            )
        ]
        bindings = [
            row_binding(r)
            for r in conn.execute(
                f"SELECT {BINDING_COLS} FROM topic_bindings b WHERE b.stamp > ? ORDER BY b.stamp",
                (since.clock,),
            )
        ]
        dated: list[tuple[str, str]] = conn.execute(
            "SELECT id, COALESCE(create_date, '') FROM nodes WHERE label = 'Event' AND seq > ? "
            "ORDER BY seq",
            (lowest,),
        ).fetchall()
    return TopicChanges(mark, removed, topics, bindings, dated)
