"""An event's text as GraphQL types: ``TextRange``, an exact code-point range of it as read
(``read``, ``Event.content``), and ``SourceRange``, where one of its source chunks lies.
"""

from __future__ import annotations

import strawberry

from mnemoql.engine.memory import TextRange as TextRangeDomain
from mnemoql.engine.retrieval.evidence import ReadResult
from mnemoql.engine.retrieval.render import render_read
from mnemoql.schema.context import Info
from mnemoql.schema.locale import LocaleArg, chosen


@strawberry.type(description="An exact `[start, end)` code-point range of an event's text.")
class TextRange:
    event_id: strawberry.ID = strawberry.field(description="The event whose text this is.")
    text: str = strawberry.field(description="The text of the range, verbatim.")
    start: int = strawberry.field(description="First code point (inclusive).")
    end: int = strawberry.field(description="Last code point (exclusive).")
    total: int = strawberry.field(description="Length of the whole text in code points.")
    next: int | None = strawberry.field(description="Offset to continue reading from, if any.")

    @strawberry.field(
        description="The compact rendering for an LLM (SPEC §1.10): a header with the range "
        "and total, the text, then next=<offset> when there is more."
    )
    def rendered(self, info: Info, locale: LocaleArg = None) -> str:
        result = ReadResult(str(self.event_id), self.text, self.start, self.end, self.total,
                            self.next)  # fmt: skip
        return render_read(result, chosen(locale, info.context))

    @classmethod
    def from_domain(cls, r: TextRangeDomain) -> TextRange:
        return cls(
            event_id=strawberry.ID(r.event_id),
            text=r.text,
            start=r.start,
            end=r.end,
            total=r.total,
            next=r.next,
        )


@strawberry.type(description="An EventSource chunk: where a slice of the original text lies.")
class SourceRange:
    index: int = strawberry.field(description="Position of the chunk in the text (0-based).")
    start: int = strawberry.field(description="First code point (inclusive).")
    end: int = strawberry.field(description="Last code point (exclusive).")
