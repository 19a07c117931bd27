"""The language of rendered texts (``text(locale:)`` fields), shared by every schema module.

A ``locale`` argument left out (or null) means the request's language: its ``Accept-Language``
header, else ``MNEMOQL_LOCALE`` (``RequestContext.locale``).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal, cast

import strawberry

from mnemoql.engine.messages import DEFAULT_LOCALE
from mnemoql.engine.messages import Locale as LocaleCode


@strawberry.enum(description="Language of rendered texts and notes.")
class Locale(Enum):
    ZH = strawberry.enum_value("zh", description="Chinese, the original tool's wording.")
    EN = strawberry.enum_value("en", description="English.")

    @property
    def code(self) -> Literal["zh", "en"]:
        """The language code (members hold it at run time; strawberry unwraps enum_value)."""
        return cast(Literal["zh", "en"], self.value)


LocaleArg = Annotated[
    Locale | None,
    strawberry.argument(
        description="Language of the text; null: the request's (Accept-Language, else "
        "MNEMOQL_LOCALE)."
    ),
]


def request_locale(context: Any) -> LocaleCode:
    """The language of a request: ``RequestContext.locale`` (English for any other context)."""
    found = getattr(context, "locale", None)
    return cast(LocaleCode, found) if found in ("en", "zh") else DEFAULT_LOCALE


def chosen(locale: Locale | None, context: Any) -> LocaleCode:
    """The argument's language, else the request's."""
    return locale.code if locale is not None else request_locale(context)
