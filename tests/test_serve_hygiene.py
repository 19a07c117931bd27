"""Issue #13, cases 7 and 8, against a real ``mnemoql serve``: no tracebacks for client errors,
bounded log lines, credentials masked in errors and logs, one-line CLI errors with exit code 2,
and a default session per caller (per token, or per connection without tokens)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.processes import ROOT, TOKEN, Place, free_port, serving
from tests.store.factory_neo4j import target, unreachable

SECRET = "sk-do-not-log-7f3a9c"
SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
SEARCH = "query($q: String, $t: String) { search(query: $q, timeHint: $t) { session items { eventId } } }"


def test_client_errors_log_one_bounded_line_and_secrets_never_show(tmp_path: Path) -> None:
    place = Place(tmp_path / "data", "embedded")
    dead = free_port()  # nothing listens there: the extraction call fails
    with serving(
        place,
        "--log-level",
        "debug",
        DEEPSEEK_API_KEY=SECRET,
        MNEMOQL_EXTRACTION__BASE_URL=f"http://proxy-user:{SECRET}@127.0.0.1:{dead}/v1",
        MNEMOQL_EXTRACTION__RETRIES="0",
    ) as service:
        answers = [
            service.client.post("/graphql", content=json.dumps(
                {"query": SAVE, "variables": {"input": {"content": "a\ud800b"}}}),
                headers={"content-type": "application/json"}).json(),
            service.post(SEARCH, t="x" * 100_000),
            service.post(SEARCH, q="y" * 300_000),
            service.post(SAVE, input={"content": "hi", "idempotencyKey": "k" * 500}),
            service.post("{ read(eventId: \"event_404\") { text } }"),
            service.post(SAVE, input={"content": "Alice met Bob in Berlin."}),  # upstream fails
        ]  # fmt: skip
        long_get = service.client.get("/graphql", params={"query": "{ __typename }",
                                                          "z": "q" * 50_000})  # fmt: skip
        assert long_get.status_code in (200, 400, 414)
    codes = [a["errors"][0]["extensions"]["code"] for a in answers]
    assert codes == ["INVALID_TEXT", "LIMIT_EXCEEDED", "LIMIT_EXCEEDED", "LIMIT_EXCEEDED",
                     "NOT_FOUND", "UPSTREAM_FAILED"]  # fmt: skip
    assert SECRET not in json.dumps(answers)
    assert "extraction service request failed" in answers[-1]["errors"][0]["message"]
    log = service.output
    assert SECRET not in log and "Traceback" not in log, log
    assert "x" * 200 not in log and "y" * 200 not in log and "q" * 400 not in log
    assert max(len(line) for line in log.splitlines()) < 2_200
    assert "ERROR" not in log  # a client's mistake is no error of the service
    for code in ("LIMIT_EXCEEDED", "NOT_FOUND", "UPSTREAM_FAILED"):
        assert f"client error {code}" in log, log  # at DEBUG, one line each
    assert "extraction_url': 'http://proxy-user:***@" in log  # the start-up line, masked


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in __import__("os").environ.items() if not k.startswith("MNEMOQL_")}
    return subprocess.run(
        [sys.executable, "-m", "mnemoql.web.cli", *args], cwd=ROOT, env={**base, **env},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _one_clean_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) <= 2, out.stderr
    return out.stderr


def test_cli_errors_are_one_line_with_exit_code_2(tmp_path: Path) -> None:
    env = {"MNEMOQL_DATA_DIR": str(tmp_path / "d"), "MNEMOQL_EMBEDDING__PROVIDER": "hashing"}
    err = _one_clean_line(_cli("import", str(tmp_path / "missing.jsonl"), **env))
    assert "missing.jsonl: no such file" in err
    err = _one_clean_line(_cli("export", str(tmp_path / "nowhere" / "m.jsonl"), **env))
    assert "nowhere: no such directory" in err
    tokens = '[{"token": "' + TOKEN + '", "space": "a", '  # cut off
    err = _one_clean_line(_cli("serve", "--port", str(free_port()), **env,
                               MNEMOQL_AUTH__TOKENS=tokens))  # fmt: skip
    assert "MNEMOQL_AUTH__TOKENS is not valid JSON" in err and TOKEN not in err
    err = _one_clean_line(_cli(
        "serve", "--port", str(free_port()), **env,
        MNEMOQL_EMBEDDING__BASE_URL=f"http://u:{SECRET}@127.0.0.1:99999/v1"))  # fmt: skip
    assert "MNEMOQL_EMBEDDING__BASE_URL" in err and "port" in err and SECRET not in err
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in _one_clean_line(_cli("import", str(binary), **env))


@pytest.mark.skipif(unreachable() is not None, reason=f"neo4j: {unreachable()}")
def test_a_wrong_neo4j_password_is_one_line(tmp_path: Path) -> None:
    t = target()
    assert t is not None
    src = tmp_path / "in.jsonl"
    src.write_text('{"content": "hello"}\n', encoding="utf-8")
    err = _one_clean_line(_cli(
        "import", str(src), MNEMOQL_DATA_DIR=str(tmp_path), MNEMOQL_STORE="neo4j",
        MNEMOQL_NEO4J__URI=t.uri, MNEMOQL_NEO4J__PASSWORD=SECRET))  # fmt: skip
    assert "STORE_UNAVAILABLE" in err and "rejected the credentials" in err and SECRET not in err


def _save_events(service_post: object, n: int) -> None:
    for i in range(n):
        body = service_post(SAVE, input={"content": f"The heron counted {i} fish at dawn."})  # type: ignore[operator]
        assert not body.get("errors"), body


def test_each_client_has_its_own_default_session_without_tokens(tmp_path: Path) -> None:
    # the session comes from the client (a cookie the service sets), never from the TCP peer:
    # behind a load balancer the peer is the balancer's pooled connection (issue 30)
    place = Place(tmp_path / "data", "embedded")
    with serving(place, MNEMOQL_AUTH__TOKENS="[]") as service:
        _save_events(service.post, 6)
        with httpx.Client(base_url=service.base, timeout=60) as a, httpx.Client(
            base_url=service.base, timeout=60
        ) as b:
            def search(client: httpx.Client) -> tuple[str, list[str]]:
                body = client.post("/graphql", json={"query": SEARCH,
                                                     "variables": {"q": "heron fish"}}).json()
                page = body["data"]["search"]
                return page["session"], [i["eventId"] for i in page["items"]]  # fmt: skip

            a_session, a1 = search(a)
            b_session, b1 = search(b)
            assert a_session != b_session and a_session.startswith("client:")
            assert "mnemoql_session" in a.cookies and "127.0.0.1" not in a_session
            assert len(a1) == 4 and sorted(b1) == sorted(a1)  # b is not hidden by a
            a_again, a2 = search(a)  # the same client: the same session, the same page
            assert a_again == a_session and a2 == a1
            with httpx.Client(base_url=service.base, timeout=60, cookies=a.cookies) as a_new:
                moved, _ = search(a_new)  # another connection, the same client's cookie
            assert moved == a_session
            named = a.post("/graphql", json={"query": SEARCH, "variables": {"q": "heron"}},
                           headers={"X-Memory-Session": "shared"}).json()  # fmt: skip
            assert named["data"]["search"]["session"] == "shared"


def test_each_token_has_its_own_default_session(tmp_path: Path) -> None:
    place = Place(tmp_path / "data", "embedded")
    other = "other-token-" + "y" * 24
    tokens = json.dumps([
        {"token": TOKEN, "space": place.space, "scopes": ["read", "write"]},
        {"token": other, "space": place.space, "scopes": ["read"]},
    ])  # fmt: skip
    with serving(place, MNEMOQL_AUTH__TOKENS=tokens) as service:
        _save_events(service.post, 5)

        def search(token: str) -> tuple[str, list[str]]:
            with httpx.Client(base_url=service.base, timeout=60,
                              headers={"Authorization": f"Bearer {token}"}) as c:  # fmt: skip
                page = c.post("/graphql", json={"query": SEARCH,
                                                "variables": {"q": "heron"}}).json()["data"]
            return page["search"]["session"], [i["eventId"] for i in page["search"]["items"]]

        mine, first = search(TOKEN)
        theirs, seen = search(other)
        assert mine != theirs and mine.startswith("caller:") and TOKEN not in mine
        assert len(first) == 4 and len(seen) == 4
        again, rest = search(TOKEN)  # a new connection, the same token: the same session
        assert again == mine and rest == first  # the session's page, repeated
