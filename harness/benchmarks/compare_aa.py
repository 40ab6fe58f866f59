"""A/A: one revision compared with itself, many times — how often does a
timing verdict fire where nothing changed? (And are instruction counts the
same every time?)

    .venv/bin/python harness/benchmarks/compare_aa.py [--rev HEAD] [--comparisons 20] [--repetitions 9]

Prints per comparison its wall time and the metrics it called faster or
slower, then the false-positive rate: comparisons with any timing verdict,
and timing verdicts over all timing metrics judged.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from itchbench import paths


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rev", default="HEAD")
    p.add_argument("--comparisons", type=int, default=20)
    p.add_argument("--repetitions", type=int, default=9)
    args = p.parse_args()
    fired_comparisons = fired = judged = 0
    instruction_ratios: set[float] = set()
    instruction_changes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="itchbench-aa-") as tmp:
        for i in range(1, args.comparisons + 1):
            out = Path(tmp) / f"aa-{i}"
            start = time.monotonic()
            proc = subprocess.run([str(Path(sys.executable).parent / "itchbench"), "compare", args.rev, args.rev,
                                   "--repetitions", str(args.repetitions), "--out", str(out),
                                   "--repo", str(paths.repo_root())], capture_output=True, text=True)
            seconds = time.monotonic() - start
            result = json.loads((out / "compare.json").read_text())
            calls = []
            for label, table in result["metrics"].items():
                for name, v in table.items():
                    if name.startswith("instructions."):
                        if "ratio" in v:
                            instruction_ratios.add(v["ratio"])
                            if v["ratio"] != 1.0:
                                instruction_changes.append(f"comparison {i} {label}:{name} {v['base']} -> {v['head']}")
                        continue
                    judged += 1
                    if v["verdict"] in ("faster", "slower"):
                        calls.append(f"{label}:{name} {v['verdict']} ({v['delta_pct']:+.1f} %, p {v['p']:.2g})")
            fired += len(calls)
            fired_comparisons += bool(calls)
            print(f"comparison {i:2}: exit {proc.returncode}, {seconds:.0f} s, "
                  f"{'; '.join(calls) if calls else 'no timing verdict'}", flush=True)
    print(f"comparisons with a timing verdict: {fired_comparisons} of {args.comparisons}; "
          f"timing verdicts: {fired} of {judged} metrics judged; "
          f"instruction ratios seen: {sorted(instruction_ratios)}")
    for change in instruction_changes:
        print(f"  instructions differ: {change}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
