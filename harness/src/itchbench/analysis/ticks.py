"""Tick labels every figure can read: plain numbers with thousands separators (20,000 and 0.5, 100M), never
"2×10⁴" or "4.18489×10²", on linear and log axes alike."""

from __future__ import annotations

import math

import matplotlib.axis
from matplotlib import ticker


def plain(value: float) -> str:
    """1,000,000 and 0.5; from ten million on in millions (10M, 250M), so no label outgrows its neighbours."""
    if abs(value) >= 1e7:
        return f"{value / 1e6:,.0f}M"
    return f"{value:,.0f}" if abs(value) >= 1 else f"{value:.2g}"


class _PlainLogFormatter(ticker.LogFormatter):
    """matplotlib's own choice of which ticks of a log axis to label (every decade; a few minor ticks when the
    axis spans little more than one), each label written plainly."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return plain(x)


def plain_ticks(axis: matplotlib.axis.Axis) -> None:
    """Plain labels on every major tick of axis. A log axis showing two decades or more has no minor ticks (its
    decades read alone, and each minor tick is a costly object: hundreds of them took half a report's plotting
    time); a narrower one keeps them, labelled where matplotlib would, and never beside ticks placed by hand."""
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: plain(v)))
    placed = isinstance(axis.get_major_locator(), ticker.FixedLocator)
    if axis.get_scale() == "log" and not placed:
        lo, hi = sorted(axis.get_view_interval())
        if lo > 0 and math.floor(math.log10(hi)) - math.ceil(math.log10(lo)) >= 1:  # two decades labelled
            axis.set_minor_locator(ticker.NullLocator())
            return
        axis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False))
        return
    axis.set_minor_formatter(ticker.NullFormatter())
