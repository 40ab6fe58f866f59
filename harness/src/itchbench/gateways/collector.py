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
it has. FILE.json says how it ended.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import struct
import sys
import time
from pathlib import Path

RECORD = struct.Struct("<QQQQIIHB5x")  # gateway/log/FORMAT.md, kind 2: seq ts bid_qty ask_qty bid_px ask_px locate flags


class _Stop(Exception):
    pass


def _raise_stop(*_: object) -> None:
    raise _Stop


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="itchbench-collector", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--via", choices=("tcp", "udp"), required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--format", choices=("csv", "jsonl", "itchbench"), required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_stop)
    out = open(args.out, "w", buffering=1 << 20)
    ended, chunks, nbytes = "eof", 0, 0
    kind = socket.SOCK_STREAM if args.via == "tcp" else socket.SOCK_DGRAM
    sock = socket.socket(socket.AF_INET, kind)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.via == "udp":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind(("127.0.0.1", args.port))
    print(f"LISTENING {sock.getsockname()[1]}", flush=True)
    pending = b""
    try:
        if args.via == "tcp":
            sock.listen(1)
            conn, _ = sock.accept()
            print("CONNECTED", flush=True)
            read = lambda: conn.recv(1 << 16)  # noqa: E731
        else:
            read = lambda: sock.recv(1 << 16)  # noqa: E731
        while True:
            data = read()
            t = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            if not data:
                break
            chunks += 1
            nbytes += len(data)
            pending += data
            if args.format == "itchbench":
                whole = len(pending) // RECORD.size * RECORD.size
                for r in RECORD.iter_unpack(pending[:whole]):
                    out.write(f"{t} {r[0]},{r[6]},{r[4]},{r[2]},{r[5]},{r[3]}\n")
                pending = pending[whole:]
            else:
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    out.write(f"{t} {line.decode(errors='replace').rstrip(chr(13))}\n")
            if args.via == "udp" and pending and args.format != "itchbench":  # a datagram ends its last line
                out.write(f"{t} {pending.decode(errors='replace')}\n")
                pending = b""
    except _Stop:
        ended = "sigterm"
    finally:
        if pending:
            out.write(f"{time.clock_gettime_ns(time.CLOCK_MONOTONIC)} {pending.decode(errors='replace')}\n")
        out.close()
        Path(args.out + ".json").write_text(json.dumps({"ended": ended, "reads": chunks, "bytes": nbytes,
                                                        "partial_tail_bytes": len(pending)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
