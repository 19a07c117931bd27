"""Operating a real ``mnemoql serve``: request ids on every response and log line, JSON log
lines, Prometheus ``/metrics`` (who may read it, what it counts) read with prometheus-client's
own parser, and OpenTelemetry spans when the ``otel`` extra is on (and nothing of it when off).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.web.mcp_support import http_client, ok
from tests.web.served import ALICE, ALICE_READ, BOB, ROOT, TOKENS, Served, served

METRICS = "metrics-scraper-token-0123456789"
WITH_SCRAPER = [*TOKENS, {"token": METRICS, "space": "alice", "scopes": ["metrics"]}]
SAVE = "mutation($c: String!) { save(input: {content: $c}) { eventIds } }"
SEARCH = "query Find($q: String!) { search(query: $q) { items { eventId } } }"
HEX32 = re.compile(r"[0-9a-f]{32}")


@contextlib.contextmanager
def serving(tmp: Path, env: dict[str, str], tokens: list[dict[str, Any]] | None = None) -> Iterator[Served]:
    """A real server with extra environment (the log format, telemetry)."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        with served(tmp / "data", tokens=tokens) as s:
            mp.undo()
            yield s


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("ops"), {"MNEMOQL_LOG__FORMAT": "json"}, WITH_SCRAPER) as s:
        yield s


def post(server: Served, query: str, token: str = ALICE, headers: dict[str, str] | None = None,
         **variables: Any) -> httpx.Response:  # fmt: skip
    return httpx.post(
        server.graphql,
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {token}", **(headers or {})},
        timeout=60,
    )


def test_every_response_names_its_request(server: Served) -> None:
    answers = [
        httpx.get(server.url + "/healthz"),
        httpx.get(server.url + "/nowhere"),
        post(server, "{ __typename }", token="not-a-token-at-all"),  # a 401
        post(server, "{ nosuchfield }"),
        httpx.post(server.url + "/mcp", json={}, headers={"accept": "application/json"}),
    ]
    ids = [r.headers.get("x-request-id") for r in answers]
    assert all(i and HEX32.fullmatch(i) for i in ids), ids
    assert len(set(ids)) == len(ids)
    given = "req-2026.12.05:trace/1+a=b"
    assert httpx.get(server.url + "/healthz", headers={"x-request-id": given}).headers["x-request-id"] == given
    for insane in ("x" * 129, "two words", "é"):
        got = httpx.get(server.url + "/healthz", headers={"x-request-id": insane.encode()})
        assert HEX32.fullmatch(got.headers["x-request-id"]), insane


def test_json_log_lines_carry_the_request_id(server: Served) -> None:
    r = post(server, "{ __typename }", token="not-a-token-at-all", headers={"x-request-id": "trace-me-42"})
    assert r.status_code == 401 and r.headers["x-request-id"] == "trace-me-42"
    lines = [json.loads(line) for line in server.output().splitlines() if line.strip()]  # JSON only
    mine = [line for line in lines if line["request_id"] == "trace-me-42"]
    # the service's own line (the refused token) and uvicorn's access line
    assert {line["logger"] for line in mine} == {"mnemoql.auth", "uvicorn.access"}, mine
    access = next(line for line in mine if line["logger"] == "uvicorn.access")
    assert (access["method"], access["path"], access["status"]) == ("POST", "/graphql", 401)
    assert "not-a-token-at-all" not in server.output()
    assert all({"time", "level", "logger", "message", "request_id"} <= line.keys() for line in lines)


def scrape(server: Served, token: str | None = METRICS) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    r = httpx.get(server.url + "/metrics", headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_need_the_metrics_scope_when_tokens_are_on(server: Served) -> None:
    assert httpx.get(server.url + "/metrics").status_code == 401
    for token in (ALICE, ALICE_READ, BOB):  # memory tokens: the counts cover every space
        r = httpx.get(server.url + "/metrics", headers={"authorization": f"Bearer {token}"})
        assert r.status_code == 403 and r.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    # a metrics token reads nothing of a memory
    refused = post(server, "{ memoryIndex { counts { events } } }", token=METRICS).json()
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_metrics_count_operations_codes_stores_and_the_embedder(server: Served) -> None:
    before = scrape(server)
    for n in range(3):
        assert post(server, SAVE, c=f"The griffin number {n} guards the gate.").status_code == 200
    assert post(server, SEARCH, q="griffin").status_code == 200
    post(server, '{ read(eventId: "no_such_event") { text } }')
    post(server, "{ nosuchfield }")
    async with http_client(server.url, ALICE) as client:
        ok(await client.call_tool("memory_search", {"query": "griffin"}))
        await client.call_tool("memory_activate", {"lines": ["griffin"], "limit": 99})
    after = scrape(server)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    ops = "mnemoql_operations_total"
    assert grew(ops, transport="graphql", operation="mutation save", code="OK") == 3
    assert grew(ops, transport="graphql", operation="query search", code="OK") == 1
    assert grew(ops, transport="graphql", operation="query read", code="NOT_FOUND") == 1
    assert grew(ops, transport="graphql", operation="(not run)", code="GRAPHQL_VALIDATION_FAILED") == 1
    assert grew(ops, transport="mcp", operation="memory_search", code="OK") == 1
    assert grew(ops, transport="mcp", operation="memory_activate", code="OUT_OF_RANGE") == 1
    assert grew("mnemoql_operation_duration_seconds_count", transport="graphql", operation="mutation save") == 3
    assert grew("mnemoql_http_requests_total", route="/graphql", method="POST", status="200") >= 6
    assert grew("mnemoql_http_request_duration_seconds_count", route="/graphql") >= 6
    assert value(after, "mnemoql_store_items", space="alice", kind="events") == value(
        before, "mnemoql_store_items", space="alice", kind="events"
    ) + 3
    assert ("mnemoql_embedder_queue_depth", (("kind", "query"),)) in after
    assert value(after, "process_resident_memory_bytes") > 0
    # nothing a client sends becomes a label: only the service's routes and fields
    labels = {v for (_, pairs) in after for _, v in pairs}
    assert "nosuchfield" not in " ".join(labels) and "/nowhere" not in labels


def spans_of(output: str) -> list[dict[str, Any]]:
    """The spans OpenTelemetry's console exporter printed (indented JSON objects)."""
    decoder, spans, at = json.JSONDecoder(), [], 0
    while (start := output.find("{\n", at)) != -1:
        try:
            span, at = decoder.raw_decode(output, start)
        except json.JSONDecodeError:
            at = start + 1
            continue
        if isinstance(span, dict) and "context" in span:
            spans.append(span)
    return spans


def test_traces_follow_a_request_through_embedding_routes_and_store(tmp_path: Path) -> None:
    env = {"MNEMOQL_TELEMETRY__TRACES": "1", "OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "mnemoql-test"}
    caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    with serving(tmp_path, env) as server:
        assert post(server, SAVE, c="The wyvern sleeps under the bridge.").status_code == 200
        r = post(server, SEARCH, headers={"traceparent": f"00-{caller_trace}-00f067aa0ba902b7-01"}, q="wyvern")
        assert r.json()["data"]["search"]["items"]
        rid = r.headers["x-request-id"]
    spans = spans_of(server.log.read_text(encoding="utf-8"))  # stopped: the spans are flushed
    request = next(s for s in spans if s["attributes"].get("mnemoql.request_id") == rid)
    assert request["name"] == "POST /graphql" and request["kind"] == "SpanKind.SERVER"
    assert request["attributes"]["mnemoql.operation"] == "query search"
    assert request["attributes"]["http.response.status_code"] == 200
    assert request["context"]["trace_id"] == "0x" + caller_trace  # it continues the caller's trace
    assert request["resource"]["attributes"]["service.name"] == "mnemoql-test"
    inside = {s["name"] for s in spans if s["context"]["trace_id"] == request["context"]["trace_id"]}
    assert {"embedding.embed", "store.route_pool"} <= inside, inside


def test_tracing_costs_nothing_when_off_and_says_what_to_install(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from starlette.testclient import TestClient\n"
        "from mnemoql.engine.config import load_settings\n"
        "from mnemoql.web.app import create_app\n"
        f"settings = load_settings({{'MNEMOQL_DATA_DIR': {str(tmp_path)!r}, "
        "'MNEMOQL_EMBEDDING__PROVIDER': 'hashing'})\n"
        "with TestClient(create_app(settings), base_url='http://127.0.0.1') as c:\n"
        "    assert c.post('/graphql', json={'query': '{ memoryIndex { counts { events } } }'}).status_code == 200\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"
    # asked for, without the extra: one line and exit 2 before anything listens
    blocked = "import sys; sys.modules['opentelemetry.sdk'] = None\nfrom mnemoql.web.cli import main\nsys.exit(main(['serve']))"
    env = {**os.environ, "MNEMOQL_TELEMETRY__TRACES": "1", "MNEMOQL_DATA_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0, out.stderr
    assert "pip install 'mnemoql[otel]'" in out.stderr


async def test_an_escaped_exception_is_logged_and_answered_with_the_request_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mnemoql.web.observe import Observe, request_id

    seen: list[str | None] = []

    async def broken(scope: Any, receive: Any, send: Any) -> None:
        seen.append(request_id())
        raise RuntimeError("a bug")

    transport = httpx.ASGITransport(app=Observe(broken), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
        r = await client.post("/graphql", json={}, headers={"x-request-id": "bug-7"})
    assert r.status_code == 500 and r.headers["x-request-id"] == "bug-7" and seen == ["bug-7"]
    assert r.json()["errors"][0]["extensions"]["code"] == "INTERNAL_SERVER_ERROR"
    assert "a bug" not in r.text
    failed = [rec for rec in caplog.records if rec.getMessage() == "POST /graphql failed"]
    assert failed and failed[0].exc_info is not None


def test_text_lines_end_with_the_request_id() -> None:
    import logging

    from uvicorn.logging import DefaultFormatter

    from mnemoql.web import observe
    from mnemoql.web.logs import Hygiene, serve_log_config

    formatter = DefaultFormatter(fmt=serve_log_config("info")["formatters"]["service"]["fmt"])

    def line() -> str:
        record = logging.LogRecord("mnemoql", logging.INFO, __file__, 0, "saved %d", (3,), None)
        assert Hygiene().filter(record)
        return formatter.format(record)

    assert line().endswith("mnemoql: saved 3")  # outside a request
    token = observe._current.set(observe.Observation("req-9"))
    try:
        assert line().endswith("mnemoql: saved 3 [req req-9]")
    finally:
        observe._current.reset(token)
