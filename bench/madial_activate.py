"""Cue-driven recall on MADial-Bench: ``activate`` (topic, date and entity cues, offline, ranked
and fused with a vector search of the lines) next to plain vector search over the same memories.

    python -m bench.madial_activate            # zh and en, every dialogue
    python -m bench.madial_activate --lang en --cue-turns 3

Each user's memories are saved into a fresh embedded memory with the local embedder, each on
its own MADial day (the memory's clock is set to that day for its save, as if the agent had
saved it then), so the date index holds the day it happened. Every memory is filed under the
topic path ``<scene>-><emotion>`` (MADial's own labels, as a client that keeps such a taxonomy
would file it); entities come from the offline extractor. Dialogues run at the real clock. The
cue is the dialogue before the test turn (last ``--cue-turns`` utterances). Rows:

- ``activate``: the memories ``activate`` returns (limit 20), in its order;
- ``activate's own vector search``: the same memories by their rank in activate's vector
  search of the lines (mean of summary and chunk cosines), i.e. what the cue boost started from;
- ``vector top-k``: cosine of the cue lines (query) against each memory's content (passage),
  embedded by the same local model, outside mnemoql: the plain baseline;
- ``date-cued``: the same two rows over the dialogues whose cue lines name a day
  (``engine.topics.when``). MADial's dialogues carry no date, so their "today" / "yesterday"
  resolve against the real clock and name no memory's day: these rows show that such cues do
  no harm, not that they help;
- ``day named (synthetic)``: every dialogue's cue lines plus one line naming the day of the
  memory asked for (``I think that was on 2023-12-25.``), for activate and for the plain
  vector search of the same lines: what a date cue that does name the day adds.

Recall@k and MRR@5 of the first relevant memory.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from statistics import mean
from typing import Any
from zoneinfo import ZoneInfo

from bench._common import data_dir, open_memory, top_k
from bench.retrieval_quality import madial_content, read_jsonl, utterance
from mnemoql.engine.activation import ACTIVATE_LIMIT
from mnemoql.engine.ingest import SaveInput
from mnemoql.engine.providers.local import LocalEmbedder
from mnemoql.engine.topics.when import find_days

KS = (1, 3, 5)
DAY_LINE = {"zh": "我记得那是{day}的事。", "en": "I think that was on {day}."}


def owners(lang: str) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]], dict[str, int]]:
    root = data_dir() / "madial"
    mems: dict[str, dict[str, Any]] = {}
    for rec in read_jsonl(root / f"MADial-Bench-{lang}-memory.json"):
        ((k, v),) = rec.items()
        mems[k] = v
    dialogues = read_jsonl(root / f"MADial-Bench-{lang}-dialogue.json")
    owner: dict[str, int] = {}
    for rec in read_jsonl(root / "MADial-Bench-zh-memory.json"):
        ((k, v),) = rec.items()
        owner[k] = int(v["user-id"])
    for d in dialogues:
        for r in d["relevant-id"]:
            owner.setdefault(str(r), int(d["user-id"]))
    return mems, dialogues, owner


def score(ranked: list[str], relevant: list[str]) -> tuple[list[float], float]:
    first = relevant[0]
    rank = ranked.index(first) + 1 if first in ranked else None
    hits = [float(rank is not None and rank <= k) for k in KS]
    return hits, (1.0 / rank if rank and rank <= KS[-1] else 0.0)


def day_of(text: str) -> datetime:
    """Noon of a MADial ``time`` (``2023-12-25``) in the memory's time zone."""
    return datetime.fromisoformat(text).replace(hour=12, tzinfo=ZoneInfo("Asia/Shanghai"))


async def run(lang: str, cue_turns: int, embedder: LocalEmbedder) -> dict[str, list[Any]]:
    mems, dialogues, owner = owners(lang)
    names = ["activate", "activate's own vector search (no cue boost)", "vector top-k"]
    rows: dict[str, list[Any]] = {n: [] for n in names}
    rows |= {f"date-cued: {n}": [] for n in ("activate", "vector top-k")}
    rows |= {f"day named (synthetic): {n}": [] for n in ("activate", "vector top-k")}
    cued = 0
    work = Path(tempfile.mkdtemp(prefix="madial-activate-"))
    for user in sorted({int(d["user-id"]) for d in dialogues}):
        mine = [k for k in mems if owner.get(k) == user]
        bench = await open_memory(work / f"{lang}-{user}", embedder=embedder)
        ingestor = bench.memory.ingestor
        real_clock = ingestor._now
        try:
            for k in mine:
                m = mems[k]
                ingestor._now = functools.partial(day_of, m["time"])
                await bench.memory.save(
                    SaveInput(
                        content=madial_content(m, lang),
                        id=f"m{k}",
                        time=m["time"],
                        topic_path=f"{m['scene']}->{m['emotion']}",
                        # no client extraction: the offline extractor's persons, places and
                        # concepts become the entity cues activation can match
                    )
                )
            ingestor._now = real_clock
            mat = await embedder.embed([madial_content(mems[k], lang) for k in mine], "passage")
            for d in (x for x in dialogues if int(x["user-id"]) == user):
                turn = d["test-turn"][0]
                said = [u for u in (utterance(x) for x in d["dialogue"][1:turn]) if u]
                lines = said[-cue_turns:]
                relevant = [str(r) for r in d["relevant-id"]]
                act = await bench.memory.activate(lines, limit=ACTIVATE_LIMIT)
                cued += bool(act.cues)
                activated = [a.memory.event.id[1:] for a in act.memories]
                by_vector = sorted(
                    (a for a in act.memories if a.vector_rank), key=lambda a: a.vector_rank or 0
                )
                qv = (await embedder.embed(["\n".join(lines)], "query"))[0]
                sims = mat @ qv
                vec = [mine[i] for i in top_k(sims, len(mine))]
                rows["activate"].append(score(activated, relevant))
                rows["activate's own vector search (no cue boost)"].append(
                    score([a.memory.event.id[1:] for a in by_vector], relevant)
                )
                rows["vector top-k"].append(score(vec, relevant))
                if find_days("\n".join(lines), ingestor.now().date()):
                    rows["date-cued: activate"].append(score(activated, relevant))
                    rows["date-cued: vector top-k"].append(score(vec, relevant))
                # the same lines and one more naming the day of the memory asked for
                named = [*lines, DAY_LINE[lang].format(day=mems[relevant[0]]["time"])]
                act = await bench.memory.activate(named, limit=ACTIVATE_LIMIT)
                qv = (await embedder.embed(["\n".join(named)], "query"))[0]
                vec = [mine[i] for i in top_k(mat @ qv, len(mine))]
                rows["day named (synthetic): activate"].append(
                    score([a.memory.event.id[1:] for a in act.memories], relevant)
                )
                rows["day named (synthetic): vector top-k"].append(score(vec, relevant))
        finally:
            await bench.close()
    rows["_cued"] = [cued, len(rows["activate"])]
    return rows


def table(lang: str, rows: dict[str, list[Any]]) -> str:
    cued, n = rows.pop("_cued")
    out = [
        f"### {lang} ({n} dialogues; activation found at least one cue in {cued})\n",
        "| method | recall@1 | recall@3 | recall@5 | MRR@5 |",
        "|---|---|---|---|---|",
    ]
    for name, scores in rows.items():
        if not scores:
            out.append(f"| {name} (no dialogue) | | | | |")
            continue
        hits = [mean(s[0][i] for s in scores) for i in range(len(KS))]
        out.append(
            f"| {name} ({len(scores)}) | {hits[0]:.3f} | {hits[1]:.3f} | {hits[2]:.3f} | "
            f"{mean(s[1] for s in scores):.3f} |"
        )
    return "\n".join(out)


async def main(args: argparse.Namespace) -> str:
    embedder = LocalEmbedder()
    started = time.perf_counter()
    parts = [
        "# MADial-Bench: cue-driven recall (activate) vs vector search\n",
        f"Command: `{' '.join(['python -m bench.madial_activate', *sys.argv[1:]])}`\n",
    ]
    load = os.getloadavg()
    parts.append(f"Load average at start: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}.\n")
    for lang in args.lang:
        parts.append(table(lang, await run(lang, args.cue_turns, embedder)) + "\n")
    load = os.getloadavg()
    parts.append(
        f"Wall time {time.perf_counter() - started:.0f} s; load average at the end: "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (2 cores, shared).\n"
    )
    return "\n".join(parts)


def cli() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lang", nargs="+", default=["zh", "en"], choices=["zh", "en"])
    p.add_argument("--cue-turns", type=int, default=3)
    text = asyncio.run(main(p.parse_args()))
    out = Path(__file__).parent / "results" / "madial_activate.md"
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    cli()
