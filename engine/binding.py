"""Which topic a save is bound to (SPEC §2.3): the client's, the extraction's, or an offline one.

In order, the first that yields a non-blank path (after ``fix_topic_path``) wins:

1. **client** -- ``SaveInput.topic_path``. Its profile is the client's ``activation_profile``
   with defaults and clamps only (Partner's ``recordMemory`` with a given profile).
2. **model** -- ``Extraction.topic``, from the chat model (or inside a client-sent extraction).
   Related paths are fixed too, and the profile is stabilised as Partner's
   ``MemoryRecallProfileExtractor`` does: no related paths caps diffusion at 0.45, a memory of
   at most one message loses 0.05 activation.
3. **offline** -- a rule standing in for the model: the deepest *known* topic path whose last
   segment occurs in the content (matched like an offline recall cue) and is an entity of this
   save or occurs twice; otherwise a new path ``<first location>-><first concept>`` of the
   extraction (either one alone when the other is missing). A content of one distinct word
   (a run of "y") gets no offline topic. Default profile, stabilised.
4. Nothing: no binding, the save is only in the date index (Partner's fallback on failure).

The client's ``related_topics`` are added to whichever path wins, and a client profile replaces
the chosen one. "Messages" are the content's speaker lines (``Name: ...``), at least one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

from mnemoql.engine.drafts import TopicDraft
from mnemoql.engine.topics import (
    ActivationProfile,
    fix_topic_path,
    normalise_related,
    offline_cues,
    stabilise_profile,
)
from mnemoql.prompts.extraction import Extraction, ProfileItem

TopicSource = Literal["client", "model", "offline"]

# The offline rule reads this much of the content (as the offline extractor does).
MATCH_SCOPE = 12_000
SEGMENT_MAX = 40
_SPEAKER = re.compile(r"^[ \t]*[^\s:：][^:：\n]{0,40}[:：][ \t]*\S", re.MULTILINE)
# Latin words and single Chinese characters: a content of one distinct word has no topic.
_WORD = re.compile(r"[^\W\d_\u4e00-\u9fff]+|[\u4e00-\u9fff]")


@dataclass(frozen=True, slots=True)
class TopicChoice:
    draft: TopicDraft
    source: TopicSource


def message_count(content: str) -> int:
    """Speaker lines (``Alice: ...``, ``用户：...``) in ``content``; 1 when there are none."""
    return max(1, len(_SPEAKER.findall(content)))


def as_profile(item: ProfileItem | None) -> ActivationProfile:
    if item is None:
        return ActivationProfile()
    return ActivationProfile.of(
        item.activation_weight, item.diffusion_weight, item.context_independence_weight
    )


def choose_topic(
    content: str,
    extraction: Extraction,
    known_paths: Sequence[str],
    today: date,
    *,
    topic_path: str | None = None,
    related_topics: Sequence[str] = (),
    profile: ProfileItem | None = None,
) -> TopicChoice | None:
    """The binding of one save, or None for a date-only record (see the module docstring)."""
    extra = [fix_topic_path(p) for p in related_topics]
    messages = message_count(content)
    chosen: tuple[str, list[str], ActivationProfile | None, TopicSource] | None = None
    if path := fix_topic_path(topic_path):
        chosen = (path, [], as_profile(profile), "client")
    elif extraction.topic is not None and (path := fix_topic_path(extraction.topic.topic_path)):
        t = extraction.topic
        model_profile = t.activation_profile or ProfileItem()
        related = [fix_topic_path(p) for p in t.related_topic_paths]
        chosen = (path, related, as_profile(model_profile), "model")
    elif path := offline_topic(content, extraction, known_paths, today):
        chosen = (path, [], None, "offline")
    if chosen is None:
        return None
    path, related, base, source = chosen
    related = normalise_related([*related, *extra])
    if profile is not None:
        final = as_profile(profile)
    elif source == "client":
        final = base or ActivationProfile()
    else:
        final = stabilise_profile(base, has_related=bool(related), message_count=messages)
    draft = TopicDraft(
        path,
        related,
        final.activation_weight,
        final.diffusion_weight,
        final.context_independence_weight,
    )
    return TopicChoice(draft, source)


def offline_topic(
    content: str, extraction: Extraction, known_paths: Sequence[str], today: date
) -> str:
    """The offline rule: a known path the content names (as an entity of this save, or twice),
    else location->concept, else "". A content of one distinct word gets none."""
    text = content[:MATCH_SCOPE]
    folded = text.casefold()
    if len(set(_WORD.findall(folded))) < 2:
        return ""  # one word, however often repeated ("yyyy..."), is no topic
    named = {_fold(e.name) for e in extraction.concepts + extraction.locations}
    # a cheap prefilter, so the exact matcher compiles patterns only for paths that can match;
    # a known segment counts when this save names it as an entity or mentions it twice (one
    # passing "Python" in a changelog entry about asyncio is not its topic)
    known = [
        p
        for p in known_paths
        if (seg := _fold(_last_segment(p))) in folded and (seg in named or folded.count(seg) >= 2)
    ]
    if known:
        cues = offline_cues([text], known, today)
        topics = [c.text for c in cues if c.type == "topic"]
        if topics:
            return topics[0]  # deepest first
    location = _first_name(extraction, "locations")
    concept = _first_name(extraction, "concepts")
    return fix_topic_path("->".join(p for p in (location, concept) if _is_word(p)))


def _fold(name: str) -> str:
    return " ".join(name.casefold().split())


def _is_word(segment: str) -> bool:
    """Not blank and not a run of one character ("yyyyyyyy")."""
    letters = {c for c in segment.casefold() if c.isalnum()}
    return len(letters) > 1


def _last_segment(path: str) -> str:
    return path.rsplit("->", 1)[-1].strip()


def _first_name(extraction: Extraction, kind: Literal["locations", "concepts"]) -> str:
    """The first entity of ``kind`` an event refers to (else the first listed), as a segment."""
    items = extraction.locations if kind == "locations" else extraction.concepts
    by_ref = {item.ref: item.name for item in items}
    refs = [r for ev in extraction.events for r in getattr(ev, kind)]
    name = next((by_ref[r] for r in refs if r in by_ref), items[0].name if items else "")
    # "->" inside a name would split it into two levels
    return " ".join(name.replace("->", "-").split())[:SEGMENT_MAX]
