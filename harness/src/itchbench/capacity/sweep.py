"""Load sweeps ([sweep], docs/capacity.md): one parameter stepped up, each
step a set of interleaved runs, until the gateway saturates. A step is past
saturation when, on the median of its runs:

    sender    the sender fell behind the rate it was asked for (its lag grew
              faster than max_slope_us_per_s): the load is the sender's limit,
              and the gateway's saturation lies above it, not reached
    lost      a run lost messages (its verdict is not an exact one)
    behind    latency from the actual send grows through the run faster
              than max_slope_us_per_s (the gateway falls behind: it queues)
    p99       p99 passes the bound p99_us

The sweep of a configuration stops at its first such step; the steps before
it stay. Its saturation is the throughput achieved on the heaviest step
that met every bound; its knee the first step whose p50 is more than KNEE_RISE
times the p50 of the lightest step: where the typical message starts to
queue (the tail moves with the machine's noise long before that)."""

from __future__ import annotations

import math
import re
import statistics
from typing import Any

KNEE_RISE = 2.0

# Keys a sweep may step: a number of the scenario that shapes the load, or "symbols": each step's capture a
# session generated with that many symbols (session_profile, session_messages, session_seed).
SYMBOLS = "symbols"
MIX = "mix"  # each step's capture a session generated with that message mix (itch-synth --mix TYPE=WEIGHT,...)
GENERATED = (SYMBOLS, MIX)
SWEEPABLE = {
    "replay.pps": int, "replay.multiplier": float, "subscribers": int, "shm_subscribers": int,
    "mqtt.subscribers": int, "kafka.subscribers": int, "replay.batch": int, SYMBOLS: int, MIX: str,
}
MIX_SPEC = re.compile(r"[A-Za-z]=\d+(\.\d+)?(,[A-Za-z]=\d+(\.\d+)?)*")


def schema() -> dict[str, tuple[type, Any, Any, str]]:
    def key_ok(v: str) -> bool | str:
        return v == "" or v in SWEEPABLE or f"must be one of {', '.join(SWEEPABLE)}"

    def steps_ok(v: list) -> bool | str:
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in v)
        mixes = all(isinstance(x, str) and MIX_SPEC.fullmatch(x) for x in v)
        return numbers or mixes or "must be positive numbers, or (key = \"mix\") mixes such as \"A=44,D=43,U=7\""
    return {
        "key": (str, "", key_ok, "the parameter stepped: " + ", ".join(SWEEPABLE) + " (\"\": no sweep)"),
        "steps": (list, [], steps_ok, "its values, in order; or start, factor and end"),
        "start": (float, 0.0, lambda v: v >= 0 or "must be 0 or more", "a geometric range: the first value"),
        "factor": (float, 2.0, lambda v: v > 1 or "must be more than 1", "each step this times the last"),
        "end": (float, 0.0, lambda v: v >= 0 or "must be 0 or more", "the last value at most"),
        "session_profile": (str, "nasdaq-day", lambda v: v in ("nasdaq-day", "seed-workload", "deep-book") or
                            "must be nasdaq-day, seed-workload or deep-book", "key = \"symbols\" or \"mix\": itch-synth's profile"),
        "session_messages": (int, 30_000, lambda v: 100 <= v <= 100_000_000 or "must be 100 to 100,000,000",
                             "key = \"symbols\" or \"mix\": messages of each step's session (one a packet)"),
        "session_seed": (int, 1, lambda v: v >= 0 or "must be 0 or more", "key = \"symbols\" or \"mix\": its seed"),
        "session_symbols": (int, 50, lambda v: 1 <= v <= 100_000 or "must be 1 to 100,000",
                            "key = \"mix\": symbols of each step's session"),
        "stop_on_loss": (bool, True, None, "a step that lost messages is past saturation"),
        "p99_us": (float, -1.0, lambda v: v == -1 or v > 0 or "must be positive (-1: none)",
                   "a step whose p99 latency passes this is past saturation (-1: no bound)"),
        "max_slope_us_per_s": (float, 10_000.0, lambda v: v > 0 or "must be positive",
                               "a step whose latency grows faster than this through the run has fallen behind "
                               "(10,000 µs/s: 1 % more offered than served)"),
    }


def values_of(sweep: dict[str, Any], where: str) -> list[int | float | str]:
    """The steps of a sweep table, typed as its key; ValueError when it names none."""
    typ = SWEEPABLE[sweep["key"]]
    if typ is str:  # mixes: named one by one
        if not sweep["steps"] or not all(isinstance(x, str) for x in sweep["steps"]):
            raise ValueError(f"{where}: sweep.key = {sweep['key']!r} needs sweep.steps, mixes such as \"A=44,D=43\"")
        return list(dict.fromkeys(sweep["steps"]))
    if any(isinstance(x, str) for x in sweep["steps"]):
        raise ValueError(f"{where}: sweep.key = {sweep['key']!r} steps numbers; mixes are key = \"mix\"'s")
    if sweep["steps"]:
        raw = list(sweep["steps"])
        # The sweep stops at its first step past saturation and names its last step within every bound as the
        # highest: steps that fell ([20000, 5000], both within bounds) named 5,000 the highest.
        if any(b <= a for a, b in zip(raw, raw[1:])):
            raise ValueError(f"{where}: sweep.steps {raw} must rise, each above the one before: a sweep goes from "
                             "its lightest step up to saturation")
    elif sweep["start"] > 0 and sweep["end"] >= sweep["start"]:
        raw, v = [], sweep["start"]
        while v <= sweep["end"] * (1 + 1e-9):
            raw.append(v)
            v *= sweep["factor"]
    else:
        raise ValueError(f"{where}: sweep.key = {sweep['key']!r} needs sweep.steps, or sweep.start and sweep.end "
                         "(start ≤ end)")
    out: list[int | float | str] = []
    for v in raw:
        t = typ(round(v)) if typ is int else typ(v)
        if t not in out:
            out.append(t)
    return out


def _median(measures: list[dict[str, Any]], key: str) -> float:
    values = [float(m[key]) for m in measures if key in m and not math.isnan(float(m[key]))]
    return statistics.median(values) if values else math.nan


def past_saturation(sweep: dict[str, Any], measures: list[dict[str, Any]]) -> list[str]:
    """Why a step is past saturation ([] when it met every bound), from its runs' measures."""
    why = []
    bound = sweep["max_slope_us_per_s"]
    lag = _median(measures, "sender_slope_us_per_s")
    if not math.isnan(lag) and lag > bound:
        why.append(f"sender: it fell behind the rate asked of it by {lag:,.0f} µs a second (bound {bound:,.0f}): "
                   "beyond this the sender is measured, not the gateway")
    if sweep["stop_on_loss"]:
        bad = [m for m in measures if m["status"] not in ("lossless", "faults_accounted", "recovered", "joined")]
        if bad:
            lost = [m["lost_messages"] for m in bad if m.get("lost_messages")]
            why.append(f"lost: {len(bad)} of {len(measures)} runs " +
                       (f"lost {max(lost):,} messages at most" if lost else f"ended {bad[0]['status'].upper()}"))
    slope = _median(measures, "gateway_slope_us_per_s")
    if math.isnan(slope):  # no actual send times: all of it
        slope = _median(measures, "slope_us_per_s")
    if not math.isnan(slope) and slope > bound:
        why.append(f"behind: latency from the actual send grew {slope:,.0f} µs/s through the run (bound {bound:,.0f})")
    p99 = _median(measures, "p99_us")
    if sweep["p99_us"] > 0 and math.isnan(p99):  # a bound not measured is not met
        why.append(f"p99: not measured, so not within {sweep['p99_us']:,.1f} µs")
    elif sweep["p99_us"] > 0 and p99 > sweep["p99_us"]:
        why.append(f"p99: {p99:,.1f} µs > {sweep['p99_us']:,.1f} µs")
    return why


def not_checked(measures: list[dict[str, Any]]) -> list[str]:
    """What a step's runs could not check: without send times nobody can tell a gateway falling behind (no
    offered rate to fall behind of: a simulation, tcpreplay). Said beside the sweep's conclusions."""
    slopes = ("gateway_slope_us_per_s", "slope_us_per_s")
    if all(math.isnan(_median(measures, k)) for k in slopes):
        return ["falling behind (the runs have no send times: no offered rate to fall behind of)"]
    return []


def saturation_runs(rows: list[dict[str, Any]], step_measures: list[list[dict[str, Any]]],
                    conclusions: dict[str, Any]) -> list[dict[str, float]]:
    """What targets.saturation_msg_s is judged on: the throughput of each run of the heaviest step within every
    bound; a sweep with no such step is judged at 0 msg/s."""
    best = next((m for r, m in zip(rows, step_measures) if r["value"] == conclusions["saturation_value"]), [])
    return [{"saturation_msg_s": m["throughput_msg_s"], "status": m.get("status", "incomplete")} for m in best] \
        or [{"saturation_msg_s": 0.0}]


def step_row(value: Any, measures: list[dict[str, Any]], why: list[str]) -> dict[str, Any]:
    """One point of the curve: medians of the step's runs."""
    keys = ("offered_msg_s", "throughput_msg_s", "p50_us", "p99_us", "p999_us", "max_us", "mean_us", "loss",
            "slope_us_per_s", "gateway_slope_us_per_s", "sender_slope_us_per_s", "cpu_pct", "rss_mb",
            "subscriber_p99_median_us", "subscriber_p99_slowest_us")
    row: dict[str, Any] = {"value": value, "runs": len(measures), **{k: _median(measures, k) for k in keys}}
    row["past_saturation"] = why
    row["not_checked"] = not_checked(measures)
    row["latency_measure"] = measures[0].get("latency_measure", "") if measures else ""
    return row


def memory_per_unit(rows: list[dict[str, Any]]) -> None:
    """Each step's RSS over the first step's, per unit of the swept value (a subscribers sweep: the gateway's
    memory per client, in KiB), into the rows as rss_per_unit_kib."""
    first = rows[0] if rows and all(isinstance(r["value"], (int, float)) for r in rows) else None
    for r in rows:  # a mix is no quantity: no memory per unit of it
        grew = float(r["value"]) - float(first["value"]) if first else 0.0
        r["rss_per_unit_kib"] = (r["rss_mb"] - first["rss_mb"]) * 1024 / grew if first and grew > 0 else math.nan


def conclusions(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Saturation (the highest throughput of a step within every bound), the knee, and whether the sweep reached
    saturation at all."""
    within = [r for r in rows if not r["past_saturation"]]
    best = within[-1] if within else None  # the heaviest load within every bound (steps go up in load)
    base_p50 = rows[0]["p50_us"] if rows else math.nan
    knee = next((r for r in rows[1:] if not math.isnan(base_p50) and r["p50_us"] > KNEE_RISE * base_p50), None)
    past = next((r for r in rows if r["past_saturation"]), None)
    sender_limited = bool(past) and all(w.startswith(("sender", "p99")) for w in past["past_saturation"]) and \
        past["past_saturation"][0].startswith("sender")
    return {"saturation_msg_s": best["throughput_msg_s"] if best else math.nan,
            "saturation_value": best["value"] if best else None,
            "reached": past is not None and not sender_limited,
            "sender_limited": sender_limited,
            "first_past": next((r for r in rows if r["past_saturation"]), None),
            "not_checked": sorted({w for r in rows for w in r.get("not_checked", [])}),
            "knee_value": knee["value"] if knee else None,
            "knee_offered_msg_s": knee["offered_msg_s"] if knee else math.nan}
