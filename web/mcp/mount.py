"""``/mcp`` in the running service, at no cost to a service that is never asked for it.

Importing the MCP SDK takes about 1.4 s and, run beside the service's start-up, it slowed the
first GraphQL search (docs/DECISIONS.md). So the first request to ``/mcp`` loads the MCP edge
(``web.mcp.http``) in a worker thread and starts its streamable HTTP session manager in a
background task, which runs until the app stops (``serving``, entered in the app's lifespan);
requests wait for it meanwhile. If loading fails, they are answered 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from starlette.types import Receive, Scope, Send

from mnemoql.engine.config import Settings
from mnemoql.engine.spaces import Spaces
from mnemoql.web.auth import TokenTable

if TYPE_CHECKING:
    from mnemoql.web.mcp.http import McpHttp

log = logging.getLogger("mnemoql.mcp")


class McpMount:
    """The ASGI app routed at ``/mcp``; ``serving(spaces)`` bounds the life of what it starts."""

    def __init__(self, settings: Settings, tokens: TokenTable) -> None:
        self.settings = settings
        self.tokens = tokens
        self._spaces: Spaces | None = None
        self._stop: asyncio.Event | None = None
        self._settled: asyncio.Event | None = None  # set once the edge is up or has failed
        self._task: asyncio.Task[None] | None = None
        self._edge: McpHttp | None = None

    @contextlib.asynccontextmanager
    async def serving(self, spaces: Spaces) -> AsyncIterator[None]:
        """Let ``/mcp`` start on demand; on exit, end its sessions (before the spaces close, so
        no tool call outlives its memory)."""
        self._spaces, self._stop, self._settled = spaces, asyncio.Event(), asyncio.Event()
        try:
            yield
        finally:
            self._stop.set()
            task, self._task = self._task, None
            if task is not None:
                if not self._settled.is_set():
                    task.cancel()  # still importing: nothing to shut down
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self._spaces = None

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
        from mnemoql.web.mcp.http import McpHttp

        return McpHttp(self.settings, self.tokens, spaces)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        spaces, stop, settled = self._spaces, self._stop, self._settled
        if spaces is None or stop is None or settled is None or stop.is_set():
            await _unavailable(send)  # not serving (yet, or any more)
            return
        if self._task is None:
            self._task = asyncio.create_task(self._run(spaces, stop, settled))
        await settled.wait()
        if self._edge is None:
            await _unavailable(send)
            return
        await self._edge(scope, receive, send)


async def _unavailable(send: Send) -> None:
    await send_error(send, 503, -32603, "MCP is unavailable")


async def send_error(
    send: Send, status: int, code: int, message: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """An HTTP answer carrying a JSON-RPC error with no request id (the SDK's shape)."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})
    data = body.encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*head, *headers]})
    await send({"type": "http.response.body", "body": data})
