"""Capacity: what a run achieved against what it was offered (measures), the
bounds a scenario sets on it (targets), and load sweeps to saturation (sweep).
docs/capacity.md is the reference."""
