"""Secrets -- model keys, the Neo4j password, access tokens -- never appear in a response, an
error or a log line, even at DEBUG, across model failures, auth failures and masked errors."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import fake_model_settings, running
from tests.api.test_alignment import _ex
from tests.api.test_save import COUNTS, SAVE, TEXT
from tests.fake_model_server import FakeModelServer

MARK = "S3CR3T"  # every secret below contains it, and nothing else does
TOKEN = f"tok-{MARK}-read-write-0123456789"
READ_ONLY = f"tok-{MARK}-read-only-0123456789"
CLIENT_GUESS = f"guess-{MARK}-0123456789abcdef"


def secret_settings(tmp_path: Path, fake: FakeModelServer) -> Any:
    return fake_model_settings(
        tmp_path,
        fake.url,
        extraction={"api_key": f"sk-extract-{MARK}", "timeout_s": 0.5},
        embedding={"api_key": f"sk-embed-{MARK}", "timeout_s": 0.5},
        alignment={"enabled": True, "url": fake.judge_url, "api_key": f"sk-judge-{MARK}"},
        neo4j={"password": f"neo4j-{MARK}"},
        auth={
            "tokens": [
                {"token": TOKEN, "space": "alice", "scopes": ["read", "write"]},
                {"token": READ_ONLY, "space": "alice", "scopes": ["read"]},
            ]
        },
    )


async def test_secrets_stay_out_of_responses_errors_and_logs(
    tmp_path: Path,
    fake_models: FakeModelServer,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    seen: list[str] = []

    def record(r: httpx.Response) -> dict[str, Any]:
        seen.append(r.text)
        seen.append(str(dict(r.headers)))
        out: dict[str, Any] = (
            r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
        )
        return out

    settings = secret_settings(tmp_path, fake_models)
    seen.append(repr(settings))
    seen.append(settings.model_dump_json())
    async with running(settings) as api:
        c = api.client
        ok = {"Authorization": f"Bearer {TOKEN}"}

        async def post(query: str, headers: dict[str, str], **variables: Any) -> dict[str, Any]:
            r = await c.post(
                "/graphql", json={"query": query, "variables": variables}, headers=headers
            )
            return record(r)

        # a save that works (keys go to the model server, nowhere else)
        assert (await post(SAVE, ok, input={"content": TEXT}))["data"]["save"]["eventIds"]
        # model failures at each step: extraction, embedding, the judge, revectorize
        keys_used = {r.headers.get("authorization") for r in fake_models.requests}
        for endpoint, mode in (
            ("chat", "http_500"),
            ("chat", "http_401"),
            ("embeddings", "http_429"),
            ("embeddings", "timeout"),
            ("embeddings", "malformed_json"),
        ):
            fake_models.reset()
            fake_models.fail(endpoint, mode, times=10)  # type: ignore[arg-type]
            body = await post(SAVE, ok, input={"content": f"{TEXT} {endpoint} {mode}"})
            assert body["errors"][0]["extensions"]["code"] == "UPSTREAM_FAILED"
        fake_models.reset()
        await post(SAVE, ok, input={"content": "one", "extraction": _ex("graph database")})
        fake_models.fail("judge", "http_500", times=10)
        body = await post(
            SAVE, ok, input={"content": "two", "extraction": _ex("the graph database")}
        )
        assert body["data"]["save"]["eventIds"]  # a failing judge does not fail the save
        assert fake_models.requests_to("judge")
        keys_used.update(r.headers.get("authorization") for r in fake_models.requests)
        fake_models.reset()
        fake_models.fail("embeddings", "http_500", times=10)
        body = await post("mutation { revectorize { events } }", ok)
        assert body["errors"][0]["extensions"]["code"] == "REVECTORIZE_FAILED"
        fake_models.reset()

        # auth failures: no token, a wrong token, a read token writing
        for headers in ({}, {"Authorization": f"Bearer {CLIENT_GUESS}"}):
            r = await c.post("/graphql", json={"query": COUNTS}, headers=headers)
            assert r.status_code == 401
            record(r)
        body = await post(SAVE, {"Authorization": f"Bearer {READ_ONLY}"}, input={"content": "x"})
        assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"

        # a masked internal error
        memory = await api.app.state.spaces.get("alice")

        async def broken() -> Any:
            raise RuntimeError("the store's counters broke")

        memory.store.counts = broken  # type: ignore[method-assign]
        body = await post(COUNTS, ok)
        assert body["errors"][0]["extensions"]["code"] == "INTERNAL_SERVER_ERROR"

        # everything a client can read
        for path in ("/healthz", "/readyz", "/graphql", "/explorer"):
            record(await c.get(path, headers={"Accept": "text/html"}))
        await post("{ memoryIndex { model store embedder extractor judge } }", ok)
        await post("{ __schema { types { name description } } }", ok)

    outputs = {
        "responses": "\n".join(seen),
        "logs": caplog.text + "\n".join(str(r.args) for r in caplog.records),
        "stdout/stderr": "".join(capsys.readouterr()),
    }
    assert "the store's counters broke" in outputs["logs"]  # the operator sees the failure
    assert "HTTP Request: POST" in outputs["logs"]  # httpx's own DEBUG/INFO lines were captured
    assert "retry 1/1" in outputs["logs"] and "unauthenticated POST /graphql" in outputs["logs"]
    assert "UPSTREAM" in outputs["responses"] or "UPSTREAM_FAILED" in outputs["responses"]
    for where, text in outputs.items():
        assert MARK not in text, f"a secret leaked into {where}"
    # the model server did receive the keys: they were used, just never shown
    assert keys_used == {
        f"Bearer sk-extract-{MARK}",
        f"Bearer sk-embed-{MARK}",
        f"Bearer sk-judge-{MARK}",
    }
