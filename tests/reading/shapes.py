"""The article's incident (sample_logs/article-incident/) re-logged in every shape leaselog reads.

`python tests/reading/shapes.py` (re)writes sample_logs/formats/<shape>/; test_samples.py checks that the
files on disk are exactly what this produces and that each gives the flat version's findings. The shapes
themselves live in leaselog.reproduce.shapes (the lab renders its runs with them too); jobId becomes
`report-42-<shape>` so no two sample folders share a job. The custom-names sample (and its leaselog.toml)
is the article's own and lives here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from leaselog.reproduce import (
    export_shapes,  # noqa: F401  (registers the exports' shapes)
    python_shapes,  # noqa: F401  (registers the Python loggers' shapes)
)
from leaselog.reproduce import shapes as registry
from leaselog.reproduce.rows import dumps, level

ROOT = Path(__file__).resolve().parents[2]
FLAT = ROOT / "sample_logs" / "article-incident"
OUT = ROOT / "sample_logs" / "formats"

Row = dict[str, Any]

# the shapes written to sample_logs/formats/ (the lab's own variants are not samples)
SHAPES = {name: s for name, s in registry.SHAPES.items() if s.sample}
# the format each shape's files must be detected as
DETECTED = {name: s.detected for name, s in SHAPES.items()}


def story() -> dict[str, list[Row]]:
    """pod -> the flat rows of that pod's file, in order."""
    out: dict[str, list[Row]] = {}
    for f in sorted(FLAT.glob("*.jsonl")):
        out[f.stem] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def render_shape(shape: str) -> dict[str, str]:
    """file name -> content, for one shape."""
    return registry.render(shape, story(), f"report-42-{shape}")


# ---------------------------------------------------------------- custom names + leaselog.toml

CUSTOM_TOML = """\
# The report service logs its own names. Analyze with:
#   leaselog analyze sample_logs/formats/custom/ --config sample_logs/formats/custom/leaselog.toml
# Without this file none of its lines carries a job id leaselog knows, so they are all ignored.

[fields]
jobId = ["report_request_id"]
executionId = "run"
pod = "k8s.pod"
leaseMs = "lock_ttl_millis"
event = "what"
released = "lock_deleted"

[events]
lock_acquired = ["LOCK_OK"]
job_started = ["WORK_BEGIN"]
job_finished = ["WORK_END"]

# Some moments exist only as prose.
[[rules]]
event = "lock_released"
message_regex = 'Released lease for (?P<jobId>\\S+) run=(?P<executionId>\\S+) deleted=(?P<released>true|false)'

[[rules]]
event = "job_triggered"
message_regex = 'Picked up (?P<jobId>\\S+) from (?P<topic>\\S+)/(?P<partition>\\d+)@(?P<offset>\\d+) run=(?P<executionId>\\S+)'
fields = { trigger = "kafka" }
"""

_CUSTOM_EVENTS = {"lock_acquired": "LOCK_OK", "job_started": "WORK_BEGIN", "job_finished": "WORK_END"}


def custom(row: Row, pod: str, job: str) -> list[str]:
    rec: Row = {"time": row["ts"], "k8s.pod": pod, "severity": level(row)}
    ev = row.get("event")
    if "jobId" in row:
        rec["report_request_id"] = job
        rec["run"] = row["executionId"]
    if ev == "lock_released":
        rec["message"] = (
            f"Released lease for {job} run={row['executionId']} deleted={str(row['released']).lower()}"
        )
        del rec["report_request_id"], rec["run"]
    elif ev == "job_triggered":
        rec["message"] = (
            f"Picked up {job} from {row['kafka.topic']}/{row['kafka.partition']}@{row['kafka.offset']}"
            f" run={row['executionId']}"
        )
        del rec["report_request_id"], rec["run"]
    elif ev is not None:
        rec["what"] = _CUSTOM_EVENTS[ev]
        rec["message"] = row.get("message", "")
        if "leaseMs" in row:
            rec["lock_ttl_millis"] = row["leaseMs"]
        if "status" in row:
            rec["outcome_text"] = row["status"]
    else:
        rec["message"] = row.get("message", "")
    return [dumps(rec)]


def render_custom() -> dict[str, str]:
    files = {
        f"{pod}.jsonl": "".join(f"{x}\n" for r in rows for x in custom(r, pod, "report-42-custom"))
        for pod, rows in story().items()
    }
    files["leaselog.toml"] = CUSTOM_TOML
    return files


def all_samples() -> dict[str, dict[str, str]]:
    out = {shape: render_shape(shape) for shape in SHAPES}
    out["custom"] = render_custom()
    return out


def write_all(root: Path = OUT) -> None:
    for shape, files in all_samples().items():
        d = root / shape
        d.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (d / name).write_text(content, encoding="utf-8")


if __name__ == "__main__":
    write_all()
    print(f"wrote {OUT}")
