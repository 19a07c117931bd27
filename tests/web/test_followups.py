"""Caching GraphQL clients and follow-ups (issue 27 item 3): Apollo Client and urql with their
default cache policies against a real ``mnemoql serve``.

Both answer a repeated identical query from their cache, so "search again for more" never
reaches the server. A page names its follow-up by arguments instead, ``search(cursor:)``: new
arguments, so a request, new evidence, and the same page however often it is asked (the
server replays it too, so a cache and a network-only fetch agree).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.served import ALICE, JS, TOKENS, Served, need_js, served

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("followups") / "data", tokens=TOKENS) as s:
        for n in range(12):
            content = f"Meeting {n} in Berlin about graph memory. " + f"notes {n} " * 20
            ex = {"events": [{"ref": "e", "summary": f"meeting {n} in Berlin"}]}
            s.gql(SAVE, ALICE, input={"content": content, "extraction": ex})
        yield s


@pytest.fixture(scope="module")
def report(server: Served) -> dict[str, Any]:
    node = need_js("@apollo/client", "@urql/core")
    run = subprocess.run(
        [node, str(JS / "followups.mjs"), server.graphql, ALICE],
        capture_output=True, text=True, timeout=300, cwd=JS,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr + server.output()[-3000:]
    result: dict[str, Any] = json.loads(run.stdout)
    return result


@pytest.mark.parametrize("client", ["apollo", "urql"])
def test_a_caching_client_gets_new_evidence_from_the_follow_up(
    report: dict[str, Any], client: str
) -> None:
    got = report[client]
    assert len(got["first"]) == 4
    # the default cache answered the repeat: one request for two calls, the same page
    assert got["afterRepeat"] == 1 and got["repeat"] == got["first"]
    # the follow-up has new arguments: a request, and evidence the session had not been given
    assert len(got["next"]) == 4 and not set(got["next"]) & set(got["first"])
    assert got["session"] == client
    assert got["nextAgain"] == got["next"]  # from the cache
    # past the cache the server answers both calls the same way: safe to repeat
    assert got["network"] == got["first"] and got["networkNext"] == got["next"]
    assert got["requests"] == 4
