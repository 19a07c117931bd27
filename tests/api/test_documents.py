"""Kept documents (``resolvers.documents``): a repeated valid text is parsed and validated once,
whatever its variables; invalid texts, the token limit, several operations and the scope check
behave exactly as without the cache."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import strawberry.schema.schema as strawberry_schema
from graphql import parse

from mnemoql.resolvers.documents import DocumentCache
from tests.api.conftest import Api, running
from tests.api.test_auth import READ, WRITE, Caller, token_settings
from tests.api.test_save import SAVE, TEXT

NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { id } }"


class Counts:
    def __init__(self) -> None:
        self.parsed = 0
        self.validated = 0


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    """How often strawberry parses and validates a document (its module functions)."""
    seen = Counts()
    real_parse, real_validate = strawberry_schema.parse, strawberry_schema.validate_document

    def counted_parse(*args: object, **kwargs: object) -> object:
        seen.parsed += 1
        return real_parse(*args, **kwargs)  # type: ignore[arg-type]

    def counted_validate(*args: object) -> object:
        seen.validated += 1
        return real_validate(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(strawberry_schema, "parse", counted_parse)
    monkeypatch.setattr(strawberry_schema, "validate_document", counted_validate)
    yield seen


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[Api]:
    async with running(token_settings(tmp_path)) as api:
        yield api


async def test_a_repeated_document_is_parsed_and_validated_once(
    secured: Api, counts: Counts
) -> None:
    writer, reader = Caller(secured, WRITE), Caller(secured, READ)
    saved = await writer.gql(SAVE, input={"content": TEXT, "id": "doc_a"})
    assert saved["save"]["eventIds"] == ["doc_a"]
    before = (counts.parsed, counts.validated)
    first = await reader.gql(NODES, ids=["doc_a"])
    second = await reader.gql(NODES, ids=["nope", "doc_a"])
    assert first["nodes"] == [{"id": "doc_a"}]
    assert second["nodes"] == [None, {"id": "doc_a"}]  # the variables of this request
    assert (counts.parsed, counts.validated) == (before[0] + 1, before[1] + 1)


async def test_invalid_documents_fail_every_time(secured: Api, counts: Counts) -> None:
    reader = Caller(secured, READ)
    for _ in range(3):
        body = await reader.body("{ nodes(ids: []) { nosuchfield } }")
        assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
        body = await reader.body("{ nodes(ids: [) }")
        assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
    assert counts.validated == 3  # the unparsable one never reaches validation
    tokens = "{ memoryIndex { " + "model " * 6000 + "} }"
    for _ in range(2):
        body = await reader.body(tokens)
        assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"


async def test_several_operations_still_need_a_name(secured: Api) -> None:
    reader = Caller(secured, READ)
    two = "query A { memoryIndex { model } } query B { memoryIndex { dimensions } }"
    r = await reader.api.client.post(
        "/graphql", json={"query": two, "operationName": "B"}, headers=reader.headers
    )
    assert r.json()["data"]["memoryIndex"]["dimensions"] > 0  # kept now
    body = await reader.body(two)
    assert "operationName" in body["errors"][0]["message"]
    assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


async def test_the_scope_check_runs_on_a_kept_document(secured: Api) -> None:
    writer, reader = Caller(secured, WRITE), Caller(secured, READ)
    await writer.gql(SAVE, input={"content": TEXT, "id": "doc_w"})
    body = await reader.body(SAVE, input={"content": TEXT, "id": "doc_r"})
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"


def test_the_cache_keeps_the_newest_documents_only() -> None:
    cache = DocumentCache(size=2, max_chars=50)
    docs = {q: parse(q) for q in ("{ a }", "{ b }", "{ c }")}
    for q, doc in docs.items():
        cache.put(q, {}, doc)
        assert cache.get("{ a }", {}) is docs["{ a }"]  # used: stays
    assert len(cache) == 2
    assert cache.get("{ b }", {}) is None  # the least recently used went
    assert cache.get("{ a }", {"max_tokens": 5}) is None  # other parse options: another key
    long = "{ " + "x " * 40 + "}"
    cache.put(long, {}, parse(long))
    assert cache.get(long, {}) is None  # too long to keep
    off = DocumentCache(size=0)
    off.put("{ a }", {}, docs["{ a }"])
    assert len(off) == 0
