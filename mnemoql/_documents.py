"""The GraphQL documents ``Client`` and ``AsyncClient`` send, and how their answers are read.

Fixed documents with variables: nothing here builds GraphQL from a caller's values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from mnemoql.errors import ServerError, error_for
from mnemoql.types import EvidencePage, Locale, Target, follow

_PAGE = """
fragment Page on EvidencePage {
  operation target session cursor chainCount chainLimit
  items {
    eventId summary createTime time total
    quote { text start end total }
    quoteRef { eventId start end }
    notes { code value message }
    concepts { conceptId name }
  }
  sharedConcepts { conceptId name eventIds }
  expandConcepts nearbyEvents excludedCount searchAgain
  notes { code value message }
  entityHits { score exact node { id __typename ... on Person { name } ... on Concept { name } } }
  text(locale: $locale)
}
"""
SAVE = """
mutation Save($input: SaveInput!) {
  save(input: $input) {
    eventIds createdPersons createdConcepts createdLocations
    merged { entityId aliasesAdded } refs { ref nodeId }
    replayed message topicPath topicSource
  }
}
"""
SEARCH = (
    """
query Search($query: String, $entities: [String!], $timeHint: String, $target: SearchTarget!,
             $session: String, $resetSeen: Boolean!, $cursor: String, $locale: Locale) {
  search(query: $query, entities: $entities, timeHint: $timeHint, target: $target,
         session: $session, resetSeen: $resetSeen, cursor: $cursor) { ...Page }
}
"""
    + _PAGE
)
EXPAND = (
    """
query Expand($cursor: String!, $conceptId: ID!, $limit: Int!, $session: String,
             $locale: Locale) {
  expand(cursor: $cursor, conceptId: $conceptId, limit: $limit, session: $session) { ...Page }
}
"""
    + _PAGE
)
NEARBY = (
    """
query Nearby($cursor: String!, $eventId: ID!, $before: Int!, $after: Int!, $session: String,
             $locale: Locale) {
  nearby(cursor: $cursor, eventId: $eventId, before: $before, after: $after,
         session: $session) { ...Page }
}
"""
    + _PAGE
)
READ = """
query Read($eventId: ID!, $start: Int!, $limit: Int!) {
  read(eventId: $eventId, start: $start, limit: $limit) { eventId text start end total next }
}
"""
FORGET = """
mutation Forget($eventId: ID!) { forget(eventId: $eventId) { deletedIds } }
"""

_TARGETS = {"Event": "EVENT", "Person": "PERSON", "Concept": "CONCEPT"}


def save_input(content: str, **fields: Any) -> dict[str, Any]:
    """The GraphQL ``SaveInput``: camelCase names, unset fields left out (their defaults)."""
    item: dict[str, Any] = {"content": content}
    for name, value in fields.items():
        if value is not None and value != []:
            head, *rest = name.split("_")
            item[head + "".join(part.title() for part in rest)] = value
    return item


def answer(response: httpx.Response, field: str) -> dict[str, Any]:
    """The data of root ``field``, or the exception of the first coded error."""
    data = data_of(response)
    if not isinstance(data.get(field), dict):
        raise ServerError("INTERNAL_SERVER_ERROR", f"the answer holds no {field}")
    result: dict[str, Any] = data[field]
    return result


class Documents:
    """The requests both clients send: (document, variables, root field)."""

    def __init__(self, session: str | None, locale: Locale | None) -> None:
        self.session = session
        # None: the server's language (its MNEMOQL_LOCALE); else sent as Accept-Language too
        self.locale: Locale | None = locale
        self._variable = locale.upper() if locale is not None else None

    def save(self, content: str, **fields: Any) -> tuple[str, dict[str, Any], str]:
        return SAVE, {"input": save_input(content, **fields)}, "save"

    def read(self, event_id: str, start: int, limit: int) -> tuple[str, dict[str, Any], str]:
        return READ, {"eventId": event_id, "start": start, "limit": limit}, "read"

    def forget(self, event_id: str) -> tuple[str, dict[str, Any], str]:
        return FORGET, {"eventId": event_id}, "forget"

    def search(
        self,
        query: str | None,
        entities: Sequence[str] | None,
        time_hint: str | None,
        target: Target,
        session: str | None,
        reset_seen: bool,
        cursor: str | EvidencePage | None = None,
    ) -> tuple[str, dict[str, Any], str]:
        if target not in _TARGETS:
            from mnemoql.errors import InvalidInput

            raise InvalidInput(
                "target must be Event, Person or Concept",
                argument="target",
                zh="target 须为 Event、Person 或 Concept",
            )
        token, sid = (None, session or self.session) if cursor is None else follow(
            cursor, session, self.session
        )
        variables = {
            "query": query,
            "entities": list(entities) if entities is not None else None,
            "timeHint": time_hint,
            "target": _TARGETS[target],
            "session": sid,
            "resetSeen": reset_seen,
            "cursor": token,
            "locale": self._variable,
        }
        return SEARCH, variables, "search"

    def expand(
        self, cursor: str | EvidencePage, concept_id: str, limit: int, session: str | None
    ) -> tuple[str, dict[str, Any], str]:
        token, sid = follow(cursor, session, self.session)
        variables = {"cursor": token, "conceptId": concept_id, "limit": limit, "session": sid,
                     "locale": self._variable}  # fmt: skip
        return EXPAND, variables, "expand"

    def nearby(
        self,
        cursor: str | EvidencePage,
        event_id: str,
        before: int,
        after: int,
        session: str | None,
    ) -> tuple[str, dict[str, Any], str]:
        token, sid = follow(cursor, session, self.session)
        variables = {"cursor": token, "eventId": event_id, "before": before, "after": after,
                     "session": sid, "locale": self._variable}  # fmt: skip
        return NEARBY, variables, "nearby"


def data_of(response: httpx.Response) -> dict[str, Any]:
    """The ``data`` of a GraphQL response, or the exception of its first coded error."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise ServerError(
            f"HTTP_{response.status_code}",
            f"the server answered HTTP {response.status_code} without a GraphQL body",
        )
    errors = body.get("errors") or []
    if errors:
        ext = errors[0].get("extensions") or {}
        raise error_for(ext.get("code"), errors[0].get("message", ""), ext)
    data: dict[str, Any] = body.get("data") or {}
    return data
