"""`itchbench sim`: the gateway on a capture in deterministic simulation."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import environment, fixtures, logs, paths, rundir


class CaptureError(RuntimeError):
    """The capture cannot be used (missing, empty, not a capture)."""


class IncompleteRun(RuntimeError):
    """The run ended early; its directory says so and holds what was processed."""


@dataclass
class GatewayRun:
    returncode: int
    stderr_tail: str


def run_gateway(args: list[str], *, echo: bool) -> GatewayRun:
    """Run itch-gateway, passing its progress lines through as they come."""
    cmd = [str(paths.tool("itch-gateway")), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    tail: list[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        tail = (tail + [line.rstrip()])[-20:]
        if echo:
            print(line.rstrip(), file=sys.stderr, flush=True)
    return GatewayRun(proc.wait(), "\n".join(tail))


def reconcile(gw: dict[str, Any], latency_records: int | None, bbo_records: int) -> dict[str, Any]:
    """Every message accounted for: received = decoded + rejected, one latency
    record each, one BBO record per event, and what the sequence says is missing."""
    kind = gw["capture_kind"]
    received = gw["mold"]["messages"] if kind == "pcap" else gw["capture_stats"]["itch_messages"]
    dec = gw["decode"]
    rejected = dec["rejected_unknown_type"] + dec["rejected_wrong_length"] + dec["rejected_empty"]
    checks = {
        "decoded_plus_rejected_equals_received": dec["messages"] + rejected == received,
        "one_latency_record_per_message": latency_records is None or latency_records == received,
        "one_bbo_record_per_event": bbo_records == gw["bbo_events"],
    }
    return {
        "received": received,
        "decoded": dec["messages"],
        "rejected": rejected,
        "missing": gw["sequence"]["missing_messages"],
        "duplicates": gw["sequence"]["duplicate_messages"],
        "reordered": gw["sequence"]["reordered_messages"],
        "rejected_packets": gw["mold"]["rejected_too_short"] + gw["mold"]["rejected_length_overrun"]
        + gw["mold"]["rejected_count_mismatch"],
        "bad_frames": gw["capture_stats"]["bad_frames"],
        "latency_records": latency_records,
        "bbo_events": gw["bbo_events"],
        "bbo_records": bbo_records,
        "checks": checks,
        "balanced": all(checks.values()),
    }


def check_capture(capture: Path) -> Path:
    if not capture.exists():
        raise CaptureError(f"capture not found: {capture}")
    if capture.is_dir():
        raise CaptureError(f"{capture} is a directory, not a capture")
    if capture.stat().st_size == 0:
        raise CaptureError(f"{capture}: empty capture (0 bytes)")
    return capture.resolve()


def run_sim(capture: Path, out: Path | None = None, *, port: int | None = None, echo: bool = True,
            latency_log: bool = True) -> Path:
    """Run the gateway on a capture in simulation; returns the run directory."""
    capture = check_capture(Path(capture))
    run_id = rundir.new_run_id("sim")
    out = rundir.create(Path(out) if out else paths.repo_root() / "reports" / "runs" / run_id)
    env = environment.snapshot()
    resolved = {"transport": "sim", "capture": str(capture), "port": port, "latency_log": latency_log}
    manifest = {
        "run_id": run_id,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "itchbench sim",
        "scenario": resolved,
        "scenario_hash": rundir.scenario_hash(resolved),
        "capture_sha256": fixtures.sha256_of(capture),
        "environment": env,
    }
    rundir.write_json(out / "manifest.json", manifest)

    args = ["--source", "sim", "--capture", str(capture), "--out", str(out), "--run-id", run_id,
            "--commit", environment.commit_label(env["git"]), "--progress"]
    if port is not None:
        args += ["--port", str(port)]
    if not latency_log:
        args.append("--no-latency-log")
    result = run_gateway(args, echo=echo)
    if result.returncode == 2:
        # Nothing was processed (bad capture, bad arguments): leave no run behind.
        shutil.rmtree(out)
        raise CaptureError(result.stderr_tail.replace("itch-gateway: ", "") or "the gateway failed to start")
    write_summary(out)
    summary = rundir.read_json(out / "summary.json")
    if not summary["complete"]:
        raise IncompleteRun(f"run INCOMPLETE, see {out}/summary.json: {summary['error']}")
    return out


def write_summary(run_dir: Path) -> dict[str, Any]:
    """summary.json from the gateway's counters and the logs in run_dir."""
    gw = rundir.read_json(run_dir / "gateway.json")
    manifest = rundir.read_json(run_dir / "manifest.json")
    bbo = logs.read_bbo(run_dir / "bbo.bbo")
    lat_path = run_dir / "latency.lat"
    latency_records = len(logs.read_latency(lat_path).records) if lat_path.exists() else None
    rec = reconcile(gw, latency_records, len(bbo.records))
    complete = bool(gw["complete"]) and bbo.complete
    summary = {
        "run_id": manifest["run_id"],
        "transport": manifest["scenario"]["transport"],
        "capture": manifest["scenario"]["capture"],
        "capture_sha256": manifest["capture_sha256"],
        "complete": complete,
        "error": gw["error"] or "; ".join(bbo.notes),
        "bbo": {"digest": logs.bbo_digest(bbo), "events": len(bbo.records)},
        "messages": {"per_type": gw["decode"]["per_type"]},
        "book": gw["book"],
        "reconciliation": rec,
        "performance": {"elapsed_s": gw["elapsed_s"], "messages_per_s": gw["messages_per_s"],
                        "timer_overhead_ns": gw["clock"]["timer_overhead_ns"], "stage_clock": gw["clock"]["stage"]},
    }
    rundir.write_json(run_dir / "summary.json", summary)
    return summary
