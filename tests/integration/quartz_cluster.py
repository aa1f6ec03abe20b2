"""A real Quartz 2.3 JDBC cluster for the tests and for the sample in sample_logs/dialects/quartz/: two
scheduler instances (`A` and `B`, `isClustered=true`, `clusterCheckinInterval` 1000 ms), each its own JVM,
sharing one throwaway PostgreSQL database (Debian's `libquartz2-java` 2.3.2, `postgresql`,
`libpostgresql-jdbc-java`, `libslf4j-java`'s slf4j-simple; the Quartz tables from the jar's own
`org/quartz/impl/jdbcjobstore/tables_postgres.sql`).

The job (`quartz_lab/QuartzLab.java`, compiled with `javac` into the lab's folder) is
`@DisallowConcurrentExecution` and `requestsRecovery`, fires once three seconds after the instances start
(whichever instance acquires the trigger runs it), logs its own start and end and writes each execution's
start and end to a truth file, on the wall clock. Each instance logs to its own file through slf4j-simple
(`yyyy-MM-dd HH:mm:ss.SSS [thread] LEVEL logger - message`, UTC), `org.quartz.core.JobRunShell` at DEBUG
unless asked otherwise.

The incident (`pause()`): the instance that started the job is SIGSTOPped while the job runs, until the
other instance's ClusterManager logs `Scheduled 1 recoverable job(s) for recovery.` and its worker starts
the recovered run (coordination on the log line and the truth, never a fixed sleep), then SIGCONT: the other instance runs the job again while the paused one
finishes its run, and the paused one's ClusterManager then logs that it was recovered by another instance.

    python tests/integration/quartz_cluster.py OUT_DIR [--clean] [--info]   # one run's logs and truth
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

PG_BIN = Path("/usr/lib/postgresql")
JARS = (
    "/usr/share/java/quartz2.jar",
    "/usr/share/java/slf4j-api.jar",
    "/usr/share/java/slf4j-simple.jar",
    "/usr/share/java/postgresql.jar",
    "/usr/share/java/HikariCP.jar",
)
SOURCE = Path(__file__).resolve().parent / "quartz_lab" / "QuartzLab.java"
RECOVERY_LINE = "ClusterManager: ......Scheduled 1 recoverable job(s) for recovery."
ZOMBIE_LINE = "is still active but was recovered by another instance in the cluster"
DEADLINE_S = 60.0
UTC_ENV = {**os.environ, "TZ": "UTC"}


def missing() -> str | None:
    """What this machine lacks for the lab (a Debian package to install), or None."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        return "a JDK (javac)"
    for jar in JARS:
        if not Path(jar).exists():
            return f"{jar} (libquartz2-java, libslf4j-java, libpostgresql-jdbc-java, libhikaricp-java)"
    if _pg_bin() is None:
        return "PostgreSQL's server (postgresql)"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "the postgres user (postgresql)"
    return None


def _pg_bin() -> Path | None:
    found = sorted(PG_BIN.glob("*/bin/initdb")) if PG_BIN.exists() else []
    return found[-1].parent if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, test: Any, logs: Any, deadline_s: float = DEADLINE_S) -> Any:
    """Poll `test()` until it gives something true (returned), or fail after `deadline_s` with the logs."""
    end = time.monotonic() + deadline_s
    while True:
        got = test()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {deadline_s} s\n{logs()}")
        time.sleep(0.02)


class QuartzCluster:
    """Instances `A` and `B` of scheduler `ReportScheduler`; their logs `quartz-a.log`, `quartz-b.log`
    and the truth `truth.jsonl` in `folder`."""

    def __init__(self, folder: Path, job_run_shell_debug: bool = True) -> None:
        self.folder = folder
        self.debug = job_run_shell_debug
        # PostgreSQL refuses to run as root: its data lives where the postgres user can reach it
        self.work = Path(tempfile.mkdtemp(prefix="leaselog-quartz-"))
        self.port = _free_port()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.truth_path = folder / "truth.jsonl"
        bin_dir = _pg_bin()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL's server is not installed")
        self.bin = bin_dir

    def _as_postgres(self, *cmd: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *cmd], check=True, capture_output=True, env=UTC_ENV)

    def log(self, instance: str) -> Path:
        return self.folder / f"quartz-{instance.lower()}.log"

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
            for p in (self.log("A"), self.log("B"), self.truth_path)
            if p.exists()
        )

    def truth(self) -> list[dict[str, Any]]:
        if not self.truth_path.exists():
            return []
        return [json.loads(x) for x in self.truth_path.read_text().splitlines() if x.endswith("}")]

    def start(self) -> None:
        os.chmod(self.work, 0o755)
        if os.geteuid() == 0:
            shutil.chown(self.work, "postgres")
        data = self.work / "data"
        self._as_postgres(str(self.bin / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
        self._as_postgres(
            str(self.bin / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            f"-p {self.port} -k {self.work} -c listen_addresses=127.0.0.1",
            "-l",
            str(self.work / "postgresql.log"),
            "-w",
            "start",
        )
        with zipfile.ZipFile(JARS[0]) as jar:
            tables = jar.read("org/quartz/impl/jdbcjobstore/tables_postgres.sql").decode()
        # the row locks' rows made up front: StdRowLockSemaphore inserts a missing one on first use, and two
        # instances starting at once race on that insert (the loser's first check-in fails with "current
        # transaction is aborted", it is never seen as a cluster member, and its job is never recovered)
        tables += (
            "\nINSERT INTO qrtz_locks (sched_name, lock_name) VALUES"
            " ('ReportScheduler', 'TRIGGER_ACCESS'), ('ReportScheduler', 'STATE_ACCESS');\n"
        )
        subprocess.run(
            [str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-q"],
            input=tables.encode(),
            check=True,
            capture_output=True,
        )
        classes = self.work / "classes"
        classes.mkdir()
        subprocess.run(
            ["javac", "-cp", ":".join(JARS), "-d", str(classes), str(SOURCE)], check=True, capture_output=True
        )
        url = f"jdbc:postgresql://127.0.0.1:{self.port}/postgres"
        opts = [
            "-Duser.timezone=UTC",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS",
        ]
        if self.debug:
            opts.append("-Dorg.slf4j.simpleLogger.log.org.quartz.core.JobRunShell=debug")
        cp = ":".join([str(classes), *JARS])
        for instance, extra in (("A", ["schedule"]), ("B", [])):
            with self.log(instance).open("wb") as err:
                self.procs[instance] = subprocess.Popen(
                    ["java", "-cp", cp, *opts, "QuartzLab", instance, url, str(self.truth_path), *extra],
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    env=UTC_ENV,
                )
        wait_for("both instances ready", lambda: len(self._what("ready")) == 2, self.logs)

    def _what(self, what: str) -> list[dict[str, Any]]:
        return [t for t in self.truth() if t["what"] == what]

    def first_start(self) -> dict[str, Any]:
        """The truth of the job's first start, once its instance's log holds the job's start line (a pause
        before that line would leave it stamped with the time the process resumed)."""
        first = dict(wait_for("the job's first start", lambda: self._what("start")[:1], self.logs)[0])
        wait_for(
            "the job's start line",
            lambda: "event=job_started" in self.log(first["instance"]).read_text(errors="replace"),
            self.logs,
        )
        return first

    def _started_on(self, instance: str) -> bool:
        return any(t["instance"] == instance for t in self._what("start"))

    def pause(self) -> tuple[str, str]:
        """SIGSTOP the instance that started the job until the other logs the job's recovery, then SIGCONT;
        returns (paused, recovering)."""
        paused = self.first_start()["instance"]
        other = "B" if paused == "A" else "A"
        self.procs[paused].send_signal(signal.SIGSTOP)
        try:
            wait_for(
                f"{other}'s recovery of {paused}'s job",
                lambda: RECOVERY_LINE in self.log(other).read_text(errors="replace"),
                self.logs,
            )
            # the recovery trigger is any instance's to fire: resumed at once, the paused instance's own
            # scheduler thread often wins it; the incident is the other instance running it
            wait_for(f"{other}'s run of the recovered job", lambda: self._started_on(other), self.logs)
        finally:
            self.procs[paused].send_signal(signal.SIGCONT)
        wait_for("both executions' ends", lambda: len(self._what("end")) == 2, self.logs)
        wait_for(
            f"{paused}'s line that it was recovered",
            lambda: ZOMBIE_LINE in self.log(paused).read_text(errors="replace"),
            self.logs,
        )
        return paused, other

    def clean(self) -> None:
        """The job runs once, nobody paused."""
        self.first_start()
        wait_for("the job's end", lambda: len(self._what("end")) == 1, self.logs)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        try:
            self._as_postgres(
                str(self.bin / "pg_ctl"), "-D", str(self.work / "data"), "-m", "immediate", "stop"
            )
        finally:
            shutil.rmtree(self.work, ignore_errors=True)


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    cluster = QuartzCluster(out, job_run_shell_debug="--info" not in argv)
    cluster.start()
    try:
        if "--clean" in argv:
            cluster.clean()
        else:
            print(cluster.pause())
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
