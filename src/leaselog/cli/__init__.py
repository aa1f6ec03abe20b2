"""The `leaselog` command line (`leaselog.cli:main`, `python -m leaselog.cli`).

app.py          the typer app: registers each command, `main`
common.py       options analyze and watch share, parsing helpers, the `error:` line
analyze.py      `leaselog analyze` (its options are its parameters: add one there)
watch.py        `leaselog watch`
inspect.py      `leaselog formats`, `leaselog inspect`
reproduce.py    `leaselog reproduce` (scenarios, `random` and `replay` via leaselog.reproduce.lab_cli)
"""

from leaselog.cli.app import app, main

__all__ = ["app", "main"]
