"""Fixtures: each regenerated from its recipe and checked by sha256, and its
BBO stream in simulation checked against the golden digest. Most are
committed; a large one (committed = false) is made by set-up from its recipe
and checked against the same sha256 (`itchbench fixtures ensure`)."""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import atomic, paths
from ..tools import run_tool
from .digest import sim_bbo
from .remembered import remembered

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Fixture:
    name: str
    file: str
    tool: str
    args: list[str]
    sha256: str
    description: str = ""
    golden: dict[str, Any] = field(default_factory=dict)
    committed: bool = True  # false: made by set-up from the recipe (too large for the repository)
    compare_workload: bool = True  # false: a special-purpose input (the mutant zoo's), not one of compare's defaults

    @property
    def path(self) -> Path:
        return paths.fixtures_dir() / self.file

    def recipe(self) -> str:
        return " ".join([self.tool, *self.args, "--out", self.file])


def sha256_of(path: Path) -> str:
    """The file's SHA-256, read once per version of the file (captures/remembered.py)."""
    return remembered(path, "sha256", lambda: _sha256_read(path))


def _sha256_read(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_manifest(directory: Path | None = None) -> list[Fixture]:
    directory = directory or paths.fixtures_dir()
    data = json.loads((directory / MANIFEST).read_text())
    return [Fixture(**entry) for entry in data["fixtures"]]


def save_manifest(fixtures: list[Fixture], directory: Path | None = None) -> None:
    directory = directory or paths.fixtures_dir()
    entries = [f.__dict__ for f in fixtures]
    text = json.dumps({"fixtures": entries}, indent=2, sort_keys=False) + "\n"
    atomic.write_text(directory / MANIFEST, text)


def regenerate(fx: Fixture, out: Path) -> Path:
    """Run the fixture's recipe, writing to out."""
    run_tool(fx.tool, [*fx.args, "--out", out])
    return out


class FixtureError(RuntimeError):
    """A fixture's recipe does not give the manifest's bytes."""


def ensure(fx: Fixture) -> bool:
    """A fixture made by set-up: made from its recipe when missing or not the manifest's bytes. True when made."""
    if fx.path.is_file() and sha256_of(fx.path) == fx.sha256:
        return False
    tmp = regenerate(fx, fx.path.with_name(fx.path.name + ".new"))
    got = sha256_of(tmp)
    if got != fx.sha256:
        tmp.unlink()
        raise FixtureError(f"{fx.file}: its recipe ({fx.recipe()}) gives sha256 {got[:16]}…, the manifest says "
                           f"{fx.sha256[:16]}…")
    tmp.replace(fx.path)
    return True


def golden_of(capture: Path) -> dict[str, Any]:
    """The BBO digest and event count of the capture in simulation, for the manifest."""
    digest, events = sim_bbo(capture)
    return {"bbo_digest": digest, "bbo_events": events}


@dataclass(frozen=True)
class Verdict:
    fixture: Fixture
    committed_sha256: str | None
    regenerated_sha256: str
    golden: dict[str, Any] | None  # the committed file's BBO digest and events now; None if missing

    @property
    def ok(self) -> bool:
        return (self.committed_sha256 == self.fixture.sha256 == self.regenerated_sha256
                and bool(self.fixture.golden) and self.golden == self.fixture.golden)

    def explain(self) -> str:
        if self.ok:
            return (f"{self.fixture.file}: ok (sha256 {self.fixture.sha256[:16]}…, "
                    f"BBO {self.fixture.golden['bbo_events']:,} events {self.fixture.golden['bbo_digest'][7:23]}…)")
        parts = [f"{self.fixture.file}: MISMATCH"]
        if self.committed_sha256 is None:
            parts.append("committed file missing")
        elif self.committed_sha256 != self.fixture.sha256:
            parts.append(f"committed file {self.committed_sha256[:16]}… != manifest {self.fixture.sha256[:16]}…")
        if self.regenerated_sha256 != self.fixture.sha256:
            parts.append(f"recipe now gives {self.regenerated_sha256[:16]}… != manifest {self.fixture.sha256[:16]}…")
        if not self.fixture.golden:
            parts.append("the manifest has no golden BBO digest")
        elif self.golden is not None and self.golden != self.fixture.golden:
            parts.append(f"simulation now gives BBO {self.golden['bbo_digest']} ({self.golden['bbo_events']} events) "
                         f"!= golden {self.fixture.golden.get('bbo_digest')} ({self.fixture.golden.get('bbo_events')} events)")
        return "; ".join(parts)


def verify(fx: Fixture) -> Verdict:
    """Regenerate from the recipe, hash both files, and replay the committed one
    in simulation against its golden BBO digest."""
    with tempfile.TemporaryDirectory(prefix="itchbench-fixture-") as tmp:
        fresh = regenerate(fx, Path(tmp) / fx.file)
        regenerated = sha256_of(fresh)
    committed = sha256_of(fx.path) if fx.path.is_file() else None
    golden = golden_of(fx.path) if committed is not None else None
    return Verdict(fx, committed, regenerated, golden)
