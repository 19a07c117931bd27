"""An extraction as the save path takes it in: a client's parsed, a refused one worded, and
several events folded into one for a caller's id.

A save's extraction comes from the client (``parse_extraction``) or from the extraction model
(whose invalid output ``engine.providers.openai`` refuses through ``refused_extraction``); both
refuse with EXTRACTION_INVALID and pydantic's errors worded in each language from the catalogue
(``engine.messages``), as a save input's own problems are (``input_problem``). Kept apart from
``engine.ingest`` so the save pipeline reads as its steps, and so the web layer's input checks
and the providers take the wording without the pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from mnemoql.engine import checks
from mnemoql.engine.errors import ExtractionInvalid
from mnemoql.engine.messages import CATALOGUE, Locale, message, template
from mnemoql.prompts.extraction import EventItem, Extraction


def parse_extraction(data: Any) -> Extraction:
    """Validate a client-sent extraction with SPEC's wording on failure, its details in both
    languages; unknown fields are refused (relations are stated inside events and attitudes,
    never beside them)."""
    if unknown := checks.unknown_extraction_fields(data):
        shown = ", ".join(checks.clip(f, 60) for f in unknown[:5])
        en, zh = (message("extraction.unknown_fields", lc, fields=shown) for lc in ("en", "zh"))
        raise _invalid(en, zh)
    try:
        return Extraction.model_validate(data)
    except ValidationError as exc:
        raise refused_extraction(exc.errors(include_url=False)) from exc


def refused_extraction(errors: Sequence[ErrorDetails]) -> ExtractionInvalid:
    """EXTRACTION_INVALID for pydantic's errors of an extraction (``loc`` from the
    extraction's root), each ``field: problem`` in both languages."""
    return _invalid(_problems(errors, "en"), _problems(errors, "zh"))


def _invalid(en: str, zh: str) -> ExtractionInvalid:
    """EXTRACTION_INVALID with its reason in each language."""
    return ExtractionInvalid(
        message("extraction.invalid", "en", reason=en),
        zh=message("extraction.invalid", "zh", reason=zh),
    )


def input_problem(error: ErrorDetails, locale: Locale, *, allowed: str | None = None) -> str:
    """One pydantic error of an input as its problem in ``locale`` (``input.<type>``, else
    pydantic's words); ``allowed`` names the fields an unknown field's problem lists (without
    it, pydantic's words)."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "extra_forbidden" and allowed is not None:
        return message("input.extra_forbidden", locale, fields=allowed)
    if kind == "model_type":
        return message("input.model_type", locale, class_name=ctx.get("class_name", "object"))
    if f"input.{kind}" in CATALOGUE and kind != "extra_forbidden":
        return message(f"input.{kind}", locale)
    return message("input.other", locale, detail=error["msg"])


def _problems(errors: Sequence[ErrorDetails], locale: Locale) -> str:
    """Each error as ``field: problem`` in ``locale``: the model's own checks by their type
    (``extraction.<name>``), field types as a save input's (``input.<type>``)."""
    said = []
    for error in errors:
        kind, ctx = error["type"], error.get("ctx") or {}
        if (name := kind.removeprefix("extraction_")) != kind and f"extraction.{name}" in CATALOGUE:
            values = {k: template(f"extraction.kind.{v}", locale) if k == "kind" else v
                      for k, v in ctx.items()}  # fmt: skip
            problem = message(f"extraction.{name}", locale, **values)
        else:
            problem = input_problem(error, locale)
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        field = where.removeprefix(".")
        said.append(message("input.problem", locale, field=field, problem=problem) if field
                    else problem)  # fmt: skip
    return message("input.sep", locale).join(said)


def single_event(ex: Extraction) -> Extraction:
    """A caller id names one event: fold several extracted events into the first."""
    if len(ex.events) <= 1:
        return ex
    head = ex.events[0]
    merged = EventItem(
        ref=head.ref,
        summary="；".join(e.summary.strip() for e in ex.events),
        time=next((e.time for e in ex.events if e.time), None),
        participants=[p for e in ex.events for p in e.participants],
        locations=list(dict.fromkeys(x for e in ex.events for x in e.locations)),
        concepts=list(dict.fromkeys(x for e in ex.events for x in e.concepts)),
    )
    refs = {e.ref for e in ex.events}
    attitudes = [
        a.model_copy(update={"event": head.ref}) if a.event in refs else a for a in ex.attitudes
    ]
    try:
        return ex.model_copy(update={"events": [merged], "attitudes": attitudes})
    except ValidationError as exc:  # pragma: no cover - the inputs were valid already
        raise refused_extraction(exc.errors(include_url=False)) from exc
