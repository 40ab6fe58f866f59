"""Report plots as PNG: histogram on a log scale, percentile curve, latency
over time. Agg backend, fixed size and no timestamp metadata, so the same
figures give the same bytes."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from . import ticks  # noqa: E402
from .histogram import percentile_points  # noqa: E402

_SAVE = {"dpi": 110, "metadata": {"Software": None}}
_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def _us(v: np.ndarray) -> np.ndarray:
    return v / 1000.0


def _finish(fig, ax, path: Path, title: str, xlabel: str, ylabel: str, xlog: bool = True,
            legend_loc: str = "upper right") -> None:
    if xlog:
        ax.set_xscale("log")
        ticks.plain_ticks(ax.xaxis)
    ax.set_yscale("log")
    ticks.plain_ticks(ax.yaxis)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc=legend_loc)  # a fixed place: "best" scans every point
    fig.subplots_adjust(left=0.13, right=0.98, bottom=0.12, top=0.92)  # fixed margins: tight_layout costs ~0.3 s a figure
    fig.savefig(path, **_SAVE)
    plt.close(fig)


Series = list[tuple[str, np.ndarray, np.ndarray]]  # (description, distinct values in ns, their counts)


def histogram(series: Series, path: Path, title: str) -> None:
    """Counts in 60 log-spaced bins per stage (binned on log10, uniform there)."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    logs = [(desc, np.log10(np.maximum(v, 1.0) / 1000.0), c) for desc, v, c in series]  # µs
    nonempty = [x for _, x, _ in logs if x.size]
    if nonempty:
        lo = min(float(x.min()) for x in nonempty)
        hi = max(float(x.max()) for x in nonempty)
        hi = max(hi, lo + 1.0)
        for i, (desc, x, c) in enumerate(logs):
            if x.size:
                counts, edges = np.histogram(x, bins=60, range=(lo, hi), weights=c)
                ax.stairs(counts, 10.0 ** edges, color=_COLORS[i % 6], linewidth=1.4,
                          label=f"{desc} (n={int(c.sum()):,})")
    _finish(fig, ax, path, title, "latency (µs, log scale)", "messages (log scale)")


def percentile_curve(series: Series, path: Path, title: str) -> None:
    """Latency by percentile, the x axis stretched towards the tail (1/(1-p))."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, (desc, v, c) in enumerate(series):
        p, q = percentile_points(v, c)
        if p.size < 2:
            continue
        ax.plot(1.0 / (1.0 - p), _us(q), color=_COLORS[i % 6], linewidth=1.3, label=desc)
    ax.set_xscale("log")
    ax.set_xticks([2, 10, 100, 1000, 10000, 100000])
    ax.set_xticklabels(["50%", "90%", "99%", "99.9%", "99.99%", "99.999%"])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())  # the percentiles named are the scale
    _finish(fig, ax, path, title, "percentile", "latency (µs, log scale)", xlog=False, legend_loc="upper left")


def over_time(mids_s: np.ndarray, lines: dict[str, np.ndarray], desc: str, path: Path, title: str) -> None:
    """Statistics of one stage in equal time bins of the run (lines: p50, p99 and max, in ns, at each bin's middle,
    mids_s; taken by the caller, so that this process never imports pandas: 0.5 s on the report's wait)."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for (col, values), color in zip(lines.items(), [_COLORS[0], _COLORS[1], "#7f7f7f"]):
        ax.plot(mids_s, _us(values), label=col, color=color, linewidth=1.2)
    _finish(fig, ax, path, title, "time since first message (s)", f"{desc} latency (µs, log scale)", xlog=False)
