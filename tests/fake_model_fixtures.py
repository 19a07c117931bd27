"""pytest fixtures for the fake model server. Import them into a conftest.py:

    from tests.fake_model_fixtures import fake_models, model_client  # noqa: F401
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio

from tests.fake_model_server import FakeModelServer


@pytest.fixture
def fake_models() -> Iterator[FakeModelServer]:
    """A started fake OpenAI-compatible model server, stopped after the test."""
    with FakeModelServer() as server:
        yield server


@pytest_asyncio.fixture
async def model_client() -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client with short timeouts, as the providers get one from the app."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(5.0, connect=2.0)) as client:
        yield client
