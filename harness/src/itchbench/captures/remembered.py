"""What reading a whole capture tells — its SHA-256, itch-inspect's count —
remembered on disk per version of the file, so a capture replayed again (a
new build against the same day, the next round of a benchmark) is not read
twice more before its run: 1.3 s apiece for 50 M messages. A tool's version
is remembered the same way, per version of its binary (tshark takes a
quarter of a second to say it).

A version is the file as the kernel identifies it: its device, inode, size
and modification and change times in ns. Any write, truncation, rename onto
it or `touch` changes the change time, which no call a user makes can set
back (`os.utime` sets it to now), so a remembered fact is never that of
other bytes. This is how DVC and git's index trust a file unchanged, with
git's guard against racing the clock: a file changed in the last second is
not remembered, since a kernel that stamps times by the tick (before
Linux 6.13's fine-grained change times) can give two writes within one tick
the same time. Kept
under reports/cache/facts/, one small JSON file a fact; `itchbench cache
prune` removes them with the rest.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import cache

RACY_S = 1.0  # a file changed this recently is computed again next time


def version_of(path: Path) -> str:
    """The file's identity for as long as its bytes stay the same (a hex digest of its path and stat)."""
    st = os.stat(path)
    identity = f"{Path(path).resolve()}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}"
    return hashlib.sha256(identity.encode()).hexdigest()[:32]


def remembered(path: Path, what: str, compute: Callable[[], Any], *, tool: Path | None = None) -> Any:
    """compute()'s JSON value for this version of the file (and of the tool that computes it, when one is named: a
    rebuilt itch-inspect counts again): read back when this version already has it, else computed and kept —
    unless the file changed while it was computed or within RACY_S before (then the value is returned, not
    kept)."""
    before = version_of(path)
    made_by = f"-{version_of(tool)}" if tool is not None else ""
    entry = cache.root() / cache.FACTS / f"{before}{made_by}-{what}.json"
    try:
        return json.loads(entry.read_text())["value"]
    except (OSError, ValueError, KeyError):
        pass  # not kept yet, or a file cut short by a crash: computed again below
    value = compute()
    if version_of(path) == before and time.time() - os.stat(path).st_ctime > RACY_S:
        text = json.dumps({"path": str(path), "what": what, "value": value}, sort_keys=True)
        cache.made_once(entry, lambda partial: partial.write_text(text))
    return value


def forget(path: Path) -> int:
    """Drop every fact remembered of this version of the file, so that the next run reads it as a new file's first
    run does (a benchmark's first round); how many were dropped."""
    dropped = 0
    for entry in (cache.root() / cache.FACTS).glob(f"{version_of(path)}*.json"):
        entry.unlink(missing_ok=True)
        dropped += 1
    return dropped
