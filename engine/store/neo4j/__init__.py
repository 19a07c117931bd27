"""Neo4j 5.26 behind the Store protocol: the adapter and a managed local server.

Imports are lazy so ``python -m mnemoql.engine.store.neo4j.managed`` runs without importing the
module twice, and importing the package costs nothing until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mnemoql.engine.store.neo4j.managed import ManagedNeo4j
    from mnemoql.engine.store.neo4j.store import Neo4jStore

__all__ = ["ManagedNeo4j", "Neo4jStore"]


def __getattr__(name: str) -> Any:
    if name == "ManagedNeo4j":
        from mnemoql.engine.store.neo4j.managed import ManagedNeo4j

        return ManagedNeo4j
    if name == "Neo4jStore":
        from mnemoql.engine.store.neo4j.store import Neo4jStore

        return Neo4jStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
