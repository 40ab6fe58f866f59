"""What a run's `levels` says (docs/book-and-bbo.md, "Depth" and "Every level"): 0, no depth; 1 to 64, the top N
price levels a side; "all", each level a message changed. Kept apart from the log readers so that a command's
--help and its usage errors need no numpy."""

from __future__ import annotations

from typing import Union

ALL_LEVELS = "all"
MAX_DEPTH_LEVELS = 64
Levels = Union[int, str]  # 0, 1 to MAX_DEPTH_LEVELS, or ALL_LEVELS


def parse_levels(text: str | int) -> Levels:
    """A levels value as users write it (a scenario's `levels`, `--levels`): 0 to 64, or "all"."""
    if text == ALL_LEVELS:
        return ALL_LEVELS
    levels = -1
    if isinstance(text, int) and not isinstance(text, bool):
        levels = text
    elif isinstance(text, str) and text.isdigit():
        levels = int(text)
    if not 0 <= levels <= MAX_DEPTH_LEVELS:
        raise ValueError(f"{text!r}: levels take 0 to {MAX_DEPTH_LEVELS} (levels a side), or \"{ALL_LEVELS}\"")
    return levels
