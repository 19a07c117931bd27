"""The language of rendered texts (``text(locale:)`` fields), shared by every schema module."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal, cast

import strawberry


@strawberry.enum(description="Language of rendered texts and notes.")
class Locale(Enum):
    ZH = strawberry.enum_value("zh", description="Chinese, the original tool's wording.")
    EN = strawberry.enum_value("en", description="English.")

    @property
    def code(self) -> Literal["zh", "en"]:
        """The language code (members hold it at run time; strawberry unwraps enum_value)."""
        return cast(Literal["zh", "en"], self.value)


LocaleArg = Annotated[Locale, strawberry.argument(description="Language of the text.")]
