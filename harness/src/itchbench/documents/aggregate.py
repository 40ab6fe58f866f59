"""The numbers of a benchmark document, from the runs' own summaries.

A configuration's figure is the median of its runs' figures, with the runs'
minimum and maximum as its spread: repetitions are aggregated, never pooled
into one sample. An improvement factor is baseline / configuration (above 1:
lower latency than the baseline), with a percentile-bootstrap 95 % interval
over the repetitions (compare.statistics, fixed seed)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable

from ..analysis import hops, stats
from ..runs.verdict import count
from ..compare.statistics import bootstrap_ratio_ci
from .collect import Configuration, RunRecord

STAGE = "receive_to_book"
CI_SEED = 20261122
CI_RESAMPLES = 10_000
CONFIDENCE = 0.95
MIN_RUNS_FOR_CI = 2
PERCENTILE_ROWS = ("p50", "p90", "p99", "p999", "p9999", "max")
STAT_LABELS = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p99.9", "p9999": "p99.99",
               "max": "max", "min": "min", "mean": "mean", "stddev": "stddev", "count": "samples"}


@dataclass(frozen=True)
class Spread:
    """The median of the runs' values, their min and max, how many runs."""

    median: float
    lo: float
    hi: float
    n: int


def spread(values: list[float]) -> Spread | None:
    values = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not values:
        return None
    return Spread(statistics.median(values), min(values), max(values), len(values))


def times(x: float) -> str:
    """A factor as people read it: '1.18×', '12.3×', '1,110×' (never '0.00×': the caller inverts one below 1)."""
    if x >= 100:
        return f"{x:,.0f}×"
    return f"{x:.1f}×" if x >= 10 else f"{x:.2f}×"


@dataclass(frozen=True)
class Factor:
    """baseline / configuration (lower is better: above 1 means lower than the baseline)."""

    value: float
    ci: tuple[float, float] | None  # None: fewer than MIN_RUNS_FOR_CI runs on a side

    def phrase(self, what: str, than: str) -> str:
        """'2.00× lower p50 than B (95% CI 1.80–2.20)', in the direction of the change, its interval with it."""
        lower = self.value >= 1
        size = self.value if lower else 1 / self.value
        text = f"{times(size)} {'lower' if lower else 'higher'} {what} than {than}"
        if self.ci is None:
            return text + " (one run on a side: no confidence interval)"
        lo, hi = self.oriented_ci()
        text += f" (95% CI {times(lo)[:-1]}–{times(hi)}"
        return text + ("; the interval includes 1: no difference shown)" if lo <= 1 <= hi else ")")

    def oriented_ci(self) -> tuple[float, float]:
        """The interval in the direction of the change: of the factor when it is 1 or more, of its inverse when
        the configuration is the slower one."""
        assert self.ci is not None
        return self.ci if self.value >= 1 else (1 / self.ci[1], 1 / self.ci[0])

    def cell(self) -> str:
        """'2.00× (CI 1.80–2.20)' when lower than the baseline; '1,110× slower (CI …)' when higher."""
        slower = self.value < 1
        text = times(1 / self.value if slower else self.value) + (" slower" if slower else "")
        if self.ci is None:
            return text + " (one run: no CI)"
        lo, hi = self.oriented_ci()
        return f"{text} (CI {times(lo)[:-1]}–{times(hi)[:-1]})"


def run_values(config: Configuration, get: Callable[[RunRecord], Any]) -> list[float]:
    out = []
    for r in config.runs:
        try:
            v = get(r)
        except (KeyError, TypeError):
            v = None
        if v is not None:
            out.append(float(v))
    return out


def headline_stage(configs: list[Configuration]) -> str:
    """STAGE where every run has it; else wire to wire (gateways brought through their contract) where every run
    has that."""
    runs = [r for c in configs for r in c.runs]
    for stage in (STAGE, "wire_to_wire"):
        if runs and all(r.stage(stage) for r in runs):
            return stage
    # Mixed (the built-in gateway's stages beside black boxes, or a black box reading a file, timed by its process
    # alone): the one more runs have; the others show it as not measured. With none measured (every run failed),
    # the black box's own measure when every run is of one.
    black_box = bool(runs) and all((r.summary.get("reconciliation") or {}).get("black_box") or
                                   (r.summary.get("gateway") or {}).get("contract") for r in runs)
    return max((STAGE, "wire_to_wire"), key=lambda stage: (sum(1 for r in runs if r.stage(stage)),
                                                          (stage == "wire_to_wire") == black_box))


def stage_value(stage: str, key: str) -> Callable[[RunRecord], Any]:
    return lambda r: (r.stage(stage) or {}).get(key)


def factor(baseline: list[float], config: list[float], seed: int) -> Factor | None:
    if not baseline or not config or statistics.median(config) == 0:
        return None
    value = statistics.median(baseline) / statistics.median(config)
    if len(baseline) < MIN_RUNS_FOR_CI or len(config) < MIN_RUNS_FOR_CI:
        return Factor(value, None)
    # bootstrap_ratio_ci(base, head) bounds median(head) / median(base): here baseline / configuration.
    lo, hi = bootstrap_ratio_ci(config, baseline, seed=seed, resamples=CI_RESAMPLES, confidence=CONFIDENCE)
    return Factor(value, (lo, hi))


def stage_table(config: Configuration, stage: str) -> dict[str, Spread | None]:
    return {k: spread(run_values(config, stage_value(stage, k)))
            for k in ("count", "mean", "min", *PERCENTILE_ROWS, "stddev")}


def jitter(config: Configuration, stage: str) -> Spread | None:
    """p99 / p50 of each run, aggregated."""
    def ratio(r: RunRecord) -> float | None:
        s = r.stage(stage)
        return s["p99"] / s["p50"] if s and s.get("p50") else None
    return spread(run_values(config, ratio))


def keyed(config: Configuration, section: str, key: str, stat: str) -> Spread | None:
    """A per-type or per-symbol figure (summary latency.by_type / by_symbol), aggregated over the runs."""
    return spread(run_values(config, lambda r: r.summary["latency"][section][key][stat]))


def loss_statement(configs: list[Configuration]) -> dict[str, Any]:
    runs = [r for c in configs for r in c.runs]
    statuses = [r.summary.get("verdict", {}).get("status", "incomplete") for r in runs]
    expected = sum(int(r.summary.get("reconciliation", {}).get("loss", {}).get("expected_messages", 0)) for r in runs)
    # Counted only by a gateway that says what it applied (the built-in one's counters) in a run that reconciled:
    # a brought gateway's run, or one that ended before its counters, cannot say, and is not a run that lost none.
    counted = [r.summary["reconciliation"]["loss"] for r in runs
               if "messages_not_applied" in r.summary.get("reconciliation", {}).get("loss", {})]
    not_applied = sum(int(loss["messages_not_applied"]) for loss in counted)
    counted_expected = sum(int(loss.get("expected_messages", 0)) for loss in counted)
    lossy = [r for r, s in zip(runs, statuses) if s not in ("lossless", "faults_accounted")]
    # Each configuration's runs that are neither, marked where its figures are given (the executive summary's
    # factors and the table): an interrupted run's figures are of the part it ran.
    lossy_ids = {id(r) for r in lossy}
    marks = {c.label: f" ({n} of {count(len(c.runs), 'run')} not lossless)"
             for c in configs if (n := sum(id(r) in lossy_ids for r in c.runs))}
    return {"runs": len(runs), "lossless": statuses.count("lossless"), "marks": marks,
            "faults_accounted": statuses.count("faults_accounted"), "expected_messages": expected,
            "messages_not_applied": not_applied, "applied_counted_runs": len(counted),
            "applied_counted_messages": counted_expected, "lossy": lossy,
            "all_lossless": not lossy and statuses.count("lossless") == len(runs)}


def stage_descriptions(configs: list[Configuration]) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in configs:
        for r in c.runs:
            out.update(r.summary.get("latency", {}).get("stage_descriptions", {}))
    return out


def type_order(configs: list[Configuration]) -> list[str]:
    """Message types present, in the order of the ITCH 5.0 specification."""
    present = {t for c in configs for r in c.runs for t in r.summary.get("latency", {}).get("by_type", {})}
    known = [t for t in stats.TYPE_NAMES.values() if t in present]
    return known + sorted(present - set(known))


def busiest_symbols(configs: list[Configuration], limit: int) -> list[str]:
    counts: dict[str, int] = {}
    for c in configs:
        for r in c.runs:
            for sym, s in r.summary.get("latency", {}).get("by_symbol", {}).items():
                counts[sym] = counts.get(sym, 0) + int(s["count"])
    return [s for s, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def microbenchmarks(configs: list[Configuration]) -> list[str]:
    return sorted({n for c in configs for r in c.runs for n in r.summary.get("microbench", {}).get("benchmarks", {})})


def microbench_values(config: Configuration, name: str) -> list[float]:
    return run_values(config, lambda r: r.summary["microbench"]["benchmarks"][name]["real_time_ns"])


def hop_tables(config: Configuration) -> list[dict[str, Any]]:
    """The runs' hop-by-hop tables (summary latency.hops), each hop's figures aggregated over the runs:
    [{title, sender, rows: [{hop, p50, p99, p999, mean, share}]}]."""
    first = config.runs[0].summary.get("latency", {}).get("hops")
    if not first:
        return []
    titles = [("to_book", "every message, to the book")] + \
        [(f"to_subscriber/{k}", f"BBO events, to subscriber {k}") for k in first.get("to_subscriber", {})]
    out = []
    for key, title in titles:
        def rows_of(r: RunRecord, key: str = key) -> list[dict[str, Any]]:
            h = r.summary.get("latency", {}).get("hops", {})
            return h.get("to_book", []) if key == "to_book" else h.get("to_subscriber", {}).get(key.split("/")[1], [])
        names = [row["hop"] for row in rows_of(config.runs[0])]
        rows = []
        for i, name in enumerate(names):
            def get(stat: str, i: int = i, name: str = name) -> Callable[[RunRecord], Any]:
                return lambda r: next((row[stat] for row in rows_of(r) if row["hop"] == name), None)
            rows.append({"hop": name, **{k: spread(run_values(config, get(k)))
                                          for k in ("p50", "p99", "p999", "mean", "share_of_mean")}})
        out.append({"title": title, "sender": first.get("sender", ""), "rows": rows})
    return out


# The phases of an optimisation journey as its write-ups tabulate them (receipt -> parse per phase), with the
# wake-up from the kernel's (or the XDP hook's) receive stamp to user space that kernel bypass is about.
PHASE_STAGES = (("parse", "receipt → parse complete"), ("wakeup", "kernel receive → user space"))


def phase_table(configs: list[Configuration], base: Configuration) -> dict[str, Any] | None:
    """Configurations in their order as phases: each PHASE_STAGES stage every run has, its mean, p50 and p99
    aggregated over the runs, and the p50 factor over the phase before and over the baseline."""
    stages = [(s, words) for s, words in PHASE_STAGES if all(r.stage(s) for c in configs for r in c.runs)]
    if len(configs) < 2 or not stages:
        return None
    rows = []
    for i, c in enumerate(configs):
        cells = {}
        for j, (s, _) in enumerate(stages):
            p50 = run_values(c, stage_value(s, "p50"))
            seed = CI_SEED + 200 + 10 * i + j
            cells[s] = {"mean": spread(run_values(c, stage_value(s, "mean"))), "p50": spread(p50),
                        "p99": spread(run_values(c, stage_value(s, "p99"))),
                        "vs_previous": factor(run_values(configs[i - 1], stage_value(s, "p50")), p50, seed)
                        if i else None,
                        "vs_baseline": factor(run_values(base, stage_value(s, "p50")), p50, seed + 5)
                        if c is not base else None}
        rows.append({"label": c.label, "cells": cells, "receive_path": receive_path(c.runs[0])})
    return {"stages": stages, "rows": rows}


def receive_path(run: RunRecord) -> str:
    """How a run's gateway received, in a few words: what each phase of a journey ran on."""
    scen = run.manifest.get("scenario", {})
    g = scen.get("gateway", {})
    if scen.get("transport") != "udp":
        return str(scen.get("transport", "?"))
    xdp = (run.summary.get("gateway") or {}).get("af_xdp")
    words = [f"AF_XDP ({xdp['attach_mode']}, {xdp['bind_mode']})" if xdp else "UDP socket",
             "busy poll" if g.get("busy_poll") else ("poll" if xdp else "epoll")]
    if g.get("cpu", -1) >= 0:
        words.append(f"CPU {g['cpu']}")
    if g.get("sched_fifo"):
        words.append(f"SCHED_FIFO {g['sched_fifo']}")
    if scen.get("shm_subscribers"):
        words.append("shared-memory ring")
    return ", ".join(words)


def distribution_table(configs: list[Configuration]) -> list[dict[str, Any]]:
    """Per configuration and subscriber: how it received the BBO stream (TCP or the shared-memory ring), its
    published -> received hop and its end to end, aggregated over the runs: [{label, subscriber, kind, hop: {p50,
    p99, mean}, end_to_end: {p50, p99, mean}}]. Empty when no run has subscriber hops."""
    out = []
    for c in configs:
        def subscribers_of(r: RunRecord) -> dict[str, Any]:
            return r.summary.get("latency", {}).get("hops", {}).get("to_subscriber", {})
        shown = next((r for r in c.runs if subscribers_of(r)), None)  # an incomplete run may have none
        if shown is None:
            continue
        first = subscribers_of(shown)
        kinds = {str(s["index"]): s.get("kind", "tcp")
                 for s in shown.summary.get("reconciliation", {}).get("subscribers", [])}
        keys, names = list(first), {}
        if len(keys) > hops.FULL_SUBSCRIBER_CHAINS:  # hundreds: the fastest, the typical and the slowest, by their own hop's p99
            def own_p99(key: str) -> float:
                rows = first[key]
                return float(rows[-2]["p99"]) if len(rows) >= 2 else float("inf")
            ordered = sorted(keys, key=lambda k: (own_p99(k), k))
            keys = []
            for words, q in SUBSCRIBER_RANKS:
                key = ordered[round(q * (len(ordered) - 1))]
                if key not in keys:
                    keys.append(key)
                    names[key] = f"{key} ({words} of {len(ordered)})"
        for key in keys:
            def row(r: RunRecord, last: bool, key: str = key) -> dict[str, Any] | None:
                rows = r.summary.get("latency", {}).get("hops", {}).get("to_subscriber", {}).get(key, [])
                return rows[-1] if last and rows else (rows[-2] if len(rows) >= 2 else None)
            cells = {}
            for name, last in (("hop", False), ("end_to_end", True)):
                cells[name] = {k: spread(run_values(c, lambda r, k=k, last=last: (row(r, last) or {}).get(k)))
                               for k in ("p50", "p99", "mean")}
            out.append({"label": c.label, "subscriber": names.get(key, key), "kind": kinds.get(key, "tcp"), **cells})
    return out


SUBSCRIBER_RANKS = (("fastest", 0.0), ("10th %", 0.1), ("median", 0.5), ("90th %", 0.9), ("slowest", 1.0))


RECOVERY_ROWS = (("lost_on_wire", "messages lost on the wire"), ("from_the_other_line", "back from the other line"),
                 ("answered_by_server", "answered by the re-request server"), ("never_answered", "never back"),
                 ("gaps", "gaps"), ("requests", "requests"), ("answers_dropped", "answers the server dropped"))


def recovery_table(configs: list[Configuration]) -> list[dict[str, Any]]:
    """Per configuration whose runs recovered (or tried to: runs/recovery.py), each count, how long the first BBO
    event after a gap was held (p50, p99 µs) and, white box, how long a gap took to fill (p50, p99, max µs),
    aggregated over its runs."""
    rows = []
    for c in configs:
        runs = [r for r in c.runs if (r.summary.get("reconciliation") or {}).get("recovery")]
        if not runs:
            continue
        get = lambda key: spread([r.summary["reconciliation"]["recovery"][key] for r in runs])  # noqa: E731
        def us(measure: str, key: str) -> Any:
            return spread([(r.summary["reconciliation"]["recovery"].get(measure) or {}).get(key, math.nan) / 1000
                           for r in runs])
        rows.append({"label": c.label, "runs": len(runs), "cells": {k: get(k) for k, _ in RECOVERY_ROWS},
                     "held_p50_us": us("held_after_gaps_ns", "p50"), "held_p99_us": us("held_after_gaps_ns", "p99"),
                     "filled_p50_us": us("time_to_recover_ns", "p50"), "filled_p99_us": us("time_to_recover_ns", "p99"),
                     "filled_max_us": us("time_to_recover_ns", "max"),
                     "verdicts": sorted({r.summary.get("verdict", {}).get("status", "?") for r in runs})})
    return rows


JOIN_ROWS = (("snapshot_messages", "snapshot messages"), ("orders", "live orders"), ("transfer_ms", "transfer ms"),
             ("held", "packets held"), ("covered_messages", "covered by the snapshot"),
             ("re_requested_between", "re-requested between"))


def join_table(configs: list[Configuration]) -> list[dict[str, Any]]:
    """Per configuration whose runs joined a running feed (docs/snapshot.md): the snapshot, what the feed brought
    meanwhile and the events after the join, the median of its runs [min–max]."""
    rows = []
    for c in configs:
        joins = [r.summary["reconciliation"]["join"] for r in c.runs
                 if (r.summary.get("reconciliation") or {}).get("join")]
        if not joins:
            continue
        values = {"snapshot_messages": [(j.get("snapshot") or {}).get("messages", math.nan) for j in joins],
                  "orders": [(j.get("snapshot") or {}).get("orders", math.nan) for j in joins],
                  "transfer_ms": [j["transfer_ms"] if j.get("transfer_ms") is not None else math.nan for j in joins],
                  "held": [j.get("held", math.nan) for j in joins],
                  "covered_messages": [j.get("covered_messages", math.nan) for j in joins],
                  "re_requested_between": [j["re_requested_between"] for j in joins],
                  "events_after": [j["bbo_check"]["after_join"]["events"] for j in joins]}
        rows.append({"label": c.label, "runs": len(joins), "at": [f"{n:,}" for n in sorted({j["next"] for j in joins})],
                     "cells": {k: spread(v) for k, v in values.items()},
                     "verdicts": sorted({r.summary.get("verdict", {}).get("status", "?") for r in c.runs})})
    return rows
