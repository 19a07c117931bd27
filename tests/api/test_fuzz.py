"""Schema fuzzing over ASGI with hypothesis-graphql: valid and invalid generated queries and
mutations, garbage documents and bodies. Never a 5xx, never an unmasked or uncoded error, never
a failed operation that wrote something, and the memory stays consistent.

Bounded: a fixed number of examples per test (the whole module takes well under a minute); in
CI (``CI=true``) the examples are derandomised so a run is reproducible.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import graphql
import pytest

pytest.importorskip("hypothesis_graphql", reason="pip install -e '.[test]'")

import hypothesis_graphql as hg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import nodes

from mnemoql.resolvers import schema as gql_schema
from tests.api.conftest import Api, offline_settings, running

SDL = gql_schema.as_str()
FUZZ = settings(
    max_examples=int(os.environ.get("MNEMOQL_FUZZ_EXAMPLES", "50")),
    deadline=None,
    database=None,
    derandomize=os.environ.get("CI") == "true",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
COUNTS = "{ memoryIndex { counts { events persons concepts locations chunks relationships } } }"
OK_STATUS = {200, 400}


def _json_value(depth: int = 2) -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=12)
    if depth == 0:
        return leaves
    inner = _json_value(depth - 1)
    return (
        leaves
        | st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    )


def _json_node(value: Any) -> Any:
    """A GraphQL literal for a JSON value (the ``JSON`` scalar accepts any literal)."""
    if value is None:
        return graphql.NullValueNode()
    if isinstance(value, bool):
        return nodes.Boolean(value)
    if isinstance(value, int):
        return nodes.Int(value)
    if isinstance(value, str):
        return nodes.String(value)
    if isinstance(value, list):
        return nodes.List([_json_node(v) for v in value])
    fields = [
        graphql.ObjectFieldNode(name=graphql.NameNode(value=f"k{i}"), value=_json_node(v))
        for i, v in enumerate(value.values())
    ]
    return nodes.Object(fields)


# a plausible extraction now and then, so some generated saves get past validation
_EXTRACTION = st.builds(
    lambda summary, name: {
        "events": [{"ref": "e", "summary": summary or "x", "persons": [], "concepts": ["c"]}],
        "concepts": [{"ref": "c", "name": name or "y"}],
    },
    st.text(max_size=20),
    st.text(max_size=10),
)
SCALARS = {"JSON": (_EXTRACTION | _json_value()).map(_json_node)}


class Fuzzed:
    """The app over ASGI, kept open across examples on one event loop."""

    def __init__(self, api: Api, runner: asyncio.Runner) -> None:
        self.api = api
        self.runner = runner

    def post(self, body: Any, *, raw: bytes | None = None) -> tuple[int, Any]:
        async def go() -> tuple[int, Any]:
            if raw is not None:
                r = await self.api.client.post(
                    "/graphql", content=raw, headers={"content-type": "application/json"}
                )
            else:
                r = await self.api.client.post("/graphql", json=body)
            try:
                return r.status_code, r.json()
            except ValueError:
                return r.status_code, r.text

        return self.runner.run(go())

    def counts(self) -> dict[str, int]:
        status, body = self.post({"query": COUNTS})
        assert status == 200 and not body.get("errors"), body
        result: dict[str, int] = body["data"]["memoryIndex"]["counts"]
        return result


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    runner = asyncio.Runner()
    limits = {"query_timeout_s": 10.0, "mutation_timeout_s": 10.0}
    ctx = running(offline_settings(tmp_path_factory.mktemp("fuzz"), limits=limits))
    api = runner.run(ctx.__aenter__())
    seed = (
        'mutation { a: save(input: {content: "Alice met Bob in Berlin to talk about Neo4j.", '
        'id: "book_ch1_e01"}) { eventIds } b: save(input: {content: "Bob: 我们在杭州讨论了图数据库。"}) '
        "{ eventIds } }"
    )
    fz = Fuzzed(api, runner)
    status, body = fz.post({"query": seed})
    assert status == 200 and not body.get("errors"), body
    try:
        yield fz
        check_consistent(fz)
    finally:
        runner.run(ctx.__aexit__(None, None, None))
        runner.close()


def assert_well_formed(status: int, body: Any) -> None:
    """No 5xx; a GraphQL-shaped body whose every error carries a code and is not internal."""
    assert status in OK_STATUS, (status, body)
    if status == 400:
        return  # strawberry's own refusals of a malformed request (no document, bad JSON)
    assert isinstance(body, dict) and ("data" in body or "errors" in body), body
    for err in body.get("errors") or []:
        code = (err.get("extensions") or {}).get("code")
        assert code, err
        assert code != "INTERNAL_SERVER_ERROR", err
        assert "Traceback" not in err["message"]


def all_failed(query: str, body: dict[str, Any]) -> bool:
    """No root field of the operation ran to completion, so nothing may have been written.

    A root field failed only where an error sits on the field itself (path ``[key]``): an
    error further down (a payload's node, a connection's arguments) came after its resolver
    returned, that is after the write, even when its null then bubbled up to ``data``.
    Mutations run one after another, and a null that reaches ``data`` stops the rest: the root
    fields after the last one with an error never ran."""
    errors = body.get("errors") or []
    if not errors:
        return False
    if any((e.get("extensions") or {}).get("code") == "TIMEOUT" for e in errors):
        # ran out of time (a loaded machine): the root fields before the one running have
        # committed, as mutations run one after another (docs/operations.md, Security)
        return False
    if any(not e.get("path") for e in errors):
        return True  # the whole operation was refused
    keys = root_keys(query)
    failed = {e["path"][0] for e in errors if len(e["path"]) == 1}
    if body.get("data") is None:
        touched = {e["path"][0] for e in errors}
        last = max(i for i, key in enumerate(keys) if key in touched)
        keys = keys[: last + 1]
    return all(key in failed for key in keys)


def root_keys(query: str) -> list[str]:
    """The response keys of the operation's root fields, in the order they run."""
    doc = graphql.parse(query)
    op = next(d for d in doc.definitions if isinstance(d, graphql.OperationDefinitionNode))
    keys = [
        (f.alias or f.name).value
        for f in op.selection_set.selections
        if isinstance(f, graphql.FieldNode)
    ]
    return list(dict.fromkeys(keys))


def check_consistent(fz: Fuzzed) -> None:
    """Every event reads back in full and has chunks; every relationship joins known nodes."""
    status, body = fz.post(
        {"query": "{ graph { nodes { id: nodeId label } relationships { source target } } }"}
    )
    assert status == 200 and not body.get("errors"), body
    graph = body["data"]["graph"]
    ids = {n["id"] for n in graph["nodes"]}
    for rel in graph["relationships"]:
        assert rel["source"] in ids and rel["target"] in ids, rel
    events = [n["id"] for n in graph["nodes"] if n["label"] == "Event"]
    assert len(events) == fz.counts()["events"]
    for event_id in events:
        q = "query($id: ID!) { node(id: $id) { ... on Event { length chunks { index } } } }"
        status, body = fz.post({"query": q, "variables": {"id": event_id}})
        node = body["data"]["node"]
        assert node["chunks"], event_id
        status, body = fz.post(
            {
                "query": "query($id: ID!) { read(eventId: $id, limit: 10000) { total } }",
                "variables": {"id": event_id},
            }
        )
        assert body["data"]["read"]["total"] == node["length"], event_id


@FUZZ
@given(query=hg.queries(SDL, custom_scalars=SCALARS))
def test_valid_generated_queries(fuzzed: Fuzzed, query: str) -> None:
    before = fuzzed.counts()
    status, body = fuzzed.post({"query": query})
    assert_well_formed(status, body)
    assert status == 200, body
    assert fuzzed.counts() == before  # queries never write


@FUZZ
@given(query=hg.mutations(SDL, custom_scalars=SCALARS))
def test_valid_generated_mutations(fuzzed: Fuzzed, query: str) -> None:
    before = fuzzed.counts()
    status, body = fuzzed.post({"query": query})
    assert_well_formed(status, body)
    assert status == 200, body
    if all_failed(query, body):
        assert fuzzed.counts() == before, (query, body)


def test_a_save_whose_payload_then_errored_counts_as_written(fuzzed: Fuzzed) -> None:
    """The flaky case: ``a`` saved, a field inside its payload failed, then ``b`` failed and
    nulled ``data``; every root key has an error, yet ``a`` wrote."""
    before = fuzzed.counts()
    query = (
        'mutation { a: save(input: {content: "Erin met Frank in Lyon."}) '
        "{ refs { node { ... on Event { content(limit: 0) { text } } } } } "
        'b: save(input: {content: ""}) { eventIds } }'
    )
    status, body = fuzzed.post({"query": query})
    assert_well_formed(status, body)
    assert body["data"] is None and {e["path"][0] for e in body["errors"]} == {"a", "b"}, body
    assert fuzzed.counts()["events"] == before["events"] + 1
    assert not all_failed(query, body)

    query = 'mutation { a: save(input: {content: ""}) { eventIds } b: save(input: {content: "never runs"}) { eventIds } }'
    status, body = fuzzed.post({"query": query})
    assert all_failed(query, body), body  # b never ran: a's failure stopped the operation
    assert fuzzed.counts()["events"] == before["events"] + 1


@FUZZ
@given(
    query=hg.queries(SDL, custom_scalars=SCALARS, mode=hg.Mode.NEGATIVE)
    | hg.mutations(SDL, custom_scalars=SCALARS, mode=hg.Mode.NEGATIVE)
)
def test_invalid_generated_operations_are_refused_cleanly(fuzzed: Fuzzed, query: str) -> None:
    before = fuzzed.counts()
    status, body = fuzzed.post({"query": query})
    assert_well_formed(status, body)
    assert status == 200 and body.get("errors"), body
    assert body.get("data") is None, body
    assert fuzzed.counts() == before


@FUZZ
@given(
    doc=st.text(max_size=200)
    | hg.queries(SDL, custom_scalars=SCALARS).flatmap(
        lambda q: st.integers(0, max(0, len(q) - 1)).map(lambda cut: q[:cut])
    )
)
def test_garbage_and_truncated_documents(fuzzed: Fuzzed, doc: str) -> None:
    before = fuzzed.counts()
    status, body = fuzzed.post({"query": doc})
    assert_well_formed(status, body)
    assert fuzzed.counts() == before


@FUZZ
@given(
    payload=_json_value(3)
    | st.fixed_dictionaries(
        {"query": _json_value(1)},
        optional={"variables": _json_value(2), "operationName": _json_value(1)},
    ),
    raw=st.none() | st.binary(max_size=64),
)
def test_garbage_bodies(fuzzed: Fuzzed, payload: Any, raw: bytes | None) -> None:
    status, body = fuzzed.post(payload, raw=raw)
    assert status in OK_STATUS | {405, 415}, (status, body)
    if status == 200:
        assert_well_formed(status, body)


def test_fuzzing_reached_the_resolvers(fuzzed: Fuzzed, tmp_path: Path) -> None:
    """A sanity check that the fixture's app answers real queries (not only refusals)."""
    status, body = fuzzed.post({"query": '{ search(query: "Neo4j Berlin") { items { eventId } } }'})
    assert status == 200 and body["data"]["search"]["items"], body
    assert json.dumps(body)
