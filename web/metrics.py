"""Prometheus metrics at ``/metrics`` (``prometheus-client``'s text format).

What there is (every label from a bounded set, whatever clients send):

- ``mnemoql_http_requests_total{route, method, status}`` and
  ``mnemoql_http_request_duration_seconds{route}``: every HTTP request (``web.observe``);
- ``mnemoql_operations_total{transport, operation, code}`` and
  ``mnemoql_operation_duration_seconds{transport, operation}``: GraphQL operations by type and
  first root field (``query search``) and MCP tool calls (``memory_search``), by error code
  (``OK`` when none: the first error's code otherwise);
- ``mnemoql_embedder_queue_depth{kind}``: embedding jobs waiting for the local model's workers
  (query / passage; 0 for a remote or hashing embedder);
- ``mnemoql_store_items{space, kind}``: events, persons, concepts, locations, chunks and
  relations of each open memory space, counted at scrape time;
- the process's CPU, memory and file descriptors, and Python's GC.

Who may read it: everyone when the service is open (no tokens, loopback only); with tokens on,
only a token with the ``metrics`` scope (a read or write token is refused with 403: the counts
cover every space). The metrics are per process; nothing is created until first used.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mnemoql.engine.errors import MnemoError
from mnemoql.web.auth import TokenTable, bearer

if TYPE_CHECKING:
    from mnemoql.engine.providers.base import Embedder
    from mnemoql.engine.spaces import Spaces

log = logging.getLogger("mnemoql.metrics")

ROUTES = frozenset({"/graphql", "/mcp", "/healthz", "/readyz", "/explorer", "/atlas", "/metrics"})
METHODS = frozenset({"GET", "POST", "DELETE", "OPTIONS", "HEAD", "PUT", "PATCH"})
SCOPE = "metrics"
# from a cached health check (ms) to a save the extraction model answers slowly (a minute)
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
STORE_COUNT_TIMEOUT_S = 5.0



@dataclass(frozen=True, slots=True)
class _Metrics:
    registry: CollectorRegistry
    http_requests: Counter
    http_seconds: Histogram
    operations: Counter
    operation_seconds: Histogram
    embedder_queue: Gauge
    store_items: Gauge


@functools.cache
def _metrics() -> _Metrics:
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return _Metrics(
        registry,
        Counter(
            "mnemoql_http_requests",
            "HTTP requests by route, method and status.",
            ["route", "method", "status"],
            registry=registry,
        ),
        Histogram(
            "mnemoql_http_request_duration_seconds",
            "Time from a request's arrival to the end of its answer, by route.",
            ["route"],
            buckets=BUCKETS,
            registry=registry,
        ),
        Counter(
            "mnemoql_operations",
            "GraphQL operations (type and first root field) and MCP tool calls, by error code "
            "(OK when none).",
            ["transport", "operation", "code"],
            registry=registry,
        ),
        Histogram(
            "mnemoql_operation_duration_seconds",
            "Time of GraphQL operations and MCP tool calls.",
            ["transport", "operation"],
            buckets=BUCKETS,
            registry=registry,
        ),
        Gauge(
            "mnemoql_embedder_queue_depth",
            "Embedding jobs waiting for a worker of the local model, by kind.",
            ["kind"],
            registry=registry,
        ),
        Gauge(
            "mnemoql_store_items",
            "What each open memory space holds, by kind (counted at scrape time).",
            ["space", "kind"],
            registry=registry,
        ),
    )


def http_request(route: str, method: str, status: int, seconds: float) -> None:
    m = _metrics()
    method = method if method in METHODS else "other"
    m.http_requests.labels(route, method, str(status)).inc()
    m.http_seconds.labels(route).observe(seconds)


def operation(transport: str, name: str, code: str, seconds: float) -> None:
    """One GraphQL operation or MCP tool call, and how it ended."""
    m = _metrics()
    m.operations.labels(transport, name, code).inc()
    m.operation_seconds.labels(transport, name).observe(seconds)


async def _store_items(spaces: Spaces) -> dict[tuple[str, str], int]:
    items: dict[tuple[str, str], int] = {}
    for space in spaces.names:
        try:
            memory = await spaces.get(space)
            async with asyncio.timeout(STORE_COUNT_TIMEOUT_S):
                counts = await memory.store.counts()
        except (MnemoError, TimeoutError) as exc:
            log.warning("metrics: cannot count the store of space %s: %s", space, exc)
            continue
        for kind in ("events", "persons", "concepts", "locations", "chunks", "relations"):
            items[(space, kind)] = int(getattr(counts, kind))
    return items


async def exposition(spaces: Spaces | None, embedder: Embedder | None) -> bytes:
    """The text format, with the gauges read now."""
    m = _metrics()
    depth = getattr(embedder, "queue_depth", None)
    waiting = depth() if callable(depth) else {}
    for kind in ("query", "passage"):
        m.embedder_queue.labels(kind).set(waiting.get(kind, 0))
    items = await _store_items(spaces) if spaces is not None else {}
    m.store_items.clear()  # a space closed since the last scrape is gone
    for (space, kind), value in items.items():
        m.store_items.labels(space, kind).set(value)
    return generate_latest(m.registry)


def _refusal(status: int, message: str, code: str) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="mnemoql"'} if status == 401 else None
    body = {"errors": [{"message": message, "extensions": {"code": code}}]}
    return JSONResponse(body, status_code=status, headers=headers)


def endpoint(tokens: TokenTable) -> Callable[[Request], Awaitable[Response]]:
    """The ``/metrics`` handler: see the module docstring for who may read it."""

    async def metrics_page(request: Request) -> Response:
        if not tokens.open:
            grant = tokens.lookup(bearer(request.headers.get("authorization")))
            if grant is None:
                return _refusal(
                    401,
                    "missing or invalid bearer token: /metrics needs a token with the "
                    "'metrics' scope",
                    "UNAUTHENTICATED",
                )
            if SCOPE not in grant.scopes:
                return _refusal(
                    403,
                    "this token may not read /metrics: it needs the 'metrics' scope (the "
                    "counts cover every space)",
                    "FORBIDDEN",
                )
        state = request.app.state
        memory = getattr(state, "memory", None)
        embedder = memory.providers.embedder if memory is not None else None
        body = await exposition(getattr(state, "spaces", None), embedder)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return metrics_page
