"""Registry of the stores the contract suite runs against.

Each registered factory turns the contract suite into one more parametrisation of the
``store`` fixture (test ids ``[embedded]``, ``[neo4j]``, ...). To add a store, create a module
``tests/store/factory_<name>.py`` (conftest imports every such module) that calls::

    register_store_factory("neo4j", StoreFactory(
        make=lambda path, space: Neo4jStore(settings, space=space),
        skip_reason=neo4j_unreachable,   # fast check; a string means "skip, and why"
        cleanup=drop_space,              # async (path, space); wipes the space after each test
    ))

``make(path, space)`` returns an *unopened* store for a location: ``path`` is a fresh per-test
directory and ``space`` a fresh per-test space name. Calling ``make`` again with the same
arguments must reach the same data (the persistence tests reopen stores that way).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from mnemoql.engine.store.base import Store
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.store.embedded._ann import AnnSettings


def _always_available() -> str | None:
    return None


@dataclass(frozen=True)
class StoreFactory:
    make: Callable[[Path, str], Store]
    skip_reason: Callable[[], str | None] = field(default=_always_available)
    cleanup: Callable[[Path, str], Awaitable[None]] | None = None


STORE_FACTORIES: dict[str, StoreFactory] = {}


def register_store_factory(name: str, factory: StoreFactory) -> None:
    """Add (or replace) a store under ``name``; its skip check runs at most once per session."""
    STORE_FACTORIES[name] = StoreFactory(
        make=factory.make,
        skip_reason=functools.cache(factory.skip_reason),
        cleanup=factory.cleanup,
    )


def load_factory_modules() -> None:
    """Import every sibling ``factory_*.py`` so it can register itself."""
    here = Path(__file__).parent
    for mod in pkgutil.iter_modules([str(here)]):
        if mod.name.startswith("factory_"):
            importlib.import_module(f"{__package__}.{mod.name}")


register_store_factory(
    "embedded", StoreFactory(make=lambda path, space: EmbeddedStore(path, space))
)
# The embedded store with its ANN indexes on from the first vector (min_vectors=0): the whole
# contract suite then runs through index candidates + exact rescoring, which must give the exact
# scan's answers on small data.
register_store_factory(
    "embedded-ann",
    StoreFactory(
        make=lambda path, space: EmbeddedStore(path, space, ann=AnnSettings(min_vectors=0))
    ),
)
