"""One run as it is carried out: its directory, resolved values, environment
and what the transport reports. Its own module, below the runner, the
transports and the reconciliation that all use it, so imports run one way."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Run:
    dir: Path
    run_id: str
    values: dict[str, Any]
    label: str
    env: dict[str, Any]
    echo: bool
    extras: dict[str, Any] = field(default_factory=dict)  # what the transport reports, into summary.json
    subscriber_procs: list[tuple[subprocess.Popen, Path, str]] = field(default_factory=list)  # proc, out, mode
    brokered_procs: list[tuple[subprocess.Popen, Path, str, str]] = field(default_factory=list)  # proc, out, mode, broker
    broker_procs: dict[str, subprocess.Popen] = field(default_factory=dict)  # mqtt, kafka: the run's brokers
    # Subscribers of the depth stream (levels = N): proc, out, mode, how (tcp, mqtt, kafka).
    depth_procs: list[tuple[subprocess.Popen, Path, str, str]] = field(default_factory=list)
    cpu_noise: dict[str, dict[str, float]] = field(default_factory=dict)  # per CPU over the run (runs/noise.py)
    # A contract gateway's revision: {"worktree", "commit", "prebuilt"} (compare, bisect); empty: its repository.
    under_test: dict[str, Any] = field(default_factory=dict)
    profiler: Any = None  # runs/profiler.Profiler when the scenario asks for [profile]
    follower: Any = None  # analysis/latency_follow.LatencyFollower: the report's second pass, counted during a sim
    bbo_follower: Any = None  # analysis/bbo_follow.BboDigestFollower: the BBO log's digest, taken during a sim
    counting: Any = None  # a Future of the capture's facts (captures/inspect.facts_of) when counted beside the run

    def say(self, text: str) -> None:
        if self.echo:
            print(text, file=sys.stderr, flush=True)
