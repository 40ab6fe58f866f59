"""The one wording for a user's or a run's file that is not UTF-8 text, as each text file itchbench reads must be: the
file, what it should have been, and its first byte that is not, counted from the file's start."""

from __future__ import annotations

from pathlib import Path


def not_utf8(path: Path, error: UnicodeDecodeError, must_be: str, offset: int = 0) -> str:
    """`PATH: not UTF-8 text, as TOML must be (byte 3: 0xe9)`. offset: where the bytes the decoder was given begin in
    the file (a file read in blocks)."""
    at, byte = offset + error.start, error.object[error.start]
    return f"{path}: not UTF-8 text, as {must_be} must be (byte {at}: {byte:#04x})"
