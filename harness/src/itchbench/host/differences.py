"""Where two hosts differ, fact by fact (a manifest's environment.host): what compare and merge flag beside the
figures, since a THP mode or an isolated CPU can move a p99 more than the change under test."""

from __future__ import annotations

from typing import Any

# Facts that change from one moment to the next without the host being another: not differences.
VOLATILE = ("cpu_frequency_khz.current",)


def flatten(facts: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(facts, dict):
        out: dict[str, Any] = {}
        for key, value in facts.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    if isinstance(facts, list):
        return {prefix[:-1]: repr(facts)}
    return {prefix[:-1]: facts}


def differences(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    """'thp.enabled: madvise vs always', one a fact; [] when either side did not record its host."""
    if not a or not b:
        return []
    fa, fb = flatten(a), flatten(b)
    return [f"{key}: {fa.get(key)!s} vs {fb.get(key)!s}" for key in sorted(set(fa) | set(fb))
            if key not in VOLATILE and fa.get(key) != fb.get(key)]
