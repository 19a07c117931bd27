"""The ``mnemoql`` command line's arguments: argparse's parser with its one-line refusals
(exit 2), every subcommand and its options, and their checks (``--workers``). The commands
themselves are ``web.cli``'s; it hands them in by name.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import NoReturn

Command = Callable[[argparse.Namespace], int]
"""A subcommand's body: its parsed arguments in, the exit code out."""


class _Parser(argparse.ArgumentParser):
    """argparse with its refusals on one line, as every other refusal of the command:
    ``mnemoql serve: argument --port: invalid int value: 'abc' (see mnemoql serve --help)``
    and exit 2, instead of a usage block first. Subcommands' parsers are of this class too
    (``add_subparsers`` makes them with the parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(commands: Mapping[str, Command]) -> argparse.ArgumentParser:
    """``mnemoql``'s parser; each subcommand's ``func`` is ``commands[its name]``."""
    p = _Parser(prog="mnemoql", description="GraphQL graph memory for LLM agents.")
    p.add_argument("--version", action="version", version=f"mnemoql {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--data-dir", help="where the embedded store keeps its data")
        sp.add_argument("--store", choices=["embedded", "neo4j"], help="which store to use")

    s = sub.add_parser("serve", help="serve GraphQL on 127.0.0.1:8000")
    common(s)
    s.add_argument("--host", help="address to bind (default 127.0.0.1)")
    s.add_argument("--port", type=int, help="port to listen on (default 8000; 0: a free one)")
    s.add_argument(
        "--allow-public",
        action="store_true",
        help="serve a non-loopback address even with no access tokens configured",
    )
    s.add_argument(
        "--workers",
        type=_workers,
        default=1,
        help="processes serving the memory on this port (default 1; see docs/operations.md, "
        "Replicas)",
    )
    s.add_argument("--log-level", default="info")
    s.set_defaults(func=commands["serve"])

    i = sub.add_parser(
        "import",
        help="save every line of a JSON-lines file (a re-run skips the lines saved before)",
    )
    common(i)
    i.add_argument("file")
    i.add_argument("--concurrency", type=int, default=4)
    i.add_argument("--space", default="default", help="the memory space (default: default)")
    i.set_defaults(func=commands["import"])

    d = sub.add_parser("demo", help="load a small sample memory into its own data dir and serve it")
    d.add_argument("--data-dir", help="where the demo memory lives (default: <data dir>/demo)")
    d.add_argument("--port", type=int)
    d.add_argument("--log-level", default="warning")
    d.set_defaults(func=commands["demo"])

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
    x.set_defaults(func=commands["export"])

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
    rs.set_defaults(func=commands["restore"])

    m = sub.add_parser(
        "mcp", help="serve the memory to an agent over MCP on stdin/stdout (for desktop agents)"
    )
    common(m)
    m.add_argument("--space", help="the memory space to serve (default: default)")
    m.add_argument("--read-only", action="store_true", help="refuse memory_save and memory_forget")
    m.add_argument("--locale", choices=["zh", "en"], help="language of the texts (MNEMOQL_LOCALE)")
    m.add_argument("--log-level", default="warning", help="stderr log level (default: warning)")
    m.set_defaults(func=commands["mcp"])

    r = sub.add_parser("revectorize", help="re-embed the whole memory with the configured model")
    common(r)
    r.add_argument("--space", default="default", help="the memory space (default: default)")
    r.set_defaults(func=commands["revectorize"])

    n = sub.add_parser("neo4j", help="a managed local Neo4j: install | start | stop | status")
    common(n)
    n.add_argument("action", choices=["install", "start", "stop", "status"])
    n.add_argument("--home", help="Neo4j home (default: <data-dir>/neo4j)")
    n.set_defaults(func=commands["neo4j"])
    return p


def _version() -> str:
    from mnemoql import __version__

    return __version__


def _workers(text: str) -> int:
    """``--workers``: 1 to 64 processes (argparse prints the refusal and exits with 2)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 1 <= n <= 64:
        raise argparse.ArgumentTypeError(f"{n} is outside 1-64")
    return n
