"""Who owns a managed Neo4j: the owner lock of one home (``<home>/run/owner``).

The service that starts a server holds an ``flock`` on this file while it lives and writes
``"<owner pid> <server pid>"`` into it. The kernel lets go of a flock with its process, even on
``kill -9``, so the next service that takes the lock knows the previous owner is gone, and a
server still running with the recorded pid is that owner's orphan (``web.neo4j_boot`` adopts
it and stops it on exit). How a server is installed, started and stopped is ``managed``.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Claim:
    """The owner lock of one home, held through ``fd`` by this process.

    ``previous`` is what the last owner recorded, ``(owner pid, server pid)``: since the lock
    was free, that owner is gone, and a server still running with that pid is its orphan.
    """

    fd: int
    previous: tuple[int, int] | None


class OwnerLock:
    """The owner lock file of one home."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def claim(self) -> Claim | None:
        """Take the lock for as long as this process lives; None when a live process holds
        it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited (PEP 446)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            owner, server = map(int, os.pread(fd, 64, 0).split())
            previous: tuple[int, int] | None = (owner, server)
        except ValueError:
            previous = None
        return Claim(fd, previous)

    def record(self, claim: Claim, server_pid: int) -> None:
        """Note that this process owns the server ``server_pid`` (it stops it on exit)."""
        os.ftruncate(claim.fd, 0)
        os.pwrite(claim.fd, f"{os.getpid()} {server_pid}\n".encode(), 0)

    def release(self, claim: Claim, *, forget: bool = True) -> None:
        """Let go of the lock; ``forget`` clears the record (the server is stopped or was
        never ours)."""
        try:
            if forget:
                os.ftruncate(claim.fd, 0)
        finally:
            os.close(claim.fd)
