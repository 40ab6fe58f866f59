"""A gateway's perf profile, from `perf script` text: stacks folded (root first, `a;b;c COUNT`), the hottest
functions by their own samples and by the samples they are on the stack of, and the flame graph drawn from the
folded stacks (analysis/flamegraph.py)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

_BRACKETED = re.compile(r"<[^<>]*>|\([^()]*\)")


def short(symbol: str) -> str:
    """A C++ symbol without its template arguments and parameter lists: the function a reader looks for."""
    previous = None
    while previous != symbol:
        previous, symbol = symbol, _BRACKETED.sub("", symbol)
    return symbol.strip() or "[unknown]"


def fold(script: Iterable[str]) -> Counter[str]:
    """`perf script -F comm,tid,period,ip,sym` lines -> {root;…;leaf: samples}. A sample's frames follow its
    header, one a line (leaf first), and a blank line ends it; an unresolved frame is [unknown]."""
    stacks: Counter[str] = Counter()
    frames: list[str] = []
    in_sample = False
    for line in script:
        if not line.strip():
            if in_sample:
                stacks[";".join(reversed(frames)) or "[unknown]"] += 1
            frames, in_sample = [], False
        elif line[0] in " \t":
            parts = line.strip().split(None, 1)
            name = short(parts[1]) if len(parts) > 1 else "[unknown]"
            if name != "[unknown]" or not frames:  # the unwinder's end marker is no frame
                frames.append(name)
        else:
            in_sample = True
    if in_sample:
        stacks[";".join(reversed(frames)) or "[unknown]"] += 1
    return stacks


@dataclass(frozen=True)
class Hot:
    function: str
    self_samples: int
    total_samples: int
    self_share: float
    total_share: float


def hottest(stacks: Counter[str], most: int = 20) -> list[Hot]:
    """The functions with the most samples of their own (leaf), with the share of the samples they are on."""
    total = sum(stacks.values())
    own: Counter[str] = Counter()
    on: Counter[str] = Counter()
    for stack, n in stacks.items():
        frames = stack.split(";")
        own[frames[-1]] += n
        for f in set(frames):
            on[f] += n
    return [Hot(f, n, on[f], n / total, on[f] / total) for f, n in own.most_common(most)] if total else []


def report_section(summary: dict) -> list[str]:
    """A run report's Profile section from its summary (transport_details.profile): [] without one."""
    p = (summary.get("transport_details") or {}).get("profile")
    if not p:
        return []
    md = ["## Profile", ""]
    if p.get("error") or not p.get("samples"):
        why = p.get("error") or ("perf took no sample: the gateway may have ended before perf attached (perf needs "
                                 "a fraction of a second to start); profile a longer input")
        return md + [f"**No profile**: {why} (docs/profile.md).", ""]
    md += [f"`perf record -e {p['event']} -F {p['frequency']}` on the gateway's process (pid {p['pid']}), call "
           f"graphs by {p['call_graph']}: {p['samples']:,} samples, {p['stacks']:,} distinct stacks. "
           + (f"[Flame graph]({p['flamegraph']}) (hover a box for its share, click to zoom)." if p.get("flamegraph")
              else ""), "",
           "| function | own samples | own share | on the stack |", "|---|---:|---:|---:|"]
    md += [f"| `{h['function'][:90]}` | {h['self_samples']:,} | {100 * h['self_share']:.1f} % | "
           f"{100 * h['total_share']:.1f} % |" for h in p["top"]]
    return md + [""]
