"""The lab is apart from the analyzer: `pip install leaselog` brings no Redis client, the analyzer never imports
one (nor the lab), and `leaselog reproduce` without the `lab` extra says in one line how to install it.

Each case runs Python in a subprocess (a fresh `sys.modules`). "Without the extra" is this interpreter with
a folder first on PYTHONPATH whose `redis` (or `redis_lock`, `celery`) package raises ImportError on
import, as an absent package does; the static rule (which modules may import the lab) is in
tests/test_layers.py."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
INCIDENT = ROOT / "sample_logs" / "article-incident"
INSTALL = "pip install 'leaselog[lab]'"
# the lab's libraries: what the `lab` extra installs
LAB_MODULES = ("redis", "redis_lock", "celery", "kombu")


def _python(
    code: str, tmp_path: Path, without: tuple[str, ...] = (), cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """`python -c code` with the worktree's sources first, and each package of `without` made absent."""
    hidden = tmp_path / "without"
    for name in without:
        (hidden / name).mkdir(parents=True, exist_ok=True)
        (hidden / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r}'!r}, name={name!r})\n", encoding="utf-8"
        )
    path = [str(hidden)] if without else []
    path += [str(SRC), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _cli(
    tmp_path: Path, *args: str, without: tuple[str, ...] = ("redis",)
) -> subprocess.CompletedProcess[str]:
    code = f"import sys; from leaselog.cli import main; sys.exit(main({list(args)!r}))"
    return _python(code, tmp_path, without, cwd=tmp_path)


LOADED = (
    "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in {mods!r}"
    " or m == 'leaselog.reproduce' or m.startswith('leaselog.reproduce.')))"
)


def test_analyze_imports_neither_redis_nor_the_lab(tmp_path: Path) -> None:
    code = (
        "import leaselog\n"
        f"a = leaselog.analyze({str(INCIDENT)!r}, lease_ttl='5s')\n"
        "assert a.finding_list, 'the article finds its incident'\n"
        "leaselog.document(a)\n" + LOADED.format(mods=LAB_MODULES)
    )
    proc = _python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_analyzer_runs_where_redis_is_absent(tmp_path: Path) -> None:
    proc = _python(
        f"import leaselog\nprint(len(leaselog.analyze({str(INCIDENT)!r}).finding_list))",
        tmp_path,
        LAB_MODULES,
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > 0


def test_the_check_itself_sees_an_import_of_redis(tmp_path: Path) -> None:
    """The same probe after the lab's scenarios were imported lists them (the empty list above means
    something)."""
    pytest.importorskip("redis")
    proc = _python("import leaselog.reproduce.scenarios\n" + LOADED.format(mods=LAB_MODULES), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "'redis'" in proc.stdout and "'leaselog.reproduce.scenarios'" in proc.stdout


def test_the_shape_renderers_import_without_redis(tmp_path: Path) -> None:
    code = (
        "from leaselog.reproduce import export_shapes, python_shapes, render_jvm, rows, shapes\n"
        "assert 'logfmt' in shapes.SHAPES and len(shapes.SHAPES) > 10\n" + LOADED.format(mods=LAB_MODULES)
    )
    proc = _python(code, tmp_path, LAB_MODULES)
    assert proc.returncode == 0, proc.stderr
    loaded = ast.literal_eval(proc.stdout)
    assert "leaselog.reproduce.shapes" in loaded
    assert [m for m in loaded if not m.startswith("leaselog.")] == []
    assert "leaselog.reproduce.scenarios" not in loaded and "leaselog.reproduce.server" not in loaded


def test_the_lab_api_without_the_extra_names_the_install(tmp_path: Path) -> None:
    proc = _python("from leaselog.reproduce import run_scenario", tmp_path, ("redis",))
    assert proc.returncode != 0
    assert "LabMissing" in proc.stderr and INSTALL in proc.stderr


@pytest.mark.parametrize(
    ("lab", "worker"),
    [("prl_lab", "prl_worker"), ("celery_vt_lab", "celery_vt_worker")],
)
def test_the_library_labs_import_neither_celery_nor_the_lock_library(
    tmp_path: Path, lab: str, worker: str
) -> None:
    """The lab's side of a lock library's lab reads its workers' settings without the worker module; only
    the worker process (the Celery app) imports celery and redis_lock."""
    pytest.importorskip("redis")
    proc = _python(
        f"import leaselog.reproduce.{lab}\n" + LOADED.format(mods=("celery", "redis_lock", "kombu")),
        tmp_path,
        ("celery", "redis_lock", "kombu"),
    )
    assert proc.returncode == 0, proc.stderr
    loaded = ast.literal_eval(proc.stdout)
    assert f"leaselog.reproduce.{lab}" in loaded
    assert f"leaselog.reproduce.{worker}" not in loaded
    assert [m for m in loaded if not m.startswith("leaselog.")] == []


@pytest.mark.parametrize(
    "args", [("reproduce", "article"), ("reproduce", "random", "--runs", "1"), ("reproduce", "replay", ".")]
)
def test_reproduce_without_the_extra_says_how_to_install_it(tmp_path: Path, args: tuple[str, ...]) -> None:
    proc = _cli(tmp_path, *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: leaselog reproduce:") and lines[0].endswith(INSTALL)
    assert "'redis'" in lines[0]
    assert proc.stdout == ""
    assert list(tmp_path.glob("leaselog-*")) == [], "nothing was started"


def test_every_other_command_works_without_the_extra(tmp_path: Path) -> None:
    for args in (
        ("--help",),
        ("reproduce", "--help"),
        ("formats",),
        ("analyze", "--help"),
        ("watch", "--help"),
    ):
        proc = _cli(tmp_path, *args)
        assert proc.returncode == 0, (args, proc.stderr)
    assert "reproduce" in _cli(tmp_path, "--help").stdout
    assert "leaselog[lab]" in " ".join(_cli(tmp_path, "reproduce", "--help").stdout.split())
    out = tmp_path / "a.json"
    proc = _cli(tmp_path, "analyze", str(INCIDENT), "--json", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "overlapping_executions" in out.read_text(encoding="utf-8")
    proc = _cli(tmp_path, "inspect", str(INCIDENT / "pod-a.jsonl"))
    assert proc.returncode == 0, proc.stderr


def test_the_lab_is_an_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(requirements: list[str]) -> set[str]:
        return {
            r.split(";")[0].split("[")[0].split(">")[0].split("<")[0].split("=")[0].strip()
            for r in requirements
        }

    core = names(project["dependencies"])
    lab = names(project["optional-dependencies"]["lab"])
    assert core & {"redis", "python-redis-lock", "celery"} == set()
    assert {"redis", "python-redis-lock", "celery"} <= lab
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert "lab" in setup.split("extras=${LEASELOG_EXTRAS:-", 1)[1].split("}", 1)[0].split(",")
