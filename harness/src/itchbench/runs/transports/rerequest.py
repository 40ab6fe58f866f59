"""The exchange's re-request server as a role of a run (docs/exchange.md): started in the run's namespace before
the gateway, holding the session as it was before any fault, told when the sender has finished (its
end-of-session window starts then), stopped after the gateway, and its counts kept for the reconciliation:
run.extras["request_server"] (its closing report) beside requests.log in the run directory."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ... import paths
from .exchange_server import ExchangeServer

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run

PORT = 26478  # inside the run's own namespace, beside the feed's
START_S = 10.0
REPORT, LOG = "request-server.json", "requests.log"


def options(table: dict) -> list[str]:
    """mold-request-server's options from a scenario's [rerequest] table."""
    return ["--delay-ms", str(table["delay_ms"]), "--max-messages", str(table["max_messages"]),
            "--max-payload", str(table["max_payload"]), "--rate-limit", str(table["rate_limit"]),
            "--retention", str(table["retention"]), "--drop-answers", str(table["drop_answers"]),
            "--seed", str(table["seed"]), "--answer-after-end-ms", str(table["answer_after_end_ms"])]


class RequestServerRole(ExchangeServer):
    def __init__(self, run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]]) -> None:
        # The whole session: the capture as it was before the scenario's faults were applied to it.
        session = Path(run.values.get("source_capture") or run.values["capture"])
        cmd = [str(paths.tool("mold-request-server")), str(session), "--port", str(PORT),
               *(["--feed", run.values["feed"]] if run.values["feed"] else []), *options(run.values["rerequest"]),
               "--log", str(run.dir / LOG), "--report", str(run.dir / REPORT)]
        super().__init__(run, group, wrap, cmd, name="request-server", words="re-request server", report=REPORT,
                         extras_key="request_server", start_s=START_S)
        run.say(f"  re-request server: {self.listening}")

    def session_ended(self) -> None:
        """The sender has sent the end of session: the server's end-of-session window starts now."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)
