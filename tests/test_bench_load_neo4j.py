"""``bench.load --store neo4j`` (issue 30): two real replicas over the test Neo4j, round robin,
the follow-up chains and the saves' check through the API; the space is gone afterwards. No
timings: the figures are the bench's, not a test's."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench import load
from bench._load_neo4j import listening_pid
from tests.store.factory_neo4j import target, unreachable

ROOT = Path(__file__).resolve().parents[1]


def test_listening_pid_is_the_process_that_listens() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert listening_pid(port) is None  # bound, not listening
        s.listen()
        assert listening_pid(port) == os.getpid()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--pin"], "--pin with --store neo4j"),
        (["--own-data", "--savers", "0"], "--own-data is for the embedded store only"),
        (["--neo4j-uri", ""], "--store neo4j needs --neo4j-uri"),
    ],
)
def test_what_the_neo4j_mode_does_not_take_is_one_line_and_exit_2(
    flags: list[str], message: str
) -> None:
    cmd = [sys.executable, "-m", "bench.load", "--store", "neo4j", "--neo4j-uri", "bolt://h:1"]
    cmd += ["--neo4j-password", "x", *flags]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert message in done.stderr.splitlines()[-1]


def test_two_replicas_over_neo4j_answer_every_follow_up_and_keep_every_save(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reason = unreachable()
    if reason is not None:
        pytest.skip(reason)
    t = target()
    assert t is not None
    out = tmp_path / "load_neo4j.md"
    argv = ["--store", "neo4j", "--processes", "2", "--searchers", "3", "--follow-ups", "3"]
    argv += ["--savers", "1", "--seconds", "4", "--embedder", "hashing", "--out", str(out)]
    assert load.main(argv) == 0
    report = out.read_text(encoding="utf-8")
    row = next(line for line in report.splitlines() if line.startswith("| 1 | 2 |"))
    cols = [c.strip() for c in row.strip("|").split("|")]
    follow_ups = re.fullmatch(r"(\d+)/(\d+) \(.*\)", cols[5])
    assert follow_ups is not None
    answered, sent = follow_ups.groups()
    assert int(sent) > 0 and answered == sent  # every follow-up, on the other process
    assert cols[6:8] == ["0", "0"]  # no cursor expiry, no error
    assert int(cols[8].split()[0]) > 0 and cols[9] == "yes"  # saves, each once, exact content
    space = re.search(r"space (load[0-9a-f]+)", capsys.readouterr().err)
    assert space is not None
    from neo4j import GraphDatabase

    with GraphDatabase.driver(t.uri, auth=(t.user, t.password)) as driver:
        left = driver.execute_query(
            "MATCH (n) WHERE n.space = $s RETURN count(n) AS n", s=space.group(1)
        ).records[0]["n"]
    assert left == 0  # the run's space was dropped
