"""The MCP server over the memory spaces: tools, resources, scopes, limits and coded errors.

Both transports build it with ``build_server``; they differ only in how a request names its
caller (``Identify``): over HTTP the bearer token's grant and the MCP session, over stdio the one
configured space and the process. A tool call then runs like a GraphQL operation:

- the caller's scopes are checked first (``read`` for lookups, ``write`` for save and forget);
- the arguments are validated (``web.mcp.arguments``) before anything is touched;
- one ``Memory`` call runs under the GraphQL deadlines (``query_timeout_s``, or
  ``mutation_timeout_s`` for writes);
- an expected failure (``engine.errors``) is a tool error (``isError``) whose text starts with
  its stable code (``OUT_OF_RANGE: limit must be between 1 and 8 (got 9)``); anything else is
  logged and reported as ``INTERNAL_SERVER_ERROR`` without details. An error carries text only:
  clients check structured content against the tool's ``outputSchema`` (the TypeScript SDK
  even on errors, turning a mismatch into -32602), and an error is no result of that shape.
  A failed call has written nothing: saves are one transaction, and the session records
  nothing for a call that failed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from mnemoql.engine.errors import Forbidden, MnemoError, StoreUnavailable
from mnemoql.engine.memory import Memory
from mnemoql.engine.messages import Locale, message
from mnemoql.engine.service_settings import Limits
from mnemoql.web import metrics
from mnemoql.web.guards import timeout_message
from mnemoql.web.mcp import arguments, results
from mnemoql.web.mcp import text as texts
from mnemoql.web.mcp.tools import TOOLS, Call, Tool

log = logging.getLogger("mnemoql.mcp")

NAME = "mnemoql"
INSTRUCTIONS = (
    "Long-term memory. memory_search finds evidence (at most 4 new events a call, each with an "
    "exact quote); follow its cursor with memory_expand / memory_nearby, check quotes with "
    "memory_read, and save what is worth keeping with memory_save. Search again in the same "
    "session for more: what this session was given is not repeated."
)
TOPICS_URI = "mnemoql://topics"
INDEX_URI = "mnemoql://memory-index"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the memory space, the scopes, the session its connection keeps (None for
    a stateless HTTP request), what to call it when a scope is missing, and for a stateless
    request the session of its HTTP connection (``fallback``), used when no call names one."""

    space: str
    scopes: frozenset[str]
    session: str | None
    who: str = "token"
    fallback: str | None = None
    locale: Locale | None = None  # the request's Accept-Language; None: the server's locale


Identify = Callable[[ServerRequestContext[Any, Any]], Caller]
"""Tells the caller of a request; raises ``Unauthorized`` when it has none."""


class Memories(Protocol):
    """Where the memory of a space comes from (``engine.spaces.Spaces``)."""

    async def get(self, space: str = ...) -> Memory: ...

    def mark_down(self, space: str) -> None: ...


def build_server(
    memories: Memories, identify: Identify, limits: Limits, locale: Locale, version: str
) -> Server[Any]:
    """The low-level MCP server: tools and read-only resources over ``memories``."""
    edge = _Edge(memories, identify, limits, locale)
    return Server(
        NAME,
        version=version,
        title="mnemoql memory",
        instructions=INSTRUCTIONS,
        on_list_tools=edge.list_tools,
        on_call_tool=_measured(edge.call_tool),
        on_list_resources=edge.list_resources,
        on_read_resource=edge.read_resource,
    )


CallTool = Callable[
    [ServerRequestContext[Any, Any], types.CallToolRequestParams], Awaitable[types.CallToolResult]
]


def _measured(call_tool: CallTool) -> CallTool:
    """``call_tool`` counted and timed in the service's metrics, by tool and code."""

    async def measured(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        started = time.perf_counter()
        name = params.name if params.name in TOOLS else "(unknown)"
        code = "UNKNOWN_TOOL"
        try:
            result = await call_tool(ctx, params)
            block = result.content[0] if result.content else None
            text = block.text if isinstance(block, types.TextContent) else ""
            code = text.partition(":")[0] if result.is_error else "OK"
            return result
        finally:
            metrics.operation("mcp", name, code, time.perf_counter() - started)

    return measured


def _tool_listing(tool: Tool[Any], limits: Limits) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=arguments.schema(tool.args, limits),
        output_schema=tool.output.model_json_schema(),
        annotations=types.ToolAnnotations(title=tool.title, **tool.hints),
    )


def error_result(exc: MnemoError, locale: Locale) -> types.CallToolResult:
    """A tool error: the stable code first, then how to fix it, in ``locale``."""
    body = f"{exc.code}: {exc.text(locale)}"
    return types.CallToolResult(content=[types.TextContent(text=body)], is_error=True)


def _coded(code: str, message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=f"{code}: {message}")], is_error=True
    )


class _Edge:
    def __init__(
        self, memories: Memories, identify: Identify, limits: Limits, locale: Locale
    ) -> None:
        self.memories = memories
        self.identify = identify
        self.limits = limits
        self.locale = locale
        self._listing = [_tool_listing(t, limits) for t in TOOLS.values()]

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._listing)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}")
        space: str | None = None
        locale = self.locale
        try:
            caller = self.identify(ctx)
            space, locale = caller.space, caller.locale or self.locale
            _allow(caller, tool.scope, tool.name)
            args = arguments.parse(tool.args, params.arguments)
            memory = await self.memories.get(caller.space)
            seconds = (
                self.limits.mutation_timeout_s
                if tool.scope == "write"
                else self.limits.query_timeout_s
            )
            call = Call(memory, caller.session, locale, caller.fallback)
            try:
                async with asyncio.timeout(seconds):
                    body, structured = await tool.run(call, args)
            except TimeoutError:
                log.warning("MCP tool %s ran out of time (%g s) and was cancelled", tool.name,
                            seconds)  # fmt: skip
                return _coded("TIMEOUT", timeout_message(seconds, locale))
        except MnemoError as exc:
            if isinstance(exc, StoreUnavailable) and space is not None:
                self.memories.mark_down(space)  # the next call tries to reopen the store
            return error_result(exc, locale)
        except Exception:
            log.exception("MCP tool %s failed", tool.name)
            return _coded("INTERNAL_SERVER_ERROR", message("mcp.internal", locale))
        return types.CallToolResult(
            content=[types.TextContent(text=body)],
            structured_content=structured.model_dump(mode="json"),
        )

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=TOPICS_URI,
                    name="topics",
                    title="Topic tree",
                    description="The topic tree memories are filed under (Partner's text "
                    "form: 'path [root]' / 'path {slices: N}' lines).",
                    mime_type="text/plain",
                ),
                types.Resource(
                    uri=INDEX_URI,
                    name="memory-index",
                    title="Memory index",
                    description="What this memory holds (counts of events, persons, concepts, "
                    "locations, chunks, relationships) and the models it was built with.",
                    mime_type="application/json",
                ),
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri not in (TOPICS_URI, INDEX_URI):
            raise MCPError(types.INVALID_PARAMS, f"no resource {uri!r}", data={"uri": uri})
        space: str | None = None
        locale = self.locale
        try:
            caller = self.identify(ctx)
            space, locale = caller.space, caller.locale or self.locale
            _allow(caller, "read", "resources/read")
            memory = await self.memories.get(caller.space)
            if uri == TOPICS_URI:
                topics = results.Topics.from_domain(await memory.topics())
                body, mime = texts.topics(topics, locale), "text/plain"
            else:
                index = results.Index.from_domain(await memory.index())
                body, mime = json.dumps(index.model_dump(mode="json"), indent=2), "application/json"
        except MnemoError as exc:
            if isinstance(exc, StoreUnavailable) and space is not None:
                self.memories.mark_down(space)
            raise MCPError(types.INVALID_REQUEST, f"{exc.code}: {exc.text(locale)}",
                           data=exc.extensions()) from None  # fmt: skip
        contents = types.TextResourceContents(uri=uri, mime_type=mime, text=body)
        return types.ReadResourceResult(contents=[contents])


def _allow(caller: Caller, scope: str, what: str) -> None:
    if scope not in caller.scopes:
        raise Forbidden(
            f"this {caller.who} may not use {what}: it needs the {scope!r} scope",
            zh=f"令牌权限不足：需要 {scope} 权限",
            required_scope=scope,
        )
