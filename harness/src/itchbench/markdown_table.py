"""A value as one cell of a Markdown pipe table, wherever itchbench writes one (a run's report, a document)."""

from __future__ import annotations

from typing import Any


def cell(text: Any) -> str:
    """Safe inside a pipe table: a pipe escaped, a line end a space (a damaged capture's symbol may hold either)."""
    return str(text).replace("|", "\\|").replace("\r", " ").replace("\n", " ")
