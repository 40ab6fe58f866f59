"""The capacity measures of one run, the same for every gateway: latency from
the intended send time where the sender recorded it (free of coordinated
omission; the built-in gateway to its book, a brought one wire to wire to the
BBO event received), else the run's headline stage; the rate offered and the
rate achieved; loss; memory; the hot thread's CPU. A measure the run could
not take is NaN, never 0: a target on it is NOT MEASURED."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..analysis import hops

NAN = float("nan")
LATENCY_KEYS = ("p50", "p99", "p999", "max", "mean")
OK_STATUSES = ("lossless", "faults_accounted", "recovered", "joined")


def _from(summary: dict[str, Any], w2w_key: str, measure: str) -> dict[str, Any]:
    """Latency from a send time: a black box's wire-to-wire figure, else the built-in gateway's row of the
    coordinated-omission table whose measure starts with `measure`; {} without send times."""
    w2w = (summary.get("wire_to_wire") or {}).get(w2w_key)
    if w2w:
        return w2w
    for row in (summary.get("latency") or {}).get("hops", {}).get("coordinated_omission") or []:
        if str(row.get("measure", "")).startswith(measure):
            return row
    return {}


def _from_sent(summary: dict[str, Any]) -> dict[str, Any]:
    """Latency from the actual send: the gateway and the network alone, without the sender's own lag."""
    return _from(summary, "from_sent", "from the actual send")


def _latency(summary: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(what the latency measures, its ns statistics)."""
    row = _from(summary, "from_intended", "from the intended")
    if row:
        black_box = bool((summary.get("wire_to_wire") or {}).get("from_intended"))
        return ("wire to wire from the intended send (black box)" if black_box
                else "intended send -> book applied"), row
    stages = (summary.get("latency") or {}).get("stages") or {}
    if stages.get("receive_to_book"):
        return "receive -> book applied (no send times: the sender does not record them)", stages["receive_to_book"]
    return "not measured", {}


def _offered(run_dir: Path, messages: int) -> float:
    """Messages a second the sender was asked for: the messages over the span of their intended send times."""
    log = run_dir / "send.log"
    if not log.is_file() or messages <= 0:
        return NAN
    _, intended, _ = hops.send_stamps(log)
    span = (int(intended.max()) - int(intended.min())) / 1e9 if intended.size > 1 else 0.0
    return messages / span if span > 0 else NAN


def _number(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return NAN
    return f


def of_run(run_dir: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """Every measure of one run; latencies in microseconds, rates in messages a second, memory in MiB."""
    what, lat = _latency(summary)
    rec = summary.get("reconciliation") or {}
    loss = rec.get("loss") or {}
    expected = int(loss.get("expected_messages") or 0)
    status = (summary.get("verdict") or {}).get("status", "incomplete")
    out: dict[str, Any] = {"latency_measure": what, "status": status}
    for k in LATENCY_KEYS:
        out[f"{k}_us"] = _number(lat.get(k)) / 1e3
    # The growth from the intended send splits exactly (one regression on the same due times) into the gateway's
    # (from the actual send) and the sender's own lag: a sender that cannot keep the rate is not a gateway behind.
    out["slope_us_per_s"] = _number(lat.get("slope_us_per_s"))
    out["gateway_slope_us_per_s"] = _number(_from_sent(summary).get("slope_us_per_s"))
    out["sender_slope_us_per_s"] = out["slope_us_per_s"] - out["gateway_slope_us_per_s"]
    if "messages_not_applied" in loss and expected:
        lost = int(loss["messages_not_applied"])
        out["loss"] = lost / expected
    else:  # a black box: whole (its BBO equal to the reference, nothing dropped) or not measured
        whole = status in OK_STATUSES and bool(loss.get("lossless", False))
        out["loss"] = 0.0 if whole else NAN
        lost = 0 if whole else None
    out["lost_messages"] = lost
    out["offered_msg_s"] = _offered(run_dir, expected)
    # Achieved: the messages served over the span from the first one due to the last one done (its book applied,
    # or its BBO event received); without send times, the gateway's own count over its own run.
    perf = summary.get("performance") or {}
    w2w = summary.get("wire_to_wire") or {}
    served_ns = _number(lat.get("served_span_ns"))
    if w2w.get("last_received_ns") and w2w.get("first_due_ns"):
        served_ns = float(w2w["last_received_ns"] - w2w["first_due_ns"])
    if served_ns > 0 and lost is not None:
        span_s = served_ns / 1e9
        out["throughput_msg_s"] = (expected - lost) / span_s
    elif perf.get("messages_per_s"):
        out["throughput_msg_s"] = _number(perf["messages_per_s"])
        span_s = _number(perf.get("elapsed_s"))
    else:
        span_s = NAN
        out["throughput_msg_s"] = NAN
    res = summary.get("resources") or {}
    out["rss_mb"] = _number(res.get("max_rss_kib")) / 1024
    hot = (summary.get("noise") or {}).get("hot_thread") or {}
    # The hot thread's CPU time counts from its start: over a short served span alone it reads far past 100 %.
    # Over the gateway's own run (its sources open to its end), which holds the served span and the wait before it.
    run_s = max(_number(perf.get("elapsed_s")), span_s) if perf.get("elapsed_s") else span_s
    if summary.get("transport") == "sim":  # nothing to wait for: busy from start to end, its start-up included
        out["cpu_pct"] = NAN
        out["cpu_measure"] = "not measured: a simulation is busy throughout"
    elif hot.get("on_cpu_ns") and run_s > 0:  # NaN compares false
        out["cpu_pct"] = 100 * _number(hot["on_cpu_ns"]) / 1e9 / run_s
        out["cpu_measure"] = "the hot thread's CPU time over the gateway's run, sources open to end"
    elif res.get("cpu_s") and res.get("wall_s"):  # a black box names no threads: its whole process, start to exit
        out["cpu_pct"] = 100 * _number(res["cpu_s"]) / _number(res["wall_s"])
        out["cpu_measure"] = "the gateway process's CPU time over its life (its threads are not named to us)"
    else:
        out["cpu_pct"] = NAN
        out["cpu_measure"] = "not measured"
    out["messages"] = expected
    out.update(_subscribers(summary))
    return out


def _subscribers(summary: dict[str, Any]) -> dict[str, Any]:
    """The TCP and ring subscribers' own hop (published -> received) p99, over the fast ones: the median
    subscriber's and the slowest's (the built-in gateway's hop tables; a black box's subscribers are not ours)."""
    modes = {str(s["index"]): s.get("mode", "fast")
             for s in (summary.get("transport_details") or {}).get("subscribers", [])}
    p99s = []
    for name, rows in ((summary.get("latency") or {}).get("hops") or {}).get("to_subscriber", {}).items():
        own = next((r for r in rows if str(r.get("hop", "")).startswith(f"subscriber {name} ")), None)
        if own is not None and modes.get(name, "fast") == "fast":
            p99s.append(float(own["p99"]) / 1e3)
    if not p99s:
        return {"subscribers_measured": 0, "subscriber_p99_median_us": NAN, "subscriber_p99_slowest_us": NAN}
    p99s.sort()
    return {"subscribers_measured": len(p99s), "subscriber_p99_median_us": p99s[(len(p99s) - 1) // 2],
            "subscriber_p99_slowest_us": p99s[-1]}
