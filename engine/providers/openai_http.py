"""The HTTP call of the OpenAI-compatible providers (``openai``): one POST with bounded
retries, and the errors it ends in.

Transient failures (429, 5xx, timeouts, dropped connections) are retried with a doubling
backoff, or after the server's ``Retry-After`` when that is longer; everything else fails at
once, as UpstreamFailed (MissingApiKey without a key). The key lives in ``SecretStr`` until the
header is built and never reaches an exception, a repr or a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import httpx
from pydantic import SecretStr

from mnemoql.engine.errors import MissingApiKey, UpstreamFailed
from mnemoql.engine.redact import mask_url

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
Service = Literal["extraction", "embedding", "alignment"]

_ZH_SERVICE: dict[Service, str] = {"extraction": "提取", "embedding": "向量", "alignment": "对齐"}
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
BACKOFF_START_S = 0.2
BACKOFF_MAX_S = 16.0


def join_url(base_url: str, path: str) -> str:
    return base_url.rstrip("/") + path


def _missing_key(service: Service) -> MissingApiKey:
    env = {"extraction": "DEEPSEEK_API_KEY", "embedding": "EMBEDDING_API_KEY",
           "alignment": "TYPESAFE_API_KEY"}[service]
    return MissingApiKey(
        f"no API key for the {service} service: set {env} (or MNEMOQL_{service.upper()}__API_KEY)",
        zh=f"缺少{_ZH_SERVICE[service]} API Key",
        service=service,
    )


def upstream(service: Service, status: int | str, what: str) -> UpstreamFailed:
    """UpstreamFailed of ``service``; ``status`` is the HTTP status or what failed instead."""
    zh_what = {"timeout": "超时", "connection": "无法连接", "invalid_url": "地址无效",
               "invalid_response": "响应格式无效"}.get(str(status), f"HTTP {status}")
    return UpstreamFailed(
        f"{service} service request failed: {what}",
        zh=f"{_ZH_SERVICE[service]}服务请求失败：{zh_what}",
        service=service,
        status=status,
    )


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("retry-after")
    try:
        return None if raw is None else max(0.0, float(raw))
    except ValueError:
        return None


class Http:
    """One POST with bounded retries, shared by the three providers."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        service: Service,
        api_key: SecretStr | None,
        retries: int,
        timeout_s: float | None,
        sleep: Sleep,
    ) -> None:
        self.client = client
        self.service: Service = service
        self.api_key = api_key
        self.retries = max(0, retries)
        self.timeout_s = timeout_s
        self.sleep = sleep

    def headers(self) -> dict[str, str]:
        """The request's headers with the key; MissingApiKey without one."""
        key = self.api_key.get_secret_value().strip() if self.api_key is not None else ""
        if not key:
            raise _missing_key(self.service)
        return {"Authorization": f"Bearer {key}", "Accept": "application/json"}

    async def post(self, url: str, body: dict[str, Any]) -> Any:
        """The decoded JSON of a 2xx answer, or UpstreamFailed after the retries."""
        headers = self.headers()
        timeout = httpx.USE_CLIENT_DEFAULT if self.timeout_s is None else self.timeout_s
        delay = BACKOFF_START_S
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            hint: float | None = None
            try:
                response = await self.client.post(url, json=body, headers=headers, timeout=timeout)
            except httpx.TimeoutException as exc:
                if last:
                    raise upstream(self.service, "timeout", "timed out") from exc
                status: int | str = "timeout"
            except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                if last:
                    what = f"cannot connect ({type(exc).__name__})"
                    raise upstream(self.service, "connection", what) from exc
                status = "connection"
            except (httpx.InvalidURL, httpx.UnsupportedProtocol, OverflowError):
                # a bad port surfaces from the socket layer (OverflowError, sometimes inside
                # an ExceptionGroup below); the URL is shown without its credentials
                what = f"invalid URL {mask_url(url)!r}"
                raise upstream(self.service, "invalid_url", what) from None
            except ExceptionGroup as group:
                if not group.subgroup(OverflowError):
                    raise
                what = f"invalid URL {mask_url(url)!r}"
                raise upstream(self.service, "invalid_url", what) from None
            else:
                if response.is_success:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise upstream(
                            self.service, "invalid_response", "the answer is not JSON"
                        ) from exc
                status = response.status_code
                if last or status not in _RETRY_STATUS:
                    raise upstream(self.service, status, _status_hint(status))
                hint = _retry_after(response)
            wait = min(BACKOFF_MAX_S, max(delay, hint or 0.0))
            log.warning(
                "%s request failed (%s), retry %d/%d in %.1fs",
                self.service, status, attempt + 1, self.retries, wait,
            )
            await self.sleep(wait)
            delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover


def _status_hint(status: int) -> str:
    if status in {401, 403}:
        return f"HTTP {status}; check the API key"
    if status == 404:
        return f"HTTP {status}; check the endpoint URL and model name"
    return f"HTTP {status}"
