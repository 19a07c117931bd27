"""Activation (SPEC §2.8): recent conversation lines in, the memories they call up out.

1. **Cues** (``engine.activation_cues``): the topic paths, days and entity names the lines
   point at, read by the chat model when there is one (any failure means no cues), else offline.
2. **Candidates**, cue by cue (at most ``CUE_POOL`` each): a topic gives Partner's topic recall
   (PRIMARY / PARENT / RELATED, scored), a date the day's memories, an entity its most recent
   events. A cue that finds nothing is in ``missing``.
3. **Ranking** (``engine.topics.ranking``): the lines are embedded once; the plain vector
   search of the lines and the cue-activated memories are ranked together by similarity to the
   lines plus what the cues add (each cue by how much it narrows the memory, term coverage,
   Partner's recency tiers). Without cues that is the search itself; a memory specific cues
   point at rises. Memories found by the vector search alone come back as ``VECTOR``.
4. **Evaluator** (optional, needs the chat model): one parallel ``{"passed": bool}`` call per
   ranked memory (``prompts/evaluator.py``); a failed call drops the memory, as in Partner.
5. Each memory comes with its chunks' exact ``[start, end)`` ranges and an exact quote of at
   most 120 code points where its cue's terms (else the lines' terms) are densest.

Where we differ from Partner, on purpose: a model date that does not parse is skipped (Partner
aborts the whole batch); memories are ranked and cut to ``limit`` (Partner: every candidate,
unranked); evaluated memories keep ranking order (Partner: completion order).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from mnemoql.engine import evaluator
from mnemoql.engine.activation_cues import ActivationCue, model_cues, offline_cues
from mnemoql.engine.errors import InvalidInput, out_of_range
from mnemoql.engine.evaluator import EVALUATE_CONCURRENCY
from mnemoql.engine.meta import vectors_are_ours
from mnemoql.engine.models import (
    TOPIC_SEPARATOR,
    Event,
    Filters,
    RouteName,
    Vector,
    epoch_ms,
)
from mnemoql.engine.providers.base import ChatModel, Embedder
from mnemoql.engine.recall import Recall, RecalledMemory
from mnemoql.engine.retrieval.evidence import Quote
from mnemoql.engine.retrieval.quotes import QUOTE_CAP, quote_window
from mnemoql.engine.retrieval.terms import QUOTE_SCOPE, coverage, query_terms
from mnemoql.engine.topics import LookupMiss, TopicRecall, parse_date
from mnemoql.engine.topics.block import ActivatedSlice, content_messages
from mnemoql.engine.topics.ranking import (
    COVERAGE_WEIGHT,
    CUE_BOOST,
    RECENCY_WEIGHT,
    CueEvidence,
    Ranked,
    cue_specificity,
    rank,
)
from mnemoql.engine.topics.scoring import RECENCY_TABLE

__all__ = ["ActivatedMemory", "Activation", "Activator"]

log = logging.getLogger(__name__)

MAX_LINES = 200
MAX_CHARS = 20_000
ACTIVATE_LIMIT = 20  # the most memories one activation returns
DEFAULT_LIMIT = 5
CUE_POOL = 500  # memories one cue calls up at most (a busy day is cut here, in save order)
VECTOR_POOL = 20  # hits of the plain vector search

MAX_EXTRA = COVERAGE_WEIGHT + RECENCY_WEIGHT * RECENCY_TABLE[0][1]
_ROUTES: tuple[RouteName, ...] = ("summary", "chunk")


@dataclass(frozen=True, slots=True)
class ActivatedMemory:
    """One memory and why it ranks where it does (``cues``: indexes into ``Activation.cues``)."""

    memory: RecalledMemory
    quote: Quote | None
    ranges: tuple[tuple[int, int, int], ...]  # (chunk index, start, end) of the source text
    relevance: float = 0.0  # similarity plus what the cues add (engine.topics.ranking)
    similarity: float | None = None  # raw cosine to the lines
    coverage: float = 0.0
    recency: float = 0.0
    vector_rank: int | None = None
    cue_rank: int | None = None
    cues: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Activation:
    cues: list[ActivationCue]
    memories: list[ActivatedMemory]
    missing: list[LookupMiss] = field(default_factory=list)
    # the activated_memory_slices block's slices: the memories in order (unit = the space)
    slices: list[ActivatedSlice] = field(default_factory=list)


@dataclass(slots=True)
class _Pending:
    source: str
    score: float | None
    timestamp_ms: int | None
    topic_path: str | None
    terms: frozenset[str]
    cues: list[int]


class Activator:
    """Runs activations for one memory space.

    Args:
        recall: the space's topic and date index.
        chat: the cue and evaluator model; None for offline cues (and no evaluator).
        embedder: embeds the lines for ranking and the vector list; None ranks by the cue
            score without similarity (and has no vector list).
    """

    def __init__(
        self,
        recall: Recall,
        chat: ChatModel | None,
        embedder: Embedder | None = None,
        *,
        concurrency: int = EVALUATE_CONCURRENCY,
    ) -> None:
        self.recall = recall
        self.chat = chat
        self.embedder = embedder
        self.concurrency = max(1, concurrency)

    async def activate(
        self, lines: Sequence[str], evaluate: bool = False, limit: int = DEFAULT_LIMIT
    ) -> Activation:
        """The memories ``lines`` call up, best first; see the module docstring."""
        _check(lines)
        if not 1 <= limit <= ACTIVATE_LIMIT:
            raise out_of_range("limit", 1, ACTIVATE_LIMIT, limit)
        index = await self.recall.index()
        now = self.recall.now()
        text = "\n".join(lines)
        vector_task = asyncio.ensure_future(self._query_vector(text))
        try:
            if self.chat is not None:
                cues = await model_cues(self.chat, lines, now, index)
            else:
                cues = await offline_cues(self.recall.store, lines, now, index)
            pending, members, missing = await self._collect(cues, index)
            query = await vector_task
        finally:
            vector_task.cancel()
        total = index.dated_slices()
        line_terms = query_terms(text)
        ranked, evidence, events = await self._rank(line_terms, query, pending, members, total)
        if evaluate and self.chat is not None:
            ranked = ranked[: 2 * limit]  # enough to fill ``limit`` when some fail
            picked = [events[f.event_id] for f in ranked]
            keep = await evaluator.evaluate(self.chat, lines, picked, self.concurrency)
            ranked = [f for f, ok in zip(ranked, keep, strict=True) if ok]
        ranked = ranked[:limit]
        chunks = await self.recall.store.get_chunks([f.event_id for f in ranked])
        now_ms = self.recall.now_ms()
        out = []
        for f in ranked:
            event, ev, p = events[f.event_id], evidence[f.event_id], pending.get(f.event_id)
            memory = RecalledMemory(
                event,
                p.source if p else "VECTOR",
                p.score if p else None,
                p.timestamp_ms if p and p.timestamp_ms is not None else ev.timestamp_ms,
                p.topic_path if p and p.topic_path is not None else self.recall.topic_of(event.id),
            )
            out.append(
                ActivatedMemory(
                    memory,
                    _quote(event.content, p.terms if p and p.terms else line_terms),
                    tuple((c.chunk_index, c.start, c.end) for c in chunks.get(event.id, [])),
                    f.relevance,
                    ev.similarity,
                    ev.coverage,
                    ev.recency(now_ms),
                    f.vector_rank,
                    f.cue_rank,
                    tuple(ev.cues),
                )
            )
        unit = self.recall.store.space
        slices = [
            ActivatedSlice(
                unit,
                m.memory.event.id,
                m.memory.event.create_date,
                epoch_ms(m.memory.event.create_time),
                m.memory.event.summary,
                content_messages(m.memory.event.content),
            )
            for m in out
        ]
        return Activation(cues, out, missing, slices)

    # ---- ranking ----

    async def _query_vector(self, text: str) -> Vector | None:
        """The lines' query vector; None without an embedder or when the stored vectors are
        another model's (then similarity is unknown and there is no vector list)."""
        if self.embedder is None:
            return None
        meta = await self.recall.store.get_meta()
        if not vectors_are_ours(meta, self.embedder.model, self.embedder.dimensions):
            log.warning(
                "activate: stored vectors are not %s's; ranking without them", self.embedder.model
            )
            return None
        matrix = await self.embedder.embed([text], "query")
        vector: Vector = matrix[0]
        return vector

    async def _similarities(
        self, query: Vector, cued: frozenset[str]
    ) -> tuple[list[str], dict[str, float]]:
        """The vector list (the union of both routes' top ``VECTOR_POOL``) and the similarity
        of every memory in it or in ``cued``: the mean of its summary and best-chunk cosines
        (the one there is, for a memory without chunks), the vector list by it DESC."""
        store, none = self.recall.store, Filters()
        top = await asyncio.gather(
            *(store.route(r, query, none, frozenset(), VECTOR_POOL) for r in _ROUTES)
        )
        listed = {h.event_id for hits in top for h in hits}
        pool = cued | listed
        if not pool:
            return [], {}
        both = await asyncio.gather(
            *(store.route(r, query, none, frozenset(), len(pool), pool) for r in _ROUTES)
        )
        found: dict[str, list[float]] = {}
        for hits in both:
            for h in hits:
                found.setdefault(h.event_id, []).append(h.score)
        sims = {i: sum(v) / len(v) for i, v in found.items()}
        return sorted(listed & sims.keys(), key=lambda i: (-sims[i], i)), sims

    async def _rank(
        self,
        terms: frozenset[str],
        query: Vector | None,
        pending: dict[str, _Pending],
        members: list[list[str]],
        total: int,
    ) -> tuple[list[Ranked], dict[str, CueEvidence], dict[str, Event]]:
        store = self.recall.store
        vector: list[str] = []
        sims: dict[str, float] = {}
        if query is not None:
            vector, sims = await self._similarities(query, frozenset(pending))
        narrows = cue_specificity(members, total)
        # Read and score only the memories that can reach the top: coverage and recency add
        # at most MAX_EXTRA to the lower bound that similarity and specificity give.
        lower = {i: sims.get(i, 0.0) for i in vector}
        lower |= {i: sims.get(i, 0.0) + CUE_BOOST * narrows.get(i, 0.0) for i in pending}
        best = sorted(lower.values(), reverse=True)
        floor = best[ACTIVATE_LIMIT - 1] if len(best) >= ACTIVATE_LIMIT else float("-inf")
        hopeful = [i for i in pending if lower[i] + MAX_EXTRA >= floor]
        wanted = list(dict.fromkeys([*vector, *hopeful]))
        events = {e.id: e for e in await store.get_events(wanted)}
        evidence: dict[str, CueEvidence] = {}
        for event_id, event in events.items():
            p = pending.get(event_id)
            stamp = p.timestamp_ms if p and p.timestamp_ms is not None else None
            evidence[event_id] = CueEvidence(
                event_id,
                stamp if stamp is not None else epoch_ms(event.create_time),
                list(p.cues) if p else [],
                sims.get(event_id),
                coverage(terms, event.summary, event.content),
                narrows.get(event_id, 0.0),
            )
        ranked = rank(vector, list(evidence.values()), self.recall.now_ms())
        return ranked[:ACTIVATE_LIMIT], evidence, events

    # ---- candidates ----

    async def _collect(
        self, cues: Sequence[ActivationCue], index: TopicRecall
    ) -> tuple[dict[str, _Pending], list[list[str]], list[LookupMiss]]:
        """The memories every cue calls up: by event id (first cue wins the source), and the
        ids of each cue in cue order."""
        pending: dict[str, _Pending] = {}
        members: list[list[str]] = [[] for _ in cues]
        missing: list[LookupMiss] = []
        now_ms = self.recall.now_ms()

        def offer(event_id: str, at: int, make: _Pending) -> None:
            if len(members[at]) >= CUE_POOL or event_id in members[at]:
                return
            members[at].append(event_id)
            found = pending.get(event_id)
            if found is None:
                pending[event_id] = make
            elif at not in found.cues:
                found.cues.append(at)

        for at, cue in enumerate(cues):
            if cue.type == "topic":
                lookup = index.query_topic(cue.text, now_ms, limit=CUE_POOL)
                if lookup.missing is not None:
                    missing.append(lookup.missing)
                for c in lookup.candidates:
                    terms = _path_terms(cue.text) | _path_terms(c.topic_path)
                    offer(
                        c.ref.slice_id,
                        at,
                        _Pending(
                            c.source.value, c.score, c.timestamp_ms, c.topic_path, terms, [at]
                        ),
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
                    offer(ref.slice_id, at, _Pending("DATE", None, None, None, frozenset(), [at]))
            else:
                ids = await self.recall.store.recent_events(
                    Filters(groups=(cue.entity_ids,)), frozenset(), CUE_POOL
                )
                terms = query_terms(cue.text)
                for event_id in ids:
                    offer(event_id, at, _Pending("ENTITY", None, None, None, terms, [at]))
        return pending, members, missing


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


def _path_terms(path: str) -> frozenset[str]:
    return query_terms(" ".join(path.split(TOPIC_SEPARATOR)))


def _quote(content: str, terms: frozenset[str]) -> Quote | None:
    if not content:
        return None
    start, end = quote_window(content, (0, min(len(content), QUOTE_SCOPE)), terms, QUOTE_CAP)
    return Quote(content[start:end], start, end, len(content))
