"""sim: the gateway reads the capture in-process, with a deadline."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ...captures.compressed import compression_of
from ...captures.inspect import gateway_feed_args
from ..deadlines import sim_seconds
from ..failure import RunError
from ..procs import wait_with_rusage
from .gateway import gateway_args, judge_exit

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run


def run_sim(run: "Run", group: "ProcessGroup") -> None:
    cmd = [*gateway_args(run), "--source", "sim", "--capture", run.values["capture"], "--progress"]
    capture = Path(run.values["capture"])
    cmd += gateway_feed_args(capture, run.values["feed"])
    deadline_s = sim_seconds(capture.stat().st_size, compression_of(capture) is not None)
    run.extras["deadline_s"] = round(deadline_s, 1)
    proc = group.start("gateway", cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       errors="replace")
    lines: list[str] = []

    def pump() -> None:  # progress lines as they come, and the whole stderr for the verdict
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            run.say(line.rstrip())

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc, max_rss_kib = wait_with_rusage(proc, deadline_s)
        run.extras["gateway_max_rss_kib"] = max_rss_kib
    except subprocess.TimeoutExpired:
        group.stop(proc)
        raise RunError("deadline", f"the gateway did not finish the capture within {deadline_s:.0f} s") from None
    reader.join(5)
    judge_exit(run, rc, "".join(lines))
