"""Root resolvers and the assembled schema. Types live in ``schema``; the engine in ``engine``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import strawberry
from strawberry.extensions import (
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
    SchemaExtension,
)

from mnemoql.resolvers.context import ScopeGuard
from mnemoql.resolvers.documents import DEFAULT_SIZE, DocumentCache, cached_documents
from mnemoql.resolvers.evidence import EvidenceQuery
from mnemoql.resolvers.mutation import MemoryMutation, MemorySubscription
from mnemoql.resolvers.query import GraphQuery
from mnemoql.resolvers.topics import TopicMutation, TopicQuery
from mnemoql.schema.errors import CodedErrors, MemorySchema, OneOperation
from mnemoql.schema.graph import Concept, Event, Location, Person


@strawberry.type
class Query(GraphQuery, EvidenceQuery, TopicQuery):
    pass


@strawberry.type
class Mutation(MemoryMutation, TopicMutation):
    pass


@strawberry.type
class Subscription(MemorySubscription):
    pass


def build_schema(
    *,
    max_depth: int = 12,
    max_aliases: int = 30,
    max_tokens: int = 5000,
    extensions: Sequence[Callable[[], SchemaExtension]] = (),
    documents: int = DEFAULT_SIZE,
) -> strawberry.Schema:
    """The schema with its guards: depth, alias and token limits, one operation per request,
    the scope check, coded errors; the newest ``documents`` valid documents are kept parsed
    and validated (``resolvers.documents``; 0 keeps none).

    ``extensions`` are added before the error mapping (the web layer adds its deadline).
    """
    return MemorySchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        types=[Event, Person, Concept, Location],
        extensions=[
            lambda: QueryDepthLimiter(max_depth=max_depth),
            lambda: MaxAliasesLimiter(max_alias_count=max_aliases),
            lambda: MaxTokensLimiter(max_token_count=max_tokens),
            OneOperation,
            cached_documents(DocumentCache(documents)),
            ScopeGuard,
            *extensions,
            CodedErrors,
        ],
    )


schema = build_schema()
