"""Activation's cues (SPEC §2.8, step 1): what recent conversation lines point at.

With a chat model, Partner's recall-cue prompt (``prompts/cues.py``) over the lines and the topic
tree; the reply is validated and post-fixed with ``fix_cues``, and any failure means no cues.
Without one, offline cues: known topic paths whose last segment occurs in the lines (most
specific first), day expressions (``engine.topics.when``), then entity names -- persons,
concepts and locations found by name or alias in the lines. ``engine.activation`` turns the cues
into ranked memories.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import ValidationError

from mnemoql.engine import topics
from mnemoql.engine.errors import MnemoError
from mnemoql.engine.evaluator import why
from mnemoql.engine.models import ENTITY_LABELS, TOPIC_SEPARATOR
from mnemoql.engine.providers.base import ChatModel
from mnemoql.engine.store.base import Store
from mnemoql.engine.text import normalise_name
from mnemoql.engine.topics import TopicRecall, fix_cues
from mnemoql.engine.topics.names import name_candidates
from mnemoql.prompts import cues as cue_prompt

log = logging.getLogger(__name__)

ENTITY_CUES = 8
CueKind = Literal["topic", "date", "entity"]


@dataclass(frozen=True, slots=True)
class ActivationCue:
    """A recall cue: a topic path, a ``yyyy-MM-dd`` day, or an entity name (with its ids)."""

    type: CueKind
    text: str
    entity_ids: frozenset[str] = frozenset()


async def model_cues(
    chat: ChatModel, lines: Sequence[str], now: datetime, index: TopicRecall
) -> list[ActivationCue]:
    """The cues the chat model reads in the lines (none when its reply fails)."""
    message = cue_prompt.user_message(lines, now, index.topic_tree_text())
    try:
        raw = await chat.complete_json(cue_prompt.SYSTEM_PROMPT, message)
        reply = cue_prompt.CueReply.model_validate(raw)
    except (MnemoError, ValidationError) as exc:
        log.warning("recall cue extraction failed, no cues: %s", _why(exc))
        return []
    return [ActivationCue(c.type, c.text) for c in fix_cues(reply.matches)]


async def offline_cues(
    store: Store, lines: Sequence[str], now: datetime, index: TopicRecall
) -> list[ActivationCue]:
    """Known topic paths and day expressions in the lines, then the entities they name."""
    text = "\n".join(lines)
    folded = text.casefold()
    # cheap prefilter, so the exact matcher only compiles patterns that can match
    known = [p for p in index.topics.paths() if _first_word(p) in folded]
    found = topics.offline_cues(list(lines), known, now.date())
    return [ActivationCue(c.type, c.text) for c in found] + await entity_cues(store, text)


async def entity_cues(store: Store, text: str) -> list[ActivationCue]:
    candidates = name_candidates(text)
    if not candidates:
        return []
    keys = set(candidates)
    hits: dict[str, set[str]] = {}
    shown: dict[str, str] = {}  # normalised -> the name or alias as the entity spells it
    for label in ENTITY_LABELS:
        for ent in await store.find_entities(label, keys):
            for name in (ent.name, *ent.aliases):
                key = normalise_name(name)
                if key in keys:
                    hits.setdefault(key, set()).add(ent.id)
                    shown.setdefault(key, name.strip())
    cues: list[ActivationCue] = []
    seen: set[frozenset[str]] = set()
    for key in candidates:  # in order of appearance, longer first at one position
        ids = frozenset(hits.get(key, ()))
        if ids and ids not in seen:
            seen.add(ids)
            cues.append(ActivationCue("entity", shown[key], ids))
            if len(cues) == ENTITY_CUES:
                break
    return cues


def _why(exc: Exception) -> str:
    return why(exc)


def _first_word(path: str) -> str:
    last = path.rsplit(TOPIC_SEPARATOR, 1)[-1].strip().casefold()
    return last.split()[0] if last.split() else last
