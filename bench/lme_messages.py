"""LongMemEval in the users' shape: every utterance saved as its own memory, and the two fixed
halves of the 40 questions (tune / held-out).

A chat agent saves each message as it comes, through ``save`` with the offline extractor (no
client extraction). Here every turn of a question's whole haystack is one ``SaveInput``: content
``"User: ..."`` / ``"Assistant: ..."`` (the speaker line a transcript shows), id
``s{session}_ch{session}_e{turn}`` so ``nearby`` walks a session, ``time`` the session date.
``has_answer`` turns are the gold evidence. Empty turns (one in dev40) are not saved.

The halves are stratified by ``question_type``: within each type the ids are ordered by the
SHA-1 of the id and alternate tune / held-out (every type has an even count in dev40, so 20 /
20). They are written out below so nobody re-draws them: every weight, threshold and gate is
chosen on ``TUNE``; ``HELD_OUT`` is what the README and closing notes quote.

``save_texts`` is what one such save hands the embedder (``engine.save_plan.embed``): the
summary of the extraction folded to one event (a caller id names one event), every person,
concept and location name, then the 800/120 chunks of the content. ``warm`` fills the vector
cache with exactly those texts, question by question, tune half first.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mnemoql.engine.extraction_input import single_event
from mnemoql.engine.providers.offline import OfflineExtractor
from mnemoql.engine.text import chunk_ranges

ROLE = {"user": "User", "assistant": "Assistant"}

# question_id -> question_type, by half (the rule above; fixed here, never re-drawn)
TUNE: dict[str, str] = {
    "69fee5aa": "knowledge-update",
    "dfde3500": "knowledge-update",
    "9ea5eabc": "knowledge-update",
    "10e09553": "knowledge-update",
    "gpt4_31ff4165": "multi-session",
    "77eafa52": "multi-session",
    "d682f1a2": "multi-session",
    "92a0aa75": "multi-session",
    "0100672e": "multi-session",
    "488d3006": "single-session-assistant",
    "8aef76bc": "single-session-assistant",
    "d24813b1": "single-session-preference",
    "4fd1909e": "single-session-user",
    "ad7109d1": "single-session-user",
    "19b5f2b3": "single-session-user",
    "gpt4_8279ba02": "temporal-reasoning",
    "a3045048": "temporal-reasoning",
    "gpt4_e414231f": "temporal-reasoning",
    "gpt4_93159ced": "temporal-reasoning",
    "gpt4_d6585ce9": "temporal-reasoning",
}
HELD_OUT: dict[str, str] = {
    "3ba21379": "knowledge-update",
    "7e974930": "knowledge-update",
    "a2f3aa27": "knowledge-update",
    "0ddfec37": "knowledge-update",
    "60159905": "multi-session",
    "d851d5ba": "multi-session",
    "gpt4_ab202e7f": "multi-session",
    "078150f1": "multi-session",
    "8979f9ec": "multi-session",
    "8464fc84": "single-session-assistant",
    "7a8d0b71": "single-session-assistant",
    "75832dbd": "single-session-preference",
    "3b6f954b": "single-session-user",
    "d52b4f67": "single-session-user",
    "b320f3f8": "single-session-user",
    "b46e15ee": "temporal-reasoning",
    "gpt4_93f6379c": "temporal-reasoning",
    "08f4fc43": "temporal-reasoning",
    "gpt4_468eb064": "temporal-reasoning",
    "bbf86515": "temporal-reasoning",
}


def split_rule(items: Iterable[dict[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
    """The rule that drew ``TUNE`` / ``HELD_OUT`` (kept to check the tables above)."""
    by_type: dict[str, list[str]] = defaultdict(list)
    for it in items:
        by_type[it["question_type"]].append(it["question_id"])
    tune: dict[str, str] = {}
    held: dict[str, str] = {}
    for qtype in sorted(by_type):
        ids = sorted(by_type[qtype], key=lambda q: hashlib.sha1(q.encode()).hexdigest())
        for i, qid in enumerate(ids):
            (tune if i % 2 == 0 else held)[qid] = qtype
    return tune, held


def half_of(qid: str) -> str:
    return "tune" if qid in TUNE else "held-out" if qid in HELD_OUT else "other"


def half_order(items: Sequence[dict[str, Any]], half: dict[str, str]) -> list[dict[str, Any]]:
    """One half's questions, one of each type in turn (so any prefix spreads over the types)."""
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for it in items:
        if it["question_id"] in half:
            by_type[half[it["question_id"]]].append(it)
    queues = [by_type[t] for t in sorted(by_type)]
    out: list[dict[str, Any]] = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


# How many tune questions the warm-up takes before it alternates the halves: the first tune
# questions make the tuning runs possible early, the alternation keeps the held-out half
# growing beside the tune half when the machine cannot embed all 40 in a session.
TUNE_FIRST = 3


def warm_order(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The order questions are warmed (and run): ``TUNE_FIRST`` tune questions, then held-out
    and tune alternately, each half in ``half_order``."""
    tune, held = half_order(items, TUNE), half_order(items, HELD_OUT)
    out = tune[:TUNE_FIRST]
    rest = tune[TUNE_FIRST:]
    while held or rest:
        out += held[:1] + rest[:1]
        held, rest = held[1:], rest[1:]
    return out


@dataclass(frozen=True)
class Message:
    """One saved utterance."""

    id: str
    session: int
    turn: int
    content: str
    time: str | None
    gold: bool


def lme_time(raw: str) -> str | None:
    import re

    m = re.match(r"(\d{4})/(\d{2})/(\d{2}) \(\w+\) (\d{2}):(\d{2})", raw or "")
    return f"{m[1]}-{m[2]}-{m[3]}T{m[4]}:{m[5]}" if m else None


def messages_of(item: dict[str, Any]) -> list[Message]:
    """Every non-empty turn of the whole haystack, in session then turn order."""
    out: list[Message] = []
    for si, session in enumerate(item["haystack_sessions"]):
        when = lme_time(item["haystack_dates"][si])
        for ti, turn in enumerate(session):
            if not turn["content"].strip():
                continue
            content = f"{ROLE.get(turn['role'], turn['role'])}: {turn['content']}"
            out.append(
                Message(f"s{si}_ch{si}_e{ti}", si, ti, content, when, bool(turn.get("has_answer")))
            )
    return out


_offline = OfflineExtractor()


def save_texts(content: str) -> list[str]:
    """The passage texts a save of ``content`` with a caller id embeds, in ``_embed``'s order
    (summary, person/concept/location names, chunks), deduplicated."""
    ex = single_event(_offline.extract_sync(content))
    names = [e.name for e in (*ex.persons, *ex.concepts, *ex.locations)]
    chunks = [content[s:e] for s, e in chunk_ranges(len(content))]
    return list(dict.fromkeys([*(e.summary for e in ex.events), *names, *chunks]))


async def warm(data: Sequence[dict[str, Any]], emb: Any, cache: Any, log: Any) -> int:
    """Embed every text the message-mode saves of ``data`` need, question by question in
    ``warm_order``; returns how many were new. ``emb`` is a ``CachingEmbedder``."""
    from bench._common import EmbeddingCache, load_average

    started, done = time.perf_counter(), 0
    order = warm_order(data)
    for n, item in enumerate(order, 1):
        texts: list[str] = []
        for m in messages_of(item):
            texts += save_texts(m.content)
        texts = list(dict.fromkeys(texts))
        keys = [EmbeddingCache.key(emb.model, "passage", t) for t in texts]
        have = cache.get_many(keys)
        todo = [t for t, k in zip(texts, keys, strict=True) if k not in have]
        await emb.embed([item["question"]], "query")
        for i in range(0, len(todo), 64):
            await emb.embed(todo[i : i + 64], "passage")
            done += len(todo[i : i + 64])
            dt = time.perf_counter() - started
            log(
                f"warm {n}/{len(order)} {half_of(item['question_id'])} {item['question_id']}: "
                f"{min(i + 64, len(todo))}/{len(todo)} new ({len(texts)} texts); {done} "
                f"embedded in {dt:.0f}s, {done / max(dt, 1e-9):.2f}/s; load {load_average()}"
            )
        log(
            f"ready {n}/{len(order)} {half_of(item['question_id'])} {item['question_id']} "
            f"({len(texts)} texts)"
        )
    return done


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m bench.lme_messages [WORKERS]``: warm the cache (``warm``), 2 workers."""
    import asyncio
    import sys

    from bench._common import CachingEmbedder, EmbeddingCache, cache_dir, data_dir
    from mnemoql.engine.providers.local import LocalEmbedder

    args = list(sys.argv[1:] if argv is None else argv)
    workers = int(args[0]) if args else 2
    data = json.loads((data_dir() / "longmemeval_s_dev40.json").read_text("utf-8"))
    assert split_rule(data) == (TUNE, HELD_OUT), "the halves drifted from their rule"
    cache = EmbeddingCache(cache_dir() / "embeddings.sqlite3")
    emb = CachingEmbedder(LocalEmbedder(workers=workers), cache)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    done = asyncio.run(warm(data, emb, cache, log))
    cache.close()
    print(f"warmed {len(data)} questions, {done} new vectors")


if __name__ == "__main__":
    main()
