"""The ``topic_based_memory.json`` codec of Partner's ``MemoryRuntimeStateCodec`` (SPEC §2.9).

Only dict <-> index conversion: reading and writing the file is the caller's business. Loading is
tolerant like Partner's: a bad entry is skipped with a logged warning, never an exception. Where
Partner is silent (a binding without ids, a non-string path) we warn as well.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from datetime import date
from typing import Any

import numpy as np

from mnemoql.engine.topics.dates import DateMemoryIndex
from mnemoql.engine.topics.profile import ActivationProfile, SliceRef
from mnemoql.engine.topics.tree import TopicBinding, TopicMemoryIndex, normalise_related

log = logging.getLogger(__name__)

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INTEGER = re.compile(r"^[+-]?\d+$")


def _weight(value: float) -> float:
    # Shortest text of the float32 (0.55, not 0.550000011920929): what Java writes for 0.55f.
    return float(str(np.float32(value)))


def _ref(ref: SliceRef) -> dict[str, Any]:
    return {"unit_id": ref.unit_id, "slice_id": ref.slice_id}


def _binding(binding: TopicBinding) -> dict[str, Any]:
    profile = binding.profile
    return {
        **_ref(binding.slice_ref),
        "timestamp": binding.timestamp_ms,
        "activation_profile": {
            "activation_weight": _weight(profile.activation_weight),
            "diffusion_weight": _weight(profile.diffusion_weight),
            "context_independence_weight": _weight(profile.context_independence_weight),
        },
        "related_topic_paths": list(binding.related_paths),
    }


def to_state(topics: TopicMemoryIndex, dates: DateMemoryIndex) -> dict[str, Any]:
    """Every topic node (empty ones too) depth first, then the days in ascending order."""
    return {
        "topic_slices": [
            {"topic_path": node.path, "bindings": [_binding(b) for b in node.bindings]}
            for node in topics.walk()
        ],
        "date_index": [
            {"date": day.isoformat(), "refs": [_ref(ref) for ref in refs]}
            for day, refs in dates.entries().items()
        ],
    }


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _long(value: Any) -> int | None:
    """A JSON integer as fastjson's ``getLong`` reads it: ints, integral floats, digit strings."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str) and _INTEGER.match(value.strip()):
        return int(value.strip())
    return None


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _profile(value: Any) -> ActivationProfile | None:
    if not isinstance(value, Mapping):
        return None
    return ActivationProfile.of(
        _float(value.get("activation_weight")),
        _float(value.get("diffusion_weight")),
        _float(value.get("context_independence_weight")),
    )


def _slice_ref(value: Any) -> SliceRef | None:
    if not isinstance(value, Mapping):
        return None
    unit_id, slice_id = _text(value.get("unit_id")), _text(value.get("slice_id"))
    if unit_id is None or slice_id is None:
        return None
    return SliceRef(unit_id, slice_id)


def _warn(warnings: list[str], message: str) -> None:
    log.warning("topic memory state: %s", message)
    warnings.append(message)


def _load_topic(entry: Any, topics: TopicMemoryIndex, warnings: list[str]) -> None:
    path = _text(entry.get("topic_path")) if isinstance(entry, Mapping) else None
    if path is None:
        _warn(warnings, f"skip topic entry without a topic_path: {entry!r}")
        return
    topics.ensure(path)
    for raw in _items(entry.get("bindings")):
        ref = _slice_ref(raw)
        if ref is None:
            _warn(warnings, f"skip binding of {path!r} without unit_id/slice_id: {raw!r}")
            continue
        timestamp = _long(raw.get("timestamp"))
        if timestamp is None:
            _warn(warnings, f"skip binding of {path!r} without timestamp: {ref.key}")
            continue
        related = normalise_related(
            p for p in _items(raw.get("related_topic_paths")) if isinstance(p, str)
        )
        topics.record_binding(
            path, ref, timestamp, related, _profile(raw.get("activation_profile"))
        )
        topics.ensure_topic_paths(related)


def _load_day(entry: Any, dates: DateMemoryIndex, warnings: list[str]) -> None:
    text = _text(entry.get("date")) if isinstance(entry, Mapping) else None
    try:
        if text is None or not _ISO_DATE.match(text):
            raise ValueError(text)
        day = date.fromisoformat(text)
    except ValueError:
        _warn(warnings, f"skip invalid date index: {entry!r}")
        return
    refs = []
    for raw in _items(entry.get("refs")):
        ref = _slice_ref(raw)
        if ref is None:
            _warn(warnings, f"skip ref of {text} without unit_id/slice_id: {raw!r}")
        else:
            refs.append(ref)
    dates.restore(day, refs)


def load_state(
    state: Mapping[str, Any], topics: TopicMemoryIndex, dates: DateMemoryIndex
) -> list[str]:
    """Reset both indexes and load ``state`` into them; returns the warnings it logged.

    Bindings go through :meth:`TopicMemoryIndex.record_binding`, so defaults, clamping and the
    upsert apply; related paths become nodes; a day's refs are deduped.
    """
    topics.reset()
    dates.reset()
    warnings: list[str] = []
    for entry in _items(state.get("topic_slices")):
        _load_topic(entry, topics, warnings)
    for entry in _items(state.get("date_index")):
        _load_day(entry, dates, warnings)
    return warnings


def from_state(state: Mapping[str, Any]) -> tuple[TopicMemoryIndex, DateMemoryIndex, list[str]]:
    """Fresh indexes loaded from ``state``, plus the warnings of skipped entries."""
    topics, dates = TopicMemoryIndex(), DateMemoryIndex()
    warnings = load_state(state, topics, dates)
    return topics, dates, warnings
