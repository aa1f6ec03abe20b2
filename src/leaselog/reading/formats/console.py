"""Plain-text console logs (what terminals and `kubectl logs` show), and the noise around them.

One shape, `spring-console`, reads the default patterns of the JVM's logging stacks:

- Spring Boot 3.x: `2026-11-29T10:00:00.101Z  INFO 4242 --- [report-service] [   scheduling-1]
  c.e.report.ReportWorker                  : message` (the `[app]` part only when
  `spring.application.name` is set; a tracing correlation block may follow the thread);
- Spring Boot 2.x: the same with a local time `2026-11-29 10:00:00.101` and no zone;
- Logback's and Log4j2's defaults: `10:00:00.101 [main] INFO  c.e.Foo - message` (time of day only:
  the reader adds the date, from the file's name or its modification time); a leading date is read too;
- two common variants of Spring Boot's: the MDC (`%X`) between the time and the level
  (`TIME traceId=.., spanId=.., jobId=.. DEBUG PID --- [thread] logger : message`), and the tracing
  correlation block after the level (`TIME  INFO [app,traceId,spanId] PID --- [thread] logger : message`,
  Sleuth's and Micrometer Tracing's documented `logging.pattern.level`).

Lease fields come from `key=value` pairs anywhere after the header: in the message (logstash-logback-
encoder's `kv()`, the article's `printf`) or in an MDC block (`[jobId=.. executionId=..]`, `%mdc`'s
`k1=v1, k2=v2`). A pair repeated in one line resolves last-wins, as duplicate JSON keys do.

Noise (`is_noise`): the Spring banner, `Picked up JAVA_TOOL_OPTIONS`, JVM warnings and unified-logging lines
(`[0.004s][warning][os,container] ...`), Logback/Log4j2 status lines, SLF4J's own messages. Such lines are unrelated to leases: ignored, never malformed, and never
counted when a file's shape is decided.
"""

from __future__ import annotations

import re
from typing import Any

from leaselog.reading.formats._common import Malformed, Record, decode

Obj = dict[str, Any] | None

_LEVEL = r"(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE|NOTICE)"
# Spring Boot 3.x (RFC 3339 with zone) and 2.x (local, space-separated); `%5p` pads the level. Two
# variants of the pattern are common: the MDC (`%X`: `traceId=.., spanId=.., jobId=..`) between the time
# and the level, and a correlation block right after the level: Sleuth's and Micrometer Tracing's
# documented `logging.pattern.level=%5p [${spring.application.name:},%X{traceId:-},%X{spanId:-}]`
_SPRING = re.compile(
    r"(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d(?::?\d\d)?)?)\s+"
    r"(?P<mdc>(?:[A-Za-z_][\w.\-]*=[^\s,]*,?\s+)*)" + _LEVEL + r"\s+(?:\[(?P<corr>[^\]\s]*)\]\s+)?"
    r"(?P<pid>\d+)\s+---\s+(?P<brackets>(?:\[[^\]]*\]\s*)+)(?P<logger>\S+)\s*:\s?(?P<msg>.*)\Z",
    re.DOTALL,
)
# the correlation block's parts, in the documented order (`[app,traceId,spanId]`, Sleuth adds `,exportable`)
_CORRELATION = ("spring.application.name", "traceId", "spanId", "exportable")
# Logback's and Log4j2's default `%d{HH:mm:ss.SSS} [%thread] %-5level %logger{36} - %msg%n` (a date in
# front is read too: a common variant of the pattern)
_LOGBACK = re.compile(
    r"(?:(?P<date>\d{4}-\d\d-\d\d)[T ])?(?P<tod>\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)\s+"
    r"\[(?P<thread>[^\]]*)\]\s+" + _LEVEL + r"\s+(?P<logger>\S+)\s+-\s?(?P<msg>.*)\Z",
    re.DOTALL,
)
_BRACKET = re.compile(r"\[([^\]]*)\]")
# key=value pairs; a value ends at a blank, a comma (`%mdc`'s `k1=v1, k2=v2`) or a closing bracket
_PAIR = re.compile(r'(?:(?<=[\s\[{(,;])|\A)([A-Za-z_@][\w.@\-]*)=("(?:[^"\\]|\\.)*"|[^\s,\]}]*)')
_UNESCAPE = re.compile(r"\\(.)")

# the key the time of day goes under when the line has no date: the reader adds one
TIME_OF_DAY = "console.time_of_day"


def key_value_pairs(text: str, rec: Record) -> None:
    """`key=value` pairs (quoted values unescaped) in `text` into `rec`, last wins."""
    for m in _PAIR.finditer(text):
        key, val = m.group(1), m.group(2)
        if len(val) >= 2 and val.startswith('"') and val.endswith('"'):
            val = _UNESCAPE.sub(r"\1", val[1:-1])
        rec[key] = val  # last wins


def console_record(text: str) -> Record | None:
    """A console line's record (header fields, then its key=value pairs), or None if it is not one."""
    if not text[:1].isdigit():
        return None
    m = _SPRING.match(text)
    rec: Record
    if m is not None:
        brackets = [b.strip() for b in _BRACKET.findall(m.group("brackets"))]
        rec = {
            "@timestamp": m.group("ts").replace(" ", "T", 1).replace(",", "."),
            "level": m.group("level"),
            "process.pid": m.group("pid"),
            "logger": m.group("logger"),
            "message": m.group("msg"),
        }
        if m.group("corr") is not None:
            for key, value in zip(_CORRELATION, m.group("corr").split(","), strict=False):
                if value:
                    rec[key] = value
        if len(brackets) >= 2:  # [app] [thread] (then a correlation block, if tracing is on)
            rec["spring.application.name"] = brackets[0]
            rec["thread"] = brackets[1]
        elif brackets:
            rec["thread"] = brackets[0]
        if m.group("mdc"):
            key_value_pairs(m.group("mdc"), rec)
        key_value_pairs(m.group("brackets"), rec)
        key_value_pairs(m.group("msg"), rec)
        return rec
    m = _LOGBACK.match(text)
    if m is None:
        return None
    tod = m.group("tod").replace(",", ".")
    rec = {
        "level": m.group("level"),
        "thread": m.group("thread"),
        "logger": m.group("logger"),
        "message": m.group("msg"),
    }
    if m.group("date"):
        rec["@timestamp"] = f"{m.group('date')}T{tod}"
    else:
        rec[TIME_OF_DAY] = tod
    key_value_pairs(m.group("thread"), rec)
    key_value_pairs(m.group("msg"), rec)
    return rec


def parse_console(line: bytes) -> list[Record]:
    rec = console_record(decode(line))
    if rec is None:
        raise Malformed("not a console log line (Spring Boot, Logback or Log4j2 default pattern)")
    return [rec]


def sniff_console(line: bytes, obj: Obj) -> bool:
    if obj is not None or not line[:1].isdigit():
        return False
    try:
        return console_record(line.decode("utf-8")) is not None
    except UnicodeDecodeError:
        return False


def console_shape(line: bytes) -> str | None:
    try:
        parse_console(line)
    except Malformed as e:
        return str(e)
    return None


# ---------------------------------------------------------------- noise

MAX_NOISE_BYTES = 1024  # longer lines are never noise (and the banner regex never sees a huge line)
_NOISE = re.compile(
    rb"(?:"
    # the Spring banner: ASCII art (no letters, digits, quotes or braces) and its version line
    rb"[ \t_/\\()'|=`.,:<>*#~+^!\-]*[_/\\|=][ \t_/\\()'|=`.,:<>*#~+^!\-]*\Z"
    rb"|\s*:: Spring Boot ::"
    # the JVM's own lines
    rb"|Picked up (?:JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS):"
    rb"|(?:OpenJDK|Java HotSpot\(TM\)|Eclipse OpenJ9).{0,40}VM warning:"
    rb"|WARNING: "
    rb"|Listening for transport dt_socket"
    # the JVM's unified logging (-Xlog, JDK 9+): `[0.004s][warning][os,container] ...`, decorations first
    rb"|(?:\[[^\]\n]{1,40}\])*?\[(?:error|warning|info|debug|trace|develop)\s*\]\[[a-z0-9_,]+\s*\]"
    rb"|NOTE: Picked up"
    # logging frameworks talking about themselves
    rb"|\d\d:\d\d:\d\d,\d{3} \|-(?:INFO|WARN|ERROR|DEBUG)"
    rb"|SLF4J(?:\([A-Z]\))?: "
    rb"|(?:\S+ )?(?:main )?(?:ERROR|WARN|INFO|DEBUG) StatusLogger "
    rb"|log4j:(?:WARN|ERROR|INFO) "
    rb")"
)


def is_noise(line: bytes) -> bool:
    """A line the JVM or its logging set-up prints around an application's log: never a lease event."""
    return len(line) <= MAX_NOISE_BYTES and _NOISE.match(line) is not None
