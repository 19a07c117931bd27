"""A whole memory space as JSON lines: the format of ``mnemoql export`` and ``mnemoql restore``.

One JSON object per line (keys sorted, no spaces, UTF-8), so the same memory gives the same
bytes whichever store it comes from::

    {"format":"mnemoql-memory","kind":"header","vectors":false,"version":1}
    {"dimensions":384,"kind":"meta","model":...,"schema_version":1,"updated_at":...}
    {"content":...,"content_hash":...,"create_date":...,"create_time":...,"id":"event_1",
     "kind":"node","label":"Event","summary":...,"time":null}
    {"aliases":[...],"create_time":...,"description":null,"id":"person_1","kind":"node",
     "label":"Person","name":"Alice"}
    {"chunk_index":0,"end":800,"event_id":"event_1","kind":"chunk","start":0,"text":...,
     "text_hash":...}
    {"kind":"relation","props":{"role":"host"},"source":"person_1","target":"event_1",
     "type":"PARTICIPATED_IN"}
    {"kind":"topic","name":"api","parent":"work","path":"work->api"}
    {"activation":0.5,"context_independence":0.5,"diffusion":0.35,"event_id":"event_1",
     "kind":"binding","path":"work->api","related":[],"timestamp":1772330400000}
    {"created_at":...,"key":"save-1","kind":"save_record","result":{...}}
    {"concept":3,"event":6,"kind":"ids","location":1,"person":2}
    {"counts":{"binding":1,"chunk":1,...},"kind":"end"}

Kinds come in that order (``KINDS``). The order of ``node`` lines is the insertion order of the
memory and the order of ``topic`` lines the creation order of the topic tree (both matter:
recall and the topic tree read them back in that order); chunks are ordered by (event id,
chunk index), relations by (type, source, target, the HAS_ATTITUDE event id), save records
(idempotency keys) by key, bindings by (event, topic) insertion order. MemoryMeta is absent
from the dump of a memory nothing was ever saved to. The ``ids`` record carries the id
high-water marks (the highest N ever allocated per prefix, forgotten ids included), so a
restored memory never hands out an id its original already used; it comes last, so a store
that cannot read a snapshot (Neo4j) reads it after every node it exported. Version 1 dumps
have no ``ids`` record: a restore then counts on from the highest id it holds.

Vectors travel only when asked (``export --vectors``): ``embedding`` on node and chunk lines,
base64 of little-endian float32, unit length. Without them a restored memory is re-embedded
(``revectorize``) with the configured model. The ``end`` line counts the records of each kind;
a dump without it, or with other counts, is refused (a truncated file).

Stores speak *records*: the same dicts without the header and end lines, with ``embedding``
as a float32 numpy vector (``Store.export_records`` / ``Store.import_records``). ``DumpReader``
checks every line before a store sees it (``engine.dump_checks.Checker``): shapes, types,
unique ids, references (a relation's ends, a chunk's event and range, a binding's topic and
event), the labels each relationship type may connect, vector widths against MemoryMeta, and
each event's ``content_hash`` (SHA-256) and chunk's ``text_hash`` (SHA-1) against its text
(``DumpDamaged``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Final

import numpy as np

from mnemoql.engine.dump_checks import ID_PREFIXES as ID_PREFIXES
from mnemoql.engine.dump_checks import KINDS as KINDS
from mnemoql.engine.dump_checks import REL_ENDS as REL_ENDS
from mnemoql.engine.dump_checks import Checker as Checker
from mnemoql.engine.dump_checks import Record as Record
from mnemoql.engine.dump_checks import _zh
from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import Vector
from mnemoql.engine.revectorize import RevectorizeReport
from mnemoql.engine.store.base import Store

FORMAT: Final = "mnemoql-memory"
VERSION: Final = 2  # 2: the ``ids`` record
READABLE_VERSIONS: Final = frozenset({1, 2})
_UNIT_TOLERANCE: Final = 1e-4


@dataclass(frozen=True, slots=True)
class Header:
    version: int
    vectors: bool


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """What a restore wrote (records per kind), whether the dump carried vectors, and the
    re-vectorize that followed (None when the dump's vectors were kept or it was skipped)."""

    counts: dict[str, int]
    vectors: bool
    revectorized: RevectorizeReport | None


# ---------------------------------------------------------------- encoding


def encode_vector(vector: Vector) -> str:
    """Base64 of the little-endian float32 bytes."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: object, where: str) -> Vector:
    """The vector of a base64 field: finite, and scaled to unit length unless it is one already
    (within 1e-4, so a stored unit vector keeps its exact bits) or zero."""
    if not isinstance(text, str):
        raise InvalidInput(
            f"{where}: embedding must be a base64 string",
            zh=f"{_zh(where)}：embedding 须为 base64 字符串",
        )
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(
            f"{where}: embedding is not valid base64",
            zh=f"{_zh(where)}：embedding 不是有效的 base64",
        ) from exc
    if not raw or len(raw) % 4:
        raise InvalidInput(
            f"{where}: embedding is not a whole number of float32 values",
            zh=f"{_zh(where)}：embedding 的长度不是 float32 的整数倍",
        )
    v = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not np.isfinite(v).all():
        raise InvalidInput(
            f"{where}: embedding holds values that are not finite",
            zh=f"{_zh(where)}：embedding 含非有限数值",
        )
    norm = float(np.linalg.norm(v.astype(np.float64)))
    if norm > 0.0 and abs(norm - 1.0) > _UNIT_TOLERANCE:
        v = (v / norm).astype(np.float32)
    return v


def encode(record: Record) -> str:
    """One dump line (without the newline) for a store record."""
    out = dict(record)
    vector = out.get("embedding")
    if vector is not None:
        out["embedding"] = encode_vector(vector)
    else:
        out.pop("embedding", None)
    return json.dumps(out, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def header_line(vectors: bool) -> str:
    return encode({"kind": "header", "format": FORMAT, "version": VERSION, "vectors": vectors})


def end_line(counts: Counter[str]) -> str:
    return encode({"kind": "end", "counts": {k: counts[k] for k in KINDS if counts[k]}})


async def export_lines(store: Store, *, vectors: bool = False) -> AsyncIterator[str]:
    """Every line of the dump of ``store``'s space, header and end line included.

    Each record is checked like an import would check it, so a dump that exports is a dump
    that restores.
    """
    checker = Checker(vectors=vectors)
    yield header_line(vectors)
    async for record in store.export_records(vectors=vectors):
        if not vectors:
            record.pop("embedding", None)
        checker.check(record, f"exported {record.get('kind')} record")
        yield encode(record)
    yield end_line(checker.counts)


# ---------------------------------------------------------------- reading


class DumpReader:
    """Reads and checks a dump line by line; ``records()`` yields store records.

    The header is read when the reader is made. Any problem raises ``InvalidInput`` naming the
    line, including a missing or wrong ``end`` line -- which is only seen at the end, so a store
    importing the records must be able to undo what it wrote (``Store.import_records``).
    """

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = iter(enumerate(lines, 1))
        self.header = self._header()
        self.checker = Checker(vectors=self.header.vectors)
        self.done = False

    def _header(self) -> Header:
        for n, line in self._lines:
            if not line.strip():
                continue
            data = _parse(line, n)
            if data.get("kind") != "header" or data.get("format") != FORMAT:
                raise InvalidInput(
                    f"line {n}: not a mnemoql memory dump (the first line must be the "
                    f'{{"kind":"header","format":"{FORMAT}",...}} line of `mnemoql export`)',
                    zh=f"第 {n} 行：不是 mnemoql 记忆导出文件"
                    "（第一行须为 `mnemoql export` 的 header 行）",
                )
            version = data.get("version")
            if isinstance(version, bool) or version not in READABLE_VERSIONS:
                raise InvalidInput(
                    f"line {n}: dump format version {version!r} is not supported "
                    f"(this mnemoql reads versions {_versions()})",
                    zh=f"第 {n} 行：不支持导出格式版本 {version!r}（本版本可读 {_versions()}）",
                )
            if not isinstance(data.get("vectors"), bool):
                raise InvalidInput(
                    f"line {n}: the header's 'vectors' must be true or false",
                    zh=f"第 {n} 行：header 的 'vectors' 须为 true 或 false",
                )
            return Header(int(version), data["vectors"])
        raise InvalidInput("the dump is empty: no header line", zh="导出文件为空：没有 header 行")

    @property
    def counts(self) -> Counter[str]:
        return self.checker.counts

    def records(self) -> Iterator[Record]:
        """The records after the header, checked, embeddings decoded; raises at a bad line."""
        for n, line in self._lines:
            if not line.strip():
                continue
            data = _parse(line, n)
            where = f"line {n}"
            if self.done:
                raise InvalidInput(
                    f"{where}: nothing may follow the end line",
                    zh=f"{_zh(where)}：end 行之后不能再有内容",
                )
            if data.get("kind") == "end":
                self._end(data, where)
                continue
            if "embedding" in data:
                if not self.header.vectors:
                    raise InvalidInput(
                        f"{where}: an embedding in a dump made without vectors",
                        zh=f"{_zh(where)}：导出时未含向量，却出现了 embedding",
                    )
                data["embedding"] = decode_vector(data["embedding"], where)
            self.checker.check(data, where)
            yield data
        if not self.done:
            raise InvalidInput(
                "the dump has no end line: it is truncated (export it again)",
                zh="导出文件没有 end 行，已被截断（请重新导出）",
            )

    def _end(self, data: Record, where: str) -> None:
        counts = data.get("counts")
        if not isinstance(counts, dict):
            raise InvalidInput(
                f"{where}: the end line needs a 'counts' object",
                zh=f"{_zh(where)}：end 行须有 'counts' 对象",
            )
        seen = {k: v for k, v in self.checker.counts.items() if v}
        if {k: v for k, v in counts.items() if v} != seen:
            raise InvalidInput(
                f"{where}: the end line counts {counts} but the dump holds {seen}: "
                "the file is damaged",
                zh=f"{_zh(where)}：end 行计数 {counts}，文件实际为 {seen}：文件已损坏",
            )
        self.done = True


def _versions() -> str:
    return ", ".join(str(v) for v in sorted(READABLE_VERSIONS))


def _parse(line: str, n: int) -> Record:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise InvalidInput(
            f"line {n}: not JSON ({exc})", zh=f"第 {n} 行：不是 JSON（{exc}）"
        ) from exc
    if not isinstance(data, dict):
        raise InvalidInput(f"line {n}: not a JSON object", zh=f"第 {n} 行：不是 JSON 对象")
    return data
