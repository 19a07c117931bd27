"""What the engine needs from model providers. Real ones speak OpenAI-compatible HTTP over an
injected ``httpx.AsyncClient``; offline ones run in-process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from engine.models import Vector
from prompts.extraction import Extraction

EmbedKind = Literal["query", "passage"]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dimensions`` length."""

    model: str
    dimensions: int

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vector:
        """A ``(len(texts), dimensions)`` float32 matrix, rows in input order."""


class Extractor(Protocol):
    async def extract(self, content: str, now_iso: str) -> Extraction:
        """Events, entities and relations of one save; raises ExtractionInvalid/UpstreamFailed."""


class ConceptJudge(Protocol):
    async def same_concept(
        self, a: tuple[str, list[str], str | None], b: tuple[str, list[str], str | None]
    ) -> float:
        """P(a and b name the same concept) in [0, 1], from (name, aliases, description)."""
