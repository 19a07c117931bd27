"""Print a real MCP exchange with ``mnemoql mcp`` (the README's transcript comes from this).

    .venv/bin/python scripts/mcp_transcript.py

It starts ``mnemoql mcp --locale en`` on a fresh temporary data directory (offline: the rule
extractor and the hashing embedder, so nothing leaves the machine) through the MCP SDK's stdio
client, as a desktop agent would, and prints each tool call with the text the model reads.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

NOTES = [
    ("Alice: I moved to Berlin last week to work on the Neo4j migration.", "work->mnemoql"),
    ("Bob: the Neo4j migration needs a backup plan before Friday.", "work->mnemoql"),
    ("Alice: my sister visits Berlin in May; we want to see the Pergamon museum.", "family"),
    ("Carol: Berlin office desks are booked for the migration team from Monday.", "work->office"),
    ("Alice: the Neo4j cluster in Berlin runs version 5.26 with three servers.", "work->mnemoql"),
    ("Bob: Alice prefers Postgres for the billing service, not Neo4j.", "work->billing"),
    ("Dave: the Berlin team dinner is on Thursday at the Turkish place.", "work->office"),
]


async def main() -> None:
    script = Path(sys.executable).parent / "mnemoql"
    with tempfile.TemporaryDirectory(prefix="mnemoql-mcp-") as data:
        params = StdioServerParameters(
            command=str(script),
            args=["mcp", "--locale", "en"],
            env={"MNEMOQL_DATA_DIR": data, "MNEMOQL_EMBEDDING__PROVIDER": "hashing"},
        )
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            print(f"tools/list -> {', '.join(t.name for t in tools)}\n")

            async def call(name: str, **arguments: Any) -> dict[str, Any]:
                print(f"> {name} {json.dumps(arguments, ensure_ascii=False)}")
                result = await client.call_tool(name, arguments)
                for block in result.content:
                    print(block.text if block.type == "text" else block)  # type: ignore[union-attr]
                print()
                structured: dict[str, Any] = result.structured_content or {}
                return structured

            for content, topic in NOTES:
                await call("memory_save", content=content, topic_path=topic)
            page = await call("memory_search", query="What is Alice working on in Berlin?")
            if page.get("cursor") and page.get("expand_concepts"):
                await call(
                    "memory_expand", cursor=page["cursor"], concept_id=page["expand_concepts"][0]
                )
            await call("memory_read", event_id=page["items"][0]["event_id"], start=0, limit=40)
            await call("memory_search", query="What is Alice working on in Berlin?")
            await call("memory_recall", topic_path="work->mnemoql")
            await call("memory_save", content="   ")


if __name__ == "__main__":
    asyncio.run(main())
