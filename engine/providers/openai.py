"""OpenAI-compatible providers over an injected ``httpx.AsyncClient`` (SPEC §1.3, §1.16).

- ``OpenAIEmbedder``: ``POST {base}/embeddings`` (DashScope by default), at most ``batch_size``
  inputs per request, identical texts sent once, ``data[]`` reordered by ``index``.
- ``ChatExtractor``: ``POST {base}/chat/completions`` in JSON mode (DeepSeek by default), the
  reply validated by :class:`prompts.extraction.Extraction`.
- ``JevJudge``: the TypeSafe System One ``noul`` question "are A and B the same concept?".
- ``ChatJson``: any other JSON-mode chat call (recall cues and the recall evaluator).

Their requests go through ``openai_http.Http``: transient failures (429, 5xx, timeouts,
dropped connections) are retried with a doubling backoff; everything else fails at once. Keys
live in ``SecretStr`` until the header is built and never reach an exception, a repr or a log
line.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import httpx
import numpy as np
from pydantic import SecretStr, ValidationError

from mnemoql.engine.errors import EmbeddingDimension, ExtractionInvalid
from mnemoql.engine.extraction_input import refused_extraction
from mnemoql.engine.messages import message
from mnemoql.engine.models import Vector
from mnemoql.engine.providers.base import EmbedKind
from mnemoql.engine.providers.openai_http import Http, Sleep, join_url, upstream
from mnemoql.engine.redact import mask_url
from mnemoql.prompts.extraction import SYSTEM_PROMPT, Extraction, user_message

# Concurrent embedding requests of one embed() call.
EMBED_CONCURRENCY = 4

JUDGE_INSTRUCTIONS = "A 与 B 是否指同一个概念？"
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\n?(?P<body>.*?)\n?[ \t]*```\s*$", re.DOTALL)


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (SPEC §1.3.8)."""

    provider: ClassVar[str] = "openai"

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        model: str,
        dimensions: int,
        api_key: SecretStr | None,
        batch_size: int = 10,
        retries: int = 2,
        *,
        timeout_s: float | None = None,
        concurrency: int = EMBED_CONCURRENCY,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.dimensions = dimensions
        self.batch_size = max(1, batch_size)
        self.concurrency = max(1, concurrency)
        self._http = Http(client, "embedding", api_key, retries, timeout_s, sleep)

    def __repr__(self) -> str:
        return (
            f"OpenAIEmbedder(base_url={mask_url(self.base_url)!r}, model={self.model!r}, "
            f"dimensions={self.dimensions})"
        )

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vector:
        """Rows in input order, each L2-normalised. ``kind`` is not part of the wire format."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        self._http.headers()  # fail on a missing key before starting any request
        batches = [unique[i : i + self.batch_size] for i in range(0, len(unique), self.batch_size)]
        gate = asyncio.Semaphore(self.concurrency)

        async def run(batch: list[str]) -> Vector:
            async with gate:
                return await self._batch(batch)

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(run(b)) for b in batches]
        except BaseExceptionGroup as eg:
            raise _first(eg) from None
        matrix = np.concatenate([t.result() for t in tasks], axis=0)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        matrix = matrix / norms
        row = {text: i for i, text in enumerate(unique)}
        out: Vector = np.ascontiguousarray(matrix[[row[t] for t in texts]], dtype=np.float32)
        return out

    async def _batch(self, batch: list[str]) -> Vector:
        body = {
            "model": self.model,
            "input": batch,
            "dimensions": self.dimensions,
            "encoding_format": "float",
        }
        answer = await self._http.post(join_url(self.base_url, "/embeddings"), body)
        try:
            data = sorted(answer["data"], key=lambda item: int(item["index"]))
            rows = [item["embedding"] for item in data]
            indexes = [int(item["index"]) for item in data]
        except (KeyError, TypeError, ValueError) as exc:
            raise upstream("embedding", "invalid_response", "no data[] in the answer") from exc
        if indexes != list(range(len(batch))):
            raise upstream(
                "embedding", "invalid_response",
                f"expected {len(batch)} vectors indexed 0..{len(batch) - 1}, got {len(rows)}",
            )
        for vec in rows:
            size = len(vec) if isinstance(vec, list) else -1
            if size != self.dimensions:
                raise EmbeddingDimension(
                    f"embedding dimensions mismatch: expected {self.dimensions}, got {size}; "
                    "set the dimensions the model supports or re-vectorize",
                    zh=f"embedding 维度不符：期望 {self.dimensions}，实际 {size}",
                    expected=self.dimensions,
                    actual=size,
                )
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise upstream("embedding", "invalid_response", "non-numeric vectors") from exc
        if not np.isfinite(matrix).all():
            raise upstream("embedding", "invalid_response", "non-finite vectors")
        return matrix


def _first(eg: BaseExceptionGroup[BaseException]) -> BaseException:
    exc: BaseException = eg
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def strip_fences(text: str) -> str:
    """The body of a reply wrapped in ```json ... ``` (or bare ```), else the text itself."""
    m = _FENCE.match(text)
    return m.group("body").strip() if m else text.strip()


def _invalid(key: str, **values: object) -> ExtractionInvalid:
    """A reply that is no extraction at all, refused in the words of a client's extraction."""
    en, zh = (message(key, lc, **values) for lc in ("en", "zh"))
    return ExtractionInvalid(
        message("extraction.invalid", "en", reason=en),
        zh=message("extraction.invalid", "zh", reason=zh),
    )


def parse_extraction(text: str) -> Extraction:
    """Fence-stripped, decoded and validated model output; ExtractionInvalid otherwise, worded
    as a client's extraction is (every failed field with its path, in both languages)."""
    body = strip_fences(text)
    if not body:
        raise _invalid("extraction.reply_empty")
    try:
        raw = json.loads(body)
    except json.JSONDecodeError as exc:
        raise _invalid(
            "extraction.reply_not_json", detail=exc.msg, line=exc.lineno, column=exc.colno
        ) from None
    if not isinstance(raw, dict):
        raise _invalid("extraction.reply_not_object", type=type(raw).__name__)
    try:
        return Extraction.model_validate(raw)
    except ValidationError as exc:
        raise refused_extraction(exc.errors(include_url=False)) from None


class _Chat:
    """An OpenAI-compatible chat model in JSON mode, on the extraction settings (endpoint,
    model, key): one system and one user message out, the reply's text back."""

    provider: ClassVar[str] = "openai-chat"

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        model: str,
        api_key: SecretStr | None,
        retries: int = 2,
        *,
        timeout_s: float | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self._http = Http(client, "extraction", api_key, retries, timeout_s, sleep)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={mask_url(self.base_url)!r}, model={self.model!r})"

    def _body(self, system: str, user: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "response_format": {"type": "json_object"},
            "temperature": 0,
        }

    async def _reply(self, body: dict[str, Any]) -> object:
        """``choices[0].message.content`` as the model sent it (not checked to be text)."""
        answer = await self._http.post(join_url(self.base_url, "/chat/completions"), body)
        try:
            content: object = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise upstream("extraction", "invalid_response", "no choices[0].message") from exc
        return content


class ChatExtractor(_Chat):
    """Extraction by an OpenAI-compatible chat model in JSON mode (SPEC §1.3.3)."""

    def request_body(
        self, content: str, now_iso: str, topic_tree: str | None = None
    ) -> dict[str, Any]:
        return self._body(SYSTEM_PROMPT, user_message(content, now_iso, topic_tree))

    async def extract(
        self, content: str, now_iso: str, *, topic_tree: str | None = None
    ) -> Extraction:
        text = await self._reply(self.request_body(content, now_iso, topic_tree))
        if not isinstance(text, str):
            raise _invalid("extraction.reply_no_text")
        return parse_extraction(text)


class ChatJson(_Chat):
    """A JSON-mode chat completion: a system and a user message in, one JSON object out.

    Shares the extraction settings (endpoint, model, key). Any failure -- HTTP, no text, not a
    JSON object -- raises a MnemoError; callers decide what a failure means.
    """

    async def complete_json(self, system: str, user: str) -> dict[str, Any]:
        text = await self._reply(self._body(system, user))
        try:
            decoded = json.loads(strip_fences(text)) if isinstance(text, str) else None
        except json.JSONDecodeError:
            decoded = None
        if not isinstance(decoded, dict):
            raise upstream("extraction", "invalid_response", "the reply is not a JSON object")
        return decoded


class JevJudge:
    """TypeSafe jev System One: P(A and B name the same concept) (SPEC §1.3.5).

    Any failure raises UpstreamFailed; the caller treats it as "not the same".
    """

    provider: ClassVar[str] = "jev"

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        model: str,
        api_key: SecretStr | None,
        retries: int = 1,
        *,
        timeout_s: float | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.url = url
        self.model = model
        self._http = Http(client, "alignment", api_key, retries, timeout_s, sleep)

    def __repr__(self) -> str:
        return f"JevJudge(url={mask_url(self.url)!r}, model={self.model!r})"

    def request_body(
        self, a: tuple[str, list[str], str | None], b: tuple[str, list[str], str | None]
    ) -> dict[str, Any]:
        def side(x: tuple[str, list[str], str | None]) -> dict[str, Any]:
            return {"name": x[0], "aliases": list(x[1]), "description": x[2] or ""}

        return {
            "state": {"a": side(a), "b": side(b)},
            "model": self.model,
            "questions": {"same_concept": {"type": "noul", "instructions": JUDGE_INSTRUCTIONS}},
        }

    async def same_concept(
        self, a: tuple[str, list[str], str | None], b: tuple[str, list[str], str | None]
    ) -> float:
        answer = await self._http.post(self.url, self.request_body(a, b))
        try:
            value = answer["answers"]["same_concept"]["noul"]
            p = float(value)
        except (KeyError, TypeError, ValueError) as exc:
            raise upstream(
                "alignment", "invalid_response", "no answers.same_concept.noul"
            ) from exc
        if isinstance(value, bool) or not 0.0 <= p <= 1.0:
            raise upstream("alignment", "invalid_response", f"noul {value!r} is not in [0, 1]")
        return p
