"""A run's per-message latency or its BBO events as Parquet or CSV, written
in chunks through pyarrow with named, typed columns (schema:
gateway/log/FORMAT.md, "Exported tables"), so pandas, Polars, DuckDB or
Spark read the file as it is. Memory stays bounded by the chunk, whatever
the run's size: the logs are memory-mapped and read a chunk at a time."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from .. import atomic
from ..progress import Progress
from ..vocabulary import EXPORT_FORMATS
from . import dump, hops, logs

CHUNK_ROWS = 1 << 20
# The Parquet file's key-value metadata that says it was made from logs not read whole, and why (a CSV says so only
# on the command's stderr and in its exit status).
PARTIAL_KEY = b"itchbench.partial"

_SYMBOL = pa.dictionary(pa.uint16(), pa.string())
_TYPE = pa.dictionary(pa.uint8(), pa.string())
STAMPS = ["t_intended_ns", "t_sent_ns", "t_kernel_ns", "t_read_ns", "t_decoded_ns", "t_book_ns", "t_published_ns"]
LATENCY_SCHEMA = pa.schema([
    ("seq", pa.uint64()), ("type", _TYPE), ("symbol", _SYMBOL), ("locate", pa.uint16()),
    ("bbo_event", pa.bool_()), ("unknown_ref", pa.bool_()), ("rejected", pa.bool_()),
    *[(name, pa.int64()) for name in STAMPS],
    ("receive_to_book_ns", pa.int64()),
])
BBO_SCHEMA = pa.schema([
    ("seq", pa.uint64()), ("itch_timestamp_ns", pa.uint64()), ("symbol", _SYMBOL), ("locate", pa.uint16()),
    ("bid_price", pa.float64()), ("bid_qty", pa.uint64()), ("ask_price", pa.float64()), ("ask_qty", pa.uint64()),
    ("bid_px_e4", pa.uint32()), ("ask_px_e4", pa.uint32()), ("stale", pa.bool_()),
])


class ExportError(ValueError):
    """The run cannot be exported; the message says why."""


def _stamp(values: np.ndarray) -> pa.Array:
    """ns stamps as int64, null where the log has 0 (not stamped)."""
    v = values.astype(np.int64)
    return pa.array(v, type=pa.int64(), mask=v == 0)


def _latency_chunks(run_dir: Path, chunk_rows: int) -> Iterator[pa.RecordBatch]:
    lat = logs.read_latency(run_dir / "latency.lat")
    symbols = pa.array(dump.symbol_names(run_dir).tolist(), type=pa.string())
    type_names = pa.array([chr(i) for i in range(256)], type=pa.string())
    send = run_dir / "send.log"
    sender = hops.send_stamps(send) if send.is_file() else None
    clock = hops.gateway_clock(run_dir)
    for r in logs.iter_records(lat, chunk_rows):
        flags = r["flags"]
        seq = r["seq"].astype(np.int64)
        if "t_receive" in r.dtype.names:  # a version-1 log: its one receive stamp
            kernel, read = np.zeros(len(r), np.int64), hops.to_monotonic(r["t_receive"], clock)
        else:  # a stage the log does not hold is null, as a stage not stamped
            kernel = hops.to_monotonic(logs.stamp(r, "t_kernel"), clock)
            read = hops.to_monotonic(logs.stamp(r, "t_read"), clock)
        receive = np.where(kernel != 0, kernel, read)
        book = hops.to_monotonic(logs.stamp(r, "t_book"), clock)
        intended = hops.lookup(seq, *sender[:2]) if sender else np.zeros(len(r), np.int64)
        sent = hops.lookup(seq, sender[0], sender[2]) if sender else np.zeros(len(r), np.int64)
        columns = [
            pa.array(r["seq"], type=pa.uint64()),
            pa.DictionaryArray.from_arrays(pa.array(r["msg_type"].view(np.uint8), type=pa.uint8()), type_names),
            pa.DictionaryArray.from_arrays(pa.array(r["stock_locate"], type=pa.uint16()), symbols),
            pa.array(r["stock_locate"], type=pa.uint16()),
            pa.array((flags & logs.FLAG_BBO_EVENT) != 0), pa.array((flags & logs.FLAG_UNKNOWN_REF) != 0),
            pa.array((flags & logs.FLAG_REJECTED) != 0),
            _stamp(intended), _stamp(sent), _stamp(kernel), _stamp(read),
            _stamp(hops.to_monotonic(logs.stamp(r, "t_decoded"), clock)), _stamp(book),
            _stamp(hops.to_monotonic(logs.stamp(r, "t_published"), clock)),
            pa.array(book - receive, type=pa.int64(), mask=(book == 0) | (receive == 0)),
        ]
        yield pa.RecordBatch.from_arrays(columns, schema=LATENCY_SCHEMA)


def _bbo_chunks(run_dir: Path, chunk_rows: int) -> Iterator[pa.RecordBatch]:
    rec = logs.read_bbo(run_dir / "bbo.bbo").records
    symbols = pa.array(dump.symbol_names(run_dir).tolist(), type=pa.string())
    for start in range(0, len(rec), chunk_rows):
        r = rec[start:start + chunk_rows]
        columns = [
            pa.array(r["seq"], type=pa.uint64()), pa.array(r["timestamp"], type=pa.uint64()),
            pa.DictionaryArray.from_arrays(pa.array(r["stock_locate"], type=pa.uint16()), symbols),
            pa.array(r["stock_locate"], type=pa.uint16()),
            pa.array(r["bid_px"] / 1e4), pa.array(r["bid_qty"], type=pa.uint64()),
            pa.array(r["ask_px"] / 1e4), pa.array(r["ask_qty"], type=pa.uint64()),
            pa.array(r["bid_px"], type=pa.uint32()), pa.array(r["ask_px"], type=pa.uint32()),
            pa.array((r["flags"] & logs.FLAG_BOOK_MAY_BE_STALE) != 0),
        ]
        yield pa.RecordBatch.from_arrays(columns, schema=BBO_SCHEMA)


def _first_batch(chunks: Iterator[pa.RecordBatch]) -> tuple[pa.RecordBatch | None, list[str]]:
    """The first batch, whose making opens every log the table is read from, and what those logs did not hold
    whole (their TruncatedLogWarnings, warned on to the caller as well)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = next(chunks, None)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return first, [str(w.message) for w in caught if issubclass(w.category, logs.TruncatedLogWarning)]


def partial_csv_path(out: Path) -> Path:
    """Where a CSV made from logs not read whole is left: CSV has no metadata to say so, so its name does
    (part.csv: part.partial.csv), and a whole export already at out is not replaced by it."""
    return out.with_name(f"{out.stem}.partial{out.suffix}")


def export(run_dir: Path, out: Path, *, fmt: str = "parquet", bbo: bool = False,
           chunk_rows: int = CHUNK_ROWS, say: Callable[[str], None] | None = None) -> tuple[int, Path]:
    """Write the table to out (through a partial file beside it, renamed when written); returns the rows written and
    the file they are in: out, or for a CSV from logs not read whole partial_csv_path(out) (a Parquet file says it in
    its metadata, PARTIAL_KEY). With say, the rows written so far every few seconds (a day's 50 M rows take about
    20 s)."""
    run_dir = Path(run_dir)
    if fmt not in EXPORT_FORMATS:
        raise ExportError(f"unknown format {fmt!r} ({', '.join(EXPORT_FORMATS)})")
    source = run_dir / ("bbo.bbo" if bbo else "latency.lat")
    if not source.is_file():
        raise ExportError(f"{run_dir}: no {source.name}" + ("" if bbo else " (the run recorded no latency log)"))
    schema = BBO_SCHEMA if bbo else LATENCY_SCHEMA
    chunks = _bbo_chunks(run_dir, chunk_rows) if bbo else _latency_chunks(run_dir, chunk_rows)
    # This process's own partial name: two exports to one out at once had shared one, and the first to finish
    # renamed into place a file the other was still writing.
    partial = atomic.partial_name(out)
    rows = 0
    log = logs.read_log(source, logs.KIND_BBO if bbo else logs.KIND_LATENCY, header_only=True, quiet=True)
    # A compact latency log counts its slots, a message's and its escapes': about one a message.
    progress = Progress(f"export of {source.name}", int(log.header["record_count"]) or None, say=say, unit="rows",
                        estimated=log.compact_stages is not None)
    first, cut = _first_batch(chunks)
    batches = itertools.chain([first] if first is not None else [], chunks)
    try:
        if fmt == "parquet":
            if cut:
                schema = schema.with_metadata({PARTIAL_KEY: "; ".join(dict.fromkeys(cut)).encode()})
            with pq.ParquetWriter(partial, schema, compression="zstd") as writer:
                for batch in batches:
                    writer.write_batch(batch)
                    rows += batch.num_rows
                    progress.update(rows)
        else:
            # CSV has no dictionaries: symbols and types are written as their text.
            plain = pa.schema([pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
                               for f in schema])
            with pacsv.CSVWriter(partial, plain) as writer:
                for batch in batches:
                    writer.write_batch(batch.cast(plain))
                    rows += batch.num_rows
                    progress.update(rows)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    written = partial_csv_path(out) if cut and fmt == "csv" else out
    partial.replace(written)
    return rows, written
