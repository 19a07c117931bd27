"""The ``mnemoql`` command: serve, import, export / restore, and managing a local Neo4j.

``import`` saves every line of a JSON-lines file through the save pipeline (new memories);
``export`` and ``restore`` move a *whole* memory space, ids and all, as a dump
(``engine.dump``): ``mnemoql export memory.jsonl --store embedded`` then
``mnemoql restore memory.jsonl --store neo4j``. The arguments of each command are
``web.cli_args``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from mnemoql.engine.config import Settings, load_settings
from mnemoql.engine.errors import MnemoError
from mnemoql.engine.locale_choice import configured_locale
from mnemoql.engine.messages import message
from mnemoql.engine.redact import mask_text
from mnemoql.engine.store.faults import data_dir_problem, storage_fault
from mnemoql.web import datacmds
from mnemoql.web.cli_args import Command, build_parser

if TYPE_CHECKING:
    from starlette.applications import Starlette

KEEP_ALIVE_S = 75


def _settings(args: argparse.Namespace, **groups: dict[str, Any]) -> Settings:
    overrides: dict[str, Any] = {k: v for k, v in groups.items() if v}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir).expanduser()
    if getattr(args, "store", None):
        overrides["store"] = args.store
    if getattr(args, "host", None):
        overrides["host"] = args.host
    if getattr(args, "port", None) is not None:  # 0: a free port (serve prints it)
        overrides["port"] = args.port
    if getattr(args, "allow_public", False):
        overrides["allow_public"] = True
    try:
        return load_settings(**overrides)
    except SettingsError as exc:  # a MNEMOQL_* value that should be JSON and is not
        invalid = message("cli.invalid_settings", configured_locale())
        print(f"mnemoql: {invalid}: {_bad_json_setting() or exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except ValidationError as exc:
        # a readable refusal instead of a traceback: which setting, its variable, what is wrong
        print(f"mnemoql: {message('cli.invalid_settings', configured_locale())}:", file=sys.stderr)
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

    from mnemoql.web.auth import TokenTable, check_bind

    settings = _settings(args)
    try:
        # create_app's only refusal (the tokens), checked before anything listens
        check_bind(settings, TokenTable.from_settings(settings.auth))
    except ValueError as exc:
        print(f"mnemoql: {exc}", file=sys.stderr)
        return 2
    from mnemoql.web import tracing

    if settings.telemetry.traces and not tracing.available():
        print(f"mnemoql: MNEMOQL_TELEMETRY__TRACES is on but OpenTelemetry is not installed: "
              f"{tracing.INSTALL}", file=sys.stderr)  # fmt: skip
        return 2

    def build() -> Starlette:
        from mnemoql.web.app import create_app

        return create_app(settings)

    from mnemoql.web.logs import JsonLines, serve_log_config
    from mnemoql.web.observe import Observe
    from mnemoql.web.starting import StartingApp, listen_problem, operator_error

    if settings.store == "embedded" and (unusable := data_dir_problem(settings.data_dir)):
        print(f"mnemoql serve: {operator_error(unusable)}", file=sys.stderr)
        return 2
    if settings.port != 0 and (taken := listen_problem(settings.host, settings.port)):
        print(f"mnemoql serve: {taken}", file=sys.stderr)
        return 2
    sockets = [_free_port_socket(settings.host)] if settings.port == 0 else None
    port = sockets[0].getsockname()[1] if sockets else settings.port
    banner = (
        f"mnemoql on http://{settings.host}:{port}/graphql "
        f"(store: {settings.store}, data: {settings.data_dir})"
    )
    if settings.log.format == "json":  # stderr holds JSON lines only
        record = logging.LogRecord("mnemoql", logging.INFO, __file__, 0, banner, None, None)
        banner = JsonLines().format(record)
    print(banner, file=sys.stderr)

    app = StartingApp(build, on_failure=_interrupt)
    served = Observe(app)  # request ids from the first request on, while the service starts too
    options: dict[str, Any] = dict(
        host=settings.host,
        port=port,
        log_level=args.log_level,
        log_config=serve_log_config(args.log_level, settings.log.format),
        # an idle keep-alive connection stays open 75 s (uvicorn's default is 5 s): an agent
        # thinks longer than 5 s between calls, and a new connection costs it a handshake
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    if args.workers > 1:
        return _serve_workers(args, settings, options, sockets)
    if sockets is None:
        uvicorn.run(served, **options)
    else:  # --port 0: serve the socket bound above (uvicorn.run takes no socket)
        server = uvicorn.Server(uvicorn.Config(served, **options))
        with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run does
            server.run(sockets=sockets)
        if not server.started and app.error is None:
            return 3
    # uvicorn.run exits with 3 itself when it cannot start (a port in use); a failed start-up of
    # the service ends the same way
    if app.error is not None:  # an operator's mistake or a fault: one line, exit 2
        print(f"mnemoql serve: {app.error}", file=sys.stderr)
        return 2
    return 3 if app.failed else 0


def _serve_workers(
    args: argparse.Namespace,
    settings: Settings,
    options: dict[str, Any],
    sockets: list[socket.socket] | None,
) -> int:
    """``--workers N``: uvicorn's supervisor runs N processes of ``web.workers.app`` on one
    socket. The workers build their settings from the environment, so the flags go there."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from mnemoql.web.workers import FAILED_FILE

    if settings.store == "neo4j" and settings.neo4j.uri is None:
        print(
            "mnemoql serve: --workers needs the embedded store or an external Neo4j "
            "(MNEMOQL_NEO4J__URI); the managed Neo4j belongs to one process",
            file=sys.stderr,
        )
        return 2
    port = sockets[0].getsockname()[1] if sockets else settings.port
    os.environ.update(
        MNEMOQL_DATA_DIR=str(settings.data_dir),
        MNEMOQL_STORE=settings.store,
        MNEMOQL_HOST=settings.host,
        MNEMOQL_PORT=str(port),
        MNEMOQL_ALLOW_PUBLIC="true" if settings.allow_public else "false",
    )
    options = {**options, "port": port}
    config = uvicorn.Config(
        "mnemoql.web.workers:app", factory=True, workers=args.workers, **options
    )
    with tempfile.TemporaryDirectory(prefix="mnemoql-serve-") as tmp:
        failed = Path(tmp) / "failed"
        os.environ[FAILED_FILE] = str(failed)
        sock = sockets[0] if sockets else config.bind_socket()
        with contextlib.suppress(KeyboardInterrupt):
            Multiprocess(config, sockets=[sock]).run()
        return 2 if failed.exists() else 0


def _free_port_socket(host: str) -> socket.socket:
    """A listening address on ``host`` at a port the system picks (``--port 0``), bound here so
    the port printed is the one served."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), 0))
    return sock


def _interrupt() -> None:
    """Stop the server as Ctrl-C does: uvicorn.run gives no handle on its server, and its
    signal handler shuts down gracefully (the lifespan's exit runs, connections are closed)."""
    signal.raise_signal(signal.SIGINT)


def cmd_export(args: argparse.Namespace) -> int:
    return asyncio.run(datacmds.export(_settings(args), args.file, args.space, args.vectors))


def cmd_restore(args: argparse.Namespace) -> int:
    if args.file != "-":
        return asyncio.run(
            datacmds.restore(_settings(args), Path(args.file), args.space, not args.no_revectorize)
        )
    with tempfile.TemporaryDirectory(prefix="mnemoql-restore-") as tmp:
        spooled = Path(tmp) / "stdin.jsonl"  # read twice: checked first, then written
        with spooled.open("w", encoding="utf-8") as f:
            shutil.copyfileobj(sys.stdin, f)
        return asyncio.run(
            datacmds.restore(_settings(args), spooled, args.space, not args.no_revectorize)
        )


def cmd_revectorize(args: argparse.Namespace) -> int:
    return asyncio.run(datacmds.revectorize(_settings(args), args.space))


def cmd_import(args: argparse.Namespace) -> int:
    return asyncio.run(
        datacmds.import_file(_settings(args), Path(args.file), args.concurrency, args.space)
    )


def cmd_demo(args: argparse.Namespace) -> int:
    from mnemoql.web.demo import serve_demo

    return serve_demo(args)


def cmd_mcp(args: argparse.Namespace) -> int:
    from mnemoql.web.mcp.stdio import run

    flags = {"space": args.space, "locale": args.locale, "read_only": args.read_only or None}
    settings = _settings(args, mcp={k: v for k, v in flags.items() if v is not None})
    return run(settings, args.log_level)


def cmd_neo4j(args: argparse.Namespace) -> int:
    from mnemoql.engine.store.neo4j.managed import main as managed_main

    settings = _settings(args)
    home = Path(args.home) if args.home else settings.data_dir / "neo4j"
    return managed_main([args.action, "--home", str(home)])


COMMANDS: dict[str, Command] = {
    "serve": cmd_serve,
    "import": cmd_import,
    "demo": cmd_demo,
    "export": cmd_export,
    "restore": cmd_restore,
    "mcp": cmd_mcp,
    "revectorize": cmd_revectorize,
    "neo4j": cmd_neo4j,
}


def main(argv: list[str] | None = None) -> int:
    """Run one command. Whatever stops it early is one line on stderr and exit code 2 (a
    file that cannot be read or written, a store that cannot be reached, bad settings),
    never a traceback; a command that ran but met errors on the way exits with 1."""
    args = build_parser(COMMANDS).parse_args(argv)
    locale = configured_locale()  # MNEMOQL_LOCALE: the language of these lines
    try:
        code: int = args.func(args)
    except MnemoError as exc:
        shown = mask_text(exc.text(locale))
        print(f"mnemoql {args.command}: {exc.code}: {shown}", file=sys.stderr)
        return 2
    except OSError as exc:
        fault = storage_fault(exc)  # a full disk has its code, as in the service
        shown = f"{fault.code}: {fault.text(locale)}" if fault is not None else _os_error(exc)
        print(f"mnemoql {args.command}: {shown}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mnemoql {args.command}: {message('cli.interrupted', locale)}", file=sys.stderr)
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
