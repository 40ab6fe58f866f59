"""Comparing two builds of the gateway: revisions built once and cached,
interleaved runs, statistical and exact verdicts, output differences, bisect."""
