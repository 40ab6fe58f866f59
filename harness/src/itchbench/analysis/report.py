"""Per-run reports: report.md, summary.json's latency section, plots, HdrHistogram
logs and (on request) a per-message CSV — rebuilt from the run directory
alone, so `itchbench report RUN_DIR` gives the same bytes every time."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .. import atomic, markdown_table, progress, rundir
from ..host import facts as host_facts
from . import blackbox_report, drawing, dump, hlog, hops, latency_pass, stats
from .switches import Switches

HEADLINE = "receive_to_book"


def _ns(v: float) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.0f}"


def _num(v: float, digits: int = 1) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.{digits}f}"


def _stats_json(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    # Read out as Python floats at once: a row at a time through pandas took 13 ms for a table of 530 rows, this
    # 2 ms. Each value is still rounded by Python's round, as before.
    keys = list(stats.STAT_KEYS)
    out: dict[str, dict[str, float]] = {}
    for name, row in zip(frame.index, frame[keys].to_numpy(dtype=float).tolist()):
        out[str(name)] = {k: (int(v) if k == "count" else (None if math.isnan(v) else round(v, 3)))
                          for k, v in zip(keys, row)}
    return out


def _table(frame: pd.DataFrame, label: str, names: dict[str, str] | None = None) -> list[str]:
    cols = ["count", "mean", "min", "p50", "p90", "p99", "p999", "p9999", "max", "stddev"]
    head = f"| {label} | " + " | ".join(cols) + " |"
    lines = [head, "|" + "---|" * (len(cols) + 1)]
    for name, row in frame.iterrows():
        cells = [f"{int(row['count']):,}", _num(row["mean"])] + [_ns(row[c]) for c in cols[2:-1]] + [_num(row["stddev"])]
        shown = markdown_table.cell(names.get(str(name), str(name)) if names else name)
        lines.append(f"| {shown} | " + " | ".join(cells) + " |")
    return lines


def _bin_width(edges_s: np.ndarray) -> str:
    width = float(edges_s[1] - edges_s[0])
    return f"{width * 1e3:,.3f} ms" if width >= 1e-3 else f"{width * 1e6:,.3f} µs"


def _text_histogram(values: np.ndarray, counts: np.ndarray, width: int = 40) -> list[str]:
    """Counts in power-of-two buckets, from a histogram's distinct values and their counts."""
    if values.size == 0:
        return ["(no values)"]
    exp = np.floor(np.log2(np.maximum(values, 1).astype(np.float64))).astype(int)
    lo, hi = int(exp.min()), int(exp.max())
    per = np.bincount(exp - lo, weights=counts, minlength=hi - lo + 1).astype(np.int64)
    top = per.max()
    lines = ["```", f"{'ns from':>12} {'to':>12} {'messages':>10}"]
    for i, c in enumerate(per):
        bar = "█" * int(round(width * c / top)) if c else ""
        lines.append(f"{2 ** (lo + i):>12,} {2 ** (lo + i + 1):>12,} {int(c):>10,} {bar}")
    lines.append("```")
    return lines


def _stage_frame(per_stage: dict[str, pd.DataFrame], stages: list[tuple[str, str]]) -> pd.DataFrame:
    """One row a stage (in stage order) from each stage's one-key statistics; a stage without values: NaN."""
    rows = {n: (per_stage[n].iloc[0] if len(per_stage[n]) else pd.Series({k: np.nan for k in stats.STAT_KEYS}))
            for n, _ in stages}
    frame = pd.DataFrame.from_dict({n: r.to_dict() for n, r in rows.items()}, orient="index", columns=stats.STAT_KEYS)
    frame["count"] = frame["count"].fillna(0)
    return frame


def _hop_rows(frame: pd.DataFrame) -> tuple[list[str], list[dict[str, Any]]]:
    md = ["| hop | messages | p50 | p99 | p99.9 | mean | cumulative p50 | cumulative mean | share of the mean |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rows = []
    for _, r in frame.iterrows():
        md.append(f"| {r['hop']} | {int(r['count']):,} | {_ns(r['p50'])} | {_ns(r['p99'])} | {_ns(r['p999'])} | "
                  f"{_num(r['mean'])} | {_ns(r['cumulative_p50'])} | {_num(r['cumulative_mean'])} | "
                  f"{_num(r['share_of_mean'] * 100)} % |")
        rows.append({k: (r[k] if k == "hop" else int(r[k]) if k == "count" else
                         round(float(r[k]), 9 if k == "share_of_mean" else 3)) for k in hops.COLUMNS})
    return md, rows


def _hops_section(run_dir: Path, summary: dict[str, Any],
                  lat: latency_pass.RunLatency | None) -> tuple[list[str], dict[str, Any]]:
    """Hop by hop, end to end (analysis/hops.py), and the coordinated-omission table."""
    tables = lat.hop_tables if lat is not None else None
    if tables is None:
        return [], {}
    to_book_table = tables.table("t_book")
    if not int(to_book_table.iloc[-1]["count"]):
        return [], {}
    offset = hops.gateway_clock(run_dir).get("offset_from_monotonic_ns_at_end")
    sender = {"udp-replay": "udp-replay (every packet's intended and actual send time)",
              "serial-replay": "serial-replay (every line's intended time and write)",
              "tcpreplay": "tcpreplay (no sender stamps: the chain starts at the kernel)",
              "": "none (simulation: the chain starts when a datagram is handed over)"}[lat.sender]
    md = ["## Hop by hop", "",
          f"Sender: {sender}. Every stamp is on one host clock, CLOCK_MONOTONIC: the gateway's stage clock (a TSC "
          f"line fitted at start) is moved onto it" + (f", linearly from its anchor to the {offset:,} ns it had "
                                                         "drifted by the end of the run" if offset is not None
                                                         else "") + ". "
          "A message's hops add up exactly to its end-to-end latency; so do the means (the share column), "
          "percentiles do not.", "", "### Every message, to the book", ""]
    to_book_md, to_book = _hop_rows(to_book_table)
    md += to_book_md + [""]
    out: dict[str, Any] = {"sender": lat.sender, "clock_offset_ns": offset, "to_book": to_book, "to_subscriber": {}}
    modes = {f"t_sub_{s['index']}": s.get("mode", "fast")
             for s in summary.get("transport_details", {}).get("subscribers", [])}
    for col in lat.subscribers:
        if col not in tables.chains:
            continue
        sub_table = tables.table(col)
        if not int(sub_table.iloc[-1]["count"]):
            continue
        sub_md, rows = _hop_rows(sub_table)
        if hops.is_depth(col):  # the depth stream's subscriber of one path (TCP 0, shm, mqtt, kafka)
            name = col[len(hops.DEPTH_SUBSCRIBER):]
            md += [f"### Depth events, to the depth subscriber {name}", ""] + sub_md + [""]
            out.setdefault("to_depth_subscriber", {})[name] = rows
            continue
        name = col[len(hops.SUBSCRIBER):]
        if len(out["to_subscriber"]) < hops.FULL_SUBSCRIBER_CHAINS:
            md += [f"### BBO events, to subscriber {name} ({modes.get(col, 'fast')})", ""] + sub_md + [""]
        out["to_subscriber"][name] = rows
    md += _rank_section(out["to_subscriber"], modes)
    co = tables.coordinated_omission()
    if len(co) > 1:
        md += ["### Coordinated omission", "",
               "Latency to the book measured from when each packet was due, from when it was actually sent, and "
               "the gateway's own service time. A stall that holds the sender back hides from the second and the "
               "third; only the first sees it whole.", "",
               "| measured | messages | p50 | p99 | p99.9 | max | mean |", "|---|---:|---:|---:|---:|---:|---:|"]
        md += [f"| {r['measure']} | {int(r['count']):,} | {_ns(r['p50'])} | {_ns(r['p99'])} | {_ns(r['p999'])} | "
               f"{_ns(r['max'])} | {_num(r['mean'])} |" for _, r in co.iterrows()] + [""]
        out["coordinated_omission"] = [{k: (r[k] if k == "measure" else round(float(r[k]), 3)) for k in co.columns}
                                       for _, r in co.iterrows()]
    if lat.outliers is not None:
        trace = run_dir / "profile" / "switches.npz"
        hot = ((summary.get("noise") or {}).get("hot_thread") or {}).get("tid", 0)
        slow = lat.outliers.result(float(to_book_table.iloc[-1]["p999"]), [float(p) for p in to_book_table["p50"][:-1]],
                                   Switches.load(trace) if trace.is_file() else None, int(hot or 0))
        md += _outliers_section(slow, [str(h) for h in to_book_table["hop"][:-1]])
        out["outliers"] = slow
    return md, out


def _outliers_section(slow: dict[str, Any], hop_names: list[str]) -> list[str]:
    """The slowest messages (p99.9 and above, end to end to the book) and the hop each is charged to."""
    n = slow["outliers"]
    if not n:
        return []
    md = ["### The slowest messages and why", "",
          f"The {n:,} messages at or above p99.9 ({_ns(slow['threshold_ns'])} ns end to end to the book; at most "
          f"the {slow['kept_at_most']:,} slowest are kept), each charged to the hop that ran longest past its own "
          "p50 when that hop holds at least half of the message's excess; the rest are spread over several hops "
          "and left unexplained (analysis/outliers.py).", "",
          "| cause | hop | outliers | share | median excess (ns) |", "|---|---|---:|---:|---:|"]
    md += [f"| {c['cause']} | {hop_names[c['hop']]} | {c['outliers']:,} | {100 * c['share']:.1f} % | "
           f"{_ns(c['median_excess_ns'])} |" for c in slow["causes"]]
    if slow["unexplained"]:
        md.append(f"| unexplained: spread over several hops | — | {slow['unexplained']:,} | "
                  f"{100 * slow['unexplained'] / n:.1f} % | — |")
    sched = slow.get("scheduler")
    if sched and sched.get("not_traced"):
        md += ["", f"{sched['not_traced']:,} of the outliers ran long outside the scheduler's time line (before perf "
               "was recording, or after it stopped): what had their CPU was not looked at."]
    if sched and sched["outliers"]:
        md += ["", f"The scheduler's time line (every context switch, profile.scheduler): in the hop each is charged "
               f"to, {sched['cpu_taken']:,} of the {sched['outliers']:,} outliers in it ({100 * sched['share']:.1f} %) had "
               f"the hot thread preempted ({sched['hot_thread_preempted']:,}) or its CPU held by other tasks before "
               "it ran again: " + (", ".join(f"{comm} ({n:,})" for comm, n in sched["by_task"].items()) or "none")
               + "."]
        md[-1] += (f" Interrupt handlers or softirqs ran on its CPU in that hop for {sched['interrupted']:,} "
                   f"({100 * sched['interrupted_share']:.1f} %): "
                   + (", ".join(f"{what} ({n:,})" for what, n in sched["by_interrupt"].items()) or "none")
                   + f"; it was moved to another CPU for {sched['migrated']:,}. {sched['none_of_these']:,} met "
                   "none of these (the sender's stall, or the thread busy with earlier messages).")
        if sched.get("held"):
            md += ["", "Who held the gateway's CPU in those hops, ranked by the time they held it (a task named as it "
                   "was when it left the CPU; an interrupt's time inside a task's turn is in the task's too):", "",
                   "| rank | who | kind | held (ns) | outliers |", "|---:|---|---|---:|---:|"]
            md += [f"| {i} | {h['who']} | {h['kind']} | {_ns(h['held_ns'])} | {h['outliers']:,} |"
                   for i, h in enumerate(sched["held"], 1)]
            md += ["", f"Together they explain {100 * sched['explained_share']:.1f} % of the outliers' excess over "
                   f"their hops' p50 ({_ns(sched['explained_ns'])} of {_ns(sched['excess_ns'])} ns: per outlier, the "
                   "time anything held its CPU in the hop, at most its excess)."]
    md += ["", "Their message types: " + ", ".join(f"{t} {c:,}" for t, c in slow["types"].items()) + ".", "",
           "| slowest | seq | type | latency (ns) | charged to |", "|---:|---:|---|---:|---|"]
    md += [f"| {i} | {r['seq']:,} | {r['type']} | {_ns(r['latency_ns'])} | {r['cause']} |"
           for i, r in enumerate(slow["slowest"], 1)]
    return md + [""]


RANKS = (("fastest", 0.0), ("10th %", 0.1), ("25th %", 0.25), ("median", 0.5), ("75th %", 0.75), ("90th %", 0.9),
         ("slowest", 1.0))


def _rank_section(to_subscriber: dict[str, list[dict[str, Any]]], modes: dict[str, str]) -> list[str]:
    """Subscribers ranked by the p99 of their own hop (published → received): what the fastest, the typical and
    the slowest one saw. Past a handful, this is the table to read; every subscriber's rows are in summary.json."""
    ranked = []
    for name, rows in to_subscriber.items():
        own = next((r for r in rows if str(r["hop"]).startswith(f"subscriber {name} ")), None)
        if own is not None:
            ranked.append((own["p99"], name, own, rows[-1]))
    if len(ranked) < 3:
        return []
    ranked.sort(key=lambda x: (x[0], x[1]))
    md = [f"### Subscribers by rank ({len(ranked)} with events)", "",
          "Ranked by the p99 of their own hop, published → received; end to end is from the chain's first stamp. "
          f"The first {hops.FULL_SUBSCRIBER_CHAINS} have every hop above.", "",
          "| rank | subscriber | mode | p50 | p99 | p99.9 | end-to-end p50 | end-to-end p99 |",
          "|---|---:|---|---:|---:|---:|---:|---:|"]
    for words, q in RANKS:
        _, name, own, whole = ranked[round(q * (len(ranked) - 1))]
        md.append(f"| {words} | {name} | {modes.get(f't_sub_{name}', 'fast')} | {_ns(own['p50'])} | {_ns(own['p99'])} | "
                  f"{_ns(own['p999'])} | {_ns(whole['p50'])} | {_ns(whole['p99'])} |")
    return md + [""]


def _ms(ns: int) -> str:
    return f"{ns / 1e6:,.1f}" if ns >= 0 else "?"


def _noise_section(noise: dict[str, Any] | None) -> list[str]:
    """What the kernel says the run went through (runs/noise.py): a slow run is told from a noisy one."""
    if not noise:
        return ["Noise: not recorded (a run directory from before noise was recorded).", ""]
    md = [f"Noise: {noise['words']}.", "",
          "| CPU | busy ms | steal ms | irq ms | softirq ms |", "|---|---|---|---|---|"]
    md += [f"| {cpu} | {c['busy_ms']:,.0f} | {c['steal_ms']:,.0f} | {c['irq_ms']:,.0f} | {c['softirq_ms']:,.0f} |"
           for cpu, c in noise["cpus"].items()]
    if noise.get("threads"):
        md += ["", "| thread | tid | ran ms | waited ms | preemptions | sleeps | minor faults | major faults | "
               "migrations | policy | CPUs |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        md += [f"| {t['name']} | {t['tid']} | {_ms(t.get('on_cpu_ns', -1))} | {_ms(t.get('run_delay_ns', -1))} | "
               f"{t['involuntary_switches']:,} | {t['voluntary_switches']:,} | "
               f"{t['minor_faults']:,} | {t['major_faults']:,} | {t['migrations'] if t['migrations'] >= 0 else '?'} | "
               f"{t['policy']} | {t['affinity']} |" for t in noise["threads"]]
    return md + [""]


def _receive_words(summary: dict[str, Any], source: str) -> str:
    """How the gateway received the feed: the af_xdp source's grants (its XDP attach and socket bind modes), and
    kernel stamps (the hook's, or the socket's) not placed on its clock (StageClock::from_other_clock), if any."""
    gateway = summary.get("gateway") or {}
    if source != "af_xdp":
        udp = gateway.get("udp") or {}
        unplaced, across = udp.get("kernel_timestamps_unplaced", 0), udp.get("kernel_timestamps_across_step", 0)
        steps = udp.get("realtime_steps", 0)
        set_words = (f"CLOCK_REALTIME, which the kernel stamps on, was set {steps:,} time{'s' if steps != 1 else ''} "
                     f"during the run (by up to {hops.span_words(udp.get('realtime_largest_step_ns', 0))})")
        if not unplaced:
            return f"; {set_words}, no stamp waiting across it" if steps else ""
        return (f"; {unplaced:,} of the kernel's receive stamps not placed on the gateway's clock (left out"
                + (f"; {across:,} of them may have waited across a step: {set_words}" if across else "") + ")")
    x = gateway.get("af_xdp") or {}
    unplaced = x.get("hook_stamps_unplaced", 0)
    return (f"; received with AF_XDP at the loopback's XDP hook ({x.get('attach_mode', '?')} mode, "
            f"{x.get('bind_mode', '?')} socket; {x.get('hook_stamps', 0):,} frames stamped at the hook"
            + (f", {unplaced:,} of those stamps not placed on the gateway's clock (no kernel receive stamp)"
               if unplaced else "") + ")")


Closing = Callable[[Path, dict[str, Any], dict[str, Any]], list[str]]


class _ScanProgress:
    """Progress of the report's two passes over the latency log, against the messages the gateway took (one record
    each, give or take those it rejected: an estimate)."""

    def __init__(self, run_dir: Path, say: Callable[[str], None], summary: dict[str, Any]) -> None:
        self.run_dir, self.say = run_dir, say
        self.total = int((summary.get("reconciliation") or {}).get("received") or 0) or None
        self.meters: dict[str, progress.Progress] = {}

    def __call__(self, pass_: str, records: int) -> None:
        if records == latency_pass.SET_ASIDE:
            self.meters[pass_].finish(how="set aside: the log is read instead")
            return
        if pass_ not in self.meters:
            self.close()
            self.meters[pass_] = progress.Progress(f"report, {pass_}", self.total, estimated=True, say=self.say,
                                                   log=self.run_dir / "progress.log", unit="records")
        self.meters[pass_].update(records)

    def close(self) -> None:
        """The pass under way is over: said once more, whatever the interval."""
        if self.meters:
            list(self.meters.values())[-1].finish()


def build(run_dir: Path, *, method: str = stats.DEFAULT_METHOD, csv: bool = False,
          closing: Closing | None = None, say: Callable[[str], None] | None = None,
          followed: Callable[[], latency_pass.Followed | None] | None = None) -> Path:
    """report.md of a run; `closing` adds sections at its end from the finished summary (the targets, judged by
    capacity/, which sits above this package). With `say`, the passes over the latency log report their progress
    there and in the run's progress.log. followed: waits for the second pass counted while the gateway ran
    (analysis/latency_follow.py) and returns it, taken if it covered the whole log. A summary that said the report
    was not written (rundir.REPORT_NOT_WRITTEN) no longer says so."""
    run_dir = Path(run_dir)
    report = _build(run_dir, method, csv, closing, say, followed)
    rundir.set_report_not_written(run_dir, None)
    return report


def _build(run_dir: Path, method: str, csv: bool, closing: Closing | None, say: Callable[[str], None] | None,
           followed: Callable[[], latency_pass.Followed | None] | None) -> Path:
    manifest, summary = rundir.read_run(run_dir, rundir.REPORT_NEEDS)
    scen = manifest["scenario"]
    if summary.get("reconciliation", {}).get("black_box") or (scen.get("gateway_file") and "reconciliation"
                                                                not in summary):
        return blackbox_report.build(run_dir, manifest, summary, _noise_section(summary.get("noise")),
                                     closing(run_dir, manifest, summary) if closing else [])
    env = manifest["environment"]
    plot_dir = run_dir / "plots"
    plot_dir.mkdir(exist_ok=True)
    md: list[str] = []
    title = manifest.get("label", manifest["run_id"])
    md += [f"# itchbench run: {title}", "",
           f"**{summary['verdict']['headline']}**", "",
           f"Run `{manifest['run_id']}`, {scen['transport']} transport, created {manifest['created_utc']}. "
           f"Complete: **{'yes' if summary['complete'] else 'NO'}**; reconciliation "
           f"**{'balanced' if summary.get('balanced') else 'NOT balanced'}**; "
           f"**{'lossless' if summary.get('lossless') else 'NOT lossless'}** (docs/verdicts.md).", ""]
    if summary.get("error"):
        md += [f"> Error: {summary['error']}", ""]

    # Environment
    git, build_info = env["git"], env.get("build", {})
    md += ["## Environment", "",
           "| | |", "|---|---|",
           f"| commit | `{git['commit']}`{' (dirty)' if git.get('dirty') else ''} |",
           f"| build | {build_info.get('build_type', '?')}, `{build_info.get('cxx_flags', '')}`, {build_info.get('compiler', '')} |",
           f"| kernel | {env['kernel']} |",
           f"| CPU | {env['cpu_model']} × {env['cpu_count']}, governor {env['cpu_governor']}, isolated [{env['isolated_cpus']}], harness affinity {env['affinity']} |",
           f"| clock | stage stamps: {summary.get('performance', {}).get('stage_clock', '?')}, one stamp costs "
           f"{_num(summary.get('performance', {}).get('timer_overhead_ns', float('nan')), 0)} ns (included in every figure); clocksource {env.get('clocksource')} |",
           "| tools | " + ", ".join(f"{k} {v}" for k, v in env["tools"].items() if v) + " |"]
    md += [f"| {name} | {value.replace('|', '/')} |" for name, value in host_facts.describe(env.get("host"))] + [""]
    rt = summary.get("gateway", {}).get("realtime")
    if rt:
        granted = [f"{k}={v['value']} ({'granted' if v['granted'] else 'NOT granted: ' + v['error']})"
                   for k, v in rt.items() if v.get("requested")]
        md += [f"Real-time options: {', '.join(granted) if granted else 'none requested'}.", ""]
    md += _noise_section(summary.get("noise"))

    # Workload
    per_type = summary.get("messages", {}).get("per_type", {})
    md += ["## Workload", "",
           f"Capture `{scen['capture']}` (sha256 `{manifest['capture_sha256'][:16]}…`), scenario hash "
           f"`{manifest['scenario_hash'][:23]}…`.", ""]
    feed = summary.get("feed", {})
    if feed.get("address"):
        skipped = {k.replace("_", " "): v for k, v in feed["not_feed"].items() if v}
        md += [f"Feed `{feed['address']}` ({'as the scenario names it' if scen.get('feed') else 'chosen: the flow with the most MoldUDP64 messages'}"
               f", of {len(feed['flows'])} UDP flow(s)); not the feed, counted and never replayed: "
               + (", ".join(f"{v:,} {k}" for k, v in skipped.items()) if skipped else "nothing") + " (docs/feeds.md).", ""]
    if scen["transport"] == "udp":
        r = scen["replay"]
        md += [f"{r.get('sender', 'tcpreplay')}: rate {r['rate']}" + {"multiplier": f" ×{r['multiplier']}", "pps": f" {r['pps']:,} pps"}.get(r["rate"], "")
               + f", {r['loops']} loop(s), into a private network namespace"
               + _receive_words(summary, scen["gateway"].get("source", "")) + ".", ""]
    if scen["transport"] == "serial":
        s = scen["serial"]
        md += [f"serial-replay: {s['baud']:,} baud 8N1, timing {s['timing']}, through a socat pty pair.", ""]
    if per_type:
        nonzero = {t: n for t, n in per_type.items() if n}
        md += ["| type | " + " | ".join(nonzero) + " |", "|---|" + "---|" * len(nonzero),
               "| messages | " + " | ".join(f"{n:,}" for n in nonzero.values()) + " |", ""]

    # Latency
    lat_path = run_dir / "latency.lat"
    if lat_path.exists():
        drawing.start_drawer()  # its import of matplotlib runs while the log is scanned
    drawn: drawing.Drawing | None = None
    latency_json: dict[str, Any] = {"method": method}
    names = dump.symbol_names(run_dir) if lat_path.exists() else None
    meter = _ScanProgress(run_dir, say, summary) if say and lat_path.exists() else None
    scanned = (latency_pass.scan(run_dir, int(scen.get("warmup_messages", 0)),
                                 csv=run_dir / "latency.csv" if csv else None, symbol_names=names,
                                 progress=meter, followed=None if csv else followed)
               if lat_path.exists() else None)
    if meter is not None:
        meter.close()
    if scanned is not None and scanned.stages:
        lat = scanned
        stage_names = dict(lat.stages)
        # Drawn first, beside the tables below.
        plotted = [(d, *lat.stage[n].values_counts()) for n, d in lat.stages
                   if n in (HEADLINE, "receive_to_published", "decode", "book", "one_way")]
        draws = [drawing.plot("histogram", plotted, plot_dir / "histogram.png", f"Latency distribution — {title}"),
                 drawing.plot("percentile_curve", plotted, plot_dir / "percentiles.png",
                              f"Latency by percentile — {title}")]
        if HEADLINE in stage_names:
            per_bin = lat.over_time.stats()
            edges = lat.time_edges_s
            mids = ((edges[:-1] + edges[1:]) / 2)[per_bin.index.to_numpy().astype(np.int64)]
            lines = {c: per_bin[c].to_numpy() for c in ("p50", "p99", "max")} if len(per_bin) else {}
            draws.append(drawing.plot("over_time", mids, lines,
                                      stage_names[HEADLINE], plot_dir / "over-time.png",
                                      f"Latency over the run — {title}"))
        drawn = drawing.Drawing(draws)
        by_stage = _stage_frame({n: h.stats(method) for n, h in lat.stage.items()}, lat.stages)
        latency_json["stages"] = _stats_json(by_stage)
        latency_json["stage_descriptions"] = stage_names
        latency_json["warmup_messages"] = lat.warmup_messages
        latency_json["rejected_messages"] = lat.rejected
        md += ["## Latency", "",
               f"All figures in nanoseconds, exact: every message's latency counted in integer-nanosecond "
               f"histograms, nothing bucketed. Percentiles by {stats.method_text(method)}; standard deviations "
               f"are the population one (÷n); {lat.messages:,} messages"
               + (f" after a warm-up of {lat.warmup_messages:,}" if lat.warmup_messages else "")
               + (f"; {lat.rejected} rejected messages left out" if lat.rejected else "") + ".", ""]
        head = by_stage.loc[HEADLINE] if HEADLINE in by_stage.index else None
        if head is not None:
            md += ["```",
                   f"{stage_names[HEADLINE]}: n={int(head['count']):,}  mean={_num(head['mean'])}  "
                   f"p50={_ns(head['p50'])}  p90={_ns(head['p90'])}  p99={_ns(head['p99'])}  "
                   f"p99.9={_ns(head['p999'])}  p99.99={_ns(head['p9999'])}  max={_ns(head['max'])}  "
                   f"stddev={_num(head['stddev'])}", "```", ""]
        md += ["### By stage", ""] + _table(by_stage, "stage", stage_names) + [""]
        if lat.warmup_messages:
            warm = _stage_frame({n: h.stats(method) for n, h in lat.warmup.items()}, lat.stages)
            latency_json["warmup"] = _stats_json(warm)
            md += ["### Warm-up (excluded above)", ""] + _table(warm, "stage", stage_names) + [""]
        if HEADLINE in stage_names:
            md += [f"### Distribution: {stage_names[HEADLINE]}", ""] \
                + _text_histogram(*lat.stage[HEADLINE].values_counts()) + [""]
            by_type = lat.by_type.stats(method)
            by_type.index = [stats.TYPE_NAMES.get(int(t), f"0x{int(t):02x}") for t in by_type.index]
            latency_json["by_type"] = _stats_json(by_type)
            md += [f"### By message type ({stage_names[HEADLINE]})", ""] + _table(by_type, "type") + [""]
            by_sym = lat.by_symbol.stats(method).sort_values("count", ascending=False, kind="stable")
            sym_names = {str(i): names[int(i)] for i in by_sym.index}
            latency_json["by_symbol"] = {sym_names[k]: v for k, v in _stats_json(by_sym).items()}
            shown = by_sym.head(20)
            md += [f"### By symbol ({stage_names[HEADLINE]}, {min(20, len(by_sym))} busiest of {len(by_sym)})", ""] \
                + _table(shown, "symbol", sym_names) + [""]
        if lat.messages:
            # Each bin's messages over the time it covers: the last bin ends at the last receive stamp.
            widths = np.diff(lat.time_edges_s)
            widths[-1] = lat.span_ns / 1e9 - lat.time_edges_s[-2]
            rates = lat.throughput_counts / widths
            latency_json["throughput_peak_mps"] = round(float(rates.max()), 1)
            latency_json["throughput_mean_mps"] = round(float(lat.throughput_counts.sum() / (lat.span_ns / 1e9)), 1)
        md += ["### Plots", "", "![histogram](plots/histogram.png)", "", "![percentiles](plots/percentiles.png)", "",
               "![over time](plots/over-time.png)", "",
               f"Throughput: mean {_num(latency_json.get('throughput_mean_mps', float('nan')), 0)} msg/s, "
               f"peak {_num(latency_json.get('throughput_peak_mps', float('nan')), 0)} msg/s (in "
               f"{len(lat.throughput_counts)} time bins of {_bin_width(lat.time_edges_s)} each, the last cut at the "
               "last message; bins are 2^k ns wide, the narrowest of which 128 hold the run).", ""]
        hlog_dir = run_dir / "hlog"
        hlog_dir.mkdir(exist_ok=True)
        span = lat.span_ns / 1e9
        start = pd.Timestamp(manifest["created_utc"]).timestamp()
        for name, desc in lat.stages:
            v, c = lat.stage[name].values_counts()
            hlog.write(hlog_dir / f"{name}.hlog", v.astype(np.float64), c, start, span,
                       f"itchbench {manifest['run_id']}: {desc}, nanoseconds")
        md += ["HdrHistogram logs (ns): " + ", ".join(f"`hlog/{n}.hlog`" for n, _ in lat.stages) + ". HdrHistogram "
               "reports the textbook nearest rank ⌈n·p⌉ at 3 significant digits, so its percentiles can sit one rank "
               "below the tables above (where n·p is whole) and within 0.1 % of them.", ""]
        if csv:
            md += ["Per-message latencies: `latency.csv`.", ""]
    elif scanned is not None:
        stamped = ", ".join(scanned.stamped) or "none"
        md += ["## Latency", "", f"The latency log holds no stage with both of its stamps (stamped: {stamped}), so "
               "no latency figure: each stage is the time between two stamps (`gateway.stamps`).", ""]
    else:
        md += ["## Latency", "", "No latency log in this run (recorded without stage stamps).", ""]

    hop_md, hop_json = _hops_section(run_dir, summary, scanned)
    md += hop_md
    if hop_json:
        latency_json["hops"] = hop_json

    # Reconciliation
    rec = summary.get("reconciliation")
    if rec:
        md += ["## Reconciliation", ""]
        hop = rec.get(scen["transport"], {})
        rows = [(k, v) for k, v in {**hop, **{k: rec[k] for k in ("received", "decoded", "rejected", "missing",
                                                                     "duplicates", "reordered", "bbo_events",
                                                                     "latency_records", "bbo_records")}}.items()
                if not isinstance(v, (dict, list))]
        md += ["| count | value |", "|---|---|"] + [f"| {k} | {v:,} |" if isinstance(v, int) and not isinstance(v, bool)
                                                   else f"| {k} | {v} |" for k, v in rows] + [""]
        md += ["| check | |", "|---|---|"] + [f"| {k} | {'✓' if ok else '✗ FAILED'} |" for k, ok in rec["checks"].items()] + [""]
        for sub in rec.get("subscribers", []):
            log = "depth" if sub.get("depth") else "BBO"
            md.append(f"- subscriber `{sub['file']}` ({sub['mode']}): {sub['frames']:,} frames, "
                      f"{sub['frames_dropped']:,} dropped to it, identical to the {log} log: "
                      f"{sub['identical_to_' + log.lower() + '_log']}")
        bbo = summary.get("bbo") or {}  # a run whose reconciliation failed recorded none
        md += ["", f"BBO digest `{bbo['digest']}` over {bbo['events']:,} events." if "digest" in bbo else
               "BBO digest: not recorded.", ""]
        md += blackbox_report.recovery_section(rec.get("recovery"))
        md += blackbox_report.join_section(rec.get("join"))

    summary["latency"] = latency_json
    md += closing(run_dir, manifest, summary) if closing else []
    if drawn is not None:
        drawn.wait()
    rundir.write_json(run_dir / "summary.json", summary)
    report = run_dir / "report.md"
    atomic.write_text(report, "\n".join(md).rstrip() + "\n")
    return report
