"""Captures: what they hold, the committed fixtures, their golden digests,
deterministic faults, and the forms the transports need."""
