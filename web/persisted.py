"""Automatic persisted queries: Apollo's APQ protocol over ``/graphql``, GET and POST.

A client sends only ``extensions.persistedQuery = {"version": 1, "sha256Hash": <hex>}``. When
this process knows the hash, the request runs the document registered under it; otherwise it
is answered ``PersistedQueryNotFound`` (code ``PERSISTED_QUERY_NOT_FOUND``, a request error),
and the client sends the same request again with the full ``query``, which registers it: the
hash must be the SHA-256 of the query text's UTF-8 bytes, or nothing is registered and the
request is refused (``BAD_REQUEST``). A hashed GET is what CDNs can cache (the miss is sent
``Cache-Control: no-store``, so no cache keeps it); mutations still go by POST (a mutation over
GET stays a 405, whatever document the hash names).

The store is per process and bounded (``MAX_DOCUMENTS`` documents and ``MAX_CHARS`` characters
of text, least recently used out first), so a restart or an eviction costs a client one extra
round trip, never an error. Only documents that ran (parsed and validated) are kept, and only
callers the bearer tokens let through can register at all.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from strawberry.http import GraphQLRequestData

from mnemoql.schema.errors import BAD_REQUEST, request_error

NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
NOT_FOUND_MESSAGE = "PersistedQueryNotFound"  # Apollo's clients match this message or the code
VERSION = 1
MAX_DOCUMENTS = 1000
MAX_CHARS = 4_000_000
_HEX = re.compile(r"[0-9a-fA-F]{64}")


class PersistedQueryRefused(Exception):
    """A persisted-query request that cannot run; ``error`` is its request error."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.error = request_error(message, code)


def sha256_hex(query: str) -> str:
    return hashlib.sha256(query.encode("utf-8")).hexdigest()


def _requested_hash(extensions: dict[str, Any] | None) -> str | None:
    """The hash a request names (lower case), or None when it names none."""
    persisted = (extensions or {}).get("persistedQuery")
    if persisted is None:
        return None
    if not isinstance(persisted, dict) or persisted.get("version") != VERSION:
        raise PersistedQueryRefused(
            f"extensions.persistedQuery must be {{\"version\": {VERSION}, \"sha256Hash\": "
            "<64 hex digits>}: this server speaks version 1 of Apollo's persisted queries",
            BAD_REQUEST,
        )
    digest = persisted.get("sha256Hash")
    if not isinstance(digest, str) or not _HEX.fullmatch(digest):
        raise PersistedQueryRefused(
            "extensions.persistedQuery.sha256Hash must be the SHA-256 of the query text, "
            "as 64 hex digits",
            BAD_REQUEST,
        )
    return digest.lower()


class PersistedQueries:
    """The documents this process has seen by hash; least recently used out first."""

    def __init__(self, max_documents: int = MAX_DOCUMENTS, max_chars: int = MAX_CHARS) -> None:
        self.max_documents = max_documents
        self.max_chars = max_chars
        self._documents: OrderedDict[str, str] = OrderedDict()
        self._chars = 0

    def __len__(self) -> int:
        return len(self._documents)

    @property
    def chars(self) -> int:
        return self._chars

    def resolve(self, data: GraphQLRequestData) -> tuple[GraphQLRequestData, str | None]:
        """The request with its document, and the hash to register once it has run (None when
        there is nothing to register).

        Raises:
            PersistedQueryRefused: an unknown hash without a query (``PERSISTED_QUERY_NOT_FOUND``,
                the client then sends the query), a malformed ``persistedQuery``, or a hash
                that is not the query's.
        """
        digest = _requested_hash(data.extensions)
        if digest is None:
            return data, None
        if data.query is None:
            known = self._documents.get(digest)
            if known is None:
                raise PersistedQueryRefused(NOT_FOUND_MESSAGE, NOT_FOUND)
            self._documents.move_to_end(digest)
            return replace(data, query=known), None
        if sha256_hex(data.query) != digest:
            raise PersistedQueryRefused(
                "extensions.persistedQuery.sha256Hash is not the SHA-256 of the query text "
                "(hex of its UTF-8 bytes): hash exactly the text you send",
                BAD_REQUEST,
            )
        return data, digest if digest not in self._documents else None

    def register(self, digest: str, query: str) -> None:
        """Keep ``query`` under its (verified) hash, making room as the bounds require."""
        if len(query) > self.max_chars or digest in self._documents:
            return
        self._documents[digest] = query
        self._chars += len(query)
        while len(self._documents) > self.max_documents or self._chars > self.max_chars:
            _, evicted = self._documents.popitem(last=False)
            self._chars -= len(evicted)
