"""Issue #13, cases 5 and 6 over GraphQL: every client mistake is a coded error, never
INTERNAL_SERVER_ERROR, and nothing is written; requests past the fair-service caps are refused
with LIMIT_EXCEEDED before the work starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import Api, offline_settings, running
from tests.api.test_save import COUNTS, EXTRACTION, SAVE, TEXT

SEARCH = "query($q: String, $t: String) { search(query: $q, timeHint: $t) { items { eventId } } }"
EVENTS = "query($w: EventWhere, $a: String) { events(first: 5, where: $w, after: $a) { edges { cursor node { id } } } }"


async def raw(api: Api, query: str, variables: dict[str, Any] | None = None,
              body: str | None = None) -> dict[str, Any]:  # fmt: skip
    """POST a body as the client wrote it (ensure_ascii keeps lone surrogates as \\ud800)."""
    text = body if body is not None else json.dumps({"query": query, "variables": variables})
    r = await api.client.post(
        "/graphql", content=text, headers={"content-type": "application/json"}
    )
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    return data


def code(body: dict[str, Any]) -> str:
    assert body.get("errors"), body
    value: str = body["errors"][0]["extensions"]["code"]
    return value


async def events(api: Api) -> int:
    n: int = (await api.gql(COUNTS))["memoryIndex"]["counts"]["events"]
    return n


@pytest.mark.parametrize(
    "variables",
    [
        {"input": {"content": "a\ud800b"}},
        {"input": {"content": "hello", "idempotencyKey": "k\udc00"}},
        {"input": {"content": "hello", "topicPath": "work->\ud83d"}},
        {"input": {"content": "hello", "relatedTopics": ["a", "b\ud800"]}},
        {"input": {"content": "hello", "extraction": {**EXTRACTION, "persons": [
            {"ref": "p1", "name": "Al\ud800ice"}]}}},
    ],
    ids=["content", "idempotencyKey", "topicPath", "relatedTopics", "extraction"],
)  # fmt: skip
async def test_a_lone_surrogate_anywhere_in_a_save_is_invalid_text(
    api: Api, variables: dict[str, Any]
) -> None:
    body = await raw(api, SAVE, variables)
    assert code(body) == "INVALID_TEXT"
    assert await events(api) == 0


async def test_a_lone_surrogate_in_a_search_is_invalid_text(api: Api) -> None:
    assert code(await raw(api, SEARCH, {"q": "where\ud800"})) == "INVALID_TEXT"
    # and in a literal the GraphQL lexer refuses it (a syntax error, not an internal one)
    literal = '{"query": "{ search(query: \\"a\\\\ud800\\") { cursor } }"}'
    body = await raw(api, "", body=literal)
    assert code(body) != "INTERNAL_SERVER_ERROR"


async def test_an_idempotency_key_over_200_characters_is_refused(api: Api) -> None:
    body = await raw(api, SAVE, {"input": {"content": "hello", "idempotencyKey": "k" * 201}})
    assert code(body) == "LIMIT_EXCEEDED" and body["errors"][0]["extensions"]["limit"] == 200
    ok = await raw(api, SAVE, {"input": {"content": "hello", "idempotencyKey": "k" * 200}})
    assert not ok.get("errors")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
async def test_non_finite_weights_are_refused_as_input(api: Api, value: str) -> None:
    text = (
        '{"query": "mutation($input: SaveInput!) { save(input: $input) { eventIds } }", '
        '"variables": {"input": {"content": "hello", "activationProfile": '
        f'{{"activationWeight": {value}}}}}}}}}'
    )
    body = await raw(api, "", body=text)
    assert code(body) not in ("INTERNAL_SERVER_ERROR", None)
    assert "activationWeight" in body["errors"][0]["message"]
    assert await events(api) == 0


@pytest.mark.parametrize("content", ["\ufeff", "\u200b\u200c\u200d\u2060", " \ufeff\n\u200b "])
async def test_content_without_anything_visible_is_not_saved(api: Api, content: str) -> None:
    body = await raw(api, SAVE, {"input": {"content": content}})
    assert code(body) in ("INVALID_TEXT", "BAD_USER_INPUT")
    assert await events(api) == 0


@pytest.mark.parametrize(
    ("extraction", "fragment"),
    [
        ({**EXTRACTION, "relations": [{"type": "MENTIONS", "source": "e1", "target": "c9"}]},
         "relations"),
        ({**EXTRACTION, "events": [{**EXTRACTION["events"][0], "concepts": ["c9"]}]}, "'c9'"),
        ({**EXTRACTION, "events": [{**EXTRACTION["events"][0],
                                    "participants": [{"person": "p1", "rol": "x"}]}]}, "rol"),
    ],
    ids=["relations beside the events", "unknown ref", "misspelt field"],
)  # fmt: skip
async def test_a_relation_that_cannot_be_kept_is_refused_not_dropped(
    api: Api, extraction: dict[str, Any], fragment: str
) -> None:
    body = await raw(api, SAVE, {"input": {"content": TEXT, "extraction": extraction}})
    assert code(body) == "EXTRACTION_INVALID" and fragment in body["errors"][0]["message"]
    assert await events(api) == 0


async def test_a_forged_events_cursor_is_refused_not_the_first_page(api: Api) -> None:
    for text in ("Alice met Bob.", "Carol saw Dan.", "Erin left."):
        await api.gql(SAVE, input={"content": text})
    first = (await api.gql(EVENTS))["events"]["edges"]
    real = first[1]["cursor"]
    after = (await api.gql(EVENTS, a=real))["events"]["edges"]
    assert [e["node"]["id"] for e in after] == [first[2]["node"]["id"]]

    def enc(value: object) -> str:
        import base64

        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    import base64

    issuer, _position = json.loads(base64.urlsafe_b64decode(real + "=" * (-len(real) % 4)))
    for forged in ["garbage!", enc("ab"), enc([1, 2]), enc(["zzz", "event_9"]),
                   enc({"a": 1}), enc([None, "x"]),
                   # the right connection, a position it never issued
                   enc([issuer, ["zzz", "event_9"]]), enc([issuer, "ab"]),
                   enc([issuer, ["2026", "event_1"]]), enc([issuer, [1, 2]])]:  # fmt: skip
        body = await raw(api, EVENTS, {"a": forged})
        assert code(body) in ("CURSOR_INVALID", "BAD_USER_INPUT"), (forged, body)
        assert body["errors"][0]["extensions"]["argument"] == "after"


def wide_or(n: int) -> dict[str, Any]:
    return {"OR": [{"summary": {"contains": f"word{i}"}} for i in range(n)]}


def nested(depth: int) -> dict[str, Any]:
    w: dict[str, Any] = {"summary": {"eq": "x"}}
    for _ in range(depth):
        w = {"OR": [w, {"summary": {"eq": "y"}}]}
    return w


async def test_where_trees_past_the_caps_are_refused_before_conversion(api: Api) -> None:
    await api.gql(SAVE, input={"content": "Alice met Bob in Paris."})
    at_cap = await raw(api, EVENTS, {"w": wide_or(100)})
    assert not at_cap.get("errors"), at_cap
    for where in (wide_or(101), wide_or(20_000), nested(9),
                  {"id": {"in": [f"event_{i}" for i in range(101)]}}):  # fmt: skip
        body = await raw(api, EVENTS, {"w": where})
        assert code(body) == "LIMIT_EXCEEDED", body
        assert "MNEMOQL_LIMITS__MAX_WHERE" in body["errors"][0]["message"]
    # a literal tree is counted the same way, and so is a variable inside a literal
    literal = "{ events(where: {OR: [" + ", ".join(
        f'{{summary: {{eq: "w{i}"}}}}' for i in range(101)
    ) + "]}) { edges { node { id } } } }"
    assert code(await raw(api, literal)) == "LIMIT_EXCEEDED"
    inner = "query($or: [EventWhere!]) { persons: events(where: {OR: $or}) { edges { cursor } } }"
    assert code(await raw(api, inner, {"or": wide_or(101)["OR"]})) == "LIMIT_EXCEEDED"


async def test_a_search_past_the_text_caps_is_refused(api: Api) -> None:
    body = await raw(api, SEARCH, {"q": "x" * 210_000})
    assert code(body) == "LIMIT_EXCEEDED"
    assert "MNEMOQL_LIMITS__MAX_SEARCH_CHARS" in body["errors"][0]["message"]
    body = await raw(api, SEARCH, {"t": "x" * 100_000})
    assert code(body) == "LIMIT_EXCEEDED"
    assert len(json.dumps(body)) < 2_000  # the answer does not echo the 100k characters
    bad_hint = await raw(api, SEARCH, {"t": "y" * 150})
    assert code(bad_hint) == "TIME_HINT_INVALID"
    assert "(150 characters)" in bad_hint["errors"][0]["message"]


async def test_a_client_extraction_past_the_caps_is_refused(tmp_path: Path) -> None:
    persons = [{"ref": f"p{i}", "name": f"Person {i}"} for i in range(5_000)]
    many = {"events": [{"ref": "e1", "summary": "a crowd",
                        "participants": [{"person": p["ref"]} for p in persons]}],
            "persons": persons}  # fmt: skip
    async with running(offline_settings(tmp_path)) as api:
        body = await raw(api, SAVE, {"input": {"content": "A crowd met.", "extraction": many}})
        assert code(body) == "LIMIT_EXCEEDED"
        assert "MNEMOQL_LIMITS__MAX_EXTRACTION_ENTITIES" in body["errors"][0]["message"]
        assert await events(api) == 0
    async with running(
        offline_settings(tmp_path / "big", limits={"max_extraction_entities": 5_000})
    ) as api:  # the cap is a setting
        body = await raw(api, SAVE, {"input": {"content": "A crowd met.", "extraction": many}})
        assert not body.get("errors"), body
