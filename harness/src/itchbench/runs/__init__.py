"""Runs: scenarios, run directories, transports and their processes,
reconciliation and verdicts."""
