"""Spring Boot's start-up line (`org.springframework.boot.StartupInfoLogger`): when the process started.

Message, from the library's source (github.com/spring-projects/spring-boot,
`spring-boot-project/spring-boot/src/main/java/org/springframework/boot/StartupInfoLogger.java`,
`getStartedMessage`), INFO, logged under the application's main class on the `main` thread:

- `Started {App} in {s} seconds (process running for {u})` (3.0.0 and later);
- `Started {App} in {s} seconds (JVM running for {u})` (2.x).

`{u}` is `RuntimeMXBean.getUptime() / 1000.0`: the seconds since the JVM started, to the millisecond. The
line is no lease event and names no job. It says that a new process began at its time less `{u}`, which
is the moment an `elapsedMs` counted from the process's start counts from. leaselog reads it as
`process_started` (with `elapsed_ms` the uptime) for one purpose: where a pod's `elapsedMs` runs on past
a restart (the new process's count at its first lease line exceeds the old one's last), the line tells a
restart from a forward step of the clock (leaselog.clocks.undo). The events frame does not keep it.
"""

from __future__ import annotations

from leaselog.reading.dialects import Dialect, Rule, Sample

_CONSOLE = (
    "2026-11-29T10:00:01.215Z  INFO 4242 --- [           main] example.ReportApplication                : "
)

DIALECT = Dialect(
    name="spring-boot",
    library="Spring Boot start-up (org.springframework.boot.StartupInfoLogger)",
    sources=(
        "spring-boot-project/spring-boot/src/main/java/org/springframework/boot/StartupInfoLogger.java "
        "(3.0.5: `process running for`; 2.x: `JVM running for`)",
    ),
    needles=(" running for ",),
    rules=(
        Rule(
            "process_started",
            r"\AStarted \S+ in [0-9.]+ seconds \((?:process|JVM) running for (?P<elapsed_s>[0-9]+(?:\.[0-9]+)?)\)",
            name="started",
            versions="2.x (JVM running for), 3.x (process running for)",
        ),
    ),
    samples=(
        Sample(
            _CONSOLE + "Started ReportApplication in 1.412 seconds (process running for 1.873)",
            "process_started",
            {"elapsed_ms": "1873"},
        ),
        Sample(
            _CONSOLE + "Started ReportApplication in 8.02 seconds (JVM running for 9.4)",
            "process_started",
            {"elapsed_ms": "9400"},
        ),
        Sample(_CONSOLE + "Tomcat started on port 8080 (http) with context path ''", None),
        Sample(_CONSOLE + "Job report still running for 12 seconds", None),
    ),
    enable="Spring Boot logs it at INFO by default (`spring.main.log-startup-info`, on unless turned off).",
    cannot_measure="It is no lease event: it says only when the pod's process started.",
)
