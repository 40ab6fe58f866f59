"""Google Benchmark JSON (microbench/*.json in a run) read into one table:
each repetition is a sample; the median of the repetitions is the figure.
Times are converted to nanoseconds from the file's own time_unit."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

_TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


class MicrobenchError(ValueError):
    """A benchmark JSON file that is not Google Benchmark's output."""


def read(path: Path) -> dict[str, Any]:
    """{context, benchmarks: {name: {real_time_ns: [per repetition], cpu_time_ns, iterations, counters}}}"""
    try:
        doc = json.loads(Path(path).read_text())
        entries = doc["benchmarks"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise MicrobenchError(f"{path}: not Google Benchmark JSON output ({e})") from e
    out: dict[str, dict[str, Any]] = {}
    for e in entries:
        if e.get("run_type", "iteration") != "iteration" or e.get("error_occurred"):
            continue  # aggregates are recomputed from the repetitions; an errored benchmark has no time
        scale = _TO_NS[e.get("time_unit", "ns")]
        b = out.setdefault(e["run_name"], {"real_time_ns": [], "cpu_time_ns": [], "iterations": [], "counters": {}})
        b["real_time_ns"].append(e["real_time"] * scale)
        b["cpu_time_ns"].append(e["cpu_time"] * scale)
        b["iterations"].append(e["iterations"])
        for k in ("items_per_second", "bytes_per_second"):
            if k in e:
                b["counters"].setdefault(k, []).append(e[k])
    context = {k: v for k, v in doc.get("context", {}).items() if k not in ("date", "load_avg")}
    return {"context": context, "benchmarks": out}


def summarise(run_dir: Path) -> dict[str, Any] | None:
    """summary.json's microbench section: per benchmark the median and spread
    of its repetitions; None when the run holds no micro-benchmarks."""
    files = sorted((Path(run_dir) / "microbench").glob("*.json"))
    if not files:
        return None
    out: dict[str, Any] = {"binaries": {}, "benchmarks": {}}
    for f in files:
        doc = read(f)
        out["binaries"][f.stem] = doc["context"]
        for name, b in doc["benchmarks"].items():
            t = b["real_time_ns"]
            out["benchmarks"][name] = {
                "binary": f.stem, "repetitions": len(t), "real_time_ns": statistics.median(t),
                "real_time_ns_min": min(t), "real_time_ns_max": max(t),
                "cpu_time_ns": statistics.median(b["cpu_time_ns"]), "samples_real_time_ns": t,
                **{k: statistics.median(v) for k, v in b["counters"].items()},
            }
    return out
