"""`itchbench stats FILE`: the same statistics for another gateway's latency
log, a CSV with one latency in nanoseconds per row, under a header row or none
(a first line of numbers is a row of latencies, not names)."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import stats
from .stats import StatsError
from ..utf8 import not_utf8

_INEXACT_FROM = float(2**53)  # every whole number below it is a double


@dataclass
class ExternalStats:
    path: Path
    column: str
    method: str
    figures: dict[str, float]
    blank_lines: int = 0  # skipped: no value in the column
    header: bool = True   # False: the file's first line was its first latency


def stats_of_csv(path: Path, column: str | None, method: str = stats.DEFAULT_METHOD) -> ExternalStats:
    if not path.is_file():
        raise StatsError(f"{path}: " + ("a directory; a CSV file of figures is wanted" if path.is_dir() else
                                        "not a regular file (a device or a pipe); a CSV file of figures is wanted"
                                        if path.exists() else "no such file"))
    with path.open("rb") as f:
        first = f.readline().decode("utf-8-sig", errors="replace").strip()  # a BOM is no part of the first field
    # A first line of numbers is the first latency, not names: read as a header, it would be silently dropped.
    has_header = not _all_numbers(first.split(","))
    try:
        header = pd.read_csv(path, nrows=0, header=0 if has_header else None)
    except pd.errors.EmptyDataError as e:
        raise StatsError(f"{path}: empty file, expected a CSV of latencies") from e
    except UnicodeDecodeError as e:
        raise _not_utf8(path) from e
    columns = [str(c) for c in header.columns]
    if not has_header:
        if column is not None:
            raise StatsError(f"{path}: no header row (its first line is numbers), so no column is named "
                             f"'{column}'; give the file a header row")
        if len(columns) != 1:
            raise StatsError(f"{path} has {len(columns)} columns and no header row (its first line is numbers): "
                             "give it a header row and choose a column with --column")
    elif column is None:
        if len(columns) != 1:
            raise StatsError(f"{path} has {len(columns)} columns ({', '.join(columns)}): choose one with --column")
        column = columns[0]
    elif column not in columns:
        raise StatsError(f"{path}: no column '{column}' (columns: {', '.join(columns)})")
    # Blank lines kept as rows, so that row i is line i + first_line of the file in what is said.
    first_line = 2 if has_header else 1
    try:
        raw = pd.read_csv(path, usecols=[column] if has_header else [0], header=0 if has_header else None, dtype=str,
                          keep_default_na=False, skip_blank_lines=False).iloc[:, 0]
    except UnicodeDecodeError as e:
        raise _not_utf8(path) from e
    named = f"'{column}'" if has_header else "the file"
    text = raw.fillna("").str.strip()
    blank = (text == "").to_numpy()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values) & ~blank)
    if bad.size:
        raise StatsError(f"{path}: {bad.size} value(s) in {named} are not numbers "
                         f"(first at line {int(bad[0]) + first_line}: {raw.iloc[int(bad[0])]!r})")
    negative = np.flatnonzero(values < 0)
    if negative.size:
        raise StatsError(f"{path}: negative latencies in {named} (first at line {int(negative[0]) + first_line})")
    # Read as doubles: a whole number from 2^53 ns (104 days) on may be another number (2^53 + 1 reads as 2^53),
    # said as if it were given.
    inexact = np.flatnonzero(values >= _INEXACT_FROM)
    if inexact.size:
        raise StatsError(f"{path}: latencies of 2^53 ns (104 days) or more in {named}, which are not held exactly "
                         f"(first at line {int(inexact[0]) + first_line}: {raw.iloc[int(inexact[0])]!r})")
    values = values[~blank]
    if values.size == 0:
        raise StatsError(f"{path}: no values in {named}")
    figures = stats.describe(values, method)
    return ExternalStats(path, column or "", method, figures, int(blank.sum()), has_header)


def _not_utf8(path: Path) -> StatsError:
    """The error for a file pandas could not read as UTF-8, naming its first byte that is not (pandas' own error
    gives a place in the block it was reading)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            pending = len(decoder.getstate()[0])  # a character's first bytes, left from the block before
            try:
                decoder.decode(block)
            except UnicodeDecodeError as e:
                return StatsError(not_utf8(path, e, "a CSV of latencies", offset - pending))
            offset += len(block)
    return StatsError(f"{path}: not UTF-8 text, as a CSV of latencies must be")


def _all_numbers(fields: list[str]) -> bool:
    """Whether every field of a line is a number (a line of latencies, not of names)."""
    try:
        return all(float(f) == float(f) for f in fields)  # nan is not taken for a latency
    except ValueError:
        return False


def format_table(s: ExternalStats) -> str:
    f = s.figures
    # A row with nothing in the column: a blank line, or a row of other columns without this one's value.
    rows = f"{s.blank_lines:,} row{'s' if s.blank_lines != 1 else ''}"
    blank = f" ({rows} with no value skipped)" if s.blank_lines else ""
    where = f"column '{s.column}'" if s.header else "(no header row: its first line is a latency)"
    lines = [f"{s.path} {where}: {f['count']:,} latencies (ns){blank}, percentiles by "
             f"{stats.method_text(s.method)}; stddev: population"]
    for key in stats.STAT_KEYS[1:]:
        label = {"p999": "p99.9", "p9999": "p99.99"}.get(key, key)
        lines.append(f"  {label:>7}  {f[key]:>16,.1f}")
    return "\n".join(lines)
