"""A managed Neo4j's home: what the server keeps between runs, its conf and its password.

Layout of a home directory ``H``::

    H/conf/neo4j.conf   written on every start (edits are overwritten)
    H/password          generated on first start, mode 0600, next to the data it protects
    H/data/             databases and transaction logs
    H/logs/             neo4j.log, debug.log, console.log (the JVM's stdout/stderr)
    H/run/neo4j.pid     pid of the running server
    H/run/start.lock    held while a start is in progress
    H/run/owner         "<owner pid> <server pid>" of the service that started the server;
                        flock-ed by that service while it lives (``owner.OwnerLock``), so
                        a server whose owner died (``kill -9``) is known as an orphan

``managed.ManagedNeo4j`` runs and stops the server process on a home; this module holds the
files it writes there before the JVM starts and reads back afterwards: ``neo4j.conf`` (loopback
only, HTTP and usage reports off, the Bolt port kept from run to run) and the initial password.
They are apart from the process because they outlive it and need no server to read.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

from mnemoql.engine.errors import StoreUnavailable

ADMIN_TOOL = "org.neo4j.cli.AdminTool"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def generate_password() -> str:
    # picocli would read a leading "-" as an option, so start with a letter or digit.
    while True:
        password = secrets.token_urlsafe(24)
        if password[0].isalnum():
            return password


def conf_port(conf: Path) -> int | None:
    """The Bolt port written in the conf file ``conf``, or None when there is none."""
    try:
        text = conf.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    m = re.search(r"^server\.bolt\.listen_address=[^:\n]*:(\d+)$", text, re.M)
    return int(m.group(1)) if m else None


def choose_port(conf: Path) -> int:
    """The port of the previous run when still free, else a free one."""
    previous = conf_port(conf)
    if previous is not None and _port_free(previous):
        return previous
    return free_port()


def write_conf(conf: Path, port: int, heap: str, page_cache: str) -> None:
    """Write the server's ``neo4j.conf`` (every start; edits are lost)."""
    lines = [
        "# Written by mnemoql (engine/store/neo4j/managed.py) on every start; edits are lost.",
        "server.default_listen_address=127.0.0.1",
        "server.default_advertised_address=127.0.0.1",
        "server.bolt.enabled=true",
        f"server.bolt.listen_address=127.0.0.1:{port}",
        f"server.bolt.advertised_address=127.0.0.1:{port}",
        "server.bolt.tls_level=DISABLED",
        "server.http.enabled=false",
        "server.https.enabled=false",
        # never phone home
        "dbms.usage_report.enabled=false",
        "dbms.security.auth_enabled=true",
        "dbms.security.allow_csv_import_from_file_urls=false",
        f"server.memory.pagecache.size={page_cache}",
        # heap comes from -Xms/-Xmx; written for the record (the entry point ignores it)
        f"server.memory.heap.initial_size={heap}",
        f"server.memory.heap.max_size={heap}",
        "server.directories.data=data",
        "server.directories.logs=logs",
        "server.directories.run=run",
        "server.directories.import=import",
        "db.tx_log.rotation.retention_policy=1 days 512M",
        # Bolt otherwise idles 2 x 5 s on shutdown, waiting for connections that are gone.
        "internal.server.bolt.connection_shutdown_wait_time=1s",
        "internal.server.bolt.thread_pool_shutdown_wait_time=1s",
        "",
    ]
    conf.write_text("\n".join(lines), encoding="utf-8")


def ensure_password(
    home: Path, password_path: Path, java: Callable[[], str], lib_dir: Path
) -> None:
    """Generate the password of a new home and set it with neo4j-admin; a no-op when it exists.

    ``java`` gives the Java launcher's path (looked up only when a password is set); ``lib_dir``
    holds the jars of the install.
    """
    if password_path.exists():
        return
    if (home / "data" / "databases" / "system").exists():
        raise StoreUnavailable(
            f"{home} holds Neo4j data but no password file; restore "
            f"{password_path} or remove the home to start afresh",
            zh=f"{home} 中有 Neo4j 数据但没有密码文件；"
            f"请恢复 {password_path}，或删除该目录重新开始",
        )
    password = generate_password()
    fd = os.open(password_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(password + "\n")
    # "@file" is picocli's argument file: the password never appears on a command line.
    env = {**os.environ, "NEO4J_HOME": str(home), "NEO4J_CONF": str(home / "conf")}
    cmd = [java(), "-cp", f"{lib_dir}/*", ADMIN_TOOL,
           "dbms", "set-initial-password", f"@{password_path}"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=home, check=False)
    if proc.returncode != 0:
        password_path.unlink(missing_ok=True)
        raise StoreUnavailable(
            f"neo4j-admin set-initial-password failed (exit {proc.returncode}): "
            f"{(proc.stdout + proc.stderr).strip()[-1000:]}",
            zh=f"neo4j-admin set-initial-password 失败（退出码 {proc.returncode}）："
            f"{(proc.stdout + proc.stderr).strip()[-1000:]}",
        )
