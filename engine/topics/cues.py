"""Recall cues: the post-fix of model-extracted cues, and an offline cue matcher (SPEC §2.8).

A cue is ``topic`` (an ``A->B->C`` path) or ``date`` (``yyyy-MM-dd`` text). :func:`fix_cues` is
Partner's ``MemoryRecallCueExtractor.fix``; :func:`offline_cues` stands in for the model when
none is configured, using only the known topic paths and explicit date expressions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Literal

from mnemoql.engine.topics.tree import fix_topic_path, is_blank, split_path
from mnemoql.engine.topics.when import find_days

CueType = Literal["topic", "date"]


@dataclass(frozen=True, slots=True)
class Cue:
    type: CueType
    text: str


def _field(match: object, name: str) -> object:
    if isinstance(match, Mapping):
        return match.get(name)
    return getattr(match, name, None)


def fix_cues(raw_matches: Iterable[object] | None) -> list[Cue]:
    """Keep usable model matches: topics fixed (dropped if blank), dates passed through as-is.

    Each match is a mapping or an object with ``type`` and ``text``. ``None`` entries, blank
    texts and any type other than exactly ``"topic"`` or ``"date"`` are dropped. Dates are not
    validated here, as in Partner; a bad one fails later, at lookup.
    """
    cues: list[Cue] = []
    for match in raw_matches or ():
        if match is None:
            continue
        kind, text = _field(match, "type"), _field(match, "text")
        if not isinstance(text, str) or is_blank(text):
            continue
        if kind == "topic":
            fixed = fix_topic_path(text)
            if is_blank(fixed) or not split_path(fixed) or split_path(fixed)[0] == "":
                continue
            cues.append(Cue("topic", fixed))
        elif kind == "date":
            cues.append(Cue("date", text))
    return cues


# ---- the offline matcher ----

_ASCII_WORD = re.compile(r"[A-Za-z0-9]")


def _segment_pattern(segment: str) -> re.Pattern[str]:
    """A case-insensitive pattern; a latin word must stand alone (``AI`` is not in ``said``)
    but may take a plural ending (``meeting`` finds ``meetings``); whitespace inside a
    segment matches any run of whitespace."""
    head = r"(?<![A-Za-z0-9])" if _ASCII_WORD.match(segment[0]) else ""
    tail = r"(?:e?s)?(?![A-Za-z0-9])" if _ASCII_WORD.match(segment[-1]) else ""
    body = r"\s+".join(re.escape(word) for word in segment.split())
    return re.compile(head + body + tail, re.IGNORECASE)


def _topic_cues(text: str, known_paths: Iterable[str]) -> list[Cue]:
    hits: dict[str, tuple[int, str]] = {}  # path -> (depth, casefolded last segment)
    for path in known_paths:
        parts = split_path(path)
        last = parts[-1].strip() if parts else ""
        if last and path not in hits and _segment_pattern(last).search(text):
            hits[path] = (len(parts), last.casefold())
    # Prefer the most specific: drop ancestors of other hits, then keep the deepest path for
    # each matched segment (first known path on ties).
    specific = [p for p in hits if not any(o.startswith(p + "->") for o in hits)]
    best: dict[str, str] = {}
    for path in specific:
        depth, segment = hits[path]
        if segment not in best or depth > hits[best[segment]][0]:
            best[segment] = path
    chosen = sorted(best.values(), key=lambda p: -hits[p][0])
    return [Cue("topic", path) for path in chosen]


def _date_cues(text: str, today: date) -> list[Cue]:
    found = sorted(find_days(text, today), key=lambda f: f[0])
    return [Cue("date", day) for day in dict.fromkeys(day.isoformat() for _, day in found)]


def offline_cues(lines: list[str], known_paths: list[str], today: date) -> list[Cue]:
    """Cues found without a model: known topic segments and explicit dates in ``lines``.

    Topics: a known path matches when its last segment occurs in the text (case-insensitive;
    a latin segment as whole words); the most specific paths win. Dates: the day expressions of
    :mod:`engine.topics.when` (absolute, relative, weekdays) resolved against ``today``. Topics
    come first (deepest first), then dates in order of appearance; duplicates are dropped.
    """
    text = "\n".join(lines)
    return _topic_cues(text, known_paths) + _date_cues(text, today)
