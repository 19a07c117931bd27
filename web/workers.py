"""``mnemoql serve --workers N``: N processes of the service on one listening socket.

uvicorn's supervisor starts the workers (spawned, so each imports ``app`` by name and builds
its own service from the environment ``serve`` passed down). Every worker opens the same
memory: the embedded store's writes are serialised across processes by SQLite's write lock,
each worker catches up with the others' writes (``Store.changed_elsewhere``), and evidence
sessions and cursors live in the store (``engine.session_state``), so a follow-up may land on
any worker. A worker whose start-up fails stops the whole service, as one process would.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

FAILED_FILE = "MNEMOQL_SERVE_FAILED_FILE"  # where a worker that failed to start says why


def app() -> Any:
    """The ASGI app of one worker (uvicorn's ``factory``)."""
    from mnemoql.engine.config import load_settings
    from mnemoql.web.app import create_app
    from mnemoql.web.observe import Observe
    from mnemoql.web.starting import StartingApp

    settings = load_settings()
    starting: StartingApp | None = None

    def failed() -> None:
        reason = starting.error if starting is not None else None
        if reason is not None:
            print(f"mnemoql serve: {reason}", file=sys.stderr)
        where = os.environ.get(FAILED_FILE)
        if where:
            Path(where).write_text(reason or "start-up failed", encoding="utf-8")
        os.kill(os.getppid(), signal.SIGTERM)  # the supervisor stops every worker

    starting = StartingApp(lambda: create_app(settings), on_failure=failed)
    return Observe(starting)
