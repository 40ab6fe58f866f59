"""Where the time moved between two builds (compare --profile): each side's folded stacks summed over its runs,
the functions whose own share of the samples changed most, and a differential flame graph of the head's stacks
coloured by how each box's share moved from the base's (analysis/flamegraph.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ..analysis import flamegraph, profile

MOST = 12


def folded(runs: list[Path]) -> Counter[str]:
    """The runs' profile/folded.txt, summed; empty when none was profiled."""
    out: Counter[str] = Counter()
    for run in runs:
        path = run / "profile" / "folded.txt"
        if path.is_file():
            for line in path.read_text().splitlines():
                stack, _, n = line.rpartition(" ")
                if stack and n.isdigit():
                    out[stack] += int(n)
    return out


def moved(base_runs: list[Path], head_runs: list[Path], out_dir: Path, label: str) -> dict[str, Any] | None:
    """The functions whose own share moved most, and the differential flame graph; None without profiles on
    both sides."""
    base, head = folded(base_runs), folded(head_runs)
    if not base or not head:
        return None
    own_base = {h.function: h.self_share for h in profile.hottest(base, 10_000)}
    own_head = {h.function: h.self_share for h in profile.hottest(head, 10_000)}
    rows = [{"function": f, "base_share": own_base.get(f, 0.0), "head_share": own_head.get(f, 0.0),
             "moved": own_head.get(f, 0.0) - own_base.get(f, 0.0)} for f in set(own_base) | set(own_head)]
    rows.sort(key=lambda r: (-abs(r["moved"]), r["function"]))
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in label) + "-profile-diff.svg"
    drawn = flamegraph.write(out_dir / name, head, f"{label}: head's stacks, coloured by the move from base "
                             f"(red grew, blue shrank); {sum(head.values()):,} samples against {sum(base.values()):,}",
                             base=base)
    return {"base_samples": sum(base.values()), "head_samples": sum(head.values()), "functions": rows[:MOST],
            "flamegraph": name if drawn else None}
