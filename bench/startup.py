"""Start-up time of ``mnemoql serve`` on the embedded store, from spawn to answers.

Every run starts ``python -m mnemoql.web.cli serve`` (what the ``mnemoql`` script runs) on an
empty data directory and a free loopback port, with no model keys (local embedder, offline
extractor), and polls ``/healthz`` every 10 ms, then ``/readyz`` every 50 ms (``--poll-ms``;
answering polls costs a server that is still loading, so a tighter interval delays what it
measures):

- *import*: ``python -c "import mnemoql.web.app"`` alone (a separate process, same bytecode state);
- */healthz*, */readyz*: time from spawn to the first 200 of each;
- *first search*: the request time of the first ``search`` right after /readyz (it embeds the
  query, so it pays for loading the model when nobody loaded it yet), then a *second search*;
- *first save*: the request time of the first ``save``, sent ``--save-delay`` seconds (default
  2) after the second search (offline extraction: jieba loads its dictionary on first use).

Bytecode states (``--modes``):

- ``warm``: a private ``PYTHONPYCACHEPREFIX`` filled by one discarded run (a second start);
- ``cold-project``: the project's packages copied without bytecode onto ``PYTHONPATH`` and
  ``PYTHONDONTWRITEBYTECODE=1``; site-packages keep the bytecode pip wrote. This is the first start
  after ``pip install -e .`` (and every start where bytecode is never written);
- ``cold-all``: an empty ``PYTHONPYCACHEPREFIX`` per run: the standard library, site-packages and
  the project all compile from source (an upper bound; pip normally compiles site-packages).

The OS page cache is not dropped (that needs root and disturbs everything else on the machine),
so "cold" here is cold bytecode, not cold disk. ``--tree DIR`` (repeatable) measures other
checkouts too (each needs the packages above, e.g. ``git archive <rev> engine resolvers schema
web prompts | tar -x -C DIR``); runs alternate between the trees, so a before/after comparison
sees the same machine. Nothing is asserted; the medians are printed as a markdown table
(``--out`` also writes it)::

    python -m bench.startup --runs 5 --out bench/results/startup.md
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import ROOT, command_line, git_rev, load_average, machine_line, table

HEALTH_POLL_S = 0.01
PACKAGES = ("engine", "resolvers", "schema", "web", "prompts")
MODES = ("warm", "cold-project", "cold-all")
SEARCH = '{ search(query: "where did Alice move?", session: "startup") { items { eventId } } }'
SEARCH_AGAIN = '{ search(query: "Neo4j migration", session: "startup") { items { eventId } } }'
SAVE = (
    'mutation { save(input: {content: "Alice: I moved to Berlin last week to work on the '
    'Neo4j migration. 张三在北京的办公室见了李四。"}) { eventIds } }'
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def status(port: int, method: str, path: str, body: str | None = None) -> tuple[int | None, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {"content-type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    except OSError:
        return None, ""
    finally:
        conn.close()


def wait_for(
    port: int, path: str, t0: float, proc: subprocess.Popen[bytes], limit: float, poll_s: float
) -> float:
    """Seconds from ``t0`` to the first 200 on ``path``."""
    while time.perf_counter() - t0 < limit:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before {path} answered")
        code, _ = status(port, "GET", path)
        if code == 200:
            return time.perf_counter() - t0
        time.sleep(poll_s)
    raise RuntimeError(f"{path} did not answer 200 within {limit} s")


def stop(proc: subprocess.Popen[bytes], grace_s: float = 120.0) -> None:
    """Stop a served process as Ctrl-C does; killed if it has not exited within ``grace_s``."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def timed_post(port: int, query: str) -> float:
    t = time.perf_counter()
    code, text = status(port, "POST", "/graphql", json.dumps({"query": query}))
    took = time.perf_counter() - t
    if code != 200 or '"errors"' in text:
        raise RuntimeError(f"{query[:30]}... answered {code}: {text[:300]}")
    return took


def base_env() -> dict[str, str]:
    """This environment without settings or keys of ours, so every run is the offline default."""
    drop = ("MNEMOQL_", "DSH_NEO4J_MEMORY_", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    for key in ("DEEPSEEK_API_KEY", "EMBEDDING_API_KEY", "TYPESAFE_API_KEY", "PYTHONPATH"):
        env.pop(key, None)
    return env


def copy_project(tree: Path, dest: Path) -> Path:
    """The project's packages without bytecode (and without the web vendor build tree)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "vendor-build", "node_modules")
    for package in PACKAGES:
        shutil.copytree(tree / package, dest / package, ignore=ignore)
    return dest


def mode_env(mode: str, tree: Path, work: Path) -> Callable[[], dict[str, str]]:
    """A function returning the environment of one run of ``tree`` in ``mode``."""
    env = base_env()
    env["PYTHONPATH"] = str(tree)  # this checkout, whatever the installed one is
    if mode == "warm":
        env["PYTHONPYCACHEPREFIX"] = str(work / "pyc-warm")
        return lambda: dict(env)
    if mode == "cold-project":
        env["PYTHONPATH"] = str(copy_project(tree, work / "src"))
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return lambda: dict(env)
    if mode == "cold-all":
        counter = iter(range(1_000_000))

        def fresh() -> dict[str, str]:
            prefix = work / f"pyc-empty-{next(counter)}"
            prefix.mkdir()
            return {**env, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}

        return fresh
    raise ValueError(f"unknown mode {mode!r}")


def import_time(env: dict[str, str]) -> float:
    t = time.perf_counter()
    cmd = [sys.executable, "-c", "import mnemoql.web.app"]
    subprocess.run(cmd, env=env, check=True, cwd=tempfile.gettempdir())
    return time.perf_counter() - t


def serve_once(
    env: dict[str, str], work: Path, args: argparse.Namespace, importtime: bool = False
) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(dir=work, prefix="data-"))
    port = free_port()
    log = (work / f"serve-{port}.log").open("w+b")
    flags = ["-X", "importtime"] if importtime else []
    cmd = [
        sys.executable,
        *flags,
        "-m",
        "mnemoql.web.cli",
        "serve",
        "--data-dir",
        str(data),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=log, cwd=tempfile.gettempdir()
    )
    try:
        poll_s, limit = args.poll_ms / 1000, args.limit
        out: dict[str, Any] = {
            "healthz": wait_for(port, "/healthz", t0, proc, limit, HEALTH_POLL_S)
        }
        out["readyz"] = wait_for(port, "/readyz", t0, proc, limit, poll_s)
        out["search"] = timed_post(port, SEARCH)
        out["search2"] = timed_post(port, SEARCH_AGAIN)
        time.sleep(args.save_delay)
        out["save"] = timed_post(port, SAVE)
        out["search_at"] = out["readyz"] + out["search"]
    except Exception:
        log.seek(0)
        sys.stderr.write(log.read().decode("utf-8", "replace")[-3000:])
        raise
    finally:
        stop(proc, 20)
        log.seek(0)
        out_log = log.read().decode("utf-8", "replace")
        log.close()
        shutil.rmtree(data, ignore_errors=True)
    if importtime:
        out["importtime"] = out_log
    return out


def top_imports(raw: str, n: int) -> list[tuple[str, float]]:
    """The ``n`` costliest top-level imports (cumulative ms) of one ``-X importtime`` log."""
    rows: list[tuple[int, str, float]] = []
    for line in raw.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, cumulative, name = line.split(":", 1)[1].split("|")
        rows.append((len(name) - len(name.lstrip()), name.strip(), int(cumulative) / 1000))
    top = min((depth for depth, _, _ in rows), default=0)
    firsts = [(name, ms) for depth, name, ms in rows if depth == top]
    return sorted(firsts, key=lambda r: -r[1])[:n]


def tree_label(tree: Path) -> str:
    return "this checkout" if tree == ROOT else f"`{tree}`"


def diff(ours: list[dict[str, Any]], theirs: list[dict[str, Any]], key: str) -> str:
    d = [(a[key] - b[key]) * 1000 for a, b in zip(ours, theirs, strict=True)]
    return f"{statistics.median(d):+,.0f} ({min(d):+,.0f}…{max(d):+,.0f})"


def ms(values: list[float]) -> str:
    med = statistics.median(values) * 1000
    return f"{med:,.0f} ({min(values) * 1000:,.0f}-{max(values) * 1000:,.0f})"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=5, help="runs per mode (median reported)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES))
    ap.add_argument("--limit", type=float, default=120.0, help="seconds to wait for an answer")
    ap.add_argument(
        "--poll-ms",
        type=float,
        default=50.0,
        help="interval of the /readyz polls (default 50; /healthz is polled every 10 ms)",
    )
    ap.add_argument(
        "--save-delay",
        type=float,
        default=2.0,
        help="seconds between the second search and the first save (default 2)",
    )
    ap.add_argument("--out", help="also write the markdown here")
    ap.add_argument(
        "--tree",
        action="append",
        type=Path,
        help="another checkout to measure beside this one (repeatable)",
    )
    args = ap.parse_args()
    trees = [ROOT, *(t.resolve() for t in args.tree or [])]
    load_at_start = load_average()
    started = time.perf_counter()
    rows: list[list[object]] = []
    paired: list[list[object]] = []
    imports: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="mnemoql-startup-") as tmp:
        for mode in args.modes.split(","):
            envs = []
            for i, tree in enumerate(trees):
                work = Path(tmp) / f"{mode}-{i}"
                work.mkdir()
                env_of = mode_env(mode, tree, work)
                envs.append((tree, work, env_of))
                if mode == "warm":  # fill the bytecode cache; this run is not counted
                    serve_once(env_of(), work, args)
                    if i == 0:
                        log = serve_once(env_of(), work, args, importtime=True)
                        imports = top_imports(log["importtime"], 12)
            runs: list[list[dict[str, Any]]] = [[] for _ in trees]
            for _ in range(args.runs):
                for i, (tree, work, env_of) in enumerate(envs):
                    run = serve_once(env_of(), work, args)
                    run["import"] = import_time(env_of())
                    runs[i].append(run)
                    times = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in run.items())
                    print(f"{mode} {tree}: {times}", file=sys.stderr)
            for i, tree in enumerate(trees[1:], start=1):
                paired.append(
                    [f"{mode}, this checkout − {tree_label(tree)}"]
                    + [diff(runs[0], runs[i], key) for key in ("healthz", "readyz", "save")]
                )
            for i, tree in enumerate(trees):
                label = mode if len(trees) == 1 else f"{mode}, {tree_label(tree)}"
                rows.append(
                    [label]
                    + [
                        ms([r[key] for r in runs[i]])
                        for key in (
                            "import",
                            "healthz",
                            "readyz",
                            "search",
                            "search2",
                            "search_at",
                            "save",
                        )
                    ]
                )
    lines = [
        "# Start-up time of `mnemoql serve` (embedded store, empty data dir)",
        "",
        f"Command: `{command_line()}`",
        "",
        f"Commit {git_rev()}; {machine_line(load_at_start)}; load average at the end "
        f"{load_average()}. {args.runs} runs per mode and tree, median (min-max) in ms; wall time "
        f"{time.perf_counter() - started:.0f} s. No model keys: local embedder, offline "
        f"extractor. /healthz polled every 10 ms, then /readyz every {args.poll_ms:g} ms; the "
        "first save is "
        f"sent {args.save_delay:g} s after the second search. The OS "
        "page cache is warm in every mode (cold = no bytecode).",
        "",
        table(
            [
                "bytecode",
                "import mnemoql.web.app",
                "/healthz 200 after spawn",
                "/readyz 200 after spawn",
                "first search request",
                "second search request",
                "first search answered after spawn",
                "first save request",
            ],
            rows,
        ),
    ]
    if paired:
        lines += [
            "",
            "Paired differences (each run of this checkout minus the run of the other tree made "
            "right after it), median (min…max) in ms:",
            "",
            table(["trees", "/healthz 200", "/readyz 200", "first save request"], paired),
        ]
    if imports:
        lines += [
            "",
            "Costliest top-level imports of one warm start "
            "(`python -X importtime -m mnemoql.web.cli serve`, cumulative ms, "
            "importtime's own overhead included):",
            "",
            table(["module", "ms"], [[f"`{name}`", f"{v:.0f}"] for name, v in imports]),
        ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
