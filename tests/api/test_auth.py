"""Bearer tokens: read and write scopes, 401 / FORBIDDEN, public pages, websockets, token files,
and the refusal to serve a public address without tokens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from starlette.websockets import WebSocketDisconnect

from mnemoql.engine.config import Settings, load_settings
from mnemoql.web.app import create_app
from mnemoql.web.auth import is_loopback
from tests.api.conftest import Api, offline_settings, running
from tests.api.test_save import COUNTS, EXTRACTION, SAVE, TEXT

with warnings.catch_warnings():  # starlette suggests another client; httpx's works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

ROOT = Path(__file__).resolve().parents[2]
READ = "read-token-0123456789abcdef"
WRITE = "write-token-0123456789abcdef"
BOTH = "both-token-0123456789abcdef"
OTHER = "other-space-token-0123456789"
TOKENS = [
    {"token": READ, "space": "alice", "scopes": ["read"]},
    {"token": WRITE, "space": "alice", "scopes": ["write"]},
    {"token": BOTH, "space": "alice", "scopes": ["read", "write"]},
    {"token": OTHER, "space": "bob", "scopes": ["read", "write"]},
]


class Caller:
    """Posts GraphQL with one bearer token (or none)."""

    def __init__(self, api: Api, token: str | None) -> None:
        self.api = api
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def raw(self, query: str, **variables: Any) -> httpx.Response:
        return await self.api.client.post(
            "/graphql", json={"query": query, "variables": variables}, headers=self.headers
        )

    async def body(self, query: str, **variables: Any) -> dict[str, Any]:
        r = await self.raw(query, **variables)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        return out

    async def gql(self, query: str, **variables: Any) -> dict[str, Any]:
        body = await self.body(query, **variables)
        assert not body.get("errors"), body["errors"]
        data: dict[str, Any] = body["data"]
        return data

    async def code(self, query: str, **variables: Any) -> str:
        """The code of the first error of a query that must fail."""
        body = await self.body(query, **variables)
        assert body.get("errors"), body
        code: str = body["errors"][0]["extensions"]["code"]
        return code


def token_settings(data_dir: Path, tokens: list[dict[str, Any]] = TOKENS, **kw: Any) -> Settings:
    return offline_settings(data_dir, auth={"tokens": tokens}, **kw)


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[Api]:
    async with running(token_settings(tmp_path)) as api:
        yield api


def as_(api: Api, token: str | None) -> Caller:
    return Caller(api, token)


async def test_a_missing_or_invalid_token_is_a_401_with_a_graphql_error(secured: Api) -> None:
    for headers in (
        {},
        {"Authorization": "Bearer not-a-configured-token-123456"},
        {"Authorization": f"Basic {READ}"},
        {"Authorization": "Bearer "},
        {"Authorization": READ},  # no scheme
    ):
        r = await secured.client.post("/graphql", json={"query": COUNTS}, headers=headers)
        assert r.status_code == 401, (headers, r.text)
        assert r.headers["www-authenticate"].startswith("Bearer")
        body = r.json()
        assert body["data"] is None
        assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        assert "Authorization: Bearer" in body["errors"][0]["message"]
    # a query in the URL needs a token too
    r = await secured.client.get("/graphql", params={"query": COUNTS})
    assert r.status_code == 401
    r = await secured.client.get(
        "/graphql", params={"query": COUNTS}, headers={"Authorization": f"Bearer {READ}"}
    )
    assert r.status_code == 200 and r.json()["data"]["memoryIndex"]["counts"]["events"] == 0


async def test_pages_and_health_are_public(secured: Api) -> None:
    c = secured.client
    page = await c.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert (await c.get("/explorer")).status_code == 200
    assert (await c.get("/static/auth.js")).status_code == 200
    health = await c.get("/healthz")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    ready = await c.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}  # no detail


async def test_a_read_token_queries_and_introspects_but_cannot_write(secured: Api) -> None:
    reader = as_(secured, READ)
    assert (await reader.gql(COUNTS))["memoryIndex"]["counts"]["events"] == 0
    schema = await reader.gql("{ __schema { queryType { name } mutationType { name } } }")
    assert schema["__schema"]["mutationType"]["name"] == "Mutation"
    for mutation, variables in (
        (SAVE, {"input": {"content": TEXT, "extraction": EXTRACTION}}),
        (
            "mutation($i: [SaveInput!]!) { saveMany(inputs: $i) { errors { code } } }",
            {"i": [{"content": TEXT}]},
        ),
        ('mutation { forget(eventId: "event_1") { deletedIds } }', {}),
        ("mutation { revectorize { events } }", {}),
    ):
        body = await reader.body(mutation, **variables)
        assert body["data"] is None, body
        err = body["errors"][0]
        assert err["extensions"]["code"] == "FORBIDDEN"
        assert "'write' scope" in err["message"]
    # nothing was written: the writer sees an empty memory
    assert (await as_(secured, BOTH).gql(COUNTS))["memoryIndex"]["counts"] == {
        "events": 0,
        "persons": 0,
        "concepts": 0,
        "locations": 0,
        "chunks": 0,
        "relationships": 0,
    }


async def test_a_write_token_saves_and_only_reads_with_the_read_scope(secured: Api) -> None:
    writer = as_(secured, WRITE)
    saved = await writer.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION})
    assert saved["save"]["eventIds"] == ["event_1"]
    assert await writer.code(COUNTS) == "FORBIDDEN"
    assert (await as_(secured, READ).gql(COUNTS))["memoryIndex"]["counts"]["events"] == 1
    both = as_(secured, BOTH)
    assert (await both.gql('{ read(eventId: "event_1", limit: 5) { text } }'))["read"]["text"]
    forgot = await both.gql('mutation { forget(eventId: "event_1") { deletedIds } }')
    assert "event_1" in forgot["forget"]["deletedIds"]


async def test_without_tokens_everything_is_open_on_one_default_space(api: Api) -> None:
    anyone = as_(api, None)
    assert (await anyone.gql(SAVE, input={"content": TEXT}))["save"]["eventIds"]
    # a token is ignored when none are configured
    stray = as_(api, "whatever-token-0123456789")
    assert (await stray.gql(COUNTS))["memoryIndex"]["counts"]["events"] == 1
    assert api.app.state.spaces.names == ["default"]


# ---------------------------------------------------------------- websockets


def _ws_subscribe(
    client: TestClient, params: dict[str, Any] | None, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """connection_init (+ payload), subscribe to revectorize; the first message after the ack."""
    with client.websocket_connect(
        "ws://127.0.0.1/graphql", subprotocols=["graphql-transport-ws"], headers=headers or {}
    ) as ws:
        ws.send_json({"type": "connection_init", "payload": params or {}})
        ack = ws.receive_json()
        assert ack["type"] == "connection_ack", ack
        ws.send_json(
            {
                "id": "1",
                "type": "subscribe",
                "payload": {"query": "subscription { revectorize { phase done total } }"},
            }
        )
        first: dict[str, Any] = ws.receive_json()
        return first


def test_websocket_subscriptions_need_a_write_token(tmp_path: Path) -> None:
    app = create_app(token_settings(tmp_path))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        # no token at all: connection_init is refused
        with pytest.raises(WebSocketDisconnect) as closed:
            _ws_subscribe(client, None)
        assert closed.value.code == 4403
        # a bad Authorization header: closed at the handshake
        with pytest.raises(WebSocketDisconnect):
            _ws_subscribe(client, None, {"Authorization": "Bearer nope-nope-nope-nope-nope"})
        # a read token (in connection params) may not run the revectorize subscription
        refused = _ws_subscribe(client, {"Authorization": f"Bearer {READ}"})
        assert refused["type"] in {"error", "next"}, refused
        errors = refused["payload"] if refused["type"] == "error" else refused["payload"]["errors"]
        assert errors[0]["extensions"]["code"] == "FORBIDDEN"
        # a write token, in the payload or in the handshake header, runs it
        ok = _ws_subscribe(client, {"token": BOTH})
        assert ok["type"] == "next" and not ok["payload"].get("errors"), ok
        ok = _ws_subscribe(client, None, {"Authorization": f"Bearer {WRITE}"})
        assert ok["type"] == "next" and not ok["payload"].get("errors"), ok


# ---------------------------------------------------------------- configuration


def test_tokens_come_from_json_in_the_environment() -> None:
    env = {"MNEMOQL_AUTH__TOKENS": json.dumps(TOKENS[:2]), "MNEMOQL_ALLOW_PUBLIC": "true"}
    s = load_settings(env)
    assert [(t.space, sorted(t.scopes)) for t in s.auth.tokens] == [
        ("alice", ["read"]),
        ("alice", ["write"]),
    ]
    assert s.allow_public is True
    assert READ not in repr(s) and READ not in s.model_dump_json()


@pytest.mark.parametrize(
    ("grant", "problem"),
    [
        ({"token": "short"}, "at least 16 characters"),
        ({"token": READ, "space": "no spaces here"}, "not allowed"),
        ({"token": READ, "scopes": []}, "at least one scope"),
        ({"token": READ, "scopes": ["admin"]}, "read"),
    ],
)
def test_bad_token_grants_are_refused(grant: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError) as exc:
        load_settings({"MNEMOQL_AUTH__TOKENS": json.dumps([grant])})
    assert problem in str(exc.value)


async def test_tokens_can_come_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": TOKENS[:1]}), encoding="utf-8")
    settings = offline_settings(tmp_path / "data", auth={"tokens_file": str(path)})
    async with running(settings) as api:
        assert (await as_(api, None).raw(COUNTS)).status_code == 401
        assert (await as_(api, READ).gql(COUNTS))["memoryIndex"]["counts"]["events"] == 0


def test_a_bad_tokens_file_stops_the_app_with_a_clear_error(tmp_path: Path) -> None:
    missing = offline_settings(tmp_path, auth={"tokens_file": str(tmp_path / "nope.json")})
    with pytest.raises(ValueError, match=r"cannot read the tokens file .*nope\.json"):
        create_app(missing)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"token": "tiny-secret", "space": "a"}]), encoding="utf-8")
    with pytest.raises(ValueError, match="invalid") as exc:
        create_app(offline_settings(tmp_path, auth={"tokens_file": str(bad)}))
    assert "tiny-secret" not in str(exc.value)
    dup = tmp_path / "dup.json"
    dup.write_text(
        json.dumps([{"token": READ, "space": "a"}, {"token": READ, "space": "b"}]),
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="configured twice") as exc:
        create_app(offline_settings(tmp_path, auth={"tokens_file": str(dup)}))
    assert READ not in str(exc.value)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("example.org", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def _serve(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`mnemoql serve` with uvicorn.run replaced by a print: checks the bind, serves nothing."""
    code = (
        "import sys, uvicorn\n"
        "uvicorn.run = lambda app, host, port, **kw: print(f'WOULD SERVE {host}:{port}')\n"
        "from web.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    return subprocess.run(
        [sys.executable, "-c", code, "serve", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_serve_refuses_a_public_bind_without_tokens(tmp_path: Path) -> None:
    env = {"MNEMOQL_DATA_DIR": str(tmp_path), "MNEMOQL_EMBEDDING__PROVIDER": "hashing"}
    refused = _serve("--host", "0.0.0.0", "--port", "8765", env=env)
    assert refused.returncode == 2, refused.stderr
    assert "refusing to serve on 0.0.0.0" in refused.stderr
    assert "--allow-public" in refused.stderr and "MNEMOQL_AUTH__TOKENS" in refused.stderr
    assert "WOULD SERVE" not in refused.stdout
    allowed = _serve("--host", "0.0.0.0", "--port", "8765", "--allow-public", env=env)
    assert allowed.returncode == 0 and "WOULD SERVE 0.0.0.0:8765" in allowed.stdout
    by_env = _serve("--host", "0.0.0.0", env={**env, "MNEMOQL_ALLOW_PUBLIC": "1"})
    assert by_env.returncode == 0, by_env.stderr
    with_tokens = _serve(
        "--host", "0.0.0.0", env={**env, "MNEMOQL_AUTH__TOKENS": json.dumps(TOKENS)}
    )
    assert with_tokens.returncode == 0 and "WOULD SERVE 0.0.0.0" in with_tokens.stdout
    assert READ not in with_tokens.stdout + with_tokens.stderr
    loopback = _serve(env=env)
    assert loopback.returncode == 0 and "WOULD SERVE 127.0.0.1:8000" in loopback.stdout
