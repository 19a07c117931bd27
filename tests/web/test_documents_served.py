"""Kept documents against a real ``mnemoql serve``: one document text with new variables gets
each request's own answer; invalid texts and refused scopes fail every time, as a client
sending them over HTTP sees it."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.web.served import ALICE, ALICE_READ, TOKENS, served

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { id } }"


def test_one_document_many_variables_over_http(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with served(data, tokens=TOKENS) as server:
        for n in range(3):
            item = {"content": f"Alice met Bob in Lisbon, note {n}.", "id": f"served_{n}"}
            assert server.gql(SAVE, ALICE, input=item)["save"]["eventIds"] == [f"served_{n}"]
        for n in range(3):
            ids = [f"served_{n}", "missing"]
            assert server.gql(NODES, ALICE_READ, ids=ids)["nodes"] == [{"id": f"served_{n}"}, None]
        read = {"authorization": f"Bearer {ALICE_READ}"}
        for _ in range(2):
            bad = httpx.post(server.graphql, json={"query": "{ nodes(ids: []) { nope } }"},
                             headers=read, timeout=60).json()
            assert bad["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
            item = {"content": "not allowed", "id": "served_r"}
            refused = httpx.post(server.graphql, json={"query": SAVE, "variables": {"input": item}},
                                 headers=read, timeout=60).json()
            assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
