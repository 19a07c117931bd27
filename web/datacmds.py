"""The data commands of ``mnemoql``: import, revectorize, export and restore.

Each opens the configured store for one space, does its work with progress on stderr, closes
the store and returns the exit code: 0 done; 2 refused before anything was written, as one
line ``mnemoql <command>: CODE: message`` -- bad input, a store that cannot be opened, a full
disk, a write lock held elsewhere, a non-empty target (``refused``); 1 another coded failure
on the way (a model provider that failed mid-run).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mnemoql.engine.config import Settings
from mnemoql.engine.messages import Locale, message
from mnemoql.web.progress import Progress, phase_bars

if TYPE_CHECKING:
    from mnemoql.engine.revectorize import RevectorizeReport


def refused(command: str, exc: Exception) -> int:
    """Print a coded failure as one line; its exit code (2 when the operator can act on it)."""
    from mnemoql.engine.errors import (
        Conflict,
        InvalidInput,
        MnemoError,
        StorageFault,
        StoreUnavailable,
    )
    from mnemoql.engine.locale_choice import configured_locale
    from mnemoql.engine.redact import mask_text

    code = exc.code if isinstance(exc, MnemoError) else type(exc).__name__
    message = exc.text(configured_locale()) if isinstance(exc, MnemoError) else str(exc)
    print(f"mnemoql {command}: {code}: {mask_text(message)}", file=sys.stderr)
    operator = (Conflict, InvalidInput, StorageFault, StoreUnavailable)
    return 2 if isinstance(exc, operator) else 1


async def import_file(settings: Settings, path: Path, concurrency: int, space: str) -> int:
    """Save every line of ``path`` (``web.imports``: resumable, with a summary)."""
    import httpx

    from mnemoql.engine.memory import Memory
    from mnemoql.engine.providers.factory import build_providers
    from mnemoql.web.imports import BadLines, read_lines, save_lines
    from mnemoql.web.service import open_store

    if _is_dump(path):
        print(message("cli.import_dump", settings.locale, path=path), file=sys.stderr)
        return 2
    try:
        lines = read_lines(path, settings.locale)
    except UnicodeDecodeError as exc:
        text = message("cli.import_not_utf8", settings.locale, path=path, byte=exc.start)
        print(text, file=sys.stderr)
        return 2
    except BadLines as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(message("cli.import_nothing_saved", settings.locale), file=sys.stderr)
        return 2
    store = open_store(settings, space)
    await store.open()
    try:
        async with httpx.AsyncClient() as client:
            memory = Memory(settings, store, build_providers(settings, client))
            bar = Progress(len(lines), label="lines")
            summary = await save_lines(
                memory, lines, concurrency=concurrency, on_line=bar.advance, locale=settings.locale
            )
    finally:
        await store.close()
    for number, code, failure in summary.failed:
        said = message(
            "cli.import_failed_line", settings.locale, path=path, line=number, code=code,
            failure=failure,
        )  # fmt: skip
        print(said, file=sys.stderr)
    print(summary.text(path, settings.locale), file=sys.stderr)
    return 1 if summary.failed else 0


def _is_dump(path: Path) -> bool:
    """The first non-blank line is the header of an export (``engine.dump``)."""
    from mnemoql.engine.dump import FORMAT

    with path.open("rb") as f:
        for raw in f:
            if raw.strip():
                try:
                    first = json.loads(raw)
                except ValueError:
                    return False
                return isinstance(first, dict) and first.get("format") == FORMAT
    return False


async def revectorize(settings: Settings, space: str) -> int:
    import httpx

    from mnemoql.engine.errors import MnemoError
    from mnemoql.engine.memory import Memory
    from mnemoql.engine.providers.factory import build_providers
    from mnemoql.web.service import open_store

    store = open_store(settings, space)
    await store.open()
    try:
        async with httpx.AsyncClient() as client:
            memory = Memory(settings, store, build_providers(settings, client))
            try:
                r = await memory.revectorize(phase_bars())
            except MnemoError as exc:
                print(f"{exc.code}: {exc.text(settings.locale)}", file=sys.stderr)
                return 1
            print(_embedded("cli.revectorized", r, settings.locale), file=sys.stderr)
            return 0
    finally:
        await store.close()


def _embedded(done: str, r: RevectorizeReport, locale: Locale) -> str:
    """The line after a run that embedded the memory again (``r``)."""
    return message(
        "cli.embedded",
        locale,
        done=message(done, locale),
        model=r.model,
        dimensions=r.dimensions,
        events=r.events,
        persons=r.persons,
        concepts=r.concepts,
        locations=r.locations,
        chunks=r.chunks,
    )


async def export(settings: Settings, target: str, space: str, vectors: bool) -> int:
    from mnemoql.engine import dump
    from mnemoql.engine.errors import MnemoError
    from mnemoql.web.service import open_store

    out = None if target == "-" else Path(target)
    partial = None if out is None else out.with_name(out.name + ".partial")
    try:
        store = open_store(settings, space)
        await store.open()
    except MnemoError as exc:
        return refused("export", exc)
    kinds: dict[str, int] = {}
    try:
        sink: TextIO = sys.stdout if partial is None else partial.open("w", encoding="utf-8")
        try:
            async for line in dump.export_lines(store, vectors=vectors):
                sink.write(line + "\n")
                if line.startswith('{"counts":'):
                    kinds = json.loads(line)["counts"]
        finally:
            if sink is not sys.stdout:
                sink.close()
        if partial is not None and out is not None:
            partial.replace(out)  # a dump is either complete or absent
    except MnemoError as exc:
        return refused("export", exc)
    except OSError as exc:
        from mnemoql.engine.store.faults import storage_fault

        fault = storage_fault(exc, out)
        if fault is None:
            raise
        return refused("export", fault)
    finally:
        if partial is not None:
            partial.unlink(missing_ok=True)
        await store.close()
    locale = settings.locale
    shown = ", ".join(f"{kinds[k]} {k}" for k in dump.KINDS if k in kinds)
    line = message(
        "cli.exported",
        locale,
        space=repr(space),
        store=settings.store,
        vectors=message("cli.with_vectors", locale) if vectors else "",
        shown=shown or message("cli.nothing", locale),
        target=target,
    )
    print(line, file=sys.stderr)
    return 0


async def restore(settings: Settings, source: Path, space: str, revectorize: bool) -> int:
    import httpx

    from mnemoql.engine import dump
    from mnemoql.engine.errors import MnemoError
    from mnemoql.engine.memory import Memory
    from mnemoql.engine.providers.factory import build_providers
    from mnemoql.web.service import open_store

    try:  # a first pass checks every line: a bad dump is refused before anything is written
        with source.open(encoding="utf-8") as f:
            reader = dump.DumpReader(f)
            for _ in reader.records():
                pass
    except MnemoError as exc:
        text = exc.text(settings.locale)
        print(f"mnemoql restore: {exc.code}: {source}: {text}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        text = message("cli.restore_unreadable", settings.locale, source=source, error=exc)
        print(text, file=sys.stderr)
        return 2
    try:
        store = open_store(settings, space)
        await store.open()
    except MnemoError as exc:
        return refused("restore", exc)
    try:
        async with httpx.AsyncClient() as client:
            memory = Memory(settings, store, build_providers(settings, client))
            with source.open(encoding="utf-8") as f:
                report = await memory.restore(f, revectorize=revectorize, progress=phase_bars())
    except MnemoError as exc:
        return refused("restore", exc)
    finally:
        await store.close()
    locale = settings.locale
    shown = ", ".join(f"{n} {k}" for k, n in report.counts.items())
    shown = shown or message("cli.nothing", locale)
    line = message("cli.restored", locale, space=repr(space), store=settings.store, shown=shown)
    print(line, file=sys.stderr)
    r = report.revectorized
    if r is not None:
        print(_embedded("cli.reembedded", r, locale), file=sys.stderr)
    elif report.counts.get("meta") and not report.vectors:
        print(message("cli.no_vectors", locale), file=sys.stderr)
    return 0
