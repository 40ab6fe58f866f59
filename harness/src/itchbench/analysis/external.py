"""`itchbench stats FILE`: the same statistics for another gateway's latency
log, a CSV with a header and one latency in nanoseconds per row."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import stats
from .stats import StatsError


@dataclass
class ExternalStats:
    path: Path
    column: str
    method: str
    figures: dict[str, float]
    blank_lines: int = 0  # skipped: no value in the column


def stats_of_csv(path: Path, column: str | None, method: str = stats.DEFAULT_METHOD) -> ExternalStats:
    if not path.is_file():
        raise StatsError(f"{path}: " + ("a directory; a CSV file of figures is wanted" if path.is_dir() else
                                        "no such file"))
    try:
        header = pd.read_csv(path, nrows=0)
    except pd.errors.EmptyDataError as e:
        raise StatsError(f"{path}: empty file, expected a CSV with a header row") from e
    columns = list(header.columns)
    if column is None:
        if len(columns) != 1:
            raise StatsError(f"{path} has {len(columns)} columns ({', '.join(columns)}): choose one with --column")
        column = columns[0]
    elif column not in columns:
        raise StatsError(f"{path}: no column '{column}' (columns: {', '.join(columns)})")
    # Blank lines kept as rows, so that row i is line i + 2 of the file (after the header) in what is said.
    raw = pd.read_csv(path, usecols=[column], dtype=str, keep_default_na=False, skip_blank_lines=False)[column]
    text = raw.fillna("").str.strip()
    blank = (text == "").to_numpy()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values) & ~blank)
    if bad.size:
        raise StatsError(f"{path}: {bad.size} value(s) in '{column}' are not numbers "
                         f"(first at line {int(bad[0]) + 2}: {raw.iloc[int(bad[0])]!r})")
    negative = np.flatnonzero(values < 0)
    if negative.size:
        raise StatsError(f"{path}: negative latencies in '{column}' (first at line {int(negative[0]) + 2})")
    values = values[~blank]
    if values.size == 0:
        raise StatsError(f"{path}: no values in '{column}'")
    figures = stats.describe(values, method)
    return ExternalStats(path, column, method, figures, int(blank.sum()))


def format_table(s: ExternalStats) -> str:
    f = s.figures
    blank = f" ({s.blank_lines:,} blank line{'s' if s.blank_lines != 1 else ''} skipped)" if s.blank_lines else ""
    lines = [f"{s.path} column '{s.column}': {f['count']:,} latencies (ns){blank}, percentiles by "
             f"{stats.method_text(s.method)}; stddev: population"]
    for key in stats.STAT_KEYS[1:]:
        label = {"p999": "p99.9", "p9999": "p99.99"}.get(key, key)
        lines.append(f"  {label:>7}  {f[key]:>16,.1f}")
    return "\n".join(lines)
