"""Why a run did not reach its end, and how a child process ended."""

from __future__ import annotations

import signal


class RunError(RuntimeError):
    """The run could not be carried out to its end. `kind` names the way it
    failed (docs/verdicts.md); the message says what happened."""

    KINDS = ("setup", "gateway_failed", "gateway_crashed", "gateway_stopped_early", "sender_failed",
             "input_ended_early", "testbench_failed", "deadline", "interrupted", "microbench_failed", "defect")

    def __init__(self, kind: str, message: str) -> None:
        assert kind in self.KINDS, kind
        super().__init__(message)
        self.kind = kind


class Interrupted(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that the run is torn down,
    reconciled and marked interrupted like after Ctrl-C."""


def describe_exit(returncode: int | None) -> str:
    """'killed by SIGSEGV', 'exited with status 3', 'still running'."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


def stopped_from_outside(sender: str, report: dict) -> RunError | None:
    """An interruption, when itchbench's own sender says it was stopped by a signal (its report's
    stopped_by_signal) that the run never sent: the run stops its sender only when the gateway has failed, and
    says so first. A Ctrl-C that reached the whole process group, a job cancelled, had been said as the sender's
    failure ("udp-replay exited with status 130")."""
    sig = int(report.get("stopped_by_signal") or 0)
    if not sig:
        return None
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    return RunError("interrupted", f"{sender} was stopped by {name}, sent from outside the run")


def tail(text: str, lines: int = 12, chars: int = 2000) -> str:
    """The last lines of a child's stderr, for a verdict."""
    return "\n".join(text.strip().splitlines()[-lines:])[-chars:]
