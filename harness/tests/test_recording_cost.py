"""harness/benchmarks/recording_cost.py on the bundled fixture: its summary
worked out again from the per-round figures it prints, in both ways of
measuring, a build that predates an option left out of that variant, and a
stamp set the gateway refuses stopping the run with the gateway's own words."""

from __future__ import annotations

import re
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

from itchbench import paths
from itchbench.captures import fixtures

from pcap_edit import record_offsets

SCRIPT = paths.repo_root() / "harness" / "benchmarks" / "recording_cost.py"
FIXTURE = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"
ROUND = re.compile(r"^round +(\d+) (settled|as-users-run) +(.*)  \(ns a message\)$")


def _rounds(out: str) -> dict[str, list[dict[str, float]]]:
    """Per mode, each round's ns a message by variant name, parsed from the printed lines."""
    got: dict[str, list[dict[str, float]]] = {}
    for line in out.splitlines():
        m = ROUND.match(line)
        if m:
            pairs = re.findall(r"(\S+:[^0-9]+?) (\d+\.\d)", m.group(3))
            got.setdefault(m.group(2), []).append({name.strip(): float(ns) for name, ns in pairs})
    return got


def test_summary_is_the_median_of_per_round_differences_in_both_modes(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), str(FIXTURE), "--rounds", "3", "--stamps", "book",
                          "--variant", "wide=--latency-format wide", "--out-parent", str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout
    rounds = _rounds(out)
    assert set(rounds) == {"settled", "as-users-run"}
    sections = out.split("\nas-users-run:\n")
    for mode, section in (("settled", sections[0]), ("as-users-run", sections[1])):
        assert len(rounds[mode]) == 3
        for r in rounds[mode]:
            assert set(r) == {"head:no latency log", "head:stamps book", "head:wide"} and min(r.values()) > 0
        for name in ("head:stamps book", "head:wide"):
            diffs = [r[name] - r["head:no latency log"] for r in rounds[mode]]
            line = next(ln for ln in section.splitlines() if ln.strip().startswith(name + " "))
            got = float(re.search(r"recording ([+-]\d+\.\d) ns", line).group(1))
            # differences of the printed (rounded) figures may be off by a rounding step from the script's own
            assert abs(got - statistics.median(diffs)) <= 0.15, line
            assert "median of 3 per-round differences" in line and "steal" in line
            # The clock reads' floor: reads a message times one read. Book stamped alone, one a message; every stamp
            # (the wide variant's default), a datagram's receive stamp, decoded and book on each of the 8,000
            # messages, published on each BBO event (the fixture's golden count).
            reads, floor, each = re.search(r"the stamps' (\d+\.\d\d) clock reads a message take at least "
                                           r"(\d+\.\d) ns \((\d+\.\d) ns each, back to back\)", line).groups()
            fixture = next(f for f in fixtures.load_manifest() if f.name == "nasdaq-day-sample")
            expected = 1.0 if name == "head:stamps book" else (
                len(record_offsets(FIXTURE.read_bytes())) + 2 * 8000 + fixture.golden["bbo_events"]) / 8000
            assert float(reads) == round(expected, 2)
            assert abs(float(floor) - float(reads) * float(each)) <= 0.1 + 0.05 * float(reads), line
    assert list(tmp_path.iterdir()) == [], "run directories are removed"


def test_a_build_without_an_option_runs_only_the_variants_it_knows(tmp_path):
    """An older build: a script whose --help names --stamps alone (no --latency-format, no --latency-histogram)
    and runs as the gateway otherwise."""
    old = tmp_path / "old-gateway"
    old.write_text(f"#!/bin/sh\nif [ \"$1\" = --help ]; then echo 'usage: itch-gateway [--stamps LIST]'; exit 0; fi\n"
                   f"exec {shlex.quote(str(paths.tool('itch-gateway')))} \"$@\"\n")
    old.chmod(0o755)
    out = subprocess.run([sys.executable, str(SCRIPT), str(FIXTURE), "--rounds", "1", "--mode", "settled",
                          "--variant", "wide=--latency-format wide", "--variant", "histograms=--latency-histogram",
                          "--stamps", "all", "--gateway", f"old={old}"],
                         capture_output=True, text=True, check=True).stdout
    (only,) = _rounds(out)["settled"]
    assert set(only) == {"head:no latency log", "head:wide", "head:histograms", "head:stamps all",
                         "old:no latency log", "old:stamps all"}


def test_a_stamp_set_the_gateway_refuses_stops_the_run(tmp_path: Path):
    proc = subprocess.run([sys.executable, str(SCRIPT), str(FIXTURE), "--rounds", "1", "--stamps", "sometimes"],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "sometimes" in proc.stderr and "exited with 2" in proc.stderr


def test_relative_to_sets_each_variant_against_another_round_by_round():
    out = subprocess.run([sys.executable, str(SCRIPT), str(FIXTURE), "--rounds", "3", "--mode", "settled",
                          "--stamps", "all", "--variant", "histograms=--latency-histogram",
                          "--relative-to", "histograms"], capture_output=True, text=True, check=True).stdout
    rounds = _rounds(out)["settled"]
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("head:stamps all "))
    got = float(re.search(r"([+-]\d+\.\d) ns a message over histograms", line).group(1))
    over = [r["head:stamps all"] - r["head:histograms"] for r in rounds]
    assert abs(got - statistics.median(over)) <= 0.15, line
    hist = next(ln for ln in out.splitlines() if ln.strip().startswith("head:histograms "))
    assert "over histograms" not in hist  # not against itself
    refused = subprocess.run([sys.executable, str(SCRIPT), str(FIXTURE), "--relative-to", "nothing"],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "no recorded variant has that label" in refused.stderr


def test_a_gateway_label_already_taken_is_refused(tmp_path: Path):
    """`head` is this build: another build under that label used to replace it without a word."""
    for label in ("head", "old"):
        args = ["--gateway", f"old={paths.tool('itch-gateway')}"] if label == "old" else []
        proc = subprocess.run([sys.executable, str(SCRIPT), str(FIXTURE), "--rounds", "1", *args,
                               "--gateway", f"{label}={paths.tool('itch-gateway')}"], capture_output=True, text=True)
        assert proc.returncode != 0 and f"--gateway {label}: that label is taken" in proc.stderr, proc.stderr
        assert ("(head is this build)" in proc.stderr) == (label == "head")
