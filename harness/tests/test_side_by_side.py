"""harness/benchmarks/side_by_side.py on two commands whose rates are known
round by round, so the per-round ratios, their median and the best-round
ratio can be worked out by hand."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from itchbench import paths

SCRIPT = paths.repo_root() / "harness" / "benchmarks" / "side_by_side.py"


def _rates_command(tmp: Path, name: str, rates: list[int]) -> str:
    """A command that prints the next of its rates each time it runs."""
    queue = tmp / f"{name}.rates"
    queue.write_text("\n".join(map(str, rates)) + "\n")
    script = tmp / f"{name}.py"
    script.write_text(
        "import pathlib, sys\n"
        f"q = pathlib.Path({str(queue)!r})\n"
        "rates = q.read_text().split()\n"
        "q.write_text('\\n'.join(rates[1:]) + '\\n')\n"
        "print(f'{rates[0]} msg/s')\n")
    return shlex.join([sys.executable, str(script)])


def test_ratios_median_and_best_rounds(tmp_path):
    capture = tmp_path / "any.itch"
    capture.write_bytes(b"")  # only its existence is checked; the commands ignore it
    ours = _rates_command(tmp_path, "ours", [100, 300, 200])
    peer = _rates_command(tmp_path, "peer", [100, 100, 400])
    out = subprocess.run([sys.executable, str(SCRIPT), str(capture), "--rounds", "3", "--ours", ours,
                          "--peer", peer], capture_output=True, text=True, check=True).stdout
    rounds = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    # per round ours / peer: 100/100, 300/100, 200/400
    assert [r[3] for r in rounds] == ["1.000", "3.000", "0.500"]
    median = next(line for line in out.splitlines() if line.startswith("median"))
    assert median.split()[3] == "1.000"
    assert "ratio range 0.500–3.000" in out
    # best rounds: 300 against 400
    assert "best rounds 300 and 400 msg/s: ratio 0.750" in out


def test_a_rate_the_pattern_does_not_find_stops_with_the_output(tmp_path):
    capture = tmp_path / "any.itch"
    capture.write_bytes(b"")
    proc = subprocess.run([sys.executable, str(SCRIPT), str(capture), "--rounds", "1", "--ours", "echo no rate here",
                           "--peer", "echo 5 msg/s"], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "no rate matching" in proc.stderr and "no rate here" in proc.stderr


def test_a_side_killed_by_a_signal_is_named_with_it(tmp_path):
    capture = tmp_path / "any.itch"
    capture.write_bytes(b"")
    proc = subprocess.run([sys.executable, str(SCRIPT), str(capture), "--rounds", "1", "--ours", "echo 5 msg/s",
                           "--peer", "sh -c 'kill -ABRT $$'"], capture_output=True, text=True)
    assert proc.returncode != 0 and "was killed by SIGABRT" in proc.stderr, proc.stderr


def test_gateway_flags_reach_the_gateway_and_are_not_for_another_command(tmp_path):
    # Depth of more levels than the gateway keeps: its own refusal comes back, so the flags were given to it.
    capture = paths.repo_root() / "fixtures" / "seed-workload.pcap"
    proc = subprocess.run([sys.executable, str(SCRIPT), str(capture), "--rounds", "1", "--peer", "echo 5 msg/s",
                           "--gateway-flags", "--levels 65"], capture_output=True, text=True)
    assert proc.returncode != 0 and "--levels 65: 0 to 64 levels a side, or all" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, str(SCRIPT), str(capture), "--rounds", "1", "--ours", "echo 5 msg/s",
                           "--peer", "echo 5 msg/s", "--gateway-flags", "--levels 5"], capture_output=True, text=True)
    assert proc.returncode != 0 and "--gateway-flags is for the gateway's simulation" in proc.stderr


def test_a_rate_with_thousands_separators_is_read_whole_and_no_rate_is_refused(tmp_path):
    # "15,000,000 msg/s" was read as its last group, 000: a peer at 0 msg/s.
    capture = tmp_path / "any.itch"
    capture.write_bytes(b"")
    out = subprocess.run([sys.executable, str(SCRIPT), str(capture), "--rounds", "1", "--ours",
                          "echo 30,000,000 msg/s", "--peer", "echo peer: 15,000,000 msg/s"], capture_output=True,
                         text=True, check=True).stdout
    assert "best rounds 30,000,000 and 15,000,000 msg/s: ratio 2.000" in out, out
    proc = subprocess.run([sys.executable, str(SCRIPT), str(capture), "--rounds", "1", "--ours", "echo 5 msg/s",
                           "--peer", "echo 0 msg/s"], capture_output=True, text=True)
    assert proc.returncode != 0 and "'0 msg/s' in the output of echo 0 msg/s is no rate" in proc.stderr, proc.stderr


def test_a_rate_the_file_could_not_be_read_at_in_the_time_the_command_ran_is_refused(tmp_path):
    # The seed workload's 7,000 messages at 5 msg/s take 1,400 s; `echo` ran for a moment: whatever it printed is not
    # a rate of the whole file, and a ratio over it would have made ours look 10^5 times faster.
    capture = paths.repo_root() / "fixtures" / "seed-workload.pcap"
    proc = subprocess.run([sys.executable, str(SCRIPT), str(capture), "--rounds", "1", "--ours", "echo 5 msg/s",
                           "--peer", "echo 5 msg/s"], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "'5 msg/s' in the output of echo 5 msg/s is no rate of the whole file: its 7,000 messages at that rate " \
           "take 1,400.00 s, and the command ran " in proc.stderr, proc.stderr
