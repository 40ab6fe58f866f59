"""A late join judged (docs/snapshot.md): the gateway took the book after message N from the snapshot service and
the feed from N + 1. Its BBO stream is held to the simulation of the whole session from the join point on: every
event after N exactly (the book the snapshot gives is the whole session's, so each stock's last emitted BBO is the
same and the next event is derivable), and the events it published for the snapshot itself (BBO flag 0x02) to the
simulation's book of each stock at N, the stocks with a non-empty book, no more and no fewer."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from ..analysis import logs
from ..depth_levels import ALL_LEVELS, Levels
from ..gateways import blackbox, in_parts
from ..progress import Progress

def check(bbo_log: Path, session: Path, feed: str, through: int) -> dict[str, Any]:
    """White box: the built-in gateway's BBO log, its snapshot events flagged (0x02)."""
    return _white_box(bbo_log, session, feed, through, 0)


def check_depth(depth_log: Path, session: Path, feed: str, through: int) -> dict[str, Any]:
    """White box, depth of N levels (levels = N): the built-in gateway's depth log held to the simulation's depth
    as its BBO is, its snapshot events flagged (0x02) the same way."""
    return _white_box(depth_log, session, feed, through, logs.levels_of(logs.read_depth(depth_log).dtype))


def _white_box(log: Path, session: Path, feed: str, through: int, levels: Levels) -> dict[str, Any]:
    """check_events of one of the built-in gateway's logs, read a part at a time (each event with its snapshot
    flag after its columns), or whole where it cannot be."""
    def got() -> tuple[Iterator[np.ndarray], in_parts.TextParts | None]:
        return ((np.column_stack((blackbox.event_block(rec), (rec["flags"] & logs.FLAG_FROM_SNAPSHOT) != 0))
                 for rec in logs.iter_records(logs.read_log(log), in_parts.REFERENCE_RECORDS_AT_ONCE)), None)
    checked = _in_parts(got, lambda block: block[:, -1] != 0, blackbox.reference_run(session, feed, levels), levels,
                        through, log.parent, log.stat().st_size)
    if checked is not None:
        return checked
    rec = logs.read_log(log).records
    got_whole = pd.DataFrame(blackbox.event_block(rec), columns=blackbox.columns(levels))
    return check_events(got_whole, (rec["flags"] & logs.FLAG_FROM_SNAPSHOT) != 0, session, feed, through, levels)


def check_events(got: pd.DataFrame, from_snapshot: np.ndarray, session: Path, feed: str,
                 through: int, levels: Levels = 0) -> dict[str, Any]:
    """got: the gateway's events (blackbox.columns(levels)); from_snapshot: which of them it published for the
    snapshot (a black box's are those at or before the join point: of each stock's, its last says the book it
    took)."""
    ref, kinds = blackbox.reference(session, feed, levels)
    from_snapshot = np.asarray(from_snapshot, bool)
    after = blackbox.check(got[~from_snapshot & (got["seq"] > through)], ref[ref["seq"] > through], kinds, "exact")
    before = int((~from_snapshot & (got["seq"] <= through)).sum())  # events for messages the snapshot covered
    at_join = (_levels_at_join if levels == ALL_LEVELS else _books_at_join)(
        ref[ref["seq"] <= through], got[from_snapshot], blackbox.columns(levels)[2:], bool(levels))
    return {"through": through, "after_join": after, "snapshot_events": int(from_snapshot.sum()), **at_join,
            "events_before_join": before,
            "equal": bool(after["equal"] and not at_join["stocks_differing_at_join"] and not before)}


def check_output(output: Path, bbo: dict[str, Any], reference: blackbox.ReferenceRun,
                 through: int) -> dict[str, Any] | None:
    """check_events of a black box's output (its contract's [bbo] table `bbo`) against the reference (the whole
    session's simulation), read a part at a time: its events at or before the join point are the snapshot's (a
    black box publishes them before any after it). None when it cannot be read so."""
    if not output.is_file():
        return None

    def got() -> tuple[Iterator[np.ndarray], in_parts.TextParts | None]:
        readable = in_parts.output_parts(output, bbo, reference.symbols)
        assert readable is not None  # the output is a file
        return readable
    return _in_parts(got, lambda block: block[:, 0] <= through, reference, bbo.get("levels", 0), through,
                     output.parent, output.stat().st_size)


def _in_parts(got: in_parts.Parts, from_snapshot: Callable[[np.ndarray], np.ndarray],
              reference: blackbox.ReferenceRun, levels: Levels, through: int, spill: Path,
              size: int) -> dict[str, Any] | None:
    """check_events, read a part at a time (gateways/in_parts.py): the events after the join point held exactly
    (windows of seqs, or buckets of stocks), and of the snapshot's events (`from_snapshot` of a block) only the
    last of each stock (of each level, levels = "all") kept, which is all a book at the join is made of; so the
    simulation's at or before the join point. A day's events are judged in the memory of a part. None when they
    cannot be read so."""
    cols = blackbox.columns(levels)
    key = ["stock", "side", "price"] if levels == ALL_LEVELS else ["stock"]
    kept: dict[str, pd.DataFrame] = {}
    counted = {"snapshot": 0, "before": 0}

    def after_join(blocks: Iterator[np.ndarray], name: str, snapshot: Callable[[np.ndarray], np.ndarray]
                   ) -> Iterator[np.ndarray]:
        """A stream's events after the join point that are not the snapshot's; of the snapshot's, each key's last
        kept in `kept`; the others at or before the join point (events for messages it covered) counted."""
        kept[name] = pd.DataFrame(np.zeros((0, len(cols)), np.int64), columns=cols)
        if name == "got":
            counted.update(snapshot=0, before=0)
        for block in blocks:
            snap, after = snapshot(block), block[:, 0] > through
            if snap.any():
                last = pd.concat([kept[name], pd.DataFrame(block[snap][:, :len(cols)], columns=cols)])
                last = last.drop_duplicates(key, keep="last")
                # A level at 0 shares is no level: the last change of it may as well be none.
                kept[name] = last[last["shares"] != 0] if levels == ALL_LEVELS else last
            if name == "got":
                counted["snapshot"] += int(snap.sum())
                counted["before"] += int((~snap & ~after).sum())
            yield block[~snap & after]

    def mine() -> tuple[Iterator[np.ndarray], in_parts.TextParts | None]:
        blocks, text = got()
        return after_join(blocks, "got", from_snapshot), text

    def theirs() -> tuple[Iterator[np.ndarray], in_parts.TextParts | None]:
        return after_join(in_parts.log_parts(reference.events_log, False), "ref", lambda b: b[:, 0] <= through), None
    held = in_parts.held(mine, theirs, levels, False, reference, False, Progress("", None), spill, size)
    if held is None:
        return None
    after = {"mode": "exact", "reference_events": held.reference_events, "events": held.events, **held.counts,
             "equal": held.equal, **({"first_difference": held.first} if held.first else {}),
             **({"flood": held.flood} if held.flood else {})}
    at_join = (_levels_at_join if levels == ALL_LEVELS else _books_at_join)(kept["ref"], kept["got"], cols[2:],
                                                                            bool(levels))
    return {"through": through, "after_join": after, "snapshot_events": counted["snapshot"], **at_join,
            "events_before_join": counted["before"],
            "equal": bool(after["equal"] and not at_join["stocks_differing_at_join"] and not counted["before"])}


def _books_at_join(ref: pd.DataFrame, snapshot: pd.DataFrame, book: list[str], depth: bool) -> dict[str, Any]:
    """Each stock's book at the join, BBO or top N: the simulation's last event per stock at or before N, the
    non-empty ones, against the last the gateway published for the snapshot."""
    at_join = ref.groupby("stock").last()[book]
    at_join = at_join[(at_join != 0).any(axis=1)].sort_index()
    snap = snapshot.groupby("stock").last()[book]
    snap = snap[(snap != 0).any(axis=1)].sort_index()
    both = at_join.join(snap, how="outer", lsuffix="_ref").fillna(-1).astype(np.int64)
    differ = both[(both[[f"{c}_ref" for c in book]].to_numpy() != both[book].to_numpy()).any(axis=1)]
    return {"stocks_at_join": len(at_join), "stocks_differing_at_join": int(len(differ)),
            "first_stock_differing": int(differ.index[0]) if len(differ) else None,
            "first_level_differing": _first_level(differ, book) if depth else ""}


def _levels_at_join(ref: pd.DataFrame, snapshot: pd.DataFrame, book: list[str], depth: bool) -> dict[str, Any]:
    """Every level (levels = all): each stock's whole book at the join, the simulation's changes at or before N
    applied (each level's last shares, the empty ones left out), against the levels the gateway published for
    the snapshot."""
    key = ["stock", "side", "price"]
    at_join = ref.groupby(key)["shares"].last()
    at_join = at_join[at_join != 0]
    snap = snapshot.groupby(key)["shares"].last()
    snap = snap[snap != 0]
    both = pd.concat([at_join.rename("ref"), snap.rename("got")], axis=1).fillna(0).astype(np.int64).sort_index()
    differ = both[both["ref"] != both["got"]]
    first = ""
    if len(differ):
        (stock, side, price), row = differ.index[0], differ.iloc[0]
        got, want = int(row["got"]), int(row["ref"])
        first = (f"{blackbox.side_word(side)} {price}: "
                 f"{f'{got:,} shares' if got else 'no level'}, expected {f'{want:,}' if want else 'no level'}")
    return {"stocks_at_join": int(at_join.index.get_level_values("stock").nunique()),
            "stocks_differing_at_join": int(differ.index.get_level_values("stock").nunique()),
            "first_stock_differing": int(differ.index[0][0]) if len(differ) else None,
            "first_level_differing": first}


def _first_level(differ: pd.DataFrame, book: list[str]) -> str:
    """The first differing stock's first wrong level at the join, as a wrong depth event's is named; "" when the
    stock is in one book only (filled with -1 on the other side)."""
    if differ.empty or (differ.iloc[0] == -1).any():
        return ""
    row = differ.iloc[0]
    return blackbox.level_words(pd.Series({**{f"{c}_got": row[c] for c in book},
                                           **{f"{c}_ref": row[f"{c}_ref"] for c in book}}), tuple(book))
