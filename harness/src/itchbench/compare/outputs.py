"""What two runs of the same capture produced: the BBO stream event by event,
and the gateway's counters."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import rundir
from ..analysis import logs
from ..depth_levels import ALL_LEVELS, Levels
from ..gateways import adapter, blackbox, in_parts
from ..progress import Progress
from ..runs.verdict import difference_words
from .verdicts import bbo_words

_FIELDS = ("seq", "stock_locate", "bid_px", "bid_qty", "ask_px", "ask_qty")  # blackbox.COLUMNS, in the log


def bbo_records(run: Path) -> tuple[np.ndarray, str]:
    """A run's BBO events as BBO records (depth records, for a contract gateway that publishes depth), and their
    digest: the built-in gateway's log, or what a contract gateway sent (its receive stamps and flags left out:
    the digest is of the events alone)."""
    if (run / "bbo.bbo").is_file():
        log = logs.read_bbo(run / "bbo.bbo")
        return log.records, logs.bbo_digest(log)
    output, bbo, symbols = _contract_output(run)
    events, _, _ = blackbox.read_output(run, str(output), bbo, symbols)
    levels = bbo.get("levels", 0)
    rec = _records(events[blackbox.columns(levels)].to_numpy(), levels)
    digest = StockByStockDigest()
    digest.update(rec)
    return rec, digest.hexdigest()


def bbo_digest(run: Path) -> tuple[str, int]:
    """bbo_records' digest and events, read a part at a time where the events can be (memory: a part): a contract
    gateway's csv output, or its own log. A day's output of 20 M depth events read whole took 3.7 GB a run."""
    if (run / "bbo.bbo").is_file():
        log = logs.read_bbo(run / "bbo.bbo")
        return logs.bbo_digest(log), log.count
    output, bbo, symbols = _contract_output(run)
    readable = in_parts.output_parts(run / output, bbo, symbols)
    if readable is not None:
        levels, digest, events = bbo.get("levels", 0), StockByStockDigest(), 0
        try:
            for part in readable[0]:
                digest.update(_records(part[:, :len(blackbox.columns(levels))], levels))
                events += len(part)
            return digest.hexdigest(), events
        except logs.LogFormatError:
            pass  # read whole, which tells what it holds
    rec, whole = bbo_records(run)
    return whole, len(rec)


class StockByStockDigest:
    """The digest of a brought gateway's events taken stock by stock, each stock's in the order it sent them: a
    sha256 of each stock's records, then one of the stocks' locates and digests in locate order. Stocks may
    interleave freely (docs/book-and-bbo.md, "Order"): two runs of a gateway that publishes per thread or per
    partition, whose stocks interleave differently each time, share it; a stock's events in another order do not.
    Given the events a part at a time or all at once, the digest is the same."""

    def __init__(self) -> None:
        self._stocks: dict[int, Any] = {}  # locate -> its sha256

    def update(self, rec: np.ndarray) -> None:
        """More records (the gateway's log's, FORMAT.md), in the order sent."""
        rec = rec[np.argsort(rec["stock_locate"], kind="stable")]
        stocks = rec["stock_locate"]
        starts = np.flatnonzero(np.r_[True, stocks[1:] != stocks[:-1]]) if len(rec) else np.zeros(0, np.int64)
        for start, end in zip(starts, [*starts[1:], len(rec)]):
            self._stocks.setdefault(int(stocks[start]), hashlib.sha256()).update(rec[start:end].tobytes())

    def hexdigest(self) -> str:
        whole = hashlib.sha256()
        for stock in sorted(self._stocks):
            whole.update(stock.to_bytes(4, "little") + self._stocks[stock].digest())
        return "sha256:" + whole.hexdigest()


def outputs_gone(run: Path) -> list[str]:
    """What a finished run's summary counts among its outputs that is no longer in its directory: its BBO output
    (the built-in gateway's log, or what a contract gateway sent) and its depth log, each with the events it held.
    Read without them, a run would be one that published nothing: every event of the other side missing."""
    summary = rundir.read_json(run / "summary.json")
    gone = []
    bbo_events = int(summary.get("bbo", {}).get("events", 0))
    output = run / Path(summary.get("transport_details", {}).get("bbo_output", adapter.BBO_FILE))
    if bbo_events and not (run / "bbo.bbo").is_file() and not output.is_file():
        gone.append(f"{output.name} ({bbo_events:,} BBO events)")
    depth_events = int((summary.get("depth") or {}).get("events", 0))
    if depth_events and not (run / "depth.dep").is_file():
        gone.append(f"depth.dep ({depth_events:,} depth events)")
    return gone


def _contract_output(run: Path) -> tuple[Path, dict[str, Any], dict[str, int]]:
    """A contract run's BBO output (relative to the run, or absolute), its contract's [bbo] table and the stock
    directory its stocks may be named by."""
    summary = rundir.read_json(run / "summary.json")
    scen = rundir.read_json(run / "manifest.json")["scenario"]
    bbo = summary.get("gateway", {}).get("contract", {}).get("bbo", {})
    output = Path(summary.get("transport_details", {}).get("bbo_output", adapter.BBO_FILE))
    return output, bbo, blackbox.stock_directory(Path(scen["capture"]), scen.get("feed", ""), bbo.get("levels", 0))


def _records(block: np.ndarray, levels: Levels) -> np.ndarray:
    """Events as an int64 block of blackbox.columns(levels) made records of the gateway's log (FORMAT.md): BBO,
    depth of N levels, or level changes (the side as its byte, blackbox.SIDE_BYTES); other fields zero."""
    rec = np.zeros(len(block), logs.depth_dtype(levels) if levels else logs.BBO_DTYPE)
    rec["seq"], rec["stock_locate"] = block[:, 0], block[:, 1]
    if levels == ALL_LEVELS:
        rec["side"] = block[:, 2].astype(np.uint8).view("S1")
        rec["px"], rec["qty"] = block[:, 3], block[:, 4]
    elif levels:
        n = 2 * int(levels)
        for k, field in enumerate(("bids", "asks")):
            at = 2 + n * k
            rec[field]["px"], rec[field]["qty"] = block[:, at:at + n:2], block[:, at + 1:at + n:2]
    else:
        for i, f in enumerate(_FIELDS[2:]):
            rec[f] = block[:, 2 + i]
    return rec


def _kind_of(rec: np.ndarray) -> str:
    if rec.dtype == logs.LEVEL_CHANGE_DTYPE:
        return "every level's changes"
    return f"depth of {rec.dtype['bids'].shape[0]} levels" if "bids" in rec.dtype.names else "BBO"


def compare_bbo(base_run: Path, head_run: Path) -> dict[str, Any]:
    """Head's BBO events against base's, matched by (seq, stock) as a run's are against the simulation
    (gateways/blackbox): missing, extra, wrong and out of order counted apart, the first difference named with its
    message."""
    # Two builds' own BBO logs also carry flags (stale: the book may be wrong after a gap): those must agree too.
    also = ("flags",) if (base_run / "bbo.bbo").is_file() and (head_run / "bbo.bbo").is_file() else ()
    (da, na), (db, nb) = bbo_digest(base_run), bbo_digest(head_run)
    if da == db:  # the same events: read further only to name a difference
        return _outcome(da, db, na, nb)
    held = _held(_bbo_parts(base_run, bool(also)), _bbo_parts(head_run, bool(also)), (da, db), base_run, head_run,
                 bool(also))
    return held or _compare(bbo_records(base_run), bbo_records(head_run), base_run, also)


# A run's events to hold a part at a time (gateways/in_parts.py): their parts, their levels (the stream's kind) and
# the bytes of the file they are read from.
_EventParts = tuple[in_parts.Parts, Levels, int]


def _bbo_parts(run: Path, flags: bool) -> _EventParts | None:
    """A run's BBO events (a contract gateway's: what it sent, BBO or depth) to hold a part at a time; flags: the
    built-in gateway's log's flags with them. None: there are none to read so."""
    if (run / "bbo.bbo").is_file():
        return _log_parts(run / "bbo.bbo", flags)
    output, bbo, symbols = _contract_output(run)
    if not (run / output).is_file():
        return None

    def parts() -> tuple[Any, in_parts.TextParts | None]:
        readable = in_parts.output_parts(run / output, bbo, symbols)
        assert readable is not None  # the output is a file
        return readable
    return parts, bbo.get("levels", 0), (run / output).stat().st_size


def _log_parts(log: Path, flags: bool) -> _EventParts:
    """The events of one of the built-in gateway's logs (BBO, or depth) to hold a part at a time."""
    levels = 0 if log.suffix == ".bbo" else logs.levels_of(logs.read_depth(log).dtype)
    return (lambda: (in_parts.log_parts(log, flags), None)), levels, log.stat().st_size


def _held(base: _EventParts | None, head: _EventParts | None, digests: tuple[str, str], base_run: Path,
          head_run: Path, flags: bool) -> dict[str, Any] | None:
    """Head's events held to base's a part at a time (gateways/in_parts.py), as _compare holds them read whole
    (memory: a part, or a bucket of stocks); None when they cannot be (the whole read says what they hold)."""
    if base is None or head is None:
        return None
    (base_parts, base_levels, base_bytes), (head_parts, head_levels, head_bytes) = base, head
    out = _outcome(*digests, 0, 0)
    if base_levels != head_levels:  # one side publishes BBO, the other depth (or another N): no event can match
        base_kind, head_kind = (_kind_of(np.zeros(0, logs.depth_dtype(n) if n else logs.BBO_DTYPE))
                                for n in (base_levels, head_levels))
        out["difference_words"] = f"base's events are {base_kind}, head's {head_kind}: not the same stream"
        return out
    scen = rundir.read_json(base_run / "manifest.json")["scenario"]
    kinds = blackbox.reference_run(Path(scen["capture"]), scen.get("feed", ""))
    judged = in_parts.held(head_parts, base_parts, base_levels, flags, kinds, keep_stamps=False,
                           meter=Progress("", None), spill=head_run, size=max(base_bytes, head_bytes))
    if judged is None:
        return None
    out.update({"base_events": judged.reference_events, "head_events": judged.events, **judged.counts,
                "differing_events": sum(judged.counts.values()), "first_difference": judged.first,
                **({"flood": judged.flood} if judged.flood else {})})
    check = {**judged.counts, "reference_events": judged.reference_events, "first_difference": judged.first,
             "flood": judged.flood}
    out["difference_words"] = difference_words(check).replace("reference events", "base events")
    return out


def _depth_digest(run: Path) -> tuple[str, int] | None:
    """The built-in gateway's depth log (levels = N): its digest and events, read a part at a time (memory: a part);
    None when the run logged no depth."""
    if not (run / "depth.dep").is_file():
        return None
    summary = logs.depth_summary(logs.read_depth(run / "depth.dep"))
    return summary.digest, summary.events


def compare_depth(base_run: Path, head_run: Path) -> dict[str, Any] | None:
    """Head's depth events against base's, as compare_bbo's; None when neither logged depth. Their events are read
    whole only when the digests differ: 50 M nasdaq-day messages at 5 levels are 20 M events, 3.7 GB."""
    a, b = _depth_digest(base_run), _depth_digest(head_run)
    if a is None and b is None:
        return None
    if a is None or b is None:
        only = "head" if a is None else "base"
        return {"equal": False, "words": bbo_words(False), "base_digest": a[0] if a else "",
                "head_digest": b[0] if b else "", "base_events": a[1] if a else 0,
                "head_events": b[1] if b else 0, "difference_words": f"only {only} logged depth"}
    if a[0] == b[0]:
        return _outcome(a[0], b[0], a[1], b[1])
    held = _held(_log_parts(base_run / "depth.dep", False), _log_parts(head_run / "depth.dep", False),
                 (a[0], b[0]), base_run, head_run, False)
    return held or _compare((logs.read_depth(base_run / "depth.dep").records, a[0]),
                    (logs.read_depth(head_run / "depth.dep").records, b[0]), base_run, ())


def _outcome(da: str, db: str, na: int, nb: int) -> dict[str, Any]:
    return {"base_digest": da, "head_digest": db, "equal": da == db, "words": bbo_words(da == db),
            "base_events": na, "head_events": nb}


def _compare(base: tuple[np.ndarray, str], head: tuple[np.ndarray, str], base_run: Path,
             also: tuple[str, ...]) -> dict[str, Any]:
    (a, da), (b, db) = base, head
    out = _outcome(da, db, int(a.size), int(b.size))
    if da == db:
        return out
    manifest = rundir.read_json(base_run / "manifest.json")
    scen = manifest["scenario"]
    _, kinds = blackbox.reference(Path(scen["capture"]), scen.get("feed", ""))
    if a.dtype != b.dtype:  # one side publishes BBO, the other depth (or another N): no event can match
        out["difference_words"] = (f"base's events are {_kind_of(a)}, head's {_kind_of(b)}: not the same stream")
        return out

    def frame(rec: np.ndarray) -> pd.DataFrame:
        if rec.dtype == logs.LEVEL_CHANGE_DTYPE or "bids" in rec.dtype.names:
            return blackbox.depth_frame(rec).astype(np.int64, copy=False)
        return pd.DataFrame({c: rec[f].astype(np.int64)
                             for c, f in [*zip(blackbox.COLUMNS, _FIELDS), *((x, x) for x in also)]})
    check = blackbox.check(frame(b), frame(a), kinds, "exact", also=also)
    out.update({k: check[k] for k in blackbox.DIFFERENCES})
    out["differing_events"] = sum(check[k] for k in blackbox.DIFFERENCES)
    out["first_difference"] = check.get("first_difference")
    out["difference_words"] = difference_words(check).replace("reference events", "base events")
    return out


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            flat.update(_flatten(v, key + "."))
        elif isinstance(v, (int, bool)) or v is None:
            flat[key] = v
    return flat


def compare_counters(base_run: Path, head_run: Path) -> dict[str, list[Any]]:
    """Counters of gateway.json that differ (per type, rejections, sequence, book), base then head."""
    keep = ("decode", "mold", "sequence", "book", "bbo_events", "messages_received")
    a, b = (rundir.read_json(r / "gateway.json") for r in (base_run, head_run))
    fa = _flatten({k: a[k] for k in keep if k in a})
    fb = _flatten({k: b[k] for k in keep if k in b})
    # Layout, not behaviour (index_mixed_hash: what revisions before the direct-mapped index reported).
    skip = ("book.memory_bytes", "book.index_grows", "book.index_overflowed", "book.index_mixed_hash",
            "book.levels_off_ladder")
    return {k: [fa.get(k), fb.get(k)] for k in sorted(set(fa) | set(fb))
            if fa.get(k) != fb.get(k) and not k.startswith(skip)}
