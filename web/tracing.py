"""OpenTelemetry traces, an optional extra: ``pip install 'mnemoql[otel]'`` and
``MNEMOQL_TELEMETRY__TRACES=1``.

Off (the default), nothing of OpenTelemetry is imported by this module and every hook below is
a no-op. On, ``start`` installs a tracer provider whose exporter the standard variables pick:
``OTEL_TRACES_EXPORTER`` (``otlp``, the default, over HTTP/protobuf to
``OTEL_EXPORTER_OTLP_ENDPOINT``; ``console``; ``none``), ``OTEL_SERVICE_NAME`` (default
``mnemoql``) and ``OTEL_RESOURCE_ATTRIBUTES``. The spans:

- ``<METHOD> <route>``: each HTTP request (server kind; continues a caller's ``traceparent``),
  with its request id, status, GraphQL operation and error codes;
- ``embedding.embed``: each call of the embedding model (how many texts, query or passage);
- ``store.<method>``: each call of the store, ``store.route_pool`` being the retrieval routes
  (the vector routes and BM25, one call);
- the MCP SDK's own spans for each tool call (it uses the same provider).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from starlette.types import Scope

if TYPE_CHECKING:  # OpenTelemetry is an optional extra: only its names here
    from opentelemetry.trace import Span, Tracer

    from mnemoql.engine.providers.base import Embedder

log = logging.getLogger("mnemoql.tracing")

INSTALL = "pip install 'mnemoql[otel]'"
_tracer: Tracer | None = None  # set by start(): tracing is on
T = TypeVar("T")
E = TypeVar("E", bound="Embedder")


class TracingUnavailable(RuntimeError):
    """Tracing is asked for but OpenTelemetry's SDK is not installed."""


def available() -> bool:
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        return False
    return True


def start() -> Callable[[], None]:
    """Install the tracer provider (once per process); returns what flushes and stops it.

    Raises:
        TracingUnavailable: the ``otel`` extra is not installed.
    """
    global _tracer
    if not available():
        raise TracingUnavailable(
            f"MNEMOQL_TELEMETRY__TRACES is on but OpenTelemetry is not installed: {INSTALL}"
        )
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "mnemoql"}
    provider = TracerProvider(resource=Resource.create(attributes))
    exporter_name = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if exporter_name == "console":
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    elif exporter_name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    elif exporter_name != "none":
        log.warning("OTEL_TRACES_EXPORTER=%s is not supported here (otlp, console, none): "
                    "no spans leave the process", exporter_name)  # fmt: skip
    trace.set_tracer_provider(provider)
    _tracer = trace.get_tracer("mnemoql")

    def stop() -> None:
        global _tracer
        _tracer = None
        provider.shutdown()  # flushes what the batch processor holds

    return stop


def enabled() -> bool:
    return _tracer is not None


@contextlib.contextmanager
def request_span(scope: Scope, route: str, request_id: str) -> Iterator[Span | None]:
    """The span of one HTTP request (None when tracing is off)."""
    if _tracer is None:
        yield None
        return
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    carrier = {bytes(k).decode("latin-1"): bytes(v).decode("latin-1")
               for k, v in scope.get("headers", [])}  # fmt: skip
    method = scope.get("method", "GET")
    with _tracer.start_as_current_span(
        f"{method} {route}",
        context=extract(carrier),
        kind=SpanKind.SERVER,
        attributes={
            "http.request.method": method,
            "http.route": route,
            "url.path": scope.get("path", ""),
            "mnemoql.request_id": request_id,
        },
    ) as span:
        yield span


def finish_request(span: Span | None, status: int, operation: str | None, codes: list[str]) -> None:
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("http.response.status_code", status)
    if operation is not None:
        span.set_attribute("mnemoql.operation", operation)
    if codes:
        span.set_attribute("mnemoql.error_codes", codes)
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR))


def _traced(
    name: str, method: Callable[..., Awaitable[Any]], describe: Callable[..., dict[str, Any]]
) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(method)
    async def call(*args: Any, **kwargs: Any) -> Any:
        if _tracer is None:
            return await method(*args, **kwargs)
        with _tracer.start_as_current_span(name, attributes=describe(*args, **kwargs)):
            return await method(*args, **kwargs)

    return call


def _no_attributes(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return {}


def _embedding(texts: Any = (), kind: str = "passage", *args: Any, **kwargs: Any) -> dict[str, Any]:
    return {"mnemoql.texts": len(texts), "mnemoql.kind": kind}


def instrument_store(store: T) -> T:
    """``store`` with a span around each of its public coroutine methods (when tracing is
    on; the same object either way)."""
    if _tracer is None:
        return store
    for name, _ in inspect.getmembers(type(store), inspect.iscoroutinefunction):
        if not name.startswith("_"):
            _patch(store, name, _traced(f"store.{name}", getattr(store, name), _no_attributes))
    return store


def instrument_embedder(embedder: E) -> E:
    """``embedder`` with a span around ``embed`` (when tracing is on)."""
    if _tracer is not None:
        _patch(embedder, "embed", _traced("embedding.embed", embedder.embed, _embedding))
    return embedder


def _patch(target: object, name: str, wrapped: object) -> None:
    try:
        setattr(target, name, wrapped)
    except AttributeError:  # __slots__: that object goes untraced
        log.warning("tracing: cannot trace %s.%s", type(target).__name__, name)
