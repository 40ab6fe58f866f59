"""The benchmark document: from stored runs to report.md, report.html and
figures/, byte-identical from the same runs (docs/documents.md)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from ..analysis import hops, stats
from ..depth_levels import ALL_LEVELS
from ..gateways import revisions
from ..runs import reconcile
from . import aggregate as agg
from ..host import facts as host_facts
from . import capacity, figures, render
from .collect import Configuration, RunRecord, choose_baseline, collect, gateway_of

HEADLINE_STATS = ("mean", "p50", "p99", "p999", "max")
SYMBOLS_SHOWN = 10


def _pacing(values: dict[str, Any]) -> str:
    t = values["transport"]
    if t == "sim":
        text = "simulation: the capture is read in-process, no sockets, no pacing"
    elif t == "udp":
        r = values["replay"]
        rate = {"capture": "at the capture's timing", "multiplier": f"at {r['multiplier']:g}× the capture's timing",
                "pps": f"at {r['pps']:,} packets/s", "topspeed": "as fast as it can"}[r["rate"]]
        text = f"UDP: {r.get('sender', 'tcpreplay')} {rate}, {r['loops']} loop(s), into a private network namespace's loopback"
    else:
        s = values["serial"]
        timing = "back to back at the line rate" if s["timing"] == "baud" else f"at {s['multiplier']:g}× capture timing"
        text = f"serial: serial-replay at {s['baud']:,} baud 8N1 ({timing}) through a socat pty pair"
    g = values["gateway"]
    options = [f"receive thread on CPU {g['cpu']}" if g["cpu"] >= 0 else "",
               f"publisher on CPU {g['publisher_cpu']}" if g["publisher_cpu"] >= 0 else "",
               f"SCHED_FIFO {g['sched_fifo']}" if g["sched_fifo"] else "", "mlockall" if g["mlockall"] else "",
               "busy poll" if g["busy_poll"] else ""]
    options = [o for o in options if o]
    return text + ("; " + ", ".join(options) if options else "; no pinning, default scheduling")


def _clock(run: RunRecord) -> dict[str, Any]:
    clock = hops.gateway_clock(run.dir)
    perf = run.summary.get("performance", {})
    ticks = clock.get("ticks_per_ns")
    return {"stage": perf.get("stage_clock", clock.get("stage", "?")), "timer_overhead_ns": perf.get("timer_overhead_ns"),
            "resolution_ns": (1 / ticks) if ticks else None, "offset_ns": clock.get("offset_from_monotonic_ns_at_end")}


def _workload(c: Configuration) -> dict[str, Any]:
    r = c.runs[0]
    per_type = r.summary.get("messages", {}).get("per_type", {})
    loss = r.summary.get("reconciliation", {}).get("loss", {})
    return {"capture": Path(r.manifest["scenario"]["capture"]).name, "sha256": r.manifest.get("capture_sha256", ""),
            "messages": loss.get("expected_messages", sum(per_type.values())),
            "symbols": len(r.summary.get("latency", {}).get("by_symbol", {})),
            "mix": ", ".join(f"{t} {n:,}" for t, n in per_type.items() if n),
            "pacing": _pacing(r.manifest["scenario"]), "transport": r.manifest["scenario"]["transport"],
            "warmup": r.manifest["scenario"].get("warmup_messages", 0), "output": _output(r)}


def _output(r: RunRecord) -> str:
    """What the gateway published, as its first run counted it: BBO events, and depth events of N levels."""
    bbo = (r.summary.get("bbo") or {}).get("events")
    depth = r.summary.get("depth") or {}
    words = [f"{bbo:,} BBO events"] if bbo is not None else []
    if depth.get("levels"):
        words.append(f"{depth['events']:,} level changes (every level)" if depth["levels"] == ALL_LEVELS else
                     f"{depth['events']:,} depth events ({depth['levels']} levels a side)")
    return ", ".join(words) or "?"


ENVIRONMENT_FACTS: list[tuple[str, Any]] = [
    ("gateway under test", lambda e: "see each configuration"),  # filled from the manifest: _gateway_fact
    ("CPU", lambda e: f"{e['cpu_model']} × {e['cpu_count']}"),
    ("kernel", lambda e: e["kernel"]), ("OS", lambda e: e.get("os", "?")),
    ("isolated CPUs", lambda e: e.get("isolated_cpus") or "none"),
    ("CPU governor", lambda e: e.get("cpu_governor", "?")), ("clocksource", lambda e: e.get("clocksource", "?")),
    ("harness affinity", lambda e: ", ".join(map(str, e.get("affinity", [])))),
    ("itchbench build (harness and built-in gateway)",
     lambda e: f"{e['build'].get('build_type', '?')}, `{e['build'].get('cxx_flags', '')}`, {e['build'].get('compiler', '')}"),
    ("itchbench commit", lambda e: f"`{e['git']['commit'][:12]}`" + (" (dirty working tree)" if e["git"].get("dirty")
                                                                   else "")),
    ("tools", lambda e: ", ".join(f"{k} {v}" for k, v in sorted(e.get("tools", {}).items()) if v)),
] + [(name, lambda e, name=name: dict(host_facts.describe(e["host"]))[name]) for name in host_facts.ROW_NAMES]


def _gateway_fact(r: RunRecord) -> str:
    """The build measured: a brought gateway's commit, contract and build output (gateways/provenance.py)."""
    under = r.manifest.get("gateway_under_test") or {}
    if not under.get("name"):
        return gateway_of(r) + " (its build is the itchbench build below)"
    dirty = f", diff sha256 {under['diff_sha256'][:12]}" if under.get("dirty") else ""
    where = f" in {under['repository']}" if under.get("repository") else ""
    return (f"{under['name']} at `{str(under.get('commit') or 'not in git')[:12]}`{dirty}{where}; contract sha256 "
            f"`{str(under.get('contract_sha256'))[:12]}`; built by {'; '.join(under.get('build') or ['nothing'])} "
            "(each run's report has its build output's digest)")


def _environment(configs: list[Configuration]) -> list[dict[str, str]]:
    """One row per fact: its value when every run agrees, else each configuration's."""
    rows = []
    for name, get in ENVIRONMENT_FACTS:
        per_config: dict[str, list[str]] = {}
        for c in configs:
            for r in c.runs:
                try:
                    v = _gateway_fact(r) if name == "gateway under test" else str(get(r.manifest["environment"]))
                except (KeyError, TypeError):
                    v = "?"
                if v not in per_config.setdefault(c.label, []):
                    per_config[c.label].append(v)
        distinct = {v for vs in per_config.values() for v in vs}
        value = next(iter(distinct)) if len(distinct) == 1 else \
            "; ".join(f"{label}: {' / '.join(vs)}" for label, vs in per_config.items())
        rows.append({"fact": name, "value": value, "differs": len(distinct) > 1})
    return rows


def _recorded_flags(r: RunRecord) -> str:
    """The flags the gateway binary says it was built with, a PGO profile's folder left out (a cache path)."""
    flags = r.manifest["environment"].get("build", {}).get("cxx_flags", "")
    return re.sub(r"(-fprofile-(?:use|generate))=\S+", r"\1", flags)


def _flavour_of(c: Configuration) -> revisions.Flavour:
    build = c.runs[0].manifest["scenario"].get("build")
    return revisions.Flavour.of(build) if build else revisions.Flavour()


def _builds(configs: list[Configuration], rows: list[dict[str, Any]], base: Configuration) -> list[dict[str, Any]]:
    """The compiler-flags table (docs/builds.md): one row a configuration, made when their gateways' recorded flags
    differ. Each is set against the set-up's own build (no [build] flavour) on the same capture, when the document
    has one (else the baseline): throughput as the configuration's over that one's (above 1: faster)."""
    flags = [sorted({_recorded_flags(r) for r in c.runs}) for c in configs]
    if len({f for fs in flags for f in fs}) < 2:
        return []
    rate = lambda r: r.summary["performance"]["messages_per_s"]  # noqa: E731
    capture = lambda c: c.runs[0].manifest.get("capture_sha256")  # noqa: E731
    plain = {capture(c): c for c in reversed(configs) if _flavour_of(c).default}
    out = []
    for k, (c, row, fs) in enumerate(zip(configs, rows, flags)):
        reference = plain.get(capture(c), base)
        flavour = _flavour_of(c)
        out.append({"label": c.label, "reference": reference.label, "is_reference": c is reference,
                    "flavour": flavour.name, "flags": " / ".join(fs),
                    "workload": Path(c.runs[0].manifest["scenario"]["capture"]).name,
                    "training": Path(flavour.pgo_training).name if flavour.pgo_training else "",
                    "compiler": c.runs[0].manifest["environment"].get("build", {}).get("compiler", "?"),
                    "rate": row["throughput"]["messages_per_s"],
                    "speedup": agg.factor(agg.run_values(c, rate), agg.run_values(reference, rate),
                                          agg.CI_SEED + 200 + k) if c is not reference else None,
                    "cpu_ns": row["throughput"]["cpu_ns_per_message"], "p50": row["table"]["p50"],
                    "p99": row["table"]["p99"]})
    return sorted(out, key=lambda b: b["workload"])  # stable: each workload's rows in the document's order


def _reproduce(configs: list[Configuration], run_args: list[str], baseline: str, title: str | None) -> dict[str, Any]:
    origins = [r.manifest.get("origin", {}) for c in configs for r in c.runs]
    commits = sorted({r.manifest["environment"]["git"]["commit"] for c in configs for r in c.runs})
    gateways = sorted({_gateway_fact(r) for c in configs for r in c.runs
                       if (r.manifest.get("gateway_under_test") or {}).get("name")})
    scenarios: dict[str, str] = {}
    commands: list[str] = []
    for o in origins:
        if o.get("scenario_file") and o["scenario_file"] not in scenarios:
            scenarios[o["scenario_file"]] = o.get("scenario_text", "")
        if o.get("command_line") and o["command_line"] not in commands:
            commands.append(o["command_line"])
    doc = ["itchbench", "doc", *run_args, "--baseline", baseline] + (["--title", title] if title else [])
    return {"commits": commits, "gateways": gateways, "scenarios": scenarios, "commands": commands,
            "doc_command": " ".join(json.dumps(a) if (" " in a or not a) else a for a in doc),
            "missing_origin": sum(1 for o in origins if not o)}


def build(run_paths: list[Path], out_dir: Path, *, title: str | None = None, baseline: str | None = None,
          run_args: list[str] | None = None) -> tuple[Path, Path]:
    configs = collect(run_paths)
    base = choose_baseline(configs, baseline)
    out_dir.mkdir(parents=True, exist_ok=True)
    fig_dir = out_dir / "figures"
    if fig_dir.exists():
        shutil.rmtree(fig_dir)  # figures of an earlier build that this one would not make must not linger
    fig_dir.mkdir()
    stage = agg.headline_stage(configs)
    descriptions = agg.stage_descriptions(configs)
    description = descriptions.get(stage, stage)
    methods = sorted({r.summary.get("latency", {}).get("method", "?") for c in configs for r in c.runs})

    rows = []
    for i, c in enumerate(configs):
        table = agg.stage_table(c, stage)
        factors = {k: agg.factor(agg.run_values(base, agg.stage_value(stage, k)),
                                 agg.run_values(c, agg.stage_value(stage, k)), agg.CI_SEED + j)
                   for j, k in enumerate(HEADLINE_STATS)} if c is not base else {}
        hist = f"figures/histogram-{c.slug}.png"
        rows.append({
            "label": c.label, "slug": c.slug, "is_baseline": c is base, "table": table, "factors": factors,
            "jitter": agg.jitter(c, stage), "workload": _workload(c), "clock": _clock(c.runs[0]),
            "hops": agg.hop_tables(c),
            "histogram": hist if figures.histogram(out_dir / hist, c, i, stage, description) else None,
            "throughput": {k: agg.spread(agg.run_values(c, get)) for k, get in (
                ("messages_per_s", lambda r: r.summary["performance"]["messages_per_s"]),
                ("mean_mps", lambda r: r.summary["latency"]["throughput_mean_mps"]),
                ("peak_mps", lambda r: r.summary["latency"]["throughput_peak_mps"]),
                ("elapsed_s", lambda r: r.summary["performance"]["elapsed_s"]),
                ("cpu_ns_per_message", lambda r: r.summary["resources"]["cpu_ns_per_message"]),
                ("max_rss_mib", lambda r: r.summary["resources"]["max_rss_kib"] / 1024))},
            "gateway": gateway_of(c.runs[0]),
            "runs": [{"run_id": r.run_id, "link": render.relative_link(r.dir / "report.md", out_dir),
                      "headline": r.summary.get("verdict", {}).get("headline", "?"),
                      "noise": (r.summary.get("noise") or {}).get("words", ""),
                      "created": r.manifest.get("created_utc", "?"), "stage": r.stage(stage) or {},
                      "samples": (r.stage(stage) or {}).get("count")} for r in c.runs],
        })
    sweeps = capacity.sweeps(configs)
    sweep_fig = "figures/sweep.png"
    curves = "figures/percentiles.png"
    summary_fig = "figures/summary.png"
    labels = [c.label for c in configs]
    bar_series = {k: [(t.median, t.lo, t.hi) if (t := row["table"][k]) else None for row in rows]
                  for k in ("p50", "p99")}
    types = agg.type_order(configs)
    symbols = agg.busiest_symbols(configs, SYMBOLS_SHOWN)
    benches = agg.microbenchmarks(configs)
    context = {
        "title": title or f"Benchmark: {', '.join(labels)}",
        "baseline": base.label, "stage": stage,
        "baseline_max": (agg.stage_table(base, stage)["max"] or agg.Spread(float("nan"), 0, 0, 0)).median, "stage_description": description, "descriptions": descriptions,
        "configs": rows, "loss": agg.loss_statement(configs),
        "black_box": any((r.summary.get("reconciliation") or {}).get("black_box") for c in configs for r in c.runs),
        "phases": agg.phase_table(configs, base),
        "distribution": agg.distribution_table(configs), "transport_names": reconcile.TRANSPORT_NAMES,
        "recovery": agg.recovery_table(configs), "recovery_rows": agg.RECOVERY_ROWS,
        "joins": agg.join_table(configs), "join_rows": agg.JOIN_ROWS,
        "targets": capacity.target_tables(configs), "sweeps": sweeps, "status_marks": capacity.STATUS_MARKS,
        "sweep_figure": sweep_fig if sweeps and figures.sweep_curves(out_dir / sweep_fig, sweeps) else None,
        "gateways": sorted({gateway_of(r) for c in configs for r in c.runs}),
        "method_texts": [stats.method_text(m) if m in stats.METHODS else m for m in methods],
        "ci": {"seed": agg.CI_SEED, "resamples": agg.CI_RESAMPLES, "confidence": agg.CONFIDENCE,
               "min_runs": agg.MIN_RUNS_FOR_CI},
        "curves": curves if figures.percentile_curves(out_dir / curves, configs, stage, description) else None,
        "summary_figure": summary_fig if figures.bars(out_dir / summary_fig, labels, bar_series, "ns",
                                                      f"{description}: median of the runs, min–max") else None,
        "transports": sorted({row["workload"]["transport"] for row in rows}),
        "types": [{"type": t, "cells": [(agg.keyed(c, "by_type", t, "p50"), agg.keyed(c, "by_type", t, "p99"),
                                         agg.keyed(c, "by_type", t, "count")) for c in configs]} for t in types],
        "symbols": [{"symbol": s, "cells": [(agg.keyed(c, "by_symbol", s, "p50"), agg.keyed(c, "by_symbol", s, "p99"))
                                            for c in configs]} for s in symbols],
        "builds": _builds(configs, rows, base),
        "microbench": [{"name": b, "cells": [agg.spread(agg.microbench_values(c, b)) for c in configs],
                        "factors": [agg.factor(agg.microbench_values(base, b), agg.microbench_values(c, b),
                                               agg.CI_SEED + 100 + k) if c is not base else None
                                    for k, c in enumerate(configs)]} for b in benches],
        "environment": _environment(configs),
        "reproduce": _reproduce(configs, run_args or [str(p) for p in run_paths], base.label, title),
        "run_count": sum(len(c.runs) for c in configs),
        "created_range": (min(r.manifest.get("created_utc", "") for c in configs for r in c.runs),
                          max(r.manifest.get("created_utc", "") for c in configs for r in c.runs)),
    }
    return render.write(out_dir, "benchmark.md.j2", context, context["title"])
