"""Installing the managed Neo4j: one Community release's jars, fetched from Maven Central.

The jars live in a per-user cache (``user_cache_dir("mnemoql")/neo4j-<version>/lib``), shared
by every home. They are GPLv3 binaries: fetched on demand, never shipped or committed. Maven
writes into a staging directory renamed into place, so a broken download never looks installed.

``Neo4jInstall`` holds what a release needs before any server runs: the version, the cache, the
Java runtime that runs it and the Maven that fetches it. It is kept apart from ``managed``, which
runs a server on one home from these jars (conf, port, password, process, health): installing
shares nothing with a home, and ``ManagedNeo4j`` extends this class with one.

Everything here is synchronous; an install stops at once, leaving nothing running, when its
``cancel`` event is set.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

from platformdirs import user_cache_dir

from mnemoql.engine.errors import StoreUnavailable

DEFAULT_VERSION = "5.26.23"
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


def default_cache_dir() -> Path:
    return Path(user_cache_dir("mnemoql"))


def pom_text() -> str:
    """The packaged pom.xml (artifacts neo4j-server and neo4j, version as a property)."""
    pom = resources.files("mnemoql.engine.store.neo4j").joinpath("pom.xml")
    return pom.read_text(encoding="utf-8")


class Neo4jInstall:
    """One Neo4j 5.26.x release in the jar cache, with the Java and Maven it needs.

    Args:
        version: a Neo4j 5.26.x release available on Maven Central.
        cache_dir: where ``neo4j-<version>/lib`` is installed (default: the user cache dir).
        java: the Java 17+ launcher, by name on PATH or by path.
        mvn: the Maven 3 launcher, by name on PATH or by path.
    """

    def __init__(
        self,
        version: str = DEFAULT_VERSION,
        *,
        cache_dir: Path | None = None,
        java: str = "java",
        mvn: str = "mvn",
    ) -> None:
        if not re.fullmatch(r"5\.26\.\d+", version):
            raise ValueError(f"managed Neo4j supports 5.26.x releases (got {version!r})")
        self.version = version
        self.cache_dir = (cache_dir or default_cache_dir()).expanduser().absolute()
        self.java = java
        self.mvn = mvn
        # set from another thread (a signal handler) to stop an install or start at once
        self.cancel = threading.Event()
        # called about every ``PROGRESS_EVERY_S`` with (what, seconds so far) while it waits
        self.on_progress: Callable[[str, float], None] | None = None

    @property
    def install_dir(self) -> Path:
        return self.cache_dir / f"neo4j-{self.version}"

    @property
    def lib_dir(self) -> Path:
        return self.install_dir / "lib"

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
        with flock(self.install_dir / "install.lock"):
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


@contextlib.contextmanager
def flock(path: Path, busy: StoreUnavailable | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` body.

    Waits for the lock; given ``busy``, raises it at once instead when another process holds it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if busy is None else fcntl.LOCK_NB))
        except BlockingIOError:
            if busy is None:
                raise
            raise busy from None
        yield
    finally:
        os.close(fd)
