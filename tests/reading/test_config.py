"""leaselog.toml: a user's own names, validated; every mistake names the config file's line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import shapes

from leaselog.cli import main
from leaselog.config import ConfigError, Settings, load_config_file

GOOD = """\
lease_ttl = "10m"
max_skew = "100ms"

[clock_offsets]
pod-b = "-120ms"

[fields]
jobId = ["report_request_id"]
pod = "k8s.pod"
execution_id = ["run", "attempt_uuid"]

[events]
acquired = "LOCK_OK"
job_finished = ["WORK_END", "Report done"]

[[rules]]
event = "lock_released"
message_regex = 'Released (?P<jobId>\\S+) deleted=(?P<released>\\w+)'
fields = { reason = "prose", leaseMs = 5 }
"""


def cfg(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "leaselog.toml"
    p.write_text(text)
    return p


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as e:
        load_config_file(cfg(tmp_path, text))
    return str(e.value)


def test_a_good_config_normalises_names(tmp_path: Path) -> None:
    s = Settings(**load_config_file(cfg(tmp_path, GOOD)))
    assert s.lease_ttl_ms == 600_000 and s.max_skew_ms == 100
    assert s.clock_offsets_ms == {"pod-b": -120}
    assert s.fields == {
        "job_id": ["report_request_id"],
        "pod": ["k8s.pod"],
        "execution_id": ["run", "attempt_uuid"],
    }
    assert s.events == {"lock_acquired": ["LOCK_OK"], "job_finished": ["WORK_END", "Report done"]}
    (rule,) = s.rules
    assert rule.event == "lock_released"
    assert rule.fields == {"reason": "prose", "lease_ms": "5"}


def test_the_custom_sample_config_is_valid() -> None:
    s = Settings(**load_config_file(shapes.OUT / "custom" / "leaselog.toml"))
    assert s.fields["job_id"] == ["report_request_id"] and len(s.rules) == 2


def test_settings_round_trip_through_model_dump(tmp_path: Path) -> None:
    s = Settings(**load_config_file(cfg(tmp_path, GOOD)))
    assert Settings(**s.model_dump()) == s


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        ('lease_ttl = "10m"\nbogus = 1\n', ":2:", "bogus"),
        ('[fields]\njobId = "a"\njobX = ["b"]\n', ":3:", "unknown canonical field 'jobX'"),
        (
            '[events]\nlock_acquired = "A"\nlock_exploded = "B"\n',
            ":3:",
            "unknown canonical event 'lock_exploded'",
        ),
        (
            '[[rules]]\nevent = "lock_acquired"\nmessage_regex = "ok (?P<jobId>x)"\n\n'
            '[[rules]]\nevent = "job_started"\nmessage_regex = "Started (?P<jobId>\\\\S+"\n',
            ":7:",
            "bad regex",
        ),
        ('[[rules]]\nevent = "lock_acquired"\nmessage_regex = "(?P<nonsense>x)"\n', ":3:", "nonsense"),
        ('[[rules]]\nevent = "lock_exploded"\nmessage_regex = "x"\n', ":2:", "lock_exploded"),
        ('[[rules]]\nevent = "lock_acquired"\nmessage_regex = "x"\ncolour = "red"\n', ":4:", "colour"),
        ('[[rules]]\nevent = "lock_acquired"\nmessage_regex = "x"\nfields = { nope = "1" }\n', ":4:", "nope"),
        ('\n\nmax_skew = "a while"\n', ":3:", "max_skew"),
        ('format = "xml"\n', ":1:", "unknown format 'xml'"),
        ("[fields]\njob_id = 5\n", ":2:", "job_id"),
        ("fields = { jobX = 'a' }\n", ":1:", "jobX"),
    ],
)
def test_mistakes_name_the_line(tmp_path: Path, text: str, where: str, says: str) -> None:
    msg = error_of(tmp_path, text)
    assert f"leaselog.toml{where}" in msg, msg
    assert says in msg, msg


def test_invalid_toml_names_line_and_column(tmp_path: Path) -> None:
    msg = error_of(tmp_path, 'lease_ttl = "10m"\n[fields\n')
    assert "not valid TOML" in msg and "line 2" in msg


def test_missing_or_binary_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config_file(tmp_path / "nope.toml")
    (tmp_path / "b.toml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config_file(tmp_path / "b.toml")


def test_cli_bad_config_exits_2_naming_the_line(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # rich must not fold the long temporary path
    bad = cfg(tmp_path, '[fields]\njobX = "a"\n')
    code = main(["analyze", str(shapes.FLAT), "--config", str(bad), "-q"])
    assert code == 2
    assert "leaselog.toml:2" in capsys.readouterr().err


def test_cli_picks_up_leaselog_toml_in_the_working_folder(tmp_path: Path, monkeypatch: Any) -> None:
    import json
    import shutil

    custom = shapes.OUT / "custom"
    for f in custom.iterdir():
        shutil.copy(f, tmp_path / f.name)
    monkeypatch.chdir(tmp_path)
    assert main(["analyze", ".", "--json", "out.json", "-q"]) == 0
    kinds = {f["kind"] for f in json.loads((tmp_path / "out.json").read_text())["findings"]}
    assert {"overlapping_executions", "lease_outlived", "stale_release"} <= kinds
