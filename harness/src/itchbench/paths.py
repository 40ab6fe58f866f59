"""Where the repository, its build and its fixtures are."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator


class ToolMissing(RuntimeError):
    """A C++ tool has not been built."""


def repo_root() -> Path:
    """The repository this package was installed from (editable install)."""
    return Path(__file__).resolve().parents[3]


def build_dir() -> Path:
    return Path(os.environ.get("ITCHBENCH_BUILD_DIR", repo_root() / "build"))


_TOOL_DIRS = {
    "itch-inspect": "gateway",
    "latency-log-compact": "gateway",
    "itch-gateway": "gateway",
    "pcap-feed": "gateway",
    "process-meter": "gateway",
    "bbo-shm-subscriber": "gateway",
    "bbo-tcp-subscribers": "gateway",
    "bbo-mqtt-subscriber": "gateway",
    "bbo-kafka-subscriber": "gateway",
    "itch-synth": "replay",
    "itch2pcap": "replay",
    "serial-replay": "replay",
    "udp-replay": "replay",
    "snapshot-server": "replay",
    "mold-request-server": "replay",
    "itch-faults": "replay",
}


GATEWAY_OVERRIDE = "ITCHBENCH_GATEWAY"  # the gateway of another build (itchbench compare)


def tool(name: str) -> Path:
    """Path of a built C++ tool, or ToolMissing with the command that builds it.
    ITCHBENCH_GATEWAY names another build's itch-gateway; every other tool
    stays this checkout's, so only the system under test differs."""
    override = os.environ.get(GATEWAY_OVERRIDE) if name == "itch-gateway" else None
    path = Path(override) if override else build_dir() / _TOOL_DIRS[name] / name
    if not path.is_file():
        raise ToolMissing(f"{path} is not built; run: bash harness/bin/setup")
    return path


def library(name: str) -> Path:
    """Path of a built shared library of this checkout (the log reader), or ToolMissing."""
    path = build_dir() / "gateway" / name
    if not path.is_file():
        raise ToolMissing(f"{path} is not built; run: bash harness/bin/setup")
    return path


@contextlib.contextmanager
def gateway_override(gateway: Path) -> Iterator[None]:
    """Within the block, paths.tool("itch-gateway") is that build's gateway."""
    old = os.environ.get(GATEWAY_OVERRIDE)
    os.environ[GATEWAY_OVERRIDE] = str(gateway)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(GATEWAY_OVERRIDE, None)
        else:
            os.environ[GATEWAY_OVERRIDE] = old


def cache_dir() -> Path:
    """Where what can be made again is kept (itchbench/cache.py)."""
    return repo_root() / "reports" / "cache"


def fixtures_dir() -> Path:
    return repo_root() / "fixtures"
