"""Alerts over the results store (docs/history.md, "Alerts"): each series' newest commit against a trailing window
of the commits before it, with a threshold in the way Bencher models one — a test (a t-test, or a percentage), a
window, a minimum and a maximum sample size, and a boundary on the side that is worse (a lower one for
throughput, an upper one for latency, CPU time and memory).

A series is one gateway on one machine (its cpu model: the testbed) for one scenario, configuration and metric:
two gateways or two kinds of machine are never judged against each other. Below the minimum sample a series is
NOT JUDGED, never passed.

    t            Welch's t-test of the commit's runs against the window's, one-sided toward worse: an alert
                 when p < 1 - boundary (boundary 0.99: p < 0.01) and the change is beyond `least` (1 %)
    percentage   an alert when the commit's median is worse than the window's by more than `limit`

Besides the step from the window, a slow creep: the commit against the oldest commit of the window alone, by the
same test, so that ten steps of 2 % none of which stands out from its own neighbours still raise one alert.

A commit that changed none of the gateway's sources (store column sources_id: documentation, tests) measures the
build of the commit before it again: it is judged as that build's first commit is, on that commit's runs, so an
unchanged build gets the verdict its change got, whatever hour its own runs were made at. Its runs against that
commit's tell how far the machine itself moved between the two times, and are said when they differ.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import store

TESTS = ("t", "percentage")
SERIES = ["gateway", "cpu_model", "scenario", "configuration", "metric"]


@dataclass(frozen=True)
class Threshold:
    test: str = "t"
    window: int = 10        # commits before the one judged
    min_sample: int = 6     # runs in the window, at the least
    max_sample: int = 200   # the window's most recent runs kept
    min_runs: int = 3       # runs of the commit judged, at the least
    boundary: float = 0.99  # t: the confidence that the commit is worse
    limit: float = 0.05     # percentage: how much worse
    least: float = 0.01     # t: a change smaller than this is never an alert, however sure


THRESHOLDS_FILE = "thresholds.toml"  # in the store: a threshold per gateway, machine and metric


class ThresholdError(ValueError):
    """The store's thresholds file cannot be read; the message says where."""


def stored_thresholds(store_dir: Path) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """The store's [[threshold]] tables (docs/history.md, "Alerts"): (what each matches of a series: gateway,
    cpu_model, scenario, configuration, metric; what it sets: Threshold's fields)."""
    path = store_dir / THRESHOLDS_FILE
    if not path.is_file():
        return []
    try:
        tables = tomllib.loads(path.read_text()).get("threshold", [])
    except tomllib.TOMLDecodeError as e:
        raise ThresholdError(f"{path}: {e}") from e
    names = {f.name: f.type for f in fields(Threshold)}
    out = []
    for i, table in enumerate(tables, 1):
        unknown = set(table) - set(SERIES) - set(names)
        if unknown:
            raise ThresholdError(f"{path}: threshold {i}: unknown key(s) {sorted(unknown)} (series: {SERIES}; "
                                 f"settings: {sorted(names)})")
        sets = {k: v for k, v in table.items() if k in names}
        if "test" in sets and sets["test"] not in TESTS:
            raise ThresholdError(f"{path}: threshold {i}: test must be one of {TESTS}")
        out.append(({k: str(v) for k, v in table.items() if k in SERIES}, sets))
    return out


def threshold_for(series: dict[str, str], stored: list[tuple[dict[str, str], dict[str, Any]]],
                  base: Threshold, given: dict[str, Any]) -> Threshold:
    """A series' threshold: the defaults, then the store's tables that match it (the more keys a table matches
    on, the later it applies), then what the command line gave."""
    matching = [(len(m), i, sets) for i, (m, sets) in enumerate(stored) if all(series[k] == v for k, v in m.items())]
    t = base
    for _, _, sets in sorted(matching, key=lambda x: (x[0], x[1])):
        t = replace(t, **sets)
    return replace(t, **given)


def higher_is_better(metric: str) -> bool:
    return metric.endswith("msg_s") or metric.endswith("mps")


def unit(metric: str) -> str:
    """The unit of a stored metric (docs/history.md, "Schema")."""
    if metric.endswith("msg_s"):
        return "msg/s"
    if metric.endswith("_kib"):
        return "KiB"
    if metric in ("lossless", "bbo.events"):
        return ""
    return "ns"


def _welch(base: np.ndarray, head: np.ndarray, alternative: str) -> float:
    """p of Welch's t-test that head's mean is `alternative` ("less", "greater", "two-sided") to base's."""
    from scipy import stats
    # No spread, or none beyond a float's rounding (scipy's moments then cancel out and its p is unreliable): the
    # means alone decide.
    if all(np.ptp(x) <= 1e-12 * abs(float(np.mean(x))) for x in (base, head)):
        h, b = head.mean(), base.mean()
        return 0.0 if {"less": h < b, "greater": h > b}.get(alternative, h != b) else 1.0
    return float(stats.ttest_ind(head, base, equal_var=False, alternative=alternative).pvalue)


def _welch_worse(base: np.ndarray, head: np.ndarray, higher_better: bool) -> float:
    """One-sided p that head is worse than base (Welch's t-test)."""
    return _welch(base, head, "less" if higher_better else "greater")


def _judge(base: np.ndarray, head: np.ndarray, metric: str, t: Threshold) -> dict[str, Any]:
    higher_better = higher_is_better(metric)
    b, h = float(np.median(base)), float(np.median(head))
    change = (h - b) / b if b else 0.0
    worse_by = -change if higher_better else change
    out: dict[str, Any] = {"baseline": b, "value": h, "change": change, "baseline_runs": int(base.size),
                           "runs": int(head.size)}
    if t.test == "t":
        p = _welch_worse(base, head, higher_better)
        # The interval the baseline's mean leaves the commit's runs (two-sided, at the boundary).
        from scipy import stats
        half = float(stats.t.ppf(t.boundary, max(base.size - 1, 1)) * np.std(base, ddof=1) * np.sqrt(1 + 1 / base.size)) \
            if base.size > 1 else 0.0
        out.update(p=p, interval=[float(base.mean()) - half, float(base.mean()) + half],
                   alert=p < 1 - t.boundary and worse_by > t.least)
    else:
        bound = b * (1 - t.limit) if higher_better else b * (1 + t.limit)
        out.update(p=None, interval=[bound, bound], alert=worse_by > t.limit)
    return out


def check(store_dir: Path, threshold: Threshold = Threshold(), metrics: tuple[str, ...] | None = None,
          commits: list[str] | None = None, given: dict[str, Any] | None = None) -> list[dict]:
    """Per series: its newest commit (or each of `commits` the series has: a branch's) judged against the window
    of commits before it, and against the window's oldest commit (creep), with the threshold the store sets for
    the series (over `threshold`) and what the command line gave (`given`) over both. Each result: the series, the
    commit, 'judged' (False: below the minimum sample, with why) and, judged, the figures and whether it is an
    alert."""
    where = ""
    if metrics:
        where = "WHERE metric IN (" + ", ".join("'" + m.replace("'", "''") + "'" for m in metrics) + ")"
    df = store.query(store_dir, "SELECT gateway, cpu_model, scenario, configuration, metric, commit, commit_time, "
                                f"commit_depth, sources_id, itchbench_commit, value FROM runs {where}")
    if df.empty:
        return []
    df["gateway"] = df["gateway"].fillna(store.BUILT_IN)
    stored = stored_thresholds(store_dir)
    out: list[dict[str, Any]] = []
    for key, g in df.groupby(SERIES, sort=True, dropna=False):
        order = (g.groupby("commit", sort=False).agg(t=("commit_time", "min"), d=("commit_depth", "min"))
                 .sort_values(["t", "d"], na_position="first").index.tolist())
        series = dict(zip(SERIES, map(str, key)))
        t = threshold_for(series, stored, threshold, given or {})
        judged = [c for c in order if c in set(commits)] if commits is not None else order[-1:]
        first = build_starts(order, g.groupby("commit")["sources_id"].first().to_dict())
        # Each build judged once, at its first commit, and its newest commit judged named with it.
        newest = {first[c]: c for c in judged}
        for start, commit in newest.items():
            rows = _judge_commit(g, order, order.index(start), series, t)
            if commit != start:
                rows = [{**r, "same_sources_through": commit} for r in rows]
                rows += _machine_drift(g, order, start, commit, series, t)
            out += rows
    return out


def build_starts(order: list[str], sources: dict[str, Any]) -> dict[str, str]:
    """For each commit (in commit order), the first of the consecutive commits with its sources (sources_id): the
    commit that made the build it measures. A commit whose sources are not known starts a build of its own."""
    out: dict[str, str] = {}
    for i, commit in enumerate(order):
        same = i > 0 and isinstance(sources.get(commit), str) and sources.get(commit) == sources.get(order[i - 1])
        out[commit] = out[order[i - 1]] if same else commit
    return out


def _machine_drift(g: Any, order: list[str], start: str, commit: str, series: dict[str, str],
                   threshold: Threshold) -> list[dict]:
    """The runs of the commits after start up to commit, all of start's sources, against start's own: the same
    build at two times. Said when they differ by the threshold's test (two-sided); never an alert."""
    later = order[order.index(start) + 1:order.index(commit) + 1]
    base = g.loc[g["commit"] == start, "value"].to_numpy(float)
    head = g.loc[g["commit"].isin(later), "value"].to_numpy(float)
    if base.size < threshold.min_runs or head.size < threshold.min_runs:
        return []
    b, h = float(np.median(base)), float(np.median(head))
    change = (h - b) / b if b else 0.0
    p = _welch(base, head, "two-sided") if threshold.test == "t" else None
    differs = p < 1 - threshold.boundary and abs(change) > threshold.least if p is not None else \
        abs(change) > threshold.limit
    if not differs:
        return []
    # The testbench that made the runs is part of the measurement too: where it differs, the difference may be its.
    testbench = [sorted(set(g.loc[g["commit"].isin(cs), "itchbench_commit"].fillna("unknown")))
                 for cs in ([start], later)]
    return [{**series, "commit": commit, "unit": unit(series["metric"]), "kind": "drift", "judged": True,
             "alert": False, "since": start, "value": h, "baseline": b, "change": change, "p": p,
             "runs": int(head.size), "baseline_runs": int(base.size), "commits": len(later),
             "itchbench": testbench if testbench[0] != testbench[1] else None}]


def _judge_commit(g: Any, order: list[str], at: int, series: dict[str, str], threshold: Threshold) -> list[dict]:
    """The commit at order[at] against the window of commits before it (a step), and against the window's oldest
    (a creep)."""
    commit, before = order[at], order[:at][-threshold.window:]
    head = g.loc[g["commit"] == commit, "value"].to_numpy(float)
    row: dict[str, Any] = {**series, "commit": commit, "unit": unit(series["metric"]), "window": len(before),
                           "window_newest": before[-1] if before else None, "threshold": threshold.__dict__}
    window = g[g["commit"].isin(before)]
    base = window.assign(rank=window["commit"].map({c: i for i, c in enumerate(before)})) \
        .sort_values("rank")["value"].to_numpy(float)[-threshold.max_sample:]
    why = ("no commit before it" if not before else
           f"{head.size} run(s) of it, {threshold.min_runs} needed" if head.size < threshold.min_runs else
           f"{base.size} run(s) in its window, {threshold.min_sample} needed" if base.size < threshold.min_sample
           else "")
    if why:
        return [{**row, "kind": "step", "judged": False, "why": why}]
    out = [{**row, "kind": "step", "judged": True, **_judge(base, head, series["metric"], threshold)}]
    oldest = g.loc[g["commit"] == before[0], "value"].to_numpy(float)
    if len(before) > 1 and oldest.size >= threshold.min_runs:
        out.append({**row, "kind": "creep", "judged": True, "since": before[0],
                    **_judge(oldest, head, series["metric"], threshold)})
    return out


def line(r: dict[str, Any]) -> str:
    """One alert (or one series not judged, or one machine drift) in words."""
    name = f"{r['gateway']} on {r['cpu_model'] or '?'}: {r['scenario']}/{r['configuration']} {r['metric']}"
    u = f" {r['unit']}" if r["unit"] else ""
    if r["kind"] == "drift":
        p = f", p {r['p']:.2g}" if r["p"] is not None else ""
        return (f"MACHINE DRIFT {name}: {r['commits']} commit(s) to {r['commit'][:12]} changed none of the gateway's "
                f"sources since {r['since'][:12]}, and their runs measured its build at {r['value']:,.1f}{u} against "
                f"{r['baseline']:,.1f}{u} ({r['change']:+.1%}{p}; {r['runs']} runs vs {r['baseline_runs']}): "
                + ("the machine's difference between the two times, not the code's" if not r.get("itchbench") else
                   "the machine's difference between the two times, or itchbench's own (its runs were made by "
                   f"itchbench {', '.join(c[:12] for c in r['itchbench'][0])}, then "
                   f"{', '.join(c[:12] for c in r['itchbench'][1])}), not the gateway's code")
                + f"; judged on the runs of {r['since'][:12]}")
    at = r["commit"][:12]
    if r.get("same_sources_through"):
        at += f" (its sources unchanged through {r['same_sources_through'][:12]})"
    if not r["judged"]:
        return f"NOT JUDGED {name} at {at}: {r['why']}"
    what = "REGRESSION" if r["kind"] == "step" else f"CREEP since {r['since'][:12]}"
    p = f", p {r['p']:.2g}" if r["p"] is not None else ""
    lo, hi = r["interval"]
    base = r["window_newest"] if r["kind"] == "step" else r["since"]
    # The store's runs of two commits were made at different times: a busier hour for one looks like a step. An
    # interleaved compare of the two tells them apart.
    return (f"{what} {name} at {at}: {r['value']:,.1f}{u} vs {r['baseline']:,.1f}{u} "
            f"({r['change']:+.1%}; interval {lo:,.1f}–{hi:,.1f}{u}{p}; {r['runs']} runs vs {r['baseline_runs']}); "
            f"runs made at other times: confirm with itchbench compare {base[:12]} {r['commit'][:12]}")


def summarise(results: list[dict[str, Any]]) -> tuple[list[str], int]:
    """The lines to print and the exit status: 1 on any alert, 2 when nothing could be judged, else 0."""
    alerts = [r for r in results if r["judged"] and r["alert"]]
    judged = [r for r in results if r["judged"] and r["kind"] != "drift"]
    lines = [line(r) for r in alerts] + [line(r) for r in results if not r["judged"]] + \
        [line(r) for r in results if r["kind"] == "drift"]
    steps = sum(r["kind"] == "step" for r in judged)
    lines.append(f"{len(alerts)} alert(s); {steps} series judged, "
                 f"{sum(not r['judged'] for r in results)} not judged (below the minimum sample)")
    return lines, 1 if alerts else 2 if not judged else 0
