"""Every notebook in notebooks/ runs top to bottom in a real kernel, and reaches the CLI's findings."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat import NotebookNode

from leaselog.cli import main

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SAMPLES = ROOT / "sample_logs"
WALKTHROUGH = ROOT / "notebooks" / "incident-walkthrough.ipynb"

pytestmark = pytest.mark.notebook


@pytest.fixture
def python3_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A `python3` kernelspec running this very interpreter (the one leaselog is installed in).

    Written to a private JUPYTER_PATH entry, which takes precedence over user and system kernelspecs, so a
    `python3` spec pointing at some other Python on the machine cannot hijack the run.
    """
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (leaselog tests)",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return "python3"


def _execute(path: Path, kernel: str, extra: list[str] | None = None) -> NotebookNode:
    nb = nbformat.read(path, as_version=4)
    for source in extra or []:
        nb.cells.append(nbformat.v4.new_code_cell(source))
    # run from the notebook's own folder, as Jupyter does; a failing cell raises CellExecutionError
    NotebookClient(
        nb, kernel_name=kernel, timeout=300, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return nb


def _stdout(cell: NotebookNode) -> str:
    return "".join(
        o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout"
    )


def test_there_is_a_walkthrough_notebook() -> None:
    assert WALKTHROUGH in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a notebook without code"
    for c in code:
        assert c.outputs == [] and c.execution_count is None, f"stored output in: {c.source[:60]!r}"
    assert nb.metadata.kernelspec.name == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_every_cell(path: Path, python3_kernel: str) -> None:
    nb = _execute(path, python3_kernel)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


def test_walkthrough_reaches_the_same_findings_as_the_cli(
    python3_kernel: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one extra cell reads the notebook's own analysis `a` out of the kernel
    nb = _execute(
        WALKTHROUGH,
        python3_kernel,
        extra=[
            "import json, sys\n"
            "print(json.dumps({'findings': leaselog.document(a)['findings'], 'samples': str(SAMPLES), 'python': sys.executable}))",
        ],
    )
    seen = json.loads(_stdout(nb.cells[-1]))
    assert Path(seen["samples"]) == SAMPLES
    assert Path(seen["python"]).resolve() == Path(sys.executable).resolve()

    out = tmp_path / "cli.json"
    monkeypatch.chdir(
        tmp_path
    )  # the CLI reads ./leaselog.toml when there is one; the notebook's API never does
    assert main(["analyze", str(SAMPLES), "--lease-ttl", "5s", "--json", str(out), "--quiet"]) == 0
    cli = json.loads(out.read_text())["findings"]

    def kinds(findings: list[dict[str, object]]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for f in findings:
            counts[str(f["kind"])] = counts.get(str(f["kind"]), 0) + 1
        return counts

    assert kinds(cli)["overlapping_executions"] >= 1
    assert kinds(seen["findings"]) == kinds(cli)
    assert seen["findings"] == cli


def test_walkthrough_shows_the_incident(python3_kernel: str) -> None:
    nb = _execute(WALKTHROUGH, python3_kernel)
    text = "\n".join(_stdout(c) for c in nb.cells if c.cell_type == "code")
    # the article's lesson, computed from the data: leases in different periods, executions overlapping
    assert "Two valid leases at once: False." in text
    assert "the two executions overlapped for 151.5 s" in text
    mimes = [m for c in nb.cells if c.cell_type == "code" for o in c.outputs for m in o.get("data", {})]
    assert mimes.count("application/vnd.plotly.v1+json") >= 3  # timeline, histogram, overview
