"""Storage faults against a real ``mnemoql serve`` (issue 29, case 3): a full disk and another
process's write lock reach the client as retryable ``STORAGE_FULL`` / ``STORAGE_BUSY`` (not
``INTERNAL_SERVER_ERROR``), ``/readyz`` says the store cannot write while ``/healthz`` stays 200,
reads go on, and every acknowledged save is in the database afterwards.

The full disk is a real one: a 16 MiB tmpfs mounted for the test (needs root or CAP_SYS_ADMIN;
the test skips with the reason otherwise), filled with a file until the kernel says ENOSPC.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx

from tests.disks import fill, small_disk
from tests.processes import Place, Service, serving

SAVE = "mutation($c: String!) { save(input: {content: $c}) { eventIds } }"
KEYED = (
    "mutation($c: String!, $k: String!) "
    "{ save(input: {content: $c, idempotencyKey: $k}) { eventIds } }"
)
INDEX = "{ memoryIndex { counts { events } } }"


def saved(service: Service, content: str) -> dict[str, Any]:
    return service.post(SAVE, c=content)


def ready(service: Service) -> httpx.Response:
    return httpx.get(f"{service.base}/readyz", timeout=30)


def test_a_full_disk_is_a_retryable_storage_full_and_readyz_says_so(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk") as disk:
        place = Place(disk / "data", "embedded")
        acknowledged: list[str] = []
        with serving(place) as service:
            for i in range(5):
                body = saved(service, f"Alice noted fact {i} before the disk filled up.")
                assert not body.get("errors"), body
                acknowledged.append(f"Alice noted fact {i} before the disk filled up.")
            filler = fill(disk)

            long_note = "Bob wrote a long note. " * 400
            body = service.post(KEYED, c=long_note, k="bob-1")
            (error,) = body["errors"]
            assert error["extensions"]["code"] == "STORAGE_FULL", error
            assert error["extensions"]["retryable"] is True
            assert "free space" in error["extensions"]["hint"]
            r = ready(service)
            assert r.status_code == 503
            assert r.json()["status"] == "unavailable"
            assert r.json()["writes"][place.space] == "STORAGE_FULL"  # (and the default space)
            assert httpx.get(f"{service.base}/healthz", timeout=30).status_code == 200
            assert service.gql(INDEX)["memoryIndex"]["counts"]["events"] == 5  # reads go on

            filler.unlink()
            assert ready(service).status_code == 200
            for _ in range(2):  # the retry saves it; a second retry replays the first
                body = service.post(KEYED, c=long_note, k="bob-1")
                assert not body.get("errors"), body
            acknowledged.append(long_note)
            body = saved(service, "Carol saved after space was freed.")
            assert not body.get("errors"), body
            acknowledged.append("Carol saved after space was freed.")
        assert "Traceback" not in service.output
        assert sorted(place.event_contents()) == sorted(acknowledged)


def test_a_write_lock_held_elsewhere_is_a_retryable_storage_busy(tmp_path: Path) -> None:
    place = Place(tmp_path / "data", "embedded")
    with serving(place) as service:
        body = saved(service, "Alice saved before the lock.")
        assert not body.get("errors"), body
        other = sqlite3.connect(place.data_dir / f"memory-{place.space}.db", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another process's write lock, held
            body = saved(service, "Bob tried while it was held.")
            (error,) = body["errors"]
            assert error["extensions"]["code"] == "STORAGE_BUSY", error
            assert error["extensions"]["retryable"] is True
            r = ready(service)
            assert r.status_code == 503
            assert r.json()["writes"] == {place.space: "STORAGE_BUSY"}  # the default is free
            assert httpx.get(f"{service.base}/healthz", timeout=30).status_code == 200
            assert service.gql(INDEX)["memoryIndex"]["counts"]["events"] == 1  # reads go on
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert ready(service).status_code == 200
        body = saved(service, "Bob tried again after it let go.")
        assert not body.get("errors"), body
    assert "Traceback" not in service.output
    assert sorted(place.event_contents()) == sorted(
        ["Alice saved before the lock.", "Bob tried again after it let go."]
    )
