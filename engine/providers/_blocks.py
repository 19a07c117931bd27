"""The offline extractor's blocks: a text split into events (paragraphs, or utterances when
lines start with ``Name:`` speaker prefixes; runs of short lines grouped; at most
``MAX_EVENTS``), each block's summary (its leading sentence) and its plain text without
speaker prefixes and markup, which the extractor reads for entities (``offline``). Also
jieba's part-of-speech tagging, which speaker detection and that reading share.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mnemoql.engine.providers._namewords import (
    HEADING_WORDS,
    NAME_WORD,
    ROLE_WORDS,
    name_key,
    ordinary,
)

MAX_EVENTS = 8
SUMMARY_MAX = 200
# A text this short is one event whatever its layout.
SHORT_TEXT = 280

_SPEAKER = re.compile(
    r"^[ \t]*(?P<name>[A-Za-z][A-Za-z.'’ -]{0,40}?|[\u4e00-\u9fff·]{1,8})[ \t]*[:：][ \t]*(?=\S)"
)
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;…])|(?<=[.])(?=\s)|\n")
CJK = re.compile(r"[\u4e00-\u9fff]")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+>]\s+|\d+[.)]\s+)")
# Sphinx / reST roles (":c:func:`x`", ":mod:`x`"), inline-code backticks and URLs: markup,
# not words.
_ROLE = re.compile(r"(?<![\w:]):(?:[a-z]+:){1,2}(?=`)|`+|\b(?:https?|ftp)://\S+")

_jieba_lock = threading.Lock()
_posseg: Any = None


def pos_cut(text: str) -> list[tuple[str, str]]:
    """jieba part-of-speech tags, loading the dictionary on first use with its logging muted."""
    global _posseg
    with _jieba_lock:
        if _posseg is None:
            import jieba
            import jieba.posseg

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _posseg = jieba.posseg
        return [(pair.word, pair.flag) for pair in _posseg.cut(text)]


@dataclass(slots=True)
class Block:
    """One event's text and speaker, and what the extractor finds in it."""
    text: str
    speaker: str | None = None
    persons: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)
    salience: dict[str, float] = field(default_factory=dict)  # concept key -> weight
    time: str | None = None


def _speaker_of(line: str, zh_prefix_counts: Counter[str]) -> str | None:
    m = _SPEAKER.match(line)
    if not m:
        return None
    name = m.group("name").strip()
    if CJK.match(name):
        if name_key(name) in ROLE_WORDS or zh_prefix_counts[name] >= 2:
            return name
        tags = pos_cut(name)
        return name if len(tags) == 1 and tags[0][1] == "nr" else None
    words = name.split()
    if name_key(name) in ROLE_WORDS:
        return name
    if not 1 <= len(words) <= 3 or any(not NAME_WORD.match(w) for w in words):
        return None
    if name_key(words[0]) in HEADING_WORDS or any(ordinary(w) for w in words):
        return None  # "Now Playing: ...", "Comment: ..." label a line, no one speaks it
    return name


def split_blocks(content: str) -> list[Block]:
    """Paragraphs, or utterances when lines start with speaker prefixes; at most MAX_EVENTS."""
    text = content.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return []
    lines = text.split("\n")
    zh_counts: Counter[str] = Counter(
        m.group("name") for line in lines if (m := _SPEAKER.match(line)) and CJK.match(m.group(1))
    )
    speakers = [_speaker_of(line, zh_counts) for line in lines]
    blocks: list[Block] = []
    current: list[str] = []
    current_speaker: str | None = None

    def flush() -> None:
        body = "\n".join(current).strip()
        if body:
            blocks.append(Block(body, current_speaker))
        current.clear()

    for line, speaker in zip(lines, speakers, strict=True):
        if speaker is not None or not line.strip():
            flush()
            current_speaker = speaker
        if line.strip():
            current.append(line)
    flush()
    if len(blocks) == 1 and len(text) > 3 * SHORT_TEXT and "\n" in text:
        blocks = _line_blocks(lines)
    if len(text) <= SHORT_TEXT and not any(speakers):
        blocks = [Block(text)]
    return _merge(blocks, MAX_EVENTS)


def _line_blocks(lines: list[str]) -> list[Block]:
    """One long paragraph of short lines: group consecutive lines into ~SHORT_TEXT blocks."""
    blocks: list[Block] = []
    current: list[str] = []
    size = 0
    for line in lines:
        if not line.strip():
            continue
        current.append(line)
        size += len(line)
        if size >= SHORT_TEXT:
            blocks.append(Block("\n".join(current).strip()))
            current, size = [], 0
    if current:
        blocks.append(Block("\n".join(current).strip()))
    return blocks


def _merge(blocks: list[Block], limit: int) -> list[Block]:
    if len(blocks) <= limit:
        return blocks
    merged: list[Block] = []
    n = len(blocks)
    for g in range(limit):
        part = blocks[g * n // limit : (g + 1) * n // limit]
        merged.append(Block("\n".join(b.text for b in part), part[0].speaker))
    return merged


def summarise(block: str) -> str:
    """The leading sentence (extended while very short), trimmed to SUMMARY_MAX; never empty."""
    lines = [_MARKUP.sub("", ln) for ln in block.split("\n") if not _FENCE.match(ln)]
    flat = "\n".join(ln for ln in lines if ln.strip()).strip() or block.strip()
    sentences = [s.strip() for s in _SENTENCE_END.split(flat) if s and s.strip()]
    summary = ""
    for sentence in sentences:
        summary = f"{summary} {sentence}".strip() if summary else sentence
        if len(summary) >= 12:
            break
    summary = " ".join(summary.split()) or " ".join(flat.split()) or flat
    if len(summary) > SUMMARY_MAX:
        summary = summary[: SUMMARY_MAX - 1].rstrip() + "…"
    return summary


def plain(text: str) -> str:
    """The block without speaker prefixes, markdown heading/bullet marks and code fences."""
    lines = []
    for line in text.split("\n"):
        if _FENCE.match(line):
            continue
        m = _SPEAKER.match(line)
        if m and (name_key(m.group("name")) in ROLE_WORDS or NAME_WORD.match(m.group("name"))):
            line = line[m.end() :]
        lines.append(_ROLE.sub("", _MARKUP.sub("", line)))
    return "\n".join(lines)
