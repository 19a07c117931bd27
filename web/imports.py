"""``mnemoql import``: a JSON-lines file saved line by line, resumable.

Every line gets an idempotency key, so running the same file again (after a crash, a
``kill -9``, a fixed line) continues where it stopped instead of saving everything twice:

- a line with its own ``idempotency_key`` keeps it;
- any other line is keyed by the **digest of its content**, ``import:<sha256 of the line's
  JSON, keys sorted>``, plus ``#<n>`` for the n-th identical line of the file (a chat log may
  say "ok" twice and mean it). Not the file's digest with a line number: fixing one bad line
  changes the file's digest, and every key with it, and the re-run would save every line
  again. Not the line number alone: inserting a line shifts all of them. With content keys a
  fixed line is a new memory and every other line is a replay.

A re-run reports each line as **saved** (new), **skipped** (an earlier run saved it, or it was
saved and then forgotten on purpose: it is not brought back) or **failed** (with its code);
the summary counts them, and the exit code is 1 when any line failed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from mnemoql.engine.errors import Forgotten, MnemoError
from mnemoql.engine.extraction_input import input_problem, parse_extraction
from mnemoql.engine.ingest import SaveInput
from mnemoql.engine.memory import Memory
from mnemoql.engine.messages import Locale, message

KEY_PREFIX = "import:"
MAX_SHOWN = 20  # bad lines reported before giving up


@dataclass(frozen=True, slots=True)
class Line:
    number: int  # 1-based line of the file
    item: SaveInput


class BadLines(Exception):
    """Lines that are not save inputs; nothing was saved."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def resume_key(raw: dict[str, object], occurrence: int) -> str:
    """The idempotency key of a line without one: the digest of its JSON (keys sorted, so
    spacing and key order do not matter) and, from the second identical line on, its rank."""
    canonical = json.dumps(raw, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:40]
    return f"{KEY_PREFIX}{digest}" + (f"#{occurrence}" if occurrence > 1 else "")


def read_lines(path: Path, locale: Locale = "en") -> list[Line]:
    """Every non-blank line of ``path`` as a save input with its resume key.

    Raises:
        BadLines: lines that are not JSON objects of save inputs (up to ``MAX_SHOWN``), each
            problem said in ``locale``.
        OSError / UnicodeDecodeError: the file cannot be read.
    """
    seen: Counter[str] = Counter()
    lines: list[Line] = []
    problems: list[str] = []
    with path.open(encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                raw = json.loads(text)
                if not isinstance(raw, dict):
                    raise _NotAnObject
                item = _save_input(raw, seen)
            except (ValueError, ValidationError, MnemoError) as exc:
                detail = _one_line(_problem(exc, locale))
                problems.append(
                    message("cli.import_bad_line", locale, path=path, line=number, problems=detail)
                )
                if len(problems) >= MAX_SHOWN:
                    break
                continue
            lines.append(Line(number, item))
    if problems:
        raise BadLines(problems)
    return lines


class _NotAnObject(ValueError):
    pass


def _problem(exc: Exception, locale: Locale) -> str:
    """Why a line is not a save input, in ``locale``: pydantic's field errors one by one
    (``field: problem``), never its multi-line dump with the input echoed back."""
    if isinstance(exc, MnemoError):
        return exc.text(locale)
    if isinstance(exc, ValidationError):
        said = [_field_problem(e, locale) for e in exc.errors(include_url=False)]
        return message("input.sep", locale).join(said)
    if isinstance(exc, json.JSONDecodeError):
        return message("cli.import_not_json", locale, column=exc.colno, reason=exc.msg)
    if isinstance(exc, _NotAnObject):
        return message("cli.import_not_object", locale)
    return str(exc)  # a validator's own ValueError: pydantic wraps those, so not expected


def _field_problem(error: ErrorDetails, locale: Locale) -> str:
    field = ".".join(str(part) for part in error["loc"]) or "line"
    problem = input_problem(error, locale, allowed=", ".join(SaveInput.model_fields))
    return message("input.problem", locale, field=field, problem=problem)


def _save_input(raw: dict[str, object], seen: Counter[str]) -> SaveInput:
    fields = dict(raw)
    if fields.get("extraction") is not None:
        fields["extraction"] = parse_extraction(fields["extraction"])
    if fields.get("idempotency_key") is None:
        plain = {k: v for k, v in raw.items() if k != "idempotency_key"}
        key = resume_key(plain, 1)
        seen[key] += 1
        fields["idempotency_key"] = resume_key(plain, seen[key])
    return SaveInput.model_validate(fields)


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


@dataclass(slots=True)
class Summary:
    """What one run of an import did, line by line."""

    total: int
    saved: int = 0
    skipped: int = 0
    forgotten: int = 0  # among skipped: saved by an earlier run, then forgotten
    failed: list[tuple[int, str, str]] = field(default_factory=list)  # (line, code, message)

    def text(self, path: Path, locale: Locale = "en") -> str:
        forgotten = (
            message("cli.imported_forgotten", locale, count=self.forgotten)
            if self.forgotten
            else ""
        )
        return message(
            "cli.imported",
            locale,
            path=path,
            saved=self.saved,
            skipped=self.skipped,
            forgotten=forgotten,
            failed=len(self.failed),
            total=self.total,
        )


async def save_lines(
    memory: Memory,
    lines: Sequence[Line],
    *,
    concurrency: int = 4,
    on_line: Callable[[bool], None] | None = None,
    locale: Locale = "en",
) -> Summary:
    """Save every line (``concurrency`` at a time); ``on_line(ok)`` after each one; a failed
    line's message in ``locale``."""
    summary = Summary(total=len(lines))
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(line: Line) -> None:
        async with gate:
            ok = True
            try:
                outcome = await memory.save(line.item)
            except Forgotten:
                summary.skipped += 1
                summary.forgotten += 1
            except MnemoError as exc:
                summary.failed.append((line.number, exc.code, _one_line(exc.text(locale))))
                ok = False
            else:
                if outcome.result.replayed:
                    summary.skipped += 1
                else:
                    summary.saved += 1
            if on_line is not None:
                on_line(ok)

    await asyncio.gather(*(one(line) for line in lines))
    summary.failed.sort()
    return summary
