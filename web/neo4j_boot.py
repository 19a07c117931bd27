"""Choosing and reaching Neo4j for ``--store neo4j``.

- ``external`` (or ``auto`` with a URI): connect to ``MNEMOQL_NEO4J__URI`` with the configured
  user and password; the server must be 5.23+ (vector functions), checked when the store opens
  (``Neo4jStore.open``).
- ``managed`` (or ``auto`` without a URI): mnemoql installs Neo4j 5.26 Community from Maven
  Central into the user cache, and runs it under ``<data dir>/neo4j`` on a loopback port with a
  generated password (``mnemoql neo4j install|start|stop|status`` manage it by hand). A server
  the service started is stopped when the service stops (``stop_started``); one that was
  already running (``mnemoql neo4j start``) is left running.

The service that starts a managed server owns it: it holds the home's owner lock
(``engine.store.neo4j.owner``, ``<home>/run/owner``) while it lives, with its pid and the server's.
A service killed with ``kill -9`` cannot stop its server, but the kernel frees the lock; the
next service finds the server running under a record whose owner is gone, adopts it (no
second start) and stops it when it stops itself. A second service beside a live owner shares
the server and never stops it. SIGTERM or SIGINT during the install or the start (tens of
seconds on a first run) stops Maven or the JVM at once (``_signals_cancel``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

from mnemoql.engine.config import Settings
from mnemoql.engine.errors import StoreUnavailable
from mnemoql.engine.store.base import Store

if TYPE_CHECKING:
    from mnemoql.engine.store.neo4j.managed import ManagedNeo4j
    from mnemoql.engine.store.neo4j.owner import Claim

log = logging.getLogger("mnemoql.neo4j")
_started: dict[str, tuple[str, str, str]] = {}
_ours: dict[str, tuple[ManagedNeo4j, Claim]] = {}  # the servers this process owns, by home
_lock = threading.Lock()


def managed_endpoint(settings: Settings) -> tuple[str, str, str]:
    """(uri, user, password) of the managed server, installing and starting it if needed."""
    from mnemoql.engine.store.neo4j.managed import ManagedNeo4j

    home = settings.data_dir / "neo4j"
    with _lock:
        if str(home) not in _started:
            cfg = settings.neo4j
            server = ManagedNeo4j(home, cfg.version, cfg.heap, cfg.page_cache)
            server.on_progress = _progress
            with _signals_cancel(server.cancel):
                _bring_up(server)
            _started[str(home)] = (server.uri, server.user, server.password)
        return _started[str(home)]


def _bring_up(server: ManagedNeo4j) -> None:
    """Install, claim, adopt or start (see the module docstring)."""
    if not server.installed():
        log.warning("installing Neo4j %s from Maven Central into %s (first run only)",
                    server.version, server.cache_dir)  # fmt: skip
        server.install()
    claim = server.owner.claim()
    running = server.running_pid()
    if claim is None:  # a live service owns it: share it, never stop it
        log.info("sharing the managed Neo4j of another mnemoql process (home %s)", server.home)
        server.ensure_running()
        return
    try:
        if running is not None:
            if claim.previous is None or claim.previous[1] != running:
                log.info("managed Neo4j already running on %s (left running)", server.uri)
                server.owner.release(claim)
                return
            log.warning(
                "adopting the managed Neo4j (pid %d) left running by mnemoql process %d, which "
                "is gone; it stops when this service stops", running, claim.previous[0],
            )  # fmt: skip
        else:
            log.info("starting the managed Neo4j %s (home %s); this takes ~20 s",
                     server.version, server.home)  # fmt: skip
            server.start()
            running = server.running_pid()
            log.info("managed Neo4j ready on %s", server.uri)
        server.owner.record(claim, running or 0)
    except BaseException:
        server.owner.release(claim)
        raise
    _ours[str(server.home)] = (server, claim)


def _progress(what: str, seconds: float) -> None:
    log.info("managed Neo4j: still %s (%.0f s)", what, seconds)


@contextlib.contextmanager
def _signals_cancel(cancel: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set ``cancel`` (an install or a start then stops at once), then go on
    to the handler that was there (uvicorn's, which shuts the server down). Python runs signal
    handlers on the main thread only; elsewhere this changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    arrived: list[signal.Signals] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        cancel.set()
        sig = signal.Signals(signum)
        arrived.append(sig)
        before = previous[sig]
        if callable(before):
            before(signum, frame)

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)
        for sig in arrived:  # a default action (terminate) happens now, with nothing left running
            if previous[sig] == signal.SIG_DFL:
                signal.raise_signal(sig)


def stop_started() -> None:
    """Stop the managed servers this process owns (at the service's shutdown)."""
    with _lock:
        for home, (server, claim) in list(_ours.items()):
            log.info("stopping the managed Neo4j it owns (home %s)", home)
            try:
                server.stop()
            finally:
                server.owner.release(claim)
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
        return store(cfg.uri, cfg.user, password)
    return store(*managed_endpoint(settings))

