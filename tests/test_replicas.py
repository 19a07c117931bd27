"""Replicas (issue 30): several ``mnemoql serve`` processes over one memory behind a load
balancer without stickiness. The evidence follow-up chain, sent round robin across three real
processes over HTTP, gives exactly what one process gives: the same events, none repeated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.processes import Place, Service, place_fixture, serving, stores

__all__ = ["place_fixture"]

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
PAGE = "cursor session items { eventId } expandConcepts nearbyEvents"
SEARCH = "query($q: String, $c: String) { search(query: $q, cursor: $c) { " + PAGE + " } }"
EXPAND = "query($c: String!, $id: ID!) { expand(cursor: $c, conceptId: $id) { " + PAGE + " } }"
NEARBY = (
    "query($c: String!, $id: ID!) { nearby(cursor: $c, eventId: $id, before: 2, after: 2) { "
    + PAGE
    + " } }"
)
TOPICS = ["backup", "migration", "caching", "security"]

Ask = Callable[[int, str, dict[str, Any]], dict[str, Any]]


def _seed(service: Service) -> None:
    for n in range(1, 17):
        topic = TOPICS[n % len(TOPICS)]
        content = f"Record {n}: the team planned the Neo4j {topic} work. " + f"note {n} " * 12
        ex = {
            "events": [
                {"ref": "e", "summary": f"Neo4j {topic} plan {n}", "concepts": ["c0", "c1"]}
            ],
            "concepts": [{"ref": "c0", "name": "Neo4j"}, {"ref": "c1", "name": topic}],
        }
        service.gql(SAVE, input={"content": content, "id": f"book_ch1_e{n:02d}", "extraction": ex})


def _chain(ask: Ask) -> list[list[str]]:
    """search, its next page, expand, nearby, the first search again (the same page), and a
    new search in the same session: the events of each step. ``ask(step, query, variables)``."""
    steps: list[dict[str, Any]] = []

    def run(query: str, **variables: Any) -> dict[str, Any]:
        data = ask(len(steps), query, variables)
        page: dict[str, Any] = next(iter(data.values()))
        steps.append(page)
        return page

    first = run(SEARCH, q="Neo4j backup and migration plans")
    more = run(SEARCH, c=first["cursor"])
    wide = run(EXPAND, c=more["cursor"], id=more["expandConcepts"][0])
    near = wide if wide["nearbyEvents"] else more
    run(NEARBY, c=near["cursor"], id=near["nearbyEvents"][0])
    run(SEARCH, q="Neo4j backup and migration plans")
    run(SEARCH, q="Neo4j caching and security plans")
    return [[i["eventId"] for i in page["items"]] for page in steps]


def _asker(services: list[Service], session: str) -> Ask:
    def ask(step: int, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        service = services[step % len(services)]  # round robin, no stickiness
        r = service.client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"X-Memory-Session": session},
        )
        body: dict[str, Any] = r.json()
        assert not body.get("errors"), (step, body["errors"])
        data: dict[str, Any] = body["data"]
        return data

    return ask


@contextlib.contextmanager
def _replicas(place: Place, n: int) -> Iterator[list[Service]]:
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(serving(place)) for _ in range(n)]


@pytest.mark.parametrize("place", stores(), indirect=True)
def test_the_follow_up_chain_round_robin_over_three_processes_is_one_process_chain(
    place: Place,
) -> None:
    with _replicas(place, 3) as services:
        _seed(services[0])
        alone = _chain(_asker(services[:1], "alone"))
        spread = _chain(_asker(services, "spread"))
    assert spread == alone
    first, more, wide, near, again, other = spread
    assert len(first) == 4 and len(more) == 4 and wide and near and other
    assert again == first  # the page ledger: the same search in the session, the same page
    delivered = first + more + wide + near + other
    assert len(delivered) == len(set(delivered))  # nothing delivered twice in the session


@pytest.mark.parametrize("place", stores(), indirect=True)
def test_fifty_agents_keep_their_cursors_across_two_processes(place: Place) -> None:
    # Issue 30: 32 cursors per process, so the 33rd agent's search evicted the first agent's
    # cursor. Every agent searches first, then every agent follows its own cursor up.
    with _replicas(place, 2) as services:
        _seed(services[0])
        agents = [_asker(services, f"agent-{n}") for n in range(50)]
        firsts = [
            ask(n, SEARCH, {"q": f"Neo4j {TOPICS[n % 4]} plans"}) for n, ask in enumerate(agents)
        ]
        for n, (ask, first) in enumerate(zip(agents, firsts, strict=True)):
            page = first["search"]
            assert page["session"] == f"agent-{n}" and page["cursor"]
            more = ask(n + 1, SEARCH, {"c": page["cursor"]})["search"]  # on the other process
            assert more["session"] == f"agent-{n}"
            seen = {i["eventId"] for i in page["items"]}
            assert more["items"] and not seen & {i["eventId"] for i in more["items"]}


@pytest.mark.parametrize("place", ["embedded"], indirect=True)
def test_serve_with_two_workers_serves_the_follow_up_chain(place: Place) -> None:
    with serving(place, "--workers", "2") as service:
        _seed(service)
        spread = _chain(_asker([service], "workers"))
        with _replicas(place, 1) as alone:
            assert _chain(_asker(alone, "alone")) == spread
    assert "Started parent process" in service.output and service.output.count("memory space") >= 2


@pytest.mark.parametrize("workers", ["0", "x"])
def test_a_bad_worker_count_is_one_line_and_exit_2(tmp_path: Path, workers: str) -> None:
    done = Place(tmp_path / "data", "embedded").cli("serve", "--workers", workers, timeout=60)
    assert done.returncode == 2 and "--workers" in done.stderr and "Traceback" not in done.stderr


def test_workers_refuse_the_managed_neo4j(tmp_path: Path) -> None:
    # the managed Neo4j is started and owned by one process; N workers would each start one
    done = Place(tmp_path / "data", "embedded").cli(
        "serve", "--port", "0", "--workers", "2", timeout=60, MNEMOQL_STORE="neo4j"
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--workers needs the embedded store or an external Neo4j" in done.stderr
