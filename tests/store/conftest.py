"""Fixtures of the store contract suite: every test that uses ``store`` runs once per store
registered in ``tests.store.factories`` (see that module to add one)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnemoql.engine.store.base import Store
from tests.store.factories import STORE_FACTORIES, StoreFactory, load_factory_modules

load_factory_modules()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_factory" in metafunc.fixturenames:
        names = sorted(STORE_FACTORIES)
        metafunc.parametrize("store_factory", names, indirect=True, ids=names)


@pytest.fixture
def store_factory(request: pytest.FixtureRequest) -> StoreFactory:
    factory = STORE_FACTORIES[request.param]
    reason = factory.skip_reason()
    if reason:
        pytest.skip(f"{request.param} store unavailable: {reason}")
    return factory


@dataclass(frozen=True)
class StoreLocation:
    factory: StoreFactory
    path: Path
    space: str

    def make(self) -> Store:
        return self.factory.make(self.path, self.space)


@pytest.fixture
def store_location(store_factory: StoreFactory, tmp_path: Path) -> StoreLocation:
    return StoreLocation(store_factory, tmp_path / "memory", f"t{uuid.uuid4().hex[:12]}")


@pytest.fixture
async def store(store_location: StoreLocation) -> AsyncIterator[Store]:
    s = store_location.make()
    await s.open()
    try:
        yield s
    finally:
        await s.close()  # closing twice is allowed; a test may close it itself
        if store_location.factory.cleanup is not None:
            await store_location.factory.cleanup(store_location.path, store_location.space)


Reopen = Callable[[], Awaitable[Store]]


@pytest.fixture
async def reopen(store_location: StoreLocation) -> AsyncIterator[Reopen]:
    """Open another instance on the same location (the test closes the first one itself)."""
    opened: list[Store] = []

    async def _reopen() -> Store:
        s = store_location.make()
        await s.open()
        opened.append(s)
        return s

    yield _reopen
    for s in opened:
        await s.close()
