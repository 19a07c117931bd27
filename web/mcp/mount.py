"""``/mcp`` in the running service, without slowing its start-up.

Importing the MCP SDK takes about 1.4 s, so the service does not wait for it: ``serving`` (entered
in the app's lifespan) loads the MCP edge (``web.mcp.http``) in a worker thread and runs its
streamable HTTP session manager in a background task until the app stops. A request that comes
in before that is done waits for it; if loading failed, it is answered 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from starlette.types import Receive, Scope, Send

from engine.config import Settings
from engine.spaces import Spaces
from web.auth import TokenTable

if TYPE_CHECKING:
    from web.mcp.http import McpHttp

log = logging.getLogger("mnemoql.mcp")


class McpMount:
    """The ASGI app routed at ``/mcp``; ``serving(spaces)`` starts and stops what it needs."""

    def __init__(self, settings: Settings, tokens: TokenTable) -> None:
        self.settings = settings
        self.tokens = tokens
        self._edge: McpHttp | None = None
        self._settled: asyncio.Event | None = None  # set once the edge is up or has failed

    @contextlib.asynccontextmanager
    async def serving(self, spaces: Spaces) -> AsyncIterator[None]:
        """Load the edge in the background; on exit, stop its sessions (before the spaces
        close, so no tool call outlives its memory)."""
        stop, settled = asyncio.Event(), asyncio.Event()
        self._settled = settled
        task = asyncio.create_task(self._run(spaces, stop, settled))
        try:
            yield
        finally:
            stop.set()
            if not settled.is_set():
                task.cancel()  # still importing: nothing to shut down
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, spaces: Spaces, stop: asyncio.Event, settled: asyncio.Event) -> None:
        try:
            edge = await asyncio.to_thread(self._load, spaces)
            async with edge.running():
                self._edge = edge
                settled.set()
                await stop.wait()
        except Exception:
            log.exception("the MCP endpoint failed; /mcp answers 503")
        finally:
            self._edge = None
            settled.set()

    def _load(self, spaces: Spaces) -> McpHttp:
        from web.mcp.http import McpHttp

        return McpHttp(self.settings, self.tokens, spaces)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._settled is not None:
            await self._settled.wait()
        if self._edge is None:
            await _unavailable(send)
            return
        await self._edge(scope, receive, send)


async def _unavailable(send: Send) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "MCP is unavailable"}}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
