"""Tick labels every figure can read: plain numbers with thousands separators (20,000 and 0.5), never
"2×10⁴" or "4.18489×10²", on linear and log axes alike."""

from __future__ import annotations

import matplotlib.axis
from matplotlib import ticker


def plain(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1 else f"{value:.2g}"


class _PlainLogFormatter(ticker.LogFormatter):
    """matplotlib's own choice of which ticks of a log axis to label (every decade; a few minor ticks when the
    axis spans little more than one), each label written plainly."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return plain(x)


def plain_ticks(axis: matplotlib.axis.Axis) -> None:
    """Plain labels on every major tick of axis; minor ticks labelled only on a log axis spanning too little to
    hold a decade (where matplotlib would label them), and never beside ticks placed by hand."""
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: plain(v)))
    placed = isinstance(axis.get_major_locator(), ticker.FixedLocator)
    axis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False) if axis.get_scale() == "log" and not placed
                             else ticker.NullFormatter())
