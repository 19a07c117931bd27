"""The service edge's settings groups: who may call (bearer tokens, each bound to a memory
space), what one request may ask of the service (``Limits``), each HTTP client's share, the MCP
edge, logs and telemetry. ``Settings`` (engine/config.py) composes them and reads them from the
environment; this module reads nothing itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import NoDecode


class Limits(BaseModel):
    max_content_chars: int = Field(default=2_000_000, ge=1)
    max_page_size: int = Field(default=100, ge=1)
    max_save_many: int = Field(default=500, ge=1)
    max_query_depth: int = Field(default=12, ge=2)
    max_aliases: int = Field(default=30, ge=1)
    # 16 MiB: room for max_content_chars of CJK text even when a client \u-escapes it.
    max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    max_query_tokens: int = Field(default=5000, ge=10)
    # Per-request time limits; mutations (save with slow models, revectorize) get longer.
    query_timeout_s: float = Field(default=30.0, gt=0)
    mutation_timeout_s: float = Field(default=600.0, gt=0)
    # Caps on what one request may make the service do (docs/DECISIONS.md, "Fair service"):
    # the text of a search (the local model also refuses more tokens than its 512-token window),
    # a `where` tree, and a client's ready extraction.
    max_search_chars: int = Field(default=2_000, ge=1)
    max_where_conditions: int = Field(default=100, ge=1)
    max_where_depth: int = Field(default=8, ge=1)
    max_extraction_events: int = Field(default=100, ge=1)
    max_extraction_entities: int = Field(default=300, ge=1)
    # How long a request body may take to arrive in full (web/guards/sizes.py).
    body_timeout_s: float = Field(default=30.0, gt=0)


SPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
# metrics: reading /metrics (service-wide counts), nothing of any memory space
Scope = Literal["read", "write", "metrics"]


def check_space(name: str) -> str:
    """``name`` if it is a valid memory space name.

    Raises:
        ValueError: saying what a space name may contain.
    """
    if not SPACE_NAME.match(name):
        raise ValueError(f"space {name!r} is not allowed: use 1-64 letters, digits, '_' or '-'")
    return name


class TokenGrant(BaseModel):
    """One bearer token: the memory space it belongs to and what it may do there."""

    model_config = ConfigDict(hide_input_in_errors=True)  # URLs and keys stay out

    token: SecretStr
    space: str = "default"
    scopes: frozenset[Scope] = frozenset({"read"})

    @field_validator("token")
    @classmethod
    def _long_enough(cls, v: SecretStr) -> SecretStr:
        if len(v.get_secret_value().strip()) < 16:
            raise ValueError("a token must have at least 16 characters")
        return SecretStr(v.get_secret_value().strip())

    @field_validator("scopes")
    @classmethod
    def _some_scope(cls, v: frozenset[Scope]) -> frozenset[Scope]:
        if not v:
            raise ValueError("a token needs at least one scope: read, write or metrics")
        return v

    @field_validator("space")
    @classmethod
    def _space_name(cls, v: str) -> str:
        return check_space(v)


class AuthSettings(BaseModel):
    """Bearer tokens (``MNEMOQL_AUTH__TOKENS`` as JSON, or a JSON file); none means open access
    on loopback only."""

    model_config = ConfigDict(hide_input_in_errors=True)  # URLs and keys stay out

    tokens: list[TokenGrant] = Field(default_factory=list)
    tokens_file: Path | None = None

    @field_validator("tokens", mode="before")
    @classmethod
    def _json(cls, v: Any) -> Any:
        return json.loads(v) if isinstance(v, str) else v


class McpSettings(BaseModel):
    """The MCP edge (``mnemoql mcp`` over stdio, ``/mcp`` in the service)."""

    # the language of the tools' texts and errors; None: ``MNEMOQL_LOCALE`` (``Settings.locale``)
    locale: Literal["zh", "en"] | None = None
    # ``mnemoql mcp`` serves one space; over HTTP the caller's token picks it
    space: str = "default"
    # ``mnemoql mcp`` without the write scope: save and forget are refused
    read_only: bool = False

    @field_validator("space")
    @classmethod
    def _space_name(cls, v: str) -> str:
        return check_space(v)


def _names(value: Any) -> Any:
    """A list from JSON (``["a", "b"]``) or from plain text (``a,b``), as set in the shell."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class HttpSettings(BaseModel):
    """The HTTP edge (docs/security.md): who may reach the service, and each client's share."""

    # Host names accepted besides the loopback ones ("*.example.com", "*": any). Empty: on a
    # loopback bind only loopback names; on another bind any name.
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Web origins whose pages may call the service (CORS), e.g. "http://localhost:5173".
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Per client (its token, else its address): refused requests (a bucket refilled per s),
    # seconds of service (a budget refilled per s: one client waiting for each answer uses at
    # most 1 s per s), requests at once, and websocket operations (per client and in total).
    refusals_burst: float = Field(default=20, ge=1)
    refusals_per_s: float = Field(default=1.0, gt=0)
    busy_burst_s: float = Field(default=30.0, ge=0)
    busy_per_s: float = Field(default=2.0, gt=0)
    max_requests_per_client: int = Field(default=6, ge=1)
    max_subscriptions_per_client: int = Field(default=32, ge=1)
    max_subscriptions: int = Field(default=256, ge=1)

    @field_validator("allowed_hosts", "cors_origins", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _names(v)


class LogSettings(BaseModel):
    """How ``mnemoql serve`` writes its log lines (stderr)."""

    # json: one object a line (time, level, logger, message, request_id), for log shippers
    format: Literal["text", "json"] = "text"


class TelemetrySettings(BaseModel):
    """What the service tells its operators (docs/clients.md, "Metrics and tracing")."""

    # Prometheus text at /metrics; with tokens on, only tokens with the 'metrics' scope read it
    metrics: bool = True
    # OpenTelemetry spans: needs pip install 'mnemoql[otel]'; OTEL_* variables pick the exporter
    traces: bool = False
