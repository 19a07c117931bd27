"""A real ``mnemoql serve`` process -- the console script ``pip install -e .`` put beside the
interpreter, as the README starts it -- on a free loopback port with a temporary data dir,
and the helpers the third-party-client tests share (tokens, node tooling)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
JS = Path(__file__).resolve().parent / "js"

ALICE = "alice-write-token-0123456789"
ALICE_READ = "alice-read-token-0123456789"
BOB = "bob-write-token-0123456789"
TOKENS = [
    {"token": ALICE, "space": "alice", "scopes": ["read", "write"]},
    {"token": ALICE_READ, "space": "alice", "scopes": ["read"]},
    {"token": BOB, "space": "bob", "scopes": ["read", "write"]},
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def mnemoql_command() -> Path:
    """The ``mnemoql`` console script of the environment running the tests."""
    script = Path(sys.executable).parent / "mnemoql"
    if not script.exists():
        pytest.fail(f"{script} is missing: install the project with pip install -e .")
    return script


class Served:
    """One running ``mnemoql serve``; ``url`` is its base URL."""

    def __init__(
        self,
        data_dir: Path,
        *,
        tokens: list[dict[str, Any]] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data_dir.parent / f"serve-{self.port}.log"
        environ = {
            **os.environ,
            "MNEMOQL_DATA_DIR": str(data_dir),
            "MNEMOQL_PORT": str(self.port),
            "MNEMOQL_EMBEDDING__PROVIDER": "hashing",
        }
        environ.pop("DEEPSEEK_API_KEY", None)
        if tokens:
            environ["MNEMOQL_AUTH__TOKENS"] = json.dumps(tokens)
        environ.update(env or {})
        self._out = self.log.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [str(mnemoql_command()), "serve"],
            cwd=data_dir.parent,
            env=environ,
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    @property
    def graphql(self) -> str:
        return f"{self.url}/graphql"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/graphql"

    def wait_ready(self, deadline_s: float = 120.0) -> None:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"mnemoql serve exited:\n{self.output()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/readyz", timeout=5).status_code == 200:
                    return
            time.sleep(0.05)
        raise AssertionError(f"mnemoql serve was not ready in {deadline_s} s:\n{self.output()}")

    def gql(self, query: str, token: str | None = None, **variables: Any) -> dict[str, Any]:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        r = httpx.post(
            self.graphql, json={"query": query, "variables": variables}, headers=headers, timeout=60
        )
        body: dict[str, Any] = r.json()
        assert r.status_code == 200 and not body.get("errors"), body
        data: dict[str, Any] = body["data"]
        return data

    def output(self) -> str:
        self._out.flush()
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()


@contextlib.contextmanager
def served(data_dir: Path, **kwargs: Any) -> Iterator[Served]:
    server = Served(data_dir, **kwargs)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def js_required() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("MNEMOQL_REQUIRE_JS") == "1"


def need_js(*packages: str) -> str:
    """The node binary, once ``npm ci`` has installed ``packages`` in tests/web/js; skips (or,
    in CI, fails) otherwise."""
    node = shutil.which("node")
    missing = [p for p in packages if not (JS / "node_modules" / p / "package.json").exists()]
    if node and not missing:
        return node
    reason = (
        "needs node and `npm ci` in tests/web/js"
        + (f" (missing: {', '.join(missing)})" if missing else " (no node on PATH)")
    )
    if js_required():
        pytest.fail(reason + " (required: CI=true or MNEMOQL_REQUIRE_JS=1)", pytrace=False)
    pytest.skip(reason)
