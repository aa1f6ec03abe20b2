"""After every input is read: which pod each file stands for, and exact repeats of a line dropped.

- **Pod identity.** docs/FORMATS.md's pod order ends with sources that are not a pod's own name: GELF's
  `host` (Spring Boot writes the application name there) and `host.name`/`host.hostname`/`hostname`
  (a node, shared by its pods). When such a source has one and the same value in every file of a
  multi-file input that names it, it is not a pod identity: each of those files' file name is the pod
  then (one file per pod, as `kubectl logs` gives), provided the file names tell the files apart.
  Each input's `pod_source` says where its pods came from.
- **Exact duplicates.** A log shipper that retries writes the same line twice. A lease-event line whose
  bytes repeat an earlier line of the same file is dropped (its events removed, the line counted
  ignored, `InputReport.duplicates` says how many), provided it carries a time or an elapsedMs: without
  either, two identical lines may be two real events.
"""

from __future__ import annotations

import polars as pl

from leaselog.reading.report import RAW_SCHEMA, Stream

# pod sources that name something shared by several pods (lowest precedence in docs/FORMATS.md's order)
SHARED_POD_KEYS = ("gelf.host", "host.name", "host.hostname", "hostname")


def post_process(raw: pl.DataFrame, streams: list[Stream]) -> pl.DataFrame:
    """`raw` (RAW_SCHEMA plus `dup_hash`, `dup_record`) with pods settled and duplicates dropped, in
    RAW_SCHEMA."""
    raw = _settle_pods(raw, streams)
    raw = _drop_duplicates(raw, streams)
    return raw.select(RAW_SCHEMA.keys())


def _settle_pods(raw: pl.DataFrame, streams: list[Stream]) -> pl.DataFrame:
    read = [st for st in streams if st.pod_values]
    notes: dict[int, str] = {}
    distinct_names = len({st.pod_fallback for st in streams}) == len(streams)
    for key in SHARED_POD_KEYS:
        files = [st for st in read if key in st.pod_values]
        # GELF's `host` is the application name in Spring Boot's output: one value of it in a multi-file
        # input is no pod's name even when only one of the files logged lease lines (the other pods' files
        # may hold nothing but start-up lines)
        lone_gelf = key == "gelf.host" and len(files) == 1 and len(streams) >= 2 and distinct_names
        if len(files) < 2 and not lone_gelf:
            continue
        values = {v for st in files for v in st.pod_values[key]}
        if len(values) != 1 or any(len(st.pod_values[key]) != 1 for st in files):
            continue
        if len({st.pod_fallback for st in files}) != len(files):
            continue  # the file names do not tell the files apart either
        (value,) = values
        by_file = {st.index: st.pod_fallback for st in files}
        index = pl.col("file_index")
        raw = raw.with_columns(
            pl.when(index.is_in(list(by_file)) & (pl.col("pod") == value))
            .then(index.replace_strict(by_file, default=None, return_dtype=pl.String))
            .otherwise(pl.col("pod"))
            .alias("pod")
        )
        for st in files:
            st.pod_values.pop(key)
            st.pod_values.setdefault("", set()).add(st.pod_fallback)
            notes[st.index] = (
                f"pod from the file name: {key} is {value!r} in every file, not a pod's name"
                if len(files) > 1
                else f"pod from the file name: {key} is {value!r}, the application's name in GELF"
            )
    for st in streams:
        st.report.pod_note = notes.get(st.index)
        if st.pod_values:
            st.report.pod_source = ", ".join(
                "file name" if k == "" else k for k in sorted(st.pod_values, key=lambda k: (k != "", k))
            )
    return raw


def _drop_duplicates(raw: pl.DataFrame, streams: list[Stream]) -> pl.DataFrame:
    if raw.height < 2:
        return raw
    # a repeat shares its line's hash with an earlier line: only rows whose hash occurs twice can be one
    # (tests on one integer column, where telling repeats apart hashes every row's three keys)
    if raw["dup_hash"].n_unique() == raw.height:
        return raw
    timed = pl.col("ts").is_not_null() | pl.col("elapsed_ms").is_not_null()
    keys = (
        raw.select("file_index", "line", "dup_hash", "dup_record", timed.alias("timed"))
        .with_row_index("row")
        .filter(pl.col("timed") & pl.col("dup_hash").is_duplicated())
        .sort("file_index", "line", "dup_record")
    )
    repeat = keys.filter(~pl.struct("file_index", "dup_hash", "dup_record").is_first_distinct())
    if repeat.is_empty():
        return raw
    reports = {st.index: st.report for st in streams}
    kept_lines = (
        raw.with_row_index("row")
        .filter(~pl.col("row").is_in(repeat["row"].implode()))
        .select("file_index", "line")
        .unique()
    )
    dropped = repeat.group_by("file_index", "line").agg(pl.len().alias("events"))
    whole = dropped.join(kept_lines, on=["file_index", "line"], how="anti")  # lines left with no event
    for file_index, _line, events in dropped.iter_rows():
        reports[file_index].events -= events
    for file_index, n in whole.group_by("file_index").agg(pl.len()).iter_rows():
        rep = reports[file_index]
        rep.used -= n
        rep.ignored += n
        rep.duplicates += n
    return raw.with_row_index("row").filter(~pl.col("row").is_in(repeat["row"].implode())).drop("row")


def note_pod_sources(st: Stream, frame: pl.DataFrame) -> None:
    """Note where the frame's pods came from (the field, or "" for the file name), a few values each."""
    for key, pods in frame.group_by("pod_key").agg(pl.col("pod").unique().head(64)).iter_rows():
        values = st.pod_values.setdefault(key, set())
        values.update(p for p in pods[: max(0, 64 - len(values))] if p is not None)
