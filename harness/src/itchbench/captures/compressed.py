"""Compressed captures (gzip, zstd), told apart by their magic bytes. The
gateway, itch-inspect and udp-replay read them as a stream; tools that need
a plain file (tcprewrite/tcpreplay, itch-faults, the instruction-count
slice) get one decompressed copy in reports/cache/, keyed by the compressed
file's content, made whole before it is used."""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

from .. import paths
from ..cache import made_once
from .fixtures import sha256_of

MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd"}


class DecompressError(RuntimeError):
    """The compressed capture could not be decompressed; the message says why."""


def compression_of(path: Path) -> str | None:
    with open(path, "rb") as f:
        head = f.read(4)
    return next((name for magic, name in MAGIC.items() if head.startswith(magic)), None)


def plain_copy(path: Path) -> Path:
    """path itself when it is not compressed; else its decompressed copy in the cache."""
    kind = compression_of(path)
    if kind is None:
        return path
    cache = paths.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / f"{sha256_of(path)[:16]}.decompressed"

    def decompress(partial: Path) -> None:
        try:
            if kind == "gzip":
                with gzip.open(path, "rb") as src, open(partial, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            else:
                with open(partial, "wb") as dst:
                    proc = subprocess.run(["zstd", "-dc", str(path)], stdout=dst, stderr=subprocess.PIPE, text=True)
                if proc.returncode != 0:
                    raise DecompressError(f"{path}: zstd -d failed: {proc.stderr.strip()}")
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise DecompressError(f"{path}: cannot decompress ({kind}): {e}") from e
    return made_once(out, decompress)
