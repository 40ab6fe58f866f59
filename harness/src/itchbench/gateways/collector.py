"""The receiving end of a gateway's BBO output, as its own process (it has
to run inside the run's network namespace, where the gateway is).

    python -m itchbench.gateways.collector --via tcp|udp --port PORT --format csv|jsonl|itchbench --out FILE

Listens on 127.0.0.1:PORT (0: any free port) and prints `LISTENING <port>`;
over TCP it takes one connection (prints `CONNECTED`) and reads it to its
end. Every line (csv, jsonl) or 48-byte record (itchbench) goes to FILE as
`<t_recv> <text>`: t_recv is CLOCK_MONOTONIC in ns when the bytes that
completed it arrived (below), the text the line as received (a record as a
csv line). Nothing is parsed or judged here: a garbage line is kept for the
checks to count. It stops at the connection's end, or on SIGTERM with what
it has (over UDP, with what the kernel still holds for its socket too).
FILE.json says how it ended, and over UDP how many datagrams its socket
dropped (the kernel's count for it: a full receive buffer).

A stamp is the kernel's time of arrival (SO_TIMESTAMPNS, moved onto
CLOCK_MONOTONIC by the two clocks' difference when read), whenever the
collector got to read it: a collector busy or off its CPU does not make a
stamp late.
Over UDP it is the datagram's own. Over TCP the kernel keeps one stamp for
the bytes queued together, their last's: a read's lines other than its last
may have come earlier, but not before the collector's read before it
returned (when bytes waited for this read as it began), or not before this
read began (when none did); the last read's last line too, as the stream's
end may have come with it. FILE.json counts them (`events_earlier_than_stamp`)
with the most that bound allows (`max_earlier_ns`; `median_earlier_ns` of
the reads counted), and the lines the kernel gave no stamp for, or a stamp
that cannot be their arrival, stamped when read (`events_stamp_unknown`);
and those whose stamp a set of CLOCK_REALTIME may have moved, stamped
minus the time their read returned (CLOCK_MONOTONIC: they came before it),
so left out of wire to wire and held to their send by that bound alone
(`events_across_clock_set`, with `clock_sets` and `largest_clock_set_ns`;
class Arrivals).
The kernel turns stamps on a moment after the first socket asks: the
collector says LISTENING only once a datagram of its own came back stamped
before it was read.
"""

from __future__ import annotations

import argparse
import array
import fcntl
import functools
import json
import os
import signal
import socket
import struct
import sys
import termios
import time
from pathlib import Path
from typing import Any, Callable

# Datagrams read after SIGTERM at most: 8 MiB of socket buffer holds fewer (each costs ~700 bytes or more).
QUEUED_MOST = 200_000
RECORD = struct.Struct("<QQQQIIHB5x")  # gateway/log/FORMAT.md, kind 2: seq ts bid_qty ask_qty bid_px ask_px locate flags


POLL_S = 0.1  # how soon a blocked read looks at the stop request
# A read takes all that waits, up to this: a burst read in one piece is stamped once, when it was read, where
# pieces of 64 KiB had the later ones wait for the earlier ones' writing (a 200 KiB burst of the C++ example
# gateway at top speed: 4 reads, and 1,854 of its 5,833 events read after a read that left bytes queued).
READ_MOST = 4 << 20
# A stream is read into one buffer and copied out by the length read: recvmsg(READ_MOST) allocated and freed 4 MiB a
# read. A datagram is read whole, whatever its size, into a buffer of its own.
DATAGRAM_MOST = 1 << 16
_READ_BUFFER = bytearray(READ_MOST)
_READ_VIEW = memoryview(_READ_BUFFER)
SO_TIMESTAMPNS = 35  # Linux (asm-generic/socket.h); the socket module does not name it
# A line of a stream longer than this is no event's (64 levels a side is about 6 KiB): its first LONGEST_LINE bytes
# are kept, marked with CUT_MARK, and the rest is dropped up to its end, counted. Held whole while it came, a gateway
# that wrote 400 MB with no line end took this process to 1.2 GB, copying it all at every read (45 s).
LONGEST_LINE = 64 << 10
CUT_MARK = "…(cut)".encode()
TIMESPEC = struct.Struct("@qq")


class _Stop:
    """SIGTERM's request, looked at between reads: raised from the handler instead, it could land after a read
    returned and before its data was taken, and lose it."""
    requested = False


def _request_stop(*_: object) -> None:
    _Stop.requested = True


def socket_drops(sock: socket.socket) -> int | None:
    """The kernel's count of datagrams dropped at this UDP socket (the last column of /proc/self/net/udp, the
    socket's own line found by its inode); None when it cannot be read."""
    inode = str(os.fstat(sock.fileno()).st_ino)
    try:
        lines = Path("/proc/self/net/udp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 12 and fields[9] == inode:
            return int(fields[-1])
    return None


class _Output:
    """What has come, as lines stamped with the arrival of the read that completed them, into the output file, and
    how exact those stamps are."""

    def __init__(self, path: str, fmt: str, via: str) -> None:
        self.out = open(path, "w", buffering=1 << 20)
        self.fmt, self.via = fmt, via
        self.pending = b""
        self.cutting = False  # the line under way passed LONGEST_LINE: its rest is dropped
        self.lines_cut = self.bytes_cut = 0
        self.reads = self.bytes = 0
        self.earlier = self.max_earlier_ns = self.unknown = self.last_exact = self.last_bound = 0
        self.left_out = 0  # lines stamped -returned: their arrival left out for a set of the clock (Arrivals)
        self.bounds = array.array("q")  # each counted read's bound, ns

    def take(self, data: bytes, t: int, earlier_ns: int | None = 0) -> None:
        """A read's bytes, stamped t (the arrival of its last bytes; negative: left out, minus when the read returned,
        which they came before). earlier_ns: how much earlier than t its other lines may have come (0: all came at t;
        None: t is the read's time, not an arrival)."""
        self.reads += 1
        self.bytes += len(data)
        lines = 0
        if self.fmt == "itchbench":
            self.pending += data
            whole = len(self.pending) // RECORD.size * RECORD.size
            for r in RECORD.iter_unpack(self.pending[:whole]):
                self.out.write(f"{t} {r[0]},{r[6]},{r[4]},{r[2]},{r[5]},{r[3]}\n")
            lines = whole // RECORD.size
            self.pending = self.pending[whole:]
        else:
            if self.cutting:
                data = self._past_cut(data)
            data = self.pending + data if self.pending else data
            text_bytes: bytes | None = None
            if self.via == "udp":  # a datagram ends its last line; an empty one holds none
                text_bytes = (data[:-1] if data.endswith(b"\n") else data) if data else None
            else:
                end = data.rfind(b"\n")
                text_bytes, self.pending = (None, data) if end < 0 else (data[:end], data[end + 1:])
                if len(self.pending) > LONGEST_LINE:
                    self.lines_cut += 1
                    self.bytes_cut += len(self.pending) - LONGEST_LINE
                    self.pending, self.cutting = self.pending[:LONGEST_LINE], True
            if text_bytes is not None:  # a read's lines share its stamp: written as one string, no work a line
                text = text_bytes.decode(errors="replace")
                if "\r" in text:  # a line ending in CR LF is its text alone
                    text = "\n".join(line.rstrip("\r") for line in text.split("\n"))
                self.out.write(f"{t} " + text.replace("\n", f"\n{t} ") + "\n")
                lines = text.count("\n") + 1
        self.last_exact = 0  # of this read's lines, the one counted as stamped at its own arrival
        self.last_bound = earlier_ns or 0
        if earlier_ns is None:
            self.unknown += lines
        elif t < 0:
            self.left_out += lines
        elif earlier_ns > 0 and lines:
            # The last bytes end the last whole line, unless they begin a line not yet whole.
            self.last_exact = 0 if self.pending else 1
            if lines > self.last_exact:
                self.earlier += lines - self.last_exact
                self._bound(earlier_ns)

    def _past_cut(self, data: bytes) -> bytes:
        """A read's bytes while a line too long is being dropped: those after its end (none when it goes on), its kept
        start marked as cut once it has ended."""
        end = data.find(b"\n")
        self.bytes_cut += len(data) if end < 0 else end
        if end < 0:
            return b""
        self.pending += CUT_MARK
        self.cutting = False
        return data[end:]

    def ended(self) -> None:
        """The stream's end came: its FIN, if it came before the last read, gave that read its stamp, so the read's
        last line may have come earlier too."""
        if self.last_exact and self.last_bound:
            self.earlier += 1
            self._bound(self.last_bound)
        self.last_exact = 0

    def _bound(self, ns: int) -> None:
        self.bounds.append(ns)
        self.max_earlier_ns = max(self.max_earlier_ns, ns)

    def median_earlier_ns(self) -> int:
        """The median of the counted reads' bounds (the largest is max_earlier_ns); 0 when none was counted."""
        return sorted(self.bounds)[len(self.bounds) // 2] if self.bounds else 0

    def close(self) -> None:
        if self.cutting:
            self.pending += CUT_MARK
        if self.pending:
            self.out.write(f"{time.clock_gettime_ns(time.CLOCK_MONOTONIC)} {self.pending.decode(errors='replace')}\n")
        self.out.close()


def stamp_counts(w2w: dict[str, Any] | None) -> tuple[int, int, int, int]:
    """Of a run's wire-to-wire figures (summary.json): (events stamped when read, for want of an arrival stamp;
    events that may have come before their stamp; by at most, ns, the largest of the reads' bounds and their
    median); zeros when not counted."""
    c = (w2w or {}).get("collector") or {}
    return (int(c.get("events_stamp_unknown") or 0), int(c.get("events_earlier_than_stamp") or 0),
            int(c.get("max_earlier_ns") or 0), int(c.get("median_earlier_ns") or 0))


def stamp_words(w2w: dict[str, Any] | None) -> str:
    """What the collector's stamps leave uncertain, in words; "" when every event has its own arrival stamp."""
    unknown, earlier, most, median = stamp_counts(w2w)
    c = (w2w or {}).get("collector") or {}
    left, sets = int(c.get("events_across_clock_set") or 0), int(c.get("clock_sets") or 0)
    if not (unknown or earlier or left) or not w2w:
        return ""
    words = []
    if left:
        words.append(f"{left:,} events were left out of these figures: CLOCK_REALTIME, which the kernel stamps "
                     f"arrivals on, was set {sets:,} time{'s' if sets != 1 else ''} during the run (by up to "
                     f"{int(c.get('largest_clock_set_ns') or 0) / 1000:,.1f} µs) while they may have waited to be "
                     "read, and their stamps would be off by it; each was held to its send by when it was read")
    if unknown:
        words.append(f"{unknown:,} of its {w2w['events']:,} events were stamped when the collector read them (the "
                     "kernel gave no arrival stamp): late by the collector's wait, of a length not known, which wire "
                     "to wire holds as well as the gateway's")
    if earlier:
        words.append(f"{earlier:,} of its {w2w['events']:,} events came in one read with later bytes and carry "
                     f"their arrival (the kernel keeps one stamp for bytes queued together): each came before its "
                     f"stamp by no more than the time since its read began, or since the read before returned when "
                     f"bytes waited: up to {most / 1000:,.1f} µs (median of those reads {median / 1000:,.1f} µs)")
    return "; ".join(words)


def queued_bytes(sock: socket.socket) -> int:
    """What the kernel holds for the socket, unread (FIONREAD: TCP, the stream's bytes; UDP, the next datagram's)."""
    n = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, n)
    return n[0]


# CLOCK_REALTIME's lead over CLOCK_MONOTONIC moves only when the clock is set (a slew changes both clocks' rate
# alike). A set beyond CLOCK_SET_NS is one; a quick look at the lead this far off has it measured closely again.
CLOCK_SET_NS = 20_000
LOOKS_MOVED_NS = 5_000


def _kernel_stamp(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The kernel's arrival stamp in a read's ancillary data (CLOCK_REALTIME, ns); None when it gave none."""
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= TIMESPEC.size:
            sec, nsec = TIMESPEC.unpack_from(value)
            return sec * 1_000_000_000 + nsec
    return None


class Arrivals:
    """The kernel's arrival stamps (CLOCK_REALTIME) moved onto CLOCK_MONOTONIC by CLOCK_REALTIME's lead, looked at
    with every read. A set of the clock while bytes waited to be read (a VM's time kept in steps: +500 µs sets in
    one CI test command) moves their stamp by the set (gateway/source/kernel_stamps.hpp, for the gateway's own).
    The read whose look sees the lead moved, and every read after it until one begins with nothing waiting, have
    their stamps left out — counted, left out of wire to wire, the lines held to their send by when their read
    returned alone (left_out_stamp) — rather than given a time off by a set. A look sees only how far the lead moved
    since the last, not how many sets moved it or when: a stamp taken between two of them is off by either lead (a
    brought gateway's event put 1.9 ms before its send, with sets of 2 ms every 20 ms and a quiet feed)."""

    def __init__(self, monotonic: Callable[[], int] = functools.partial(time.clock_gettime_ns, time.CLOCK_MONOTONIC),
                 realtime: Callable[[], int] = functools.partial(time.clock_gettime_ns, time.CLOCK_REALTIME)) -> None:
        self.monotonic, self.realtime = monotonic, realtime
        self.lead, self.measured = 0, False
        self.sets = self.largest_set_ns = 0
        self.after_set = False  # a set was seen, and no read since began with nothing waiting

    def _measure(self) -> int:
        """The lead: of five reads of one clock between two of the other, the closest pair (a read interrupted
        between its clocks would be off by the interruption)."""
        best = None
        for _ in range(5):
            before, real, after = self.monotonic(), self.realtime(), self.monotonic()
            if best is None or after - before < best[0]:
                best = (after - before, real - (before + after) // 2)
        assert best is not None
        return best[1]

    def _look(self) -> bool:
        """Whether the clock was set since the last look."""
        quick = self.realtime() - self.monotonic()
        if self.measured and abs(quick - self.lead) < LOOKS_MOVED_NS:
            return False
        lead = self._measure()
        moved, was_measured = abs(lead - self.lead), self.measured
        self.lead, self.measured = lead, True
        if was_measured and moved > CLOCK_SET_NS:
            self.sets += 1
            self.largest_set_ns = max(self.largest_set_ns, moved)
            self.after_set = True
            return True
        return False

    def of(self, ancillary: list[tuple[int, int, bytes]], waited: bool) -> int | None:
        """A read's arrival on CLOCK_MONOTONIC; 0 when left out for a set of the clock; None when the kernel gave no
        stamp. waited: bytes waited as the read began (else its bytes all came after it began)."""
        stamp = _kernel_stamp(ancillary)
        if stamp is None:
            return None
        if self._look() or (waited and self.after_set):
            return 0
        self.after_set = False
        return stamp - self.lead


def left_out_stamp(returned: int) -> int:
    """The stamp of lines whose arrival was left out (Arrivals.of's 0): minus when their read returned, on
    CLOCK_MONOTONIC, which they came before. Negative, so that no figure takes it for an arrival; an event shown
    received before its send by it was (blackbox.before_the_send)."""
    return -returned


def _read(sock: socket.socket) -> tuple[bytes, list[tuple[int, int, bytes]]]:
    """One read of a stream: its bytes and ancillary data."""
    n, ancillary, _, _ = sock.recvmsg_into([_READ_BUFFER], socket.CMSG_SPACE(TIMESPEC.size))
    return bytes(_READ_VIEW[:n]), ancillary


STAMPS_ON_WITHIN_S = 2.0  # the kernel's deferred work runs in microseconds to milliseconds


def stamps_on() -> socket.socket:
    """A socket that asked the kernel for arrival stamps, once the kernel gives them: it turns them on a moment
    after the first socket asks (deferred work), and what comes before is unstamped. Held open, it keeps them on.
    Proof: a byte sent over a loopback connection of its own comes back stamped before the send returned (TCP, so
    that the run's count of the namespace's UDP datagrams holds only the feed's; a byte the kernel did not stamp
    comes with no stamp). A kernel that gives none within STAMPS_ON_WITHIN_S is said on stderr, and the lines then
    read are counted as stamped when read."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname()) as client:
            sock, _ = server.accept()
            give_up = time.monotonic() + STAMPS_ON_WITHIN_S
            while time.monotonic() < give_up:
                client.sendall(b"?")
                sent = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                _, ancillary, _, _ = sock.recvmsg(1, socket.CMSG_SPACE(TIMESPEC.size))
                t = _arrivals.of(ancillary, True)
                if t and t <= sent:
                    return sock
    print(f"itchbench-collector: the kernel gave no receive stamps within {STAMPS_ON_WITHIN_S:g} s: lines are "
          "stamped when read", file=sys.stderr, flush=True)
    _stamps_trusted[0] = False
    return sock


_stamps_trusted = [True]  # False: the kernel was not seen stamping (stamps_on gave up), so no stamp is an arrival
_arrivals = Arrivals()


def read_datagram(sock: socket.socket) -> tuple[bytes, int, int | None]:
    """A datagram, its arrival, and how much earlier than that its lines came: 0, or None when the kernel gave no
    stamp (then the read's time stands for it)."""
    # Whether anything waited matters only after a set of the clock (Arrivals): asked then alone.
    waited = _arrivals.after_set and queued_bytes(sock) > 0
    data, ancillary, _, _ = sock.recvmsg(DATAGRAM_MOST, socket.CMSG_SPACE(TIMESPEC.size))
    returned = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    t = _arrivals.of(ancillary, waited) if _stamps_trusted[0] else None
    return (data, t or left_out_stamp(returned), 0) if t is not None else (data, returned, None)


def _take_queued(sock: socket.socket, output: _Output) -> None:
    """Told to stop over UDP: the datagrams the kernel still holds for the socket are the gateway's output too
    (a collector that fell behind has them queued): read to the last, then end. At most QUEUED_MOST of them: more
    than the socket's buffer can hold, so a sender that never stops cannot keep it here."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sock.setblocking(False)
    for _ in range(QUEUED_MOST):
        try:
            output.take(*read_datagram(sock))
        except BlockingIOError:
            return


def _read_stream(source: socket.socket, output: _Output, listening: int) -> None:
    """A TCP connection read to its end (or the stop request), each read stamped with the arrival of its last
    bytes, and with the earliest its other bytes can have come: when the last read returned if bytes waited as
    this one began, else when it began; before the first read, when the collector began to listen."""
    last = listening
    while not _Stop.requested:
        try:
            began = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            waited = queued_bytes(source) > 0
            data, ancillary = _read(source)
        except TimeoutError:
            continue
        returned = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        t = _arrivals.of(ancillary, waited) if _stamps_trusted[0] else None
        if t and t > returned:  # no arrival can come after the read that took it
            t = None
        if not data:  # the stream's end
            output.ended()
            return
        since = last if waited else began
        last = returned
        if t is None:
            output.take(data, returned, None)
        else:
            output.take(data, t or left_out_stamp(returned), max(0, t - since) if t else 0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="itchbench-collector", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--via", choices=("tcp", "udp"), required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--format", choices=("csv", "jsonl", "itchbench"), required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _request_stop)
    output = _Output(args.out, args.format, args.via)
    ended = "eof"
    kind = socket.SOCK_STREAM if args.via == "tcp" else socket.SOCK_DGRAM
    sock = socket.socket(socket.AF_INET, kind)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    stamping = stamps_on()  # before LISTENING: nothing the gateway sends comes unstamped
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)  # a connection taken keeps it
    if args.via == "udp":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind(("127.0.0.1", args.port))
    sock.settimeout(POLL_S)
    if args.via == "tcp":
        sock.listen(1)  # before LISTENING is said: a gateway may connect the moment it is
    listening = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    print(f"LISTENING {sock.getsockname()[1]}", flush=True)
    try:
        source: socket.socket | None = sock
        if args.via == "tcp":
            source = None
            while source is None and not _Stop.requested:
                try:
                    source, _ = sock.accept()
                except TimeoutError:
                    continue
                source.settimeout(POLL_S)
                print("CONNECTED", flush=True)
        if source is not None and args.via == "tcp":
            _read_stream(source, output, listening)
        while source is not None and args.via == "udp" and not _Stop.requested:
            try:  # an empty datagram is a datagram, not an end
                output.take(*read_datagram(source))
            except TimeoutError:
                continue
        if _Stop.requested:
            ended = "sigterm"
            if args.via == "udp":
                _take_queued(sock, output)
    finally:
        stamping.close()
        tail = len(output.pending)
        output.close()
        info = {"ended": ended, "reads": output.reads, "bytes": output.bytes, "partial_tail_bytes": tail,
                "events_earlier_than_stamp": output.earlier, "max_earlier_ns": output.max_earlier_ns,
                "median_earlier_ns": output.median_earlier_ns(),
                "events_stamp_unknown": output.unknown, "events_across_clock_set": output.left_out,
                "clock_sets": _arrivals.sets, "largest_clock_set_ns": _arrivals.largest_set_ns,
                "long_lines_cut": output.lines_cut,
                "long_line_bytes_dropped": output.bytes_cut}
        if args.via == "udp":
            info["socket_drops"] = socket_drops(sock)
        Path(args.out + ".json").write_text(json.dumps(info) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
