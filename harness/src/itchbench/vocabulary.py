"""Names the command line offers as choices, defined once here for the modules
that implement them: percentile methods, export formats, bisect metrics.
Nothing heavy is imported, so that `itchbench --help` starts at once."""

from __future__ import annotations

# Percentile methods (analysis.stats): numpy's, and the two computed exactly from one partition.
HIGHER = "higher"
NEAREST_RANK = "nearest_rank"
DEFAULT_METHOD = HIGHER
METHODS = [HIGHER, NEAREST_RANK, "linear", "lower", "midpoint", "inverted_cdf", "closest_observation"]

# What `itchbench export` writes (analysis.export).
EXPORT_FORMATS = ("parquet", "csv")

# What `itchbench bisect` measures a commit by (compare.bisect).
BISECT_METRICS = ("instructions", "bbo", "latency")
# What bisect makes of a commit whose gateway builds but cannot be run (docs/compare.md, "Bisect").
BISECT_CANNOT_RUN = ("stop", "skip", "bad")
