"""``wrk`` as the load generator of ``bench.load --generator wrk`` (issue 30, scaling per core).

On a 2-core machine the Python generator (httpx clients on one asyncio loop) costs about 2 ms of
CPU per search, taken from the servers' cores in the 2-process case. wrk (C, epoll; Debian's
``wrk`` package) sends the same GraphQL searches for a fraction of that: a Lua script builds each
body with a fresh query text (one of ``QUERIES`` plus three random words, as
``bench.load.query_text``), a session per connection slot, ``resetSeen`` every fourth search and
the read tokens in turn (each agent its own, as with the Python searchers). One wrk process per
server (round robin without stickiness is the same thing for independent searches), one thread,
``searchers / processes`` connections each. A response counts as answered when it is HTTP 200
without ``"errors"``. Its CPU comes from ``wait4``'s rusage, so the report can set it beside the
servers'.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SCRIPT = """
local query = %(query)s
local queries = %(queries)s
local words = %(words)s
local tokens = {}
local prefix = "s"
local n = 0
answered = 0
failed = 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(args[1]) do table.insert(tokens, line) end
  math.randomseed(tonumber(args[2]))
  prefix = args[3]
end

function request()
  n = n + 1
  local text = queries[math.random(#queries)] .. " " .. words[math.random(#words)] .. " " ..
               words[math.random(#words)] .. " " .. words[math.random(#words)]
  local reset = (n %% 4 == 1) and "true" or "false"
  local body = '{"query":' .. query .. ',"variables":{"q":"' .. text .. '","s":"' ..
               prefix .. (n %% 64) .. '","r":' .. reset .. '}}'
  local headers = {}
  headers["Content-Type"] = "application/json"
  headers["Authorization"] = "Bearer " .. tokens[(n %% #tokens) + 1]
  return wrk.format("POST", "/graphql", headers, body)
end

function response(status, headers, body)
  if status == 200 and not string.find(body, '"errors"', 1, true) then
    answered = answered + 1
  else
    failed = failed + 1
  end
end

function done(summary, latency, requests)
  local ok, bad = 0, 0
  for _, t in ipairs(threads) do
    ok = ok + t:get("answered")
    bad = bad + t:get("failed")
  end
  local q = {}
  for p = 1, 100 do q[p] = latency:percentile(p) / 1000.0 end
  io.write("WRK " .. '{"answered":' .. ok .. ',"failed":' .. bad .. ',"requests":' ..
           summary.requests .. ',"socket_errors":' .. (summary.errors.connect +
           summary.errors.read + summary.errors.write + summary.errors.timeout) ..
           ',"duration_s":' .. (summary.duration / 1e6) .. ',"quantiles_ms":[' ..
           table.concat(q, ",") .. ']}\\n')
end
"""


@dataclass
class WrkResult:
    answered: int
    failed: int
    seconds: float
    quantiles_ms: list[float]  # the 1st .. 100th percentile of this wrk's latencies
    cpu_s: float  # wrk's user + system CPU


def script(query: str, queries: list[str], words: list[str]) -> str:
    """The Lua script. Each text is held already escaped for the JSON body it is pasted into
    (a quote, a backslash, a control character), written as a Lua literal: ``json.dumps`` of
    that fragment, which has no ``\\u`` escape left (Lua 5.1 has none)."""

    def lua_list(xs: list[str]) -> str:
        fragments = (json.dumps(x, ensure_ascii=False)[1:-1] for x in xs)
        return "{" + ", ".join(json.dumps(f, ensure_ascii=False) for f in fragments) + "}"

    return SCRIPT % {
        # the query as a JSON string literal inside the body, itself a Lua string
        "query": json.dumps(json.dumps(query)),
        "queries": lua_list(queries),
        "words": lua_list(words),
    }


def available() -> bool:
    return shutil.which("wrk") is not None


def run(
    bases: list[str],
    tokens: list[str],
    connections: int,
    seconds: float,
    folder: Path,
    lua: str,
    seed: int,
    cpus: list[int],
) -> list[WrkResult]:
    """One wrk per base, all at once, on ``cpus`` (unpinned when empty); waits for them."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise RuntimeError("--generator wrk needs wrk (apt-get install wrk)")
    path = folder / "search.lua"
    path.write_text(lua, encoding="utf-8")
    per = max(1, connections // len(bases))
    procs = []
    for k, base in enumerate(bases):
        mine = tokens[k :: len(bases)] or tokens
        token_file = folder / f"tokens-{k}.txt"
        token_file.write_text("\n".join(mine) + "\n", encoding="utf-8")
        cmd = [wrk, "-t1", f"-c{per}", f"-d{seconds:.0f}s", "--timeout", "30s", "-s", str(path),
               base, "--", str(token_file), str(seed * 100 + k), f"w{k}-"]  # fmt: skip
        if cpus:
            cmd = ["taskset", "-c", ",".join(map(str, cpus)), *cmd]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    out = []
    for p in procs:
        assert p.stdout is not None
        text = p.stdout.read().decode("utf-8", "replace")
        _, _, usage = os.wait4(p.pid, 0)
        p.returncode = 0  # reaped by wait4
        line = next((x for x in text.splitlines() if x.startswith("WRK ")), None)
        if line is None:
            raise RuntimeError(f"wrk said:\n{text}")
        data = json.loads(line[4:])
        out.append(
            WrkResult(
                int(data["answered"]),
                int(data["failed"]) + int(data["socket_errors"]),
                float(data["duration_s"]),
                [float(x) for x in data["quantiles_ms"]],
                usage.ru_utime + usage.ru_stime,
            )
        )
    return out


def merged_percentile(results: list[WrkResult], p: float) -> float:
    """The ``p``-th percentile over every request, from each wrk's percentiles weighted by
    its answered count (an approximation at 1-percentile resolution)."""
    points: list[tuple[float, float]] = []
    for r in results:
        points += [(v, r.answered / 100.0) for v in r.quantiles_ms]
    points.sort()
    total = sum(w for _, w in points)
    if total <= 0:
        return float("nan")
    acc = 0.0
    for value, weight in points:
        acc += weight
        if acc >= total * p / 100.0:
            return value
    return points[-1][0]
