"""One of the exchange's servers as a role of a run (the re-request server, the snapshot service): started in the
run's namespace before the gateway, ready when it prints its LISTENING line, stopped after the gateway, its closing
report kept in run.extras; a server that died on its own fails the run, its own words quoted."""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING, Callable

from ..failure import RunError, describe_exit
from ..procs import LineWaiter

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run


class ExchangeServer:
    """name: its process's (and its stderr file's) name; words: how a verdict names it; report: its closing report's
    file in the run directory, kept as run.extras[extras_key]."""

    def __init__(self, run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]], cmd: list[str], *,
                 name: str, words: str, report: str, extras_key: str, start_s: float) -> None:
        self.run, self.group, self.words, self.report, self.extras_key = run, group, words, report, extras_key
        self.stderr_path = run.dir / f"{name}.stderr"
        self.stderr = open(self.stderr_path, "wb")
        group.on_close(self.stderr.close)
        self.proc = group.start(name, wrap(cmd), stdout=subprocess.PIPE, stderr=self.stderr)
        try:
            self.listening = LineWaiter(self.proc).wait_for("LISTENING", start_s).strip()
        except TimeoutError as e:
            raise RunError("setup", f"the {words} did not start ({e}): {self._said()}") from e

    def _said(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-500:]

    def stop(self) -> None:
        """After the gateway: stop it, keep its report. A server that died on its own fails the run."""
        rc = self.proc.poll()
        if rc is None:
            rc = self.group.stop(self.proc)
        report = self.run.dir / self.report
        if report.is_file():
            self.run.extras[self.extras_key] = json.loads(report.read_text())
        if rc != 0:  # one of itchbench's own processes on the gateway's way (failure.py: testbench_failed)
            said = self._said().strip()
            raise RunError("testbench_failed", f"{self.named()} {'was ' * (rc < 0)}{describe_exit(rc)}"
                                               + (f": {said}" if said else ""))

    def named(self) -> str:
        """How a verdict names it: 'the re-request server'."""
        return f"the {self.words}"
