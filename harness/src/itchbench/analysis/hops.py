"""End-to-end latency, hop by hop: the sender's send log, the gateway's
latency log and each subscriber's receive log joined by sequence number, on
one host clock (gateway/log/FORMAT.md).

When a run has another process's stamps to join (a send log, a
subscriber's), the gateway's stamps are moved onto CLOCK_MONOTONIC first
(to_monotonic: its TSC line drifts from it by some ppm over a run, which
would otherwise show in every hop between processes); hops within the
gateway alone stay on its own clock, as its stages do. Per message the stamps are, in path
order: intended send, actual send,
kernel receive, read returned, decoded, book applied, published, and per BBO
event each subscriber's receive. A hop is the difference of two consecutive
stamps that the transport has, so the hops of a message add up exactly to its
end-to-end latency; the table's means add up too (its percentiles do not,
and the table says so).

Latency from the intended send time is free of coordinated omission: a
gateway that stalls holds up a sender that waits for it (a serial line), and
only the intended time still sees the whole stall.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import rundir
from . import logs
from .histogram import KeyedHistogram, describe_counts
from .trend import Trend

if TYPE_CHECKING:
    import pandas as pd

# (column, what it is)
STAMPS: list[tuple[str, str]] = [
    ("t_intended", "sender: due"),
    ("t_sent", "sender: send called"),
    ("t_kernel", "kernel receive"),
    ("t_read", "read returned"),
    ("t_decoded", "decoded"),
    ("t_book", "book applied"),
    ("t_published", "published"),
]
HOP_NAMES = {
    ("t_intended", "t_sent"): "sender (due → send called)",
    ("t_sent", "t_kernel"): "network (send called → kernel receive)",
    ("t_sent", "t_read"): "line and pty (write called → read returned)",
    ("t_kernel", "t_read"): "wake-up (kernel → read returned)",
    ("t_read", "t_decoded"): "parse (user-space receipt → parse complete)",
    ("t_decoded", "t_book"): "book (decoded → book applied)",
    ("t_book", "t_published"): "publish (book applied → published)",
}
SUBSCRIBER, DEPTH_SUBSCRIBER = "t_sub_", "t_depth_"  # the column prefixes of the BBO's and depth's subscribers


def is_depth(column: str) -> bool:
    """Whether a subscriber column is a depth subscriber's."""
    return column.startswith(DEPTH_SUBSCRIBER)


def bbo_events_only(to: str) -> bool:
    """Whether the chain ending at `to` counts BBO events only: a BBO subscriber's does; the book's (every
    message) and a depth subscriber's (any message with a depth event) do not."""
    return to != "t_book" and not is_depth(to)


COLUMNS = ["hop", "count", "p50", "p99", "p999", "mean", "cumulative_p50", "cumulative_mean", "share_of_mean"]


@dataclass
class Chain:
    """Every message's stamps (int64 ns, 0 where absent) and the subscribers' receive stamps."""

    frame: pd.DataFrame                 # seq, bbo, and the STAMPS columns present
    subscribers: list[str]              # columns t_sub_<name> (BBO events only), then t_depth_<name>
    sender: str                         # "udp-replay", "serial-replay", "tcpreplay" or "" (simulation)


def packets_sent(path: Path) -> np.ndarray:
    """The send log's records of the packets (or lines) that left, in the order they were sent: not those whose
    send failed, nor the copies a line's faults dropped. A heartbeat's and an end of session's count is 0."""
    rec = logs.read_log(path, logs.KIND_SEND, quiet=True).records  # a sender that failed is the run's failure
    return rec[(rec["flags"] & (logs.SEND_FAILED | logs.SEND_DROPPED)) == 0]


def last_message_packet(sent: np.ndarray) -> int | None:
    """Where in packets_sent's records the last packet that carried a message is (what follows it are ends of
    session and heartbeats); None when none carried one."""
    carried = np.flatnonzero(sent["count"] > 0)
    return int(carried[-1]) if carried.size else None


def send_stamps(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seq, t_intended, t_sent) per message of the packets that left, the earliest send of each sequence number
    (on either line: a copy a line's faults dropped never left)."""
    rec = packets_sent(path)
    rec = rec[rec["count"] > 0]
    counts = rec["count"].astype(np.int64)
    seq = logs.expand_runs(rec["seq"], counts)
    intended = np.repeat(rec["t_intended"].astype(np.int64), counts)
    sent = np.repeat(rec["t_sent"].astype(np.int64), counts)
    order = np.lexsort((sent, seq))  # a duplicated packet, or a copy on each line, counts at its earliest send
    seq, first = np.unique(seq[order], return_index=True)
    return seq, intended[order[first]], sent[order[first]]


def lookup(keys: np.ndarray, table_keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """values at table_keys == keys (table_keys sorted, unique); 0 where absent."""
    pos = np.searchsorted(table_keys, keys)
    pos = np.minimum(pos, max(table_keys.size - 1, 0))
    found = table_keys.size > 0
    hit = (table_keys[pos] == keys) if found else np.zeros(keys.size, bool)
    out = np.zeros(keys.size, dtype=np.int64)
    if found:
        out[hit] = values[pos[hit]]
    return out


def span_words(ns: int) -> str:
    """A time difference in words: ns, µs, ms or s, whichever reads best."""
    for unit, size in (("s", 10**9), ("ms", 10**6), ("µs", 10**3)):
        if ns >= size:
            return f"{ns / size:,.1f} {unit}"
    return f"{ns:,} ns"


GATEWAY_STAMPS = ("t_kernel", "t_read", "t_decoded", "t_book", "t_published")


def to_monotonic(stamps: np.ndarray, clock: dict[str, Any]) -> np.ndarray:
    """The gateway's stage stamps moved onto CLOCK_MONOTONIC: its TSC line meets CLOCK_MONOTONIC at the anchor and
    is `offset_from_monotonic_ns_at_end` away when that was measured; the drift between is taken as linear. Zero
    (no stamp) stays zero; a gateway that did not measure it leaves the stamps as they are."""
    offset, at, anchor = (clock.get(k) for k in ("offset_from_monotonic_ns_at_end", "offset_measured_at_ns",
                                                 "anchor_ns"))
    if offset is None or at is None or anchor is None or at <= anchor:
        return stamps
    t = stamps.astype(np.int64)
    moved = t - np.rint((t - anchor) * (offset / (at - anchor))).astype(np.int64)
    return np.where(t != 0, moved, 0)


def gateway_clock(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / "gateway.json"
    return rundir.read_json(path).get("clock", {}) if path.is_file() else {}


class ChainReader:
    """Joins latency records, a chunk at a time, with the run's send log and
    subscriber logs (read whole: one record a packet or BBO event), every
    gateway stamp moved onto CLOCK_MONOTONIC."""

    def __init__(self, run_dir: Path) -> None:
        run_dir = Path(run_dir)
        self.clock = gateway_clock(run_dir)
        self.sender = ""
        self.send: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        send_path = run_dir / "send.log"
        if send_path.is_file():
            self.send = send_stamps(send_path)
            self.sender = "serial-replay" if (run_dir / "serial-replay.json").is_file() else "udp-replay"
        elif (run_dir / "tcpreplay.txt").is_file():
            self.sender = "tcpreplay"
        self._subs: list[tuple[str, np.ndarray, np.ndarray]] = []
        def number(path: Path) -> tuple[int, str]:
            name = path.stem.rsplit("-", 1)[1]
            return (int(name), "") if name.isdigit() else (1 << 62, name)
        # The BBO stream's subscribers (subscriber-K.recv, t_sub_K), then the depth stream's
        # (depth-subscriber-K.recv, t_depth_K: TCP, shm, mqtt, kafka), each seq's first receive.
        for pattern, prefix in (("subscriber-*.recv", SUBSCRIBER), ("depth-subscriber-*.recv", DEPTH_SUBSCRIBER)):
            for path in sorted(run_dir.glob(pattern), key=number):
                # A subscriber that died is named by the run's reconciliation: what it received is used here.
                sub = logs.read_log(path, logs.KIND_SUBSCRIBER, quiet=True).records
                keys, first = np.unique(sub["seq"].astype(np.int64), return_index=True)
                self._subs.append((f"{prefix}{path.stem.rsplit('-', 1)[1]}", keys,
                                   sub["t_received"].astype(np.int64)[first]))
        self.subscribers = [name for name, _, _ in self._subs]
        # Only stamps of other processes call for the move: without them, hops stay on the gateway's clock.
        self.moves = self.send is not None or bool(self._subs)

    def hop_tables(self, stamped: set[str]) -> HopTables | None:
        """The hop tables of a run whose messages have these of the gateway's stamps (some message has each),
        with the send log's stamps when it holds any; None without a stamp before the book's (a run that stamped
        the book alone has no hop)."""
        present = set(stamped)
        if self.send is not None and self.send[1].any():
            present |= {"t_intended", "t_sent"}
        return HopTables(sorted(present), self.subscribers) if len(chain_to_book(present)) >= 2 else None

    def joined_subscribers(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """Each subscriber's (column name, seqs sorted and distinct, first receive time of each)."""
        return list(self._subs)

    def columns(self, rec: np.ndarray) -> dict[str, np.ndarray]:
        """seq, bbo, the STAMPS the records and send log have, and per record t_sub_<name> (BBO events only) and
        t_depth_<name> (any message: a depth event is not flagged in the latency log)."""
        clock = self.clock if self.moves else {}
        seq = rec["seq"].astype(np.int64)
        cols: dict[str, Any] = {"seq": seq, "bbo": (rec["flags"] & logs.FLAG_BBO_EVENT) != 0}
        if self.send is not None:
            cols["t_intended"] = lookup(seq, self.send[0], self.send[1])
            cols["t_sent"] = lookup(seq, self.send[0], self.send[2])
        if "t_receive" in rec.dtype.names:  # version 1: one receive stamp, no wake-up or parse hop of its own
            for name in ("t_decoded", "t_book", "t_published"):
                cols[name] = to_monotonic(rec[name], clock)
            cols["t_read"] = to_monotonic(rec["t_receive"], clock)
        else:  # a stage the log does not hold is all zero, as a stage not stamped
            for name in GATEWAY_STAMPS:
                cols[name] = to_monotonic(logs.stamp(rec, name), clock)
        for name, keys, received in self._subs:
            found = lookup(seq, keys, received)
            cols[name] = found if is_depth(name) else np.where(cols["bbo"], found, 0)
        return {c: cols[c] for c in ["seq", "bbo", *[c for c, _ in STAMPS if c in cols], *self.subscribers]}


def accepted(records: np.ndarray) -> np.ndarray:
    """The records of messages the gateway applied (rejected ones have no later stamps)."""
    ok = (records["flags"] & logs.FLAG_REJECTED) == 0
    return records if ok.all() else records[ok]


def chain(run_dir: Path) -> Chain | None:
    """Every message's joined stamps, in memory, or None when the run recorded no latency log."""
    lat_path = Path(run_dir) / "latency.lat"
    if not lat_path.is_file():
        return None
    import pandas as pd  # here: a run imports this module before its gateway starts, and pandas takes 0.3 s

    reader = ChainReader(run_dir)
    lat = logs.read_latency(lat_path)
    return Chain(pd.DataFrame(reader.columns(accepted(logs.in_ns(lat, lat.records)))), reader.subscribers,
                 reader.sender)


CO_MEASURES = [("from the intended send time (free of coordinated omission)", "t_intended"),
               ("from the actual send time", "t_sent"),
               ("service time (read returned → book)", "t_read")]


def chain_to_book(present: set[str] | list[str]) -> list[str]:
    """The present stamps, in path order, up to t_book ([] without t_book): a chain of one stamp has no hop."""
    stamps = [c for c, _ in STAMPS if c in present]
    return stamps[: stamps.index("t_book") + 1] if "t_book" in stamps else []


FULL_SUBSCRIBER_CHAINS = 8  # subscribers whose every hop is tabled (in the order of their numbers)


class HopTables:
    """Hop-by-hop tables and the coordinated-omission table, accumulated a
    chunk of chain columns at a time in exact histograms (analysis/histogram.py),
    so that a run of any length is tabled in bounded memory. `present` are the
    stamps some message has (a transport without a kernel stamp leaves t_kernel
    all zero): they make the chain, which needs a stamp before t_book."""

    def __init__(self, present: list[str], subscribers: list[str]) -> None:
        stamps = [c for c, _ in STAMPS if c in present]
        self.chains: dict[str, list[str]] = {"t_book": chain_to_book(present)}
        if len(self.chains["t_book"]) < 2:
            raise ValueError(f"no hop to the book among the stamps {stamps}")
        # A depth event is published after the book, whether or not the BBO changed (and was stamped published).
        for sub in filter(is_depth, subscribers):
            self.chains[sub] = self.chains["t_book"] + [sub]
        if "t_published" in stamps:
            to_published = stamps[: stamps.index("t_published") + 1]
            for k, sub in enumerate(s for s in subscribers if not is_depth(s)):
                # Every hop for the first few; for the rest, where they differ: the gateway to published as one
                # hop, then theirs. Hundreds of subscribers then cost three histograms each, not a dozen.
                short = list(dict.fromkeys([to_published[0], "t_published"]))
                self.chains[sub] = (to_published if k < FULL_SUBSCRIBER_CHAINS else short) + [sub]
        # Per chain, each hop and its cumulative latency from the chain's start. The first hop is its own
        # cumulative, and the last cumulative is the end-to-end figure: one histogram serves both.
        self._hops: dict[str, list[tuple[KeyedHistogram, KeyedHistogram]]] = {}
        for to, c in self.chains.items():
            chain_hops = []
            for i in range(len(c) - 1):
                hop = KeyedHistogram()
                chain_hops.append((hop, hop if i == 0 else KeyedHistogram()))
            self._hops[to] = chain_hops
        self._co = {start: KeyedHistogram() for _, start in CO_MEASURES if start in present}
        self.co_starts = list(self._co)  # the starts of the latency to the book, in CO_MEASURES order
        # Does latency grow through the run? From the intended send (everything: the sender's lag too) and from the
        # actual send (the gateway and the network alone), both against the time each message was due.
        self._trend = Trend()
        self._served_trend = Trend()
        self._served = [0, 0]  # the first due time, the last book stamp: the span the messages were served in

    def counted(self, hops: dict[str, list[tuple[KeyedHistogram, KeyedHistogram]]], co: dict[str, KeyedHistogram],
                trend: Trend, served_trend: Trend, served: list[int] | None) -> None:
        """Takes what was counted elsewhere (the compiled scan) for these chains and starts, instead of add()."""
        if {to: len(h) for to, h in hops.items()} != {to: len(h) for to, h in self._hops.items()} or \
                set(co) != set(self._co):
            raise ValueError("the counted hops or starts are not those of these chains")
        self._hops, self._co, self._trend, self._served_trend = hops, co, trend, served_trend
        self._served = served or [0, 0]

    def add(self, cols: dict[str, np.ndarray]) -> None:
        """One chunk of ChainReader.columns."""
        bbo = cols["bbo"]
        for to, stamps in self.chains.items():
            have = bbo.copy() if bbo_events_only(to) else np.ones(bbo.size, dtype=bool)
            for c in stamps:
                have &= cols[c] != 0
            every = bool(have.all())  # then no copies
            rows = {c: cols[c] if every else cols[c][have] for c in stamps}
            start = rows[stamps[0]]
            for i, ((hop, cumulative), a, b) in enumerate(zip(self._hops[to], stamps, stamps[1:])):
                hop.add(rows[b] - rows[a])
                if i:
                    cumulative.add(rows[b] - start)
        book = cols["t_book"]
        for start, hist in self._co.items():
            t = cols[start]
            ok = (t != 0) & (book != 0)
            hist.add(book[ok] - t[ok])
            if start == "t_sent" and "t_intended" in cols:
                both = ok & (cols["t_intended"] != 0)
                self._served_trend.add(cols["t_intended"][both], book[both] - t[both])
            if start == "t_intended" and ok.any():
                self._trend.add(t[ok], book[ok] - t[ok])
                first, last = int(t[ok].min()), int(book[ok].max())
                self._served = [first if not self._served[0] else min(first, self._served[0]),
                                max(last, self._served[1])]

    def table(self, to: str) -> pd.DataFrame:
        """Hop by hop to `to` ("t_book": every message; a subscriber column: BBO events it received; a depth
        subscriber's: the depth events it received), over the messages that have every stamp of the chain."""
        import pandas as pd

        stamps = self.chains[to]
        total = describe_counts(*self._hops[to][-1][1].values_counts())
        rows = []
        for (hop, cumulative), a, b in zip(self._hops[to], stamps, stamps[1:]):
            name = (f"subscriber {b[len(SUBSCRIBER):]} (published → received)" if b.startswith(SUBSCRIBER) else
                    f"depth subscriber {b[len(DEPTH_SUBSCRIBER):]} (book applied → received)" if is_depth(b) else
                    HOP_NAMES.get((a, b), f"{a} → {b}"))
            rows.append(_row(name, describe_counts(*hop.values_counts()),
                             describe_counts(*cumulative.values_counts()), total["mean"]))
        label = dict(STAMPS).get(stamps[0], stamps[0])
        last = "depth subscriber received" if is_depth(stamps[-1]) else "subscriber received"
        end = dict(STAMPS).get(stamps[-1], last)
        rows.append(_row(f"end to end ({label} → {end})", total, total, total["mean"]))
        return pd.DataFrame(rows, columns=COLUMNS)

    def coordinated_omission(self) -> pd.DataFrame:
        """Latency to the book from the intended send time, from the actual send time, and the gateway's own
        service time (read returned → book), side by side: every message."""
        import pandas as pd

        rows = []
        for name, start in CO_MEASURES:
            if start not in self._co:
                continue
            s = describe_counts(*self._co[start].values_counts())
            trend = {"t_intended": self._trend, "t_sent": self._served_trend}.get(start, Trend()).result()
            served = self._served[1] - self._served[0] if start == "t_intended" else 0
            rows.append({"measure": name, "count": int(s["count"]), "p50": s["p50"], "p99": s["p99"],
                         "p999": s["p999"], "max": s["max"], "mean": s["mean"],
                         "slope_us_per_s": trend.get("slope_us_per_s", float("nan")),
                         "served_span_ns": served if served > 0 else float("nan")})
        return pd.DataFrame(rows, columns=["measure", "count", "p50", "p99", "p999", "max", "mean", "slope_us_per_s",
                                           "served_span_ns"])


def _row(name: str, s: dict[str, float], c: dict[str, float], total_mean: float) -> dict[str, Any]:
    return {"hop": name, "count": int(s["count"]), "p50": s["p50"], "p99": s["p99"], "p999": s["p999"],
            "mean": s["mean"], "cumulative_p50": c["p50"], "cumulative_mean": c["mean"],
            "share_of_mean": s["mean"] / total_mean if total_mean else float("nan")}
