"""The topic-path forest of Partner's ``TopicMemoryIndex`` (SPEC §2.2, §2.3).

A path ``a->b->c`` names a node three levels deep. Roots and children keep insertion order. Only
the whole path is trimmed (Java ``String.trim()``); segments keep their inner spaces, so
``"a -> b"`` and ``"a->b"`` are different nodes. :func:`fix_topic_path` is the stricter cleaning
applied to model output before it reaches the index.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from mnemoql.engine.topics.profile import ActivationProfile, SliceRef, normalise_profile

SEPARATOR = "->"

# Java String.trim() strips every code point <= U+0020, and nothing else.
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))
# Character.isWhitespace: space separators except the non-breaking ones, plus these controls.
_JAVA_WS_CONTROLS = frozenset("\t\n\u000b\f\r\u001c\u001d\u001e\u001f")
_NON_BREAKING = frozenset("\u00a0\u2007\u202f")
_BRACKETED = re.compile(r"\[[^\]]*\]")


def java_trim(text: str) -> str:
    return text.strip(_JAVA_TRIM)


def is_blank(text: str | None) -> bool:
    """Java ``String.isBlank()``: empty or only white space code points."""
    if text is None:
        return True
    return all(
        ch in _JAVA_WS_CONTROLS
        or (unicodedata.category(ch) in ("Zs", "Zl", "Zp") and ch not in _NON_BREAKING)
        for ch in text
    )


def split_path(path: str) -> list[str]:
    """Split on ``->`` like Java's ``String.split``: trailing empty segments are dropped."""
    parts = path.split(SEPARATOR)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def normalise_topic_path(path: str | None) -> str:
    """The index's own normalisation: trim the whole path, nothing more."""
    return "" if path is None else java_trim(path)


def normalise_related(paths: Iterable[str | None] | None) -> list[str]:
    """Trim each path, drop blank ones, dedupe keeping the first occurrence."""
    seen: dict[str, None] = {}
    for path in paths or ():
        normalised = normalise_topic_path(path)
        if not is_blank(normalised):
            seen.setdefault(normalised, None)
    return list(seen)


def fix_topic_path(path: str | None) -> str:
    """Clean a model-given path: drop ``[...]`` annotations, trim and drop empty segments.

    >>> fix_topic_path(" 项目 [3] -> partner ->  -> memory[root] ")
    '项目->partner->memory'

    ``{slices: N}`` suffixes are deliberately left alone, as in Partner.
    """
    if path is None or is_blank(path):
        return ""
    cleaned = (java_trim(_BRACKETED.sub("", part)) for part in path.split(SEPARATOR))
    return SEPARATOR.join(part for part in cleaned if part)


@dataclass(frozen=True, slots=True)
class TopicBinding:
    """One slice bound to a topic node, with what recall needs to score it."""

    slice_ref: SliceRef
    timestamp_ms: int
    related_paths: tuple[str, ...]
    profile: ActivationProfile

    def refreshed(
        self, timestamp_ms: int, related: Iterable[str], profile: ActivationProfile
    ) -> TopicBinding:
        """The rebinding of the same slice: new timestamp and profile, related paths merged."""
        merged = dict.fromkeys(self.related_paths)
        merged.update(dict.fromkeys(related))
        return replace(
            self, timestamp_ms=timestamp_ms, related_paths=tuple(merged), profile=profile
        )


class TopicNode:
    """A node of the forest. Read it through the properties; mutate it through the index."""

    __slots__ = ("_at", "_bindings", "_children", "parent", "path", "segment")

    def __init__(self, segment: str, parent: TopicNode | None) -> None:
        self.segment = segment
        self.parent = parent
        self.path: str = segment if parent is None else parent.path + SEPARATOR + segment
        self._children: dict[str, TopicNode] = {}
        self._bindings: list[TopicBinding] = []
        self._at: dict[SliceRef, int] = {}  # slice ref -> its place in _bindings (O(1) upsert)

    @property
    def is_root(self) -> bool:
        return self.parent is None

    @property
    def children(self) -> Mapping[str, TopicNode]:
        return MappingProxyType(self._children)

    @property
    def bindings(self) -> tuple[TopicBinding, ...]:
        """Bindings in insertion order (a rebinding keeps its original position)."""
        return tuple(self._bindings)

    def _child(self, segment: str) -> TopicNode:
        node = self._children.get(segment)
        if node is None:
            node = self._children[segment] = TopicNode(segment, self)
        return node

    def _upsert(self, binding: TopicBinding) -> TopicBinding:
        i = self._at.get(binding.slice_ref)
        if i is not None:
            current = self._bindings[i]
            self._bindings[i] = current.refreshed(
                binding.timestamp_ms, binding.related_paths, binding.profile
            )
            return self._bindings[i]
        self._at[binding.slice_ref] = len(self._bindings)
        self._bindings.append(binding)
        return binding

    def _remove(self, slice_ref: SliceRef) -> bool:
        """Drop the slice's binding; the bindings after it move up one place."""
        i = self._at.pop(slice_ref, None)
        if i is None:
            return False
        del self._bindings[i]
        for binding in self._bindings[i:]:
            self._at[binding.slice_ref] -= 1
        return True

    def __repr__(self) -> str:
        return f"TopicNode({self.path!r}, bindings={len(self._bindings)})"


class TopicMemoryIndex:
    """The forest of topic nodes. Not thread-safe; :class:`~engine.topics.TopicRecall` locks."""

    def __init__(self) -> None:
        self._roots: dict[str, TopicNode] = {}

    @property
    def roots(self) -> Mapping[str, TopicNode]:
        return MappingProxyType(self._roots)

    def reset(self) -> None:
        self._roots.clear()

    def ensure(self, path: str | None) -> TopicNode | None:
        """The node at ``path``, created with any missing ancestors; ``None`` for a blank path."""
        parts = self._parts(path)
        if not parts:
            return None
        node = self._roots.get(parts[0])
        if node is None:
            node = self._roots[parts[0]] = TopicNode(parts[0], None)
        for segment in parts[1:]:
            node = node._child(segment)
        return node

    def ensure_topic_paths(self, paths: Iterable[str | None] | None) -> None:
        for path in paths or ():
            self.ensure(path)

    def find(self, path: str | None) -> TopicNode | None:
        """The node at ``path``, or ``None`` if the path is blank or any segment is missing."""
        parts = self._parts(path)
        if not parts:
            return None
        node = self._roots.get(parts[0])
        for segment in parts[1:]:
            if node is None:
                return None
            node = node._children.get(segment)
        return node

    def record_binding(
        self,
        path: str | None,
        slice_ref: SliceRef,
        timestamp_ms: int,
        related: Iterable[str | None] | None = None,
        profile: ActivationProfile | None = None,
    ) -> TopicBinding | None:
        """Bind a slice to ``path`` (upsert by slice ref); ``None`` if the path is blank.

        A slice already bound here gets the new timestamp and profile, and the new related paths
        are appended after its old ones without duplicates. Related paths are normalised (trim,
        drop blank, dedupe); the caller creates their nodes with :meth:`ensure_topic_paths`.
        """
        node = self.ensure(path)
        if node is None:
            return None
        binding = TopicBinding(
            slice_ref,
            int(timestamp_ms),
            tuple(normalise_related(related)),
            normalise_profile(profile),
        )
        return node._upsert(binding)

    def unbind(self, path: str | None, slice_ref: SliceRef) -> bool:
        """Drop the slice's binding at ``path`` (its event was deleted in the store); the node
        stays, as Topic nodes outlive their events. False when there was none."""
        node = self.find(path)
        return node is not None and node._remove(slice_ref)

    def walk(self) -> Iterator[TopicNode]:
        """Every node, depth first, roots and children in insertion order."""
        stack = list(reversed(self._roots.values()))
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node._children.values()))

    def paths(self) -> list[str]:
        return [node.path for node in self.walk()]

    def topic_tree_text(self) -> str:
        """Partner's ``getTopicTree()``: the text handed to the models.

        >>> index = TopicMemoryIndex()
        >>> _ = index.record_binding("a->b", SliceRef("u", "s"), 0)
        >>> index.topic_tree_text()
        'a [root]\\r\\na->b {slices: 1}'
        """
        return "\r\n".join(
            f"{node.path} [root]"
            if node.is_root
            else f"{node.path} {{slices: {len(node._bindings)}}}"
            for node in self.walk()
        )

    @staticmethod
    def _parts(path: str | None) -> list[str]:
        normalised = normalise_topic_path(path)
        if is_blank(normalised):
            return []
        return split_path(normalised)
