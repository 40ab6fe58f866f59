"""The BBO digest of a capture in simulation: the fixtures' golden value and
what a lossless live run must reproduce."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from .. import paths
from ..analysis import logs
from ..depth_levels import Levels
from ..tools import run_tool
from .inspect import gateway_feed_args


@functools.lru_cache(maxsize=32)
def _digest(capture: str, mtime_ns: int, gateway: str, feed_args: str) -> tuple[str, int]:
    with tempfile.TemporaryDirectory(prefix="itchbench-digest-") as tmp:
        run_tool("itch-gateway", ["--source", "sim", "--capture", capture, "--out", tmp, "--no-latency-log",
                                  *feed_args.split()], ok_codes=(0, 1))
        bbo = logs.read_bbo(Path(tmp) / "bbo.bbo")
        return logs.bbo_digest(bbo), len(bbo.records)


def sim_bbo(capture: Path, feed: str = "") -> tuple[str, int]:
    """(digest, events) of the BBO stream of the capture's feed in simulation."""
    return _digest(str(capture), capture.stat().st_mtime_ns, str(paths.tool("itch-gateway")),
                   " ".join(gateway_feed_args(capture, feed)))


@functools.lru_cache(maxsize=8)
def _depth_digest(capture: str, mtime_ns: int, gateway: str, feed_args: str, levels: Levels) -> tuple[str, int]:
    with tempfile.TemporaryDirectory(prefix="itchbench-digest-") as tmp:
        run_tool("itch-gateway", ["--source", "sim", "--capture", capture, "--out", tmp, "--no-latency-log",
                                  "--levels", str(levels), *feed_args.split()], ok_codes=(0, 1))
        depth = logs.read_depth(Path(tmp) / "depth.dep")
        summary = logs.depth_summary(depth)
        return summary.digest, summary.events


def sim_depth(capture: Path, levels: Levels, feed: str = "") -> tuple[str, int]:
    """(digest, events) of the depth stream of N levels (or every level's changes) of the capture's feed in
    simulation."""
    return _depth_digest(str(capture), capture.stat().st_mtime_ns, str(paths.tool("itch-gateway")),
                         " ".join(gateway_feed_args(capture, feed)), levels)
