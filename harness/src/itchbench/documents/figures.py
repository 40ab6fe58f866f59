"""Document figures: matplotlib with one style (fixed font, sizes, palette),
PNG without a version stamp, so the same runs give the same bytes."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..analysis import latency_pass, ticks  # noqa: E402
from ..analysis.histogram import percentile_points  # noqa: E402
from .collect import Configuration, RunRecord  # noqa: E402

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]
STYLE = {
    "font.family": "DejaVu Sans",  # ships with matplotlib: the same glyphs everywhere
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "figure.dpi": 100, "savefig.dpi": 110, "lines.linewidth": 1.4,
}
SIZE = (7.5, 3.6)
PERCENTILE_TICKS = [50, 90, 99, 99.9, 99.99, 99.999]
LINESTYLES = ["-", "--", ":", "-."]  # repetitions of one configuration: one colour, told apart by line


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


@contextlib.contextmanager
def _figure(path: Path) -> Iterator[plt.Axes]:
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=SIZE)
        try:
            yield ax
            fig.tight_layout()
            fig.savefig(path, format="png", metadata={"Software": None})
        finally:
            plt.close(fig)


def _latencies(run: RunRecord, stage: str) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values in ns, counts) of a stage after the warm-up; empty when the run has none."""
    if not (run.dir / "latency.lat").is_file():
        return np.array([]), np.array([], np.int64)
    lat = latency_pass.stages_of(run.dir, int(run.manifest["scenario"].get("warmup_messages", 0)))
    if stage not in lat.stage:
        return np.array([]), np.array([], np.int64)
    v, c = lat.stage[stage].values_counts()
    return v.astype(np.float64), c


def histogram(path: Path, config: Configuration, index: int, stage: str, description: str) -> bool:
    """One step line per repetition, log2 bins: the repetitions side by side, not pooled."""
    samples = [(r, *_latencies(r, stage)) for r in config.runs]
    samples = [(r, v, c) for r, v, c in samples if v.size]
    if not samples:
        return False
    lo = max(1.0, min(float(v.min()) for _, v, _ in samples))
    hi = max(float(v.max()) for _, v, _ in samples)
    edges = 2.0 ** np.arange(np.floor(np.log2(lo)), np.ceil(np.log2(hi)) + 1.01, 0.25)
    with _figure(path) as ax:
        for k, (r, v, c) in enumerate(samples):
            counts, _ = np.histogram(np.maximum(v, 1), bins=edges, weights=c)
            ax.stairs(counts / c.sum() * 100, edges, color=color(index), linestyle=LINESTYLES[k % len(LINESTYLES)],
                      label=f"repetition {k + 1}")
        ax.set_xscale("log")
        ticks.plain_ticks(ax.xaxis)
        ax.set_xlabel(f"{description} (ns, log scale; bins of 2^¼)")
        ax.set_ylabel("messages (%)")
        ax.set_title(f"{config.label}: {description}")
        ax.legend(loc="upper right")
    return True


def _tail_x(p: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 - np.minimum(p, 1 - 1e-9))


def percentile_curves(path: Path, configs: Sequence[Configuration], stage: str, description: str) -> bool:
    """Every run's percentile curve, coloured by configuration."""
    drawn = False
    with _figure(path) as ax:
        for i, config in enumerate(configs):
            for k, r in enumerate(config.runs):
                values, counts = _latencies(r, stage)
                if not values.size:
                    continue
                p, q = percentile_points(values, counts, 400)
                ax.plot(_tail_x(p), np.maximum(q, 1), color=color(i), alpha=0.8, linewidth=1.0,
                        label=config.label if k == 0 else None)
                drawn = True
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(_tail_x(np.array(PERCENTILE_TICKS) / 100), [f"p{t:g}" for t in PERCENTILE_TICKS])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ticks.plain_ticks(ax.yaxis)
        ax.set_xlabel("percentile (every run of every configuration)")
        ax.set_ylabel(f"{description} (ns)")
        ax.set_title(f"{description}: percentile curves")
        if drawn:  # nothing to name otherwise (matplotlib warns of a legend of nothing)
            ax.legend(loc="upper left")
    return drawn


def bars(path: Path, labels: Sequence[str], series: dict[str, list[tuple[float, float, float] | None]],
         ylabel: str, title: str, log: bool = True) -> bool:
    """Grouped bars: per label, one bar per series (median, with the runs' min-max as error bar)."""
    if not labels or not series or not any(v and v[0] > 0 for values in series.values() for v in values):
        return False  # nothing measured (a black box reading a file has no latency): no figure, not an empty one
    x = np.arange(len(labels))
    width = 0.8 / len(series)
    with _figure(path) as ax:
        for j, (name, values) in enumerate(series.items()):
            med = np.array([v[0] if v else np.nan for v in values])
            err = np.array([[v[0] - v[1], v[2] - v[0]] if v else [0, 0] for v in values]).T
            ax.bar(x + (j - (len(series) - 1) / 2) * width, med, width, yerr=err, capsize=3, color=color(j),
                   label=name)
        ax.set_xticks(x, labels, rotation=15 if max(len(s) for s in labels) > 12 else 0, ha="right"
                      if max(len(s) for s in labels) > 12 else "center")
        if log:
            ax.set_yscale("log")
        ticks.plain_ticks(ax.yaxis)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(loc="upper left")
    return True


def steps(path: Path, steps_labels: Sequence[str], series: dict[str, list[float | None]], ylabel: str,
          title: str) -> bool:
    """Lines across the steps of a journey (e.g. each metric relative to the first revision)."""
    if not series:
        return False
    x = np.arange(len(steps_labels))
    with _figure(path) as ax:
        for j, (name, values) in enumerate(series.items()):
            y = np.array([np.nan if v is None else v for v in values], dtype=float)
            ax.plot(x, y, marker="o", color=color(j), label=name)
        ax.axhline(1.0, color="#444444", linewidth=0.8, linestyle="--")
        ax.set_xticks(x, steps_labels, rotation=15, ha="right")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(loc="best")
    return True


SWEEP_PERCENTILES = (("p50_us", "p50", "-"), ("p99_us", "p99", "--"), ("p999_us", "p99.9", ":"), ("max_us", "max", "-."))


# Sweep keys that set the offered rate: their curve is drawn against the throughput achieved. Any other key
# (subscribers, symbols, a mix) leaves the rate alone, so it is drawn against the key's own values.
RATE_KEYS = ("replay.pps", "replay.multiplier", "serial.baud", "serial.multiplier")


def sweep_curves(path: Path, sweeps: Sequence[dict]) -> bool:
    """Latency against achieved throughput (a sweep of the rate) or against the swept value (any other key), log
    scales: a colour per sweep, a line style per percentile; the step past saturation ringed (against throughput
    its achieved rate can fall back below the last one's: the hook)."""
    if not any(r["throughput_msg_s"] > 0 and r["p50_us"] > 0 for s in sweeps for r in s["rows"]):
        return False  # no step measured both (NaN compares false): no figure, not an empty one
    from matplotlib.lines import Line2D
    keys = {s["key"] for s in sweeps}
    by_value = len(keys) == 1 and next(iter(keys)) not in RATE_KEYS
    with _figure(path) as ax:
        for i, s in enumerate(sweeps):
            x = np.array([float(r["value"]) if by_value else r["throughput_msg_s"] for r in s["rows"]], dtype=float)
            for key, _, style in SWEEP_PERCENTILES:
                y = np.array([r[key] for r in s["rows"]], dtype=float)
                ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
                ax.plot(x[ok], y[ok], linestyle=style, marker="o", markersize=3, color=color(i))
            past = [j for j, r in enumerate(s["rows"]) if r["past_saturation"]]
            if past and np.isfinite(x[past[0]]) and np.isfinite(s["rows"][past[0]]["p99_us"]):
                ax.plot([x[past[0]]], [s["rows"][past[0]]["p99_us"]], marker="o", markersize=10, fillstyle="none",
                        color=color(i), linestyle="none")
        ax.set_yscale("log")
        ticks.plain_ticks(ax.yaxis)
        if by_value:
            values = sorted({float(r["value"]) for s in sweeps for r in s["rows"] if float(r["value"]) > 0})
            if values and values[-1] / values[0] >= 10:
                ax.set_xscale("log")
            ax.set_xticks(values)
            ticks.plain_ticks(ax.xaxis)
            (key,) = keys
            ax.set_xlabel(f"{key} (the swept value; the offered rate is the same at every step)")
            ax.set_title("Latency against the swept value (ringed: the step past saturation)")
        else:
            ax.set_xscale("log")
            ticks.plain_ticks(ax.xaxis)
            ax.set_xlabel("achieved throughput, messages/s")
            ax.set_title("Latency against throughput (ringed: the step past saturation)")
        ax.set_ylabel("latency from the intended send, µs")
        who = ax.legend([Line2D([], [], color=color(i)) for i in range(len(sweeps))],
                        [s["short"] for s in sweeps], loc="upper left", bbox_to_anchor=(1.01, 1.0),
                        title="sweep")
        ax.add_artist(who)
        ax.legend([Line2D([], [], color="#444444", linestyle=style) for _, _, style in SWEEP_PERCENTILES],
                  [name for _, name, _ in SWEEP_PERCENTILES], loc="lower left", bbox_to_anchor=(1.01, 0.0),
                  title="percentile")
    return True
