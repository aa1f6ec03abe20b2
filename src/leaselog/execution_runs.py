"""Executions the logs do not name: runs cut out of (job, pod, thread) by the lifecycle.

An explicit execution id comes first. A line without one belongs to the run of its job on its pod and
thread (or worker process) that the lifecycle says is going on:

- an attempt **begins** at a trigger, an acquisition or a denial (a start with no acquisition logged
  begins one too);
- it **ends** at its release, its finish or its stop; the next begin on the same key after an end is a
  new execution, and so is an acquisition (or a start) while a run is still going on: the earlier run's
  end was not logged (a crash, a lost line);
- a denial after a trigger, then an acquisition, is one attempt that waited for the lock; a denied attempt
  never runs, so a release, renewal or finish logged after a denial, with no acquisition between, is the
  earlier run's (two runs interleaved on a pod that logs no thread);
- a thread that logs no begin of the job (a lease-renewer or watchdog thread) works for a run of another
  thread: its lines join the run of that job and pod that holds the lease they name (owner, fencing
  token), else the one going on at that moment.

Inferred executions are named `job@pod#n`, numbered in time order per job and pod: the same names in every
output and on every engine, as all of a job's events are identified together. An explicit id that comes
back after its execution ended (ids counted per process, a redelivery to the same worker) is split the
same way: `id`, then `id#2`, ...

Where the logs cannot tell runs apart (no id, no thread, and a run's events after another run began: two
finishes in what reads as one run), the runs involved are marked: what depends on them is uncertain.

The `identity` column says how each event's execution was identified: an index into `IDENTITIES`.
"""

from __future__ import annotations

import polars as pl

from leaselog.write_order import time_order

# how an execution was identified (the events' and executions' `identity` code indexes this)
IDENTITIES: tuple[str, ...] = (
    "id",  # its executionId
    "id+pod",  # its executionId, logged on several pods: one execution per pod (`id@pod`)
    "id+sequence",  # its executionId, reused after that execution ended (`id#2`, ...)
    "pod+thread+sequence",  # no id: job, pod and thread, cut into runs by the lifecycle
    "pod+sequence",  # no id and no thread: job and pod, cut into runs by the lifecycle
    "pod+sequence (runs not told apart)",  # as above, and the logs cannot tell two runs apart
    "id+sequence (runs not told apart)",  # one id reused by two runs at once, no thread: not told apart
)
ID, ID_POD, ID_SEQUENCE, POD_THREAD, POD, UNTOLD, ID_UNTOLD = range(len(IDENTITIES))
UNTOLD_NAMES = (IDENTITIES[UNTOLD], IDENTITIES[ID_UNTOLD])

# lifecycle states, as codes (0: nothing yet on this key)
_TRIGGER, _ACQUIRE, _START, _END, _DENY, _DENY_WAITING = 1, 2, 3, 4, 5, 6
_STATE_OF = {
    "job_triggered": _TRIGGER,
    "lock_acquired": _ACQUIRE,
    "job_started": _START,
    "job_finished": _END,
    "job_stopped": _END,
    "lock_released": _END,
    "lock_denied": _DENY,
}
_BEGINS = ("job_triggered", "lock_acquired", "lock_denied", "job_started")
_RAN = ("lock_acquired", "lock_denied", "job_started")
# what only a run that holds the lock logs: after a denial (and no acquisition) it is another run's
_RUN_EVENTS = (
    "lease_renewal",
    "job_progress",
    "job_finished",
    "job_stopped",
    "lock_released",
    "completion",
    "ownership_lost",
    "job_stop_requested",
)
_KEY = "_key"


def identity_names() -> pl.Expr:
    """The `identity` code as its name (for the executions frame and the outputs)."""
    return pl.col("identity").replace_strict(
        dict(enumerate(IDENTITIES)), default=None, return_dtype=pl.String
    )


GIVEN_SCHEMA = {"job_id": pl.String(), "pod": pl.String(), "_given": pl.Int64()}


def identify_executions(
    events: pl.DataFrame, given: pl.DataFrame | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`events` (in `seq` order) with every execution named: runs cut out of the rows build_events left
    without an id (`identity` POD), and explicit ids reused after their execution ended split. The
    remarks (REMARKS_SCHEMA; `identity_notes` words them) say where an earlier run's end was not logged
    and where runs cannot be told apart. `given` (GIVEN_SCHEMA): per job and pod, the numbers `#n` already
    given to runs no longer among `events` (a watch that forgot them): these runs are numbered after."""
    none = pl.DataFrame(schema=REMARKS_SCHEMA)
    if not events.height:
        return events, none
    inferred = events["identity"] == POD
    reused = _reused_ids(events.filter(~inferred)) if not inferred.all() else pl.DataFrame()
    if not inferred.any() and not reused.height:
        return events, none
    frame = events.select(
        "job_id",
        "execution_id",
        "pod",
        "thread",
        "event",
        "t",
        "seq",
        "file",
        "line",
        "owner",
        "fencing_token",
        "identity",
        *(["clock_step_ms"] if "clock_step_ms" in events.columns else []),
    ).with_row_index("_row")
    parts: list[pl.DataFrame] = []
    remarks = none
    if inferred.any():
        named, remarks = _inferred(frame.filter(pl.col("identity") == POD), given)
        parts.append(named)
    if reused.height:
        split, told = _split_reused(frame.join(reused, on=["job_id", "execution_id"], how="semi"))
        parts.append(split)
        remarks = pl.concat([remarks, told])
    changes = pl.concat(parts)
    # set in place of the two columns (a join would copy every column of the wide events frame)
    ids, codes = events["execution_id"].clone(), events["identity"].clone()
    ids.scatter(changes["_row"], changes["_name"])
    codes.scatter(changes["_row"], changes["_identity"])
    return events.with_columns(ids, codes), remarks


# -- the lifecycle, vectorised --------------------------------------------------------------------------


def _key_start(keys: list[str]) -> pl.Expr:
    """True on the first row of each key, in a frame sorted by the keys."""
    start = pl.lit(False)
    for k in keys:
        start = start | pl.col(k).ne_missing(pl.col(k).shift(1)).fill_null(True)
    return start


def _states(frame: pl.DataFrame, keys: list[str], *, lenient: bool) -> pl.DataFrame:
    """`frame` sorted by (keys, t, seq) with `_seg`: a run number, new at each begin the lifecycle says
    starts a run; `_unlogged`: that begin came while the run before it was still going on.

    `lenient` (no id) also cuts at an acquisition or a start while a run is going on; with an explicit
    id only a begin after an end cuts. Each row's state is the last lifecycle event before it on its key,
    so the state machine is two forward fills, not a loop.
    """
    f = frame.sort([*keys, "t", "seq"])
    key_start = _key_start(keys)
    f = f.with_columns(key_start.alias("_ks"))
    ks = pl.col("_ks")
    own = pl.col("event").replace_strict(_STATE_OF, default=None, return_dtype=pl.Int8)
    if "_orphan" in f.columns:  # another run's lines: they move no state of this key
        own = pl.when(pl.col("_orphan")).then(None).otherwise(own)

    def before(state: pl.Expr) -> pl.Expr:
        filled = pl.when(ks & state.is_null()).then(pl.lit(0, pl.Int8)).otherwise(state).forward_fill()
        return pl.when(ks).then(pl.lit(0, pl.Int8)).otherwise(filled.shift(1))

    def before_struct(value: pl.Expr) -> pl.Expr:
        # the last non-null `value` before each row on its key (null at a key's first row)
        filled = pl.when(ks).then(value).otherwise(value.forward_fill())
        return pl.when(ks).then(None).otherwise(filled.shift(1))

    f = f.with_columns(own.alias("_own")).with_columns(before(pl.col("_own")).alias("_prev"))
    # a denial after a trigger is an attempt waiting for the lock: its acquisition is the same attempt
    f = f.with_columns(
        pl.when((pl.col("_own") == _DENY) & (pl.col("_prev") == _TRIGGER))
        .then(pl.lit(_DENY_WAITING, pl.Int8))
        .otherwise(pl.col("_own"))
        .alias("_own")
    ).with_columns(before(pl.col("_own")).alias("_prev"))
    ev, prev = pl.col("event"), pl.col("_prev")
    running = prev.is_in([_ACQUIRE, _START])
    if lenient:
        cut = (
            (ev == "job_triggered")
            | ((ev == "lock_acquired") & prev.is_in([_ACQUIRE, _START, _END, _DENY]))
            | ((ev == "lock_denied") & prev.is_in([_ACQUIRE, _START, _END, _DENY, _DENY_WAITING]))
            | ((ev == "job_started") & prev.is_in([_START, _END]))
        )
    else:
        # an explicit id is cut only where its attempt is over: a begin after an end; a trigger after a
        # denial (the attempt the lock turned away is over; a waiting one logs no new trigger) or while
        # it runs (a pod restarted after a crash, its scheduler firing again under the same id); a denial
        # while it runs (the lock never turns its own holder away: another attempt under the same id)
        # (those two also after the line before them in its file's order: a clock stepped back between
        # two lines of one attempt never cuts it)
        at = before_struct(pl.when(pl.col("_own").is_not_null()).then(pl.struct("file", "line", "seq")))
        # (later in the order the file was written: a file listed newest first, a Loki export, numbers
        # its lines backwards in time; records of one line, an OTLP batch, come in the order they were
        # read; a pod's lines sorted by their times, a Loki export or kubectl --prefix, are in no write
        # order: their time, a step undone by elapsedMs, orders them)
        f = f.join(_newest_first(f), on="file", how="left", maintain_order="left")
        f = f.join(
            _by_time(f), on=["file", "pod"], how="left", nulls_equal=True, maintain_order="left"
        ).with_columns(pl.col("_by_time").fill_null(False))
        ahead = pl.when(pl.col("_newest_first")).then(-pl.col("line")).otherwise(pl.col("line"))
        ahead_at = (
            pl.when(pl.col("_newest_first")).then(-at.struct.field("line")).otherwise(at.struct.field("line"))
        )
        later = (
            (pl.col("file") != at.struct.field("file"))
            | (ahead > ahead_at)
            | ((pl.col("line") == at.struct.field("line")) & (pl.col("seq") > at.struct.field("seq")))
            | pl.col("_by_time")
        )
        cut = (ev.is_in(_BEGINS) & (prev == _END)) | (
            later.fill_null(True)
            & (
                ((ev == "job_triggered") & prev.is_in([_DENY, _DENY_WAITING, _ACQUIRE, _START]))
                | ((ev == "lock_denied") & prev.is_in([_ACQUIRE, _START]))
            )
        )
    if "_orphan" in f.columns:
        cut = cut & ~pl.col("_orphan")
    begin = ks | cut
    return f.with_columns(
        begin.cum_sum().cast(pl.Int64).alias("_seg"),
        (cut & running).alias("_unlogged"),
    ).drop("_ks", "_own", "_prev", "_newest_first", "_by_time", strict=False)


def _newest_first(f: pl.DataFrame) -> pl.DataFrame:
    """(file, `_newest_first`): whether each file lists its lines newest first, as the events' order in
    time (`seq`) walks its line numbers backwards more often than forwards."""
    step = pl.col("line").diff()
    return (
        f.select("file", "line", "seq")
        .sort("file", "seq")
        .group_by("file")
        .agg(((step < 0).sum() > (step > 0).sum()).alias("_newest_first"))
    )


def _reused_ids(events: pl.DataFrame) -> pl.DataFrame:
    """(job_id, execution_id) of explicit ids with a begin logged after their first end (or a trigger after
    their first denial, acquisition or start), or acquired (or
    denied) on two threads (a redelivery to another consumer of the same pod, under the same id, or a
    second scheduler thread turned away under the running attempt's id): one group-by on a
    hash of the key over the begin and end lines only, so the row-level split runs only for them (none,
    in most logs). A hash collision can only cause that work."""
    ev = pl.col("event")
    begin = ev.is_in(["job_triggered", "lock_acquired", "lock_denied"])
    end = ev.is_in(["job_finished", "job_stopped", "lock_released"])
    key = pl.struct("job_id", "execution_id").hash()
    hits = (
        events.lazy()
        .filter(begin | end | (ev == "job_started"))
        .group_by(key.alias("k"))
        .agg(
            pl.col("t").filter(begin).max().alias("b"),
            pl.col("t").filter(end).min().alias("e"),
            pl.col("t").filter(ev == "job_triggered").max().alias("bt"),
            pl.col("t").filter(ev.is_in(["lock_denied", "lock_acquired", "job_started"])).min().alias("d"),
            pl.col("t").filter(ev == "lock_denied").max().alias("dd"),
            pl.col("t").filter(ev.is_in(["lock_acquired", "job_started"])).min().alias("ran"),
            pl.col("thread").filter(ev.is_in(_RAN)).drop_nulls().n_unique().alias("threads"),
        )
        .filter(
            (pl.col("b") > pl.col("e"))
            | (pl.col("bt") > pl.col("d"))
            | (pl.col("dd") > pl.col("ran"))
            | (pl.col("threads") > 1)
        )
        .select("k")
        .collect()
    )
    if not hits.height:
        return pl.DataFrame(schema={"job_id": pl.String(), "execution_id": pl.String()})
    return (
        events.lazy()
        .filter(key.is_in(hits["k"].implode()))
        .select("job_id", "execution_id")
        .unique()
        .collect()
    )


def _split_reused(frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`id`, `id#2`, ... for each run of a reused id, by thread and lifecycle: (`_row`, `_name`,
    `_identity`), remarks (none: an id's runs are never confused)."""
    # a thread that only triggers it (a listener handing the work to a worker thread) is no run of its own
    runs, segments = _runs(frame, ["job_id", "execution_id"], lenient=False, begins=_RAN)
    n = pl.col("_n")
    named = segments.with_columns(
        pl.when(n == 1)
        .then(pl.col("execution_id"))
        .otherwise(pl.format("{}#{}", "execution_id", n))
        .alias("_name"),
        pl.when(pl.col("_untold"))
        .then(pl.lit(ID_UNTOLD, pl.Int8))
        .otherwise(pl.lit(ID_SEQUENCE, pl.Int8))
        .alias("_identity"),
    )
    out = runs.join(named.select("_seg", "_name", "_identity"), on="_seg").drop("_seg")
    untold = named.filter(pl.col("_untold")).select(
        pl.lit("untold_id").alias("kind"), "job_id", "pod", pl.col("_name").alias("execution_id")
    )
    return out, untold.cast(REMARKS_SCHEMA)  # type: ignore[arg-type]


def _inferred(frame: pl.DataFrame, given: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Runs of (job, pod, thread) for the rows without an id: (`_row`, `_name`, `_identity`), remarks;
    numbered after the `given` numbers of their job and pod."""
    runs, segments = _runs(frame, ["job_id", "pod"], lenient=True)
    if given is not None and given.height:
        segments = segments.join(
            given.cast(GIVEN_SCHEMA),  # type: ignore[arg-type]
            on=["job_id", "pod"],
            how="left",
            nulls_equal=True,
            maintain_order="left",
        ).with_columns((pl.col("_n") + pl.col("_given").fill_null(0)).alias("_n"))
    n = pl.col("_n")
    name = (
        pl.when(pl.col("pod").is_null())
        .then(pl.format("{}#{}", "job_id", n))
        .otherwise(pl.format("{}@{}#{}", "job_id", "pod", n))
    )
    segments = segments.with_columns(
        name.alias("_name"),
        pl.when(pl.col("_untold"))
        .then(pl.lit(UNTOLD, pl.Int8))
        .when(pl.col("thread").is_not_null())
        .then(pl.lit(POD_THREAD, pl.Int8))
        .otherwise(pl.lit(POD, pl.Int8))
        .alias("_identity"),
    )
    out = runs.join(segments.select("_seg", "_name", "_identity"), on="_seg").drop("_seg")
    return out, _remarks(segments)


def _runs(
    frame: pl.DataFrame, base: list[str], *, lenient: bool, begins: tuple[str, ...] = _BEGINS
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The runs of each `base` key (job and pod, or job and id) and thread: (`_row`, `_seg`) for every
    row, and one row per run (`_segments`), numbered `_n` in time order per base key."""
    cols = dict.fromkeys(
        ["_row", *base, "pod", "thread", "event", "t", "seq", "file", "line", "owner", "fencing_token"]
        + (["clock_step_ms"] if "clock_step_ms" in frame.columns else [])
    )
    f = frame.select(list(cols))
    keys = [*base, "thread"]
    # a thread that logs no begin of its job works for another thread's run (a renewer, a watchdog)
    has_begin = f.group_by(keys).agg(pl.col("event").is_in(begins).any().alias("_has_begin"))
    f = f.join(has_begin, on=keys, how="left", nulls_equal=True)
    helpers = f.filter(~pl.col("_has_begin") & pl.col("thread").is_not_null()).drop("_has_begin")
    own = f.filter(pl.col("_has_begin") | pl.col("thread").is_null()).drop("_has_begin")
    # a denied attempt never runs: what a run logs after a denial, with no acquisition between, is the
    # run before it (interleaved lines on a pod without threads)
    own = _orphans(own, keys)
    runs = _states(own, keys, lenient=lenient)
    runs = _adopt_orphans(runs, keys)
    runs = _rehome_interleaved(runs)
    segments = _segments(runs, base)
    if helpers.height:
        runs = pl.concat([runs.select("_row", "_seg"), _attach_helpers(helpers, segments, base)])
    return runs.select("_row", "_seg"), segments


def _orphans(f: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """`_orphan`: a run's line after a denial with no acquisition or start since (on its key)."""
    f = f.sort([*keys, "t", "seq"])
    ks = _key_start(keys)
    ev = pl.col("event")
    last_begin = pl.when(ev.is_in(_BEGINS)).then(ev).when(ks).then(pl.lit("")).otherwise(None).forward_fill()
    return f.with_columns(((last_begin == "lock_denied") & ev.is_in(_RUN_EVENTS)).alias("_orphan"))


def _adopt_orphans(runs: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Orphan lines join the last run of their key that acquired or started before them."""
    ks = _key_start(keys)
    ran = pl.col("event").is_in(["lock_acquired", "job_started"]) & ~pl.col("_orphan")
    last_run = (
        pl.when(ran).then(pl.col("_seg")).when(ks).then(pl.lit(-1, pl.Int64)).otherwise(None).forward_fill()
    )
    return runs.with_columns(
        pl.when(pl.col("_orphan") & (last_run >= 0)).then(last_run).otherwise(pl.col("_seg")).alias("_seg")
    )


def _by_time(f: pl.DataFrame) -> pl.DataFrame:
    """(file, pod, `_by_time`): whether the pod's lines in the file are in the order of their logged times
    (`leaselog.write_order.time_order`): sorted by time, not written in order."""
    logged = pl.col("t")
    if "clock_step_ms" in f.columns:
        undone = (pl.col("clock_step_ms").fill_null(0.0) * 1000).round(0).cast(pl.Int64)
        logged = logged + pl.duration(microseconds=undone)
    x = (
        f.select("file", "pod", "line", "seq", logged.alias("t"), "event", "thread")
        .with_columns(pl.struct("file", "pod").alias("_f"))
        .sort("file", "pod", "line", "seq")
        .with_row_index("_pos")
    )
    return (
        time_order(x)
        .join(x.select("_f", "file", "pod").unique("_f"), on="_f")
        .select("file", "pod", (pl.col("_dir") != 0).alias("_by_time"))
    )


def _rehome_interleaved(runs: pl.DataFrame) -> pl.DataFrame:
    """Two runs on one key that name no thread, the second begun while the first was going on, and two
    finishes (or two releases) after that: the first did not die there, both lived at once. The second
    finish (or release) and what follows go back to the first run (the later begun, nested reading: which
    end is whose is a guess), and both runs get `_interleaved` (not told apart). A run begun while the one
    before it was going on holds its own lines from its begin: so its number `_seg` - 1 is that run."""
    runs = runs.with_columns(pl.lit(False).alias("_interleaved"))
    if not (runs["_unlogged"] & runs["thread"].is_null()).any():
        return runs  # (no run began while another was going on on a key without thread: most logs)
    ev = pl.col("event")
    finish, release = ev.is_in(["job_finished", "job_stopped"]), ev == "lock_released"
    pos = pl.col("_pos")
    f = runs.with_row_index("_pos")
    crowded = (
        f.group_by("_seg")
        .agg(
            pl.col("thread").first().is_null().alias("_bare"),
            pl.col("_unlogged").filter(~pl.col("_orphan")).first().fill_null(False).alias("_cut"),
            pos.filter(finish).sort().slice(1, 1).first().alias("_f2"),
            pos.filter(release).sort().slice(1, 1).first().alias("_r2"),
        )
        .filter(
            pl.col("_bare") & pl.col("_cut") & (pl.col("_f2").is_not_null() | pl.col("_r2").is_not_null())
        )
        .select("_seg", pl.coalesce("_f2", "_r2").alias("_from"))
    )
    if not crowded.height:
        return runs
    f = f.join(crowded, on="_seg", how="left", maintain_order="left")
    back = (pos >= pl.col("_from")).fill_null(False)
    hit = pl.col("_from").is_not_null()
    prev = pl.col("_seg").is_in((crowded["_seg"] - 1).implode())
    return f.with_columns(
        pl.when(back).then(pl.col("_seg") - 1).otherwise(pl.col("_seg")).alias("_seg"),
        (pl.col("_unlogged") & ~hit).alias("_unlogged"),
        (hit | prev).alias("_interleaved"),
    ).drop("_pos", "_from")


def _segments(runs: pl.DataFrame, base: list[str]) -> pl.DataFrame:
    """One row per run: its key, first moment, how it ended, its lease's owner and token, its number
    `_n` in time order per base key (threads share the numbering: `#n` is unique on the base key)."""
    ev = pl.col("event")
    keys = list(dict.fromkeys([*base, "pod", "thread"]))
    seg = (
        runs.group_by("_seg")
        .agg(
            *(pl.col(k).first() for k in keys),
            pl.col("t").min().alias("_t0"),
            pl.col("seq").min().alias("_seq0"),
            pl.col("t").max().alias("_t1"),
            pl.col("_unlogged").filter(~pl.col("_orphan")).first().fill_null(False).alias("_cut_before"),
            ev.is_in(["job_finished", "job_stopped"]).sum().alias("_n_end"),
            (ev == "lock_released").sum().alias("_n_release"),
            pl.col("owner").filter(ev == "lock_acquired").first().alias("_owner"),
            pl.col("fencing_token").filter(ev == "lock_acquired").first().alias("_token"),
            pl.col("t").filter(ev == "lock_acquired").min().alias("_t_acq"),
            pl.col("_interleaved").any().alias("_interleaved"),
        )
        .sort(*base, "thread", "_t0", "_seq0", nulls_last=False)
    )
    same_key = pl.lit(True)
    for k in [*base, "thread"]:
        same_key = same_key & pl.col(k).eq_missing(pl.col(k).shift(-1))
    # no thread, and a run that began while another was going on holds two runs' ends: interleaved
    crowded = (
        pl.col("thread").is_null()
        & pl.col("_cut_before")
        & ((pl.col("_n_end") > 1) | (pl.col("_n_release") > 1))
    )
    seg = seg.with_columns((crowded | pl.col("_interleaved")).alias("_untold")).with_columns(
        (pl.col("_untold") | (same_key & pl.col("_untold").shift(-1)).fill_null(False)).alias("_untold"),
        (same_key & pl.col("_cut_before").shift(-1)).fill_null(False).alias("_end_unlogged"),
    )
    seg = seg.sort(*base, "_t0", "_seq0", "thread", nulls_last=False)
    return seg.with_columns(pl.int_range(1, pl.len() + 1).over(base).alias("_n"))


def _attach_helpers(helpers: pl.DataFrame, segments: pl.DataFrame, base: list[str]) -> pl.DataFrame:
    """(`_row`, `_seg`) of a helper thread's lines: the run of their base key (job and pod, or job and
    id) holding the lease they name (owner, then fencing token), else the latest run begun by then that
    is still going on, else the latest begun, else the first."""
    cand = helpers.join(
        segments.select("_seg", *base, "_t0", "_t1", "_t_acq", "_owner", "_token"),
        on=base,
        how="left",
        nulls_equal=True,
    )
    # a trigger comes before the run it starts; any other line after the run began
    begun = (
        pl.when(pl.col("event") == "job_triggered")
        .then(pl.col("_t0") >= pl.col("t"))
        .otherwise(pl.col("_t0") <= pl.col("t"))
    )
    # a renewal, a stop, a release: of a run that holds a lease by then (not one waiting for the lock)
    held = (pl.col("event") != "job_triggered") & (pl.col("_t_acq") <= pl.col("t")).fill_null(False)
    score = (
        (pl.col("owner").is_not_null() & (pl.col("owner") == pl.col("_owner"))).cast(pl.Int8) * 16
        + (pl.col("fencing_token").is_not_null() & (pl.col("fencing_token") == pl.col("_token"))).cast(
            pl.Int8
        )
        * 8
        + held.cast(pl.Int8) * 4
        + begun.cast(pl.Int8) * 2
        + (pl.col("_t1") >= pl.col("t")).cast(pl.Int8)
    )
    picked = (
        cand.with_columns(
            score.fill_null(0).alias("_score"), (pl.col("t") - pl.col("_t0")).abs().alias("_gap")
        )
        .sort("_row", "_score", "_gap", descending=[False, True, False], nulls_last=True)
        .group_by("_row", maintain_order=True)
        .first()
    )
    # (a helper line of a job and pod with no run at all keeps the name build_events gave it)
    return picked.filter(pl.col("_seg").is_not_null()).select("_row", "_seg")


REMARKS_SCHEMA = {"kind": pl.String(), "job_id": pl.String(), "pod": pl.String(), "execution_id": pl.String()}


def _remarks(segments: pl.DataFrame) -> pl.DataFrame:
    """The runs the reader must know about: `untold` (the logs cannot tell it from another run) and
    `unlogged` (its end was not logged before the next run on its pod and thread began)."""
    return pl.concat(
        [
            segments.filter(pl.col(flag)).select(
                pl.lit(kind).alias("kind"), "job_id", "pod", pl.col("_name").alias("execution_id")
            )
            for kind, flag in (("untold", "_untold"), ("unlogged", "_end_unlogged"))
        ]
    ).cast(REMARKS_SCHEMA)  # type: ignore[arg-type]


def identity_notes(remarks: pl.DataFrame) -> list[str]:
    """The notes of `identify_executions`' remarks (of one run, or of every partition's, concatenated):
    the same text whichever way the jobs were split."""
    if not remarks.height:
        return []
    remarks = remarks.sort("kind", "job_id", "pod", "execution_id", nulls_last=True)
    notes = []
    untold = remarks.filter(pl.col("kind") == "untold")
    if untold.height:
        ex = untold.row(0, named=True)
        notes.append(
            f"{untold.height} run(s) logged with no execution id and no thread, their lines interleaved "
            f"with another run's on the same pod (e.g. {ex['execution_id']}): the logs cannot tell these "
            "runs apart, and what depends on them is uncertain (log an execution id or the thread)"
        )
    untold_id = remarks.filter(pl.col("kind") == "untold_id")
    if untold_id.height:
        ex = untold_id.row(0, named=True)
        notes.append(
            f"{untold_id.height} run(s) logged under one execution id and with no thread, their lines "
            f"interleaved with another run's under the same id on the same pod (e.g. {ex['execution_id']}): "
            "the logs cannot tell these runs apart, and what depends on them is uncertain (log a unique "
            "execution id per run, or the thread)"
        )
    unlogged = remarks.filter(pl.col("kind") == "unlogged")
    if unlogged.height:
        ex = unlogged.row(0, named=True)
        notes.append(
            f"{unlogged.height} run(s) without an execution id whose end was not logged before the next "
            f"run on the same pod and thread began (e.g. {ex['execution_id']}): a crash or a lost line"
        )
    return notes
