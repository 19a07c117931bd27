"""Parsed and validated documents, kept for the next request with the same text.

Agents send a handful of query documents over and over with different variables (bench.load's
searchers send one search document). Parsing and validating it is the same work every time and
costs milliseconds of event-loop time per request: neither step reads the variables, the token
or the context, only the text and the schema with its limits, which ``build_schema`` fixes. So
each schema keeps the newest ``size`` documents that parsed and validated without an error,
keyed by their text (and the parse options), and a request with such a text skips both steps.
A document that fails either step is not kept: it is parsed and validated again every time, so
its errors are exactly what they are without the cache.

strawberry's ``ParserCache`` + ``ValidationCache`` do not fit: ``ValidationCache`` keys on the
rule classes, and ``QueryDepthLimiter`` / ``MaxAliasesLimiter`` make new classes for every
request (the extensions are built per request), so it would never hit.

A kept ``DocumentNode`` is shared by concurrent requests; graphql-core's execution and our
extensions only read it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

from graphql import DocumentNode
from strawberry.extensions import SchemaExtension

DEFAULT_SIZE = 256
# Longer texts are not kept: a few large documents must not hold megabytes.
MAX_CHARS = 20_000


def _key(query: str, options: Mapping[str, Any]) -> tuple[str, tuple[tuple[str, Any], ...]]:
    return query, tuple(sorted(options.items()))


class DocumentCache:
    """The newest ``size`` valid documents of one schema, least recently used out first."""

    def __init__(self, size: int = DEFAULT_SIZE, max_chars: int = MAX_CHARS) -> None:
        self.size = size
        self.max_chars = max_chars
        self._docs: OrderedDict[tuple[str, Any], DocumentNode] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._docs)

    def get(self, query: str, options: Mapping[str, Any]) -> DocumentNode | None:
        key = _key(query, options)
        doc = self._docs.get(key)
        if doc is None:
            self.misses += 1
            return None
        self._docs.move_to_end(key)
        self.hits += 1
        return doc

    def put(self, query: str, options: Mapping[str, Any], doc: DocumentNode) -> None:
        if self.size <= 0 or len(query) > self.max_chars:
            return
        key = _key(query, options)
        self._docs[key] = doc
        self._docs.move_to_end(key)
        while len(self._docs) > self.size:
            self._docs.popitem(last=False)


def cached_documents(cache: DocumentCache) -> type[SchemaExtension]:
    """The extension that reads and fills ``cache`` (built per request, like all of them)."""

    class CachedDocuments(SchemaExtension):
        """Skips parsing and validation for a text that parsed and validated before."""

        def __init__(self) -> None:
            self.hit = False

        def on_parse(self) -> Iterator[None]:
            ctx = self.execution_context
            if ctx.graphql_document is None and ctx.query:
                doc = cache.get(ctx.query, ctx.parse_options)
                if doc is not None:
                    ctx.graphql_document = doc  # strawberry does not parse a set document
                    self.hit = True
            yield

        def on_validate(self) -> Iterator[None]:
            ctx = self.execution_context
            if self.hit and ctx.pre_execution_errors is None:
                ctx.pre_execution_errors = []  # validated when it was kept: no errors
            yield
            if (
                not self.hit
                and ctx.query
                and ctx.graphql_document is not None
                and ctx.pre_execution_errors == []
            ):
                cache.put(ctx.query, ctx.parse_options, ctx.graphql_document)

    return CachedDocuments
