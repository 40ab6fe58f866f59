"""A capture rewritten for the run namespace's loopback, for tcpreplay.

Only the feed (pcap-feed, docs/feeds.md), then zero MACs, every destination
127.0.0.1 and source 127.0.0.2, the feed's port to the gateway's, checksums
fixed (tcprewrite), as docs/transports.md explains. Cached by content under
reports/cache/, so a capture is rewritten once. A binary ITCH file is turned
into a pcap with itch2pcap (from a decompressed copy when compressed).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .. import cache, paths
from ..tools import ToolError, run_tool
from .compressed import DecompressError, plain_copy
from .fixtures import sha256_of
from .inspect import facts_of


class RewriteError(RuntimeError):
    """tcprewrite could not rewrite the capture."""


def cache_dir() -> Path:
    folder = paths.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def loopback_capture(capture: Path, port: int, feed: str = "") -> Path:
    """The capture's feed, and nothing else, ready for tcpreplay on the
    namespace's loopback (a binary ITCH file becomes such a pcap first)."""
    key = sha256_of(capture)[:16]
    flow = feed.replace(":", "_") or "feed"  # the named feed, or the capture's own choice
    out = cache_dir() / f"{key}-{flow}-lo{port}.pcap"
    if out.is_file():
        return out
    if facts_of(capture, feed)["kind"] == "itch":
        try:
            plain = plain_copy(capture)
        except DecompressError as e:
            raise RewriteError(str(e)) from e
        feed_only = cache.made_once(cache_dir() / f"{key}.pcap", lambda partial: run_tool(
            "itch2pcap", [plain, "--out", partial, "--port", str(port)]))
    else:  # the feed alone, as untagged Ethernet: other flows, cooked headers and VLAN/QinQ tags left behind
        try:
            feed_only = cache.made_once(cache_dir() / f"{key}-{flow}.eth.pcap", lambda partial: run_tool(
                "pcap-feed", [capture, "--out", partial, "--plain-ethernet", *(["--feed", feed] if feed else [])]))
        except ToolError as e:
            raise RewriteError(str(e)) from e
    facts = facts_of(feed_only)
    # The feed is one destination, so one port is mapped: tcprewrite looks a port up in its map by walking it, and
    # a map of every port (1-65535) cost 0.4 ms a packet (2.8 s of CPU for the 7,001 of seed-workload.pcap, 0.01 s
    # with the one port).
    feed_port = int(facts["feed"].rsplit(":", 1)[1])

    def rewrite(partial: Path) -> None:
        cmd = ["tcprewrite", f"--infile={feed_only}", f"--outfile={partial}", "--enet-dmac=00:00:00:00:00:00",
               "--enet-smac=00:00:00:00:00:00", "--dstipmap=0.0.0.0/0:127.0.0.1/32",
               "--srcipmap=0.0.0.0/0:127.0.0.2/32", f"--portmap={feed_port}:{port}", "--fixcsum"]
        if facts["linktype"] != 1:
            cmd.append("--dlt=enet")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RewriteError(f"tcprewrite failed on {capture}: {proc.stderr.strip()}")
    return cache.made_once(out, rewrite)
