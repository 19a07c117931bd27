"""The topic tree and associative recall (SPEC §2): topics, recall, recallByDate, activate,
and the bindTopic mutation."""

from __future__ import annotations

from typing import Annotated

import strawberry

from mnemoql.engine.activation import DEFAULT_LIMIT
from mnemoql.engine.models import TOPIC_ID_PREFIX
from mnemoql.schema.context import Info
from mnemoql.schema.inputs import ActivationProfileInput
from mnemoql.schema.recall import Activation, Recollection
from mnemoql.schema.topics import Topic, TopicTree

TopicPath = Annotated[
    str, strawberry.argument(description="A topic path, segments joined by '->'.")
]


def is_topic_id(node_id: str) -> bool:
    return node_id.startswith(TOPIC_ID_PREFIX)


async def topic_by_id(info: Info, node_id: str) -> Topic | None:
    """The Topic of a ``topic:<path>`` id, or None."""
    found = await info.context.memory.topic(node_id[len(TOPIC_ID_PREFIX) :])
    return Topic.from_domain(found) if found is not None else None


@strawberry.type
class TopicQuery:
    @strawberry.field(description="The topic tree: its text form, the roots and every node.")
    async def topics(self, info: Info) -> TopicTree:
        return TopicTree.from_domain(await info.context.memory.topics())

    @strawberry.field(description="One topic by its exact path (e.g. work->mnemoql), or null.")
    async def topic(self, info: Info, path: TopicPath) -> Topic | None:
        found = await info.context.memory.topic(path)
        return Topic.from_domain(found) if found is not None else None

    @strawberry.field(
        description="Memories of a topic path: PRIMARY, PARENT and RELATED, scored, at most 5."
    )
    async def recall(self, info: Info, topic_path: TopicPath) -> Recollection:
        return Recollection.from_domain(await info.context.memory.recall_topic(topic_path))

    @strawberry.field(
        description="Every memory saved on a day, in save order: yyyy-MM-dd, or a phrase "
        "naming one day on the memory's clock (yesterday, last Friday, 上周五, 12月1日)."
    )
    async def recall_by_date(
        self,
        info: Info,
        date: Annotated[
            str,
            strawberry.argument(
                description="The day: yyyy-MM-dd or a phrase such as '3 days ago' or 上周五."
            ),
        ],
    ) -> Recollection:
        return Recollection.from_domain(await info.context.memory.recall_date(date))

    @strawberry.field(
        description="The memories recent conversation lines call up: cues (topics, dates, "
        "entities), then memories ranked by how well they match the lines (the cue-activated "
        "ones fused with a vector search of the lines), with exact source ranges, a quote and "
        "Partner's activated_memory_slices block."
    )
    async def activate(
        self,
        info: Info,
        input: Annotated[
            list[str], strawberry.argument(description="Recent conversation lines, oldest first.")
        ],
        evaluate: Annotated[
            bool, strawberry.argument(description="Let the chat model keep only helpful memories.")
        ] = False,
        limit: Annotated[
            int, strawberry.argument(description="At most this many memories (1..20).")
        ] = DEFAULT_LIMIT,
    ) -> Activation:
        found = await info.context.memory.activate(input, evaluate, limit)
        return Activation.from_domain(found)


@strawberry.type
class TopicMutation:
    @strawberry.mutation(
        description="Bind a saved event to a topic path (again: refresh the profile and merge "
        "the related paths)."
    )
    async def bind_topic(
        self,
        info: Info,
        event_id: Annotated[strawberry.ID, strawberry.argument(description="A saved event.")],
        topic_path: TopicPath,
        related_topics: Annotated[
            list[str] | None, strawberry.argument(description="Related topic paths.")
        ] = None,
        activation_profile: Annotated[
            ActivationProfileInput | None,
            strawberry.argument(description="Recall weights of the binding."),
        ] = None,
    ) -> Topic:
        node = await info.context.memory.bind_topic(
            str(event_id),
            topic_path,
            related_topics or [],
            activation_profile.to_domain() if activation_profile is not None else None,
        )
        return Topic.from_domain(node)
