"""One block of a file on the columnar path, before it is accounted for: which of its lines need a closer
look (`split_block`, run in the read-ahead thread) and what the odd ones are (`line_kinds`). The reader
(leaselog.reading.reader) decides what becomes of them."""

from __future__ import annotations

import polars as pl

from leaselog.reading.columnar import ColumnarDecoder, Cut, Split, block_lines, chunk_lines, owned_lines
from leaselog.reading.formats import CONTINUATION_RE


def split_block(cut: Cut, decoder: ColumnarDecoder, max_line_bytes: int, keep_fields: bool) -> Split | None:
    """Split a block into lines and keep the few that need a closer look; None when the block must go
    line by line. Runs in the read-ahead thread: it only reads the decoder's fixed needles, never the
    report nor the field names learned. Lines longer than `max_line_bytes` are flagged for the per-line
    path; `keep_fields` also keeps each decoded line's text for the `fields` column."""
    lines = chunk_lines(cut)
    if lines is None:
        lines = block_lines(cut.block())
        if lines is None:
            return None
    n = lines.height
    line = pl.col("l")
    # (the first and last character compared: faster than starts_with / ends_with on every line)
    plain_object = (line.str.head(1) == "{") & (line.str.tail(1) == "}")
    # One pass over the whole block keeps only the lines that may hold a lease event (the job-id
    # names' common prefix occurs), the lines that are not plainly one object (blank, padded,
    # continuations, junk) and, when the block has a NUL at all, the lines with one. Every other
    # line, most of a fleet's log, is a valid line unrelated to leases: counted, not looked at again.
    library = decoder.dialect(line)
    has_nul = b"\x00" in cut.prefix or cut.data.find(b"\x00", 0, cut.end) >= 0
    # `nul`: lines read one by one (a NUL byte, or longer than max_line_bytes: never decoded in bulk)
    odd = pl.lit(False)
    if has_nul:
        odd = line.str.contains("\x00", literal=True)
    if cut.size > max_line_bytes:  # (only then can a line of the block be longer)
        odd = odd | (line.str.len_bytes() > max_line_bytes)
    # the flags every line needs, computed once before the filter (not again on the lines kept); `line`
    # is 0-based in the block (`_columnar_block` adds the first line's number); a null `l` is an empty line
    flags = lines.with_row_index("line").with_columns(
        plain_object.fill_null(False).alias("object"),
        odd.fill_null(False).alias("nul"),
        # a lock library's line (its needle): even with a job-id name (the app's MDC riding on it) it
        # is read one by one, where its dialect reads it
        (pl.lit(False) if library is None else library).fill_null(False).alias("library"),
    )
    keep = decoder.prefilter(line).fill_null(True) | ~pl.col("object") | pl.col("library") | pl.col("nul")
    flagged = (
        flags.filter(keep)
        .with_columns(
            decoder.candidate(line).fill_null(False).alias("candidate"),
            # what the columnar path decodes: nested objects are flattened by the per-line path, and
            # so are lines not plainly one object
            (pl.col("object") & (line.str.count_matches("{", literal=True) == 1)).alias("simple"),
        )
        .select("line", "l", "candidate", "object", "nul", "library", "simple")
    )
    # `bare`: a job-id name, as a key or not (every candidate; the test runs on the few others only)
    others = flagged.filter(~pl.col("candidate"))
    bare = others.filter(decoder.bare(line).fill_null(False) | pl.col("library"))["line"]
    flagged = flagged.with_columns((pl.col("candidate") | pl.col("line").is_in(bare.implode())).alias("bare"))
    # the lines the columnar path decodes, as one NDJSON text: searched for the field names they
    # hold, then parsed by `ColumnarDecoder.decode` (unless the block goes line by line)
    texts = flagged.filter(pl.col("candidate") & ~pl.col("nul") & pl.col("simple"))["l"]
    ndjson = texts.str.join("\n").cast(pl.Binary).item()
    # the `fields` column's lines, in buffers of their own (here: this thread has less to do)
    fields = owned_lines(ndjson, texts) if keep_fields and texts.len() else None
    return Split(n, flagged, texts, ndjson, fields, *decoder.keys_in(texts))


def line_kinds(odd: pl.DataFrame) -> pl.DataFrame:
    """`line`, `kind` of a block's lines that are neither candidates nor plainly an object (and those
    with a NUL): blank, nul, ignored (an object after all, once stripped), continuation, or junk."""
    line = pl.col("l")
    if not odd.height:
        return pl.DataFrame(schema={"line": pl.Int64, "kind": pl.String})
    stripped = line.str.strip_chars()
    return odd.select(
        "line",
        pl.when(line.is_null() | (stripped == ""))
        .then(pl.lit("blank"))
        .when(pl.col("nul"))
        .then(pl.lit("nul"))
        .when(stripped.str.starts_with("{") & stripped.str.ends_with("}"))
        .then(pl.lit("ignored"))
        .when(line.str.contains(CONTINUATION_RE))
        .then(pl.lit("continuation"))
        .otherwise(pl.lit("junk"))
        .alias("kind"),
    )
