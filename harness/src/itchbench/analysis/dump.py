"""`itchbench dump`: a run's logs as CSV."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from .. import rundir
from . import logs

BBO_COLUMNS = ["seq", "stock", "bid_px", "bid_qty", "ask_px", "ask_qty", "stale"]


@functools.lru_cache(maxsize=1)
def _locate_numbers() -> np.ndarray:
    # Made once: 65,536 numbers as text took 50 ms, a tenth of a small run's report.
    return np.arange(65536).astype(str).astype(object)


def symbol_names(run_dir: Path) -> np.ndarray:
    """Locate -> symbol (trailing spaces removed); the locate number where no R message named it."""
    names = _locate_numbers().copy()
    for locate, name in rundir.read_json(run_dir / "gateway.json")["symbols"].items():
        names[int(locate)] = name
    return names


def bbo_frame(run_dir: Path) -> pd.DataFrame:
    rec = logs.read_bbo(Path(run_dir) / "bbo.bbo").records
    names = symbol_names(Path(run_dir))
    return pd.DataFrame({
        "seq": rec["seq"],
        "stock": names[rec["stock_locate"]],
        "bid_px": rec["bid_px"],
        "bid_qty": rec["bid_qty"],
        "ask_px": rec["ask_px"],
        "ask_qty": rec["ask_qty"],
        # 1: messages were lost or rejected before this event (gateway/log/FORMAT.md)
        "stale": (rec["flags"] & logs.FLAG_BOOK_MAY_BE_STALE != 0).astype("u1"),
    }, columns=BBO_COLUMNS)


def dump_bbo(run_dir: Path, out: TextIO) -> int:
    frame = bbo_frame(run_dir)
    frame.to_csv(out, index=False, lineterminator="\n")
    return len(frame)


def depth_columns(levels: int) -> list[str]:
    """seq, stock, then bid1_px, bid1_qty … bidN_qty, then the same for asks (docs/book-and-bbo.md, "Depth")."""
    return ["seq", "stock", *(f"{side}{i}_{f}" for side in ("bid", "ask") for i in range(1, levels + 1)
                               for f in ("px", "qty"))]


def depth_levels(rec: np.ndarray) -> dict[str, np.ndarray]:
    """Depth records' levels as columns: bid1_px, bid1_qty … askN_qty (depth_columns order)."""
    levels = rec.dtype["bids"].shape[0]
    return {f"{side}{i + 1}_{f}": rec[field][f][:, i]
            for side, field in (("bid", "bids"), ("ask", "asks")) for i in range(levels) for f in ("px", "qty")}


# levels = all: one row a level a message changed, its new aggregate shares (0: the level left the book).
LEVEL_CHANGE_COLUMNS = ["seq", "stock", "side", "price", "shares"]


def depth_rows(rec: np.ndarray, names: np.ndarray) -> pd.DataFrame:
    """Depth records (events of the top N, or level changes) as dump depth's rows, stocks named from names."""
    stock = names[rec["stock_locate"]]
    if logs.levels_of(rec.dtype) == logs.ALL_LEVELS:
        return pd.DataFrame({"seq": rec["seq"], "stock": stock, "side": rec["side"].astype(str),
                             "price": rec["px"], "shares": rec["qty"]}, columns=LEVEL_CHANGE_COLUMNS)
    return pd.DataFrame({"seq": rec["seq"], "stock": stock, **depth_levels(rec)},
                        columns=depth_columns(logs.levels_of(rec.dtype)))


def dump_depth(run_dir: Path, out: TextIO) -> int:
    """The run's depth stream as CSV, written a part at a time: 50 M nasdaq-day messages at 5 levels are 20 M events,
    3.7 GB read back whole."""
    log = logs.read_depth(Path(run_dir) / "depth.dep")
    names = symbol_names(Path(run_dir))
    rows = 0
    for part in logs.iter_records(log, 1 << 16):
        if not len(part):
            continue
        depth_rows(part, names).to_csv(out, index=False, header=rows == 0, lineterminator="\n")
        rows += len(part)
    if rows == 0:  # the header alone
        depth_rows(np.zeros(0, log.dtype), names).to_csv(out, index=False, lineterminator="\n")
    return rows
