"""The notebook API: `leaselog.analyze`, the Analysis frames and their documented schemas, Parquet round trips."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import leaselog
from leaselog import schema
from leaselog.cli import main
from leaselog.vocabulary import CANONICAL_EVENTS

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
FRAME_NAMES = list(schema.FRAMES)

INCIDENT = [
    {
        "ts": "2026-11-02T10:00:00.000Z",
        "jobId": "r-1",
        "executionId": "a",
        "pod": "pod-a",
        "event": "lock_acquired",
        "leaseMs": 1000,
    },
    {
        "ts": "2026-11-02T10:00:00.010Z",
        "jobId": "r-1",
        "executionId": "a",
        "pod": "pod-a",
        "event": "job_started",
    },
    {
        "ts": "2026-11-02T10:00:01.500Z",
        "jobId": "r-1",
        "executionId": "b",
        "pod": "pod-b",
        "event": "lock_acquired",
        "leaseMs": 1000,
    },
    {
        "ts": "2026-11-02T10:00:01.510Z",
        "jobId": "r-1",
        "executionId": "b",
        "pod": "pod-b",
        "event": "job_started",
    },
    {
        "ts": "2026-11-02T10:00:02.000Z",
        "jobId": "r-1",
        "executionId": "a",
        "pod": "pod-a",
        "event": "job_finished",
    },
    {
        "ts": "2026-11-02T10:00:02.100Z",
        "jobId": "r-1",
        "executionId": "b",
        "pod": "pod-b",
        "event": "job_finished",
    },
]


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sample() -> leaselog.Analysis:
    # the README's command: every sample folder at once, TTL for the demo that logs none
    return leaselog.analyze(SAMPLES, lease_ttl="5s")


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> leaselog.Analysis:
    folder = tmp_path_factory.mktemp("unrelated")
    _write(
        folder / "app.jsonl",
        [
            {"ts": "2026-11-02T10:00:00Z", "level": "INFO", "message": "Started ReportWorkerApplication"},
            {"ts": "2026-11-02T10:00:01Z", "level": "INFO", "message": "GET /health 200", "pod": "pod-a"},
        ],
    )
    (folder / "app.log").write_text('level=info msg="cache warmed" pod=pod-b\n', encoding="utf-8")
    return leaselog.analyze(folder)


# --- the public API --------------------------------------------------------------------------------------------


def test_all_lists_the_public_api_and_nothing_private() -> None:
    assert {"Analysis", "analyze", "load", "schema", "Finding", "Settings"} <= set(leaselog.__all__)
    for name in leaselog.__all__:
        assert not name.startswith("_")
        assert getattr(leaselog, name) is not None


def test_analysis_exposes_polars_frames(sample: leaselog.Analysis) -> None:
    for name in FRAME_NAMES:
        assert isinstance(getattr(sample, name), pl.DataFrame), name
    assert sample.findings.height == len(sample.finding_list) > 0
    evidence = pl.List(pl.Struct({"file": pl.String(), "line": pl.Int64(), "note": pl.String()}))
    assert sample.findings.schema["evidence"] == evidence
    # the frame and the records are the same findings: the JSON contract from either is the same
    assert [f.to_json_dict() for f in sample.finding_list] == leaselog.document(sample)["findings"]
    assert sample.inputs["path"].len() == len(sample.input_reports)


def test_repr_is_a_short_summary(sample: leaselog.Analysis) -> None:
    text = repr(sample)
    assert text.startswith("<Analysis: ")
    assert f"{sample.executions.height} executions" in text
    assert f"{len(sample.finding_list)} findings" in text
    assert len(text) < 200


# --- friendly keywords -----------------------------------------------------------------------------------------


def test_friendly_duration_keywords_become_settings(tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", INCIDENT)
    a = leaselog.analyze(
        log,
        lease_ttl="10m",
        max_skew="1s",
        stop_slo="30s",
        takeover_slo=90_000,
        renewal_interval="2s",
        clock_offsets={"pod-b": "-120ms", "pod-c": 50},
    )
    s = a.settings
    assert s.lease_ttl_ms == 600_000
    assert s.max_skew_ms == 1_000
    assert s.stop_slo_ms == 30_000
    assert s.takeover_slo_ms == 90_000
    assert s.renewal_interval_ms == 2_000
    assert s.clock_offsets_ms == {"pod-b": -120.0, "pod-c": 50.0}


def test_clock_offsets_move_that_pods_events(tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", INCIDENT)
    plain = leaselog.analyze(log)
    shifted = leaselog.analyze(log, clock_offsets={"pod-b": "-120ms"})

    def times(a: leaselog.Analysis, pod: str) -> list[object]:
        return a.events.filter(pl.col("pod") == pod).sort("seq")["t"].to_list()

    assert times(shifted, "pod-a") == times(plain, "pod-a")
    # subtracting a negative offset moves pod-b's clock 120 ms later
    deltas = {
        (s - p).total_seconds() for s, p in zip(times(shifted, "pod-b"), times(plain, "pod-b"), strict=True)
    }
    assert deltas == {0.12}


def test_ms_keywords_keep_working(tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", INCIDENT)
    a = leaselog.analyze(log, lease_ttl_ms="2m", max_skew_ms=100, clock_offsets_ms={"pod-a": 5.0})
    assert (a.settings.lease_ttl_ms, a.settings.max_skew_ms) == (120_000, 100)
    assert a.settings.clock_offsets_ms == {"pod-a": 5.0}


def test_both_spellings_of_one_setting_is_an_error(tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", INCIDENT)
    with pytest.raises(TypeError, match="lease_ttl"):
        leaselog.analyze(log, lease_ttl="1m", lease_ttl_ms=60_000)


def test_unknown_keyword_is_a_type_error_naming_the_known_ones(tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", INCIDENT)
    with pytest.raises(TypeError, match=r"lease_tll.*lease_ttl"):
        leaselog.analyze(log, lease_tll="1m")


def test_bad_duration_is_a_value_error(tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", INCIDENT)
    with pytest.raises(ValueError, match="banana"):
        leaselog.analyze(log, lease_ttl="banana")


def test_keywords_override_the_config_file(tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", INCIDENT)
    cfg = tmp_path / "leaselog.toml"
    cfg.write_text('lease_ttl = "1m"\nmax_skew = "2s"\n', encoding="utf-8")
    a = leaselog.analyze(log, config=cfg, lease_ttl="3m")
    assert a.settings.lease_ttl_ms == 180_000
    assert a.settings.max_skew_ms == 2_000


def test_same_findings_as_the_cli(
    sample: leaselog.Analysis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the CLI reads ./leaselog.toml when there is one; the API never does
    out = tmp_path / "findings.json"
    assert main(["analyze", str(SAMPLES), "--lease-ttl", "5s", "--json", str(out), "--quiet"]) == 0
    assert json.loads(out.read_text())["findings"] == leaselog.document(sample)["findings"]


# --- documented schemas ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("frame", FRAME_NAMES)
def test_sample_frames_match_their_documented_schema(sample: leaselog.Analysis, frame: str) -> None:
    df = getattr(sample, frame)
    assert df.height > 0 or frame == "malformed"
    assert schema.mismatches(frame, df) == []
    assert dict(df.schema) == dict(schema.schema(frame))


@pytest.mark.parametrize("frame", FRAME_NAMES)
def test_empty_analysis_gives_empty_frames_with_documented_schemas(
    empty: leaselog.Analysis, frame: str
) -> None:
    df = getattr(empty, frame)
    assert df.height == (2 if frame == "inputs" else 0)
    assert schema.mismatches(frame, df) == []


def test_empty_analysis_accounts_for_every_line(empty: leaselog.Analysis) -> None:
    assert empty.finding_list == []
    d = leaselog.document(empty)
    assert (d["jobs"], d["executions"], d["findings"]) == (0, 0, [])
    assert d["lines"] == {"total": 3, "used": 0, "ignored": 3, "malformed": 0}


def test_schema_docs_are_complete() -> None:
    assert set(schema.FRAME_DOCS) == set(schema.FRAMES)
    for frame, cols in schema.FRAMES.items():
        names = [c.name for c in cols]
        assert len(names) == len(set(names)), f"{frame}: duplicate column"
        for c in cols:
            assert c.meaning.strip(), f"{frame}.{c.name} has no meaning"
    d = schema.describe()
    assert d.height == sum(len(c) for c in schema.FRAMES.values())
    assert d.columns == ["frame", "column", "dtype", "meaning"]
    assert schema.describe("leases")["column"].to_list() == list(schema.schema("leases"))
    assert schema.empty("renewals").schema == schema.schema("renewals")
    with pytest.raises(KeyError, match="frames: events"):
        schema.schema("lease")


def test_mismatches_names_what_to_fix() -> None:
    df = schema.empty("malformed").with_columns(pl.col("line").cast(pl.Int32), pl.lit("x").alias("extra"))
    problems = schema.mismatches("malformed", df.drop("reason"))
    assert "malformed.extra (String) is not documented in leaselog/schema.py" in problems
    assert "malformed.reason is documented but the frame has no such column" in problems
    assert "malformed.line: documented Int64, frame has Int32" in problems


# --- Parquet round trips ---------------------------------------------------------------------------------------


def _assert_same(a: leaselog.Analysis, b: leaselog.Analysis) -> None:
    for name in FRAME_NAMES:
        assert_frame_equal(getattr(a, name), getattr(b, name))
    assert b.finding_list == a.finding_list
    assert [f.details for f in b.finding_list] == [f.details for f in a.finding_list]
    assert [f.evidence for f in b.finding_list] == [f.evidence for f in a.finding_list]
    assert b.input_reports == a.input_reports
    assert b.settings == a.settings
    assert b.problems == a.problems
    assert leaselog.document(b) == leaselog.document(a)


def test_parquet_round_trip_of_the_samples(sample: leaselog.Analysis, tmp_path: Path) -> None:
    out = leaselog.write_parquet(sample, tmp_path / "store")
    assert {p.name for p in out.iterdir()} == {
        *(f"{n}.parquet" for n in FRAME_NAMES),
        "leaselog.json",
    }
    # the Parquet files are plain tables any tool can read
    assert pl.read_parquet(out / "executions.parquet").height == sample.executions.height
    _assert_same(sample, leaselog.load(out))


def test_round_trip_of_an_empty_analysis(empty: leaselog.Analysis, tmp_path: Path) -> None:
    back = leaselog.load(leaselog.write_parquet(empty, tmp_path / "store"))
    _assert_same(empty, back)
    for name in FRAME_NAMES:
        assert dict(getattr(back, name).schema) == dict(schema.schema(name))


def test_round_trip_keeps_every_setting_and_unmapped_event_names(tmp_path: Path) -> None:
    rows = [
        *INCIDENT,
        {
            "ts": "2026-11-02T10:00:03Z",
            "jobId": "r-1",
            "executionId": "b",
            "pod": "pod-b",
            "event": "lease_wobbled",
        },
    ]
    log = _write(tmp_path / "log.jsonl", rows)
    a = leaselog.analyze(
        log,
        lease_ttl="1s",
        clock_offsets={"pod-b": "-3ms"},
        fields={"pod": ["worker"]},
        events={"job_finished": ["all_done"]},
        rules=[{"event": "job_progress", "message_regex": r"step done by (?P<pod>\S+)"}],
    )
    assert a.input_reports[0].unmapped_events == {"lease_wobbled": 1}
    back = leaselog.load(leaselog.write_parquet(a, tmp_path / "store"))
    _assert_same(a, back)
    assert back.settings.rules[0].message_regex == r"step done by (?P<pod>\S+)"


def test_writing_again_replaces_the_store(
    sample: leaselog.Analysis, empty: leaselog.Analysis, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    leaselog.write_parquet(sample, store)
    leaselog.write_parquet(empty, store)
    assert leaselog.load(store).finding_list == []


def test_cli_parquet_folder_loads_back(
    sample: leaselog.Analysis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "from-cli"
    assert main(["analyze", str(SAMPLES), "--lease-ttl", "5s", "--parquet", str(store), "--quiet"]) == 0
    back = leaselog.load(store)
    assert leaselog.document(back)["findings"] == leaselog.document(sample)["findings"]
    assert_frame_equal(back.executions, sample.executions)


def test_keep_fields_false_drops_only_the_raw_records(sample: leaselog.Analysis) -> None:
    lean = leaselog.analyze(SAMPLES, lease_ttl="5s", keep_fields=False)
    assert sample.events["fields"].null_count() == 0
    assert lean.events["fields"].null_count() == lean.events.height > 0
    assert_frame_equal(lean.events.drop("fields"), sample.events.drop("fields"))
    assert leaselog.document(lean) == leaselog.document(sample)


def test_cli_keeps_the_raw_records_only_for_outputs_that_show_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = leaselog.pipeline.analyze

    def spy(*args: object, **kwargs: object) -> leaselog.Analysis:
        seen.append(bool(kwargs["keep_fields"]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(leaselog.pipeline, "analyze", spy)
    incident = SAMPLES / "article-incident"
    assert main(["analyze", str(incident), "--json", str(tmp_path / "f.json"), "--quiet"]) == 0
    assert main(["analyze", str(incident), "--parquet", str(tmp_path / "p"), "--quiet"]) == 0
    assert main(["analyze", str(incident), "--html", str(tmp_path / "r.html"), "--quiet"]) == 0
    assert seen == [False, True, True]
    assert leaselog.load(tmp_path / "p").events["fields"].null_count() == 0


@pytest.mark.parametrize("batch", [1, 2, 2000])
def test_write_json_is_the_document_to_dict_gives(
    sample: leaselog.Analysis,
    empty: leaselog.Analysis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    batch: int,
) -> None:
    import orjson

    monkeypatch.setattr(leaselog.render.document, "JSON_BATCH", batch)
    for name, a in (("sample", sample), ("empty", empty)):
        out = tmp_path / f"{name}.json"
        leaselog.write_json(a, out)
        assert out.read_bytes() == orjson.dumps(leaselog.document(a), option=orjson.OPT_INDENT_2)
    assert len(sample.finding_list) > 2 and not empty.finding_list


def test_load_refuses_what_is_not_a_store(sample: leaselog.Analysis, tmp_path: Path) -> None:
    with pytest.raises(leaselog.StoreError, match="no such folder"):
        leaselog.load(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(leaselog.StoreError, match=r"not a leaselog analysis folder .*--parquet"):
        leaselog.load(tmp_path / "plain")

    store = leaselog.write_parquet(sample, tmp_path / "store")
    manifest = json.loads((store / "leaselog.json").read_text())
    (store / "leaselog.json").write_text(json.dumps({**manifest, "storeVersion": 99}))
    with pytest.raises(leaselog.StoreError, match="store version 99"):
        leaselog.load(store)
    (store / "leaselog.json").write_text("{not json")
    with pytest.raises(leaselog.StoreError, match="not valid JSON"):
        leaselog.load(store)

    store = leaselog.write_parquet(sample, tmp_path / "store2")
    (store / "renewals.parquet").unlink()
    with pytest.raises(leaselog.StoreError, match=r"renewals\.parquet is missing"):
        leaselog.load(store)


# --- figures ---------------------------------------------------------------------------------------------------


def test_timeline_of_an_unknown_job_names_the_known_ones(sample: leaselog.Analysis) -> None:
    with pytest.raises(KeyError, match=r"no job 'report-4' in this analysis; did you mean report-4\d, "):
        leaselog.timeline(sample, "report-4")


def test_job_ids_are_sorted_and_unique(sample: leaselog.Analysis) -> None:
    ids = sample.job_ids()
    assert ids == sorted(set(ids))
    assert "report-42" in ids
    assert len(ids) == sample.executions["job_id"].n_unique()


def test_timeline_is_a_plotly_figure_of_that_job(sample: leaselog.Analysis) -> None:
    import plotly.graph_objects as go

    fig = leaselog.timeline(sample, "report-42")
    assert isinstance(fig, go.Figure)
    assert len(fig.data) > 0
    assert "report-42" in fig.layout.title.text
    assert "invoice" not in json.dumps(fig.to_plotly_json(), default=str)


def test_overview_is_a_plotly_figure(sample: leaselog.Analysis, empty: leaselog.Analysis) -> None:
    import plotly.graph_objects as go

    assert isinstance(leaselog.overview(sample), go.Figure)
    assert len(leaselog.overview(sample).data) > 0
    assert isinstance(leaselog.overview(empty), go.Figure)


def test_a_loaded_analysis_draws_the_same_figures(sample: leaselog.Analysis, tmp_path: Path) -> None:
    back = leaselog.load(leaselog.write_parquet(sample, tmp_path / "store"))
    assert (
        leaselog.timeline(back, "report-42").to_plotly_json()
        == leaselog.timeline(sample, "report-42").to_plotly_json()
    )
    assert leaselog.overview(back).to_plotly_json() == leaselog.overview(sample).to_plotly_json()


_EVENTS = list(CANONICAL_EVENTS)


@st.composite
def _incident_logs(draw: st.DrawFn) -> list[dict[str, object]]:
    """Small, messy lease logs: any event order, optional fields, odd text."""
    rows: list[dict[str, object]] = []
    t_ms = 1_793_000_000_000
    for _ in range(draw(st.integers(1, 25))):
        t_ms += draw(st.integers(0, 20_000))
        row: dict[str, object] = {
            "ts": t_ms,
            "jobId": draw(st.sampled_from(["job-1", "job-2", "jöb-3"])),
            "executionId": draw(st.sampled_from(["a", "b", "c"])),
            "pod": draw(st.sampled_from(["pod-a", "pod-b"])),
            "event": draw(st.sampled_from(_EVENTS)),
            "message": draw(st.text(max_size=12)),
        }
        for key, values in (
            ("leaseMs", st.sampled_from([1_000, 5_000, 30_000])),
            ("renewalOutcome", st.sampled_from(["success", "rejected", "timeout", "error"])),
            ("latencyMs", st.floats(0, 2_000, allow_nan=False)),
            ("released", st.booleans()),
            ("outcome", st.sampled_from(["accepted", "duplicate", "rejected"])),
            ("fencingToken", st.integers(1, 5)),
            ("trigger", st.sampled_from(["kafka", "retry", "scheduler"])),
            ("kafka.offset", st.integers(0, 3)),
        ):
            if draw(st.booleans()):
                row[key] = draw(values)
        rows.append(row)
    return rows


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_incident_logs())
def test_any_analysis_round_trips_through_parquet(rows: list[dict[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        a = leaselog.analyze(_write(Path(folder) / "log.jsonl", rows), lease_ttl="2s")
        _assert_same(a, leaselog.load(leaselog.write_parquet(a, Path(folder) / "store")))
        for name in FRAME_NAMES:
            assert schema.mismatches(name, getattr(a, name)) == []
