"""The paced senders stopped before their end (SIGTERM, as a run stops its sender when the gateway has failed, or
Ctrl-C): each still closes its send log and reports what it sent and what it never did, and exits 128 + the
signal. The figures come from the log read back and the capture's own size, never from the report alone."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import tty
import warnings
from pathlib import Path

import pytest

from itchbench import paths, rundir
from itchbench.analysis import logs
from itchbench.runs import runner
from live_helpers import config, kill_when_running

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
SAMPLE = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"  # 8,000 messages in 2,102 packets


def _catches_sigterm(pid: int) -> bool:
    caught = next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if line.startswith("SigCgt:"))
    return bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1)


def _stopped(cmd: list[str], report: Path) -> dict:
    # Paced to take 20 s or more; stopped once it handles SIGTERM (the default would kill it) and a little after:
    # however much was sent by then, the stop comes before the end.
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    while not _catches_sigterm(proc.pid):
        assert proc.poll() is None
        time.sleep(0.01)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 128 + signal.SIGTERM
    return json.loads(report.read_text())


def _closed_log_records(path: Path) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("error", logs.TruncatedLogWarning)  # a log left open would warn
        return len(logs.read_log(path, logs.KIND_SEND).records)


def test_udp_replay_stopped_closes_its_log_and_says_what_it_never_sent(tmp_path):
    log, report = tmp_path / "send.log", tmp_path / "report.json"
    r = _stopped([str(paths.tool("udp-replay")), str(SAMPLE), "--port", "9", "--rate", "pps", "--pps", "100",
                  "--send-log", str(log), "--report", str(report)], report)
    assert r["stopped_by_signal"] == signal.SIGTERM and r["copies"] == 2102
    assert r["copies_not_sent"] > 0 and r["sent"] + r["failed"] + r["copies_not_sent"] == r["copies"]
    assert _closed_log_records(log) == r["sent"] + r["failed"]


def test_serial_replay_stopped_closes_its_log_and_says_what_it_never_sent(tmp_path):
    log, report = tmp_path / "send.log", tmp_path / "report.json"
    r = _stopped([str(paths.tool("serial-replay")), str(SAMPLE), "--device", "/dev/null", "--baud", "9600",
                  "--send-log", str(log), "--report", str(report)], report)
    assert r["stopped_by_signal"] == signal.SIGTERM and r["messages"] == 8000
    assert r["messages_not_sent"] > 0 and r["lines"] + r["messages_not_sent"] == 8000
    assert _closed_log_records(log) == r["lines"]


def test_tcpreplay_s_usual_notices_are_not_given_as_the_reason_it_failed():
    """tcpreplay killed by SIGSEGV was said as "tcpreplay killed by SIGSEGV: Warning in sendpacket.c:…": the notice
    it prints on every run on loopback, read as the reason."""
    from itchbench.runs.transports import udp
    chatter = ("Warning in sendpacket.c:sendpacket_open_pf() line 952:\nUnsupported physical layer type 0x0304 on lo.  "
               "Maybe it works, maybe it won't.  See tickets #123/318\nFile Cache is enabled\n")
    assert udp._said_on_failure(chatter) == ""
    assert udp._said_on_failure(chatter + "Fatal Error: Unable to send packet: No buffer space available\n") == \
        "Fatal Error: Unable to send packet: No buffer space available"


def test_serial_replay_stopped_while_its_line_is_full_still_ends_and_says_what_it_sent(tmp_path):
    # A gateway that never reads its serial line: the pty fills and serial-replay's write waits for room. A signal
    # then ends that write short (bytes were taken), not with EINTR, and it went on waiting: the run's deadline
    # found it never ending (killed, no report) and said "serial-replay sent 0 lines" of a sender that had sent 462.
    log, report = tmp_path / "send.log", tmp_path / "report.json"
    reader, line = os.openpty()  # the reader's end is never read
    try:
        r = _stopped([str(paths.tool("serial-replay")), str(SAMPLE), "--device", os.ttyname(line), "--baud",
                      "4000000", "--send-log", str(log), "--report", str(report)], report)
    finally:
        os.close(reader)
        os.close(line)
    assert r["stopped_by_signal"] == signal.SIGTERM and 0 < r["lines"] < 8000
    assert r["lines"] + r["messages_not_sent"] == 8000 and _closed_log_records(log) == r["lines"]


def test_serial_replay_takes_what_comes_back_on_its_line_and_counts_it(tmp_path):
    # The far end writes back every byte it reads, as a gateway writing on its serial line would. serial-replay had
    # never read its end: what came back filled it, the far end's writes waited, it stopped reading, and the line
    # jammed. Now it runs to its end and counts what came back, at most what the far end wrote.
    report = tmp_path / "report.json"
    far, line = os.openpty()
    tty.setraw(line)  # bytes as they are: no echo, no newline translation
    echoed = [0]

    def echo() -> None:
        while True:
            try:
                echoed[0] += os.write(far, os.read(far, 65536))
            except OSError:  # the line's end closed (EIO)
                return

    echoing = threading.Thread(target=echo, daemon=True)
    echoing.start()
    try:
        done = subprocess.run([str(paths.tool("serial-replay")), str(SAMPLE), "--device", os.ttyname(line), "--baud",
                               "4000000", "--report", str(report)], capture_output=True, text=True, timeout=120)
    finally:
        os.close(line)
        # Ended before its fd is closed under it: a write after that went to EBADF (a warning in CI), or to whatever
        # the next test opened with the same number.
        echoing.join(60)
        os.close(far)
    assert not echoing.is_alive()
    assert done.returncode == 0, done.stderr
    r = json.loads(report.read_text())
    assert r["lines"] == 8000 and 0 < r["bytes_written_back"] <= echoed[0] <= r["bytes"]


@needs_root
@pytest.mark.parametrize("transport", ["udp", "serial"])
def test_a_sender_stopped_from_outside_the_run_is_an_interruption_not_its_failure(transport, tmp_path):
    """A Ctrl-C reaches every process of the terminal's process group, the run's sender too; and the harness, started
    with SIGINT ignored (a background job of a script), did not stop: the sender's 130 was said as "INCOMPLETE
    (sender_failed): udp-replay exited with status 130". The sender, paced to take seconds, is stopped here by a
    SIGINT of the test's own once it runs."""
    sender = "udp-replay" if transport == "udp" else "serial-replay"
    tables = {"replay": {"sender": "udp-replay", "rate": "pps", "pps": 300}} if transport == "udp" else \
        {"serial": {"baud": 115_200}}
    killer = kill_when_running(rf"(^|/){sender} .*{re.escape(str(SAMPLE))}", signal.SIGINT, 0.5)
    run = runner.execute({**config(SAMPLE, transport, **tables), "subscribers": 0}, f"outside-{transport}",
                         root=tmp_path, echo=False)
    killer.join()
    verdict = rundir.read_json(run / "summary.json")["verdict"]
    assert verdict["headline"] == f"INCOMPLETE (interrupted): {sender} was stopped by SIGINT, sent from outside the run"
