"""``mnemoql mcp``: the MCP server over stdin/stdout, for desktop agents and IDEs.

It serves one memory space (``--space``, default ``default``) of the configured store, with
every scope, or only ``read`` with ``--read-only``. The process is one agent's connection, so
it keeps one evidence session for its whole life: follow-up searches bring new evidence.

stdout is the wire: nothing else may be written there. Logs go to stderr, and while the server
runs the SDK points file descriptor 1 at stderr, so a stray print of a library cannot corrupt a
message either.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import signal
import sys
from importlib.metadata import version

from mcp.server.stdio import stdio_server

from mnemoql.engine.config import Settings
from mnemoql.engine.errors import MnemoError
from mnemoql.web.mcp.server import Caller, build_server

log = logging.getLogger("mnemoql.mcp")


async def serve(settings: Settings) -> int:
    """Serve until the client closes stdin (or SIGTERM); 1 when the store cannot be opened."""
    from mnemoql.web.service import limit_blas_threads, serving_spaces, warm_up

    limit_blas_threads(settings.retrieval.blas_threads)
    space = settings.mcp.space
    async with contextlib.AsyncExitStack() as stack:
        spaces = await stack.enter_async_context(serving_spaces(settings))
        providers = spaces.providers
        try:
            memory = await spaces.get(space)
        except MnemoError as exc:
            shown = exc.text(settings.mcp.locale or settings.locale)
            print(f"mnemoql mcp: {exc.code}: {shown}", file=sys.stderr)
            return 1
        warming = asyncio.create_task(warm_up(providers, asyncio.Event(), memory))
        stack.callback(warming.cancel)
        scopes = frozenset({"read"} if settings.mcp.read_only else {"read", "write"})
        caller = Caller(space, scopes, "mcp-stdio-" + secrets.token_hex(8), "read-only server")
        locale = settings.mcp.locale or settings.locale
        edge = (settings.limits, locale, version("mnemoql"))
        server = build_server(spaces, lambda ctx: caller, *edge)
        log.info("mnemoql MCP on stdio: space %r (%s), %s", space, settings.store,
                 "read-only" if settings.mcp.read_only else "read and write")  # fmt: skip
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    return 0


def run(settings: Settings, log_level: str = "warning") -> int:
    """The ``mnemoql mcp`` command."""
    logging.basicConfig(
        stream=sys.stderr, level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s"
    )

    async def main() -> int:
        task = asyncio.current_task()
        assert task is not None
        # the SDK's stdio client sends SIGTERM when a server outlives its stdin; close cleanly
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        try:
            return await serve(settings)
        except asyncio.CancelledError:
            return 0

    return asyncio.run(main())

