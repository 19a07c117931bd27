"""The checks that make a sequence of dump records a memory (the format of ``engine.dump``):
kinds in order, shapes and types, unique ids and keys, references (a relation's ends and the
labels its type may connect, a chunk's event and range, a binding's topic and event), vector
widths against MemoryMeta, the ``ids`` high-water marks, and each event's ``content_hash`` and
chunk's ``text_hash`` against its text (``DumpDamaged``). ``engine.dump`` runs ``Checker`` on
every record it exports or reads, and re-exports its public names.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Final

import numpy as np

from mnemoql.engine.errors import DumpDamaged, InvalidInput
from mnemoql.engine.models import (
    CALLER_ID,
    ID_PREFIX,
    NODE_LABELS,
    REL_TYPES,
    TOPIC_SEPARATOR,
    NodeLabel,
    RelType,
    label_of,
)
from mnemoql.engine.text import content_hash, text_hash

Record = dict[str, Any]
# Record kinds in the order a dump holds them.
KINDS: Final = ("meta", "node", "chunk", "relation", "topic", "binding", "save_record", "ids")
# The id prefixes of the ``ids`` record (``engine.models.ID_PREFIX``).
ID_PREFIXES: Final = tuple(ID_PREFIX.values())
_RANK: Final = {kind: i for i, kind in enumerate(KINDS)}
# SPEC §1.2: which labels each relationship type connects.
REL_ENDS: Final[dict[RelType, tuple[frozenset[NodeLabel], frozenset[NodeLabel]]]] = {
    "PARTICIPATED_IN": (frozenset({"Person"}), frozenset({"Event"})),
    "OCCURRED_AT": (frozenset({"Event"}), frozenset({"Location"})),
    "MENTIONS": (frozenset({"Event"}), frozenset({"Concept"})),
    "HAS_ATTITUDE": (frozenset({"Person"}), frozenset({"Person", "Concept"})),
}
_ALLOCATED: Final = re.compile(r"^(" + "|".join(ID_PREFIXES) + r")_([0-9]+)$")
_EVENT_FIELDS: Final = ("summary", "content", "create_time", "create_date", "content_hash")


def _zh(where: str) -> str:
    """``where`` ("line 12") in Chinese ("第 12 行"), for the ``zh=`` wording of an error."""
    number = where.removeprefix("line ")
    return f"第 {number} 行" if number.isdigit() else where


# ---------------------------------------------------------------- checking


class Checker:
    """What makes a sequence of records a memory: kinds in order, shapes, unique keys and
    references. Keeps only ids, labels and content lengths (not the records)."""

    def __init__(self, *, vectors: bool) -> None:
        self.vectors = vectors
        self.counts: Counter[str] = Counter()
        self._rank = -1
        self._dims: int | None = None
        self._labels: dict[str, NodeLabel] = {}
        self._lengths: dict[str, int] = {}  # event id -> content length in code points
        self._chunks: set[tuple[str, int]] = set()
        self._relations: set[tuple[str, str, str, str]] = set()
        self._topics: set[str] = set()
        self._bindings: set[tuple[str, str]] = set()
        self._keys: set[str] = set()
        self._highest: dict[str, int] = dict.fromkeys(ID_PREFIXES, 0)  # per allocated prefix

    def check(self, rec: Record, where: str) -> None:
        kind = rec.get("kind")
        if kind not in _RANK:
            raise InvalidInput(
                f"{where}: unknown record kind {kind!r}; use one of {KINDS}",
                zh=f"{_zh(where)}：未知记录类型 {kind!r}，可用 {KINDS}",
            )
        rank = _RANK[kind]
        if rank < self._rank:
            raise InvalidInput(
                f"{where}: a {kind} record after {KINDS[self._rank]} records; "
                f"records come in the order {', '.join(KINDS)}",
                zh=f"{_zh(where)}：{kind} 记录出现在 {KINDS[self._rank]} 记录之后；"
                f"记录须按 {', '.join(KINDS)} 的顺序排列",
            )
        self._rank = rank
        getattr(self, f"_{kind}")(rec, where)
        self.counts[kind] += 1

    def _vector(self, rec: Record, where: str) -> None:
        v = rec.get("embedding")
        if v is None:
            rec.pop("embedding", None)
            return
        if not self.vectors:
            raise InvalidInput(
                f"{where}: an embedding in a dump made without vectors",
                zh=f"{_zh(where)}：导出时未含向量，却出现了 embedding",
            )
        width = int(np.asarray(v).size)
        if self._dims is None or width != self._dims:
            raise InvalidInput(
                f"{where}: a {width}-dimensional embedding, but MemoryMeta says "
                f"{self._dims} dimensions",
                zh=f"{_zh(where)}：embedding 为 {width} 维，但 MemoryMeta 为 {self._dims} 维",
            )

    def _meta(self, rec: Record, where: str) -> None:
        if self.counts["meta"]:
            raise InvalidInput(
                f"{where}: a second meta record", zh=f"{_zh(where)}：出现第二条 meta 记录"
            )
        _str(rec, "model", where)
        _str(rec, "updated_at", where)
        dims = _int(rec, "dimensions", where, low=1)
        _int(rec, "schema_version", where, low=1)
        self._dims = dims

    def _node(self, rec: Record, where: str) -> None:
        label, node_id = rec.get("label"), _str(rec, "id", where)
        if label not in NODE_LABELS:
            raise InvalidInput(
                f"{where}: unknown label {label!r}; use one of {NODE_LABELS}",
                zh=f"{_zh(where)}：未知标签 {label!r}，可用 {NODE_LABELS}",
            )
        if not CALLER_ID.match(node_id) or label_of(node_id) not in (None, label):
            raise InvalidInput(
                f"{where}: {node_id!r} is not a valid {label} id",
                zh=f"{_zh(where)}：{node_id!r} 不是有效的 {label} id",
            )
        if label != "Event" and label_of(node_id) is None:
            raise InvalidInput(
                f"{where}: a {label} id has the form {label.lower()}_N",
                zh=f"{_zh(where)}：{label} 的 id 须为 {label.lower()}_N 形式",
            )
        if node_id in self._labels:
            raise InvalidInput(
                f"{where}: node {node_id!r} appears twice",
                zh=f"{_zh(where)}：节点 {node_id!r} 重复出现",
            )
        _str(rec, "create_time", where)
        if label == "Event":
            for name in _EVENT_FIELDS:
                _str(rec, name, where)
            _opt_str(rec, "time", where)
            _hash_matches(rec, "content", "content_hash", content_hash(rec["content"]), where)
            self._lengths[node_id] = len(rec["content"])
        else:
            _str(rec, "name", where)
            _opt_str(rec, "description", where)
            aliases = rec.get("aliases")
            if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
                raise InvalidInput(
                    f"{where}: 'aliases' must be a list of strings",
                    zh=f"{_zh(where)}：'aliases' 须为字符串列表",
                )
        self._vector(rec, where)
        self._labels[node_id] = label
        if (m := _ALLOCATED.match(node_id)) is not None:
            prefix, num = m.group(1), int(m.group(2))
            self._highest[prefix] = max(self._highest[prefix], num)

    def _chunk(self, rec: Record, where: str) -> None:
        event_id = _str(rec, "event_id", where)
        if self._labels.get(event_id) != "Event":
            raise InvalidInput(
                f"{where}: chunk of {event_id!r}, which is no event of the dump",
                zh=f"{_zh(where)}：分块所属的 {event_id!r} 不是本文件中的事件",
            )
        index = _int(rec, "chunk_index", where, low=0)
        start = _int(rec, "start", where, low=0)
        end = _int(rec, "end", where, low=start)
        text = _str(rec, "text", where)
        _str(rec, "text_hash", where)
        if end > self._lengths[event_id] or len(text) != end - start:
            raise InvalidInput(
                f"{where}: chunk [{start}, {end}) does not fit {event_id}'s content "
                f"({self._lengths[event_id]} code points) or its text",
                zh=f"{_zh(where)}：分块 [{start}, {end}) 与 {event_id} 的内容"
                f"（{self._lengths[event_id]} 个码点）或其文本不符",
            )
        _hash_matches(rec, "text", "text_hash", text_hash(text), where)
        if (event_id, index) in self._chunks:
            raise InvalidInput(
                f"{where}: chunk {event_id}#{index} appears twice",
                zh=f"{_zh(where)}：分块 {event_id}#{index} 重复出现",
            )
        self._chunks.add((event_id, index))
        self._vector(rec, where)

    def _relation(self, rec: Record, where: str) -> None:
        kind = rec.get("type")
        if kind not in REL_TYPES:
            raise InvalidInput(
                f"{where}: unknown relationship type {kind!r}",
                zh=f"{_zh(where)}：未知关系类型 {kind!r}",
            )
        source, target = _str(rec, "source", where), _str(rec, "target", where)
        a, b = self._labels.get(source), self._labels.get(target)
        if a is None or b is None:
            missing = source if a is None else target
            raise InvalidInput(
                f"{where}: {kind} points to {missing!r}, no node of the dump",
                zh=f"{_zh(where)}：{kind} 指向的 {missing!r} 不是本文件中的节点",
            )
        srcs, dsts = REL_ENDS[kind]
        if a not in srcs or b not in dsts:
            raise InvalidInput(
                f"{where}: {kind} cannot connect a {a} to a {b}",
                zh=f"{_zh(where)}：{kind} 不能连接 {a} 与 {b}",
            )
        props = rec.get("props")
        if not isinstance(props, dict) or not all(
            isinstance(v, str | int | float | bool) for v in props.values()
        ):
            raise InvalidInput(
                f"{where}: 'props' must be an object of plain values",
                zh=f"{_zh(where)}：'props' 须为只含简单值的对象",
            )
        ek = ""
        if kind == "HAS_ATTITUDE" and "event_id" in props:
            ek = props["event_id"]
            if not isinstance(ek, str):
                raise InvalidInput(
                    f"{where}: HAS_ATTITUDE's event_id must be a string",
                    zh=f"{_zh(where)}：HAS_ATTITUDE 的 event_id 须为字符串",
                )
        key = (kind, source, target, ek)
        if key in self._relations:
            raise InvalidInput(
                f"{where}: relation {kind} {source} -> {target} appears twice",
                zh=f"{_zh(where)}：关系 {kind} {source} -> {target} 重复出现",
            )
        self._relations.add(key)

    def _topic(self, rec: Record, where: str) -> None:
        path = _str(rec, "path", where)
        parts = path.split(TOPIC_SEPARATOR)
        if "" in parts:
            raise InvalidInput(
                f"{where}: topic path {path!r} has an empty segment",
                zh=f"{_zh(where)}：话题路径 {path!r} 含空段",
            )
        parent = TOPIC_SEPARATOR.join(parts[:-1]) if len(parts) > 1 else None
        if rec.get("name") != parts[-1] or rec.get("parent") != parent:
            raise InvalidInput(
                f"{where}: topic {path!r} needs name {parts[-1]!r} and parent {parent!r}",
                zh=f"{_zh(where)}：话题 {path!r} 的 name 须为 {parts[-1]!r}，"
                f"parent 须为 {parent!r}",
            )
        if parent is not None and parent not in self._topics:
            raise InvalidInput(
                f"{where}: topic {path!r} comes before its parent {parent!r}",
                zh=f"{_zh(where)}：话题 {path!r} 出现在其父话题 {parent!r} 之前",
            )
        if path in self._topics:
            raise InvalidInput(
                f"{where}: topic {path!r} appears twice", zh=f"{_zh(where)}：话题 {path!r} 重复出现"
            )
        self._topics.add(path)

    def _binding(self, rec: Record, where: str) -> None:
        path, event_id = _str(rec, "path", where), _str(rec, "event_id", where)
        if path not in self._topics or self._labels.get(event_id) != "Event":
            raise InvalidInput(
                f"{where}: binding of {event_id!r} to {path!r}: no such pair",
                zh=f"{_zh(where)}：{event_id!r} 与 {path!r} 的绑定无对应的事件或话题",
            )
        if (path, event_id) in self._bindings:
            raise InvalidInput(
                f"{where}: binding of {event_id!r} to {path!r} appears twice",
                zh=f"{_zh(where)}：{event_id!r} 与 {path!r} 的绑定重复出现",
            )
        _int(rec, "timestamp", where)
        for name in ("activation", "diffusion", "context_independence"):
            w = rec.get(name)
            if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w):
                raise InvalidInput(
                    f"{where}: {name!r} must be a number", zh=f"{_zh(where)}：{name!r} 须为数字"
                )
            if not 0.0 <= w <= 1.0:
                raise InvalidInput(
                    f"{where}: {name!r} must be in [0, 1]",
                    zh=f"{_zh(where)}：{name!r} 须在 [0, 1] 内",
                )
            rec[name] = float(w)
        related = rec.get("related")
        if not isinstance(related, list) or not all(isinstance(p, str) for p in related):
            raise InvalidInput(
                f"{where}: 'related' must be a list of topic paths",
                zh=f"{_zh(where)}：'related' 须为话题路径列表",
            )
        self._bindings.add((path, event_id))

    def _save_record(self, rec: Record, where: str) -> None:
        key = _str(rec, "key", where)
        _str(rec, "created_at", where)
        result = rec.get("result")
        if not (
            isinstance(result, dict)
            and isinstance(result.get("event_ids"), list)
            and isinstance(result.get("created"), dict)
            and isinstance(result.get("merged"), list)
            and isinstance(result.get("refs"), dict)
        ):
            raise InvalidInput(
                f"{where}: 'result' must hold event_ids, created, merged, refs",
                zh=f"{_zh(where)}：'result' 须含 event_ids、created、merged、refs",
            )
        if key in self._keys:
            raise InvalidInput(
                f"{where}: save record {key!r} appears twice",
                zh=f"{_zh(where)}：保存记录 {key!r} 重复出现",
            )
        self._keys.add(key)

    def _ids(self, rec: Record, where: str) -> None:
        if self.counts["ids"]:
            raise InvalidInput(
                f"{where}: a second ids record", zh=f"{_zh(where)}：出现第二条 ids 记录"
            )
        extra = set(rec) - {"kind", *ID_PREFIXES}
        if extra:
            raise InvalidInput(
                f"{where}: unknown fields {sorted(extra)} in the ids record",
                zh=f"{_zh(where)}：ids 记录含未知字段 {sorted(extra)}",
            )
        for prefix in ID_PREFIXES:
            mark = _int(rec, prefix, where, low=0)
            if mark < self._highest[prefix]:
                raise InvalidInput(
                    f"{where}: the ids record says {prefix} ids end at {mark}, but the dump "
                    f"holds {prefix}_{self._highest[prefix]}",
                    zh=f"{_zh(where)}：ids 记录称 {prefix} 的 id 止于 {mark}，"
                    f"但文件中有 {prefix}_{self._highest[prefix]}",
                )


def _hash_matches(rec: Record, field: str, hash_field: str, actual: str, where: str) -> None:
    """A text that no longer matches the hash saved with it was altered after the export
    (an edit, a flipped byte): refused, naming the line, before anything is written."""
    if rec[hash_field] != actual:
        raise DumpDamaged(
            f"{where}: {rec.get('id') or rec.get('event_id')}'s {field!r} does not match its "
            f"{hash_field} (the text was changed after the export); export it again, or "
            "restore an unaltered copy",
            zh=f"{_zh(where)}：{rec.get('id') or rec.get('event_id')} 的 {field!r} 与 {hash_field} "
            "不符（导出后文本被改动）；请重新导出，或恢复未改动的副本",
            line=int(where[5:]) if where[5:].isdigit() else None,
        )


def _str(rec: Record, name: str, where: str) -> str:
    value = rec.get(name)
    if not isinstance(value, str):
        raise InvalidInput(
            f"{where}: {name!r} must be a string", zh=f"{_zh(where)}：{name!r} 须为字符串"
        )
    return value


def _opt_str(rec: Record, name: str, where: str) -> None:
    rec.setdefault(name, None)
    if rec[name] is not None and not isinstance(rec[name], str):
        raise InvalidInput(
            f"{where}: {name!r} must be a string or null",
            zh=f"{_zh(where)}：{name!r} 须为字符串或 null",
        )


def _int(rec: Record, name: str, where: str, *, low: int | None = None) -> int:
    value = rec.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(
            f"{where}: {name!r} must be an integer", zh=f"{_zh(where)}：{name!r} 须为整数"
        )
    if low is not None and value < low:
        raise InvalidInput(
            f"{where}: {name!r} must be at least {low}", zh=f"{_zh(where)}：{name!r} 不能小于 {low}"
        )
    return value
