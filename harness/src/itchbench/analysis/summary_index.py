"""A one-page comparison of several runs (the demo's closing report)."""

from __future__ import annotations

import time
from pathlib import Path

from .. import paths, rundir


def _fmt(v: object) -> str:
    return "—" if v is None else f"{v:,.0f}" if isinstance(v, (int, float)) else str(v)


def write(runs: list[Path], golden: dict[str, str | None], *, title: str, out_dir: Path | None = None) -> Path:
    out_dir = out_dir or paths.repo_root() / "reports" / "demo"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.md"
    lines = [f"# {title}", "",
             "Latency from the gateway's receive stamp to the book applied, in nanoseconds, percentiles by numpy's "
             "`higher` method (index ⌈(n−1)·p⌉ of the sorted sample). For UDP the receive stamp is the kernel's; for serial the one-way column adds the wire "
             "(sender's stamp to receive, serialisation at the baud rate included).", "",
             "| transport | verdict | messages | BBO events | digest = golden | p50 | p99 | p99.9 | max | one-way p50 | run |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        s = rundir.read_json(run / "summary.json")
        stages = s.get("latency", {}).get("stages", {})
        head = stages.get("receive_to_book", {})
        one_way = stages.get("one_way", {}).get("p50")
        rel = Path("..") / "runs" / run.name / "report.md" if run.parent.name == "runs" else run / "report.md"
        received = (s.get("reconciliation") or {}).get("received", 0)
        bbo = s.get("bbo", {})
        lines.append(
            f"| {s['transport']} | {s['verdict']['status'].replace('_', ' ')} | {received:,} | {bbo.get('events', 0):,} | "
            f"{'yes' if bbo and golden.get(s['capture']) == bbo['digest'] else 'NO'} | "
            f"{_fmt(head.get('p50'))} | {_fmt(head.get('p99'))} | "
            f"{_fmt(head.get('p999'))} | {_fmt(head.get('max'))} | {_fmt(one_way)} | [{run.name}]({rel}) |")
    lines.append("")
    path.write_text("\n".join(lines))
    return path
