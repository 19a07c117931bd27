"""The ``mnemoql`` command: serve, import, export / restore, and managing a local Neo4j.

``import`` saves every line of a JSON-lines file through the save pipeline (new memories);
``export`` and ``restore`` move a *whole* memory space, ids and all, as a dump
(``engine.dump``): ``mnemoql export memory.jsonl --store embedded`` then
``mnemoql restore memory.jsonl --store neo4j``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError
from pydantic_settings import SettingsError

from engine.config import Settings, load_settings
from engine.errors import MnemoError
from engine.redact import mask_text

KEEP_ALIVE_S = 75


def _settings(args: argparse.Namespace, **groups: dict[str, Any]) -> Settings:
    overrides: dict[str, Any] = {k: v for k, v in groups.items() if v}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir).expanduser()
    if getattr(args, "store", None):
        overrides["store"] = args.store
    if getattr(args, "host", None):
        overrides["host"] = args.host
    if getattr(args, "port", None):
        overrides["port"] = args.port
    if getattr(args, "allow_public", False):
        overrides["allow_public"] = True
    try:
        return load_settings(**overrides)
    except SettingsError as exc:  # a MNEMOQL_* value that should be JSON and is not
        print(f"mnemoql: invalid settings: {_bad_json_setting() or exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except ValidationError as exc:
        # a readable refusal instead of a traceback: which setting, its variable, what is wrong
        print("mnemoql: invalid settings:", file=sys.stderr)
        for err in exc.errors():
            path = [str(part) for part in err["loc"]]
            var = "MNEMOQL_" + "__".join(path).upper()
            raised = err.get("ctx", {}).get("error")
            # our validators' messages name the setting themselves
            text = str(raised) if var in str(raised) else f"{'.'.join(path)} ({var}): {err['msg']}"
            print(f"  {text}", file=sys.stderr)
        raise SystemExit(2) from None


def _bad_json_setting() -> str | None:
    """Which ``MNEMOQL_*`` variable holds broken JSON (pydantic-settings names only the
    group), and where it breaks; never its value, which may hold tokens."""
    for name, value in sorted(os.environ.items()):
        if not name.startswith("MNEMOQL_") or not value.lstrip().startswith(("[", "{")):
            continue
        try:
            json.loads(value)
        except ValueError as exc:
            pos = getattr(exc, "pos", None)
            where = f" at character {pos}" if pos is not None else ""
            return f"{name} is not valid JSON{where}: {getattr(exc, 'msg', exc)}"
    return None


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from web.auth import TokenTable, check_bind

    settings = _settings(args)
    try:
        # create_app's only refusal (the tokens), checked before anything listens
        check_bind(settings, TokenTable.from_settings(settings.auth))
    except ValueError as exc:
        print(f"mnemoql: {exc}", file=sys.stderr)
        return 2

    def build() -> Any:
        from web.app import create_app

        return create_app(settings)

    print(
        f"mnemoql on http://{settings.host}:{settings.port}/graphql "
        f"(store: {settings.store}, data: {settings.data_dir})",
        file=sys.stderr,
    )
    from web.logs import serve_log_config
    from web.starting import StartingApp

    app = StartingApp(build, on_failure=_interrupt)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=args.log_level,
        log_config=serve_log_config(args.log_level),
        # an idle keep-alive connection stays open 75 s (uvicorn's default is 5 s): without
        # tokens, one connection is one default session (resolvers.context.default_session),
        # and an agent thinks longer than 5 s between calls
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    # uvicorn.run exits with 3 itself when it cannot start (a port in use); a failed start-up of
    # the service ends the same way
    return 3 if app.failed else 0


def _interrupt() -> None:
    """Stop the server as Ctrl-C does: uvicorn.run gives no handle on its server, and its
    signal handler shuts down gracefully (the lifespan's exit runs, connections are closed)."""
    signal.raise_signal(signal.SIGINT)


def eta(remaining: int, rate: float) -> str:
    """``h:mm:ss`` left at ``rate`` records per second (``?`` before the first record)."""
    if remaining <= 0:
        return "0:00:00"
    if rate <= 0:
        return "?"
    seconds = int(remaining / rate + 0.5)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    """A one-line progress bar on a terminal; plain periodic lines elsewhere."""

    def __init__(self, total: int, out: TextIO = sys.stderr, label: str = "saved") -> None:
        self.total, self.out, self.label = total, out, label
        self.done = 0
        self.failed = 0
        self.started = time.monotonic()
        self._last = 0.0

    def advance(self, ok: bool = True) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done == self.total:
            self._last = now
            self.draw()

    def draw(self) -> None:
        width = 30
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(frac * width)
        rate = self.done / max(time.monotonic() - self.started, 1e-9)
        line = (
            f"[{bar:<{width}}] {self.done}/{self.total} {self.label}, "
            f"{self.failed} failed, {rate:.1f} records/s, ETA {eta(self.total - self.done, rate)}"
        )
        if self.out.isatty():
            self.out.write("\r" + line)
            if self.done == self.total:
                self.out.write("\n")
        elif self.done == self.total or self.done % 100 == 0:
            self.out.write(line + "\n")
        self.out.flush()


async def _import(settings: Settings, path: Path, concurrency: int, space: str) -> int:
    """Save every line of ``path`` (``web.imports``: resumable, with a summary)."""
    import httpx

    from engine.memory import Memory
    from engine.providers.factory import build_providers
    from web.imports import BadLines, read_lines, save_lines
    from web.service import open_store

    try:
        lines = read_lines(path)
    except UnicodeDecodeError as exc:
        print(f"mnemoql import: {path} is not UTF-8 text (byte {exc.start})", file=sys.stderr)
        return 2
    except BadLines as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print("mnemoql import: nothing was saved; fix the line(s) above and run it again",
              file=sys.stderr)  # fmt: skip
        return 2
    store = open_store(settings, space)
    await store.open()
    try:
        async with httpx.AsyncClient() as client:
            memory = Memory(settings, store, build_providers(settings, client))
            bar = Progress(len(lines), label="lines")
            summary = await save_lines(memory, lines, concurrency=concurrency, on_line=bar.advance)
    finally:
        await store.close()
    for number, code, message in summary.failed:
        print(f"{path}:{number}: {code}: {message}", file=sys.stderr)
    print(summary.text(path), file=sys.stderr)
    return 1 if summary.failed else 0


async def _revectorize(settings: Settings, space: str) -> int:
    import httpx

    from engine.errors import MnemoError
    from engine.memory import Memory
    from engine.providers.factory import build_providers
    from web.service import open_store

    store = open_store(settings, space)
    await store.open()
    bars: dict[str, Progress] = {}

    def progress(phase: str, done: int, total: int) -> None:
        bar = bars.get(phase)
        if bar is None:
            bar = bars[phase] = Progress(total, label=phase)
        while bar.done < done:
            bar.advance()

    try:
        async with httpx.AsyncClient() as client:
            memory = Memory(settings, store, build_providers(settings, client))
            try:
                r = await memory.revectorize(progress)
            except MnemoError as exc:
                print(f"{exc.code}: {exc.message}", file=sys.stderr)
                return 1
            print(
                f"revectorized with {r.model}/{r.dimensions}: {r.events} events, "
                f"{r.persons} persons, {r.concepts} concepts, {r.locations} locations, "
                f"{r.chunks} chunks",
                file=sys.stderr,
            )
            return 0
    finally:
        await store.close()


def _phase_bars() -> Callable[[str, int, int], None]:
    """A progress callback drawing one bar per phase (revectorize's embedding / writing)."""
    bars: dict[str, Progress] = {}

    def progress(phase: str, done: int, total: int) -> None:
        bar = bars.get(phase)
        if bar is None:
            bar = bars[phase] = Progress(total, label=phase)
        while bar.done < done:
            bar.advance()

    return progress


async def _export(settings: Settings, target: str, space: str, vectors: bool) -> int:
    from engine import dump
    from engine.errors import MnemoError
    from web.service import open_store

    out = None if target == "-" else Path(target)
    partial = None if out is None else out.with_name(out.name + ".partial")
    try:
        store = open_store(settings, space)
        await store.open()
    except MnemoError as exc:
        print(f"{exc.code}: {exc.message}", file=sys.stderr)
        return 1
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
        print(f"{exc.code}: {exc.message}", file=sys.stderr)
        return 1
    finally:
        if partial is not None:
            partial.unlink(missing_ok=True)
        await store.close()
    shown = ", ".join(f"{kinds[k]} {k}" for k in dump.KINDS if k in kinds) or "nothing"
    print(
        f"exported space {space!r} ({settings.store}{', with vectors' if vectors else ''}): "
        f"{shown} -> {target}",
        file=sys.stderr,
    )
    return 0


async def _restore(settings: Settings, source: Path, space: str, revectorize: bool) -> int:
    import httpx

    from engine import dump
    from engine.errors import MnemoError
    from engine.memory import Memory
    from engine.providers.factory import build_providers
    from web.service import open_store

    try:  # a first pass checks every line: a bad dump is refused before anything is written
        with source.open(encoding="utf-8") as f:
            reader = dump.DumpReader(f)
            for _ in reader.records():
                pass
    except MnemoError as exc:
        print(f"{source}: {exc.message}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        print(f"{source}: cannot read: {exc}", file=sys.stderr)
        return 2
    try:
        store = open_store(settings, space)
        await store.open()
    except MnemoError as exc:
        print(f"{exc.code}: {exc.message}", file=sys.stderr)
        return 1
    try:
        async with httpx.AsyncClient() as client:
            memory = Memory(settings, store, build_providers(settings, client))
            with source.open(encoding="utf-8") as f:
                report = await memory.restore(f, revectorize=revectorize, progress=_phase_bars())
    except MnemoError as exc:
        print(f"{exc.code}: {exc.message}", file=sys.stderr)
        return 1
    finally:
        await store.close()
    shown = ", ".join(f"{n} {k}" for k, n in report.counts.items()) or "nothing"
    print(f"restored into space {space!r} ({settings.store}): {shown}", file=sys.stderr)
    r = report.revectorized
    if r is not None:
        print(
            f"re-embedded with {r.model}/{r.dimensions}: {r.events} events, {r.persons} "
            f"persons, {r.concepts} concepts, {r.locations} locations, {r.chunks} chunks",
            file=sys.stderr,
        )
    elif report.counts.get("meta") and not report.vectors:
        print("the dump carried no vectors: run `mnemoql revectorize` before searching",
              file=sys.stderr)  # fmt: skip
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    return asyncio.run(_export(_settings(args), args.file, args.space, args.vectors))


def cmd_restore(args: argparse.Namespace) -> int:
    if args.file != "-":
        return asyncio.run(
            _restore(_settings(args), Path(args.file), args.space, not args.no_revectorize)
        )
    with tempfile.TemporaryDirectory(prefix="mnemoql-restore-") as tmp:
        spooled = Path(tmp) / "stdin.jsonl"  # read twice: checked first, then written
        with spooled.open("w", encoding="utf-8") as f:
            shutil.copyfileobj(sys.stdin, f)
        return asyncio.run(_restore(_settings(args), spooled, args.space, not args.no_revectorize))


def cmd_revectorize(args: argparse.Namespace) -> int:
    return asyncio.run(_revectorize(_settings(args), args.space))


def cmd_import(args: argparse.Namespace) -> int:
    return asyncio.run(_import(_settings(args), Path(args.file), args.concurrency, args.space))


def cmd_demo(args: argparse.Namespace) -> int:
    from web.demo import serve_demo

    return serve_demo(args)


def cmd_mcp(args: argparse.Namespace) -> int:
    from web.mcp.stdio import run

    flags = {"space": args.space, "locale": args.locale, "read_only": args.read_only or None}
    settings = _settings(args, mcp={k: v for k, v in flags.items() if v is not None})
    return run(settings, args.log_level)


def cmd_neo4j(args: argparse.Namespace) -> int:
    from engine.store.neo4j.managed import main as managed_main

    settings = _settings(args)
    home = Path(args.home) if args.home else settings.data_dir / "neo4j"
    return managed_main([args.action, "--home", str(home)])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mnemoql", description="GraphQL graph memory for LLM agents.")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--data-dir", help="where the embedded store keeps its data")
        sp.add_argument("--store", choices=["embedded", "neo4j"], help="which store to use")

    s = sub.add_parser("serve", help="serve GraphQL on 127.0.0.1:8000")
    common(s)
    s.add_argument("--host", help="address to bind (default 127.0.0.1)")
    s.add_argument("--port", type=int)
    s.add_argument(
        "--allow-public",
        action="store_true",
        help="serve a non-loopback address even with no access tokens configured",
    )
    s.add_argument("--log-level", default="info")
    s.set_defaults(func=cmd_serve)

    i = sub.add_parser(
        "import",
        help="save every line of a JSON-lines file (a re-run skips the lines saved before)",
    )
    common(i)
    i.add_argument("file")
    i.add_argument("--concurrency", type=int, default=4)
    i.add_argument("--space", default="default", help="the memory space (default: default)")
    i.set_defaults(func=cmd_import)

    d = sub.add_parser("demo", help="load a small sample memory into its own data dir and serve it")
    d.add_argument("--data-dir", help="where the demo memory lives (default: <data dir>/demo)")
    d.add_argument("--port", type=int)
    d.add_argument("--log-level", default="warning")
    d.set_defaults(func=cmd_demo)

    x = sub.add_parser(
        "export", help="write a whole memory space as a JSON-lines dump (for restore)"
    )
    common(x)
    x.add_argument("file", help="the dump to write ('-' for stdout)")
    x.add_argument("--space", default="default", help="the memory space (default: default)")
    x.add_argument(
        "--vectors",
        action="store_true",
        help="include every vector (restore keeps them when the model matches)",
    )
    x.set_defaults(func=cmd_export)

    rs = sub.add_parser(
        "restore",
        help="load a dump of `mnemoql export` into an empty memory space (ids kept)",
    )
    common(rs)
    rs.add_argument("file", help="the dump to read ('-' for stdin)")
    rs.add_argument("--space", default="default", help="the memory space (default: default)")
    rs.add_argument(
        "--no-revectorize",
        action="store_true",
        help="do not re-embed a dump without vectors (or of another model) right away",
    )
    rs.set_defaults(func=cmd_restore)

    m = sub.add_parser(
        "mcp", help="serve the memory to an agent over MCP on stdin/stdout (for desktop agents)"
    )
    common(m)
    m.add_argument("--space", help="the memory space to serve (default: default)")
    m.add_argument("--read-only", action="store_true", help="refuse memory_save and memory_forget")
    m.add_argument("--locale", choices=["zh", "en"], help="language of the tools' text (zh)")
    m.add_argument("--log-level", default="warning", help="stderr log level (default: warning)")
    m.set_defaults(func=cmd_mcp)

    r = sub.add_parser("revectorize", help="re-embed the whole memory with the configured model")
    common(r)
    r.add_argument("--space", default="default", help="the memory space (default: default)")
    r.set_defaults(func=cmd_revectorize)

    n = sub.add_parser("neo4j", help="a managed local Neo4j: install | start | stop | status")
    common(n)
    n.add_argument("action", choices=["install", "start", "stop", "status"])
    n.add_argument("--home", help="Neo4j home (default: <data-dir>/neo4j)")
    n.set_defaults(func=cmd_neo4j)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one command. Whatever stops it early is one line on stderr and exit code 2 (a
    file that cannot be read or written, a store that cannot be reached, bad settings),
    never a traceback; a command that ran but met errors on the way exits with 1."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except MnemoError as exc:
        print(f"mnemoql {args.command}: {exc.code}: {mask_text(exc.message)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"mnemoql {args.command}: {_os_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mnemoql {args.command}: interrupted", file=sys.stderr)
        return 130
    return code


def _os_error(exc: OSError) -> str:
    """``cannot write missing/x.jsonl: no such file or directory`` for a failed file call."""
    name = exc.filename if exc.filename is not None else ""
    what = (exc.strerror or type(exc).__name__).lower()
    if isinstance(exc, FileNotFoundError) and name:
        parent = Path(name).parent
        if not parent.exists():
            return f"{parent}: no such directory (create it first)"
        return f"{name}: no such file"
    return f"{name}: {what}" if name else what


if __name__ == "__main__":
    raise SystemExit(main())
