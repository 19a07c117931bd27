"""The tools' arguments: one pydantic model per tool, its JSON schema, and coded validation.

The schemas are what a model reads before it calls a tool, so every field says what it is for.
Every bound the engine enforces is advertised in the schema (``minimum`` / ``maximum``,
``maxLength``, ``minItems`` / ``maxItems``; those that are settings, such as
``max_content_chars``, filled in from the running service's ``Limits`` by ``schema``), but the
engine enforces them, so an out-of-range number gets the same ``OUT_OF_RANGE`` error (and
wording) as over GraphQL; everything else that does not fit the model is ``BAD_USER_INPUT``,
and a malformed ``extraction`` is ``EXTRACTION_INVALID`` as it is for the ``save`` mutation.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mnemoql.engine import ingest
from mnemoql.engine.activation import ACTIVATE_LIMIT, MAX_LINES
from mnemoql.engine.activation import DEFAULT_LIMIT as DEFAULT_ACTIVATE_LIMIT
from mnemoql.engine.errors import InvalidInput, ResetSeenMisuse
from mnemoql.engine.extraction_input import parse_extraction
from mnemoql.engine.memory import READ_DEFAULT, READ_MAX, TIME_HINT_MAX
from mnemoql.engine.retrieval.pipeline import EXPAND_MAX, NEARBY_MAX
from mnemoql.engine.service_settings import Limits
from mnemoql.prompts.extraction import Extraction

SESSION = (
    "Evidence history to use. Leave it out: a stdio server or an MCP session keeps one for "
    "you. A stateless client passes back the `session` a search returned, so that follow-up "
    "searches bring new evidence."
)


def _bounded(low: int, high: int, default: int, description: str) -> Any:
    # the engine checks the range (OUT_OF_RANGE, as over GraphQL); the schema only tells
    return Field(
        default=default,
        description=description,
        json_schema_extra={"minimum": low, "maximum": high},
    )


def _told(**bounds: int) -> dict[str, Any]:
    # a bound the engine enforces (with its own coded error), advertised only
    return {"json_schema_extra": bounds}


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SaveArgs(_Args):
    content: str = Field(
        description="The text to remember, kept verbatim: quotes and reads come from it."
    )
    topic_path: str | None = Field(
        default=None,
        description="A topic to file it under, segments joined by '->', e.g. "
        "work->mnemoql->api (otherwise the extraction model or an offline rule picks one).",
    )
    related_topics: list[str] = Field(
        default_factory=list, description="Related topic paths, recalled alongside it."
    )
    time: str | None = Field(
        default=None,
        description="When it happened, free text ('last Friday'); never taken from the save time.",
    )
    id: str | None = Field(
        default=None,
        description="Your own event id. Ids like <prefix>_ch<N>_e<M> (book_ch3_e12) carry a "
        "position, so memory_nearby can read the records around them.",
    )
    idempotency_key: str | None = Field(
        default=None,
        max_length=200,
        description="Saving again with the same key returns the first result and writes "
        "nothing new: set one whenever you may retry.",
    )
    dedupe_by_hash: bool = Field(
        default=False,
        description="When identical content was saved before, return that event instead.",
    )
    extraction: Extraction | None = Field(
        default=None,
        description="A ready extraction (events with summaries, persons, concepts, locations "
        "referring to each other by ref); skips the extraction model.",
    )

    def to_domain(self) -> ingest.SaveInput:
        return ingest.SaveInput(
            content=self.content,
            id=self.id,
            time=self.time,
            topic_path=self.topic_path,
            related_topics=self.related_topics,
            extraction=self.extraction,
            idempotency_key=self.idempotency_key,
            dedupe_by_hash=self.dedupe_by_hash,
        )


class SearchArgs(_Args):
    query: str | None = Field(
        default=None, description="What to look for, in your own words (any language)."
    )
    entities: list[str] | None = Field(
        default=None,
        description="Names every result must involve (AND; a name may match several people, "
        "places or concepts). Alone, results come newest first.",
    )
    time_hint: str | None = Field(
        default=None,
        **_told(maxLength=TIME_HINT_MAX),
        description="Only memories written in this period: today, yesterday, 3 days ago, last "
        "Friday, this week, last week, last 7 days, this month, 2026-03, since March 1, "
        "2026-03-01..2026-03-15, 上周, 上周五, 最近3天, 12月1日 ... "
        "It filters on the save date, not on when things happened.",
    )
    target: Literal["Event", "Person", "Concept"] = Field(
        default="Event",
        description="Event (default): evidence with exact quotes and a cursor. Person or "
        "Concept: the best 3 matching nodes with their neighbours (needs a query).",
    )
    reset_seen: bool = Field(
        default=False,
        description="Forget what this session was already given (and its cursors) first.",
    )
    session: str | None = Field(default=None, description=SESSION)
    cursor: str | None = Field(
        default=None,
        description="The cursor of an earlier result: the next page of that result's search "
        "(its 'next: search(cursor)' line). query, entities and time_hint may be left out.",
    )


class ExpandArgs(_Args):
    cursor: str = Field(description="The cursor of an earlier search, expand or nearby result.")
    concept_id: str = Field(
        description="A concept that result offered (its 'next: memory_expand(...)' line)."
    )
    limit: int = _bounded(1, EXPAND_MAX, 3, "How many new events to ask for (at most 4 arrive).")
    session: str | None = Field(default=None, description=SESSION)


class NearbyArgs(_Args):
    cursor: str = Field(description="The cursor of an earlier search, expand or nearby result.")
    event_id: str = Field(
        description="A positional event that result offered (its 'next: memory_nearby(...)' "
        "line)."
    )
    before: int = _bounded(0, NEARBY_MAX, 2, "Records to read before it, in the same chapter.")
    after: int = _bounded(0, NEARBY_MAX, 2, "Records to read after it, in the same chapter.")
    session: str | None = Field(default=None, description=SESSION)


class ReadArgs(_Args):
    event_id: str = Field(description="The event whose original text to read.")
    start: int = Field(
        default=0,
        **_told(minimum=0),
        description="Code-point offset to start at (0 = the start; at most the text's total).",
    )
    limit: int = _bounded(1, READ_MAX, READ_DEFAULT, "How many code points to read.")


class ForgetArgs(_Args):
    event_id: str = Field(description="The event to delete, with the entities only it used.")


class TopicsArgs(_Args):
    pass


class RecallArgs(_Args):
    topic_path: str | None = Field(
        default=None,
        description="A topic path from memory_topics (e.g. work->mnemoql): its memories, its "
        "parent's and related topics', ranked, at most 5.",
    )
    date: str | None = Field(
        default=None,
        description="A day: every memory saved that day, in order. yyyy-MM-dd or a phrase "
        "naming one day (yesterday, 3 days ago, last Friday, 上周五, 12月1日).",
    )

    def key(self) -> tuple[Literal["topic", "date"], str]:
        """Which lookup the call asks for; exactly one of the two must be given."""
        if (self.topic_path is None) == (self.date is None):
            raise InvalidInput(
                "give exactly one of topic_path or date",
                zh="topic_path 与 date 须且只能给出一个",
                argument="topic_path",
            )
        if self.topic_path is not None:
            return "topic", self.topic_path
        assert self.date is not None
        return "date", self.date


class ActivateArgs(_Args):
    lines: list[str] = Field(
        **_told(minItems=1, maxItems=MAX_LINES),
        description="The latest lines of the conversation, oldest first; their topics, dates "
        "and names call up the memories that fit."
    )
    evaluate: bool = Field(
        default=False, description="Let the chat model keep only the memories that help."
    )
    limit: int = _bounded(
        1, ACTIVATE_LIMIT, DEFAULT_ACTIVATE_LIMIT, "At most this many memories, best first."
    )
    projection: Literal["full", "compact", "abstract"] | None = Field(
        default=None,
        description="Also give the memories as the activated_memory_slices context block: "
        "full (summaries and messages: up to 10 whole, else first 2, middle 4, last 2), "
        "compact (the same without the first 2) or abstract (summaries only).",
    )


def _configured(limits: Limits) -> dict[type[BaseModel], dict[str, dict[str, int]]]:
    """The bounds that are settings (MNEMOQL_LIMITS__*), by arguments model and property."""
    return {
        SaveArgs: {"content": {"minLength": 1, "maxLength": limits.max_content_chars}},
        SearchArgs: {"query": {"maxLength": limits.max_search_chars}},
    }


def _extraction_bounds(out: dict[str, Any], limits: Limits) -> None:
    extraction = out.get("$defs", {}).get("Extraction", {}).get("properties", {})
    if "events" in extraction:
        extraction["events"]["maxItems"] = limits.max_extraction_events
    for name in ("persons", "concepts", "locations", "attitudes"):
        if name in extraction:  # persons, concepts and locations share the cap together
            extraction[name]["maxItems"] = limits.max_extraction_entities


def schema(model: type[BaseModel], limits: Limits | None = None) -> dict[str, Any]:
    """The JSON schema of a tool's arguments (``type: object`` at the root), with the bounds
    ``limits`` sets (the defaults when None)."""
    limits = limits or Limits()
    out = model.model_json_schema(by_alias=True)
    out.pop("title", None)
    properties = out.get("properties", {})
    for prop in properties.values():
        prop.pop("title", None)
    for name, bounds in _configured(limits).get(model, {}).items():
        properties[name].update(bounds)
    _extraction_bounds(out, limits)
    return out


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], arguments: dict[str, Any] | None) -> M:
    """Validate a call's arguments into ``model``.

    Raises:
        ResetSeenMisuse: ``reset_seen`` on a tool other than memory_search.
        ExtractionInvalid: a malformed ``extraction``.
        InvalidInput: anything else that does not fit: its field and what is wrong.
    """
    given = arguments or {}
    if "reset_seen" in given and "reset_seen" not in model.model_fields:
        raise ResetSeenMisuse(
            "reset_seen is only valid on memory_search",
            zh="reset_seen 仅用于 search",
            argument="reset_seen",
        )
    # a client's extraction goes through the save mutation's check (unknown fields refused,
    # the same EXTRACTION_INVALID wording); the other arguments are checked first, as GraphQL
    # checks its variables before the resolver sees the extraction
    extraction = given.get("extraction") if "extraction" in model.model_fields else None
    rest = {k: v for k, v in given.items() if k != "extraction" or extraction is None}
    try:
        parsed = model.model_validate(rest)
    except ValidationError as exc:
        raise _coded(exc) from None
    if extraction is None:
        return parsed
    return parsed.model_copy(update={"extraction": parse_extraction(extraction)})


def _coded(exc: ValidationError) -> InvalidInput:
    errors = exc.errors(include_url=False)
    first = errors[0]
    field = ".".join(str(p) for p in first["loc"]) or "arguments"
    problems = "; ".join(f"{_where(e['loc'])}{e['msg']}" for e in errors)
    return InvalidInput(f"bad arguments: {problems}", zh=f"参数无效：{problems}", argument=field)


def _where(loc: tuple[int | str, ...]) -> str:
    return f"{'.'.join(str(p) for p in loc)}: " if loc else ""
