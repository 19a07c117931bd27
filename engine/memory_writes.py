"""The writes of the engine's ``Memory`` (``memory``): saves, one or many, and the catch-up
with what other processes wrote; re-embedding, export and restore of a whole space; forgetting
an event and binding one to a topic. Every write takes the space's save lock and publishes
what it committed on the live feed (``Changes``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mnemoql.engine import checks, dump
from mnemoql.engine.binding import as_profile
from mnemoql.engine.changes import Changes
from mnemoql.engine.config import Settings
from mnemoql.engine.cursors import CursorStore
from mnemoql.engine.drafts import TopicDraft
from mnemoql.engine.errors import Conflict, InvalidInput, NotFound, out_of_range
from mnemoql.engine.ingest import Ingestor, SaveInput, SaveOutcome
from mnemoql.engine.meta import vectors_are_ours
from mnemoql.engine.models import epoch_ms
from mnemoql.engine.recall import Recall
from mnemoql.engine.revectorize import Progress, RevectorizeReport, revectorize
from mnemoql.engine.store.base import Store
from mnemoql.engine.topics import TopicNode, fix_topic_path, normalise_related

if TYPE_CHECKING:
    from mnemoql.engine.providers.factory import Providers
    from mnemoql.prompts.extraction import ProfileItem


@dataclass(slots=True)
class SaveManyOutcome:
    outcomes: list[SaveOutcome | None]
    errors: list[tuple[int, str, str, str]]  # (index, code, English message, Chinese message)


class MemoryWrites:
    """The writes of one memory space; ``Memory`` sets the settings, the store, the providers,
    the cursors, the live feed, the topic index and the ingestor."""

    settings: Settings
    store: Store
    providers: Providers
    cursors: CursorStore
    changes: Changes
    recall: Recall
    ingestor: Ingestor

    async def save(self, item: SaveInput) -> SaveOutcome:
        await self._catch_up()
        return self._saved(await self.ingestor.save(item))

    def _saved(self, outcome: SaveOutcome) -> SaveOutcome:
        result = outcome.result
        if not result.replayed:
            created = [i for label, ids in result.created.items() if label != "Event" for i in ids]
            self.changes.publish("SAVED", event_ids=result.event_ids, node_ids=created)
            if result.merged:
                self.changes.publish("MERGED", node_ids=[i for i, _ in result.merged])
        return outcome

    async def _catch_up(self) -> None:
        """Bring the topic index up to what another process wrote to this space (``mnemoql
        import`` beside the service, a second service or worker): by the rows that changed
        when the store can tell them, else it is reloaded on next use (``Recall.catch_up``).
        Checked under the save lock, so this process's own writes are never mistaken for
        another's."""
        async with self.ingestor.lock:
            if await self.store.changed_elsewhere():
                await self.recall.catch_up()

    async def save_many(
        self, items: Sequence[SaveInput], *, concurrency: int = 4
    ) -> SaveManyOutcome:
        """Save each item independently; a bad item is reported, the others still land."""
        if len(items) > self.settings.limits.max_save_many:
            raise out_of_range("inputs", 1, self.settings.limits.max_save_many, len(items))
        outcomes: list[SaveOutcome | None] = [None] * len(items)
        errors: list[tuple[int, str, str, str]] = []
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int, item: SaveInput) -> None:
            from mnemoql.engine.errors import MnemoError

            async with gate:
                try:
                    outcomes[i] = self._saved(await self.ingestor.save(item))
                except MnemoError as exc:
                    errors.append((i, exc.code, exc.en, exc.zh))

        await asyncio.gather(*(one(i, it) for i, it in enumerate(items)))
        errors.sort()
        return SaveManyOutcome(outcomes, errors)

    async def revectorize(self, progress: Progress | None = None) -> RevectorizeReport:
        """Re-embed everything with the configured model; cursors are cleared after."""
        report = await revectorize(
            self.store, self.providers.embedder, self.ingestor.lock, self.ingestor.now, progress
        )
        await self.cursors.clear()
        self.changes.publish("REVECTORIZED")
        return report

    async def export(self, *, vectors: bool = False) -> AsyncIterator[str]:
        """The whole space as dump lines (``engine.dump``), header and end line included."""
        async for line in dump.export_lines(self.store, vectors=vectors):
            yield line

    async def restore(
        self, lines: Iterable[str], *, revectorize: bool = True, progress: Progress | None = None
    ) -> dump.RestoreReport:
        """Load a dump into this (empty) space; nothing is written if any line is bad.

        The dump's vectors are kept when it carries them and its model and dimensions are the
        configured embedder's; otherwise, unless ``revectorize`` is False, everything is
        re-embedded right after (``mnemoql revectorize`` does it later).

        Raises:
            InvalidInput: a line is not a valid dump record (or the file is truncated).
            Conflict: the space is not empty.
        """
        reader = dump.DumpReader(lines)
        want = (self.providers.embedder.model, self.providers.embedder.dimensions)
        async with self.ingestor.lock:
            try:
                counts = await self.store.import_records(reader.records())
            except Conflict:
                await self._unfinished_restore(want)
                raise
            finally:
                self.recall.invalidate()
                await self.cursors.clear()
                self.changes.publish("RESYNC")
        meta = await self.store.get_meta()
        embedder = self.providers.embedder
        stale = meta is not None and (
            not reader.header.vectors
            or not vectors_are_ours(meta, embedder.model, embedder.dimensions)
        )
        report = await self.revectorize(progress) if stale and revectorize else None
        return dump.RestoreReport(counts, reader.header.vectors, report)

    async def _unfinished_restore(self, want: tuple[str, int]) -> None:
        """A restore refused because the space is not empty: when it holds records whose
        vectors were never (re)made -- a restore killed in its vector phase, or run with
        ``--no-revectorize`` -- name the step that finishes it instead of a bare CONFLICT."""
        meta = await self.store.get_meta()
        if meta is None or not (meta.stale or (meta.model, meta.dimensions) != want):
            return
        raise Conflict(
            f"memory space {self.store.space!r} already holds a restored memory whose vectors "
            "were not made (its restore stopped before re-embedding, or ran with "
            "--no-revectorize): run `mnemoql revectorize` for this space to finish it; "
            "restore only into a new, empty space",
            zh="该空间已有未完成向量化的恢复：请运行 mnemoql revectorize",
            next="revectorize",
        )

    async def forget(self, event_id: str) -> list[str]:
        """Delete an event with its chunks, topic bindings and the entities only it used."""
        checks.text(event_id, "eventId")
        async with self.ingestor.lock:
            try:
                deleted = await self.store.forget(event_id)
            except BaseException:
                self.recall.invalidate()
                raise
            await self.recall.catch_up()  # the bindings and the day the event leaves
        self.changes.publish("FORGOTTEN", deleted_ids=deleted)
        return deleted

    async def bind_topic(
        self,
        event_id: str,
        topic_path: str,
        related_topics: Sequence[str] = (),
        profile: ProfileItem | None = None,
    ) -> TopicNode:
        """(Re)bind a saved event to a topic path, at the event's own save time.

        Binding the same event to the same topic again refreshes its profile and merges the
        related paths (SPEC §2.2). The profile takes defaults and clamps, nothing more.
        """
        checks.texts([("eventId", event_id), ("topicPath", topic_path)])
        checks.texts((f"relatedTopics[{i}]", p) for i, p in enumerate(related_topics))
        path = fix_topic_path(topic_path)
        if not path:
            raise InvalidInput(
                "topicPath is blank after cleaning; use segments like work->mnemoql",
                zh="话题路径为空",
                argument="topicPath",
            )
        p = as_profile(profile)
        draft = TopicDraft(
            path,
            normalise_related(fix_topic_path(r) for r in related_topics),
            p.activation_weight,
            p.diffusion_weight,
            p.context_independence_weight,
        )
        await self._catch_up()
        await self.recall.index()
        async with self.ingestor.lock:
            events = await self.store.get_events([event_id])
            if not events:
                raise NotFound(
                    f"no event with id {event_id!r}", zh=f"事件不存在：{event_id}", id=event_id
                )
            stamp = epoch_ms(events[0].create_time)
            await self.store.bind_topic(draft, [event_id], stamp)
            self.recall.bound(draft, [event_id], stamp)
        node = await self.recall.topic(path)
        assert node is not None
        return node
