"""A scenario's matrix split over N independent runners, and put back together.

`--shard K/N` (or ITCHBENCH_SHARD=K/N; K counts from 0, as JOB_COMPLETION_INDEX
and SLURM_ARRAY_TASK_ID do) runs the K-th of N parts of the plan (every
configuration x repetition). The split is deterministic and balanced by each
run's expected cost (the capture's replay time for live transports, its size
for simulation: runs/deadlines.py): the longest runs first, each to the part
with the least so far. A shard writes its run directories and a shard record,
`shard-K-of-N.json`, naming the scenario, the inputs' digests, the machine
class and its runs; `merge` checks that records belong together and that
every part is there exactly once (docs/sharding.md).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .. import rundir
from ..analysis import logs
from ..captures.fixtures import sha256_of
from ..captures.inspect import facts_of
from . import deadlines, environment

ENV = "ITCHBENCH_SHARD"
RECORD = re.compile(r"^shard-(\d+)-of-(\d+)\.json$")
LIVE_START_S = 3.0  # a live run's fixed cost: namespace, sender and gateway start, drain


class ShardError(ValueError):
    """Shards that do not belong together, or a shard that cannot be read; the message names it."""


@dataclass(frozen=True)
class Shard:
    index: int  # 0 .. count - 1
    count: int

    @property
    def name(self) -> str:
        return f"shard {self.index}/{self.count}"

    @property
    def record_name(self) -> str:
        return f"shard-{self.index}-of-{self.count}.json"


def parse(text: str) -> Shard:
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 0 <= int(m.group(1)) < int(m.group(2)):
        raise ShardError(f"a shard is K/N with 0 <= K < N (K counts from 0), not {text!r}")
    return Shard(int(m.group(1)), int(m.group(2)))


def requested(arg: str | None) -> Shard | None:
    """--shard, else ITCHBENCH_SHARD, else None (the whole plan)."""
    text = arg if arg is not None else os.environ.get(ENV)
    return parse(text) if text else None


def expected_seconds(values: dict[str, Any]) -> float:
    """A run's expected cost: what its sender needs (live) or what its capture's size suggests (simulation)."""
    capture = Path(values["capture"])
    if values["transport"] == "sim":
        return deadlines.sim_seconds(capture.stat().st_size, capture.suffix in (".gz", ".zst"))
    facts = facts_of(capture, values.get("feed", ""))
    sender = (deadlines.serial_sender_seconds(values, facts) if values["transport"] == "serial"
              else deadlines.udp_sender_seconds(values, facts))
    return LIVE_START_S + sender


def assign(costs: Sequence[float], count: int) -> list[int]:
    """The shard of each planned run: longest first (ties in plan order), each to the least loaded shard (ties to
    the lowest index). The same costs give the same split on every machine."""
    load = [0.0] * count
    out = [0] * len(costs)
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        k = min(range(count), key=lambda s: (load[s], s))
        out[i] = k
        load[k] += costs[i]
    return out


def identity(scenario_file: Path, plan: list[tuple[Any, int]]) -> dict[str, Any]:
    """What every shard of one sharded scenario run shares: the scenario (its text and every resolved
    configuration), the inputs' digests, and the whole plan."""
    return identity_of(scenario_file.stem, scenario_file.read_text(), [c.values for c, _ in plan],
                       [[c.label, rep] for c, rep in plan])


def identity_of(name: str, text: str, configurations: list[dict[str, Any]], plan: list[list[Any]],
                **extra: Any) -> dict[str, Any]:
    """The shared identity of any sharded work: its name, a hash of its text and resolved configurations (paths
    reduced to names: checkouts differ from runner to runner, and the files' contents are hashed as inputs), the
    inputs' digests, the whole plan, and whatever else must match (extra: the revisions compared …)."""
    captures = sorted({str(Path(v["capture"]).resolve()) for v in configurations})
    located = [{k: Path(v).name if k in ("capture", "gateway_file") and v else v for k, v in c.items()}
               for c in configurations]
    return {
        "scenario": name,
        "scenario_sha256": rundir.scenario_hash({"text": text, "configurations": located, **extra}),
        "inputs": {Path(p).name: sha256_of(Path(p)) for p in captures},
        "plan": plan,
        **extra,
    }


def machine_class() -> dict[str, Any]:
    """What must match for shards' timings to be set side by side: the CPU model and count, the kernel."""
    env = environment.snapshot()
    return {"cpu_model": env["cpu_model"], "cpu_count": env["cpu_count"], "kernel": env["kernel"]}


def write_record(root: Path, shard: Shard, ident: dict[str, Any], runs: list[tuple[list[Any], Path]],
                 started: float, **results: Any) -> Path:
    """shard-K-of-N.json in root: the identity, this part, the machine class, and its runs (each its plan unit
    and its run directory, relative to root) or other results (a sharded bisect's measurements)."""
    record = {**ident, "shard": shard.index, "count": shard.count, "machine": machine_class(),
              "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
              "runs": [{"unit": unit, "run_dir": os.path.relpath(path, root)} for unit, path in runs], **results}
    root.mkdir(parents=True, exist_ok=True)  # a shard may have been given no run at all
    path = root / shard.record_name
    rundir.write_json(path, record)
    return path


@dataclass
class Merged:
    records: list[dict[str, Any]]
    units: list[tuple[Any, ...]]  # the plan, in order
    run_dirs: list[Path]          # each unit's run (none for work that writes no runs)


def find_records(dirs: Sequence[Path]) -> list[Path]:
    found = []
    for d in dirs:
        found += sorted(p for p in Path(d).iterdir() if RECORD.match(p.name)) if Path(d).is_dir() else []
    return found


def load_together(dirs: Sequence[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """The shard records found in dirs, checked to be every part of one sharded work, once each, on one machine
    class; ShardError naming the missing, duplicated or foreign one otherwise."""
    paths = find_records(dirs)
    if not paths:
        raise ShardError("no shard record (shard-K-of-N.json) in " + ", ".join(str(d) for d in dirs))
    records = []
    for p in paths:
        try:
            record = rundir.read_json(p)
        except (OSError, ValueError, rundir.RunDirError) as e:
            raise ShardError(f"{p}: not a readable shard record: {e}") from e
        wrong = _not_a_record(record)
        if wrong:
            raise ShardError(f"{p}: not a shard record: {wrong}")
        records.append((p, record))
    first_path, first = records[0]
    for p, r in records[1:]:
        for key, what in (("scenario_sha256", "scenario"), ("inputs", "inputs' digests"), ("count", "shard count"),
                          ("plan", "plan")):
            if r.get(key) != first.get(key):
                raise ShardError(f"{p} is foreign: its {what} differs from {first_path}'s "
                                 f"({r.get(key)!r} against {first.get(key)!r})"[:600])
        if r.get("machine") != first.get("machine"):
            raise ShardError(f"{p} ran on another machine class ({r.get('machine')}) than {first_path} "
                             f"({first.get('machine')}): their timings cannot be set side by side")
    count = int(first["count"])
    seen: dict[int, Path] = {}
    for p, r in records:
        k = int(r["shard"])
        if k in seen:
            raise ShardError(f"shard {k}/{count} is there twice: {seen[k]} and {p}")
        seen[k] = p
    missing = [k for k in range(count) if k not in seen]
    if missing:
        raise ShardError(f"shard {', '.join(f'{k}/{count}' for k in missing)} missing: found only "
                         f"{', '.join(f'{k}/{count}' for k in sorted(seen))}")
    return records


def _not_a_record(r: dict[str, Any]) -> str:
    """What makes a shard record's JSON no record ("" when it is one): the fields merge reads, of their types."""
    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if not (whole(r.get("count")) and r["count"] >= 1):
        return f"its count is {r.get('count')!r}, not a number of shards"
    if not (whole(r.get("shard")) and 0 <= r["shard"] < r["count"]):
        return f"its shard is {r.get('shard')!r}, not one of 0 to {r['count'] - 1}"
    if not (isinstance(r.get("plan"), list) and all(isinstance(u, list) for u in r["plan"])):
        return "its plan is not a list of units"
    if not (isinstance(r.get("runs"), list) and all(isinstance(run, dict) and isinstance(run.get("run_dir"), str)
                                                    and isinstance(run.get("unit"), list) for run in r["runs"])):
        return "its runs are not a list of run directories and units"
    return ""


def merge(dirs: Sequence[Path]) -> Merged:
    """The runs of every part of one sharded run, in plan order; ShardError when a part or a run is missing."""
    records = load_together(dirs)
    by_unit: dict[tuple[Any, ...], Path] = {}
    for p, r in records:
        for run in r["runs"]:
            d = p.parent / run["run_dir"]
            if not (d / "summary.json").is_file():
                raise ShardError(f"{p} lists {run['run_dir']}, which is not a finished run directory beside it")
            summary = rundir.read_json(d / "summary.json")
            why = logs.not_whole(d, summary) or logs.changed_since_run(d, summary)
            if why:
                raise ShardError(f"{p} lists {why}; a merge takes whole runs, as their runs left them")
            by_unit[tuple(run["unit"])] = d
    plan = [tuple(u) for u in records[0][1]["plan"]]
    absent = [u for u in plan if u not in by_unit]
    if absent:
        raise ShardError("the shards hold no run of " + ", ".join(" ".join(map(str, u)) for u in absent[:5]))
    return Merged([r for _, r in records], plan, [by_unit[u] for u in plan])
