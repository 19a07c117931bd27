"""Choosing and reaching Neo4j for ``--store neo4j``.

- ``external`` (or ``auto`` with a URI): connect to ``MNEMOQL_NEO4J__URI`` with the configured
  user and password; the server must be 5.23+ (vector functions), checked when the store opens.
- ``managed`` (or ``auto`` without a URI): mnemoql installs Neo4j 5.26 Community from Maven
  Central into the user cache, and runs it under ``<data dir>/neo4j`` on a loopback port with a
  generated password (``mnemoql neo4j install|start|stop|status`` manage it by hand). A server
  the service started is stopped when the service stops (``stop_started``); one that was
  already running (``mnemoql neo4j start``) is left running.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from mnemoql.engine.config import Settings
from mnemoql.engine.errors import StoreUnavailable
from mnemoql.engine.store.base import Store

if TYPE_CHECKING:
    from mnemoql.engine.store.neo4j.managed import ManagedNeo4j

log = logging.getLogger("mnemoql.neo4j")
MIN_VERSION = (5, 23)
_started: dict[str, tuple[str, str, str]] = {}
_ours: dict[str, ManagedNeo4j] = {}  # the servers this process started, by home
_lock = threading.Lock()


def managed_endpoint(settings: Settings) -> tuple[str, str, str]:
    """(uri, user, password) of the managed server, installing and starting it if needed."""
    from mnemoql.engine.store.neo4j.managed import ManagedNeo4j

    home = settings.data_dir / "neo4j"
    with _lock:
        if str(home) not in _started:
            cfg = settings.neo4j
            server = ManagedNeo4j(home, cfg.version, cfg.heap, cfg.page_cache)
            if not server.installed:
                log.warning("installing Neo4j %s from Maven Central (first run only)", cfg.version)
                server.install()
            if server.ensure_running():
                _ours[str(home)] = server
            log.info("managed Neo4j on %s (home %s)", server.uri, home)
            _started[str(home)] = (server.uri, server.user, server.password)
        return _started[str(home)]


def stop_started() -> None:
    """Stop the managed servers this process started (at the service's shutdown)."""
    with _lock:
        for home, server in list(_ours.items()):
            log.info("stopping the managed Neo4j it started (home %s)", home)
            server.stop()
            del _ours[home]
            _started.pop(home, None)


def neo4j_store(settings: Settings, space: str = "default") -> Store:
    """The Neo4j store of one memory space, not yet opened."""
    from mnemoql.engine.store.neo4j.store import Neo4jStore

    cfg = settings.neo4j

    def store(uri: str, user: str, password: str) -> Neo4jStore:
        return Neo4jStore(
            uri, user, password, cfg.database, space=space,
            index_min_events=None if cfg.routes == "exact" else cfg.index_min_events,
            index_overfetch=cfg.index_overfetch, space_indexes=cfg.space_indexes == "auto",
        )  # fmt: skip

    if cfg.mode == "external" or (cfg.mode == "auto" and cfg.uri):
        if not cfg.uri:
            raise StoreUnavailable(
                "MNEMOQL_NEO4J__MODE=external needs MNEMOQL_NEO4J__URI (e.g. bolt://host:7687)",
                zh="外部 Neo4j 需要 URI",
            )
        password = cfg.password.get_secret_value() if cfg.password else ""
        return VersionChecked(store(cfg.uri, cfg.user, password))
    return store(*managed_endpoint(settings))


class VersionChecked:
    """A Neo4jStore that refuses servers older than 5.23 with a clear message when opened."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner

    @property
    def inner(self) -> Store:
        """The wrapped store (``memoryIndex.store`` names it)."""
        return self._inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    async def open(self) -> None:
        await self._inner.open()
        version = await server_version(self._inner)
        if version is not None and version < MIN_VERSION:
            await self._inner.close()
            shown = ".".join(map(str, version))
            raise StoreUnavailable(
                f"Neo4j {shown} lacks vector support; mnemoql needs 5.23 or newer "
                "(or use the managed Neo4j: unset MNEMOQL_NEO4J__URI)",
                zh=f"Neo4j {shown} 不支持向量检索，需要 5.23+",
            )


async def server_version(store: object) -> tuple[int, int] | None:
    """The server's (major, minor), or None when it cannot be read."""
    run = getattr(store, "_run", None)
    if run is None:
        return None
    try:
        rows = await run("CALL dbms.components() YIELD versions RETURN versions[0] AS v")
    except Exception:  # an unusual server still gets the chance to work
        return None
    if not rows:
        return None
    parts = str(rows[0]["v"]).split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None
