"""The ``activated_memory_slices`` context block of Partner's ``MemorySelector`` (SPEC §2.8 step 4).

One block per activation, even an empty one, with three projections of the same slices:

- ``full``: ``<memory_slice unit_id slice_id>`` holding ``<slice_summary>`` and
  ``<source_messages>`` (up to 10 messages whole; more: first 2, an omitted note, 4 from the
  middle, a second note when some are left, last 2 -- ``slices.window_messages``);
- ``compact``: the same without the first 2 when there are more than 10;
- ``abstract``: ``<summary>`` only.

A mnemoql slice is one saved event (``SliceRef(unit=<space>, slice=<event id>)``); its messages
are the non-blank lines of the saved text, and a line ``Assistant: ...`` (or ``AI:``, ``助手：``)
is an assistant message, any other line a user message, its text kept whole. The XML is what
Java's DOM serialiser writes for Partner's block, minus the ``<?xml ...?>`` declaration:
attributes in name order, two-space indent, text escaped (``& < >``; ``"`` in attributes).
The block's own numbers are Partner's constructor arguments and initial score.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mnemoql.engine.topics.slices import Omitted, Projection, window_messages

BLOCK_NAME = "activated_memory_slices"
BLOCK_SOURCE = "memory_selector"
BLOCK_URGENCY = "normal"
VISIBLE_TO = ("MEMORY",)
REPLACE_FADE_FACTOR = 18.0
TIME_FADE_FACTOR = 8.0  # per minute
ACTIVATE_FACTOR = 16.0
INITIAL_ACTIVATION_SCORE = 100.0
COMPACT_BELOW = 70.0  # Partner renders compact under this activation score
ABSTRACT_BELOW = 30.0  # and abstract under this one

Role = Literal["user", "assistant"]

_SPEAKER = re.compile(r"^\s*([^:：\n]{1,40}?)\s*[:：]")
_ASSISTANTS = frozenset({"assistant", "ai", "bot", "助手", "助理", "ai助手", "智能助手"})


@dataclass(frozen=True, slots=True)
class SliceMessage:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class ActivatedSlice:
    """Partner's ``ActivatedMemorySlice``: where the slice is, when, its summary and messages."""

    unit_id: str
    slice_id: str
    date: str  # yyyy-MM-dd
    timestamp_ms: int
    summary: str
    messages: tuple[SliceMessage, ...]

    def window(self, projection: Projection = "full") -> list[SliceMessage | Omitted]:
        return window_messages(self.messages, projection)


def content_messages(content: str) -> tuple[SliceMessage, ...]:
    """The messages of a saved text: one per non-blank line, role from its speaker prefix.

    >>> [m.role for m in content_messages("Alice: hi\\n\\nAssistant: hello")]
    ['user', 'assistant']
    """
    out = []
    for line in content.splitlines():
        if not line.strip():
            continue
        speaker = _SPEAKER.match(line)
        is_assistant = speaker is not None and speaker[1].strip().casefold() in _ASSISTANTS
        out.append(SliceMessage("assistant" if is_assistant else "user", line))
    return tuple(out)


def projection_for(activation_score: float) -> Projection:
    """Which projection Partner's ``ContextBlock.render`` shows at this activation score."""
    if activation_score < ABSTRACT_BELOW:
        return "abstract"
    return "compact" if activation_score < COMPACT_BELOW else "full"


def _text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _attr(value: str) -> str:
    return _text(value).replace('"', "&quot;")


def _element(tag: str, text: str, pad: str) -> str:
    return f"{pad}<{tag}/>" if text == "" else f"{pad}<{tag}>{_text(text)}</{tag}>"


def _slice(s: ActivatedSlice, projection: Projection) -> list[str]:
    head = f'  <memory_slice slice_id="{_attr(s.slice_id)}" unit_id="{_attr(s.unit_id)}">'
    if projection == "abstract":
        return [head, _element("summary", s.summary, "    "), "  </memory_slice>"]
    body = [_element("slice_summary", s.summary, "    ")]
    entries = s.window(projection)
    if not entries:
        body.append("    <source_messages/>")
    else:
        body.append("    <source_messages>")
        for entry in entries:
            if isinstance(entry, Omitted):
                body.append(_element("omitted_messages", entry.text, "      "))
            else:
                text = _text(entry.content)
                body.append(
                    f'      <message role="{entry.role}"/>'
                    if text == ""
                    else f'      <message role="{entry.role}">{text}</message>'
                )
        body.append("    </source_messages>")
    return [head, *body, "  </memory_slice>"]


def render_block(slices: Sequence[ActivatedSlice], projection: Projection = "full") -> str:
    """The block's XML in one projection (no trailing newline)."""
    attrs = f'source="{BLOCK_SOURCE}" urgency="{BLOCK_URGENCY}"'
    if not slices:
        return f"<{BLOCK_NAME} {attrs}/>"
    lines = [f"<{BLOCK_NAME} {attrs}>"]
    for s in slices:
        lines.extend(_slice(s, projection))
    lines.append(f"</{BLOCK_NAME}>")
    return "\n".join(lines)
