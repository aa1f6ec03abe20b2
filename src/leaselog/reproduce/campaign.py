"""A randomized campaign: N lab runs from one seed, each scored against its truth, in every log shape,
with and without execution ids.

For each run: play the drawn plan on a real Redis (lab.play), render the pods' flat rows in the drawn shape
(a failover run's Redis logs beside them, as Redis wrote them) and analyze it with leaselog (clock
offsets unknown to it, default max-skew) -> score it (score.score); the same rows with every execution id
removed (`shapes.without_ids`) are scored too; a run drawn coarse is scored in whole seconds (coarse.py). Findings are held against the truth's attempts matched by
pod and time (identity.true_names), not by the ids logged.
Then the differential check: the same rows rendered in every registered shape, with ids and without, must
give the same findings (kind, true executions, pods, severity, certainty, figures within the run's
tolerance) and the same number of executions as the flat logs with ids. A run that fails keeps its folder
(flat logs, the scored shape's files, truth.json, leaselog.json, score.json) for replay; a passing run's
folder is deleted unless `keep`.
"""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from leaselog.reproduce import (
    export_shapes,  # noqa: F401  (registers the log stores' export shapes in shapes.SHAPES)
    python_shapes,  # noqa: F401  (and Python's loggers')
    shapes,
)
from leaselog.reproduce.coarse import RESOLUTION_MS, is_coarse, rendering
from leaselog.reproduce.handoffs import jobs as handoff_jobs
from leaselog.reproduce.identity import execution_count, translate, true_names, true_runs
from leaselog.reproduce.lab import draw, play
from leaselog.reproduce.plan import Plan, plan_from_dict
from leaselog.reproduce.rows import with_containers, without_ids, without_threads
from leaselog.reproduce.score import RunScore, score, tolerance
from leaselog.reproduce.server import ReproduceError, redis_target
from leaselog.reproduce.undecided import concurrent_pods, indistinct_pods

ProgressFn = Callable[[str], None]
COLUMNS = (
    "runs",
    "expected",
    "found",
    "undecided",
    "missed",
    "false",
    "uncertain",
    "figure_errors",
    "tolerated",
    "unchecked",
)
# the run kinds a campaign reports apart (Plan.kinds) and can be limited to (`only`)
RUN_KINDS = ("failover", "clock_step", "coarse")
NO_IDS = " (no ids)"  # the suffix of a rendering without execution ids
# shapes whose pod is only told from the file name once several files share one host (the app's name): a
# fleet of one pod cannot show it, and the shape then names the app as the pod
ONE_HOST_SHAPES = ("gelf-app-host",)


def flat_rows(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """pod -> the rows of its flat log (pod-*.jsonl) in `folder`."""
    return {
        f.stem: [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
        for f in sorted(folder.glob("pod-*.jsonl"))
    }


def redis_logs(folder: Path) -> list[Path]:
    """The lock's Redis's own logs in a run's folder (a failover run's Sentinel and promoted replica)."""
    return sorted(folder.glob("redis-*.log"))


def write_shape(
    rows: dict[str, list[dict[str, Any]]], shape: str, folder: Path, beside: Sequence[Path] = ()
) -> list[Path]:
    """The pods' rows rendered in `shape` into `folder`, and the files `beside` them copied as they are (a
    Redis log stays as Redis wrote it, whatever shape the workers' lines take)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, content in shapes.render(shape, rows).items():
        p = folder / name
        p.write_text(content, encoding="utf-8")
        paths.append(p)
    for f in beside:
        paths.append(Path(shutil.copyfile(f, folder / f.name)))
    return sorted(paths)


def analyze_doc(paths: Sequence[Path]) -> dict[str, Any]:
    """leaselog's JSON document for these files, as `leaselog analyze --json` writes it."""
    return analyze(paths)[0]


def analyze(paths: Sequence[Path]) -> tuple[dict[str, Any], pl.DataFrame]:
    """leaselog's JSON document for these files, and its executions (to match them to the truth)."""
    import leaselog

    a = leaselog.analyze(list(paths), keep_fields=False)
    return leaselog.document(a), a.executions


def rows_for(folder: Path, ids: bool) -> dict[str, list[dict[str, Any]]]:
    rows = flat_rows(folder)
    return rows if ids else without_ids(rows)


def judged(
    paths: Sequence[Path], truth: dict[str, Any], resolution_ms: float = 0.0
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """(leaselog's document, the same with true execution names, its number of executions of the job);
    `resolution_ms`: the files' times were truncated to that (a whole-second rendering)."""
    doc, executions = analyze(paths)
    names = true_names(truth, executions, resolution_ms)
    return doc, translate(doc, names), execution_count(executions, truth["job"])


Key = tuple[str, tuple[str, ...], str, str, tuple[str, ...]]


def signature(doc: dict[str, Any], truth: dict[str, Any]) -> dict[Key, list[float]]:
    """What must not depend on the log shape: kind, execution ids, severity, certainty and pods -> the
    figures (a shape that merges pods turns cross-pod findings into certain same-pod ones), for the run's
    job and its clean handoffs' jobs."""
    out: dict[Key, list[float]] = {}
    jobs = {truth["job"], None, *handoff_jobs(truth)}
    for f in doc["findings"]:
        if f.get("jobId") not in jobs or f["kind"] == "lease_settings":
            continue
        key = (
            f["kind"],
            tuple(f.get("executionIds") or ()),
            str(f.get("severity")),
            str(f.get("certainty")),
            tuple(sorted(f.get("pods") or ())),
        )
        out.setdefault(key, []).append(float(f["durationMs"]) if f.get("durationMs") is not None else 0.0)
    return {k: sorted(v) for k, v in out.items()}


def differences(
    ref: dict[Key, list[float]],
    got: dict[Key, list[float]],
    tol: float,
    counts: tuple[int, int] | None = None,
    attempts: int | None = None,
) -> list[str]:
    """How `got` differs from `ref`; `counts` their numbers of executions, `attempts` the truth's."""
    diffs = []
    if counts is not None and counts[0] != counts[1]:
        truly = "" if attempts is None else f" (the truth: {attempts} attempts)"
        diffs.append(f"{counts[0]} executions in flat, {counts[1]} here{truly}")
    for key in sorted(set(ref) | set(got)):
        a, b = ref.get(key, []), got.get(key, [])
        kind, ids, severity, certainty, pods = key
        label = f"{kind} {','.join(ids)} ({severity}, {certainty}, {','.join(pods)})"
        if len(a) != len(b):
            diffs.append(f"{label}: {len(a)} in flat, {len(b)} here")
        elif any(abs(x - y) > tol for x, y in zip(a, b, strict=True)):
            diffs.append(f"{label}: figures {a} in flat, {b} here")
    return diffs


def interleaved(truth: dict[str, Any]) -> bool:
    """Did two attempts of one pod run at once (then only an id or a thread tells their lines apart)?"""
    return bool(concurrent_pods(truth))


def differential(
    folder: Path,
    truth: dict[str, Any],
    names: Sequence[str] | None = None,
    ids: Sequence[bool] = (True, False),
) -> dict[str, list[str]]:
    """shape -> how its findings differ from the flat logs' with ids (only shapes that differ); a
    rendering without execution ids is named `<shape> (no ids)`. Executions are compared by their true
    names (matched by pod and time), and their number must be the same.

    A shape that logs no thread (`shapes.NO_THREAD`) is held, with ids, against the flat logs with ids and
    without their threads: an id reused by two threads of one pod (the `reused` id style) is then one
    execution by what the lines say (an id comes first; a reused id is cut only where its attempt ended,
    or by the thread). Without ids it is held against the flat logs with ids and threads, like every
    shape: the lifecycle alone must tell the runs apart."""
    tol = tolerance(truth)
    beside = redis_logs(folder)
    ref, ref_n = _reference(sorted(folder.glob("pod-*.jsonl")) + beside, truth)
    out: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="leaselog-diff-") as tmp:
        threadless = Path(tmp) / "flat-without-threads"
        ref_no_thread = _reference(
            write_shape(without_threads(rows_for(folder, True)), "flat", threadless, beside), truth
        )
        # a shape that names the pod's container knows a restart from a step: held against flat logs that
        # name it too
        contained = Path(tmp) / "flat-with-containers"
        ref_container = _reference(
            write_shape(with_containers(rows_for(folder, True)), "flat", contained, beside), truth
        )
        for with_ids in ids:
            rows = rows_for(folder, with_ids)
            for name in names or list(shapes.SHAPES):
                if (name == "flat" and with_ids) or (name in ONE_HOST_SHAPES and len(truth["moments"]) < 2):
                    continue
                reused = truth["plan"].get("id_style") == "reused"
                if (not with_ids or reused) and name in shapes.NO_THREAD and interleaved(truth):
                    continue  # no (distinct) id, no thread, two runs of one pod at once: nothing tells them apart
                label = name if with_ids else f"{name}{NO_IDS}"
                paths = write_shape(rows, name, Path(tmp) / label.replace(" ", "_"), beside)
                _d, got, n = judged(paths, truth)
                if with_ids and name in shapes.NO_THREAD:
                    want, want_n = ref_no_thread
                elif name in shapes.CONTAINER_SHAPES:
                    want, want_n = ref_container
                else:
                    want, want_n = ref, ref_n
                diffs = differences(want, signature(got, truth), tol, (want_n, n), len(true_runs(truth)))
                if diffs:
                    out[label] = diffs
    return out


def _reference(paths: Sequence[Path], truth: dict[str, Any]) -> tuple[dict[Key, list[float]], int]:
    """The signature of the flat logs at `paths` and their number of executions of the job."""
    _doc, doc, n = judged(paths, truth)
    return signature(doc, truth), n


@dataclass
class RunResult:
    plan: Plan
    score: RunScore
    shape_diffs: dict[str, list[str]]
    seconds: float
    folder: Path
    score_no_ids: RunScore | None = None  # the drawn shape without execution ids, against the same truth

    @property
    def failed(self) -> bool:
        return (
            self.score.failed
            or bool(self.shape_diffs)
            or (self.score_no_ids is not None and self.score_no_ids.failed)
        )


def score_run(
    folder: Path, truth: dict[str, Any], shape: str, work: Path | None = None, ids: bool = True
) -> tuple[RunScore, dict[str, Any]]:
    """Render the run's flat logs in `shape` (into work/shape/, default folder/shape/; without execution
    ids into work/shape-no-ids/), analyze, score against the truth's attempts (matched by pod and time).
    A coarse run (coarse.py) is rendered in whole seconds."""
    paths = write_shape(
        rendering(rows_for(folder, ids), truth, shape),
        shape,
        (work or folder) / (shape if ids else f"{shape}-no-ids"),
        redis_logs(folder),
    )
    doc, named, _n = judged(paths, truth, RESOLUTION_MS if is_coarse(truth) else 0.0)
    return score(truth, named, indistinct_pods(truth, shape, ids)), doc


def score_folder(
    folder: Path, truth: dict[str, Any], shape: str, ids: bool = True
) -> tuple[RunScore, dict[str, Any]]:
    """score_run into the run's own folder, keeping leaselog's JSON next to it (leaselog.json, and
    leaselog-no-ids.json)."""
    rs, doc = score_run(folder, truth, shape, ids=ids)
    name = "leaselog.json" if ids else "leaselog-no-ids.json"
    (folder / name).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return rs, doc


def _judge(plan: Plan, truth: dict[str, Any], folder: Path, diff: bool, started: float) -> RunResult:
    rs, _doc = score_folder(folder, truth, plan.shape)
    rs_no_ids, _doc = score_folder(folder, truth, plan.shape, ids=False)
    diffs = differential(folder, truth) if diff else {}
    result = RunResult(plan, rs, diffs, round(time.monotonic() - started, 2), folder, rs_no_ids)
    _write_score(result)
    return result


def run_one(plan: Plan, target: Any, folder: Path, diff: bool = True) -> RunResult:
    started = time.monotonic()
    truth = play(plan, target, folder)
    return _judge(plan, truth, folder, diff, started)


def rescore(folder: Path, diff: bool = True) -> RunResult:
    """Score a kept run folder again with this leaselog (after a fix), in the shape it drew."""
    started = time.monotonic()
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
    return _judge(plan_from_dict(truth["plan"]), truth, folder, diff, started)


def _write_score(r: RunResult) -> None:
    no_ids = r.score_no_ids.to_dict() if r.score_no_ids is not None else None
    (r.folder / "score.json").write_text(
        json.dumps(
            {**r.score.to_dict(), "noIds": no_ids, "shapeDiffs": r.shape_diffs, "plan": r.plan.describe()},
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )


@dataclass
class Campaign:
    seed: int
    results: list[RunResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def of_kind(self, run_kind: str | None) -> list[RunResult]:
        """The runs of one run kind (`failover`, `clock_step`), or all of them."""
        return [r for r in self.results if run_kind is None or run_kind in r.plan.kinds]

    def table(self, ids: bool = True, run_kind: str | None = None) -> list[dict[str, Any]]:
        """Per kind: runs it came up in, expected, found, missed, false, uncertain, figure errors, tolerated,
        unchecked (expected of a kind this leaselog has no check for); of the logs with execution ids, or
        (ids False) of the same logs without them; the differential check's failures as a last row."""
        rows: dict[str, Counter[str]] = {}
        results = self.of_kind(run_kind)
        for r in results:
            s = r.score if ids else r.score_no_ids
            if s is None:
                continue
            kinds = {i.kind for i in s.items} | set(s.reported)
            for kind in kinds:
                c = rows.setdefault(kind, Counter())
                c["runs"] += 1
                found, missed = s.count("found")[kind], s.count("missed")[kind]
                undecided = s.count("undecided")[kind]
                c["expected"] += found + missed + undecided
                c["found"] += found
                c["undecided"] += undecided
                c["missed"] += missed
                c["false"] += s.count("false")[kind]
                c["uncertain"] += s.uncertain[kind]
                c["figure_errors"] += s.count("figure_error")[kind]
                c["tolerated"] += s.count("tolerated")[kind]
                c["unchecked"] += s.count("unchecked")[kind]
        mine = (lambda label: not label.endswith(NO_IDS)) if ids else (lambda label: label.endswith(NO_IDS))
        diff = Counter(shape for r in results for shape in r.shape_diffs if mine(shape))
        out = [{"kind": k, **{c: rows[k][c] for c in COLUMNS}} for k in sorted(rows)]
        if diff:
            n = sum(1 for r in results if any(mine(s) for s in r.shape_diffs))
            out.append(
                {
                    "kind": "differential (shapes)" if ids else "differential (no ids vs ids)",
                    **dict.fromkeys(COLUMNS, 0),
                    "runs": n,
                    "false": sum(diff.values()),
                }
            )
        return out

    def totals(self, ids: bool = True, run_kind: str | None = None) -> dict[str, int]:
        """Against the truth, summed over kinds: runs, runs that failed it, expected, found, missed, false,
        figure errors, unchecked; then the differential check: runs where a rendering differed from the
        flat logs with ids, and how many renderings did (with ids: the other shapes; without ids: every
        shape). `run_kind`: of the runs of that kind only."""
        results = self.of_kind(run_kind)
        t = [r for r in self.table(ids, run_kind) if not r["kind"].startswith("differential")]
        sums = {
            c: sum(int(r[c]) for r in t)
            for c in ("expected", "found", "undecided", "missed", "false", "figure_errors", "unchecked")
        }
        scores = [r.score if ids else r.score_no_ids for r in results]
        sums["stepAllowed"] = sum(
            len([i for i in x.items if i.status == "step_allowed"]) for x in scores if x is not None
        )
        failed = sum(1 for x in scores if x is not None and x.failed)
        diffs = [[s for s in r.shape_diffs if s.endswith(NO_IDS) != ids] for r in results]
        return {
            "runs": len(results),
            "failedRuns": failed,
            **sums,
            "differentRuns": sum(1 for d in diffs if d),
            "differentRenderings": sum(len(d) for d in diffs),
        }

    @property
    def ok(self) -> bool:
        return not self.errors and not any(r.failed for r in self.results)

    def report(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "runs": len(self.results),
            "failedRuns": [r.plan.name for r in self.results if r.failed],
            "errors": self.errors,
            "table": self.table(),
            "tableNoIds": self.table(ids=False),
            "totals": {"ids": self.totals(), "noIds": self.totals(ids=False)},
            "byRunKind": {
                k: {
                    "ids": self.totals(True, k),
                    "noIds": self.totals(False, k),
                    "table": self.table(True, k),
                    "tableNoIds": self.table(False, k),
                    "runs": [r.plan.name for r in self.of_kind(k)],
                }
                for k in RUN_KINDS
                if self.of_kind(k)
            },
            "shapeDiffs": {r.plan.name: r.shape_diffs for r in self.results if r.shape_diffs},
            "seconds": round(sum(r.seconds for r in self.results), 1),
        }


def run_campaign(
    runs: int,
    seed: int,
    out: Path,
    *,
    redis_url: str | None = None,
    keep: bool = False,
    diff: bool = True,
    start: int = 0,
    jobs: int = 1,
    progress: ProgressFn | None = None,
    only: tuple[str, ...] = (),
    without: tuple[str, ...] = (),
) -> Campaign:
    """Runs `start` .. `start + runs - 1` of campaign `seed`; `jobs` at a time, each on its own throwaway
    redis-server (a CLIENT PAUSE must stall only its own run), or all in turn on the server at `redis_url`.
    `only` (run kinds: `failover`, `clock_step`, `coarse`): the first `runs` runs from `start` on that draw one of
    them (run i is still run i of the seed); `without`: no run draws those kinds (each run is then what
    it would be were they not in the lab)."""
    say = progress or (lambda _m: None)
    camp = Campaign(seed)
    out.mkdir(parents=True, exist_ok=True)
    jobs = 1 if redis_url else max(1, jobs)
    with contextlib.ExitStack() as stack:
        targets: queue.Queue[Any] = queue.Queue()
        for _ in range(jobs):
            targets.put(stack.enter_context(redis_target(redis_url)))

        def one(index: int) -> RunResult | str:
            plan = draw(seed, index, without=without)
            folder = out / plan.name
            if folder.exists():
                shutil.rmtree(folder)
            target = targets.get()
            try:
                return run_one(plan, target, folder, diff)
            except ReproduceError as e:
                return f"{plan.name}: {e}"
            finally:
                targets.put(target)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for got in pool.map(one, indices(seed, start, runs, only, without)):
                if isinstance(got, str):
                    camp.errors.append(got)
                    say(f"{got.splitlines()[0]} (could not run)")
                    continue
                _tell(got, say)
                camp.results.append(got)
                if not got.failed and not keep:
                    shutil.rmtree(got.folder, ignore_errors=True)
    return camp


def indices(
    seed: int, start: int, runs: int, only: tuple[str, ...] = (), without: tuple[str, ...] = ()
) -> list[int]:
    """The run indices a campaign plays: `runs` of them from `start`, only those of the `only` kinds."""
    unknown = (set(only) | set(without)) - set(RUN_KINDS)
    if unknown:
        raise ReproduceError(f"{', '.join(sorted(unknown))}: not a run kind ({', '.join(RUN_KINDS)})")
    if not only:
        return list(range(start, start + runs))
    out: list[int] = []
    i = start
    while len(out) < runs and i < start + 1000 * runs:
        if set(only) & set(draw(seed, i, without=without).kinds):
            out.append(i)
        i += 1
    return out


def _tell(r: RunResult, say: ProgressFn) -> None:
    verdict = "FAIL" if r.failed else "ok"
    say(f"{r.plan.name} {verdict} {r.seconds:.1f}s  {r.plan.describe()}")
    for label, s in (("", r.score), ("no ids: ", r.score_no_ids)):
        for i in s.items if s is not None else []:
            if i.status in ("missed", "false", "figure_error", "step_allowed"):
                say(f"    {label}{i.status} {i.kind} {','.join(i.execution_ids)}: {i.why[:160]}")
    for shape, d in r.shape_diffs.items():
        say(f"    shape {shape}: {'; '.join(d)[:200]}")
