"""Activation (SPEC §2.8): recent conversation lines in, the memories they call up out.

1. **Cues.** With a chat model, Partner's recall-cue prompt (``prompts/cues.py``) over the lines
   and the topic tree; the reply is validated and post-fixed with ``fix_cues``, and any failure
   means no cues. Without one, offline cues: known topic paths whose last segment occurs in the
   lines (most specific first), explicit dates (``2026-03-01``, ``2026年3月1日``, today /
   yesterday / 今天 / 昨天 / 前天), then entity names -- persons, concepts and locations found
   by name or alias in the lines.
2. **Candidates**, cue by cue, merged by event id, first occurrence wins: a topic gives
   Partner's scored topic recall (PRIMARY / PARENT / RELATED, at most 5); a date gives the
   day's memories in save order (DATE, unscored); an entity gives its ``ENTITY_EVENTS`` most
   recent events (ENTITY, unscored). A cue that finds nothing is reported in ``missing``.
3. **Evaluator** (optional, needs the chat model): one parallel ``{"passed": bool}`` call per
   memory (``prompts/evaluator.py``); a failed call drops the memory, as in Partner.
4. Each memory comes with its chunks' exact ``[start, end)`` ranges and an exact quote of at
   most 120 code points where its cue's terms are densest.

Where we differ from Partner, on purpose: a model date that does not parse is skipped (Partner
aborts the whole batch); evaluated memories keep candidate order (Partner: completion order);
at most ``ACTIVATE_LIMIT`` memories are collected (Partner: no cap), which bounds the
evaluator's calls.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import ValidationError

from engine.errors import InvalidInput, MnemoError, out_of_range
from engine.models import ENTITY_LABELS, TOPIC_SEPARATOR, Filters, epoch_ms
from engine.providers.base import ChatModel
from engine.recall import Recall, RecalledMemory
from engine.retrieval.evidence import Quote
from engine.retrieval.quotes import QUOTE_CAP, choose_window
from engine.retrieval.terms import QUOTE_SCOPE, query_terms
from engine.text import normalise_name
from engine.topics import LookupMiss, Omitted, TopicRecall, fix_cues, offline_cues, parse_date
from engine.topics import window_messages as window
from prompts import cues as cue_prompt
from prompts import evaluator as evaluator_prompt

log = logging.getLogger(__name__)

MAX_LINES = 200
MAX_CHARS = 20_000
ACTIVATE_LIMIT = 20
ENTITY_CUES = 8
ENTITY_EVENTS = 3
EVALUATE_CONCURRENCY = 4
NAME_CANDIDATES = 8_000
NAME_MAX_WORDS = 4
NAME_MAX_CJK = 8
MESSAGE_MAX = 400  # characters of one source message shown to the evaluator

CueKind = Literal["topic", "date", "entity"]

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
# letters and digits (with .+#&'’- inside) and no CJK: "berlin" in "我在berlin工作"
_LETTER = rf"[^\W_{_CJK}]"
_LATIN_RUN = re.compile(rf"{_LETTER}(?:(?:{_LETTER}|[.+#&'’-])*{_LETTER})?")
_EDGE = "\"'“”‘’()[]{}<>«»,.;:!?，。；：！？、…"


@dataclass(frozen=True, slots=True)
class ActivationCue:
    """A recall cue: a topic path, a ``yyyy-MM-dd`` day, or an entity name (with its ids)."""

    type: CueKind
    text: str
    entity_ids: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ActivatedMemory:
    memory: RecalledMemory
    quote: Quote | None
    ranges: tuple[tuple[int, int, int], ...]  # (chunk index, start, end) of the source text


@dataclass(frozen=True, slots=True)
class Activation:
    cues: list[ActivationCue]
    memories: list[ActivatedMemory]
    missing: list[LookupMiss] = field(default_factory=list)


@dataclass(slots=True)
class _Pending:
    source: str
    score: float | None
    timestamp_ms: int | None
    topic_path: str | None
    terms: frozenset[str]


class Activator:
    """Runs activations for one memory space.

    Args:
        recall: the space's topic and date index.
        chat: the cue and evaluator model; None for offline cues (and no evaluator).
    """

    def __init__(
        self, recall: Recall, chat: ChatModel | None, *, concurrency: int = EVALUATE_CONCURRENCY
    ) -> None:
        self.recall = recall
        self.chat = chat
        self.concurrency = max(1, concurrency)

    async def activate(self, lines: Sequence[str], evaluate: bool = False) -> Activation:
        """The memories ``lines`` call up, best first; see the module docstring."""
        _check(lines)
        index = await self.recall.index()
        now = self.recall.now()
        if self.chat is not None:
            cues = await self._model_cues(lines, now, index)
        else:
            cues = await self._offline_cues(lines, now, index)
        pending, missing = await self._collect(cues, lines, index)
        events = await self.recall.store.get_events(list(pending))
        memories = [
            RecalledMemory(
                e,
                p.source,
                p.score,
                p.timestamp_ms if p.timestamp_ms is not None else epoch_ms(e.create_time),
                p.topic_path if p.topic_path is not None else self.recall.topic_of(e.id),
            )
            for e in events[:ACTIVATE_LIMIT]
            if (p := pending[e.id])
        ]
        if evaluate and self.chat is not None and memories:
            memories = await self._evaluate(lines, memories)
        chunks = await self.recall.store.get_chunks([m.event.id for m in memories])
        out = [
            ActivatedMemory(
                m,
                _quote(m.event.content, pending[m.event.id].terms),
                tuple((c.chunk_index, c.start, c.end) for c in chunks.get(m.event.id, [])),
            )
            for m in memories
        ]
        return Activation(cues, out, missing)

    # ---- cues ----

    async def _model_cues(
        self, lines: Sequence[str], now: datetime, index: TopicRecall
    ) -> list[ActivationCue]:
        assert self.chat is not None
        message = cue_prompt.user_message(lines, now, index.topic_tree_text())
        try:
            raw = await self.chat.complete_json(cue_prompt.SYSTEM_PROMPT, message)
            reply = cue_prompt.CueReply.model_validate(raw)
        except (MnemoError, ValidationError) as exc:
            log.warning("recall cue extraction failed, no cues: %s", _why(exc))
            return []
        return [ActivationCue(c.type, c.text) for c in fix_cues(reply.matches)]

    async def _offline_cues(
        self, lines: Sequence[str], now: datetime, index: TopicRecall
    ) -> list[ActivationCue]:
        text = "\n".join(lines)
        folded = text.casefold()
        # cheap prefilter, so the exact matcher only compiles patterns that can match
        known = [p for p in index.topics.paths() if _last(p).casefold() in folded]
        found = offline_cues(list(lines), known, now.date())
        return [ActivationCue(c.type, c.text) for c in found] + await self._entity_cues(text)

    async def _entity_cues(self, text: str) -> list[ActivationCue]:
        candidates = name_candidates(text)
        if not candidates:
            return []
        keys = set(candidates)
        hits: dict[str, set[str]] = {}
        shown: dict[str, str] = {}  # normalised -> the name or alias as the entity spells it
        for label in ENTITY_LABELS:
            for ent in await self.recall.store.find_entities(label, keys):
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

    # ---- candidates ----

    async def _collect(
        self, cues: Sequence[ActivationCue], lines: Sequence[str], index: TopicRecall
    ) -> tuple[dict[str, _Pending], list[LookupMiss]]:
        pending: dict[str, _Pending] = {}
        missing: list[LookupMiss] = []
        now_ms = self.recall.now_ms()
        line_terms = query_terms("\n".join(lines))
        for cue in cues:
            if len(pending) >= ACTIVATE_LIMIT:
                break
            if cue.type == "topic":
                lookup = index.query_topic(cue.text, now_ms)
                if lookup.missing is not None:
                    missing.append(lookup.missing)
                for c in lookup.candidates:
                    terms = _path_terms(cue.text) | _path_terms(c.topic_path)
                    pending.setdefault(
                        c.ref.slice_id,
                        _Pending(c.source.value, c.score, c.timestamp_ms, c.topic_path, terms),
                    )
            elif cue.type == "date":
                try:
                    day = parse_date(cue.text)
                except InvalidInput:
                    missing.append(LookupMiss("DATE_INDEX", cue.text))
                    continue
                dated = index.query_date(day)
                if dated.missing is not None:
                    missing.append(dated.missing)
                for ref in dated.refs:
                    pending.setdefault(ref.slice_id, _Pending("DATE", None, None, None, line_terms))
            else:
                ids = await self.recall.store.recent_events(
                    Filters(groups=(cue.entity_ids,)), frozenset(), ENTITY_EVENTS
                )
                terms = query_terms(cue.text)
                for event_id in ids:
                    pending.setdefault(event_id, _Pending("ENTITY", None, None, None, terms))
        return pending, missing

    # ---- the evaluator ----

    async def _evaluate(
        self, lines: Sequence[str], memories: list[RecalledMemory]
    ) -> list[RecalledMemory]:
        gate = asyncio.Semaphore(self.concurrency)

        async def one(m: RecalledMemory) -> bool:
            async with gate:
                return await self._passes(lines, m)

        verdicts = await asyncio.gather(*(one(m) for m in memories))
        return [m for m, ok in zip(memories, verdicts, strict=True) if ok]

    async def _passes(self, lines: Sequence[str], memory: RecalledMemory) -> bool:
        assert self.chat is not None
        messages = [ln.strip() for ln in memory.event.content[:QUOTE_SCOPE].splitlines()]
        source = [
            m.text if isinstance(m, Omitted) else m[:MESSAGE_MAX]
            for m in window([m for m in messages if m])
        ]
        message = evaluator_prompt.user_message(lines, memory.event.summary, source)
        try:
            raw = await self.chat.complete_json(evaluator_prompt.SYSTEM_PROMPT, message)
            return evaluator_prompt.EvaluatorReply.model_validate(raw).passed
        except (MnemoError, ValidationError) as exc:
            log.warning("recall evaluator failed for %s, dropped: %s", memory.event.id, _why(exc))
            return False


def _check(lines: Sequence[str]) -> None:
    if len(lines) > MAX_LINES:
        raise out_of_range("input", 1, MAX_LINES, len(lines))
    if sum(len(x) for x in lines) > MAX_CHARS:
        raise InvalidInput(
            f"input has more than {MAX_CHARS} characters; send the most recent lines only",
            zh=f"input 超过 {MAX_CHARS} 字上限",
            argument="input",
        )
    if not any(x.strip() for x in lines):
        raise InvalidInput(
            "input must contain at least one non-blank line", zh="input 不能为空", argument="input"
        )


def _why(exc: Exception) -> str:
    return exc.code if isinstance(exc, MnemoError) else "invalid reply"


def _last(path: str) -> str:
    return path.rsplit(TOPIC_SEPARATOR, 1)[-1].strip()


def _path_terms(path: str) -> frozenset[str]:
    return query_terms(" ".join(path.split(TOPIC_SEPARATOR)))


def _quote(content: str, terms: frozenset[str]) -> Quote | None:
    if not content:
        return None
    start, end = choose_window(content, (0, min(len(content), QUOTE_SCOPE)), terms, QUOTE_CAP)
    return Quote(content[start:end], start, end, len(content))


def name_candidates(text: str) -> list[str]:
    """Normalised substrings of ``text`` that could be an entity's name or alias.

    Runs of 1-4 words (edge punctuation stripped), CJK substrings of 2-8 characters and latin
    runs inside mixed words; at least 2 characters each. Ordered by first appearance, longer
    first at one position, at most ``NAME_CANDIDATES``.
    """
    found: dict[str, tuple[int, int]] = {}

    def add(candidate: str, start: int) -> None:
        key = normalise_name(candidate)
        if len(key) >= 2 and key not in found:
            found[key] = (start, -len(key))

    words = []
    for m in re.finditer(r"\S+", text):
        word = m.group().strip(_EDGE)
        if word:
            words.append((m.start() + m.group().find(word), word))
    for i, (start, _) in enumerate(words):
        for n in range(1, NAME_MAX_WORDS + 1):
            if i + n <= len(words):
                add(" ".join(w for _, w in words[i : i + n]), start)
    for m in _CJK_RUN.finditer(text):
        run = m.group()
        for i in range(len(run)):
            for size in range(2, min(NAME_MAX_CJK, len(run) - i) + 1):
                add(run[i : i + size], m.start() + i)
    for m in _LATIN_RUN.finditer(text):
        add(m.group(), m.start())
    return sorted(found, key=found.__getitem__)[:NAME_CANDIDATES]
