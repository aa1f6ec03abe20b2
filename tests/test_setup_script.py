"""scripts/setup.sh fails loudly: a step that cannot be done stops it with a non-zero exit and the reason.

Each case runs a copy of the script in an empty project folder (it works in the folder above its own), so
the checkout's .venv is never touched; system packages are not installed (LEASELOG_NO_APT=1). A full
install is what `bash .ci/run` does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "setup.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _run(project: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (project / "scripts").mkdir(parents=True, exist_ok=True)
    shutil.copy(SCRIPT, project / "scripts" / "setup.sh")
    full = {**os.environ, "LEASELOG_NO_APT": "1", **env}
    return subprocess.run(
        ["bash", str(project / "scripts" / "setup.sh")], env=full, capture_output=True, text=True, timeout=300
    )


def _fake_python(folder: Path, body: str) -> Path:
    """A `python3` that answers some of setup.sh's questions itself and hands the rest to this Python."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "python3"
    fake.write_text(
        f'#!/bin/sh\ncase "$*" in\n{body}\nesac\nexec "{sys.executable}" "$@"\n', encoding="utf-8"
    )
    fake.chmod(0o755)
    return fake


def test_script_parses() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


def test_no_python_is_an_error(tmp_path: Path) -> None:
    r = _run(tmp_path / "p", PYTHON="no-such-python3")
    assert r.returncode != 0
    assert "no 'no-such-python3' on PATH" in r.stderr
    assert not (tmp_path / "p" / ".venv").exists()


def test_old_python_is_an_error(tmp_path: Path) -> None:
    fake = _fake_python(
        tmp_path / "bin",
        '  *"print("*) echo 3.9; exit 0;;\n  *"version_info < (3, 11)"*) exit 1;;',
    )
    r = _run(tmp_path / "p", PYTHON=str(fake))
    assert r.returncode != 0
    assert "needs Python 3.11 or newer" in r.stderr and "is 3.9" in r.stderr


def test_python_without_venv_support_is_an_error(tmp_path: Path) -> None:
    """Debian's python3 without python3-venv has no ensurepip: say so and what to install."""
    fake = _fake_python(tmp_path / "bin", "  *ensurepip*) echo \"No module named 'ensurepip'\" >&2; exit 1;;")
    r = _run(tmp_path / "p", PYTHON=str(fake))
    assert r.returncode != 0
    assert "python3-venv" in r.stderr  # what to install (LEASELOG_NO_APT=1: nothing was installed)
    assert "cannot make a virtual environment" in r.stderr


def test_failed_pip_install_exits_non_zero(tmp_path: Path) -> None:
    """No package index reachable: pip fails, and so does setup.sh, naming the step (no `|| true`)."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "leaselog"\nversion = "0"\n',
        encoding="utf-8",
    )
    r = _run(project, PYTHON=sys.executable, PIP_NO_INDEX="1", PIP_FIND_LINKS="", PIP_CONFIG_FILE=os.devnull)
    assert r.returncode != 0
    assert "setup.sh: failed" in r.stderr and "pip install" in r.stderr
    assert "ready" not in r.stdout
