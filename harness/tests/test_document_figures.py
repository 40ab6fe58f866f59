"""Documents that read (docs/documents.md): a sweep's curve is drawn against what was swept, a sweep's document
leads with its curve and table and keeps each configuration's detail in an appendix (folded in the HTML), and
every figure's tick labels can be read — checked on the committed scenarios' sweeps and on a document made from
real runs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from itchbench import paths
from itchbench.cli import main as itchbench_main
from itchbench.documents import figures
from itchbench.runs import scenario

from figure_checks import tick_label_problems

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
SWEEPS = sorted(p for p in (paths.repo_root() / "scenarios").glob("*.toml") if "[sweep]" in p.read_text())


@pytest.fixture
def checked(monkeypatch) -> list[str]:
    """Every figure a document function draws, checked as it is closed: the problems found (and, in
    checked.x_labels, each figure's x axis label)."""
    problems = Checked()
    close = plt.close

    def checking_close(fig=None):
        if fig is not None:
            problems.extend(tick_label_problems(fig))
            problems.x_labels.append(fig.axes[0].get_xlabel())
            problems.y_ticks.append([t.get_text() for t in fig.axes[0].yaxis.get_ticklabels(minor=False)
                                     + fig.axes[0].yaxis.get_ticklabels(minor=True)
                                     if t.get_visible() and t.get_text().strip()
                                     and low_enough(t, fig.axes[0])])
        close(fig)
    monkeypatch.setattr(figures.plt, "close", checking_close)
    return problems


def low_enough(label, ax) -> bool:
    """Whether a y tick label lies within the axis' view (matplotlib keeps labels of ticks outside it)."""
    lo, hi = ax.get_ylim()
    return lo <= label.get_position()[1] <= hi


class Checked(list):
    x_labels: list[str]
    y_ticks: list[list[str]]  # the y tick labels in view, per figure

    def __init__(self) -> None:
        super().__init__()
        self.x_labels = []
        self.y_ticks = []


def _rows(values: list[float], key: str) -> list[dict]:
    """A step a value, shaped as the committed sweep would give it: a subscribers sweep offers one rate at every
    step (the seed workload's 418.489 msg/s), a rate sweep what it asks; latency growing with the step."""
    rows = []
    for i, v in enumerate(values):
        rate = 418.489 if key not in figures.RATE_KEYS else v * 0.98
        rows.append({"value": v, "throughput_msg_s": rate, "p50_us": 100 * 1.3 ** i, "p99_us": 300 * 1.4 ** i,
                     "p999_us": 500 * 1.5 ** i, "max_us": 900 * 1.6 ** i, "past_saturation": [] if i < len(values) - 1
                     else ["p99: over its bound"]})
    return rows


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.stem)
def test_each_committed_sweeps_curve_has_readable_ticks_and_the_swept_axis(path, tmp_path, checked):
    configs = scenario.load(path)
    key = configs[0].values["sweep"]["key"]
    sweeps = []
    for base in dict.fromkeys(c.base_label for c in configs):
        values = [float(c.step_value) for c in configs if c.base_label == base]
        sweeps.append({"short": base, "key": key, "rows": _rows(values, key)})
    assert figures.sweep_curves(tmp_path / "sweep.png", sweeps)
    assert checked == []
    # A subscribers sweep holds the offered rate: its curve is against subscribers; a rate sweep's against what
    # the gateway achieved.
    (label,) = checked.x_labels
    assert label.startswith("subscribers (the swept value") if key == "subscribers" else \
        label == "achieved throughput, messages/s"


def test_the_check_finds_the_overlapping_ticks_of_the_old_fan_out_figure(tmp_path, checked):
    # The curve as it was drawn before: a subscribers sweep against achieved throughput, the same at every step, on
    # a log axis: matplotlib labels the narrow span with long overlapping minor ticks.
    fig, ax = plt.subplots(figsize=figures.SIZE)
    ax.plot([418.489 * (1 + k * 1e-5) for k in range(6)], [1, 2, 3, 4, 5, 6], marker="o")
    ax.set_xscale("log")
    ax.set_yscale("log")
    fig.tight_layout()
    problems = tick_label_problems(fig)
    plt.close(fig)
    assert any("times10" in p and "is not a short plain number" in p for p in problems), problems


@needs_root
def test_a_subscribers_sweep_document_leads_with_its_curve_against_subscribers(tmp_path, checked):
    seed = paths.repo_root() / "fixtures" / "seed-workload.pcap"
    scen = tmp_path / "fan.toml"
    scen.write_text(f'name = "fan"\ntransport = "udp"\ncapture = "{seed}"\n[replay]\nsender = "udp-replay"\n'
                    'rate = "pps"\npps = 5000\n[sweep]\nkey = "subscribers"\nsteps = [1, 2, 5, 10]\n'
                    'stop_on_loss = true\n')
    assert itchbench_main(["run", str(scen), "--out", str(tmp_path / "runs")]) == 0
    assert itchbench_main(["doc", str(tmp_path / "runs"), "--out", str(tmp_path / "doc")]) == 0
    assert checked == []  # every figure of the document: histograms, percentile curves, the sweep's
    md = (tmp_path / "doc" / "report.md").read_text()
    headings = re.findall(r"^#{2,3} .*$", md, flags=re.M)
    assert headings.index("## Load sweep") < headings.index("## Executive summary")
    appendix = headings.index("## Appendix: each configuration in full")
    steps = [h for h in headings if h.startswith("### Configuration: ")]
    assert len(steps) == 4 and all(headings.index(h) > appendix for h in steps)
    assert not [h for h in headings if h.startswith("## Configuration: ")]
    html = (tmp_path / "doc" / "report.html").read_text()
    assert "<details><summary><h2>Appendix: each configuration in full</h2></summary>" in html
    # The curve against the four step values, not against a throughput that is the same at each.
    assert any(x.startswith("subscribers (the swept value") for x in checked.x_labels), checked.x_labels
    assert "![Latency of each step of the sweep](figures/sweep.png)" in md


@pytest.mark.parametrize("low,high", [(2e4, 6e5), (3e4, 9e4), (1.5e3, 2.5e3), (0.2, 40.0)])
def test_bars_on_a_log_axis_of_any_span_label_plainly(tmp_path, checked, low, high):
    # The summary bars of a document once read "2×10⁴" … "6×10⁵": matplotlib labels a log axis' minor ticks when
    # it spans about a decade, and the medians of a run decide the span.
    assert figures.bars(tmp_path / "bars.png", ["a", "b"], {"s": [(low, low * 0.9, low * 1.1),
                                                                   (high, high * 0.9, high * 1.1)]},
                        "ns", "median of the runs, min–max")
    assert checked == []
    (shown,) = checked.y_ticks
    assert len(shown) >= 2, shown  # plain, and still enough of them to read a bar's height by
