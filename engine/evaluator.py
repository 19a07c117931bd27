"""Partner's ``MemoryRecallEvaluator`` (SPEC §2.8 step 3): one ``{"passed": bool}`` chat call per
activated memory, in parallel, keeping the memories that pass.

Each call sees the conversation lines and the memory's summary and source messages (its
non-blank lines, windowed as the full projection: up to 10 whole, else first 2, middle 4,
last 2; each cut to ``MESSAGE_MAX`` characters). A failed call or an unusable reply drops the
memory, as in Partner.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from pydantic import ValidationError

from mnemoql.engine.errors import MnemoError
from mnemoql.engine.models import Event
from mnemoql.engine.providers.base import ChatModel
from mnemoql.engine.retrieval.terms import QUOTE_SCOPE
from mnemoql.engine.topics import Omitted
from mnemoql.engine.topics import window_messages as window
from mnemoql.prompts import evaluator as evaluator_prompt

log = logging.getLogger(__name__)

EVALUATE_CONCURRENCY = 4
MESSAGE_MAX = 400  # characters of one source message shown to the evaluator


def why(exc: Exception) -> str:
    """A log-safe reason: the error code, never the reply's text."""
    return exc.code if isinstance(exc, MnemoError) else "invalid reply"


async def evaluate(
    chat: ChatModel, lines: Sequence[str], events: Sequence[Event], concurrency: int
) -> list[bool]:
    """Whether each memory passes, in the order given (at most ``concurrency`` calls at once)."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(event: Event) -> bool:
        async with gate:
            return await _passes(chat, lines, event)

    return list(await asyncio.gather(*(one(e) for e in events)))


async def _passes(chat: ChatModel, lines: Sequence[str], event: Event) -> bool:
    messages = [ln.strip() for ln in event.content[:QUOTE_SCOPE].splitlines()]
    source = [
        m.text if isinstance(m, Omitted) else m[:MESSAGE_MAX]
        for m in window([m for m in messages if m])
    ]
    message = evaluator_prompt.user_message(lines, event.summary, source)
    try:
        raw = await chat.complete_json(evaluator_prompt.SYSTEM_PROMPT, message)
        return evaluator_prompt.EvaluatorReply.model_validate(raw).passed
    except (MnemoError, ValidationError) as exc:
        log.warning("recall evaluator failed for %s, dropped: %s", event.id, why(exc))
        return False
