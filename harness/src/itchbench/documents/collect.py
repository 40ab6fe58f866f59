"""Run directories -> configurations: the runs of one label are the
repetitions of one configuration, never pooled into one sample."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import rundir
from ..analysis import logs
from ..gateways import provenance


class DocumentError(ValueError):
    """The runs cannot make a document; the message says why."""


@dataclass(frozen=True)
class RunRecord:
    dir: Path
    manifest: dict[str, Any]
    summary: dict[str, Any]

    @property
    def run_id(self) -> str:
        return str(self.manifest["run_id"])

    @property
    def label(self) -> str:
        return str(self.manifest.get("label", self.run_id))

    @property
    def order(self) -> tuple[str, int, str]:
        """When the run was made: to the second, then (itchbench since 2026-12-07) to the nanosecond."""
        return (str(self.manifest.get("created_utc", "")), int(self.manifest.get("created_ns") or 0), self.run_id)

    def stage(self, stage: str) -> dict[str, Any] | None:
        return self.summary.get("latency", {}).get("stages", {}).get(stage)


@dataclass(frozen=True)
class Configuration:
    label: str
    runs: list[RunRecord]  # in the order they were made

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() or c in "-_." else "-" for c in self.label)


def run_dirs(path: Path) -> list[Path]:
    """A run directory, or every run directory below a folder."""
    path = Path(path)
    if not path.exists():
        raise DocumentError(f"{path}: no such file or folder")
    found = rundir.find_run_dirs(path)
    if not found:
        raise DocumentError(f"{path}: neither a run directory nor a folder of them (no manifest.json with a "
                            "summary.json beside it)")
    return found


def collect(paths: list[Path]) -> list[Configuration]:
    """Configurations in the order of their first run; runs of a label in the
    order they were made; the same run given twice, or a copy of it (its
    run_id), counts once: counted twice, one measurement was two repetitions."""
    runs: list[RunRecord] = []
    for d in rundir.distinct_runs([d for path in paths for d in run_dirs(path)]):
        record = RunRecord(d, *rundir.read_run(d, rundir.REPORT_NEEDS))
        why = logs.not_whole(d, record.summary)
        if why:
            raise DocumentError(f"{why}; no document is made from part of a run")
        changed = logs.changed_since_run(d, record.summary)
        if changed:
            raise DocumentError(f"{changed}; a document would vouch for its run's verdict over them")
        runs.append(record)
    runs.sort(key=lambda r: r.order)
    # Runs of different gateways (or of different builds of one) are never repetitions of one configuration: their
    # labels carry the gateway when the runs hold more than one.
    several = len({gateway_of(r) for r in runs}) > 1
    by_label: dict[str, list[RunRecord]] = {}
    for r in runs:
        by_label.setdefault(f"{gateway_of(r)} {r.label}" if several else r.label, []).append(r)
    return [config for label, rs in by_label.items() for config in _by_workload(label, rs)]


def _by_workload(label: str, runs: list[RunRecord]) -> list[Configuration]:
    """The runs of one label as configurations of one workload each: runs of two captures, or with levels 5 and 10
    (two `itchbench sim` runs are both labelled sim), are not repetitions of one configuration, and were pooled as
    such. Where they differ, each label says its values of the keys that differ (rundir.told_apart)."""
    kinds: dict[str, list[RunRecord]] = {}
    shapes: dict[str, dict[str, Any]] = {}
    for r in runs:
        shape = rundir.run_workload(r.manifest)
        key = rundir.canonical_json(shape)
        kinds.setdefault(key, []).append(r)
        shapes[key] = shape
    if len(kinds) == 1:
        return [Configuration(label, runs)]
    # A capture by its file's name (its first run's), and its digest too where two of them share a name.
    names = {key: Path(str((rs[0].manifest.get("scenario") or {}).get("capture", ""))).name
             for key, rs in kinds.items()}

    def capture(key: str, k: str) -> str | None:
        if k != "capture":
            return None
        shared = any(names[other] == names[key] and shapes[other]["capture"] != shapes[key]["capture"]
                     for other in kinds)
        return names[key] + (f" (sha256 {str(shapes[key]['capture'])[:12]})" if shared else "")
    words = rundir.told_apart(shapes, capture)
    return [Configuration(f"{label} ({words[key]})", rs) for key, rs in kinds.items()]


def gateway_of(r: RunRecord) -> str:
    """The gateway a run measured, in a few words: a brought gateway's name and commit (manifest
    gateway_under_test), or the built-in one at itchbench's commit."""
    under = r.manifest.get("gateway_under_test") or {}
    if under.get("name"):
        return provenance.label(under)
    git = (r.manifest.get("environment") or {}).get("git") or {}
    commit = str(under.get("commit") or git.get("commit") or "?")[:12]
    return f"itchbench built-in {commit}{'+dirty' if git.get('dirty') and not under.get('commit') else ''}"


def choose_baseline(configs: list[Configuration], label: str | None) -> Configuration:
    if label is None:
        return configs[0]
    for c in configs:
        if c.label == label:
            return c
    raise DocumentError(f"--baseline {label!r} is not a configuration of these runs "
                        f"({', '.join(c.label for c in configs)})")
