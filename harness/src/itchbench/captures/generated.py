"""Sessions generated on demand by itch-synth into the cache (reports/cache/): the same arguments give the same
bytes, so a file already there is the one asked for. Compare's larger workload and sweeps over the number of
symbols use them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .. import cache, paths


def session(args: list[str], name: str) -> Path:
    """reports/cache/NAME, made by `itch-synth ARGS --out` when missing (whole or not at all: cache.made_once)."""
    def make(partial: Path) -> None:
        done = subprocess.run([str(paths.tool("itch-synth")), *args, "--out", str(partial)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise RuntimeError(f"itch-synth {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return cache.made_once(paths.cache_dir() / name, make)


def for_sweep(profile: str, seed: int, messages: int, symbols: int, mix: str = "") -> Path:
    """A session of the profile over N generated symbols, in its own mix or the one given (TYPE=WEIGHT,...), one
    message a packet (packets/s = messages/s)."""
    args = ["--profile", profile, "--seed", str(seed), "--messages", str(messages), "--symbol-count", str(symbols),
            "--per-packet", "1", "--port", "26477"] + (["--mix", mix] if mix else [])
    tag = f"-mix-{mix.replace('=', '').replace(',', '-').replace('.', 'p')}" if mix else ""
    return session(args, f"generated-{profile}-seed{seed}-{messages}msg-{symbols}sym{tag}.pcap")
