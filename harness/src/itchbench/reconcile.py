"""summary.json: completeness, the BBO digest, and every message accounted for.

For each transport the counts are followed hop by hop — capture, sender,
kernel, gateway, decoder, logs, subscribers — and each hop is checked
against the next. A check that fails says which hop lost what.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import logs, rundir

if TYPE_CHECKING:
    from .runner import Run


def _check(checks: dict[str, bool], name: str, ok: bool) -> None:
    checks[name] = bool(ok)


def _gateway_checks(gw: dict[str, Any], latency_records: int | None, bbo_records: int,
                    checks: dict[str, bool]) -> dict[str, Any]:
    dec = gw["decode"]
    rejected = dec["rejected_unknown_type"] + dec["rejected_wrong_length"] + dec["rejected_empty"]
    received = gw["messages_received"]
    _check(checks, "decoded + rejected = received", dec["messages"] + rejected == received)
    if latency_records is not None:
        _check(checks, "one latency record per message", latency_records == received)
    _check(checks, "one BBO record per event", bbo_records == gw["bbo_events"])
    _check(checks, "no log record dropped", gw["logs"]["latency_dropped"] == 0 and gw["logs"]["bbo_dropped"] == 0)
    return {
        "received": received, "decoded": dec["messages"], "rejected": rejected,
        "missing": gw["sequence"]["missing_messages"], "duplicates": gw["sequence"]["duplicate_messages"],
        "reordered": gw["sequence"]["reordered_messages"], "gap_events": gw["sequence"]["gap_events"],
        "rejected_packets": gw["mold"]["rejected_too_short"] + gw["mold"]["rejected_length_overrun"]
        + gw["mold"]["rejected_count_mismatch"],
        "latency_records": latency_records, "bbo_events": gw["bbo_events"], "bbo_records": bbo_records,
    }


def _udp(run: "Run", gw: dict[str, Any], facts: dict[str, Any], checks: dict[str, bool]) -> dict[str, Any]:
    loops = run.values["replay"]["loops"]
    tr, kernel = run.extras.get("tcpreplay", {}), run.extras.get("kernel", {})
    expected_datagrams = facts["datagrams"] * loops
    sent, failed = int(tr.get("successful", 0)), int(tr.get("failed", 0))
    delivered, dropped = kernel.get("UdpInDatagrams", 0), kernel.get("UdpInErrors", 0)
    _check(checks, "tcpreplay sent + failed = capture datagrams x loops", sent + failed == expected_datagrams)
    _check(checks, "kernel delivered + dropped + no port = sent",
           delivered + dropped + kernel.get("UdpNoPorts", 0) == sent)
    _check(checks, "gateway datagrams = kernel delivered", gw["udp"]["datagrams"] == delivered)
    expected_messages = facts["messages"] * loops
    received = gw["messages_received"]
    lost = expected_messages - received - gw["sequence"]["duplicate_messages"] - gw["sequence"]["reordered_messages"]
    return {
        "capture_datagrams": facts["datagrams"], "loops": loops, "expected_messages": expected_messages,
        "tcpreplay_sent": sent, "tcpreplay_failed": failed,
        "kernel_delivered": delivered, "kernel_dropped": dropped, "kernel_rcvbuf_errors": kernel.get("UdpRcvbufErrors", 0),
        "gateway_datagrams": gw["udp"]["datagrams"], "lost_messages": lost,
        "lossless": failed == 0 and dropped == 0 and lost == 0,
    }


def _serial(run: "Run", gw: dict[str, Any], facts: dict[str, Any], checks: dict[str, bool]) -> dict[str, Any]:
    sr = run.extras.get("serial_replay", {})
    ser = gw["serial"]
    lines_sent = int(sr.get("lines", 0))
    bad_lines = ser["bad_checksum"] + ser["malformed"] + ser["overlong"]
    _check(checks, "serial-replay sent every message", lines_sent == facts["messages"])
    _check(checks, "good + bad lines = lines sent", ser["lines"] + bad_lines == lines_sent)
    received = gw["messages_received"]
    lost = facts["messages"] - received
    _check(checks, "received + missing = capture messages",
           received + gw["sequence"]["missing_messages"] == facts["messages"])
    return {
        "expected_messages": facts["messages"], "lines_sent": lines_sent, "lines_good": ser["lines"],
        "lines_bad": bad_lines, "garbage_bytes": ser["garbage_bytes"], "lost_messages": lost,
        "line_utilisation": sr.get("line_utilisation"), "late_lines": sr.get("late_lines"),
        "lossless": lost == 0 and bad_lines == 0,
    }


def _subscribers(run: "Run", gw: dict[str, Any], bbo: logs.LogFile, checks: dict[str, bool]) -> list[dict[str, Any]]:
    out = []
    expected = bytes(bbo.record_bytes())
    pub = gw.get("publisher", {})
    for sub in run.extras.get("subscribers", []):
        path = run.dir / sub["file"]
        got = path.read_bytes() if path.exists() else b""
        same = got == expected
        if not sub["stuck"] and pub.get("frames_dropped", 0) == 0 and pub.get("slow_disconnects", 0) == 0:
            _check(checks, f"subscriber {sub['file']} received the BBO log exactly", same)
        out.append({**sub, "frames": len(got) // logs.BBO_DTYPE.itemsize, "identical_to_bbo_log": same})
    return out


def write_summary(run: "Run", error: str | None) -> dict[str, Any]:
    from .runner import facts_of, sim_digest

    summary: dict[str, Any] = {
        "run_id": run.run_id, "label": run.label, "transport": run.values["transport"],
        "capture": run.values["capture"], "complete": False, "error": error or "",
    }
    gw_path = run.dir / "gateway.json"
    if not gw_path.exists():
        summary["error"] = error or "the gateway wrote no counters"
        rundir.write_json(run.dir / "summary.json", summary)
        return summary
    gw = rundir.read_json(gw_path)
    bbo = logs.read_bbo(run.dir / "bbo.bbo")
    lat_path = run.dir / "latency.lat"
    latency_records = len(logs.read_latency(lat_path).records) if lat_path.exists() else None
    checks: dict[str, bool] = {}
    rec = _gateway_checks(gw, latency_records, len(bbo.records), checks)
    transport = run.values["transport"]
    if transport == "udp":
        rec["udp"] = _udp(run, gw, facts_of(Path(run.values["capture"])), checks)
    elif transport == "serial":
        rec["serial"] = _serial(run, gw, facts_of(Path(run.values["capture"])), checks)
    else:
        rec["lossless"] = rec["missing"] == 0
    if transport != "sim":
        rec["subscribers"] = _subscribers(run, gw, bbo, checks)
    digest = logs.bbo_digest(bbo)
    lossless = rec.get(transport, rec).get("lossless", False)
    if transport != "sim" and lossless and not error:
        _check(checks, "BBO digest = simulation's digest", digest == sim_digest(Path(run.values["capture"])))
    rec["checks"] = checks
    rec["balanced"] = all(checks.values())
    complete = bool(gw["complete"]) and bbo.complete and not error
    summary.update({
        "complete": complete,
        "error": error or gw.get("error", "") or "; ".join(bbo.notes),
        "bbo": {"digest": digest, "events": len(bbo.records)},
        "messages": {"per_type": gw["decode"]["per_type"]},
        "book": gw["book"],
        "reconciliation": rec,
        "gateway": {k: gw[k] for k in ("stop_reason", "udp", "serial", "publisher", "realtime") if k in gw},
        "performance": {"elapsed_s": gw["elapsed_s"], "messages_per_s": gw["messages_per_s"],
                        "timer_overhead_ns": gw["clock"]["timer_overhead_ns"], "stage_clock": gw["clock"]["stage"]},
        "transport_details": run.extras,
    })
    rundir.write_json(run.dir / "summary.json", summary)
    return summary
