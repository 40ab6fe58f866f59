"""Running one configuration: run directory, transport, gateway, reconciliation.

    sim     the gateway reads the capture in-process
    udp     tcpreplay -> loopback of a private network namespace -> gateway
    serial  serial-replay -> socat pty pair -> gateway

Every run writes manifest.json first and summary.json last; a run that
fails or is interrupted still gets a summary, marked incomplete. Child
processes, the namespace and the pty pair are gone when run() returns,
whatever happened (procs.ProcessGroup).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import environment, fixtures, paths, reconcile, report, rundir
from .netns import PrivateNetns
from .procs import LineWaiter, ProcessGroup
from .tools import inspect_capture, run_tool

UDP_PORT = 26477  # inside the run's own namespace: no clash with anything


class RunError(RuntimeError):
    """The run could not be carried out; its summary says why."""


class CaptureError(RuntimeError):
    """The capture cannot be used (missing, empty, not a capture): no run is made."""


def check_capture(capture: Path) -> Path:
    if not capture.exists():
        raise CaptureError(f"capture not found: {capture}")
    if capture.is_dir():
        raise CaptureError(f"{capture} is a directory, not a capture")
    if capture.stat().st_size == 0:
        raise CaptureError(f"{capture}: empty capture (0 bytes)")
    proc = subprocess.run([str(paths.tool("itch-inspect")), str(capture), "--check"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CaptureError(proc.stderr.strip().replace("itch-inspect: ", ""))
    return capture.resolve()


@dataclass
class Run:
    dir: Path
    run_id: str
    values: dict[str, Any]
    label: str
    env: dict[str, Any]
    echo: bool
    stuck_subscribers: int = 0  # how many of the subscribers connect and never read (tests)
    extras: dict[str, Any] = field(default_factory=dict)  # what the transport reports, into summary.json
    subscriber_procs: list[tuple[subprocess.Popen, Path, bool]] = field(default_factory=list)

    def say(self, text: str) -> None:
        if self.echo:
            print(text, file=sys.stderr, flush=True)


@functools.lru_cache(maxsize=32)
def capture_facts(capture: str, mtime_ns: int) -> dict[str, Any]:
    """What the capture holds (datagrams, messages, link type), from itch-inspect."""
    rep = inspect_capture(Path(capture))
    return {
        "kind": rep["kind"],
        "datagrams": rep["capture_stats"]["udp_datagrams"],
        "messages": rep["mold"]["messages"] if rep["kind"] == "pcap" else rep["capture_stats"]["itch_messages"],
        "linktype": rep["capture_stats"]["linktype"],
        "complete": rep["complete"],
    }


def facts_of(capture: Path) -> dict[str, Any]:
    return capture_facts(str(capture), capture.stat().st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _sim_digest(capture: str, mtime_ns: int) -> str:
    with tempfile.TemporaryDirectory(prefix="itchbench-digest-") as tmp:
        run_tool("itch-gateway", ["--source", "sim", "--capture", capture, "--out", tmp, "--no-latency-log"],
                 ok_codes=(0, 1))
        from . import logs
        return logs.bbo_digest(logs.read_bbo(Path(tmp) / "bbo.bbo"))


def sim_digest(capture: Path) -> str:
    """The BBO digest of the capture in simulation: what a lossless live run must match."""
    return _sim_digest(str(capture), capture.stat().st_mtime_ns)


def start(values: dict[str, Any], label: str, *, run_dir: Path | None, root: Path | None, echo: bool,
          command: str) -> Run:
    """Create the run directory — run_dir itself, or root/RUN_ID — and its manifest."""
    run_id = rundir.new_run_id(label)
    run_dir = rundir.create(run_dir if run_dir is not None else (root or default_root()) / run_id)
    env = environment.snapshot()
    capture = Path(values["capture"])
    manifest = {
        "run_id": run_id,
        "label": label,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command,
        "scenario": values,
        "scenario_hash": rundir.scenario_hash(values),
        "capture_sha256": fixtures.sha256_of(capture),
        "environment": env,
    }
    rundir.write_json(run_dir / "manifest.json", manifest)
    return Run(run_dir, run_id, values, label, env, echo)


def gateway_args(run: Run) -> list[str]:
    g = run.values["gateway"]
    args = [str(paths.tool("itch-gateway")), "--out", str(run.dir), "--run-id", run.run_id,
            "--commit", environment.commit_label(run.env["git"]), "--expected-orders", str(g["expected_orders"])]
    if not g["latency_log"]:
        args.append("--no-latency-log")
    if run.values["transport"] == "sim":
        return args
    args += ["--idle-exit-ms", str(g["idle_exit_ms"]), "--subscriber-queue", str(g["subscriber_queue"]),
             "--slow-subscriber", g["slow_subscriber"], "--wait-subscribers", str(run.values["subscribers"])]
    if g["cpu"] >= 0:
        args += ["--cpu", str(g["cpu"])]
    if g["publisher_cpu"] >= 0:
        args += ["--publisher-cpu", str(g["publisher_cpu"])]
    if g["sched_fifo"] > 0:
        args += ["--sched-fifo", str(g["sched_fifo"])]
    if g["mlockall"]:
        args.append("--mlockall")
    return args


# --- transports -------------------------------------------------------------

def _run_sim(run: Run, group: ProcessGroup) -> None:
    cmd = [*gateway_args(run), "--source", "sim", "--capture", run.values["capture"], "--progress"]
    proc = group.start("gateway", cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    tail: list[str] = []
    for line in proc.stderr:
        tail = (tail + [line.rstrip()])[-20:]
        run.say(line.rstrip())
    rc = proc.wait()
    run.extras["gateway_exit"] = rc
    if rc == 2:
        raise RunError("\n".join(tail).replace("itch-gateway: ", "") or "the gateway failed to start")


def _start_live_gateway(run: Run, group: ProcessGroup, cmd: list[str],
                        wrap: Callable[[list[str]], list[str]]) -> subprocess.Popen:
    gw = group.start("gateway", wrap(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = LineWaiter(gw)
    try:
        listening = lines.wait_for("LISTENING", 15)
    except TimeoutError as e:
        err = gw.stderr.read().decode() if gw.poll() is not None and gw.stderr else ""
        raise RunError(f"the gateway did not start: {err.strip() or e}") from e
    tcp_port = int(re.search(r"tcp=(\d+)", listening).group(1))  # type: ignore[union-attr]
    run.extras["publisher_port"] = tcp_port
    for i in range(run.values["subscribers"]):
        stuck = i < run.stuck_subscribers
        out = run.dir / f"subscriber-{i}.bbo"
        cmd_sub = [sys.executable, "-m", "itchbench.subscriber", "--port", str(tcp_port), "--out", str(out)]
        run.subscriber_procs.append((group.start(f"subscriber-{i}", wrap(cmd_sub + (["--stuck"] if stuck else []))),
                                     out, stuck))
    try:
        lines.wait_for("READY", 15)
    except TimeoutError as e:
        err = gw.stderr.read().decode() if gw.poll() is not None and gw.stderr else ""
        raise RunError(f"the gateway did not become ready: {err.strip() or e}") from e
    return gw


def _finish_live_gateway(run: Run, group: ProcessGroup, gw: subprocess.Popen) -> None:
    timeout = run.values["gateway"]["idle_exit_ms"] / 1000 + 60
    try:
        rc = gw.wait(timeout)
    except subprocess.TimeoutExpired:
        rc = group.stop(gw)
        run.extras["gateway_stopped_by_harness"] = True
    run.extras["gateway_exit"] = rc
    err = gw.stderr.read().decode().strip() if gw.stderr else ""
    if err:
        run.extras["gateway_stderr"] = err[-2000:]
    results = []
    for proc, out, stuck in run.subscriber_procs:
        if stuck:
            group.stop(proc)
        else:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                group.stop(proc)
        results.append({"file": out.name, "stuck": stuck, "bytes": out.stat().st_size if out.exists() else 0,
                        "exit": proc.returncode})
    run.extras["subscribers"] = results
    if rc == 2:
        raise RunError(run.extras.get("gateway_stderr", "the gateway failed").replace("itch-gateway: ", ""))


def loopback_capture(capture: Path, port: int) -> Path:
    """The capture rewritten for the namespace's loopback (cached by content):
    zero MACs, 127.0.0.2 -> 127.0.0.1, every UDP port to `port`, checksums fixed.
    A binary ITCH file is first turned into a pcap with itch2pcap."""
    cache = paths.repo_root() / "reports" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    key = fixtures.sha256_of(capture)[:16]
    out = cache / f"{key}-lo{port}.pcap"
    if out.is_file():
        return out
    source = capture
    if facts_of(capture)["kind"] == "itch":
        source = cache / f"{key}.pcap"
        if not source.is_file():
            run_tool("itch2pcap", [capture, "--out", source, "--port", str(port)])
    linktype = facts_of(source)["linktype"]
    tmp = out.with_suffix(".tmp.pcap")
    cmd = ["tcprewrite", f"--infile={source}", f"--outfile={tmp}", "--enet-dmac=00:00:00:00:00:00",
           "--enet-smac=00:00:00:00:00:00", "--dstipmap=0.0.0.0/0:127.0.0.1/32",
           "--srcipmap=0.0.0.0/0:127.0.0.2/32", f"--portmap=1-65535:{port}", "--fixcsum"]
    if linktype != 1:
        cmd.append("--dlt=enet")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RunError(f"tcprewrite failed on {capture}: {proc.stderr.strip()}")
    tmp.replace(out)
    return out


def tcpreplay_flags(replay: dict[str, Any]) -> list[str]:
    rate = replay["rate"]
    flags = {"capture": [], "multiplier": [f"--multiplier={replay['multiplier']}"],
             "pps": [f"--pps={replay['pps']}"], "topspeed": ["--topspeed"]}[rate]
    return [*flags, f"--loop={replay['loops']}", "--preload-pcap"]


_TCPREPLAY_FIELDS = {
    "sent_packets": r"Actual: (\d+) packets",
    "sent_bytes": r"Actual: \d+ packets \((\d+) bytes\)",
    "seconds": r"sent in ([\d.]+) seconds",
    "rated_pps": r"Rated: [\d.]+ Bps, [\d.]+ Mbps, ([\d.]+) pps",
    "successful": r"Successful packets:\s+(\d+)",
    "failed": r"Failed packets:\s+(\d+)",
    "truncated": r"Truncated packets:\s+(\d+)",
    "retried_enobufs": r"Retried packets \(ENOBUFS\):\s+(\d+)",
    "retried_eagain": r"Retried packets \(EAGAIN\):\s+(\d+)",
}


def parse_tcpreplay(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, pattern in _TCPREPLAY_FIELDS.items():
        m = re.search(pattern, text)
        if m:
            out[key] = float(m.group(1)) if "." in m.group(1) else int(m.group(1))
    return out


def _wait_with_progress(run: Run, proc: subprocess.Popen, what: str, expected_s: float | None) -> None:
    start = time.monotonic()
    next_note = start + 2
    while proc.poll() is None:
        time.sleep(0.05)
        if time.monotonic() >= next_note:
            eta = f" of ~{expected_s:.0f} s" if expected_s else ""
            run.say(f"  {what}: {time.monotonic() - start:.0f} s{eta}")
            next_note += 2


def _run_udp(run: Run, group: ProcessGroup) -> None:
    capture = Path(run.values["capture"])
    replay = run.values["replay"]
    rewritten = loopback_capture(capture, UDP_PORT)
    ns = PrivateNetns(group)
    run.extras["netns_holder_pid"] = ns.holder_pid
    g = run.values["gateway"]
    cmd = [*gateway_args(run), "--source", "udp", "--port", str(UDP_PORT), "--rcvbuf", str(g["rcvbuf"])]
    if g["busy_poll"]:
        cmd.append("--busy-poll")
    if replay["loops"] > 1:
        cmd.append("--ignore-end-of-session")
    gw = _start_live_gateway(run, group, cmd, ns.wrap)
    facts = facts_of(capture)
    run.say(f"  tcpreplay: {facts['datagrams'] * replay['loops']:,} packets, rate {replay['rate']}")
    tr = group.start("tcpreplay", ns.wrap(["tcpreplay", "-i", "lo", *tcpreplay_flags(replay), str(rewritten)]),
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    _wait_with_progress(run, tr, "replaying", None)
    text = tr.stdout.read().decode() if tr.stdout else ""
    (run.dir / "tcpreplay.txt").write_text(text)
    if tr.returncode != 0:
        raise RunError(f"tcpreplay failed (exit {tr.returncode}): {text.strip()[-500:]}")
    run.extras["tcpreplay"] = parse_tcpreplay(text)
    _finish_live_gateway(run, group, gw)
    run.extras["kernel"] = ns.udp_counters()


def _run_serial(run: Run, group: ProcessGroup) -> None:
    s = run.values["serial"]
    pty_dir = Path(tempfile.mkdtemp(prefix="itchbench-pty-"))
    group.on_close(lambda: shutil.rmtree(pty_dir, ignore_errors=True))
    gw_end, replay_end = pty_dir / "gateway", pty_dir / "replay"
    socat = group.start("socat", ["socat", f"pty,raw,echo=0,link={gw_end}", f"pty,raw,echo=0,link={replay_end}"],
                        stderr=subprocess.PIPE)
    deadline = time.monotonic() + 5
    while not (gw_end.exists() and replay_end.exists()):
        if socat.poll() is not None or time.monotonic() > deadline:
            raise RunError("socat did not create the pty pair")
        time.sleep(0.01)
    run.extras["ptys"] = [str(gw_end.resolve()), str(replay_end.resolve())]
    cmd = [*gateway_args(run), "--source", "serial", "--device", str(gw_end), "--baud", str(s["baud"])]
    gw = _start_live_gateway(run, group, cmd, lambda c: c)
    facts = facts_of(Path(run.values["capture"]))
    expected_s = facts["messages"] * 110 * 10 / s["baud"]
    run.say(f"  serial-replay: {facts['messages']:,} lines at {s['baud']} baud (~{expected_s:.0f} s)")
    report = run.dir / "serial-replay.json"
    sr = group.start("serial-replay", [str(paths.tool("serial-replay")), run.values["capture"], "--device",
                                       str(replay_end), "--baud", str(s["baud"]), "--timing", s["timing"],
                                       "--multiplier", str(s["multiplier"]), "--report", str(report),
                                       "--garbage-every", str(s["garbage_every"]), "--corrupt-every", str(s["corrupt_every"])],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_with_progress(run, sr, "replaying", expected_s)
    if sr.returncode != 0:
        raise RunError(f"serial-replay failed: {sr.stderr.read().decode().strip() if sr.stderr else ''}")
    run.extras["serial_replay"] = json.loads(report.read_text())
    _finish_live_gateway(run, group, gw)
    group.stop(socat)


TRANSPORTS: dict[str, Callable[[Run, ProcessGroup], None]] = {"sim": _run_sim, "udp": _run_udp, "serial": _run_serial}


def default_root() -> Path:
    return paths.repo_root() / "reports" / "runs"


def execute(values: dict[str, Any], label: str, *, run_dir: Path | None = None, root: Path | None = None,
            echo: bool = True, command: str = "itchbench run", stuck_subscribers: int = 0) -> Path:
    """Run one configuration into a new run directory (run_dir, or root/RUN_ID);
    returns it. Raises RunError (after writing an incomplete summary) on failure."""
    check_capture(Path(values["capture"]))
    run = start(values, label, run_dir=run_dir, root=root, echo=echo, command=command)
    run.stuck_subscribers = stuck_subscribers
    error: str | None = None
    try:
        with ProcessGroup() as group:
            TRANSPORTS[values["transport"]](run, group)
    except KeyboardInterrupt:
        error = "interrupted"
        raise
    except (RunError, OSError, TimeoutError) as e:
        error = str(e)
        raise RunError(f"{label}: {e}") from e
    except Exception as e:  # a defect: still never leave a run that looks whole
        error = f"{type(e).__name__}: {e}"
        raise
    finally:
        reconcile.write_summary(run, error)
        if (run.dir / "gateway.json").exists():
            report.build(run.dir)
    return run.dir
