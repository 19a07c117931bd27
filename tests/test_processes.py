"""Issue #13, cases 3 and 4, with real processes on both stores: ``mnemoql import`` resumes
after a ``kill -9`` without duplicates, a re-run after fixing a bad line saves only that line,
a second process writing to a served memory is seen by the service's search and recall at once,
and a memory restored without vectors is flagged until it is re-embedded."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.processes import Place, place_fixture, serving, stores  # noqa: F401

SEARCH = "query($q: String!) { search(query: $q) { items { eventId summary } } }"
INDEX = "{ memoryIndex { mismatch model counts { events } } }"
RECALL = "query($p: String!) { recall(topicPath: $p) { memories { event { id } } } }"


def line(i: int, **extra: object) -> str:
    """One import line with a ready extraction: exactly one event, no model call."""
    text = f"Note {i}: the heron counted {i} fish by the pond."
    return json.dumps({"content": text, "extraction": {"events": [
        {"ref": "e1", "summary": f"heron note {i}"}]}, **extra})  # fmt: skip


@pytest.mark.parametrize("place", stores(), indirect=True)
def test_import_resumes_after_kill_9_without_duplicates(place: Place, tmp_path: Path) -> None:
    n = 400 if place.store == "embedded" else 120  # long enough to be killed midway
    src = tmp_path / "notes.jsonl"
    src.write_text("\n".join(line(i) for i in range(n)) + "\n", encoding="utf-8")
    proc = place.popen("import", str(src), "--concurrency", "2")
    deadline = time.monotonic() + 120
    while len(place.event_contents()) < 10:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    saved_before = len(place.event_contents())
    assert 0 < saved_before < n, "the kill landed after the import finished; make it longer"
    again = place.cli("import", str(src))
    assert again.returncode == 0, again.stderr
    contents = Counter(place.event_contents())
    assert len(contents) == n and set(contents.values()) == {1}  # every line once, none twice
    summary = again.stderr.strip().splitlines()[-1]
    saved, skipped = (int(summary.split(": ")[1].split(", ")[k].split()[0]) for k in (0, 1))
    assert saved + skipped == n and skipped >= saved_before, summary


@pytest.mark.parametrize("place", stores(), indirect=True)
def test_a_rerun_after_fixing_a_bad_line_saves_only_that_line(
    place: Place, tmp_path: Path
) -> None:
    lines = [line(i) for i in range(6)]
    lines[3] = json.dumps({"content": "\u200b\u200b"})  # nothing visible: refused at save
    src = tmp_path / "notes.jsonl"
    src.write_text("\n".join(lines), encoding="utf-8")
    first = place.cli("import", str(src))
    assert first.returncode == 1
    assert "notes.jsonl:4: INVALID_TEXT" in first.stderr
    assert "5 saved, 0 skipped, 1 failed of 6 lines" in first.stderr
    lines[3] = json.dumps({"content": "Note 3, fixed: the heron rested."})
    src.write_text("\n".join(lines), encoding="utf-8")
    fixed = place.cli("import", str(src))
    assert fixed.returncode == 0, fixed.stderr
    assert "1 saved, 5 skipped, 0 failed of 6 lines" in fixed.stderr
    assert len(place.event_contents()) == 6
    # identical lines are distinct memories, keyed by their rank among the repeats: the first
    # line(0) was saved above, its three repeats and both "ok" are new
    src.write_text("\n".join([line(0), line(0), json.dumps({"content": "ok"})] * 2), "utf-8")
    repeats = place.cli("import", str(src))
    assert "5 saved, 1 skipped, 0 failed of 6 lines" in repeats.stderr, repeats.stderr
    assert place.cli("import", str(src)).stderr.count("0 saved, 6 skipped") == 1


@pytest.mark.parametrize("place", stores(), indirect=True)
def test_a_second_process_writing_is_seen_by_the_service_at_once(
    place: Place, tmp_path: Path
) -> None:
    src = tmp_path / "garden.jsonl"
    src.write_text(
        json.dumps({"content": "The zebracorn tulips opened in the east bed.",
                    "topic_path": "garden->tulips"}) + "\n", encoding="utf-8")  # fmt: skip
    with serving(place) as service:
        service.gql(
            "mutation { save(input: {content: \"Alice moved to Berlin.\", topicPath: \"work\"}) "
            "{ eventIds } }"
        )
        # the service has its vectors and its topic index in memory now
        assert service.gql(SEARCH, q="zebracorn tulips")["search"]["items"][0]["summary"]
        assert service.gql(RECALL, p="garden->tulips")["recall"]["memories"] == []
        imported = place.cli("import", str(src))
        assert imported.returncode == 0, imported.stderr
        found = service.gql(SEARCH, q="zebracorn tulips east bed")["search"]["items"]
        assert "zebracorn" in found[0]["summary"].lower() or len(found) == 2
        assert [m["event"]["id"] for m in service.gql(RECALL, p="garden->tulips")["recall"][
            "memories"]] == ["event_2"]  # fmt: skip
        assert service.gql(INDEX)["memoryIndex"]["counts"]["events"] == 2
        # a save through the service after the other process: the next id, not a reused one
        after = service.gql("mutation { save(input: {content: \"Bob stayed.\"}) { eventIds } }")
        assert after["save"]["eventIds"] == ["event_3"]
    assert "Traceback" not in service.output


@pytest.mark.parametrize("place", stores(), indirect=True)
def test_a_restore_without_vectors_is_flagged_until_revectorized(
    place: Place, tmp_path: Path
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(line(i) for i in range(3)), encoding="utf-8")
    assert place.cli("import", str(src)).returncode == 0
    dump = tmp_path / "memory.jsonl"
    assert place.cli("export", str(dump)).returncode == 0  # no vectors
    restored = Place(tmp_path / "restored", place.store)
    try:
        out = restored.cli("restore", str(dump), "--no-revectorize")
        assert out.returncode == 0, out.stderr
        with serving(restored) as service:
            assert service.gql(INDEX)["memoryIndex"]["mismatch"] is True
            body = service.post(SEARCH, q="heron fish")
            assert body["errors"][0]["extensions"]["code"] == "EMBEDDING_MISMATCH"
            assert "restored without its vectors" in body["errors"][0]["message"]
            # re-embedding in another process, while the service runs
            revectorized = restored.cli("revectorize")
            assert revectorized.returncode == 0, revectorized.stderr
            assert service.gql(INDEX)["memoryIndex"]["mismatch"] is False
            items = service.gql(SEARCH, q="heron counted fish")["search"]["items"]
            assert len(items) == 3
    finally:
        restored.drop()
