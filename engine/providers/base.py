"""What the engine needs from model providers. Real ones speak OpenAI-compatible HTTP over an
injected ``httpx.AsyncClient``; offline ones run in-process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from mnemoql.engine.models import Vector
from mnemoql.prompts.extraction import Extraction

EmbedKind = Literal["query", "passage"]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dimensions`` length."""

    model: str
    dimensions: int

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vector:
        """A ``(len(texts), dimensions)`` float32 matrix, rows in input order."""


class Extractor(Protocol):
    async def extract(
        self, content: str, now_iso: str, *, topic_tree: str | None = None
    ) -> Extraction:
        """Events, entities and relations of one save, and optionally its topic;
        ``topic_tree`` is the current tree text, for the model to reuse its paths. Raises
        ExtractionInvalid/UpstreamFailed."""


class ChatModel(Protocol):
    """A chat model answering with one JSON object (recall cues, the recall evaluator)."""

    model: str

    async def complete_json(self, system: str, user: str) -> dict[str, Any]:
        """The reply decoded as a JSON object; raises a MnemoError on any failure."""


class ConceptJudge(Protocol):
    async def same_concept(
        self, a: tuple[str, list[str], str | None], b: tuple[str, list[str], str | None]
    ) -> float:
        """P(a and b name the same concept) in [0, 1], from (name, aliases, description)."""
