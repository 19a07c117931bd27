"""Managed local Neo4j: fetch a Community server from Maven Central and run it under one home.

Installing the jars is ``install``; the files of a home (its layout, conf and password) are
``home``; this module runs, watches and stops the server process on a home.

The server listens on 127.0.0.1 only, with HTTP off and usage reports off: it never makes an
outbound connection. Everything here is synchronous (subprocesses and sockets); async callers
wrap it in ``asyncio.to_thread``. An install or start stops at once, leaving nothing running,
when its ``cancel`` event is set (``web.neo4j_boot`` sets it on SIGTERM / SIGINT).

Command line (also behind ``scripts/neo4j-ci.sh``)::

    python -m mnemoql.engine.store.neo4j.managed install|start|stop|status|env --home DIR
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mnemoql.engine.errors import StoreUnavailable
from mnemoql.engine.store.neo4j.home import choose_port, conf_port, ensure_password, write_conf
from mnemoql.engine.store.neo4j.install import (
    DEFAULT_VERSION,
    PROGRESS_EVERY_S,
    Neo4jInstall,
    flock,
)
from mnemoql.engine.store.neo4j.owner import OwnerLock

USER = "neo4j"
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"

# The JVM flags of the stock 5.26 neo4j.conf (``server.jvm.additional``), which the
# CommunityEntryPoint does not read: without the --add-opens the native vector index
# population cannot use direct buffers. AlwaysPreTouch is left out to keep start-up and
# resident memory small on a laptop.
JVM_FLAGS: tuple[str, ...] = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
    "-Dlog4j.layout.jsonTemplate.maxStringLength=32768",
    "-Dfile.encoding=UTF-8",
)

_SIZE = re.compile(r"^\d+[kmgKMG]?$")


@dataclass(frozen=True, slots=True)
class Status:
    """What ``status()`` reports about one home."""

    home: Path
    version: str
    installed: bool
    running: bool
    pid: int | None
    uri: str | None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ManagedNeo4j(Neo4jInstall):
    """One local Neo4j Community server living in ``home``, run from the jars of its install.

    Args:
        home: directory holding conf, data, logs, password and pid file.
        version: a Neo4j 5.26.x release available on Maven Central.
        heap: JVM heap (-Xms/-Xmx), e.g. ``"1g"``.
        page_cache: ``server.memory.pagecache.size``.
        port: Bolt port on 127.0.0.1; by default the previous port if still free, else a free one.
        cache_dir: where ``neo4j-<version>/lib`` is installed (default: the user cache dir).
        java, mvn: the launchers of Java 17+ and Maven 3 (see ``install.Neo4jInstall``).
    """

    def __init__(
        self,
        home: Path,
        version: str = DEFAULT_VERSION,
        heap: str = "1g",
        page_cache: str = "512m",
        port: int | None = None,
        *,
        cache_dir: Path | None = None,
        java: str = "java",
        mvn: str = "mvn",
    ) -> None:
        super().__init__(version, cache_dir=cache_dir, java=java, mvn=mvn)
        for name, value in (("heap", heap), ("page_cache", page_cache)):
            if not _SIZE.match(value):
                raise ValueError(f"{name} must look like 512m or 1g (got {value!r})")
        self.home = Path(home).expanduser().absolute()
        self.heap = heap
        self.page_cache = page_cache
        self._port = port
        self._proc: subprocess.Popen[bytes] | None = None

    # ---- paths ----
    @property
    def conf_path(self) -> Path:
        return self.home / "conf" / "neo4j.conf"

    @property
    def password_path(self) -> Path:
        return self.home / "password"

    @property
    def pid_path(self) -> Path:
        return self.home / "run" / "neo4j.pid"

    @property
    def console_log(self) -> Path:
        return self.home / "logs" / "console.log"

    @property
    def owner(self) -> OwnerLock:
        """This home's owner lock (``owner``): which service stops the server."""
        return OwnerLock(self.home / "run" / "owner")

    # ---- connection details ----
    @property
    def user(self) -> str:
        return USER

    @property
    def port(self) -> int | None:
        """The Bolt port of the last written conf (or the one asked for)."""
        if self._port is not None:
            return self._port
        return self._conf_port()

    @property
    def uri(self) -> str:
        port = self.port
        if port is None:
            raise StoreUnavailable(
                f"managed Neo4j in {self.home} has never been started; run start() first",
                zh=f"{self.home} 中的托管 Neo4j 从未启动过；请先运行 start()",
            )
        return f"bolt://127.0.0.1:{port}"

    @property
    def password(self) -> str:
        try:
            return self.password_path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise StoreUnavailable(
                f"no password file at {self.password_path}; start the managed Neo4j first",
                zh=f"{self.password_path} 处没有密码文件；请先启动托管 Neo4j",
            ) from None

    def running_pid(self) -> int | None:
        """The pid of the server running on this home, or None."""
        return self._running_pid()

    # ---- run ----
    def status(self) -> Status:
        pid = self._running_pid()
        return Status(
            home=self.home,
            version=self.version,
            installed=self.installed(),
            running=pid is not None,
            pid=pid,
            uri=self.uri if self.port is not None else None,
        )

    def start(self, timeout: float = 90.0) -> None:
        """Start the server and wait until Bolt accepts the generated password.

        Refuses (StoreUnavailable) when a server already runs on this home.
        """
        self._require_java()
        if not self.installed():
            raise StoreUnavailable(
                f"Neo4j {self.version} is not installed in {self.lib_dir}; run install() "
                "(python -m mnemoql.engine.store.neo4j.managed install --home DIR) first",
                zh=f"{self.lib_dir} 中未安装 Neo4j {self.version}；请先运行 install()"
                "（python -m mnemoql.engine.store.neo4j.managed install --home DIR）",
            )
        for sub in ("conf", "logs", "run", "data"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        busy = StoreUnavailable(
            f"another process is starting the managed Neo4j on {self.home}",
            zh=f"另一个进程正在 {self.home} 上启动托管 Neo4j",
        )
        with flock(self.home / "run" / "start.lock", busy):
            pid = self._running_pid()
            if pid is not None:
                raise StoreUnavailable(
                    f"a managed Neo4j is already running on {self.home} (pid {pid}); "
                    "two servers must never share one home",
                    pid=pid,
                    zh=f"{self.home} 上已有托管 Neo4j 在运行（pid {pid}）；"
                    "两个服务器绝不能共用一个目录",
                )
            self._write_conf(self._choose_port())
            self._ensure_password()
            if self.cancel.is_set():
                raise StoreUnavailable(
                    f"interrupted before Neo4j started on {self.home}",
                    zh=f"Neo4j 在 {self.home} 上启动之前被中断",
                )
            self._launch()
        self._wait_ready(timeout)

    def ensure_running(self, timeout: float = 90.0) -> bool:
        """Install if needed and start unless a server already runs on this home; True when
        this call started it."""
        self.install()
        if self._running_pid() is None:
            self.start(timeout)
            return True
        return False

    def stop(self, timeout: float = 60.0) -> bool:
        """SIGTERM, wait up to ``timeout`` seconds, then SIGKILL. False if nothing ran."""
        pid = self._running_pid()
        if pid is None:
            self.pid_path.unlink(missing_ok=True)
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if not self._wait_exit(pid, timeout):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            self._wait_exit(pid, 10.0)
        self.pid_path.unlink(missing_ok=True)
        self._proc = None
        return True

    def java_command(self) -> list[str]:
        return [
            self._java_path(),
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            *JVM_FLAGS,
            "-cp",
            f"{self.lib_dir}/*",
            ENTRY_POINT,
            f"--home-dir={self.home}",
            f"--config-dir={self.home / 'conf'}",
            "--console-mode",
        ]

    # ---- internals ----
    def _conf_port(self) -> int | None:
        return conf_port(self.conf_path)

    def _choose_port(self) -> int:
        if self._port is not None:
            return self._port
        return choose_port(self.conf_path)

    def _write_conf(self, port: int) -> None:
        write_conf(self.conf_path, port, self.heap, self.page_cache)
        self._port = port

    def _ensure_password(self) -> None:
        ensure_password(self.home, self.password_path, self._java_path, self.lib_dir)

    def _launch(self) -> None:
        log = open(self.console_log, "ab")  # noqa: SIM115 - handed to the child
        try:
            self._proc = subprocess.Popen(
                self.java_command(),
                cwd=self.home,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # outlives the CLI that started it; no Ctrl-C relay
            )
        finally:
            log.close()
        self.pid_path.write_text(f"{self._proc.pid}\n", encoding="utf-8")

    def _wait_ready(self, timeout: float) -> None:
        from neo4j import GraphDatabase
        from neo4j.exceptions import AuthError, DriverError, Neo4jError

        t0 = time.monotonic()
        deadline, due = t0 + timeout, PROGRESS_EVERY_S
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.cancel.is_set():
                self.stop(timeout=30.0)
                raise StoreUnavailable(
                    f"interrupted while starting the managed Neo4j on {self.home}; it was stopped",
                    zh=f"在 {self.home} 上启动托管 Neo4j 时被中断；已将其停止",
                )
            due = self._progress("starting", t0, due)
            pid = self._running_pid()
            if pid is None:
                raise StoreUnavailable(
                    f"managed Neo4j exited during start-up; see {self.console_log}:\n"
                    + self._log_tail(),
                    zh=f"托管 Neo4j 在启动过程中退出；见 {self.console_log}：\n" + self._log_tail(),
                )
            try:
                with GraphDatabase.driver(
                    self.uri, auth=(self.user, self.password), connection_timeout=2.0
                ) as driver:
                    driver.verify_connectivity()
                return
            except AuthError as exc:
                self.stop()
                raise StoreUnavailable(
                    f"managed Neo4j rejected the password in {self.password_path}: {exc}",
                    zh=f"托管 Neo4j 拒绝了 {self.password_path} 中的密码：{exc}",
                ) from exc
            except (DriverError, Neo4jError, OSError) as exc:
                last = exc
            self.cancel.wait(0.5)
        self.stop()
        raise StoreUnavailable(
            f"managed Neo4j did not answer on {self.uri} within {timeout:.0f}s ({last}); "
            f"see {self.console_log}:\n" + self._log_tail(),
            zh=f"托管 Neo4j 在 {timeout:.0f} 秒内未在 {self.uri} 应答（{last}）；"
            f"见 {self.console_log}：\n" + self._log_tail(),
        )

    def _log_tail(self, n: int = 20) -> str:
        try:
            lines = self.console_log.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        return "\n".join(lines[-n:])

    def _running_pid(self) -> int | None:
        if self._proc is not None and self._proc.poll() is not None:
            self._proc = None  # reaped our own child
        try:
            pid = int(self.pid_path.read_text(encoding="utf-8").strip())
        except (FileNotFoundError, ValueError):
            return None
        if self._proc is not None and self._proc.pid == pid:
            return pid  # our own child, not yet exited
        if not _pid_alive(pid):
            return None
        # Guard against pid reuse: on Linux, check the process is our server for this home.
        # (An empty cmdline is a process between exec()s -- the java launcher re-execs.)
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return pid
        if args != [b""] and (
            ENTRY_POINT.encode() not in args or f"--home-dir={self.home}".encode() not in args
        ):
            return None
        return pid

    def _wait_exit(self, pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.pid == pid:
                if self._proc.poll() is not None:
                    return True
            elif not _pid_alive(pid):
                return True
            time.sleep(0.1)
        return False


# ---- command line ----


def _env_lines(server: ManagedNeo4j, prefix: str) -> str:
    values = {"URI": server.uri, "USER": server.user, "PASSWORD": server.password}
    return "\n".join(f"export {prefix}{k}={shlex.quote(v)}" for k, v in values.items())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mnemoql.engine.store.neo4j.managed",
        description="Install, start and stop a local Neo4j Community server for mnemoql.",
    )
    parser.add_argument("command", choices=["install", "start", "stop", "status", "env"])
    parser.add_argument("--home", type=Path, required=True, help="server home (conf, data, logs)")
    parser.add_argument("--version", default=DEFAULT_VERSION, help="Neo4j 5.26.x release")
    parser.add_argument("--heap", default="1g")
    parser.add_argument("--page-cache", default="512m")
    parser.add_argument("--port", type=int, default=None, help="Bolt port (default: free port)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="jar cache directory")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds to wait (start/stop)")
    parser.add_argument(
        "--prefix", default="MNEMOQL_TEST_NEO4J_", help="variable prefix for `env` output"
    )
    args = parser.parse_args(argv)
    server = ManagedNeo4j(
        args.home, args.version, args.heap, args.page_cache, args.port, cache_dir=args.cache_dir
    )
    server.on_progress = lambda what, s: print(f"still {what} Neo4j ({s:.0f} s)", file=sys.stderr)
    try:
        if args.command == "install":
            t0 = time.monotonic()
            lib = server.install()
            print(f"Neo4j {server.version} jars in {lib} ({time.monotonic() - t0:.1f}s)")
        elif args.command == "start":
            t0 = time.monotonic()
            server.start(args.timeout)
            print(f"Neo4j {server.version} ready on {server.uri} ({time.monotonic() - t0:.1f}s)")
        elif args.command == "stop":
            stopped = server.stop(args.timeout)
            print("stopped" if stopped else "not running")
        elif args.command == "status":
            st = server.status()
            state = f"running (pid {st.pid}) on {st.uri}" if st.running else "stopped"
            print(f"Neo4j {st.version} in {st.home}: {state}; installed: {st.installed}")
            return 0 if st.running else 3
        else:
            print(_env_lines(server, args.prefix))
    except StoreUnavailable as exc:  # what the operator can fix (Java, Maven, the home)
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
