"""Storage faults a caller can wait out, as coded errors instead of internal ones.

A full disk and another process's write lock are not bugs: SQLite refuses the write, rolls its
transaction back and the store holds exactly what it held before. The client should hear that
(``STORAGE_FULL``, ``STORAGE_BUSY``, both retryable with a hint), not ``INTERNAL_SERVER_ERROR``;
``/readyz`` reports the same state before anyone writes (``write_fault``).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from mnemoql.engine.errors import (
    MnemoError,
    StorageBusy,
    StorageFault,
    StorageFull,
    StoreUnavailable,
)

# Below this much free space a save may not fit (a long content, its chunk vectors, the WAL):
# /readyz says STORAGE_FULL before a client meets it.
MIN_FREE_BYTES = 1 << 20
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_BUSY_NAMES = frozenset({"SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_BUSY_RECOVERY",
                         "SQLITE_LOCKED", "SQLITE_LOCKED_SHAREDCACHE"})  # fmt: skip


def full(where: Path | str | None) -> StorageFull:
    place = f" holding {where}" if where else ""
    return StorageFull(
        f"the disk{place} is full; nothing was written",
        hint="free space on that disk (or move MNEMOQL_DATA_DIR), then retry the same call",
        zh="磁盘已满，未写入任何内容",
    )


def busy(where: Path | str | None) -> StorageBusy:
    place = f" of {where}" if where else ""
    return StorageBusy(
        f"another process holds the write lock{place}; nothing was written",
        hint="retry when it lets go (a `mnemoql import`, `restore` or `revectorize` beside the "
        "service, or a sqlite3 shell left inside a transaction)",
        zh="数据库被其他进程锁定，未写入任何内容",
    )


def storage_fault(exc: BaseException, where: Path | str | None = None) -> StorageFault | None:
    """The coded fault ``exc`` stands for, or None when it is something else."""
    if isinstance(exc, sqlite3.Error):
        name = getattr(exc, "sqlite_errorname", "") or ""
        text = str(exc)
        if name == "SQLITE_FULL" or "database or disk is full" in text:
            return full(where)
        if name in _BUSY_NAMES or text.startswith("database is locked"):
            return busy(where)
        return None
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return full(where or exc.filename)
    return None


def unwritable(directory: Path) -> str | None:
    """Why nothing can be created in ``directory`` (its nearest existing ancestor): a
    read-only filesystem or missing permission; None when it looks writable. SQLite says only
    "unable to open database file"."""
    for p in (directory, *directory.parents):
        if p.exists():
            if os.access(p, os.W_OK):
                return None
            try:
                read_only = bool(os.statvfs(p).f_flag & os.ST_RDONLY)
            except OSError:
                read_only = False
            return f"{p} is on a read-only filesystem" if read_only else f"{p} is not writable"
    return None


def data_dir_problem(directory: Path) -> MnemoError | None:
    """Why an embedded memory cannot live in ``directory`` (created when missing), or None.
    ``mnemoql serve`` asks before it listens: its store opens after the listener, so a
    refusal from the open would come after the banner and uvicorn's start-up lines."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fault = storage_fault(exc, directory)
        if fault is not None:
            return fault
        if isinstance(exc, FileExistsError):  # a file by that name
            why = "it exists and is not a directory"
        else:
            why = unwritable(directory) or (exc.strerror or str(exc)).lower()
        return StoreUnavailable(
            f"cannot create the data directory {directory}: {why}",
            zh=f"无法创建数据目录：{directory}",
        )
    cannot = unwritable(directory)
    if cannot is None:
        return None
    return StoreUnavailable(
        f"cannot write in the data directory {directory}: {cannot}",
        zh=f"无法写入数据目录：{directory}",
    )


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged writer may still use on the filesystem of ``path`` (its nearest
    existing ancestor), or None when it cannot be told."""
    for p in (path, *path.parents):
        try:
            st = os.statvfs(p)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize
    return None


def disk_fault(path: Path) -> StorageFault | None:
    """``STORAGE_FULL`` when the filesystem of ``path`` has less than ``MIN_FREE_BYTES`` left."""
    free = free_bytes(path)
    if free is not None and free < MIN_FREE_BYTES:
        return full(path)
    return None


def probe_write(file: Path, wait_s: float = 0.25, *, lock: bool = True) -> StorageFault | None:
    """Whether a write to the SQLite ``file`` would be refused now: too little disk left, or
    another process holding the write lock past ``wait_s``. Takes the lock and lets go at once
    (``BEGIN IMMEDIATE; ROLLBACK``) on a connection of its own, so it never queues behind the
    store's writes; writes nothing. ``lock=False`` checks the disk only: the caller's own
    writer is busy, and the lock it holds is not a fault."""
    fault = disk_fault(file)
    if fault is not None or not lock:
        return fault
    try:
        conn = sqlite3.connect(f"{file.absolute().as_uri()}?mode=rw", uri=True,
                               timeout=wait_s, isolation_level=None)  # fmt: skip
    except sqlite3.Error as exc:
        return storage_fault(exc, file)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        return storage_fault(exc, file)
    finally:
        conn.close()
    return None
