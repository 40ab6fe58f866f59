"""Report plots as PNG: histogram on a log scale, percentile curve, latency
over time. Agg backend, fixed size and no timestamp metadata, so the same
figures give the same bytes."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

_SAVE = {"dpi": 110, "metadata": {"Software": None}}
_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def _us(v: np.ndarray) -> np.ndarray:
    return v / 1000.0


def _finish(fig, ax, path: Path, title: str, xlabel: str, ylabel: str, xlog: bool = True) -> None:
    if xlog:
        ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, **_SAVE)
    plt.close(fig)


def histogram(frame: pd.DataFrame, stages: list[tuple[str, str]], path: Path, title: str) -> None:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    finite = [frame[n].dropna().to_numpy() for n, _ in stages]
    positive = np.concatenate([v[v > 0] for v in finite]) if finite else np.array([1.0])
    lo, hi = (positive.min(), positive.max()) if positive.size else (1.0, 10.0)
    bins = np.logspace(np.log10(max(lo, 1.0) / 1000), np.log10(max(hi, lo * 10) / 1000), 60)
    for i, ((name, desc), v) in enumerate(zip(stages, finite)):
        if v.size:
            ax.hist(_us(np.clip(v, 1, None)), bins=bins, histtype="step", linewidth=1.4, color=_COLORS[i % 6],
                    label=f"{desc} (n={v.size:,})")
    _finish(fig, ax, path, title, "latency (µs, log scale)", "messages (log scale)")


def percentile_curve(frame: pd.DataFrame, stages: list[tuple[str, str]], path: Path, title: str) -> None:
    """Latency by percentile, the x axis stretched towards the tail (1/(1-p))."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, (name, desc) in enumerate(stages):
        v = np.sort(frame[name].dropna().to_numpy())
        if v.size < 2:
            continue
        p = (np.arange(v.size) + 0.5) / v.size
        ax.plot(1.0 / (1.0 - p), _us(v), color=_COLORS[i % 6], linewidth=1.3, label=desc)
    ax.set_xscale("log")
    ax.set_xticks([2, 10, 100, 1000, 10000, 100000])
    ax.set_xticklabels(["50%", "90%", "99%", "99.9%", "99.99%", "99.999%"])
    _finish(fig, ax, path, title, "percentile", "latency (µs, log scale)", xlog=False)


def over_time(frame: pd.DataFrame, stage: tuple[str, str], path: Path, title: str, bins: int = 100) -> None:
    """p50, p99 and max of one stage in equal time bins of the run."""
    name, desc = stage
    sub = frame[["t_receive", name]].dropna()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if len(sub):
        t = (sub["t_receive"].to_numpy(np.int64) - int(sub["t_receive"].min())) / 1e9
        edges = np.linspace(0, max(float(t.max()), 1e-9), bins + 1)
        which = np.clip(np.digitize(t, edges) - 1, 0, bins - 1)
        g = pd.DataFrame({"bin": which, "v": _us(sub[name].to_numpy())}).groupby("bin")["v"]
        mids = (edges[:-1] + edges[1:]) / 2
        for label, series, color in [("p50", g.median(), _COLORS[0]), ("p99", g.quantile(0.99), _COLORS[1]),
                                     ("max", g.max(), "#7f7f7f")]:
            ax.plot(mids[series.index], series.to_numpy(), label=label, color=color, linewidth=1.2)
    _finish(fig, ax, path, title, "time since first message (s)", f"{desc} latency (µs, log scale)", xlog=False)
