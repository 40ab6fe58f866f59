"""serial: serial-replay -> socat pty pair -> the gateway's serial port."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ... import paths
from ...captures.inspect import facts_of
from ..deadlines import serial_sender_seconds
from ..failure import RunError, describe_exit, stopped_from_outside
from .live import off_the_gateway_cpu, sender_failure, wait_for_sender

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run


def pty_pair(run: "Run", group: "ProcessGroup") -> tuple[Path, Path, subprocess.Popen]:
    """A socat pty pair: (the gateway's end, the replayer's end, socat)."""
    pty_dir = Path(tempfile.mkdtemp(prefix="itchbench-pty-"))
    group.on_close(lambda: shutil.rmtree(pty_dir, ignore_errors=True))
    gw_end, replay_end = pty_dir / "gateway", pty_dir / "replay"
    socat = group.start("socat", off_the_gateway_cpu(run, ["socat", f"pty,raw,echo=0,link={gw_end}",
                                                           f"pty,raw,echo=0,link={replay_end}"]),
                        stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 5
    while not (gw_end.exists() and replay_end.exists()):
        if socat.poll() is not None or time.monotonic() > deadline:
            raise RunError("setup", "socat did not create the pty pair")
        time.sleep(0.01)
    run.extras["ptys"] = [str(gw_end.resolve()), str(replay_end.resolve())]
    run.extras["pty_dir"] = str(pty_dir)  # removed when the run's processes are
    return gw_end, replay_end, socat


def replay_serial(run: "Run", group: "ProcessGroup", replay_end: Path,
                  gateway_gone: Callable[[float], RunError | None]) -> None:
    """serial-replay into the pty pair's other end, watching the gateway as it goes (live.wait_for_sender)."""
    s = run.values["serial"]
    facts = facts_of(Path(run.values["capture"]), run.values["feed"])
    expected_s = serial_sender_seconds(run.values, facts)
    run.say(f"  serial-replay: {facts['messages']:,} lines at {s['baud']} baud (~{expected_s:.0f} s)")
    report = run.dir / "serial-replay.json"
    err = open(run.dir / "serial-replay.stderr", "wb")
    group.on_close(err.close)
    cmd_sr = [str(paths.tool("serial-replay")), run.values["capture"], "--device", str(replay_end),
              "--baud", str(s["baud"]), "--timing", s["timing"], "--multiplier", str(s["multiplier"]),
              "--report", str(report), "--send-log", str(run.dir / "send.log"),
              "--garbage-every", str(s["garbage_every"]), "--corrupt-every", str(s["corrupt_every"]),
              *(["--feed", run.values["feed"]] if run.values["feed"] else [])]
    sr = group.start("serial-replay", off_the_gateway_cpu(run, cmd_sr), stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_for_sender(run, group, sr, "serial-replay", expected_s, gateway_gone)
    finally:  # stopped before its end (a deadline, a gateway gone), it still says what it sent
        if report.is_file():
            run.extras["serial_replay"] = json.loads(report.read_text())
    if sr.returncode != 0:
        outside = stopped_from_outside("serial-replay", run.extras.get("serial_replay", {}))
        if outside is not None:
            raise outside
        text = (run.dir / "serial-replay.stderr").read_text(errors="replace").strip()
        raise sender_failure("serial-replay", facts,
                             f"serial-replay {describe_exit(sr.returncode)}: {text[-500:] or 'no output'}")
