"""A fake OpenAI-compatible model service on loopback: real HTTP, deterministic answers.

Endpoints:
- ``POST /v1/embeddings``: the hashing embedder's vectors at the requested ``dimensions`` (so
  similarity means something), ``data[]`` shuffled to exercise reordering by ``index``;
  more than ``max_batch`` inputs is a 400, as DashScope does.
- ``POST /v1/chat/completions``: a queued scripted extraction if any, else the offline
  extractor's result for the user message's content (after the ``当前时间: ...`` header);
  every second reply is wrapped in a ```json fence.
- ``POST /v1/systemone`` and ``POST /api/alpha/decisions``: the jev judge; ``noul`` from
  ``set_judge()`` or ``judge_default``.

Fault modes, per endpoint, for the next N calls: ``fail("embeddings", "http_500", times=2)``.
Every request is recorded (path, headers, JSON body) for assertions.

    with FakeModelServer() as fake:
        fake.fail("chat", "timeout")
        ... fake.base_url ...   # "http://127.0.0.1:PORT/v1"
        fake.requests_to("/v1/chat/completions")
"""

from __future__ import annotations

import json
import random
import sys
import threading
import unicodedata
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from mnemoql.engine.providers.hashing import HashingEmbedder
from mnemoql.engine.providers.offline import OfflineExtractor
from mnemoql.prompts.extraction import Extraction

Endpoint = Literal["embeddings", "chat", "judge"]
FaultMode = Literal[
    "http_500", "http_429", "http_400", "http_401", "timeout", "malformed_json",
    "wrong_dimensions", "empty_events",
]
FAULT_MODES: tuple[str, ...] = FaultMode.__args__  # type: ignore[attr-defined]

_PATHS: dict[str, Endpoint] = {
    "/v1/embeddings": "embeddings",
    "/v1/chat/completions": "chat",
    "/v1/systemone": "judge",
    "/api/alpha/decisions": "judge",
}
_HEADER = "当前时间: "


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    json: Any  # None when the body is not JSON

    @property
    def endpoint(self) -> Endpoint | None:
        return _PATHS.get(self.path)


def _key(name: str) -> str:
    return unicodedata.normalize("NFKC", name).casefold().strip()


class FakeModelServer:
    """A threaded HTTP server on 127.0.0.1 with a free port. Not started by the constructor."""

    def __init__(
        self,
        *,
        max_batch: int = 10,
        shuffle: bool = True,
        fence: Literal["alternate", "always", "never"] = "alternate",
        timeout_sleep_s: float = 2.0,
        delay_s: float = 0.0,
        require_auth: bool = True,
    ) -> None:
        self.max_batch = max_batch
        self.shuffle = shuffle
        self.fence = fence
        self.timeout_sleep_s = timeout_sleep_s
        self.delay_s = delay_s
        self.require_auth = require_auth
        self.judge_default = 0.0
        self.requests: list[RecordedRequest] = []
        self.max_in_flight: dict[Endpoint, int] = {"embeddings": 0, "chat": 0, "judge": 0}
        self._in_flight: dict[Endpoint, int] = {"embeddings": 0, "chat": 0, "judge": 0}
        self._faults: dict[Endpoint, deque[FaultMode | None]] = {
            "embeddings": deque(), "chat": deque(), "judge": deque()
        }
        self._scripted: deque[str] = deque()
        self._judge_table: dict[frozenset[str], float] = {}
        self._chat_count = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._extractor = OfflineExtractor()

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeModelServer:
        if self._server is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        server = _Server(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        server.block_on_close = False  # idle keep-alive handlers must not hold up stop()
        self._stopping.clear()
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05},
            name="fake-model-server", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # wakes handlers sleeping in "timeout" mode
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        if self._server is None:
            raise RuntimeError("the fake model server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``.../v1``) for embeddings and chat."""
        return self.url + "/v1"

    @property
    def judge_url(self) -> str:
        return self.url + "/v1/systemone"

    @property
    def decisions_url(self) -> str:
        return self.url + "/api/alpha/decisions"

    # -- scripting ------------------------------------------------------------------------------

    def fail(self, endpoint: Endpoint, mode: FaultMode, times: int = 1) -> None:
        """Make the next ``times`` calls to ``endpoint`` fail with ``mode``."""
        if endpoint not in self._faults:
            raise ValueError(f"unknown endpoint {endpoint!r}")
        if mode not in FAULT_MODES:
            raise ValueError(f"unknown fault mode {mode!r}")
        with self._lock:
            self._faults[endpoint].extend([mode] * times)

    def fail_after(self, endpoint: Endpoint, mode: FaultMode, *, skip: int, times: int = 1) -> None:
        """Let the next ``skip`` calls to ``endpoint`` through, then fail ``times`` calls."""
        self.fail(endpoint, mode, times=0)  # validates the arguments
        with self._lock:
            self._faults[endpoint].extend([None] * skip + [mode] * times)

    def queue_extraction(self, extraction: Extraction | dict[str, Any] | str) -> None:
        """The next chat reply (a string is sent as the raw message content)."""
        if isinstance(extraction, Extraction):
            text = extraction.model_dump_json()
        elif isinstance(extraction, dict):
            text = json.dumps(extraction, ensure_ascii=False)
        else:
            text = extraction
        with self._lock:
            self._scripted.append(text)

    def set_judge(self, a: str, b: str, noul: float) -> None:
        """The judge's answer for the pair (a, b), in either order, by normalised name."""
        with self._lock:
            self._judge_table[frozenset({_key(a), _key(b)})] = noul

    def reset(self) -> None:
        """Forget requests, faults, scripts and judge answers."""
        with self._lock:
            self.requests.clear()
            for q in self._faults.values():
                q.clear()
            self._scripted.clear()
            self._judge_table.clear()
            self._chat_count = 0
            self.judge_default = 0.0
            self.max_in_flight = {"embeddings": 0, "chat": 0, "judge": 0}

    def requests_to(self, endpoint_or_path: str) -> list[RecordedRequest]:
        """Recorded requests for an endpoint name (``"embeddings"``) or a path."""
        with self._lock:
            return [
                r for r in self.requests
                if r.path == endpoint_or_path or r.endpoint == endpoint_or_path
            ]

    # -- handling (called from handler threads) ------------------------------------------------

    def _record(self, request: RecordedRequest) -> FaultMode | None:
        with self._lock:
            self.requests.append(request)
            endpoint = request.endpoint
            if endpoint is None:
                return None
            self._in_flight[endpoint] += 1
            self.max_in_flight[endpoint] = max(
                self.max_in_flight[endpoint], self._in_flight[endpoint]
            )
            queue = self._faults[endpoint]
            return queue.popleft() if queue else None

    def _done(self, endpoint: Endpoint) -> None:
        with self._lock:
            self._in_flight[endpoint] -= 1

    def _answer(self, req: RecordedRequest, fault: FaultMode | None) -> tuple[int, bytes, dict[str, str]]:
        endpoint = req.endpoint
        if endpoint is None:
            return _error(404, f"no route for {req.path}")
        if self.delay_s:
            self._stopping.wait(self.delay_s)
        if fault == "timeout":
            self._stopping.wait(self.timeout_sleep_s)
        elif fault in {"http_500", "http_429", "http_400", "http_401"}:
            status = int(fault.removeprefix("http_"))
            code, body, headers = _error(status, f"injected HTTP {status}")
            if status == 429:
                headers["Retry-After"] = "0"
            return code, body, headers
        elif fault == "malformed_json" and endpoint != "chat":
            return 200, b'{"data": [ this is not json', {"Content-Type": "application/json"}
        if self.require_auth and not req.headers.get("authorization", "").startswith("Bearer "):
            return _error(401, "missing bearer token")
        if not isinstance(req.json, dict):
            return _error(400, "the body must be a JSON object")
        if endpoint == "embeddings":
            return self._embeddings(req.json, fault)
        if endpoint == "chat":
            return self._chat(req.json, fault)
        return self._judge(req.json)

    def _embeddings(self, body: dict[str, Any], fault: FaultMode | None) -> tuple[int, bytes, dict[str, str]]:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return _error(400, "input must be a string or a list of strings")
        if not inputs or len(inputs) > self.max_batch:
            return _error(400, f"batch size must be 1..{self.max_batch}, got {len(inputs)}")
        dims = body.get("dimensions", 1024)
        if not isinstance(dims, int) or dims < 1:
            return _error(400, "dimensions must be a positive integer")
        vectors = HashingEmbedder(dims).embed_sync(inputs)
        if fault == "wrong_dimensions":
            vectors = vectors[:, :-1] if dims > 1 else vectors.repeat(2, axis=1)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in vec]}
            for i, vec in enumerate(vectors)
        ]
        if self.shuffle:
            random.Random(len(data)).shuffle(data)
        tokens = sum(len(t) for t in inputs)
        return _json(200, {
            "object": "list", "data": data, "model": body.get("model"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        })

    def _chat(self, body: dict[str, Any], fault: FaultMode | None) -> tuple[int, bytes, dict[str, str]]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(400, "messages must be a non-empty list")
        user = next(
            (m.get("content", "") for m in reversed(messages)
             if isinstance(m, dict) and m.get("role") == "user"),
            "",
        )
        content = str(user)
        if content.startswith(_HEADER):
            content = content.split("\n\n", 1)[1] if "\n\n" in content else ""
        with self._lock:
            scripted = self._scripted.popleft() if self._scripted else None
            self._chat_count += 1
            count = self._chat_count
        if fault == "malformed_json":
            text = '{"events": [{"ref": "e1", "summary": "truncated'
        elif fault == "empty_events":
            text = json.dumps({"events": [], "persons": [], "concepts": [], "locations": []})
        elif scripted is not None:
            text = scripted
        else:
            text = self._extractor.extract_sync(content).model_dump_json(exclude_none=True)
        if self.fence == "always" or (self.fence == "alternate" and count % 2 == 0):
            text = f"```json\n{text}\n```"
        return _json(200, {
            "id": f"chatcmpl-fake-{count}", "object": "chat.completion", "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": len(content), "completion_tokens": len(text),
                      "total_tokens": len(content) + len(text)},
        })

    def _judge(self, body: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
        state = body.get("state")
        questions = body.get("questions")
        if not isinstance(state, dict) or not isinstance(questions, dict) or not questions:
            return _error(400, "state and questions are required")
        try:
            pair = frozenset({_key(state["a"]["name"]), _key(state["b"]["name"])})
        except (KeyError, TypeError):
            return _error(400, "state.a.name and state.b.name are required")
        with self._lock:
            noul = self._judge_table.get(pair, self.judge_default)
        return _json(200, {
            "answers": {name: {"noul": noul} for name in questions},
            "model": body.get("model"),
            "usage": {"input_tokens": 1, "output_tokens": 1},
        })


def _json(status: int, payload: Any) -> tuple[int, bytes, dict[str, str]]:
    return status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), {
        "Content-Type": "application/json"
    }


def _error(status: int, message: str) -> tuple[int, bytes, dict[str, str]]:
    return _json(status, {"error": {"message": message, "type": "fake_error", "code": status}})


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeModelServer
    protocol_version = "HTTP/1.1"
    wbufsize = -1  # one write per response: avoids Nagle + delayed-ACK stalls
    timeout = 30  # idle keep-alive connections end by themselves

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        req = RecordedRequest(
            method="POST", path=self.path.split("?", 1)[0],
            headers={k.lower(): v for k, v in self.headers.items()}, body=raw, json=payload,
        )
        fault = self.fake._record(req)
        try:
            status, body, headers = self.fake._answer(req, fault)
        finally:
            if req.endpoint is not None:
                self.fake._done(req.endpoint)
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout mode)

    def do_GET(self) -> None:
        status, body, headers = _error(405, "use POST")
        self.send_response(status)
        self.send_header("Content-Type", headers["Content-Type"])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean; requests are recorded instead
