"""Targets: bounds a scenario sets on what its runs achieve ([targets],
docs/capacity.md), judged on the median of a configuration's repetitions
with the runs' spread (min–max) as its interval:

    MET           the whole interval is on the right side of the bound
    MISSED        the whole interval is on the wrong side
    UNDECIDED     the interval straddles the bound: the runs do not settle it
    NOT MEASURED  no run took the measure (a black box's unseen stage, a
                  sender without send times): never a pass

Anything but MET makes `itchbench run` exit 1; UNDECIDED may be allowed
(--allow-undecided). One run is an interval of one point."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

NOT_SET = -1.0

# key -> (name, unit, the measure judged, "max": achieved <= target, "min": achieved >= target)
TARGETS: dict[str, tuple[str, str, str, str]] = {
    "p50_us": ("p50 latency", "µs", "p50_us", "max"),
    "p99_us": ("p99 latency", "µs", "p99_us", "max"),
    "p999_us": ("p99.9 latency", "µs", "p999_us", "max"),
    "max_us": ("max latency", "µs", "max_us", "max"),
    "mean_us": ("mean latency", "µs", "mean_us", "max"),
    "throughput_msg_s": ("throughput", "msg/s", "throughput_msg_s", "min"),
    "loss": ("loss", "share", "loss", "max"),
    "rss_mb": ("peak memory (RSS)", "MiB", "rss_mb", "max"),
    "cpu_pct": ("CPU", "%", "cpu_pct", "max"),
    "saturation_msg_s": ("saturation", "msg/s", "saturation_msg_s", "min"),
}
STATUSES = ("MET", "MISSED", "UNDECIDED", "NOT MEASURED")


def schema() -> dict[str, tuple[type, Any, Any, str]]:
    """The scenario's [targets] table: every key a bound, NOT_SET when absent."""
    # A bound no run can miss (inf, a loss share above 1, at least 0 msg/s) or none can meet (at most 0 µs) makes a
    # gate that cannot fail, or that fails every unchanged build.
    def share(v: float) -> bool | str:
        return v == NOT_SET or 0 <= v <= 1 or "must be a share from 0 to 1 (0.01 is 1 %), or -1: none"

    def above_zero(v: float) -> bool | str:
        return v == NOT_SET or 0 < v < math.inf or "must be above 0 and finite, or -1: none"
    words = {"max": "at most", "min": "at least"}
    return {key: (float, NOT_SET, share if unit == "share" else above_zero,
                  f"{words[way]} this {name} ({unit}); -1: none")
            for key, (name, unit, _, way) in TARGETS.items()}


def set_targets(values: dict[str, Any]) -> dict[str, float]:
    """The bounds a configuration sets."""
    return {k: float(v) for k, v in (values.get("targets") or {}).items() if k in TARGETS and v != NOT_SET}


def fmt(value: float, unit: str) -> str:
    if math.isnan(value):
        return "not measured"
    if unit == "share":
        return f"{value:.4%}" if value else "0"
    if unit == "µs":
        return f"{value:.3g} µs" if value < 1 else f"{value:,.1f} µs" if value < 1000 else f"{value:,.0f} µs"
    if unit == "%":
        return f"{value:.1f} %"
    if unit == "MiB":
        return f"{value:,.1f} MiB"
    return f"{value:,.0f} {unit}"


@dataclass(frozen=True)
class Judgement:
    key: str
    name: str
    unit: str
    way: str
    target: float
    median: float
    lo: float
    hi: float
    runs: int
    status: str
    not_passed: int = 0  # runs whose verdict did not pass: their measures are not the workload's

    @property
    def bound(self) -> str:
        return ("≤ " if self.way == "max" else "≥ ") + fmt(self.target, self.unit)

    @property
    def achieved(self) -> str:
        if math.isnan(self.median):
            return "not measured"
        text = fmt(self.median, self.unit)
        return text + (f" ({fmt(self.lo, self.unit)} – {fmt(self.hi, self.unit)}, {self.runs} runs)"
                       if self.runs > 1 else " (1 run)")

    def words(self) -> str:
        """'p99 latency 118 µs > 100 µs' for a miss; the straddle for an undecided one."""
        if self.status == "NOT MEASURED":
            why = f" in the {self.not_passed} of {self.runs} runs that did not pass" if self.not_passed else ""
            return f"{self.name} not measured{why} (target {self.bound})"
        wrong = ">" if self.way == "max" else "<"
        if self.status == "MISSED":
            return f"{self.name} {fmt(self.median, self.unit)} {wrong} {fmt(self.target, self.unit)}"
        if self.status == "UNDECIDED":
            return (f"{self.name} {fmt(self.lo, self.unit)} – {fmt(self.hi, self.unit)} across {self.runs} runs "
                    f"straddles {fmt(self.target, self.unit)}")
        return f"{self.name} {fmt(self.median, self.unit)} {self.bound}"

    def row(self) -> dict[str, Any]:
        return {"key": self.key, "metric": self.name, "target": self.bound, "achieved": self.achieved,
                "status": self.status, "median": self.median, "lo": self.lo, "hi": self.hi, "runs": self.runs}


def judge(targets: dict[str, float], measures: list[dict[str, Any]]) -> list[Judgement]:
    """Each set target against the runs' measures (one dict a run, capacity.measures). A run whose verdict did not
    pass (it crashed, lost, did not balance) measured something other than the workload: while any did, no target
    is met or missed on the others' figures — each is NOT MEASURED, and says how many runs did not pass."""
    from .measures import OK_STATUSES
    out = []
    not_passed = sum("status" in m and m["status"] not in OK_STATUSES for m in measures)  # a run's, not derived
    for key, target in sorted(targets.items(), key=lambda kv: list(TARGETS).index(kv[0])):
        name, unit, measure, way = TARGETS[key]
        if not_passed:
            out.append(Judgement(key, name, unit, way, target, math.nan, math.nan, math.nan, len(measures),
                                 "NOT MEASURED", not_passed))
            continue
        values = [float(m[measure]) for m in measures if measure in m and not math.isnan(float(m[measure]))]
        if not values:
            out.append(Judgement(key, name, unit, way, target, math.nan, math.nan, math.nan, 0, "NOT MEASURED"))
            continue
        median, lo, hi = statistics.median(values), min(values), max(values)
        good = (lambda v: v <= target) if way == "max" else (lambda v: v >= target)
        status = "MET" if good(lo) and good(hi) else "MISSED" if not good(lo) and not good(hi) else "UNDECIDED"
        out.append(Judgement(key, name, unit, way, target, median, lo, hi, len(values), status))
    return out


def headline(judgements: list[Judgement]) -> str:
    """'TARGETS MET: 3 of 3', or the misses first: 'TARGET MISSED: p99 latency 118 µs > 100 µs; ...'."""
    if not judgements:
        return ""
    parts = []
    for status in ("MISSED", "NOT MEASURED", "UNDECIDED"):
        these = [j for j in judgements if j.status == status]
        if these:
            word = "TARGET" if len(these) == 1 else "TARGETS"
            parts.append(f"{word} {status}: " + "; ".join(j.words() for j in these))
    if not parts:
        return f"TARGETS MET: {len(judgements)} of {len(judgements)}"
    return " | ".join(parts)


def not_run(values: dict[str, Any]) -> list[Judgement]:
    """A configuration that never ran (the gateway takes none of its input): each target it sets NOT MEASURED (a
    sweep's saturation is judged by the sweep, not here)."""
    return judge({k: v for k, v in set_targets(values).items() if k != "saturation_msg_s"}, [])


def not_run_headline(judgements: list[Judgement], why: str) -> str:
    return f"{headline(judgements)} (not run: {why})"


def passed(judgements: list[Judgement], allow_undecided: bool = False) -> bool:
    ok = ("MET", "UNDECIDED") if allow_undecided else ("MET",)
    return all(j.status in ok for j in judgements)
