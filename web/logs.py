"""Log hygiene for ``mnemoql serve``: bounded lines, no secrets, no tracebacks for client errors.

strawberry logs every GraphQL error at ERROR with the traceback of its cause, including the
expected ones a client caused (a coded ``MnemoError``, a variable graphql-core refused), and
messages can echo caller input of any size. ``Hygiene`` sits on the handlers (so it sees what
every logger propagates) and rewrites each record on its way out:

- an expected client error becomes one INFO line: ``client error CODE at path: message``;
- a message longer than ``MAX_CHARS`` is cut, saying how much was cut (an access log line keeps
  its shape: only the request path is cut);
- credentials inside URLs are masked (``engine.redact``), in tracebacks too;
- a line written while a request runs carries its request id (``web.observe``): at the end of
  a text line (``[req 3f2a…]``), as ``request_id`` in a JSON line.

``MNEMOQL_LOG__FORMAT=json`` writes one JSON object a line (``JsonLines``): ``time`` (UTC,
ISO 8601), ``level``, ``logger``, ``message``, ``request_id`` (null outside a request),
``exception`` when there is a traceback, and for an access line ``client``, ``method``,
``path`` and ``status``.

Genuine internal errors keep their traceback (that is how they get fixed).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Literal

from graphql import GraphQLError

from mnemoql.engine.checks import clip
from mnemoql.engine.errors import MnemoError
from mnemoql.engine.redact import mask_text
from mnemoql.web.observe import request_id

MAX_CHARS = 2000
PATH_CHARS = 300


def client_error(error: GraphQLError) -> str | None:
    """The code of an error the client caused (None for an internal one)."""
    original = error.original_error
    if isinstance(original, MnemoError):
        return original.code
    if original is None or isinstance(original, GraphQLError):
        code = (error.extensions or {}).get("code")
        return str(code) if code else "GRAPHQL_VALIDATION_FAILED"
    return None


class Hygiene(logging.Filter):
    """A handler filter that rewrites records as the module docstring says (it drops only a
    client error when the service logs nothing below WARNING)."""

    def filter(self, record: logging.LogRecord) -> bool:
        rid = request_id()
        record.request_id = rid
        record.request_tag = f" [req {rid}]" if rid else ""
        if record.name == "uvicorn.access":
            self._access(record)
            return True
        if isinstance(record.msg, GraphQLError) and (code := client_error(record.msg)):
            if logging.getLogger().getEffectiveLevel() > logging.INFO:
                return False  # an INFO line, and the service logs warnings and worse only
            where = ".".join(str(p) for p in record.msg.path or []) or "the request"
            self._set(record, f"client error {code} at {where}: {record.msg.message}")
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info, record.exc_text, record.stack_info = None, None, None
            return True
        self._set(record, record.getMessage())
        if record.exc_info and not record.exc_text:
            record.exc_text = mask_text(logging.Formatter().formatException(record.exc_info))
        return True

    @staticmethod
    def _set(record: logging.LogRecord, message: str) -> None:
        record.msg, record.args = clip(mask_text(message), MAX_CHARS), None

    @staticmethod
    def _access(record: logging.LogRecord) -> None:
        # uvicorn's AccessFormatter reads (client, method, path, http version, status)
        args = record.args
        if isinstance(args, tuple) and len(args) == 5:
            client, method, path, version, status = args
            record.args = (client, method, clip(mask_text(str(path)), PATH_CHARS), version, status)


class JsonLines(logging.Formatter):
    """One JSON object a line (see the module docstring); after ``Hygiene``."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, UTC)
        line: dict[str, Any] = {
            "time": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            client, method, path, _, status = args
            line.update(client=client, method=method, path=path, status=status)
        if record.exc_info and not record.exc_text:
            record.exc_text = mask_text(self.formatException(record.exc_info))
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


def serve_log_config(level: str, form: Literal["text", "json"] = "text") -> dict[str, Any]:
    """uvicorn's logging config, with ``Hygiene`` on every handler and a root handler, so the
    service's own loggers (``mnemoql``, ``engine.*``, strawberry) print through it too; in
    ``form`` text (uvicorn's lines, with the request id) or JSON lines."""
    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = {
        **LOGGING_CONFIG,
        "filters": {"hygiene": {"()": "mnemoql.web.logs.Hygiene"}},
        "formatters": dict(LOGGING_CONFIG["formatters"]),
        "handlers": {
            name: {**handler, "filters": ["hygiene"]}
            for name, handler in LOGGING_CONFIG["handlers"].items()
        },
        "loggers": dict(LOGGING_CONFIG["loggers"]),
    }
    config["formatters"]["service"] = {
        "()": "uvicorn.logging.DefaultFormatter",
        "fmt": "%(levelprefix)s %(name)s: %(message)s",
        "use_colors": None,
    }
    config["handlers"]["service"] = {
        "formatter": "service",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
        "filters": ["hygiene"],
    }
    config["root"] = {"handlers": ["service"], "level": level.upper()}
    formatters = config["formatters"]
    if form == "json":
        for name in formatters:
            formatters[name] = {"()": "mnemoql.web.logs.JsonLines"}
    else:
        for name, formatter in formatters.items():
            formatters[name] = {**formatter, "fmt": formatter["fmt"] + "%(request_tag)s"}
    return config
