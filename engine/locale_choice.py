"""Which language a reader gets: a value that names a locale (``locale_of``), the
``MNEMOQL_LOCALE`` setting for code that runs without the settings object
(``configured_locale``) and an HTTP ``Accept-Language`` header's choice among ours
(``preferred``). The texts in each language are ``engine.messages``'.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from mnemoql.engine.messages import DEFAULT_LOCALE, LOCALES, Locale


def _named(value: object) -> Locale | None:
    """The locale ``value`` names (``"zh"``, ``"ZH"``, ``"zh-CN"``, ``"zh_Hans"``), else None."""
    if isinstance(value, str):
        primary = value.strip().lower().replace("_", "-").partition("-")[0]
        if primary in LOCALES:
            return primary
    return None


def locale_of(value: object, default: Locale = DEFAULT_LOCALE) -> Locale:
    """``value`` as a locale when it names one, else ``default``."""
    return _named(value) or default


def configured_locale(environ: Mapping[str, str] | None = None) -> Locale:
    """``MNEMOQL_LOCALE`` of the environment, for code that runs before (or without) the
    settings object: the command line's own error lines. Anything else reads
    ``Settings.locale``."""
    env = os.environ if environ is None else environ
    return locale_of(env.get("MNEMOQL_LOCALE"))


_RANGE = re.compile(r"^\s*([A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*|\*)\s*(?:;(.*))?$")
_QVALUE = re.compile(r"^\s*q\s*=\s*(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)\s*$", re.IGNORECASE)


def preferred(header: str | None, default: Locale) -> Locale:
    """The locale an ``Accept-Language`` header (RFC 9110 §12.5.4) prefers among ours.

    Ranges are taken by q-value, highest first, and by their order among equal q-values;
    ``q=0`` refuses a language. ``*`` and languages we do not speak are skipped; when none of
    ours is acceptable, ``default`` (the configured locale) applies. Malformed entries are
    skipped, never an error: the header is a hint.
    """
    if not header:
        return default
    ranked: list[tuple[float, int, str]] = []
    for order, part in enumerate(header.split(",")):
        m = _RANGE.match(part)
        if m is None:
            continue
        q = 1.0
        for param in (m[2] or "").split(";") if m[2] else ():
            if param.strip().lower().startswith("q"):
                qm = _QVALUE.match(param)
                q = float(qm[1]) if qm else -1.0
        if q > 0:
            ranked.append((-q, order, m[1]))
    for _, _, tag in sorted(ranked):
        if (found := _named(tag)) is not None:
            return found
    return default
