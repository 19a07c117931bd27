"""The Chinese wording of graphql-core's own request errors (parse, validation, coercion).

graphql-core words its errors in English. A client reading Chinese gets a Chinese message:
the common kinds (an unknown field or argument, a missing argument or variable, a syntax
error) are matched by their English wording and said in full; any other gets a Chinese lead
sentence for its code with graphql-core's English detail after it. The English stays the
message as graphql-core wrote it (``engine/messages.py`` keys ``graphql.*``).
"""

from __future__ import annotations

import re

from mnemoql.engine.messages import CATALOGUE, message

_HINT = re.compile(r" Did you mean (?P<options>.+)\?")


def _pattern(key: str) -> re.Pattern[str]:
    """The English template of ``key`` as a pattern: each field matches any text."""
    parts = re.split(r"\{(\w+)\}", CATALOGUE[key]["en"])
    body = "".join(
        re.escape(part) if i % 2 == 0 else f"(?P<{part}>{'.*' if part == 'hint' else '.+?'})"
        for i, part in enumerate(parts)
    )
    return re.compile(body, re.DOTALL)


_KINDS = [
    (key, _pattern(key))
    for key in (
        "graphql.syntax",
        "graphql.unknown_field",
        "graphql.unknown_argument",
        "graphql.missing_argument",
        "graphql.missing_variable",
        "graphql.unknown_type",
        "graphql.needs_selection",
    )
]


def _hint_zh(hint: str) -> str:
    found = _HINT.fullmatch(hint)
    if found is None:
        return hint
    options = re.sub(r",? or ", " / ", found["options"])  # graphql-core's "'a', 'b', or 'c'"
    return message("graphql.did_you_mean", "zh", options=options)


def zh_wording(english: str, code: str) -> str:
    """The Chinese message of a graphql-core error with ``english`` and ``code``."""
    for key, pattern in _KINDS:
        if (found := pattern.fullmatch(english)) is not None:
            fields = found.groupdict()
            if "hint" in fields:
                fields["hint"] = _hint_zh(fields["hint"])
            return message(key, "zh", **fields)
    lead = f"graphql.{code}"
    return message(lead, "zh", detail=english) if lead in CATALOGUE else english
