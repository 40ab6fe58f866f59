"""Sessions generated on demand by itch-synth into the cache (reports/cache/): the same arguments give the same
bytes, so a file already there is the one asked for. Compare's larger workload and sweeps over the number of
symbols use them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .. import paths


def session(args: list[str], name: str) -> Path:
    """reports/cache/NAME, made by `itch-synth ARGS --out` when missing (itch-synth writes NAME.tmp and renames
    it when whole, so an interrupted one is never taken for the session)."""
    out = paths.cache_dir() / name
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([str(paths.tool("itch-synth")), *args, "--out", str(out)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise RuntimeError(f"itch-synth {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return out


def for_sweep(profile: str, seed: int, messages: int, symbols: int, mix: str = "") -> Path:
    """A session of the profile over N generated symbols, in its own mix or the one given (TYPE=WEIGHT,...), one
    message a packet (packets/s = messages/s)."""
    args = ["--profile", profile, "--seed", str(seed), "--messages", str(messages), "--symbol-count", str(symbols),
            "--per-packet", "1", "--port", "26477"] + (["--mix", mix] if mix else [])
    tag = f"-mix-{mix.replace('=', '').replace(',', '-').replace('.', 'p')}" if mix else ""
    return session(args, f"generated-{profile}-seed{seed}-{messages}msg-{symbols}sym{tag}.pcap")
