"""API tests run the real app over ASGI with real stores and real HTTP to the fake model server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mnemoql.engine.config import Settings, load_settings
from mnemoql.web.app import create_app


class Api:
    """A client for one running app: ``await api.gql(query, **variables)``."""

    def __init__(self, client: httpx.AsyncClient, app: Any) -> None:
        self.client = client
        self.app = app

    async def post(
        self, query: str, variables: dict[str, Any] | None = None, **headers: str
    ) -> dict[str, Any]:
        r = await self.client.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    async def gql(self, query: str, **variables: Any) -> dict[str, Any]:
        """The data of a query that must succeed."""
        body = await self.post(query, variables)
        assert not body.get("errors"), body["errors"]
        data: dict[str, Any] = body["data"]
        return data

    async def error(self, query: str, **variables: Any) -> dict[str, Any]:
        """The first error of a query that must fail."""
        body = await self.post(query, variables)
        assert body.get("errors"), body
        err: dict[str, Any] = body["errors"][0]
        return err


@contextlib.asynccontextmanager
async def running(settings: Settings, **inject: Any) -> AsyncIterator[Api]:
    app = create_app(settings, **inject)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            yield Api(client, app)


# In-process tests are one client flooding one app on purpose (fuzzers, 20 saves at once): the
# per-client limits stay out of their way here and have tests of their own
# (tests/web/test_security_limits.py, tests/api/test_guards.py).
UNLIMITED_CLIENT = {"refusals_burst": 1e9, "max_requests_per_client": 10_000, "busy_burst_s": 1e9}


def offline_settings(data_dir: Path, **overrides: Any) -> Settings:
    """No keys: offline extractor, hashing embedder (fast, deterministic)."""
    overrides.setdefault("http", UNLIMITED_CLIENT)
    return load_settings({}, data_dir=data_dir, embedding={"provider": "hashing"}, **overrides)


def fake_model_settings(data_dir: Path, url: str, **overrides: Any) -> Settings:
    """Every model call goes over HTTP to the fake OpenAI-compatible server at ``url``."""
    groups: dict[str, Any] = {
        "extraction": {
            "base_url": f"{url}/v1",
            "api_key": "sk-extract-SECRET",
            "timeout_s": 3.0,
            "retries": 1,
        },
        "embedding": {
            "provider": "openai",
            "base_url": f"{url}/v1",
            "api_key": "sk-embed-SECRET",
            "model": "fake-embedding",
            "dimensions": 64,
            "timeout_s": 3.0,
            "retries": 1,
        },
        "alignment": {"enabled": False},
        "http": UNLIMITED_CLIENT,
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and key in groups:
            groups[key] = {**groups[key], **value}
        else:
            groups[key] = value
    return load_settings({}, data_dir=data_dir, **groups)


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    async with running(offline_settings(tmp_path)) as a:
        yield a
