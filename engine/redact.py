"""Keeping secrets out of messages: credentials inside URLs, and checked endpoint URLs.

A provider URL may carry credentials (``http://user:KEY@host/v1``: some gateways take the key
that way). Errors, log lines, ``repr`` and ``describe()`` show such a URL with its password
(or a user name that stands alone, which is usually a key) replaced by ``***``.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

MASK = "***"
# scheme://userinfo@ anywhere in a text; userinfo stops at the first '/', '@' or whitespace
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")


def _mask_userinfo(userinfo: str) -> str:
    user, sep, _password = userinfo.partition(":")
    return f"{user}:{MASK}" if sep else MASK


def mask_url(url: str) -> str:
    """``url`` with the password of its userinfo (or a lone user name) masked; a text
    without a scheme but with an ``@`` (``KEY@host``) loses everything before the ``@``."""
    if "://" not in url and "@" in url:
        return MASK + "@" + url.rpartition("@")[2]
    return _USERINFO.sub(lambda m: m["scheme"] + _mask_userinfo(m["userinfo"]) + "@", url)


def mask_text(text: str) -> str:
    """Every URL credential in a free text (a log line, an exception message) masked."""
    if "@" not in text:
        return text
    return _USERINFO.sub(lambda m: m["scheme"] + _mask_userinfo(m["userinfo"]) + "@", text)


def check_url(url: str, setting: str, schemes: frozenset[str]) -> str:
    """``url`` if it is an absolute URL of one of ``schemes`` with a host and a valid port.

    Raises:
        ValueError: naming ``setting`` and showing the URL with its credentials masked.
    """
    shown = mask_url(url)
    try:
        parts = urlsplit(url.strip())
        port = parts.port  # ValueError when not a number in 0-65535
    except ValueError as exc:
        port_problem = "port" in str(exc).lower()
        reason = "its port is not a number from 1 to 65535" if port_problem else str(exc)
        raise ValueError(f"{setting} is not a valid URL ({shown}): {reason}") from None
    if parts.scheme.lower() not in schemes:
        allowed = ", ".join(sorted(schemes))
        raise ValueError(f"{setting} must be a {allowed} URL (got {shown})")
    if not parts.hostname:
        raise ValueError(f"{setting} has no host name (got {shown})")
    if port == 0:
        raise ValueError(f"{setting} is not a valid URL ({shown}): port 0 cannot be reached")
    return url.strip()
