"""The tools: a name and description a model reads, the arguments' model, the result's model,
the scope it needs, and the one ``Memory`` call it makes.

Each tool answers with two things: the compact text a model reads (for evidence and reads the
very text of the GraphQL ``text`` fields) and the same facts as structured content. Sessions
follow the caller: an explicit ``session`` argument, else the one its connection keeps (a stdio
process, an MCP session over HTTP); a stateless caller gets a fresh session from each search,
named in the result so that it can pass it back.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from mnemoql.engine.memory import Memory
from mnemoql.engine.messages import Locale, message
from mnemoql.engine.retrieval.delivery import Outcome
from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.engine.retrieval.render import render, render_read, render_targeted
from mnemoql.web.mcp import arguments as a
from mnemoql.web.mcp import results as r
from mnemoql.web.mcp import text


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call: the caller's memory, its connection's session (None when stateless) and
    the language of the text."""

    memory: Memory
    session: str | None
    locale: Locale
    fallback: str | None = None  # a stateless caller's connection session


Answer = tuple[str, BaseModel]
A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Tool(Generic[A]):
    name: str
    title: str
    description: str
    args: type[A]  # what run is called with (arguments.parse)
    output: type[BaseModel]
    scope: Literal["read", "write"]
    run: Callable[[Call, A], Awaitable[Answer]]
    hints: dict[str, bool] = field(default_factory=dict)


def new_session() -> str:
    """A session for a caller that keeps none."""
    return "mcp-" + secrets.token_hex(8)


def _evidence(call: Call, out: Outcome) -> Answer:
    body = text.tool_names(render(out.page, call.locale))
    if call.session is None:  # stateless: the model has to carry the session itself
        body += "\n" + message("mcp.session", call.locale, session=out.session_id)
    return body, r.Evidence.from_outcome(out, call.locale)


async def _for_cursor(call: Call, session: str | None, cursor: str) -> str:
    # a stateless caller continues in the session that received the cursor
    owner = await call.memory.cursor_session(cursor)
    return session or call.session or owner or call.fallback or new_session()


async def search(call: Call, args: a.SearchArgs) -> Answer:
    if args.cursor is not None:
        sid = await _for_cursor(call, args.session, args.cursor)
    else:
        sid = args.session or call.session or call.fallback or new_session()
    if args.target != "Event":
        page = await call.memory.search_entities(args.target, args.query)
        body = text.tool_names(render_targeted(page, call.locale))
        return body, r.Evidence.from_targeted(page, sid)
    request = SearchRequest(
        args.query, args.entities, args.time_hint, args.reset_seen, args.cursor
    )
    return _evidence(call, await call.memory.search(request, sid))


async def expand(call: Call, args: a.ExpandArgs) -> Answer:
    sid = await _for_cursor(call, args.session, args.cursor)
    return _evidence(call, await call.memory.expand(args.cursor, args.concept_id, args.limit, sid))


async def nearby(call: Call, args: a.NearbyArgs) -> Answer:
    sid = await _for_cursor(call, args.session, args.cursor)
    out = await call.memory.nearby(args.cursor, args.event_id, args.before, args.after, sid)
    return _evidence(call, out)


async def read(call: Call, args: a.ReadArgs) -> Answer:
    got = r.Read.from_domain(await call.memory.read(args.event_id, args.start, args.limit))
    return render_read(got.to_result(), call.locale), got


async def save(call: Call, args: a.SaveArgs) -> Answer:
    got = r.Saved.from_domain(await call.memory.save(args.to_domain()), call.locale)
    return text.saved(got, call.locale), got


async def forget(call: Call, args: a.ForgetArgs) -> Answer:
    got = r.Forgotten(deleted_ids=await call.memory.forget(args.event_id))
    return text.forgotten(got, call.locale), got


async def topics(call: Call, args: a.TopicsArgs) -> Answer:
    got = r.Topics.from_domain(await call.memory.topics())
    return text.topics(got, call.locale), got


async def recall(call: Call, args: a.RecallArgs) -> Answer:
    kind, key = args.key()
    memory = call.memory
    found = await (memory.recall_topic(key) if kind == "topic" else memory.recall_date(key))
    got = r.Recall.from_domain(found)
    return text.recall(got, f"{kind}={key}", call.locale), got


async def activate(call: Call, args: a.ActivateArgs) -> Answer:
    found = await call.memory.activate(args.lines, args.evaluate, args.limit)
    got = r.Activated.from_domain(found, args.projection)
    return text.activated(got, call.locale), got


_READ = {"read_only_hint": True, "open_world_hint": False}

TOOLS: dict[str, Tool[Any]] = {
    t.name: t
    for t in (
        Tool(
            "memory_search",
            "Search memory",
            "Search long-term memory for evidence. Returns at most 4 events this session has "
            "not been given yet, each with a summary and an exact quote of the original text "
            "with its [start,end) range, the concepts they share, and a cursor for "
            "memory_expand / memory_nearby. Calling again in the same session brings new "
            "evidence; an empty result does not prove the memory does not exist. Give at least "
            "one of query, entities or time_hint.",
            a.SearchArgs,
            r.Evidence,
            "read",
            search,
            _READ,
        ),
        Tool(
            "memory_expand",
            "Expand through a concept",
            "Follow a result through one of the concepts it offered: more events mentioning "
            "that concept, ranked against the original query, none this session already has. "
            "At most 4 new events per call; one chain of calls holds 20.",
            a.ExpandArgs,
            r.Evidence,
            "read",
            expand,
            _READ,
        ),
        Tool(
            "memory_nearby",
            "Read neighbouring records",
            "Read the records just before and after a positional event a result offered "
            "(ids like book_ch3_e12: same prefix and chapter), in record order, at most 4 new.",
            a.NearbyArgs,
            r.Evidence,
            "read",
            nearby,
            _READ,
        ),
        Tool(
            "memory_read",
            "Read original text",
            "Read an exact range of an event's original text, up to 10000 code points a call; "
            "'next' says where to continue. Use it to check a summary or read past a quote.",
            a.ReadArgs,
            r.Read,
            "read",
            read,
            _READ,
        ),
        Tool(
            "memory_save",
            "Save a memory",
            "Save something to long-term memory. The text is kept verbatim; its events, people, "
            "concepts and places are extracted into a graph so later searches find it, and it "
            "is filed under a topic and its save date. Returns the new event ids.",
            a.SaveArgs,
            r.Saved,
            "write",
            save,
            {"read_only_hint": False, "destructive_hint": False, "open_world_hint": False},
        ),
        Tool(
            "memory_forget",
            "Forget a memory",
            "Delete a saved event for good, with its original text, its topic bindings and the "
            "people, concepts and places no other event mentions.",
            a.ForgetArgs,
            r.Forgotten,
            "write",
            forget,
            {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False},
        ),
        Tool(
            "memory_topics",
            "List topics",
            "The topic tree memories are filed under, one path per line: 'path [root]' for a "
            "root, 'path {slices: N}' with the number of memories bound there. Paths join "
            "segments with '->'; use one in memory_recall or memory_save.",
            a.TopicsArgs,
            r.Topics,
            "read",
            topics,
            _READ,
        ),
        Tool(
            "memory_recall",
            "Recall by topic or date",
            "Recall by topic path (its memories, its parent's and related topics', ranked, at "
            "most 5) or by the day memories were saved (every one of that day, in order).",
            a.RecallArgs,
            r.Recall,
            "read",
            recall,
            _READ,
        ),
        Tool(
            "memory_activate",
            "Activate memories from the conversation",
            "Pass the latest lines of the conversation: returns the memories their topics, "
            "dates (today, yesterday, last Monday, 2026-03-01, 上周一) and names call up, ranked "
            "by how well they fit the lines together with a plain similarity search, each with "
            "an exact quote of its source; with a projection, also as an "
            "activated_memory_slices context block. Use it at the start of a turn to bring "
            "what is relevant to mind.",
            a.ActivateArgs,
            r.Activated,
            "read",
            activate,
            _READ,
        ),
    )
}
