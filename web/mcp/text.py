"""Compact text for the tools that have no GraphQL ``text`` field: save, forget, the topic tree,
recall and activation. Evidence and reads use the engine's renderings (``engine.retrieval.render``)
unchanged.

Like those, it prints what the model can act on (ids, write times, summaries, exact quotes,
where a memory came from) and never scores, vectors or configuration. Every call a text names is
a tool of this server (``tool_names``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemoql.engine.messages import LOCALES, Locale, message, template
from mnemoql.web.mcp.results import (
    Activated,
    Forgotten,
    Missing,
    Quote,
    Recall,
    Recalled,
    Saved,
    Topics,
)

_HEADER = re.compile(r"\[memory_database_search\] operation=(search|expand|nearby)\b")
# the ``next:`` line of the evidence text, in either language
_NEXT_LINE = re.compile(
    "^(?:" + "|".join(re.escape(template("render.next", x)) for x in LOCALES) + ").*$", re.MULTILINE
)
# an operation named as a word of its own: not inside an id (letters, digits and _.:-)
_OPERATION = re.compile(r"(?<![\w.:-])(search|read|expand|nearby)(?![\w.:-])")


def tool_names(body: str) -> str:
    """The engine's evidence text with this server's tool names.

    That text is also the GraphQL ``text`` field, which keeps the original's wording (SPEC
    §1.10): one tool, ``memory_database_search``, with operations. Here each operation is a
    tool of its own, so the header and the ``next:`` line name ``memory_search``,
    ``memory_expand``, ``memory_nearby`` and ``memory_read``, the tools a model can call.
    """
    body = _HEADER.sub(lambda m: f"[memory_{m[1]}] operation={m[1]}", body, count=1)
    return _NEXT_LINE.sub(lambda m: _OPERATION.sub(r"memory_\1", m[0]), body)


def _words(locale: Locale) -> dict[str, str]:
    """The catalogue's words of these texts: the evidence text's (``render.*``) and ours."""
    words = {key: template(f"render.{key}", locale) for key in ("written", "summary", "quote")}
    words["sep"] = template("render.item_sep", locale)
    for key in ("empty_tree", "none", "next", "deleted"):
        words[key] = template(f"mcp.{key}", locale)
    return words


def saved(s: Saved, locale: Locale) -> str:
    """The save's one line (``Saved.message``, already in ``locale``), then the topic it was
    filed under."""
    line = s.message
    if s.topic_path is not None:
        line += message("save.topic", locale, path=s.topic_path)
    return line


def forgotten(f: Forgotten, locale: Locale) -> str:
    return _words(locale)["deleted"] + ", ".join(f.deleted_ids)


def topics(t: Topics, locale: Locale) -> str:
    """Partner's tree text (``path [root]`` / ``path {slices: N}`` lines)."""
    return t.text.replace("\r\n", "\n") if t.text else _words(locale)["empty_tree"]


def _memory(rank: int, m: Recalled, w: dict[str, str], quote: Quote | None = None) -> list[str]:
    head = f"#{rank} {m.event_id} | {w['written']} {m.create_time} | {m.source}"
    if m.topic_path:
        head += f" {m.topic_path}"
    lines = [head, w["summary"] + m.summary]
    if quote is not None:
        lines.append(w["quote"].format(start=quote.start, end=quote.end, total=quote.total,
                                       text=quote.text))  # fmt: skip
    return lines


def _missing(missing: Sequence[Missing]) -> list[str]:
    return [m.message for m in missing]


def recall(r: Recall, key: str, locale: Locale) -> str:
    """A recollection: what was asked, then each memory and where it came from."""
    w = _words(locale)
    lines = [f"[memory_recall] {key} memories={len(r.memories)}"]
    lines += _missing([r.missing] if r.missing is not None else [])
    for n, m in enumerate(r.memories, 1):
        lines += _memory(n, m, w)
    lines.append(w["next"] if r.memories else w["none"])
    return "\n".join(lines)


def activated(a: Activated, locale: Locale) -> str:
    """The cues the lines gave, then each memory with its exact quote."""
    w = _words(locale)
    cues = w["sep"].join(f"{c.type} {c.text}" for c in a.cues) or "-"
    lines = [f"[memory_activate] cues: {cues} memories={len(a.memories)}"]
    lines += _missing(a.missing)
    for n, m in enumerate(a.memories, 1):
        lines += _memory(n, m, w, m.quote)
    if a.block is not None:
        lines.append(a.block)
    lines.append(w["next"] if a.memories else w["none"])
    return "\n".join(lines)
