"""Analysis: log readers, statistics, plots and reports of run directories."""
