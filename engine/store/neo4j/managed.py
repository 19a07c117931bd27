"""Managed local Neo4j: fetch a Community server from Maven Central and run it under one home.

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

The jars live in a per-user cache (``user_cache_dir("mnemoql")/neo4j-<version>/lib``), shared
by every home. They are GPLv3 binaries: fetched on demand, never shipped or committed.

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
import fcntl
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from platformdirs import user_cache_dir

from mnemoql.engine.errors import StoreUnavailable
from mnemoql.engine.store.neo4j.owner import OwnerLock

DEFAULT_VERSION = "5.26.23"
USER = "neo4j"
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"

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
PROGRESS_EVERY_S = 5.0
_INSTALL_HINT = (
    "install a Java 17+ runtime and Maven 3 "
    "(e.g. `apt-get install openjdk-17-jre-headless maven`), "
    "or point mnemoql at an external Neo4j 5.26 with MNEMOQL_NEO4J__MODE=external and "
    "MNEMOQL_NEO4J__URI / MNEMOQL_NEO4J__PASSWORD"
)
# The Chinese wording of the hint and of the steps an interruption names (errors' ``zh=``).
_INSTALL_HINT_ZH = (
    "请安装 Java 17+ 运行时和 Maven 3（如 `apt-get install openjdk-17-jre-headless maven`），"
    "或用 MNEMOQL_NEO4J__MODE=external 与 MNEMOQL_NEO4J__URI / MNEMOQL_NEO4J__PASSWORD "
    "改用外部 Neo4j 5.26"
)
_ZH_ACTIONS = {"installing": "安装", "starting": "启动"}


@dataclass(frozen=True, slots=True)
class Status:
    """What ``status()`` reports about one home."""

    home: Path
    version: str
    installed: bool
    running: bool
    pid: int | None
    uri: str | None


def default_cache_dir() -> Path:
    return Path(user_cache_dir("mnemoql"))


def pom_text() -> str:
    """The packaged pom.xml (artifacts neo4j-server and neo4j, version as a property)."""
    pom = resources.files("mnemoql.engine.store.neo4j").joinpath("pom.xml")
    return pom.read_text(encoding="utf-8")


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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _generate_password() -> str:
    # picocli would read a leading "-" as an option, so start with a letter or digit.
    while True:
        password = secrets.token_urlsafe(24)
        if password[0].isalnum():
            return password


class ManagedNeo4j:
    """One local Neo4j Community server living in ``home``.

    Args:
        home: directory holding conf, data, logs, password and pid file.
        version: a Neo4j 5.26.x release available on Maven Central.
        heap: JVM heap (-Xms/-Xmx), e.g. ``"1g"``.
        page_cache: ``server.memory.pagecache.size``.
        port: Bolt port on 127.0.0.1; by default the previous port if still free, else a free one.
        cache_dir: where ``neo4j-<version>/lib`` is installed (default: the user cache dir).
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
        if not re.fullmatch(r"5\.26\.\d+", version):
            raise ValueError(f"managed Neo4j supports 5.26.x releases (got {version!r})")
        for name, value in (("heap", heap), ("page_cache", page_cache)):
            if not _SIZE.match(value):
                raise ValueError(f"{name} must look like 512m or 1g (got {value!r})")
        self.home = Path(home).expanduser().absolute()
        self.version = version
        self.heap = heap
        self.page_cache = page_cache
        self._port = port
        self.cache_dir = (cache_dir or default_cache_dir()).expanduser().absolute()
        self.java = java
        self.mvn = mvn
        self._proc: subprocess.Popen[bytes] | None = None
        # set from another thread (a signal handler) to stop an install or start at once
        self.cancel = threading.Event()
        # called about every ``PROGRESS_EVERY_S`` with (what, seconds so far) while it waits
        self.on_progress: Callable[[str, float], None] | None = None

    # ---- paths ----
    @property
    def install_dir(self) -> Path:
        return self.cache_dir / f"neo4j-{self.version}"

    @property
    def lib_dir(self) -> Path:
        return self.install_dir / "lib"

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

    # ---- install ----
    def installed(self) -> bool:
        lib = self.lib_dir
        return (lib / f"neo4j-server-{self.version}.jar").is_file() and (
            lib / f"neo4j-{self.version}.jar"
        ).is_file()

    def install(self) -> Path:
        """Fetch the server jars with Maven into the cache; a no-op when they are there.

        Returns the lib directory. Raises StoreUnavailable when java or mvn is missing or
        Maven fails.
        """
        self._require_java()
        if self.installed():
            return self.lib_dir
        mvn = shutil.which(self.mvn)
        if mvn is None:
            raise StoreUnavailable(
                f"`{self.mvn}` was not found on PATH: {_INSTALL_HINT}",
                zh=f"PATH 中找不到 `{self.mvn}`：{_INSTALL_HINT_ZH}",
            )
        self.install_dir.mkdir(parents=True, exist_ok=True)
        pom = self.install_dir / "pom.xml"
        pom.write_text(pom_text(), encoding="utf-8")
        # Download next to the final place and rename, so a broken download never looks
        # installed; the lock keeps two installs of one version from racing.
        with self._flock(self.install_dir / "install.lock", wait=True):
            if self.installed():
                return self.lib_dir
            staging = self.install_dir / f"lib.partial-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            cmd = [
                mvn, "-q", "-B", "-f", str(pom),
                f"-Dneo4j.version={self.version}",
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staging}",
            ]  # fmt: skip
            log = self.install_dir / "mvn.log"
            try:
                code = self._run_interruptibly(cmd, log, "installing")
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            if code != 0 or not (staging / f"neo4j-{self.version}.jar").is_file():
                shutil.rmtree(staging, ignore_errors=True)
                tail = log.read_text(encoding="utf-8", errors="replace").strip()[-2000:]
                raise StoreUnavailable(
                    f"Maven could not fetch Neo4j {self.version} (exit {code}); "
                    f"check access to Maven Central or use an external Neo4j.\n{tail}",
                    zh=f"Maven 无法获取 Neo4j {self.version}（退出码 {code}）；"
                    f"请检查能否访问 Maven Central，或改用外部 Neo4j。\n{tail}",
                )
            shutil.rmtree(self.lib_dir, ignore_errors=True)
            staging.rename(self.lib_dir)
        return self.lib_dir

    def _run_interruptibly(self, cmd: list[str], log: Path, what: str) -> int:
        """Run ``cmd`` (output to ``log``) in a process group of its own, which is stopped at
        once when ``cancel`` is set or anything interrupts the wait; its exit code."""
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        t0, due = time.monotonic(), PROGRESS_EVERY_S
        try:
            while True:
                try:
                    return proc.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    pass
                if self.cancel.is_set():
                    raise StoreUnavailable(
                        f"interrupted while {what} Neo4j {self.version}",
                        zh=f"{_ZH_ACTIONS.get(what, what)} Neo4j {self.version} 时被中断",
                    )
                due = self._progress(what, t0, due)
        except BaseException:
            _stop_group(proc)
            raise

    def _progress(self, what: str, t0: float, due: float) -> float:
        """Report ``what`` once ``due`` seconds have passed since ``t0``; the next due time."""
        elapsed = time.monotonic() - t0
        if elapsed < due:
            return due
        if self.on_progress is not None:
            self.on_progress(what, elapsed)
        return due + PROGRESS_EVERY_S

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
        with self._flock(self.home / "run" / "start.lock", wait=False):
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
    def _java_path(self) -> str:
        java = shutil.which(self.java)
        if java is None:
            raise StoreUnavailable(
                f"`{self.java}` was not found on PATH: {_INSTALL_HINT}",
                zh=f"PATH 中找不到 `{self.java}`：{_INSTALL_HINT_ZH}",
            )
        return java

    def _require_java(self) -> None:
        java = self._java_path()
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
        m = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
        if m is None:
            raise StoreUnavailable(
                f"could not read the Java version from `{java} -version`",
                zh=f"无法从 `{java} -version` 读出 Java 版本",
            )
        major = int(m.group(1)) if m.group(1) != "1" else int(m.group(2) or 0)
        if major < 17:
            raise StoreUnavailable(
                f"Neo4j 5.26 needs Java 17 or 21 (found {major}): {_INSTALL_HINT}",
                zh=f"Neo4j 5.26 需要 Java 17 或 21（当前为 {major}）：{_INSTALL_HINT_ZH}",
            )

    def _conf_port(self) -> int | None:
        try:
            text = self.conf_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        m = re.search(r"^server\.bolt\.listen_address=[^:\n]*:(\d+)$", text, re.M)
        return int(m.group(1)) if m else None

    def _choose_port(self) -> int:
        if self._port is not None:
            return self._port
        previous = self._conf_port()
        if previous is not None and _port_free(previous):
            return previous
        return free_port()

    def _write_conf(self, port: int) -> None:
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
            f"server.memory.pagecache.size={self.page_cache}",
            # heap comes from -Xms/-Xmx; written for the record (the entry point ignores it)
            f"server.memory.heap.initial_size={self.heap}",
            f"server.memory.heap.max_size={self.heap}",
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
        self.conf_path.write_text("\n".join(lines), encoding="utf-8")
        self._port = port

    def _ensure_password(self) -> None:
        if self.password_path.exists():
            return
        if (self.home / "data" / "databases" / "system").exists():
            raise StoreUnavailable(
                f"{self.home} holds Neo4j data but no password file; restore "
                f"{self.password_path} or remove the home to start afresh",
                zh=f"{self.home} 中有 Neo4j 数据但没有密码文件；"
                f"请恢复 {self.password_path}，或删除该目录重新开始",
            )
        password = _generate_password()
        fd = os.open(self.password_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(password + "\n")
        # "@file" is picocli's argument file: the password never appears on a command line.
        env = {**os.environ, "NEO4J_HOME": str(self.home), "NEO4J_CONF": str(self.home / "conf")}
        cmd = [self._java_path(), "-cp", f"{self.lib_dir}/*", ADMIN_TOOL,
               "dbms", "set-initial-password", f"@{self.password_path}"]  # fmt: skip
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, cwd=self.home, check=False
        )
        if proc.returncode != 0:
            self.password_path.unlink(missing_ok=True)
            raise StoreUnavailable(
                f"neo4j-admin set-initial-password failed (exit {proc.returncode}): "
                f"{(proc.stdout + proc.stderr).strip()[-1000:]}",
                zh=f"neo4j-admin set-initial-password 失败（退出码 {proc.returncode}）："
                f"{(proc.stdout + proc.stderr).strip()[-1000:]}",
            )

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

    @contextlib.contextmanager
    def _flock(self, path: Path, *, wait: bool) -> Iterator[None]:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                raise StoreUnavailable(
                    f"another process is starting the managed Neo4j on {self.home}",
                    zh=f"另一个进程正在 {self.home} 上启动托管 Neo4j",
                ) from None
            yield
        finally:
            os.close(fd)


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group of ``proc`` (Maven's launcher script and its JVM), then
    SIGKILL what is left after 5 s."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


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
