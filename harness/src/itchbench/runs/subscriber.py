"""A real TCP subscriber of the gateway's BBO stream, as its own process
(it has to run inside the run's network namespace, where the gateway is).

    python -m itchbench.runs.subscriber --port PORT --out FILE [--mode MODE]

Writes every byte received to FILE until the gateway closes the connection;
beside it FILE.recv, one record per whole BBO frame with the time the recv
that completed it returned (CLOCK_MONOTONIC, gateway/log/FORMAT.md kind 4),
and FILE.json with its local TCP port(s), by which the gateway's
per-subscriber counters name it. Modes:
  fast       reads as fast as it can (the one whose bytes are checked)
  stuck      connects and never reads: it must not slow the gateway down
  slow       reads 4 KiB every 50 ms
  reconnect  reads, and disconnects and reconnects every 3 s
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import time
from pathlib import Path

import numpy as np

from .. import atomic
from ..analysis import logs

MODES = ("fast", "stuck", "slow", "reconnect")
RECONNECT_EVERY_S = 3.0
FRAME = logs.BBO_DTYPE.itemsize  # the gateway publishes each BBO event as its 48-byte BBO record


def _connect(port: int, patience_s: float) -> socket.socket | None:
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError as e:
            if time.monotonic() > deadline:
                print(f"itchbench-subscriber: cannot connect to 127.0.0.1:{port}: {e}", file=sys.stderr)
                return None
            time.sleep(0.05)


def _record(info: Path, ports: list[int]) -> None:
    atomic.write_text(info, json.dumps({"local_ports": ports}) + "\n")


def _stop(*_: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one stop is enough: a second must not cut the first's close short
    sys.exit(0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="itchbench-subscriber", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--mode", choices=MODES, default="fast")
    args = p.parse_args(argv)
    # Stopped by the harness (a stuck or slow one at the end, at any moment): its logs are open before it
    # connects, created with the stop held back, and closed whole whenever the stop comes.
    signal.signal(signal.SIGTERM, _stop)
    out_path = Path(args.out)
    info = out_path.with_suffix(".json")
    ports: list[int] = []
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    receipts = ReceiveLog(out_path.with_suffix(".recv"))
    out = open(out_path, "wb")
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        sock = _connect(args.port, 10)
        if sock is None:
            return 1
        ports.append(sock.getsockname()[1])
        _record(info, ports)
        if args.mode == "stuck":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            while True:  # holds the connection, never reads: until stopped
                time.sleep(3600)
        return _receive(sock, args, out, receipts, info, ports, args.mode == "reconnect")
    finally:
        # From here on a stop changes nothing. Left to the handler, a SIGTERM could cut the logs' close short, and
        # one that came while the interpreter exits found the default action again: a subscriber that had ended
        # by itself was reported killed by SIGTERM (a busy machine, the harness's stop meeting the gateway's close).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        out.close()
        receipts.close()


class ReceiveLog:
    """Stamps whole BBO frames as they complete; a partial frame waits for the next chunk. A reconnecting
    subscriber starts its stream again on a frame boundary: the gateway sends whole frames to each connection."""

    def __init__(self, path: Path) -> None:
        self.writer = logs.LogWriter(path, logs.KIND_SUBSCRIBER, stage_clock=1)  # CLOCK_MONOTONIC
        self.pending = b""

    def add(self, chunk: bytes, t_received: int) -> None:
        data = self.pending + chunk
        whole = len(data) // FRAME * FRAME
        self.pending = data[whole:]
        if whole:
            frames = np.frombuffer(data[:whole], dtype=logs.BBO_DTYPE)
            rec = np.zeros(len(frames), logs.SUBSCRIBER_DTYPE)
            rec["seq"], rec["stock_locate"], rec["t_received"] = frames["seq"], frames["stock_locate"], t_received
            self.writer.append(rec)

    def reset(self) -> None:
        self.pending = b""

    def close(self) -> None:
        self.writer.close()


def _receive(sock: socket.socket, args: argparse.Namespace, out, receipts: ReceiveLog, info: Path,
             ports: list[int], reconnecting: bool) -> int:
    sock.settimeout(0.2 if reconnecting else None)
    connected_at = time.monotonic()
    while True:
        if reconnecting and time.monotonic() - connected_at > RECONNECT_EVERY_S:
            sock.close()
            sock = _connect(args.port, 2)
            if sock is None:
                return 0  # the gateway is gone
            sock.settimeout(0.2)
            connected_at = time.monotonic()
            ports.append(sock.getsockname()[1])
            _record(info, ports)
            receipts.reset()
            continue
        try:
            chunk = sock.recv(4096 if args.mode == "slow" else 1 << 16)
        except socket.timeout:
            continue
        t_received = time.monotonic_ns()
        if not chunk:
            return 0  # the gateway closed the stream: done
        out.write(chunk)
        receipts.add(chunk, t_received)
        if args.mode == "slow":
            time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
