"""Score leaselog's findings on a lab run against what really happened (the run's truth.json).

The standard is the project's (docs/TRUTH.md), per finding kind:
- expected (a miss when absent): overlapping_executions per pair of executions whose true [start, end]
  intersect; lease_outlived per execution that ran past its lease's true expiry (a late renewal success
  counts: Redis did extend the lease); renewal_failed per execution with a rejected, timed-out or errored
  renewal; stop_delayed per confirmed stop slower than the target by more than 50 ms; a stop finding but
  stop_delayed per stop never honoured; stale_release per release that deleted nothing; duplicate_effect
  per job with two accepted completions; crash_takeover per crashed execution taken over; second_attempt
  per execution that acquired after another had, with the true trigger path.
  An expected overlap or zombie no longer than the figure tolerance is optional: the logs' timestamps
  cannot show it, so its absence is no miss. A crashed execution's zombie time is right anywhere from its
  last logged moment to the kill (the logs cannot show when a process died after its last line), and is
  optional when its last logged moment is within the tolerance of its lease's expiry; the same holds for
  an overlap with a crashed execution, and a crash_takeover's figure is right from the first acquisition
  after the crashed execution's last logged moment to the first after the kill. An execution that
  released (deleted) its lease and died before it ended expects no crash_takeover. A lease
  its owner released (deleted) before it expired is not outlived by what the task does after the release.
- tolerated (neither found nor false): renewal_failed on a renewal that succeeded after the worker's
  local deadline (late: the worker treats it as failed; docs/TRUTH.md is silent), or on a renewal sent
  after its lease's true expiry (`lease_renewal_sent` in the truth: a lock library whose renewal thread
  runs on, python-redis-lock; its outcome may never have been seen); renewal_gap on an execution
  a pause, a network cut or a Redis stall hit, that had failed renewals, or whose true renewal spacing exceeded 1.5 x the interval; stop_delayed on
  a stop never honoured or within 50 ms of the target; ownership_loss_unhandled on an execution whose
  renewal truly failed and that never requested a stop (a lock library with no stop: python-redis-lock);
  completion_rejected; stale_write_accepted for a
  completion accepted after its own lease ended; release_failed where the release did not delete;
  lease_settings; concurrent_leases (outside a failover run) no longer than the time between the request
  and the line that last confirmed the earlier lease (a pod that stalled there logged its lease's end as
  much late); crash_takeover on an execution that did crash holding its lease, even when nothing took
  over (a true statement: the job was lost); second_attempt at info for an attempt the lock turned away
  or for the first execution;
  an uncertain finding below error whose figure is within max-skew + twice the largest clock offset.
- false: anything else at warning or error; and, whatever else (info too), an overlap, zombie, crash or
  concurrent lease naming an attempt that never acquired the lock, an uncertain finding at error, an uncertain
  overlap or zombie larger than max-skew + twice the largest offset, two identical findings (kind,
  executions, start, end), a negative duration (figure or message), a well-formed line counted malformed.
- figure errors: a matched figure off by more than 50 ms + twice the largest clock offset, or missing
  where the true figure exceeds that tolerance; for second_attempt the figure is the trigger path.
On a run rendered in whole seconds (coarse.py) an overlap's or a zombie's figure is judged by its range
(details.durationRangeMs must hold the truth's figure; certainty as the range allows), other figures may be
off by the resolution, and a clock_step or clock_contradiction of any level is false.
Findings are matched to the truth by the kind and the true attempts they name (`attempt-a`, `attempt-a2`:
pod A's first and second); campaign.py first rewrites leaselog's execution ids to those, matched by pod and
time (identity.py), so logs with reused ids, restarting counters or no ids at all are judged alike.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from leaselog.reproduce import coarse
from leaselog.reproduce.attempts import Attempt, attempts
from leaselog.reproduce.handoffs import jobs as handoff_jobs
from leaselog.reproduce.handoffs import unclean
from leaselog.reproduce.identity import clock_steps
from leaselog.reproduce.trouble import confirmation_lag, renewal_trouble
from leaselog.reproduce.undecided import UNDECIDED, says_undecided

STOP_SLO_MS = 5000.0  # leaselog's default --stop-slo
MAX_SKEW_MS = 250.0  # leaselog's default --max-skew
BASE_TOLERANCE_MS = 50.0
HANDOFF_STEP = "the stepped pod's clock, on a clean handoff's lines"
# kinds that say their executions ran (held a lease, overlapped, outlived it, crashed holding it)
RAN_KINDS = ("overlapping_executions", "lease_outlived", "crash_takeover", "concurrent_leases")
NOT_HONOURED = "stop_not_honoured"
# expected kinds scored only once leaselog has a check of that kind (else `unchecked`, not a miss)
NEEDS_CHECK = ("clock_step",)
NEGATIVE = re.compile(r"(?<![\w.:-])-\d+(?:\.\d+)?\s?(?:ms|s|m|h|d)\b")


@dataclass(frozen=True)
class Expected:
    kind: str
    eids: tuple[str, ...]
    figure: float | None = None
    trigger: str | None = None
    optional: bool = False
    # the least the logs can show (a crashed execution's end is known only up to its last line)
    figure_min: float | None = None
    # the true moments the figure is measured between and the pods whose clocks it reads (a clock step
    # there may move it by the step)
    span: tuple[float, float] | None = None
    pods: tuple[str, ...] = ()


@dataclass
class Item:
    """One scored thing: an expectation (found / missed / optional) or a finding (false / tolerated)."""

    kind: str
    status: str  # found|missed|optional|unchecked|false|tolerated|figure_error|step_allowed|undecided
    execution_ids: list[str]
    why: str
    truth: Any = None
    got: Any = None
    certainty: str | None = None
    severity: str | None = None


@dataclass
class RunScore:
    run: str
    items: list[Item] = field(default_factory=list)
    uncertain: Counter[str] = field(default_factory=Counter)
    reported: Counter[str] = field(default_factory=Counter)

    @property
    def failed(self) -> bool:
        return any(i.status in ("missed", "false", "figure_error") for i in self.items)

    def count(self, status: str) -> Counter[str]:
        return Counter(i.kind for i in self.items if i.status == status)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "failed": self.failed,
            "items": [asdict(i) for i in self.items],
            "uncertain": dict(self.uncertain),
        }


def max_offset(truth: dict[str, Any]) -> float:
    return float(max((abs(v) for v in truth["offsets"].values()), default=0))


def tolerance(truth: dict[str, Any]) -> float:
    """How far a figure may be off: 50 ms plus twice the largest clock offset."""
    return BASE_TOLERANCE_MS + 2 * max_offset(truth)


def skew_bound(truth: dict[str, Any]) -> float:
    """Above this an overlap or a zombie is no longer a matter of clock skew (or of a clock step)."""
    steps = max((abs(size) for _pod, _at, size in clock_steps(truth)), default=0.0)
    return MAX_SKEW_MS + 2 * max_offset(truth) + steps


def step_allowance(truth: dict[str, Any], pods: tuple[str, ...], span: tuple[float, float] | None) -> float:
    """How far clock steps may move a figure measured between the true moments `span` on `pods`' clocks:
    by each step between its two ends, and (a figure across two pods reads one pod's clock against the
    other's) by each step of either pod before its later end."""
    if span is None:
        return 0.0
    lo, hi = span
    across = len(set(pods)) > 1
    return sum(
        abs(size) for pod, at, size in clock_steps(truth) if pod in pods and at <= hi and (across or at > lo)
    )


def _failover_expectations(truth: dict[str, Any], ran: list[Attempt], tol: float) -> list[Expected]:
    """In a failover run: concurrent_leases per pair whose leases, as their own lines tell them, were
    valid at once (figure: the later acquisition to the earlier end of the two leases). Where the
    earlier one's release failed (error, timeout) inside that window the logs cannot tell whether it
    deleted the key: the figure may then be as short as from the later acquisition to that release, and
    where the release came first, the pair is optional."""
    if truth["plan"].get("fault") != "failover":
        return []
    lease = float(truth["plan"]["lease_ms"])
    out = []
    for i, a in enumerate(ran):
        for b in ran[i + 1 :]:
            vu_a, vu_b = a.valid_until(lease), b.valid_until(lease)
            if vu_a is None or vu_b is None or b.acquired is None or a.acquired is None:
                continue
            size = min(vu_a, vu_b) - b.acquired
            rel = a.first("lock_released")
            failed = rel is not None and rel.get("releaseOutcome") in ("error", "timeout")
            least = max(0.0, rel["monoMs"] - b.acquired) if rel is not None and failed else size
            if size > 0:
                span = (min(a.acquired, b.acquired), b.acquired + size)
                optional = bool(size <= tol or least <= 0.0)
                pods = (a.pod, b.pod)
                e = Expected(
                    "concurrent_leases",
                    (a.eid, b.eid),
                    size,
                    optional=optional,
                    figure_min=min(least, size),
                    span=span,
                    pods=pods,
                )
                out.append(e)
    return out


def _clock_step_expectations(truth: dict[str, Any]) -> list[Expected]:
    """clock_step per step that lies inside its pod's logged span (a lease line before it and after it),
    keyed by the pod; figure: the step's size."""
    out = []
    for pod, at, size in clock_steps(truth):
        seen = [float(m["monoMs"]) for m in truth["moments"].get(pod, [])]
        if any(t < at for t in seen) and any(t >= at for t in seen):
            out.append(Expected("clock_step", (pod,), abs(size), pods=(pod,)))
    return out


def expectations(truth: dict[str, Any]) -> list[Expected]:
    lease = float(truth["plan"]["lease_ms"])
    tol = tolerance(truth)
    ats = attempts(truth)
    ran = sorted((a for a in ats if a.acquired is not None), key=lambda a: a.acquired or 0.0)
    out: list[Expected] = []
    for i, a in enumerate(ran):
        for b in ran[i + 1 :]:
            if None in (a.start, a.end, b.start, b.end):
                continue
            lo, hi = max(a.start or 0, b.start or 0), min(a.end or 0, b.end or 0)
            if hi > lo:
                # a crashed execution shows in its log only up to its last line
                shown = min(_seen(a), _seen(b)) - lo
                low = max(0.0, shown) if a.crashed or b.crashed else None
                out.append(
                    Expected(
                        "overlapping_executions",
                        (a.eid, b.eid),
                        hi - lo,
                        optional=(hi - lo if low is None else low) <= tol,
                        figure_min=low,
                        span=(lo, hi),
                        pods=(a.pod, b.pod),
                    )
                )
    for a in ran:
        rel = a.first("lock_released")
        # a lease its owner released (the key deleted) before it expired cannot be outlived: what the task
        # does after its release is not lease-guarded work
        released_in_time = (
            rel is not None
            and rel.get("released") is True
            and (exp0 := a.expiry(rel["monoMs"], lease)) is not None
            and rel["monoMs"] <= exp0
        )
        if a.end is not None and not released_in_time:
            exp = a.expiry(a.end, lease)
            if exp is not None and a.end > exp:
                seen = max((m["monoMs"] for m in a.moments if m["monoMs"] <= a.end), default=a.end)
                low = max(0.0, seen - exp) if a.crashed else None
                out.append(
                    Expected(
                        "lease_outlived",
                        (a.eid,),
                        a.end - exp,
                        # a crashed execution's zombie shows in its log only up to its last line
                        optional=(a.end - exp if low is None else low) <= tol,
                        figure_min=low,
                        span=(exp - lease, a.end),
                        pods=(a.pod,),
                    )
                )
        if any(r["renewalOutcome"] != "success" for r in a.renewals()):
            out.append(Expected("renewal_failed", (a.eid,)))
        if a.stop_requested is not None and a.stopped is not None:
            delay = a.stopped - a.stop_requested
            if delay > STOP_SLO_MS + BASE_TOLERANCE_MS:
                out.append(
                    Expected(
                        "stop_delayed", (a.eid,), delay, span=(a.stop_requested, a.stopped), pods=(a.pod,)
                    )
                )
        if a.stop_requested is not None and a.end_event == "job_finished":
            out.append(Expected(NOT_HONOURED, (a.eid,)))
        rel = a.first("lock_released")
        if rel is not None and rel.get("released") is False:
            out.append(Expected("stale_release", (a.eid,)))
    if len(truth["effects"]) >= 2:
        out.append(Expected("duplicate_effect", tuple(truth["effects"])))
    for a in ran:
        rel = a.first("lock_released")
        if rel is not None and rel.get("released") is True:
            continue  # it released (deleted) its lease before it died: no lease to take over
        if a.crashed and a.end is not None:
            later = [b for b in ran if b is not a and (b.acquired or 0) > a.end]
            if later:
                nxt = min(later, key=lambda b: b.acquired or 0.0)
                exp = a.expiry(a.end, lease) or 0.0
                took = nxt.acquired or 0.0
                # the logs show the crash at its last line: the first acquisition after that one is a
                # takeover as far as they can tell
                seen = min(b.acquired or 0.0 for b in ran if b is not a and (b.acquired or 0) > _seen(a))
                out.append(
                    Expected(
                        "crash_takeover",
                        (a.eid, nxt.eid),
                        took - exp,
                        figure_min=min(seen, took) - exp,
                        span=(exp - lease, took),
                        pods=(a.pod, nxt.pod),
                    )
                )
    for b in ran[1:]:
        out.append(Expected("second_attempt", (b.eid,), trigger=b.path))
    return out + _failover_expectations(truth, ran, tol) + _clock_step_expectations(truth)


def _seen(a: Attempt) -> float:
    """The last moment of an attempt up to its end (a crashed one's last moment before the kill)."""
    end = a.end if a.end is not None else float("inf")
    return max((float(m["monoMs"]) for m in a.moments if m["monoMs"] <= end), default=end)


def _tolerated(f: dict[str, Any], truth: dict[str, Any], ats: dict[str, Attempt]) -> str | None:
    """Why this (unexpected) finding is tolerated, or None."""
    kind, ids = f["kind"], list(f.get("executionIds") or [])
    lease = float(truth["plan"]["lease_ms"])
    hit = [ats[e] for e in ids if e in ats]
    if kind == "lease_settings":
        return "advice"
    stepped = {pod for pod, _at, _size in clock_steps(truth)}
    if kind in ("clock_step", "clock_contradiction") and stepped & set(f.get("pods") or ()):
        return "a pod whose clock stepped"
    restarted = {
        f"pod-{x['role'].lower()}" for x in truth["faults"] if x["kind"] == "crash" and x.get("restarted")
    }
    if (
        kind == "clock_step"
        and f.get("certainty") == "uncertain"
        and (f.get("details") or {}).get("orRestartAt")
        and restarted & set(f.get("pods") or ())
    ):
        return "a restarted pod, and the finding says a restart explains the step as well"
    if kind == "completion_rejected":
        return "a fenced or duplicate completion"
    if kind == "concurrent_leases" and len(hit) == 2 and truth["plan"].get("fault") != "failover":
        lag = confirmation_lag(hit)
        fig = f.get("durationMs")
        if lag is not None and fig is not None and 0 <= fig <= lag + BASE_TOLERANCE_MS:
            return (
                f"the earlier lease's confirming line was written {lag:.0f} ms after its request: the logs "
                "place that lease's end as much later than Redis did"
            )
    if kind == "crash_takeover" and hit and hit[0].crashed and hit[0].acquired is not None:
        return "it did crash holding the lease (not taken over: the job was lost)"
    if kind == "renewal_failed" and any(r.get("late") for a in hit for r in a.renewals()):
        return "a renewal that succeeded after the local deadline (late)"
    if kind == "renewal_failed" and any(
        m.get("late") for a in hit for m in a.moments if m["event"] == "lease_renewal_sent"
    ):
        return "a renewal sent after its lease's true expiry (late, whatever came of it)"
    if kind == "ownership_loss_unhandled":
        for a in hit:
            if a.stop_requested is None and any(r["renewalOutcome"] != "success" for r in a.renewals()):
                return "a failed renewal the worker never acted on (no stop was requested)"
    if kind == "renewal_gap":
        for a in hit:
            why = renewal_trouble(a, truth)
            if why:
                return why
    if kind == "stop_delayed":
        for a in hit:
            if a.stop_requested is not None and a.end_event == "job_finished":
                return "a stop never honoured"
            delay = None if a.stop_requested is None or a.stopped is None else a.stopped - a.stop_requested
            if delay is not None and abs(delay - STOP_SLO_MS) <= BASE_TOLERANCE_MS:
                return "within 50 ms of the stop target"
    if kind == "stale_write_accepted":
        for a in hit:
            c = a.first("completion")
            if c and c.get("outcome") == "accepted":
                exp = a.expiry(c["monoMs"], lease)
                if exp is not None and c["monoMs"] > exp:
                    return "accepted after its own lease ended"
    if kind == "release_failed":
        for a in hit:
            r = a.first("lock_released")
            if r and (r.get("released") is False or r.get("releaseOutcome") in ("error", "timeout")):
                return "the release did not delete"
    if kind == "second_attempt" and f.get("severity") == "info" and hit:
        a = hit[-1]
        if a.acquired is None:
            return "an attempt the lock turned away"
        first = min((x.acquired for x in ats.values() if x.acquired is not None), default=None)
        if a.acquired == first:
            return "the first execution (earlier triggers turned away)"
    fig = f.get("durationMs")
    if (
        f.get("certainty") == "uncertain"
        and f.get("severity") != "error"
        and (fig is None or abs(fig) <= skew_bound(truth))
    ):
        return "uncertain, within the clock-offset bound"
    return None


def _matches(e: Expected, f: dict[str, Any], job: str) -> bool:
    ids = list(f.get("executionIds") or [])
    k = f["kind"]
    if e.kind == NOT_HONOURED:
        # a stop never honoured: any stop finding but stop_delayed, or an ownership loss left unhandled
        stop = (k.startswith("stop_") and k != "stop_delayed") or k == "ownership_loss_unhandled"
        return stop and e.eids[0] in ids
    if k != e.kind:
        return False
    if k in ("overlapping_executions", "concurrent_leases"):
        return set(ids) == set(e.eids)
    if k == "clock_step":
        return e.eids[0] in (f.get("pods") or ())
    if k == "duplicate_effect":
        return f.get("jobId") == job
    if k in ("crash_takeover", "lease_outlived"):
        # the execution the finding is about comes first (lease_outlived names the one that took over next)
        return ids[:1] == [e.eids[0]]
    if k == "second_attempt":
        return ids[-1:] == [e.eids[0]]
    return e.eids[0] in ids


def score(truth: dict[str, Any], doc: dict[str, Any], indistinct: frozenset[str] = frozenset()) -> RunScore:
    """Score leaselog's JSON document (`leaselog.document(a)` / `analyze --json`) against the truth;
    `indistinct`: the pods whose runs the rendering cannot tell apart (undecided.py)."""
    job = truth["job"]
    tol, bound = tolerance(truth), skew_bound(truth)
    whole = coarse.is_coarse(truth)  # rendered in whole seconds
    stepped = {pod for pod, _at, _size in clock_steps(truth)}
    findings = [f for f in doc["findings"] if f.get("jobId") in (job, None)]
    ats = {a.eid: a for a in attempts(truth)}
    from leaselog.checks import REGISTRY

    checked = {c.kind for c in REGISTRY}
    rs = RunScore(truth["run"])
    for f in findings:
        rs.reported[f["kind"]] += 1
        if f.get("certainty") == "uncertain":
            rs.uncertain[f["kind"]] += 1
    used: set[int] = set()
    wrong: dict[int, list[str]] = {}  # finding -> why it counts against the run (once, whatever the reasons)
    for e in expectations(truth):
        if whole and coarse.hidden(truth, e.kind, e.span, e.figure):
            e = replace(e, optional=True)  # the whole-second times put none of it between its moments
        hits = [i for i, f in enumerate(findings) if _matches(e, f, job)]
        used.update(hits)
        if not hits:
            status = "optional" if e.optional else "missed"
            if status == "missed" and e.kind in NEEDS_CHECK and e.kind not in checked:
                status = "unchecked"  # no check of that kind in this leaselog yet
            truth_fig = None if e.figure is None else round(e.figure, 1)
            rs.items.append(Item(e.kind, status, list(e.eids), "expected", truth_fig or e.trigger))
            continue
        got = [findings[i] for i in hits]
        if all(says_undecided(f, indistinct) for f in got):  # "cannot tell", where the logs cannot: undecided
            rs.items.append(
                Item(e.kind, "undecided", list(e.eids), UNDECIDED, e.figure, got[0].get("durationMs"))
            )
            continue
        figs = [f["durationMs"] for f in got if f.get("durationMs") is not None]
        best = min(figs, key=lambda x: abs(x - (e.figure or 0.0)), default=None)
        trig = sorted({str(f.get("trigger")) for f in got})
        truth_fig = None if e.figure is None else round(e.figure, 1)
        shown = trig if e.trigger is not None else best if e.figure is not None else None
        rs.items.append(Item(e.kind, "found", list(e.eids), "expected", truth_fig or e.trigger, shown))
        # no figure at all is an error only where the truth's figure was beyond what skewed clocks can blur
        low = e.figure if e.figure_min is None else e.figure_min
        # on a whole-second rendering an overlap's or a zombie's figure is judged by its range (coarse.py),
        # any other figure is off by up to the resolution
        ranged = whole and e.kind in coarse.RANGED_KINDS and e.figure is not None
        tol_e = tol + step_allowance(truth, e.pods, e.span) + (coarse.RESOLUTION_MS if whole else 0.0)
        off = (
            not (low - tol_e <= best <= e.figure + tol_e)
            if best is not None and e.figure is not None and low is not None
            else (e.figure or 0.0) > tol_e
        )
        if ranged:
            misses = [coarse.range_miss(f, e.figure or 0.0, e.figure_min, tol) for f in got]
            if all(misses):
                rs.items.append(Item(e.kind, "figure_error", list(e.eids), str(misses[0]), truth_fig, best))
            for i in hits:
                if (why_c := coarse.certainty_miss(findings[i], bound)) is not None:
                    wrong.setdefault(i, []).append(why_c)
        elif e.figure is not None and e.kind != NOT_HONOURED and off:
            why = f"figure off by more than {tol_e:.0f} ms"
            rs.items.append(Item(e.kind, "figure_error", list(e.eids), why, truth_fig, best))
        elif (
            best is not None
            and e.figure is not None
            and low is not None
            and not whole
            and tol_e > tol
            and not (low - tol <= best <= e.figure + tol)
        ):
            # right only because a clock step lies in the figure: said apart, so a campaign shows it
            why = f"figure off by more than {tol:.0f} ms, within the clock step ({tol_e - tol:.0f} ms)"
            rs.items.append(Item(e.kind, "step_allowed", list(e.eids), why, truth_fig, best))
        if e.trigger is not None and e.trigger not in trig:
            rs.items.append(Item(e.kind, "figure_error", list(e.eids), "wrong trigger path", e.trigger, trig))
        # (beyond the logs' millisecond resolution: a true 250.2 ms reads as 250 ms in the lines)
        skewable = (
            not ranged
            and e.kind in ("overlapping_executions", "lease_outlived")
            and (e.figure or 0.0) > bound + 1.0
        )
        for i in hits:
            if skewable and findings[i].get("certainty") == "uncertain":
                why = f"uncertain, yet {e.figure or 0.0:.0f} ms is beyond max-skew + offsets ({bound:.0f} ms)"
                wrong.setdefault(i, []).append(why)
    for i, f in enumerate(findings):
        if whole and f["kind"] in coarse.CLOCK_KINDS and not stepped & set(f.get("pods") or ()):
            # no clock stepped: times truncated to the second are no step, at any level
            wrong.setdefault(i, []).append("a clock finding on a whole-second rendering of unstepped clocks")
            continue
        if i in used:
            continue
        reason = UNDECIDED if says_undecided(f, indistinct) else _tolerated(f, truth, ats)
        if reason is None and whole and coarse.tolerated_uncertain(f, bound):
            reason = "uncertain, its range between whole-second times reaching into the clock-offset bound"
        if reason is not None:
            rs.items.append(Item(f["kind"], "tolerated", list(f.get("executionIds") or []), reason))
        elif f.get("severity") in ("warning", "error"):
            wrong.setdefault(i, []).append("not justified by the truth")
    # always wrong, matched or not
    never = {a.eid for a in ats.values() if a.acquired is None}
    seen: Counter[tuple[Any, ...]] = Counter()
    for i, f in enumerate(findings):
        if f["kind"] in RAN_KINDS and never & set(f.get("executionIds") or ()):
            # whatever its severity: an attempt that never acquired never ran
            wrong.setdefault(i, []).append("names an attempt that never acquired the lock as an execution")
        key = (
            f["kind"],
            f.get("jobId"),
            tuple(f.get("executionIds") or ()),
            f.get("start"),
            f.get("end"),
            f.get("message"),
        )
        seen[key] += 1
        if seen[key] >= 2:
            wrong.setdefault(i, []).append("two identical findings")
        if f.get("certainty") == "uncertain" and f.get("severity") == "error":
            wrong.setdefault(i, []).append("uncertain at error severity")
        fig = f.get("durationMs")
        if (fig is not None and fig < 0) or NEGATIVE.search(str(f.get("message", ""))):
            wrong.setdefault(i, []).append("a negative duration")
    for i in sorted(wrong):
        rs.items.append(_false(findings[i], "; ".join(wrong[i])))
    for f in doc["findings"]:
        if f.get("jobId") in handoff_jobs(truth):
            rs.reported[f["kind"]] += 1
            false_why = _handoff_finding(f, truth)
            if false_why is not None:
                rs.items.append(_false(f, false_why))
            elif f.get("severity") in ("warning", "error"):
                played = unclean(truth, str(f.get("jobId")))
                rs.items.append(
                    Item(
                        f["kind"],
                        "tolerated",
                        list(f.get("executionIds") or []),
                        HANDOFF_STEP if played is None else f"a handoff the run did not play clean: {played}",
                    )
                )
    malformed = int(doc.get("lines", {}).get("malformed", 0))
    if malformed:
        rs.items.append(
            Item("malformed_lines", "false", [], f"{malformed} well-formed lines counted malformed")
        )
    return rs


def _handoff_finding(f: dict[str, Any], truth: dict[str, Any]) -> str | None:
    """Why a finding on a clean handoff's job is false (None: it is not). A handoff ran one owner after
    the other, each inside its own lease: only the stepped pod's clock may be reported, at any level, and
    advice and information are no alarm."""
    stepped = {pod for pod, _at, _size in clock_steps(truth)}
    if f["kind"] in ("clock_step", "clock_contradiction") and stepped & set(f.get("pods") or ()):
        return None
    if unclean(truth, str(f.get("jobId"))) is not None:
        return None
    if f.get("severity") in ("warning", "error"):
        return "a clean handoff: one owner after the other, each inside its lease"
    return None


def _false(f: dict[str, Any], why: str) -> Item:
    return Item(
        f["kind"],
        "false",
        list(f.get("executionIds") or []),
        f"{why}: {f.get('message', '')}"[:400],
        got=f.get("durationMs"),
        certainty=f.get("certainty"),
        severity=f.get("severity"),
    )
