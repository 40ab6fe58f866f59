"""A real TCP subscriber of the gateway's BBO stream, as its own process
(it has to run inside the run's network namespace, where the gateway is).

    python -m itchbench.subscriber --port PORT --out FILE [--stuck]

Writes every byte received to FILE until the gateway closes the connection.
--stuck connects and never reads: the subscriber that must not slow the
gateway down.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="itchbench-subscriber", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--stuck", action="store_true", help="connect, then never read")
    args = p.parse_args(argv)
    deadline = time.monotonic() + 10
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", args.port), timeout=2)
            break
        except OSError as e:
            if time.monotonic() > deadline:
                print(f"itchbench-subscriber: cannot connect to 127.0.0.1:{args.port}: {e}", file=sys.stderr)
                return 1
            time.sleep(0.05)
    if args.stuck:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        open(args.out, "wb").close()
        while True:  # holds the connection, never reads: until killed
            time.sleep(3600)
        return 0
    sock.settimeout(None)
    with open(args.out, "wb") as out:
        while chunk := sock.recv(1 << 16):
            out.write(chunk)
    return 0


if __name__ == "__main__":
    sys.exit(main())
