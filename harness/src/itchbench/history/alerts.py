"""Alerts over the results store (docs/history.md, "Alerts"): each series' newest commit against a trailing window
of the commits before it, with a threshold in the way Bencher models one — a test (a t-test, or a percentage), a
window, a minimum and a maximum sample size, and a boundary on the side that is worse (a lower one for
throughput, an upper one for latency, CPU time and memory).

A series is one gateway on one machine (its cpu model: the testbed) for one scenario, configuration and metric:
two gateways or two kinds of machine are never judged against each other. Below the minimum sample a series is
NOT JUDGED, never passed.

    t            Welch's t-test of the commit's runs against the window's, one-sided toward worse: an alert
                 when p < 1 - boundary (boundary 0.99: p < 0.01), the change is beyond `least` (1 %), and the
                 commit's median is beyond the interval the window's commits leave a new commit's median
    percentage   an alert when the commit's median is worse than the window's by more than `limit`

A commit's runs are made together, at one time; the window's at others. Runs of one time are not independent
samples of the build: the machine's state that hour (other jobs, its frequency, where the VM landed) moves them
all, so a t-test of runs alone calls a busier hour a regression: one build measured at 20 times on a busy machine
failed a gate of every metric so at 7 of 17 (docs/history.md, "Alerts"). The t test therefore also holds the
commit's median to the spread of the window's commits' medians, an individuals control chart's: its sigma is
their mean moving range over 1.128 (consecutive commits, so a real step or a slow creep in the window widens it
by one range, not by its whole size), the interval the window's mean ± t(boundary, k - 1) sigma sqrt(1 + 1/k) for
k commits. Below `min_commits` commits the machine's movement between times is not known and the series is NOT
JUDGED by the t test.

Besides the step from the window, a slow creep: the commit against the oldest commit of the window alone, by the
same test, so that ten steps of 2 % none of which stands out from its own neighbours still raise one alert.

A commit that changed none of the gateway's sources (store column sources_id: documentation, tests) measures the
build of the commit before it again: it is judged as that build's first commit is, on that commit's runs, so an
unchanged build gets the verdict its change got, whatever hour its own runs were made at. Its runs against that
commit's tell how far the machine itself moved between the two times, and are said when they differ.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import toml_types
from ..runs.verdict import EXIT
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
    min_commits: int = 3    # t: commits in the window (each min_runs runs at least), whose medians' spread is
    #                         the machine's between times


THRESHOLDS_FILE = "thresholds.toml"  # in the store: a threshold per gateway, machine and metric


class ThresholdError(ValueError):
    """The store's thresholds file cannot be read; the message says where."""


# What each setting may be: a gate set outside them judges nothing (boundary = 99, meant as 99 %, is a confidence
# no test reaches: never an alert) or everything (a negative limit: an alert on every unchanged commit).
_RANGES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "window": ("an integer, 1 or more", lambda v: _integer(v) and v >= 1),
    "min_sample": ("an integer, 2 or more (a spread needs two runs)", lambda v: _integer(v) and v >= 2),
    "max_sample": ("an integer, 2 or more", lambda v: _integer(v) and v >= 2),
    "min_runs": ("an integer, 1 or more", lambda v: _integer(v) and v >= 1),
    "min_commits": ("an integer, 1 or more", lambda v: _integer(v) and v >= 1),
    "boundary": ("a confidence from 0.5 to below 1 (0.99 is 99 %)", lambda v: _number(v) and 0.5 <= v < 1),
    "limit": ("a fraction above 0, at most 1 (0.10 is 10 %)", lambda v: _number(v) and 0 < v <= 1),
    "least": ("a fraction from 0 to below 1 (0.01 is 1 %)", lambda v: _number(v) and 0 <= v < 1),
}


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    return (_integer(v) or isinstance(v, float)) and math.isfinite(v)


def checked_settings(sets: dict[str, Any], where: str, *, flags: bool = False) -> dict[str, Any]:
    """sets, each in range (_RANGES) and test one of TESTS; else ThresholdError naming `where` and the setting (as
    the command line's --flag with flags)."""
    def named(key: str) -> str:
        return f"--{key.replace('_', '-')}" if flags else key
    if "test" in sets and sets["test"] not in TESTS:
        raise ThresholdError(f"{where}: {named('test')} must be one of {TESTS}")
    for key, value in sets.items():
        if key in _RANGES and not _RANGES[key][1](value):
            raise ThresholdError(f"{where}: {named(key)} {value!r}: {_RANGES[key][0]}")
    return sets


def stored_thresholds(store_dir: Path) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """The store's [[threshold]] tables (docs/history.md, "Alerts"): (what each matches of a series: gateway,
    cpu_model, scenario, configuration, metric; what it sets: Threshold's fields)."""
    path = store_dir / THRESHOLDS_FILE
    if not path.is_file():
        return []
    tables = toml_types.read(path, ThresholdError)[1].get("threshold", [])
    names = {f.name: f.type for f in fields(Threshold)}
    out = []
    for i, table in enumerate(tables, 1):
        unknown = set(table) - set(SERIES) - set(names)
        if unknown:
            raise ThresholdError(f"{path}: threshold {i}: unknown key(s) {sorted(unknown)} (series: {SERIES}; "
                                 f"settings: {sorted(names)})")
        sets = checked_settings({k: v for k, v in table.items() if k in names}, f"{path}: threshold {i}")
        for k, v in table.items():  # a series is named by strings: 5 would have been "5", matching nothing, unsaid
            if k in SERIES and not isinstance(v, str):
                raise ThresholdError(f"{path}: threshold {i}: {k}: expected {toml_types.expected(str)}, got "
                                     f"{toml_types.got(v)}")
        out.append(({k: v for k, v in table.items() if k in SERIES}, sets))
    return out


class ThresholdWarning(UserWarning):
    """A stored threshold applies to no series of the store."""


def _warn_unmatched(store_dir: Path, stored: list[tuple[dict[str, str], dict[str, Any]]]) -> None:
    """Each stored threshold that matches no series of the store, said: one whose name was mistyped (a metric
    `throughput` for `throughput_msg_s`) was in force for nothing, with no word of it."""
    if not stored:
        return
    all_series = store.query(store_dir, "SELECT DISTINCT gateway, cpu_model, scenario, configuration, metric FROM runs")
    all_series["gateway"] = all_series["gateway"].fillna(store.BUILT_IN)
    for i, (match, _) in enumerate(stored, 1):
        hits = np.ones(len(all_series), bool)
        for k, v in match.items():
            hits &= (all_series[k].astype(str) == v).to_numpy()
        if not hits.any():
            named = ", ".join(f"{k} = {v!r}" for k, v in match.items()) or "every series"
            warnings.warn(f"{store_dir / THRESHOLDS_FILE}: threshold {i} ({named}) matches no series in the store: "
                          "it applies to nothing", ThresholdWarning, stacklevel=3)


def threshold_for(series: dict[str, str], stored: list[tuple[dict[str, str], dict[str, Any]]],
                  base: Threshold, given: dict[str, Any]) -> Threshold:
    """A series' threshold: the defaults, then the store's tables that match it (the more keys a table matches
    on, the later it applies), then what the command line gave."""
    matching = [(len(m), i, sets) for i, (m, sets) in enumerate(stored) if all(series[k] == v for k, v in m.items())]
    t = base
    for _, _, sets in sorted(matching, key=lambda x: (x[0], x[1])):
        t = replace(t, **sets)
    t = replace(t, **given)
    if t.max_sample < t.min_sample:
        raise ThresholdError(f"{', '.join(f'{k} {v}' for k, v in series.items())}: max_sample {t.max_sample} is below "
                             f"min_sample {t.min_sample}: no window could be judged")
    return t


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


# Runs this close to one another (relative) have no spread to test: scipy's moments lose their precision below it.
NO_SPREAD = 1e-7


def _welch(base: np.ndarray, head: np.ndarray, alternative: str) -> float:
    """p of Welch's t-test that head's mean is `alternative` ("less", "greater", "two-sided") to base's."""
    import warnings

    from scipy import stats
    # No spread, or none beyond a float's rounding (scipy's moments then cancel out and its p is unreliable): the
    # means alone decide. One side so (a stage of a few ns, every run the same) adds nothing to the variance, and
    # scipy's warning of its lost precision says nothing of the p.
    flat = [np.ptp(x) <= NO_SPREAD * abs(float(np.mean(x))) for x in (base, head)]
    if all(flat):
        h, b = head.mean(), base.mean()
        return 0.0 if {"less": h < b, "greater": h > b}.get(alternative, h != b) else 1.0
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        return float(stats.ttest_ind(head, base, equal_var=False, alternative=alternative).pvalue)


def _welch_worse(base: np.ndarray, head: np.ndarray, higher_better: bool) -> float:
    """One-sided p that head is worse than base (Welch's t-test)."""
    return _welch(base, head, "less" if higher_better else "greater")


# A run's max is one message's time: compare shows it and judges none, and so does a store.
ONE_SAMPLE = "a run's max is one sample: drawn, never judged (as compare shows it)"
# d2 of a moving range of two: the mean of |x1 - x2| over sigma for two normal samples (an individuals chart's).
MOVING_RANGE_D2 = 1.128


@dataclass(frozen=True)
class Sessions:
    """The window's commits as times the machine was measured at: each commit's median, in commit order."""
    medians: np.ndarray

    @property
    def sigma(self) -> float:
        """How far one time's median moves from another's: the mean moving range over d2 (0 with one commit)."""
        return float(np.abs(np.diff(self.medians)).mean() / MOVING_RANGE_D2) if self.medians.size > 1 else 0.0

    def half_width(self, boundary: float, against: int) -> float:
        """The half-width at the boundary of where a new time's median falls: against the mean of `against`
        commits' medians (the window's: sqrt(1 + 1/k)), or of one commit's (the creep's: sqrt(2))."""
        from scipy import stats
        k = self.medians.size
        if k < 2 or against < 1:
            return 0.0
        return float(stats.t.ppf(boundary, k - 1) * self.sigma * np.sqrt(1 + 1 / against))


def _sessions(g: Any, commits: list[str], min_runs: int) -> Sessions:
    """The medians of the commits (in their order) with min_runs runs at least."""
    by = g[g["commit"].isin(commits)].groupby("commit")["value"]
    med, n = by.median(), by.size()
    return Sessions(np.array([float(med[c]) for c in commits if c in med.index and n[c] >= min_runs]))


def _judge(base: np.ndarray, head: np.ndarray, metric: str, t: Threshold, center: float,
           half: float) -> dict[str, Any]:
    """The commit's runs (head) against base's. The t test: also its median against center ± half, where the
    window's times would put it."""
    higher_better = higher_is_better(metric)
    b, h = float(np.median(base)), float(np.median(head))
    change = (h - b) / b if b else 0.0
    worse_by = -change if higher_better else change
    out: dict[str, Any] = {"baseline": b, "value": h, "change": change, "baseline_runs": int(base.size),
                           "runs": int(head.size)}
    if t.test == "t":
        p = _welch_worse(base, head, higher_better)
        beyond = h < center - half if higher_better else h > center + half
        out.update(p=p, interval=[center - half, center + half],
                   alert=p < 1 - t.boundary and worse_by > t.least and beyond)
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
                                "commit_depth, sources_id, itchbench_commit, value, verdict, run_dir, workload "
                                f"FROM runs {where}")
    if df.empty:
        return []
    df["gateway"] = df["gateway"].fillna(store.BUILT_IN)
    store.told_apart_by_workload(df)
    # A run that did not pass measured something other than the workload (a gateway that crashed part-way, lost
    # messages, or made a wrong BBO): its timings are left out, and it is an alert of its own.
    passed = df["verdict"].fillna("").isin(PASSED)
    stored = stored_thresholds(store_dir)
    _warn_unmatched(store_dir, stored)
    out: list[dict[str, Any]] = []
    for key, g in df.groupby(SERIES, sort=True, dropna=False):
        order = commit_order(g)
        series = dict(zip(SERIES, map(str, key)))
        t = threshold_for(series, stored, threshold, given or {})
        judged = [c for c in order if c in set(commits)] if commits is not None else order[-1:]
        first = build_starts(order, g.groupby("commit")["sources_id"].first().to_dict())
        timed = g[passed[g.index]]
        # Each build judged once, at its first commit, and its newest commit judged named with it.
        newest = {first[c]: c for c in judged}
        for start, commit in newest.items():
            rows = _judge_commit(timed, order, order.index(start), series, t)
            if commit != start:
                rows = [{**r, "same_sources_through": commit} for r in rows]
                rows += _machine_drift(timed, order, start, commit, series, t)
            out += rows
    # Every run, whatever it measured.
    runs = store.query(store_dir, "SELECT DISTINCT gateway, cpu_model, scenario, configuration, commit, commit_time, "
                                  "commit_depth, verdict, run_dir, workload FROM runs")
    runs["gateway"] = runs["gateway"].fillna(store.BUILT_IN)
    store.told_apart_by_workload(runs)
    return _runs_not_passing(runs, commits) + out


# The verdicts of a run that passed (its exit status 0); "" is a run stored without one.
PASSED = (*(status for status, code in EXIT.items() if code == 0), "")


def commit_order(g: Any) -> list[str]:
    """The commits of rows g in commit order: by commit time, then depth."""
    return (g.groupby("commit", sort=False).agg(t=("commit_time", "min"), d=("commit_depth", "min"))
            .sort_values(["t", "d"], na_position="first").index.tolist())


def _runs_not_passing(runs: Any, commits: list[str] | None) -> list[dict]:
    """Per gateway, machine, scenario and configuration, each judged commit (the newest, or each of `commits`)
    whose runs (one row a run) did not all pass: an alert, one line, whatever metrics were asked."""
    out = []
    runs = runs.assign(passed=runs["verdict"].fillna("").isin(PASSED)).drop_duplicates("run_dir")
    for key, g in runs.groupby(SERIES[:-1], sort=True, dropna=False):
        order = commit_order(g)
        for commit in ([c for c in order if c in set(commits)] if commits is not None else order[-1:]):
            mine = g[g["commit"] == commit]
            bad = mine[~mine["passed"]]
            if len(bad):
                out.append({**dict(zip(SERIES[:-1], map(str, key))), "metric": "", "commit": commit, "kind": "runs",
                            "judged": True, "alert": True, "runs": len(mine), "failed": len(bad),
                            "verdicts": bad["verdict"].value_counts().sort_index().to_dict(),
                            "first_run": str(bad["run_dir"].iloc[0])})
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
    times = _sessions(g, before, threshold.min_runs)
    why = (ONE_SAMPLE if series["metric"].endswith(".max") else
           "no commit before it" if not before else
           f"{head.size} run(s) of it, {threshold.min_runs} needed" if head.size < threshold.min_runs else
           f"{base.size} run(s) in its window, {threshold.min_sample} needed" if base.size < threshold.min_sample
           else f"{times.medians.size} commit(s) of {threshold.min_runs}+ runs in its window, {threshold.min_commits}"
                " needed by the t test: their medians' spread is how far the machine moves between times"
           if threshold.test == "t" and times.medians.size < threshold.min_commits else "")
    if why:
        return [{**row, "kind": "step", "judged": False, "why": why}]
    k = times.medians.size
    # A metric given in whole units (a stage's percentile in ns) moves by at least one between any two times: its
    # step is the least the interval spans, whatever the window's medians did.
    values = np.unique(g["value"].to_numpy(float))
    step = float(np.diff(values).min()) if values.size > 1 else 0.0
    out = [{**row, "kind": "step", "judged": True, "sigma_between": times.sigma,
            **_judge(base, head, series["metric"], threshold, float(times.medians.mean()) if k else 0.0,
                     max(times.half_width(threshold.boundary, k), step))}]
    oldest = g.loc[g["commit"] == before[0], "value"].to_numpy(float)
    if len(before) > 1 and oldest.size >= threshold.min_runs:
        out.append({**row, "kind": "creep", "judged": True, "since": before[0],
                    **_judge(oldest, head, series["metric"], threshold, float(np.median(oldest)),
                             max(times.half_width(threshold.boundary, 1), step))})
    return out


def line(r: dict[str, Any]) -> str:
    """One alert (or one series not judged, or one machine drift) in words."""
    name = f"{r['gateway']} on {r['cpu_model'] or '?'}: {r['scenario']}/{r['configuration']}"
    if r["kind"] == "runs":
        said = ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in r["verdicts"].items())
        return (f"RUNS NOT PASSING {name} at {r['commit'][:12]}: {r['failed']} of {r['runs']} runs did not pass "
                f"({said}; the first: {r['first_run']}): their timings are left out of every series")
    name += f" {r['metric']}"
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
