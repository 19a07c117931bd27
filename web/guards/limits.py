"""Fair limits per client, so one client cannot take the service from the others.

A client is its bearer token when it sends a valid one, else its address (in open mode every
local program is ``127.0.0.1``: one client). Each has, on ``/graphql`` and ``/mcp``:

- **refusals**: a bucket of ``refusals_burst`` refused requests (a bad token, a 4xx, a request
  refused for its size or shape), refilled at ``refusals_per_s``. Empty, the client's requests
  are answered 429 ``RATE_LIMITED`` before their body is read (2,044 bad-token requests in 20 s
  were one client's share of the loop before).
- **busy time**: the seconds its requests spent in the service, from a budget of
  ``busy_burst_s`` refilled at ``busy_per_s`` (2.0 by default: a client that waits for each
  answer before sending the next uses at most 1 s per s and is never limited; one that keeps
  16 requests going is, after a burst). Past it, 429 until the budget is positive again.
- **requests in flight**: at most ``max_requests_per_client`` at once; more is a 429.
- **subscriptions**: at most ``max_subscriptions_per_client`` running websocket operations,
  and ``max_subscriptions`` over all clients (``subscriptions.py`` holds them).

A 429 carries ``Retry-After`` (whole seconds) and says which limit and which setting. It is sent
after a pause of ``PAUSE_429_S`` (without blocking the loop): a client that ignores Retry-After
and asks again at once would otherwise spin, each 429 costing the loop as much as a small
request. The state of idle clients is dropped once ``MAX_CLIENTS`` are known, oldest first.

Clients that share a token (or, in open mode, every program on the machine) share its budget;
raise ``MNEMOQL_HTTP__BUSY_PER_S`` for such a deployment, or give each agent its own token.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mnemoql.engine.service_settings import HttpSettings
from mnemoql.web.auth import TokenTable, bearer
from mnemoql.web.guards.replies import refuse

log = logging.getLogger("mnemoql.guards")

LIMITED_PATHS = frozenset({"/graphql", "/mcp"})
MAX_CLIENTS = 10_000
PAUSE_429_S = 1.0
# GraphQL error codes that make a request a refusal (beside any HTTP 4xx but our own 429)
REFUSAL_CODES = frozenset({
    "UNAUTHENTICATED", "FORBIDDEN", "LIMIT_EXCEEDED", "PAYLOAD_TOO_LARGE", "INVALID_TEXT",
    "GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED", "BAD_REQUEST",
})  # fmt: skip


@dataclass(slots=True)
class Bucket:
    """A level refilled at ``rate`` per second up to ``burst``, from ``at`` (clock time)."""

    level: float
    at: float

    def refill(self, now: float, rate: float, burst: float) -> float:
        self.level = min(burst, self.level + (now - self.at) * rate)
        self.at = now
        return self.level


@dataclass(slots=True)
class _Client:
    refusals: Bucket
    busy: Bucket
    in_flight: int = 0
    subscriptions: int = 0


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a client must wait (in English, and in Chinese as ``zh``), and how long (seconds,
    rounded up for ``Retry-After``)."""

    message: str
    retry_after_s: int
    zh: str


class ClientLimits:
    """Every client's buckets, counters and subscriptions (one per service)."""

    def __init__(self, settings: HttpSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self.subscriptions = 0  # over all clients
        self.refused = 0  # 429s answered so far

    def _client(self, key: str) -> _Client:
        client = self._clients.get(key)
        if client is None:
            now = self.clock()
            s = self.settings
            client = _Client(Bucket(s.refusals_burst, now), Bucket(s.busy_burst_s, now))
            self._clients[key] = client
            self._forget_idle()
        else:
            self._clients.move_to_end(key)
        return client

    def _forget_idle(self) -> None:
        while len(self._clients) > MAX_CLIENTS:
            key, oldest = next(iter(self._clients.items()))
            if oldest.in_flight or oldest.subscriptions:
                self._clients.move_to_end(key)  # busy: keep it; drop the next one instead
                if all(c.in_flight or c.subscriptions for c in self._clients.values()):
                    return
                continue
            del self._clients[key]

    def refusals_left(self, key: str) -> Refusal | None:
        """A refusal if ``key`` has used up its refused requests (checked first, cheaply)."""
        s = self.settings
        bucket = self._client(key).refusals
        level = bucket.refill(self.clock(), s.refusals_per_s, s.refusals_burst)
        if level >= 1:
            return None
        return Refusal(
            f"too many refused requests from this client; wait, then fix what was refused "
            f"(MNEMOQL_HTTP__REFUSALS_BURST={s.refusals_burst:g}, "
            f"MNEMOQL_HTTP__REFUSALS_PER_S={s.refusals_per_s:g})",
            math.ceil((1 - level) / s.refusals_per_s),
            zh="本客户端被拒绝的请求过多；请稍候，再修正被拒绝的请求"
            f"（MNEMOQL_HTTP__REFUSALS_BURST={s.refusals_burst:g}，"
            f"MNEMOQL_HTTP__REFUSALS_PER_S={s.refusals_per_s:g}）",
        )

    def admit(self, key: str) -> Refusal | None:
        """Whether a request of ``key`` may start now; if so it is counted in flight until
        ``finish``."""
        s = self.settings
        refused = self.refusals_left(key)
        if refused is not None:
            return refused
        client = self._client(key)
        if client.in_flight >= s.max_requests_per_client:
            return Refusal(
                f"this client already has {client.in_flight} requests in flight; wait for their "
                f"answers (MNEMOQL_HTTP__MAX_REQUESTS_PER_CLIENT={s.max_requests_per_client})",
                1,
                zh=f"本客户端已有 {client.in_flight} 个请求在处理中；请等它们返回"
                f"（MNEMOQL_HTTP__MAX_REQUESTS_PER_CLIENT={s.max_requests_per_client}）",
            )
        level = client.busy.refill(self.clock(), s.busy_per_s, s.busy_burst_s)
        if level < 0:
            return Refusal(
                f"this client's requests have kept the service busy for more than its share; "
                f"send fewer at once (MNEMOQL_HTTP__BUSY_PER_S={s.busy_per_s:g}, "
                f"MNEMOQL_HTTP__BUSY_BURST_S={s.busy_burst_s:g})",
                math.ceil(-level / s.busy_per_s),
                zh="本客户端的请求占用服务过多；请减少同时发送的请求"
                f"（MNEMOQL_HTTP__BUSY_PER_S={s.busy_per_s:g}，"
                f"MNEMOQL_HTTP__BUSY_BURST_S={s.busy_burst_s:g}）",
            )
        client.in_flight += 1
        return None

    def finish(self, key: str, busy_s: float, refused: bool) -> None:
        """A request ``admit`` let in has ended after ``busy_s`` seconds."""
        client = self._client(key)
        client.in_flight = max(0, client.in_flight - 1)
        s = self.settings
        client.busy.refill(self.clock(), s.busy_per_s, s.busy_burst_s)
        client.busy.level -= busy_s
        if refused:
            self.count_refusal(key)

    def count_refusal(self, key: str) -> None:
        s = self.settings
        bucket = self._client(key).refusals
        bucket.refill(self.clock(), s.refusals_per_s, s.refusals_burst)
        bucket.level -= 1

    def open_subscription(self, key: str) -> Refusal | None:
        """Take a subscription slot for ``key`` (give it back with ``close_subscription``)."""
        s = self.settings
        client = self._client(key)
        if client.subscriptions >= s.max_subscriptions_per_client:
            return Refusal(
                f"this client already runs {client.subscriptions} subscriptions; complete one "
                f"first (MNEMOQL_HTTP__MAX_SUBSCRIPTIONS_PER_CLIENT="
                f"{s.max_subscriptions_per_client})",
                1,
                zh=f"本客户端已有 {client.subscriptions} 个订阅；请先结束一个"
                f"（MNEMOQL_HTTP__MAX_SUBSCRIPTIONS_PER_CLIENT={s.max_subscriptions_per_client}）",
            )
        if self.subscriptions >= s.max_subscriptions:
            return Refusal(
                f"the service already runs {self.subscriptions} subscriptions "
                f"(MNEMOQL_HTTP__MAX_SUBSCRIPTIONS={s.max_subscriptions}); try again later",
                5,
                zh=f"服务已有 {self.subscriptions} 个订阅"
                f"（MNEMOQL_HTTP__MAX_SUBSCRIPTIONS={s.max_subscriptions}）；请稍后再试",
            )
        client.subscriptions += 1
        self.subscriptions += 1
        return None

    def close_subscription(self, key: str) -> None:
        client = self._client(key)
        client.subscriptions = max(0, client.subscriptions - 1)
        self.subscriptions = max(0, self.subscriptions - 1)


def client_key(scope: Scope, tokens: TokenTable, token: str | None = None) -> str:
    """``token:<caller id>`` for a valid bearer token (``token``, else the Authorization
    header's), else ``addr:<address>``. An invalid token counts against its address, so
    changing it on every request gains nothing."""
    if token is None:
        token = bearer(_header(scope, b"authorization"))
    grant = tokens.lookup(token)
    if grant is not None and grant.caller:
        return f"token:{grant.caller}"
    client = scope.get("client")
    return f"addr:{client[0]}" if client else "addr:?"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _is_stream(scope: Scope) -> bool:
    """``GET /mcp``: a server-sent event stream, open as long as the client likes."""
    return scope["type"] == "http" and scope.get("method") == "GET" and scope.get("path") == "/mcp"


class RateLimit:
    """ASGI middleware applying ``ClientLimits`` to ``/graphql`` and ``/mcp``."""

    def __init__(self, app: ASGIApp, limits: ClientLimits, tokens: TokenTable) -> None:
        self.app = app
        self.limits = limits
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in {"http", "websocket"} or scope.get("path") not in LIMITED_PATHS:
            await self.app(scope, receive, send)
            return
        key = client_key(scope, self.tokens)
        scope.setdefault("state", {})["client_key"] = key
        if scope["type"] == "websocket" or _is_stream(scope):
            await self._long_lived(key, scope, receive, send)
            return
        refused = self.limits.admit(key)
        if refused is not None:
            await self._refuse(scope, send, key, refused)
            return
        status = 0

        async def watched_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        started = time.perf_counter()
        try:
            await self.app(scope, receive, watched_send)
        finally:
            codes = (scope.get("state") or {}).get("codes") or set()
            bad = (400 <= status < 500 and status != 429) or bool(REFUSAL_CODES & set(codes))
            self.limits.finish(key, time.perf_counter() - started, bad)

    async def _long_lived(self, key: str, scope: Scope, receive: Receive, send: Send) -> None:
        """A websocket or an event stream: only the refusals count (its subscriptions are
        held in ``subscriptions.py``); one closed before it was accepted is a refusal."""
        refused = self.limits.refusals_left(key)
        if refused is not None:
            await self._refuse(scope, send, key, refused)
            return
        accepted = False

        async def watched_send(message: Message) -> None:
            nonlocal accepted
            kind = message["type"]
            if kind in {"websocket.accept", "http.response.start"}:
                accepted = accepted or kind == "websocket.accept" or message["status"] < 400
            elif kind == "websocket.close" and not accepted:
                self.limits.count_refusal(key)
            await send(message)

        await self.app(scope, receive, watched_send)

    async def _refuse(self, scope: Scope, send: Send, key: str, refused: Refusal) -> None:
        self.limits.refused += 1
        if self.limits.refused % 100 == 1:  # the first and then every 100th: logs stay short
            log.info("429 for %s (%d so far): %s", key.split(":")[0], self.limits.refused,
                     refused.message)  # fmt: skip
        headers = [(b"retry-after", str(refused.retry_after_s).encode())]
        await asyncio.sleep(PAUSE_429_S)
        await refuse(scope, send, 429, "RATE_LIMITED", refused.message, headers, zh=refused.zh)
