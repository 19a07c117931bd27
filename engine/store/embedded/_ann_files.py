"""The saved ANN indexes of one database: the files in ``<database>.ann/``.

One ``<kind>.usearch`` file per index and ``manifest.json``, each written beside and renamed
over, the manifest last. The manifest names the vector epoch the files hold (``_ann``'s
``ann_state``), and per file its size, vector count, graph parameters and the forget log
position it follows. A saved index is adopted memory-mapped read-only (*frozen*); its mutable
copy is read again from the file with a loader that hands the GIL over while it runs.

Kept apart from ``_ann`` (when to save, adopt or thaw, kept in step with the mirrors) because
this is only the files' format and their reading and writing.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemoql.engine.store.embedded._hnsw import KINDS, Hnsw, Kind, first_missing
from mnemoql.engine.store.embedded._index import EntityView, EventView

log = logging.getLogger("mnemoql.engine.store.embedded._ann")  # one logger for the indexes

ViewOf = Callable[[Kind], tuple[int, EventView | EntityView]]


class AnnFiles:
    """The folder ``dir`` of one database's saved indexes."""

    def __init__(self, dir: Path) -> None:
        self.dir = dir

    def manifest(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads((self.dir / "manifest.json").read_text("utf-8"))
            return data
        except (OSError, ValueError):
            return {}

    def holds(self, h: Hnsw) -> bool:
        """Whether ``h``'s file already holds this epoch, graph and as many vectors (a 1M-event
        index is over a gigabyte: a catch-up that added nothing writes nothing)."""
        manifest = self.manifest()
        info = manifest.get("indexes", {}).get(h.kind, {})
        return not (
            manifest.get("epoch") != h.epoch
            or _graph_of(manifest, info) != h.graph
            or info.get("vectors") != len(h.index)
        )

    def save(self, h: Hnsw) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        path, tmp = self.dir / f"{h.kind}.usearch", self.dir / f"{h.kind}.usearch.tmp"
        with h.lock:
            if h.frozen:  # the file itself, unchanged
                return
            h.index.save(str(tmp))
            count = len(h.index)
        os.replace(tmp, path)
        manifest = self.manifest()
        if manifest.get("epoch") != h.epoch:  # the files of another epoch are stale
            manifest = {"epoch": h.epoch, "indexes": {}}
        indexes = manifest.setdefault("indexes", {})
        graph = manifest.pop("graph", None)  # one graph for every file (session 9's manifests)
        for info in indexes.values():
            info.setdefault("graph", graph)
        indexes[h.kind] = {
            "bytes": path.stat().st_size,
            "vectors": count,
            "graph": h.graph,
            "forgotten": h.forgotten,
        }
        body = json.dumps(manifest, sort_keys=True)
        (self.dir / "manifest.json.tmp").write_text(body, "utf-8")
        os.replace(self.dir / "manifest.json.tmp", self.dir / "manifest.json")

    def load(
        self,
        epoch: str,
        position: int,
        gone: npt.NDArray[np.uint64],
        pruned: int,
        view_of: ViewOf,
    ) -> dict[Kind, Hnsw]:
        """Saved indexes of this epoch, forgotten keys removed, ``covered`` at the first mirror
        row each lacks; those of other graph parameters (or of none named: files from before
        the field) or saved before the forget log's pruned records (``pruned``) come stale, to
        serve until rebuilt."""
        manifest = self.manifest()
        if manifest.get("epoch") != epoch or not manifest.get("indexes"):
            return {}
        from usearch.index import Index  # only a memory that has indexes loads the library

        out: dict[Kind, Hnsw] = {}
        for kind, info in manifest.get("indexes", {}).items():
            path = self.dir / f"{kind}.usearch"
            if kind not in KINDS or not path.is_file() or path.stat().st_size != info.get("bytes"):
                continue
            try:
                index = Index.restore(str(path), view=True)  # mapped: thawed in the background
            except Exception as exc:  # a torn or foreign file: rebuild instead
                log.warning("ignoring the saved %s index: %s", kind, exc)
                continue
            if index is None:
                continue
            gen, view = view_of(kind)
            if index.ndim != view.dims:
                continue
            covered = first_missing(index, view, kind, gone, bisect=True)
            graph = _graph_of(manifest, info) or {}
            h = Hnsw(kind, index, gen, epoch, covered, frozen=True, graph=graph)
            h.removals.append(gone)
            h.forgotten = position
            h.behind = int(info.get("forgotten", 0)) < pruned
            h.source = (path, _identity(path))
            out[kind] = h
        return out


def _graph_of(manifest: Mapping[str, Any], info: Mapping[str, Any]) -> Any:
    """The graph parameters a saved file was built with: its own entry, else the manifest's
    one for all (session 9), else None (older files)."""
    return info.get("graph", manifest.get("graph"))


def _identity(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def mutable_copy(h: Hnsw) -> Any:
    """A mutable copy of a frozen index, read again from its file (``_load_yielding``) unless
    the file was replaced since (another process saved over it), when only the copy of the
    mapped view gives the same keys (``Index.copy()`` holds the GIL throughout: 1.7 s for a
    300k-event chunk index, with every request of the process waiting)."""
    if h.source is not None:
        path, ident = h.source
        try:
            if _identity(path) == ident:
                index = _load_yielding(path)
                if index is not None and _identity(path) == ident:
                    return index
        except (OSError, RuntimeError, ValueError):
            pass
    return h.index.copy()


def _load_yielding(path: Path) -> Any:
    """``Index.restore(path)`` that lets the process's other threads run while it loads.

    usearch's load holds the GIL from start to end: at 1M events the chunk index (1 GB) held
    it for 1.2-2 s from the page cache and most of the ~10 s to /readyz from disk, while the
    event loop could not answer a single request. Loaded with a progress callback, usearch
    calls back into Python once per node, and each call gives the interpreter a point to hand
    the GIL over (a ``sleep(0)`` every few milliseconds makes sure it does); the longest stall
    left is the part before the first node (the file read, shortened by reading the file
    first without the GIL) and after the last, ~0.4 s at 1M (docs/DECISIONS.md, "An index
    load that stalled the process")."""
    from usearch.index import Index

    meta = Index.metadata(str(path))
    if not meta:
        return None
    with path.open("rb") as f:  # into the page cache, GIL released between reads
        while f.read(_READ_BLOCK):
            pass
    index = Index(ndim=meta["dimensions"], dtype=meta["kind_scalar"], metric=meta["kind_metric"])
    index.load(str(path), progress=_Yielding())
    return index


_READ_BLOCK = 8 << 20
_YIELD_EVERY_S = 0.004


class _Yielding:
    """usearch progress callback: gives other threads the GIL every few milliseconds."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> bool:
        now = time.monotonic()
        if now - self.last >= _YIELD_EVERY_S:
            time.sleep(0)
            self.last = time.monotonic()
        return True


# usearch checks a callback's annotations against the types themselves; this module's
# ``from __future__ import annotations`` would leave them as strings
_Yielding.__call__.__annotations__ = {"done": int, "total": int, "return": bool}
