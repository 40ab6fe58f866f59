"""A late join judged (docs/snapshot.md): the gateway took the book after message N from the snapshot service and
the feed from N + 1. Its BBO stream is held to the simulation of the whole session from the join point on: every
event after N exactly (the book the snapshot gives is the whole session's, so each stock's last emitted BBO is the
same and the next event is derivable), and the events it published for the snapshot itself (BBO flag 0x02) to the
simulation's book of each stock at N, the stocks with a non-empty book, no more and no fewer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analysis import logs
from ..gateways import blackbox

def check(bbo_log: Path, session: Path, feed: str, through: int) -> dict[str, Any]:
    """White box: the built-in gateway's BBO log, its snapshot events flagged (0x02)."""
    rec = logs.read_bbo(bbo_log).records
    got = pd.DataFrame({"seq": rec["seq"], "stock": rec["stock_locate"], "bid_px": rec["bid_px"],
                        "bid_qty": rec["bid_qty"], "ask_px": rec["ask_px"], "ask_qty": rec["ask_qty"]}).astype(np.int64)
    return check_events(got, (rec["flags"] & logs.FLAG_FROM_SNAPSHOT) != 0, session, feed, through)


def check_depth(depth_log: Path, session: Path, feed: str, through: int) -> dict[str, Any]:
    """White box, depth of N levels (levels = N): the built-in gateway's depth log held to the simulation's depth
    as its BBO is, its snapshot events flagged (0x02) the same way."""
    rec = logs.read_depth(depth_log).records
    got = blackbox.depth_frame(rec).astype(np.int64)
    return check_events(got, (rec["flags"] & logs.FLAG_FROM_SNAPSHOT) != 0, session, feed, through,
                        levels=int(rec.dtype["bids"].shape[0]))


def check_events(got: pd.DataFrame, from_snapshot: np.ndarray, session: Path, feed: str,
                 through: int, levels: int = 0) -> dict[str, Any]:
    """got: the gateway's events (blackbox.columns(levels)); from_snapshot: which of them it published for the
    snapshot (a black box's are those at or before the join point: of each stock's, its last says the book it
    took)."""
    ref, kinds = blackbox.reference(session, feed, levels)
    book = blackbox.columns(levels)[2:]  # the book's figures: the BBO's four, or depth's 4 N
    from_snapshot = np.asarray(from_snapshot, bool)
    after = blackbox.check(got[~from_snapshot & (got["seq"] > through)], ref[ref["seq"] > through], kinds, "exact")
    before = int((~from_snapshot & (got["seq"] <= through)).sum())  # events for messages the snapshot covered
    # Each stock's book at the join: the simulation's last event per stock at or before N, the non-empty ones.
    at_join = ref[ref["seq"] <= through].groupby("stock").last()[book]
    at_join = at_join[(at_join != 0).any(axis=1)].sort_index()
    snap = got[from_snapshot].groupby("stock").last()[book]
    snap = snap[(snap != 0).any(axis=1)].sort_index()
    both = at_join.join(snap, how="outer", lsuffix="_ref").fillna(-1).astype(np.int64)
    differ = both[(both[[f"{c}_ref" for c in book]].to_numpy() != both[book].to_numpy()).any(axis=1)]
    return {"through": through, "after_join": after, "snapshot_events": int(from_snapshot.sum()),
            "stocks_at_join": len(at_join), "stocks_differing_at_join": int(len(differ)),
            "first_stock_differing": int(differ.index[0]) if len(differ) else None,
            "first_level_differing": _first_level(differ, book) if levels else "",
            "events_before_join": before, "equal": bool(after["equal"] and differ.empty and not before)}


def _first_level(differ: pd.DataFrame, book: list[str]) -> str:
    """The first differing stock's first wrong level at the join, as a wrong depth event's is named; "" when the
    stock is in one book only (filled with -1 on the other side)."""
    if differ.empty or (differ.iloc[0] == -1).any():
        return ""
    row = differ.iloc[0]
    return blackbox.level_words(pd.Series({**{f"{c}_got": row[c] for c in book},
                                           **{f"{c}_ref": row[f"{c}_ref"] for c in book}}), tuple(book))
