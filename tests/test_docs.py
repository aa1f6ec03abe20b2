"""The manual stays honest: every command and option of `leaselog --help` is documented in docs/CLI.md (and
nothing there is an option that no longer exists), every relative link in the README, CONTRIBUTING and
docs/ resolves (anchors included), and the README stays a front door: short, no development history."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import typer

from leaselog.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CLI_PAGE = DOCS / "CLI.md"
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]
README_MAX_LINES = 250

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HISTORY = re.compile(r"\b(?:issues?|PR|pull request)\s*#?\d+\b|\(#\d+\)", re.I)


def _options() -> dict[str, list[str]]:
    """Each command's option names as `--help` shows them (`--keep` and `--no-keep` both), `--help` aside."""
    group = typer.main.get_command(app)
    commands = getattr(group, "commands", {})
    return {
        name: [o for p in cmd.params if p.param_type_name == "option" for o in (*p.opts, *p.secondary_opts)]
        for name, cmd in commands.items()
    }


@cache
def _sections() -> dict[str, str]:
    """docs/CLI.md cut at its `## \\`leaselog NAME\\`` headings: the text of each command's section."""
    text = CLI_PAGE.read_text(encoding="utf-8")
    parts = re.split(r"^## `leaselog ([a-z-]+)`[ \t]*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_command_has_a_section() -> None:
    assert set(_sections()) == set(_options()), (
        "docs/CLI.md: one `## \\`leaselog NAME\\`` section per command"
    )


@pytest.mark.parametrize("command", sorted(_options()))
def test_every_option_is_documented(command: str) -> None:
    section = _sections().get(command, "")
    missing = [o for o in _options()[command] if not re.search(rf"`{re.escape(o)}(?![\w-])", section)]
    assert missing == [], f"docs/CLI.md, `leaselog {command}`: document {missing}"


@pytest.mark.parametrize("command", sorted(_options()))
def test_no_documented_option_is_gone(command: str) -> None:
    """The first cell of each option table row names options the command has."""
    section = _sections().get(command, "")
    rows = re.findall(r"^\| (`-.*?) \|", section, flags=re.M)
    named = {o for row in rows for o in re.findall(r"`(--?[\w-]+)", row)}
    assert named - set(_options()[command]) == set(), f"docs/CLI.md, `leaselog {command}`: options it lacks"


def _prose(text: str) -> str:
    """The text outside code blocks and code spans (where a `[x](y)` is not a link)."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@cache
def _anchors(page: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6} (.+)", line)
        if m:
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            anchors.add(slug if n == 0 else f"{slug}-{n}")
    return frozenset(anchors)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"


def test_slug_follows_github() -> None:
    assert _slug("`leaselog analyze`") == "leaselog-analyze"
    assert _slug("Machine output (`--json FILE`, `leaselog.document(a)`)") == (
        "machine-output---json-file-leaselogdocumenta"
    )


def test_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move the detail into docs/"


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "CONTRIBUTING.md"], ids=lambda p: p.name)
def test_no_development_history(page: Path) -> None:
    """Issue and pull-request numbers belong in git log, not in the README or the manual."""
    assert HISTORY.findall(page.read_text(encoding="utf-8")) == []


def _shown_runs(page: Path) -> list[tuple[str, str]]:
    """The `$ COLUMNS=N leaselog analyze ...` blocks of a page: (command line, output as shown)."""
    blocks = re.findall(
        r"^```\n(\$ COLUMNS=\d+ leaselog analyze [^\n]*)\n(.*?)^```$", page.read_text("utf-8"), re.M | re.S
    )
    return [(cmd, out) for cmd, out in blocks if "\n...\n" not in f"\n{out}"]  # not the cut ones


@pytest.mark.parametrize("cmd_out", _shown_runs(ROOT / "README.md"), ids=lambda c: c[0])
def test_readme_examples_are_real_output(cmd_out: tuple[str, str]) -> None:
    """The README's examples are what leaselog prints today (trailing spaces aside)."""
    cmd, shown = cmd_out
    width, *args = cmd.removeprefix("$ COLUMNS=").split()
    env = {**os.environ, "COLUMNS": width, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [sys.executable, "-m", "leaselog.cli", *args[1:]], cwd=ROOT, env=env, capture_output=True, text=True
    )
    printed = "\n".join(line.rstrip() for line in run.stdout.splitlines())
    assert printed == shown.rstrip("\n"), f"README.md: run `{cmd[2:]}` again and paste its output"
