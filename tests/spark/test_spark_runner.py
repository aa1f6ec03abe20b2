"""`--engine spark` (one shared local[2] session): the same JSON document as one machine's run, byte for
byte, on every sample set at once, a 20 000-job synthetic fleet, and gzip objects in a local S3 server."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import leaselog
from helpers import ROOT, SAMPLES
from leaselog.cli import main
from leaselog.pipeline import settings_of
from leaselog.reproduce.campaign import rows_for, write_shape
from leaselog.spark import StageTimes, run

# one shared local[2] session: under `-n 2` every Spark test runs on the same xdist worker (`--dist loadgroup`)
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

SETS = sorted(
    # (a Sentinel's failover: the fleet's failovers reach every partition, cited as on one machine)
    [
        SAMPLES / n
        for n in ("article-demo", "article-incident", "clean", "clean-busy", "dialects/redis-sentinel")
    ]
    + [p for p in (SAMPLES / "scenarios").iterdir() if p.is_dir()]
    + [p for p in (SAMPLES / "formats").iterdir() if p.is_dir()]
)


def _bytes(a: leaselog.Analysis) -> bytes:
    out = io.BytesIO()
    leaselog.write_json(a, out)
    return out.getvalue()


def test_every_sample_set_gives_the_one_machine_document(spark: Any) -> None:
    paths = [str(p) for p in SETS]
    times = StageTimes()
    on_spark = run(paths, settings_of(), spark=spark, partitions=3, times=times)
    one = leaselog.analyze(paths)
    assert on_spark.findings.height > 50
    assert _bytes(on_spark) == _bytes(one)
    assert b"redisFailover" in _bytes(on_spark)
    # the frames stay on the cluster; the document's counts came with the run
    assert on_spark.executions.height == 0 and leaselog.document(on_spark)["executions"] > 0
    assert set(times.seconds) == {"read", "analyze", "merge"} and times.driver_bytes > 0


@pytest.fixture(scope="module")
def fleet_20k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet") / "fleet-20000.jsonl"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gen_fleet.py"), "--jobs", "20000", "--out", str(out)],
        check=True,
    )
    return out


def test_a_20000_job_fleet_gives_the_one_machine_document(spark: Any, fleet_20k: Path) -> None:
    on_spark = run([str(fleet_20k)], settings_of(), spark=spark, partitions=4)
    one = leaselog.analyze(fleet_20k, keep_fields=False)
    assert leaselog.document(one)["jobs"] == 20000
    assert one.findings.height > 1000
    assert _bytes(on_spark) == _bytes(one)


def test_gzip_objects_in_s3_give_the_local_files_findings(spark: Any, s3_endpoint: str | None) -> None:
    if s3_endpoint is None:
        pytest.skip("needs moto and s3fs")
    import boto3

    client = boto3.client("s3", endpoint_url=s3_endpoint)
    client.create_bucket(Bucket="spark-logs")
    local = SAMPLES / "clean-busy"
    for f in sorted(local.iterdir()):
        client.put_object(Bucket="spark-logs", Key=f"gz/{f.name}.gz", Body=gzip.compress(f.read_bytes()))
    on_spark = run(["s3://spark-logs/gz/"], settings_of(), spark=spark, partitions=2)
    text = json.dumps(leaselog.document(leaselog.analyze(local)))
    for f in local.iterdir():
        text = text.replace(str(f), f"s3://spark-logs/gz/{f.name}.gz")
    assert leaselog.document(on_spark) == json.loads(text)
    assert all(r.path.startswith("s3://spark-logs/gz/") for r in on_spark.input_reports)


def test_the_cli_writes_the_same_json_and_parquet(spark: Any, tmp_path: Path) -> None:
    incident = str(SAMPLES / "article-incident")
    assert main(["analyze", incident, "--json", str(tmp_path / "one.json"), "-q"]) == 0
    args = ["analyze", incident, "--engine", "spark", "--partitions", "2", "-q"]
    assert main([*args, "--json", str(tmp_path / "spark.json"), "--parquet", str(tmp_path / "pq")]) == 0
    assert (tmp_path / "spark.json").read_bytes() == (tmp_path / "one.json").read_bytes()
    # --parquet brings the frames to the driver: the stored analysis is the one-machine one (but `seq`:
    # on the cluster an input's events are numbered from `index << 40`, in the same order)
    stored, one = leaselog.load(tmp_path / "pq"), leaselog.analyze(incident)
    assert stored.findings.equals(one.findings)
    for name in ("events", "executions", "leases", "renewals"):
        got, want = getattr(stored, name), getattr(one, name)
        seq = [c for c in want.columns if c.endswith("seq")]
        assert got.drop(seq).equals(want.drop(seq)), name
        for c in seq:
            assert got[c].rank("dense").equals(want[c].rank("dense")), (name, c)


def test_stdin_is_refused_with_a_usage_error(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "-", "--engine", "spark", "-q"]) == 2
    assert "not stdin" in capsys.readouterr().err


def test_the_partitions_come_out_in_any_number(spark: Any) -> None:
    paths = [str(SAMPLES / "clean-busy"), str(SAMPLES / "scenarios" / "crash-with-takeover")]
    expected = _bytes(leaselog.analyze(paths))
    for n in (1, 7):
        assert _bytes(run(paths, settings_of(), spark=spark, partitions=n)) == expected, n


def test_a_redelivery_idle_time_gives_the_one_machine_document(spark: Any) -> None:
    """`idleMs` and `entryKept` (Float64 and Boolean columns of the events) cross to Spark and back: the
    redelivery's ordering fact, and the contradiction it names, come out as on one machine."""
    paths = [str(ROOT / "tests" / "fixtures" / "checks" / "LL105" / "fires_redelivery_before_idle.jsonl")]
    on_spark = run(paths, settings_of(), spark=spark, partitions=2)
    one = leaselog.analyze(paths)
    assert _bytes(on_spark) == _bytes(one)
    facts = [
        f["details"]["fact"]
        for f in leaselog.document(on_spark)["findings"]
        if f["kind"] == "clock_contradiction"
    ]
    assert facts == ["redelivered"]


def test_a_container_id_gives_the_one_machine_document(spark: Any, tmp_path: Path) -> None:
    """`container_id` (Fluent Bit's `kubernetes.docker_id`) crosses to Spark and back: a real +2248 ms step
    between two runs of a young process, in Fluent Bit without start-up lines, is a certain step there too
    (one container on both sides: no restart)."""
    folder = ROOT / "tests" / "fixtures" / "lab" / "step-between-runs"
    paths = write_shape(rows_for(folder, True), "fluentbit-merged", tmp_path, [])
    for p in paths:
        lines = p.read_text(encoding="utf-8").splitlines(True)
        p.write_text("".join(x for x in lines if "(process running for " not in x), encoding="utf-8")
    on_spark = run([str(p) for p in paths], settings_of(), spark=spark, partitions=2)
    one = leaselog.analyze(paths)
    assert _bytes(on_spark) == _bytes(one)
    steps = [f for f in leaselog.document(on_spark)["findings"] if f["kind"] == "clock_step"]
    assert [(f["certainty"], f["durationMs"]) for f in steps] == [("certain", 2248.0)]
