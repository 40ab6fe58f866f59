"""Outputs written whole or not at all.

Each output is written under a hidden name of its own beside its place and renamed into it when whole: a reader
never meets a part-written file, a failed write (a full disk, an error half-way) leaves nothing that could pass for
the output, and two writers of one path never share a partial file (the one whose rename lands last is whole).
"""
from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Iterator


def partial_name(path: Path, keep_suffix: bool = False) -> Path:
    """A hidden name beside path, this process's and unlikely any other's. It ends in `.partial` so that a glob
    for the finished files' suffix (`*.parquet`) never takes it; keep_suffix adds path's own suffix after that,
    for a writer that tells a format by its file's suffix."""
    tail = path.suffix if keep_suffix else ""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(3)}.partial{tail}")


@contextlib.contextmanager
def replaced_when_whole(path: Path, keep_suffix: bool = False) -> Iterator[Path]:
    """Yields the partial name to write; when the body returns, the file there replaces path. If the body raises,
    the partial file is removed and path left as it was."""
    partial = partial_name(path, keep_suffix)
    try:
        yield partial
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    with replaced_when_whole(path) as partial:
        partial.write_text(text)


def write_text_new(path: Path, text: str) -> Path:
    """text into path, or when path is taken (another writer's output of the same name: two runs' records of one
    second) into the first free of STEM-2.SUFFIX, STEM-3.SUFFIX …; never replaces a file. Returns where."""
    partial = partial_name(path)
    try:
        partial.write_text(text)
        for n in range(1, 10_000):
            target = path if n == 1 else path.with_name(f"{path.stem}-{n}{path.suffix}")
            try:
                os.link(partial, target)  # fails on a name taken, atomically: no check-then-write race
                return target
            except FileExistsError:
                continue
            except OSError:  # a file system without hard links: a check, then the rename (racy, but whole)
                if target.exists():
                    continue
                os.replace(partial, target)
                return target
        raise FileExistsError(f"{path}: it and 9,998 numbered names beside it are taken")
    finally:
        partial.unlink(missing_ok=True)
