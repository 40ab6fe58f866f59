"""Whether latency grows through a run: the least-squares slope of latency
against the time each message was due, accumulated a chunk at a time in
bounded memory. A gateway that keeps up has a slope near zero; one that falls
behind the offered rate queues, and its latency from the intended send time
grows by (offered / achieved - 1) seconds a second."""

from __future__ import annotations

import numpy as np


class Trend:
    """Sums of a simple linear regression of y (latency, ns) on x (due time, ns)."""

    def __init__(self) -> None:
        self._origin: int | None = None
        self._n = 0
        self._sx = self._sy = self._sxx = self._sxy = 0.0
        self._lo = self._hi = 0.0

    @classmethod
    def of_sums(cls, origin: int | None, n: int, sx: float, sy: float, sxx: float, sxy: float, lo: float,
                hi: float) -> Trend:
        """A trend whose sums were accumulated elsewhere (the compiled scan), on the same origin and units."""
        t = cls()
        t._origin, t._n, t._sx, t._sy, t._sxx, t._sxy, t._lo, t._hi = origin, n, sx, sy, sxx, sxy, lo, hi
        return t

    def add(self, due_ns: np.ndarray, latency_ns: np.ndarray) -> None:
        if not due_ns.size:
            return
        if self._origin is None:
            self._origin = int(due_ns[0])
        x = (due_ns - self._origin).astype(np.float64) / 1e9  # seconds since the first message
        y = latency_ns.astype(np.float64) / 1e3                # microseconds
        self._n += x.size
        self._sx += float(x.sum())
        self._sy += float(y.sum())
        self._sxx += float(np.dot(x, x))
        self._sxy += float(np.dot(x, y))
        lo, hi = float(x.min()), float(x.max())
        self._lo, self._hi = (lo, hi) if self._n == x.size else (min(self._lo, lo), max(self._hi, hi))

    def result(self) -> dict[str, float]:
        """slope_us_per_s (microseconds of latency gained per second of the run) and span_s; {} when there are
        fewer than two distinct due times."""
        n = self._n
        denominator = n * self._sxx - self._sx * self._sx
        if n < 2 or denominator <= 0:
            return {}
        slope = (n * self._sxy - self._sx * self._sy) / denominator
        return {"slope_us_per_s": slope, "span_s": self._hi - self._lo}
