"""harness/benchmarks/recording_cost.py on the bundled fixture: its summary
worked out again from the per-round figures it prints, and a stamp set the
gateway refuses stopping the run with the gateway's own words."""

from __future__ import annotations

import statistics
import subprocess
import sys

from itchbench import paths

SCRIPT = paths.repo_root() / "harness" / "benchmarks" / "recording_cost.py"
FIXTURE = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"


def test_summary_is_the_median_of_per_round_differences(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), str(FIXTURE), "--rounds", "3", "--stamps", "book",
                          "--stamps", "all", "--out-parent", str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout
    rounds = [[float(x) for x in line.split()[1:]] for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert len(rounds) == 3 and all(len(r) == 3 and min(r) > 0 for r in rounds)
    for column, label in ((1, "stamps book"), (2, "stamps all")):
        diffs = [r[column] - r[0] for r in rounds]
        line = next(ln for ln in out.splitlines() if ln.startswith(label + ":"))
        # differences of the printed (rounded) figures may be off by a rounding step from the script's own
        assert abs(float(line.split()[2]) - statistics.median(diffs)) <= 0.15, line
        assert "median of 3 per-round differences" in line
    assert list(tmp_path.iterdir()) == [], "run directories are removed"


def test_a_stamp_set_the_gateway_refuses_stops_the_run(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), str(FIXTURE), "--rounds", "1", "--stamps", "sometimes"],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "sometimes" in proc.stderr and "exited with 2" in proc.stderr
