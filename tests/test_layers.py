"""The package's shape, read from its source: one-way layers, no import cycles, no private name used
across modules, no module over 600 lines.

The import graph is built from the AST of every module under src/leaselog, with every import counted:
module level, inside functions, and under `if TYPE_CHECKING:` (a type-only import is still a dependency of
the code's meaning, and an engine module naming an output type has the layers wrong).

Layers, lowest first; a module imports only from its own layer or lower ones:
  engine       reading, events, values, timebase, reconstruct, checks, findings, analysis, config, schema,
               durations, vocabulary, ... (everything not listed below)
  persistence  store (the folder layout; loads an Analysis back; it may import analysis, never the reverse)
  output       render/ (JSON document, figures, HTML, terminal), outputs
  facade       leaselog (the package's __init__: the notebook API re-exports engine and outputs)
  apps         watch/, reproduce/
  cli          cli/

The engine has stages of its own, in the order the data flows (`STAGES`): a module imports only from its
own stage or earlier ones, `reading/` from no later stage, and no check (`checks/llNNN_*`) from another
check; what several checks read lives below them, in `facts/`.

The lab is apart from the analyzer (`lab_violations`): only the lab (`reproduce/`) and the CLI's
`reproduce` command import `leaselog.reproduce`, only the lab imports the lab's libraries (`LAB_LIBRARIES`,
the `lab` extra: no engine, output or facade module imports redis, at any depth), and importing the shape
renderers the reader's tests use (`SHAPE_RENDERERS`) runs no import of those libraries.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 600

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (layer, module prefixes), highest first; the first match wins; the rest is the engine
    ("cli", ("leaselog.cli",)),
    ("apps", ("leaselog.watch", "leaselog.reproduce")),
    ("facade", ("leaselog",)),  # exactly the package itself (see layer_of)
    ("output", ("leaselog.render", "leaselog.outputs")),
    ("persistence", ("leaselog.store",)),
)
RANK = {"engine": 0, "persistence": 1, "output": 2, "facade": 3, "apps": 4, "cli": 5}

# The engine's stages, lowest first: (stage, module prefixes); a module is in the stage of its longest
# matching prefix, and every engine module is in one.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # data and small helpers every stage may read
    (
        "base",
        (
            "leaselog.vocabulary",
            "leaselog.durations",
            "leaselog.schema",
            "leaselog.version",
            "leaselog.values",
            "leaselog.timebase",
            "leaselog.time_resolution",
            "leaselog.write_order",
            "leaselog.thread_spellings",
            "leaselog.dialect_rows",
            "leaselog.findings",
        ),
    ),
    # the log shapes and the lock libraries' messages: tables the settings and the reader read
    ("shapes", ("leaselog.reading.formats", "leaselog.reading.dialects")),
    ("settings", ("leaselog.config",)),
    ("reading", ("leaselog.reading",)),
    ("events", ("leaselog.events",)),
    ("clocks", ("leaselog.elapsed_clock", "leaselog.clocks")),
    ("failovers", ("leaselog.failovers", "leaselog.fleet")),
    ("identity", ("leaselog.execution_runs", "leaselog.execution_keys")),
    ("ordering", ("leaselog.ordering",)),
    ("reconstruction", ("leaselog.reconstruct", "leaselog.unlogged_renewals")),
    ("facts", ("leaselog.facts",)),
    ("checks", ("leaselog.checks",)),
    ("finalize", ("leaselog.caveats", "leaselog.library_advice")),
    # the stages composed, and what reads their result
    (
        "pipeline",
        (
            "leaselog.pipeline",
            "leaselog.analysis",
            "leaselog.spark",
            "leaselog.inspection",
            "leaselog.unread",
        ),
    ),
)
STAGE_RANK = {name: i for i, (name, _) in enumerate(STAGES)}

# Known violations in files another piece of work is rewriting right now. Each entry is dated and names that
# work; the lead removes it when that work lands (the test then fails on a stale entry, so none lingers).
ALLOWED_PRIVATE: dict[tuple[str, str, str], str] = {
    # (importer, module, name): why
}
ALLOWED_SIZE: dict[str, str] = {}


@dataclass(frozen=True)
class Use:
    """One import (or private attribute use) of `importer`: the module it reaches, the name, the line."""

    importer: str
    module: str
    name: str | None
    line: int


def find_modules(src: Path) -> dict[str, Path]:
    """Every module under src/leaselog by dotted name (a package by its own name)."""
    out: dict[str, Path] = {}
    for path in sorted((src / "leaselog").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The module `name` is or lives in (`leaselog.a.b.c` -> `leaselog.a.b` when that is the module)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def uses(modules: dict[str, Path]) -> list[Use]:
    """Every leaselog import of every module (at any depth of its AST), and every `alias._private`
    attribute read through a name bound to a leaselog module."""
    found: list[Use] = []
    for mod, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        bound: dict[str, str] = {}  # local name -> leaselog module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "leaselog" or alias.name.startswith("leaselog."):
                        target = _owner(alias.name, modules)
                        if target is not None:
                            found.append(Use(mod, target, None, node.lineno))
                            bound[alias.asname or alias.name] = target if alias.asname else "leaselog"
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                if not (base == "leaselog" or base.startswith("leaselog.")):
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if full in modules:  # `from leaselog.reading import reader`: the module itself
                        found.append(Use(mod, full, None, node.lineno))
                        bound[alias.asname or alias.name] = full
                    else:
                        target = _owner(base, modules)
                        if target is not None:
                            found.append(Use(mod, target, alias.name, node.lineno))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and _private(node.attr)
            ):
                found.append(Use(mod, bound[node.value.id], node.attr, node.lineno))
    return [u for u in found if u.module != u.importer]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def graph(found: list[Use]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for u in found:
        edges.setdefault(u.importer, set()).add(u.module)
        edges.setdefault(u.module, set())
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop()
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, sorted(edges[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def layer_of(module: str) -> str:
    if module == "leaselog":
        return "facade"
    for layer, prefixes in LAYERS:
        if layer != "facade" and any(module == p or module.startswith(p + ".") for p in prefixes):
            return layer
    return "engine"


def stage_of(module: str) -> str | None:
    """The engine stage `module` is in (None: none names it)."""
    best: tuple[int, str] | None = None
    for stage, prefixes in STAGES:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[0]):
                best = (len(p), stage)
    return None if best is None else best[1]


def unstaged(modules: dict[str, Path]) -> list[str]:
    """Engine modules in no stage."""
    return sorted(m for m in modules if layer_of(m) == "engine" and stage_of(m) is None)


def stage_violations(found: list[Use]) -> list[str]:
    """An engine module importing one of a later stage."""
    out = set()
    for u in found:
        a, b = stage_of(u.importer), stage_of(u.module)
        if a is not None and b is not None and STAGE_RANK[a] < STAGE_RANK[b]:
            out.add(f"{u.importer} ({a}) imports {u.module} ({b}), line {u.line}")
    return sorted(out)


def is_check(module: str) -> bool:
    """A check's own module (`leaselog.checks.llNNN_kind`)."""
    import re

    return re.fullmatch(r"leaselog\.checks\.ll\d{3}_\w+", module) is not None


def check_violations(found: list[Use]) -> list[str]:
    """A check importing another check."""
    return sorted(
        {
            f"{u.importer} imports {u.module}, line {u.line}"
            for u in found
            if is_check(u.importer) and is_check(u.module)
        }
    )


def layer_violations(found: list[Use]) -> list[str]:
    return sorted(
        {
            f"{u.importer} ({layer_of(u.importer)}) imports {u.module} ({layer_of(u.module)}), line {u.line}"
            for u in found
            if RANK[layer_of(u.importer)] < RANK[layer_of(u.module)]
        }
    )


def private_violations(found: list[Use]) -> list[str]:
    """A `_name` imported from, or read on, another module; and a private module (`_common`) reached from
    outside the package it belongs to."""
    out: set[str] = set()
    for u in found:
        if u.name is not None and _private(u.name) and (u.importer, u.module, u.name) not in ALLOWED_PRIVATE:
            out.add(f"{u.importer} uses {u.module}.{u.name}, line {u.line}")
        leaf_package, _, leaf = u.module.rpartition(".")
        if _private(leaf) and not (u.importer == leaf_package or u.importer.startswith(leaf_package + ".")):
            out.add(f"{u.importer} imports the private module {u.module}, line {u.line}")
    return sorted(out)


def size_violations(modules: dict[str, Path], limit: int = MAX_LINES) -> list[str]:
    out = []
    for mod, path in modules.items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit and mod not in ALLOWED_SIZE:
            out.append(f"{mod}: {n} lines (at most {limit}: split it by concern)")
    return out


@pytest.fixture(scope="module")
def real() -> tuple[dict[str, Path], list[Use]]:
    modules = find_modules(SRC)
    return modules, uses(modules)


def test_the_graph_sees_every_kind_of_import(real: tuple[dict[str, Path], list[Use]]) -> None:
    modules, found = real
    assert len(modules) > 80
    edges = graph(found)
    # a module-level import, a function-level one, a TYPE_CHECKING one
    assert "leaselog.analysis" in edges["leaselog.store"]  # inside load()
    assert "leaselog.checks" in edges["leaselog.pipeline"]
    assert "leaselog.analysis" in edges["leaselog.render.document"]  # TYPE_CHECKING


def test_no_import_cycles(real: tuple[dict[str, Path], list[Use]]) -> None:
    assert cycles(graph(real[1])) == []


def test_layers_only_import_downwards(real: tuple[dict[str, Path], list[Use]]) -> None:
    assert layer_violations(real[1]) == []


def test_the_engine_imports_no_output(real: tuple[dict[str, Path], list[Use]]) -> None:
    engine = [u for u in real[1] if layer_of(u.importer) == "engine"]
    assert engine, "the engine is found"
    assert sorted({u.module for u in engine if layer_of(u.module) != "engine"}) == []


def test_every_engine_module_is_in_a_stage(real: tuple[dict[str, Path], list[Use]]) -> None:
    assert unstaged(real[0]) == []


def test_each_stage_imports_only_those_before_it(real: tuple[dict[str, Path], list[Use]]) -> None:
    assert stage_violations(real[1]) == []


def test_reading_imports_no_later_stage(real: tuple[dict[str, Path], list[Use]]) -> None:
    reading = [u for u in real[1] if u.importer.startswith("leaselog.reading")]
    assert reading, "the reader is found"
    later = {s for s, _ in STAGES[STAGE_RANK["reading"] + 1 :]}
    assert (
        sorted({u.module for u in reading if stage_of(u.module) in later or layer_of(u.module) != "engine"})
        == []
    )


def test_no_check_imports_another(real: tuple[dict[str, Path], list[Use]]) -> None:
    assert sum(is_check(m) for m in real[0]) >= 20
    assert check_violations(real[1]) == []


def test_no_private_name_across_modules(real: tuple[dict[str, Path], list[Use]]) -> None:
    assert private_violations(real[1]) == []


def test_no_module_over_600_lines(real: tuple[dict[str, Path], list[Use]]) -> None:
    assert size_violations(real[0]) == []


def test_every_allowance_is_still_needed(real: tuple[dict[str, Path], list[Use]]) -> None:
    modules, found = real
    used = {(u.importer, u.module, u.name) for u in found}
    stale = [k for k in ALLOWED_PRIVATE if k not in used]
    small = [m for m in ALLOWED_SIZE if len(modules[m].read_text(encoding="utf-8").splitlines()) <= MAX_LINES]
    assert stale == [] and small == [], "the work named in the entry landed: remove the allowance"


# the lab apart from the analyzer

LAB = "leaselog.reproduce"
LAB_ENTRY = ("leaselog.cli.reproduce",)  # the command that opens the lab (its imports run when it runs)
LAB_LIBRARIES = ("redis", "redis_lock", "celery", "kombu")  # the `lab` extra's packages
# pure renderers of the log shapes (the reader's tests and the lab write with them): imported without Redis
SHAPE_RENDERERS = (
    "leaselog.reproduce.shapes",
    "leaselog.reproduce.export_shapes",
    "leaselog.reproduce.python_shapes",
    "leaselog.reproduce.render_jvm",
    "leaselog.reproduce.rows",
)


def _in_lab(module: str) -> bool:
    return module == LAB or module.startswith(LAB + ".")


@dataclass(frozen=True)
class LibraryUse:
    """An import of a package outside leaselog (`package` is its top-level name)."""

    importer: str
    package: str
    line: int
    on_import: bool  # runs when the importer is imported (not in a function, not under TYPE_CHECKING)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(body: list[ast.stmt], on_import: bool) -> list[tuple[ast.stmt, bool]]:
    """Every statement under `body`, with whether it runs when the module is imported."""
    out: list[tuple[ast.stmt, bool]] = []
    for node in body:
        out.append((node, on_import))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out += _statements(node.body, False)
        elif isinstance(node, ast.If):
            out += _statements(node.body, on_import and not _is_type_checking(node.test))
            out += _statements(node.orelse, on_import)
        else:
            for field in ("body", "orelse", "finalbody"):
                out += _statements(getattr(node, field, []), on_import)
            for handler in getattr(node, "handlers", []):
                out += _statements(handler.body, on_import)
    return out


def library_uses(modules: dict[str, Path]) -> list[LibraryUse]:
    """Every import of a package outside leaselog, at any depth."""
    found: list[LibraryUse] = []
    for mod, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, on_import in _statements(tree.body, True):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "leaselog":
                    found.append(LibraryUse(mod, top, node.lineno, on_import))
    return found


def import_time_edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the leaselog modules its import runs (module-level imports outside TYPE_CHECKING, and the
    packages a module lives in, which Python imports first)."""
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        parent = mod.rpartition(".")[0]
        if parent in modules:
            edges[mod].add(parent)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        package = mod if path.name == "__init__.py" else parent
        for node, on_import in _statements(tree.body, True):
            if not on_import:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [base, *(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules)]
            for name in targets:
                target = _owner(name, modules) if name.split(".")[0] == "leaselog" else None
                if target is not None and target != mod:
                    edges[mod].add(target)
    return edges


def lab_violations(modules: dict[str, Path], found: list[Use], libraries: list[LibraryUse]) -> list[str]:
    out: set[str] = set()
    for u in found:
        if _in_lab(u.module) and not _in_lab(u.importer) and u.importer not in LAB_ENTRY:
            out.add(f"{u.importer} imports the lab ({u.module}), line {u.line}")
    for lib in libraries:
        if lib.package in LAB_LIBRARIES and not _in_lab(lib.importer):
            out.add(f"{lib.importer} imports the lab's {lib.package}, line {lib.line}")
    edges = import_time_edges(modules)
    on_import = {}
    for lib in libraries:
        if lib.on_import and lib.package in LAB_LIBRARIES:
            on_import.setdefault(lib.importer, lib)
    for renderer in SHAPE_RENDERERS:
        if renderer not in modules:
            continue
        seen, todo = {renderer}, [renderer]
        while todo:
            m = todo.pop()
            if m in on_import:
                lib = on_import[m]
                out.add(f"importing {renderer} imports {lib.package} ({m}, line {lib.line})")
            for n in sorted(edges.get(m, set()) - seen):
                seen.add(n)
                todo.append(n)
    return sorted(out)


def test_the_lab_is_apart_from_the_analyzer(real: tuple[dict[str, Path], list[Use]]) -> None:
    modules, found = real
    libraries = library_uses(modules)
    # the scanner sees the lab's own imports of its libraries, and the renderers it checks exist
    assert {lib.package for lib in libraries if _in_lab(lib.importer)} >= {"redis", "redis_lock", "celery"}
    assert all(r in modules for r in SHAPE_RENDERERS)
    assert lab_violations(modules, found, libraries) == []


# each rule on a small made-up package, so that every one of them is seen to fail


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        path = tmp_path / "leaselog" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return find_modules(tmp_path)


def test_a_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "config.py": "def f():\n    from leaselog.events import X\n",
            "events.py": "from leaselog.config import f\n",
            "durations.py": "",
        },
    )
    assert cycles(graph(uses(modules))) == [["leaselog.config", "leaselog.events"]]


def test_an_engine_module_importing_an_output_is_found(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "analysis.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from leaselog.render.figures import F\n",
            "render/__init__.py": "",
            "render/figures.py": "from leaselog.analysis import Analysis\n",
            "store.py": "import leaselog.cli.app\n",
            "cli/__init__.py": "",
            "cli/app.py": "from leaselog import store\n",
        },
    )
    found = uses(modules)
    assert [v.split(",")[0] for v in layer_violations(found)] == [
        "leaselog.analysis (engine) imports leaselog.render.figures (output)",
        "leaselog.store (persistence) imports leaselog.cli.app (cli)",
    ]


def test_stage_and_check_violations_are_found(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "config.py": "",
            "reading/__init__.py": "",
            "reading/reader.py": "def f():\n    from leaselog.events import X\n",
            "events.py": "from leaselog.reading.reader import f\n",
            "checks/__init__.py": "",
            "checks/ll701_lease_settings.py": "from leaselog.checks.ll102_lease_outlived import zombies\n",
            "checks/ll102_lease_outlived.py": "def zombies(): ...\n",
            "checks/frames.py": "",
            "stray.py": "",
        },
    )
    found = uses(modules)
    assert [v.split(",")[0] for v in stage_violations(found)] == [
        "leaselog.reading.reader (reading) imports leaselog.events (events)"
    ]
    assert [v.split(",")[0] for v in check_violations(found)] == [
        "leaselog.checks.ll701_lease_settings imports leaselog.checks.ll102_lease_outlived"
    ]
    assert unstaged(modules) == ["leaselog.stray"]


def test_private_names_across_modules_are_found(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "reading/__init__.py": "",
            "reading/reader.py": "def _open_binary(): ...\n",
            "reading/inspect.py": "from leaselog.reading.reader import _open_binary\n",
            "reading/formats/__init__.py": "from leaselog.reading.formats._common import Record\n",
            "reading/formats/_common.py": "Record = 1\n",
            "cli.py": "import leaselog.reading.reader as r\nr._open_binary()\nfrom leaselog.reading.formats._common import Record\n",
        },
    )
    assert [v.split(",")[0] for v in private_violations(uses(modules))] == [
        "leaselog.cli imports the private module leaselog.reading.formats._common",
        "leaselog.cli uses leaselog.reading.reader._open_binary",
        "leaselog.reading.inspect uses leaselog.reading.reader._open_binary",
    ]


def test_a_module_over_the_limit_is_found(tmp_path: Path) -> None:
    modules = _package(tmp_path, {"__init__.py": "", "big.py": "x = 1\n" * 601, "fine.py": "x = 1\n" * 600})
    assert size_violations(modules) == ["leaselog.big: 601 lines (at most 600: split it by concern)"]


def test_the_lab_reached_from_the_analyzer_is_found(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "__init__.py": "import leaselog.events\n",
            "events.py": "def f():\n    import redis\n",
            "render/__init__.py": "",
            "render/html.py": "from leaselog.reproduce.shapes import SHAPES\n",
            "watch/__init__.py": "from redis.client import Redis\n",
            "cli/__init__.py": "",
            "cli/reproduce.py": "def run():\n    from leaselog.reproduce import scenarios\n",
            "reproduce/__init__.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from leaselog.reproduce.scenarios import S\n"
            ),
            "reproduce/scenarios.py": "import redis\n",
            "reproduce/shapes.py": "from leaselog.reproduce.rows import Row\n",
            "reproduce/rows.py": "from leaselog.reproduce import server\n",
            "reproduce/server.py": "try:\n    import redis\nexcept ImportError:\n    pass\n",
            "reproduce/export_shapes.py": "def f():\n    import redis\n",
            "reproduce/python_shapes.py": "from leaselog.reproduce import shapes\n",
        },
    )
    assert [v.split(",")[0] for v in lab_violations(modules, uses(modules), library_uses(modules))] == [
        "importing leaselog.reproduce.python_shapes imports redis (leaselog.reproduce.server",
        "importing leaselog.reproduce.rows imports redis (leaselog.reproduce.server",
        "importing leaselog.reproduce.shapes imports redis (leaselog.reproduce.server",
        "leaselog.events imports the lab's redis",
        "leaselog.render.html imports the lab (leaselog.reproduce.shapes)",
        "leaselog.watch imports the lab's redis",
    ]


# the repository is complete on its own: the code cites the documents it has, and nothing outside it

REPO = SRC.parent
DOCS = ("PRODUCT", "FORMATS", "TRUTH", "INCIDENT", "STYLE")
ALLOWED_CITATION: dict[str, str] = {}


def citation_violations(root: Path) -> list[str]:
    """A document of docs/ cited without its folder (`PRODUCT.md` instead of `docs/PRODUCT.md`)."""
    import re

    bare = re.compile(r"(?<![\w/\"'])(" + "|".join(DOCS) + r")\.md")
    out = []
    for path in sorted((root / "src").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            hit = bare.search(line)
            if hit is not None:
                out.append(f"{rel}:{n}: cite docs/{hit.group(0)}")
    return out


def outside_references(root: Path) -> list[str]:
    """Paths that reach out of the repository: a sibling checkout, or an absolute folder of some machine."""
    needles = ("../" + "shared", "/" + "work/", "/" + "home/")
    out = []
    for folder in ("src", "tests", "bench", ".ci"):
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".gz", ".pyc"):
                continue
            if path.relative_to(root).parts[:2] in (("bench", "data"), ("bench", "results")):
                continue  # the bench's inputs and measurements on this machine (git-ignored), not the code
            text = path.read_text(encoding="utf-8", errors="replace")
            out += [f"{path.relative_to(root)}: {n}" for n in needles if n in text]
    return out


def test_code_cites_the_documents_in_docs() -> None:
    assert all((REPO / "docs" / f"{d}.md").is_file() for d in DOCS if d != "STYLE")
    found = citation_violations(REPO)
    assert [v for v in found if v.split(":")[0] not in ALLOWED_CITATION] == []
    stale = [f for f in ALLOWED_CITATION if not any(v.startswith(f + ":") for v in found)]
    assert stale == [], "the work named in the entry landed: remove the allowance"


def test_nothing_refers_outside_the_repository() -> None:
    assert outside_references(REPO) == []


def test_the_repository_rules_can_fail(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("# as FORMATS.md says; see docs/FORMATS.md\n", encoding="utf-8")
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "run.py").write_text("DATA = '../" + "shared/x'\n", encoding="utf-8")
    assert citation_violations(tmp_path) == ["src/m.py:1: cite docs/FORMATS.md"]
    assert outside_references(tmp_path) == ["bench/run.py: ../" + "shared"]
    (tmp_path / "bench" / "results").mkdir()
    (tmp_path / "bench" / "results" / "r.json").write_text('{"input": "/' + 'work/x"}', encoding="utf-8")
    assert outside_references(tmp_path) == ["bench/run.py: ../" + "shared"]
