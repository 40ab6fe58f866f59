"""itchbench: deterministic ITCH 5.0 replay testbench (harness side)."""

__version__ = "0.1.0"
