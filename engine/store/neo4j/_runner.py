"""The Neo4j store's connection: the driver, and the one way every helper reaches the database.

A ``Runner`` is bound to one server, database and memory space. ``run`` is one statement in its
own managed transaction, ``read`` / ``write`` run a transaction function (``execute_*`` retries
transient failures), ``schema`` runs a schema statement in a managed transaction of its own
(Neo4j refuses schema and data changes in one transaction). A server that is down, or refuses
the credentials, becomes ``StoreUnavailable`` with a message that says what to check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

from neo4j import (
    AsyncDriver,
    AsyncGraphDatabase,
    AsyncManagedTransaction,
    AsyncSession,
    RoutingControl,
)
from neo4j.exceptions import AuthError, ClientError, ServiceUnavailable, SessionExpired

from mnemoql.engine.errors import StoreUnavailable
from mnemoql.engine.redact import mask_url
from mnemoql.engine.store.neo4j import _records as rec

T = TypeVar("T")
TxFn = Callable[[AsyncManagedTransaction], Awaitable[T]]

MIN_VERSION: Final = (5, 23)  # vector.similarity.cosine and the vector index procedures
UNREACHABLE: Final = (ServiceUnavailable, SessionExpired, AuthError)
_SCHEMA_RACE: Final = (
    "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
    "Neo.ClientError.Schema.ConstraintAlreadyExists",
    "Neo.ClientError.Schema.IndexAlreadyExists",
)
_VERSION: Final = "CALL dbms.components() YIELD versions RETURN versions[0] AS v"


class Runner:
    """The driver of one store, and its statements, scoped to ``space``."""

    def __init__(
        self,
        uri: str,
        user: str,
        password: str,
        database: str | None,
        space: str,
        connection_timeout: float,
    ) -> None:
        self.uri = uri
        self.user = user
        self._password = password
        self.database = database
        self.space = space
        self._timeout = connection_timeout
        self._driver: AsyncDriver | None = None
        self.retries = 0  # write transactions re-run by the driver (see ``write``)

    @property
    def driver(self) -> AsyncDriver:
        if self._driver is None:
            raise StoreUnavailable(
                "the Neo4j store is not open; call open() first", zh="存储未打开"
            )
        return self._driver

    @property
    def connected(self) -> bool:
        return self._driver is not None

    async def connect(self) -> None:
        """Create the driver and reach the server once (``verify_connectivity`` does not
        retry: a server that is down fails at once)."""
        self._driver = AsyncGraphDatabase.driver(
            self.uri,
            auth=(self.user, self._password),
            connection_timeout=self._timeout,
            connection_acquisition_timeout=self._timeout * 6,
            max_transaction_retry_time=10.0,
            notifications_min_severity="WARNING",
            # "property key does not exist" on optional properties (embedding_zero, description)
            notifications_disabled_classifications=["UNRECOGNIZED"],
        )
        await self._driver.verify_connectivity()

    async def close(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            await driver.close()

    async def ping(self, timeout: float) -> bool:
        driver = self._driver
        if driver is None:
            return False
        try:
            await asyncio.wait_for(driver.verify_connectivity(), timeout)
        except Exception:
            return False
        return True

    def unavailable(self, exc: Exception) -> StoreUnavailable:
        if isinstance(exc, AuthError):
            return StoreUnavailable(
                f"Neo4j at {mask_url(self.uri)} rejected the credentials of user {self.user!r}; "
                "check the configured user and password",
                zh="Neo4j 认证失败",
            )
        return StoreUnavailable(
            f"Neo4j at {mask_url(self.uri)} is unavailable ({type(exc).__name__}); check that "
            "it runs and is reachable",
            zh="Neo4j 不可用",
        )

    async def check_version(self) -> None:
        """Refuse a server older than ``MIN_VERSION`` (no vector functions) with a clear
        message; a version that cannot be read gets the chance to work."""
        try:
            rows = await self.run(_VERSION)
        except ClientError:
            return
        version = parse_version(rows[0]["v"]) if rows else None
        if version is not None and version < MIN_VERSION:
            shown = ".".join(map(str, version))
            raise StoreUnavailable(
                f"Neo4j {shown} lacks vector support; mnemoql needs 5.23 or newer "
                "(or use the managed Neo4j: unset MNEMOQL_NEO4J__URI)",
                zh=f"Neo4j {shown} 不支持向量检索，需要 5.23+",
            )

    async def run(
        self, query: str, params: dict[str, Any] | None = None, *, writable: bool = False
    ) -> list[dict[str, Any]]:
        """One statement in its own managed transaction (retried on transient errors)."""
        try:
            result = await self.driver.execute_query(
                query,
                rec.quiet({"space": self.space, **(params or {})}),
                routing_=RoutingControl.WRITE if writable else RoutingControl.READ,
                database_=self.database,
            )
        except UNREACHABLE as exc:
            raise self.unavailable(exc) from exc
        # Plain values and maps only (see _write.run): no Record.data() walk over vectors.
        return [dict(zip(result.keys, r, strict=True)) for r in result.records]

    def _session(self) -> AsyncSession:
        # Share execute_query's bookmarks: on a cluster, a read after a write sees the write.
        driver = self.driver
        return driver.session(
            database=self.database, bookmark_manager=driver.execute_query_bookmark_manager
        )

    async def write(self, fn: TxFn[T]) -> T:
        """``fn`` as one write transaction; any exception rolls everything back. Each re-run
        after a transient failure (a deadlock, a leader switch) counts in ``retries``."""
        attempts = 0

        async def attempt(tx: AsyncManagedTransaction) -> T:
            nonlocal attempts
            attempts += 1
            if attempts > 1:
                self.retries += 1
            return await fn(tx)

        try:
            async with self._session() as session:
                return await session.execute_write(attempt)
        except UNREACHABLE as exc:
            raise self.unavailable(exc) from exc

    async def read(self, fn: TxFn[T]) -> T:
        try:
            async with self._session() as session:
                return await session.execute_read(fn)
        except UNREACHABLE as exc:
            raise self.unavailable(exc) from exc

    async def schema(self, statement: str, params: dict[str, Any] | None = None) -> None:
        """A schema statement in its own managed transaction, which the driver retries on
        transient failures like every other statement here (replicas opening a fresh database
        at once deadlock on a label's lock: the loser's retry then finds the rule made)."""
        try:
            await self.driver.execute_query(
                statement, params or {}, routing_=RoutingControl.WRITE, database_=self.database
            )
        except ClientError as exc:
            if exc.code not in _SCHEMA_RACE:  # a concurrent open() created it first
                raise
        except UNREACHABLE as exc:
            raise self.unavailable(exc) from exc

def parse_version(text: object) -> tuple[int, int] | None:
    """``"5.26.0"`` -> ``(5, 26)``; None when it does not read as a version."""
    parts = str(text).split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None
