"""The receiving end of a gateway's BBO output, as its own process (it has
to run inside the run's network namespace, where the gateway is).

    python -m itchbench.gateways.collector --via tcp|udp --port PORT --format csv|jsonl|itchbench --out FILE

Listens on 127.0.0.1:PORT (0: any free port) and prints `LISTENING <port>`;
over TCP it takes one connection (prints `CONNECTED`) and reads it to its
end. Every line (csv, jsonl) or 48-byte record (itchbench) goes to FILE as
`<t_recv> <text>`: t_recv is CLOCK_MONOTONIC in ns when the read that
completed it returned, the text the line as received (a record as a csv
line). Nothing is parsed or judged here: a garbage line is kept for the
checks to count. It stops at the connection's end, or on SIGTERM with what
it has (over UDP, with what the kernel still holds for its socket too).
FILE.json says how it ended, and over UDP how many datagrams its socket
dropped (the kernel's count for it: a full receive buffer).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import sys
import time
from pathlib import Path

# Datagrams read after SIGTERM at most: 8 MiB of socket buffer holds fewer (each costs ~700 bytes or more).
QUEUED_MOST = 200_000
RECORD = struct.Struct("<QQQQIIHB5x")  # gateway/log/FORMAT.md, kind 2: seq ts bid_qty ask_qty bid_px ask_px locate flags


POLL_S = 0.1  # how soon a blocked read looks at the stop request


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
    """What has come, as lines stamped with the read that completed them, into the output file."""

    def __init__(self, path: str, fmt: str, via: str) -> None:
        self.out = open(path, "w", buffering=1 << 20)
        self.fmt, self.via = fmt, via
        self.pending = b""
        self.reads = self.bytes = 0

    def take(self, data: bytes, t: int) -> None:
        self.reads += 1
        self.bytes += len(data)
        self.pending += data
        if self.fmt == "itchbench":
            whole = len(self.pending) // RECORD.size * RECORD.size
            for r in RECORD.iter_unpack(self.pending[:whole]):
                self.out.write(f"{t} {r[0]},{r[6]},{r[4]},{r[2]},{r[5]},{r[3]}\n")
            self.pending = self.pending[whole:]
        else:
            *lines, self.pending = self.pending.split(b"\n")
            for line in lines:
                self.out.write(f"{t} {line.decode(errors='replace').rstrip(chr(13))}\n")
        if self.via == "udp" and self.pending and self.fmt != "itchbench":  # a datagram ends its last line
            self.out.write(f"{t} {self.pending.decode(errors='replace')}\n")
            self.pending = b""

    def close(self) -> None:
        if self.pending:
            self.out.write(f"{time.clock_gettime_ns(time.CLOCK_MONOTONIC)} {self.pending.decode(errors='replace')}\n")
        self.out.close()


def _take_queued(sock: socket.socket, output: _Output) -> None:
    """Told to stop over UDP: the datagrams the kernel still holds for the socket are the gateway's output too
    (a collector that fell behind has them queued): read to the last, then end. At most QUEUED_MOST of them: more
    than the socket's buffer can hold, so a sender that never stops cannot keep it here."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sock.setblocking(False)
    for _ in range(QUEUED_MOST):
        try:
            data = sock.recv(1 << 16)
        except BlockingIOError:
            return
        output.take(data, time.clock_gettime_ns(time.CLOCK_MONOTONIC))


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
    if args.via == "udp":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind(("127.0.0.1", args.port))
    sock.settimeout(POLL_S)
    if args.via == "tcp":
        sock.listen(1)  # before LISTENING is said: a gateway may connect the moment it is
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
        while source is not None and not _Stop.requested:
            try:
                data = source.recv(1 << 16)
            except TimeoutError:
                continue
            t = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            if not data and args.via == "tcp":  # the stream's end (over UDP, an empty datagram is one)
                break
            output.take(data, t)
        if _Stop.requested:
            ended = "sigterm"
            if args.via == "udp":
                _take_queued(sock, output)
    finally:
        tail = len(output.pending)
        output.close()
        info = {"ended": ended, "reads": output.reads, "bytes": output.bytes, "partial_tail_bytes": tail}
        if args.via == "udp":
            info["socket_drops"] = socket_drops(sock)
        Path(args.out + ".json").write_text(json.dumps(info) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
