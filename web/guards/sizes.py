"""The request body at the edge (``BodyLimit``, ASGI middleware): its size, how long it may take
to arrive, and a client that leaves before sending it all.

- A body over ``max_bytes`` -- announced by ``Content-Length`` or found while streaming -- is
  an HTTP 413 with a coded ``PAYLOAD_TOO_LARGE`` error; the app never sees the rest of it.
- A body that has not fully arrived ``timeout_s`` after the request began (a client trickling
  it, or stalling with the connection open) is an HTTP 408 ``REQUEST_TIMEOUT``, and the
  connection is closed: uvicorn itself would wait for it as long as the client liked.
- A client that disconnects mid-body is one INFO line (uvicorn logged an ERROR with a 50-line
  ``ClientDisconnect`` traceback); nothing is answered, and the connection is let go.

The body is read here, whole, before the app runs (``BodyLimit``).
"""

from __future__ import annotations

import asyncio
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mnemoql.web.guards.replies import refuse

log = logging.getLogger("mnemoql.guards")


class BodyLimit:
    """ASGI middleware: reads an HTTP request's whole body first, within ``max_bytes`` and
    ``timeout_s``, then hands it to the app in one message.

    The app never sees part of a body: neither strawberry nor the MCP SDK (which logs any
    exception while reading one with a traceback) meets a client that left or stalled. Both
    read the whole body into memory anyway, so reading it here costs no more.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: float = 30.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = self._declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._too_large(scope, send)
            return
        chunks: list[bytes] = []
        seen = 0
        try:
            async with asyncio.timeout(self.timeout_s):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        log.info(
                            "%s disconnected before sending its whole request body "
                            "(%d of %s bytes)",
                            _who(scope), seen, declared if declared is not None else "?",
                        )  # fmt: skip
                        return
                    chunk = message.get("body", b"")
                    seen += len(chunk)
                    if seen > self.max_bytes:
                        await self._too_large(scope, send)
                        return
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            log.info(
                "%s: the request body did not arrive within %g s (%d of %s bytes); closed",
                _who(scope), self.timeout_s, seen, declared if declared is not None else "?",
            )  # fmt: skip
            await self._too_slow(scope, send)
            return
        body: bytes | None = b"".join(chunks)

        async def replay() -> Message:
            nonlocal body
            if body is None:  # the app waits for http.disconnect (a stream)
                return await receive()
            message: Message = {"type": "http.request", "body": body, "more_body": False}
            body = None
            return message

        await self.app(scope, replay, send)

    @staticmethod
    def _declared_length(scope: Scope) -> int | None:
        for key, value in scope.get("headers", []):
            if key == b"content-length":
                try:
                    return int(value)
                except ValueError:
                    return None
        return None

    async def _too_large(self, scope: Scope, send: Send) -> None:
        message = (
            f"the request body is larger than {self.max_bytes} bytes "
            "(MNEMOQL_LIMITS__MAX_BODY_BYTES); send less, or split a saveMany"
        )
        zh = (
            f"请求体超过 {self.max_bytes} 字节（MNEMOQL_LIMITS__MAX_BODY_BYTES）；"
            "请少发，或拆分 saveMany"
        )
        await refuse(scope, send, 413, "PAYLOAD_TOO_LARGE", message, _CLOSE, zh=zh)

    async def _too_slow(self, scope: Scope, send: Send) -> None:
        message = (
            f"the request body did not arrive within {self.timeout_s:g} s "
            "(MNEMOQL_LIMITS__BODY_TIMEOUT_S); send it at once"
        )
        zh = f"请求体未在 {self.timeout_s:g} 秒内到达（MNEMOQL_LIMITS__BODY_TIMEOUT_S）；请一次发完"
        await refuse(scope, send, 408, "REQUEST_TIMEOUT", message, _CLOSE, zh=zh)


_CLOSE = [(b"connection", b"close")]


def _who(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "a client"
