"""Run directories: created once, never overwritten; JSON written atomically."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import atomic
from .utf8 import not_utf8


# A gateway brought through its contract writes in this folder of the run directory ({out}), so that nothing it
# writes can be taken for the run's own files (unless it writes those: white_box = "run-files").
GATEWAY_OUT = "gateway-out"


class RunDirError(RuntimeError):
    """The run directory cannot be created or is not a run directory."""


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


# Tables that judge a run's figures, or plan the runs, without shaping any run: left out of its identity, so that
# a target set or a sweep added leaves the hash of the same workload as it was.
NOT_IDENTITY = ("targets", "sweep")
# Keys added after runs were stored, at the value that means "as before": left out at that value, so a workload's
# hash stays what its stored runs carry.
IDENTITY_ONLY_WHEN_SET = {"levels": 0, "lines.wait_us": 0}


def scenario_hash(resolved: dict[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(_shaping(resolved)).encode()).hexdigest()


# Keys of a resolved scenario that say where its parts are, or describe it, rather than how a run goes: two runs
# that differ only there ran one workload, and are compared (the capture's content is the manifest's
# capture_sha256, so the same session copied to another folder or clone is the same; the gateway's contract is
# what a comparison is of; repetitions is how many runs, not how each goes). Their scenario hashes still differ.
NOT_WORKLOAD = ("capture", "gateway_file", "description", "repetitions")


def workload(resolved: dict[str, Any]) -> dict[str, Any]:
    """A run's resolved scenario as the workload it ran: the keys scenario_hash covers less NOT_WORKLOAD, flat
    (`table.key`)."""
    return _flat({k: v for k, v in _shaping(resolved).items() if k not in NOT_WORKLOAD})


def run_workload(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a run ran, as two runs are repetitions of one workload when equal: workload() of its scenario, and its
    capture by its content (`capture`: its sha256), wherever the file lay and whatever its name."""
    return {**workload(manifest.get("scenario") or {}), "capture": manifest.get("capture_sha256")}


# Of the keys in which workloads differ, this many are named to tell them apart.
KEYS_NAMED = 3


def told_apart(workloads: dict[str, dict[str, Any]],
               said: Callable[[str, str], str | None] = lambda _, __: None) -> dict[str, str]:
    """For workloads by name (run_workload's), the words that tell each from the others: its values of the keys
    that differ (the capture first, then by name; at most KEYS_NAMED), as `key value, key value`; a key a
    workload lacks stands at its "as before" value (IDENTITY_ONLY_WHEN_SET). said(name, key) may word a key's
    value itself (None: as it is; a capture as the start of its digest)."""
    keys = sorted({k for w in workloads.values() for k in w}, key=lambda k: (k != "capture", k))
    differ = [k for k in keys if len({canonical_json(w.get(k)) for w in workloads.values()}) > 1][:KEYS_NAMED]

    def value(name: str, key: str) -> str:
        given = said(name, key)
        if given is not None:
            return given
        v = workloads[name].get(key, IDENTITY_ONLY_WHEN_SET.get(key))
        return f"sha256 {str(v)[:12]}" if key == "capture" else str(v)
    return {name: ", ".join(f"{k} {value(name, k)}" for k in differ) for name in workloads}


def workload_differences(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """The keys of two runs' workloads (workload()) whose values differ: (key, a's value, b's); a key one of them
    lacks (made by another itchbench) has None there."""
    flat_a, flat_b = workload(a), workload(b)
    return [(k, flat_a.get(k), flat_b.get(k)) for k in sorted(flat_a.keys() | flat_b.keys())
            if flat_a.get(k) != flat_b.get(k)]


def _shaping(resolved: dict[str, Any]) -> dict[str, Any]:
    """What of a resolved scenario is a run's identity (NOT_IDENTITY and IDENTITY_ONLY_WHEN_SET)."""
    return {k: _unset_left_out(k, v) for k, v in resolved.items()
            if k not in NOT_IDENTITY and not (k in IDENTITY_ONLY_WHEN_SET and v == IDENTITY_ONLY_WHEN_SET[k])}


def _flat(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _unset_left_out(table: str, value: Any) -> Any:
    """A table without its keys that stand at their "as before" value (IDENTITY_ONLY_WHEN_SET's table.key)."""
    if not isinstance(value, dict):
        return value
    return {k: v for k, v in value.items() if IDENTITY_ONLY_WHEN_SET.get(f"{table}.{k}", object()) != v}


def new_run_id(label: str) -> str:
    """Readable and unique: UTC time, label, 4 random hex digits."""
    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{label}-{secrets.token_hex(2)}"


@contextlib.contextmanager
def create(path: Path) -> Iterator[Path]:
    """Make a new, empty run directory (or take an empty one), refusing one that has content, and hold it against
    any other run until the body has written its first file: two runs given the same --out at once had both found
    it empty, both written into it and both said LOSSLESS, each of a BBO log the other had cut."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        held = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise RunDirError(f"cannot create run directory {path}: {e.strerror}") from e
    try:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise RunDirError(f"{path} is being taken by another run at this moment; runs are never overwritten "
                              "(choose a new --out)") from e
        except OSError:
            pass  # a file system that has no locks (ENOLCK): the emptiness check alone, as before the lock
        if any(path.iterdir()):
            raise RunDirError(f"{path} already holds files; runs are never overwritten (choose a new --out)")
        if not os.access(path, os.W_OK):
            raise RunDirError(f"run directory {path} is not writable")
        yield path
    finally:
        os.close(held)


def require_regular_output(path: Path) -> None:
    """RunDirError unless path is absent or a regular file (symlinks followed): an output written to a file of its
    own and renamed into place would replace a device, a pipe or a folder there (an export to /dev/stdout, as
    root, put a CSV file in place of /dev/stdout)."""
    if path.exists() and not path.is_file():
        raise RunDirError(f"{path}: not a regular file (a device, a pipe or a folder): an output is written to a "
                          "file of its own and renamed into place, which would replace it")


def write_json(path: Path, obj: Any) -> None:
    """Stable bytes (sorted keys, 2-space indent, newline), written atomically."""
    require_regular_output(path)
    atomic.write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_json_new(path: Path, obj: Any) -> Path:
    """write_json into path, or beside it under a numbered name when path is taken (atomic.write_text_new);
    returns where."""
    require_regular_output(path)
    return atomic.write_text_new(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


# summary.json's key for a run whose report failed (why): its summary then holds none of the report's figures
# (latency), though its verdict stands. `itchbench report RUN_DIR` writes the report and removes the key.
REPORT_NOT_WRITTEN = "report_not_written"


def report_missing(run_dir: Path, summary: dict[str, Any]) -> str:
    """'' for a run whose report was written; else what is missing, and how to write it."""
    why = summary.get(REPORT_NOT_WRITTEN)
    return (f"{run_dir}: its report was not written ({why}), so its summary holds none of the report's figures "
            f"(`itchbench report {run_dir}` writes them)") if why else ""


def set_report_not_written(run_dir: Path, why: str | None) -> None:
    """Records in the run's summary that its report was not written (why), or (None) that it now is."""
    summary = read_json(run_dir / "summary.json")
    if why is None and REPORT_NOT_WRITTEN not in summary:
        return
    if why is None:
        del summary[REPORT_NOT_WRITTEN]
    else:
        summary[REPORT_NOT_WRITTEN] = why
    write_json(run_dir / "summary.json", summary)


def read_json(path: Path, needs: tuple[str, ...] = ()) -> dict[str, Any]:
    """A run's JSON file (each is an object); RunDirError for one missing, not UTF-8, not JSON or not an object, or
    without one of the keys `needs` (what the caller reads of it: REPORT_NEEDS, HISTORY_NEEDS)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        run = Path(path).parent
        if (run / "manifest.json").is_file() and not (run / "summary.json").is_file():
            # A run's manifest is its first file and its summary its last: between them it runs.
            missing = "summary.json" if path.name == "summary.json" else f"{path.name} and summary.json"
            raise RunDirError(f"{run} is a run that has not ended ({missing} not written): it is still running, "
                              "or it was killed before its end") from e
        raise RunDirError(f"{run} is not a run directory: {path.name} is missing") from e
    except UnicodeDecodeError as e:
        raise RunDirError(not_utf8(path, e, "JSON")) from e
    except json.JSONDecodeError as e:
        raise RunDirError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: a JSON {_json_type(data)} where an object ({{...}}) is written")
    missing = [key for key in needs if key not in data]
    if missing:
        raise RunDirError(f"{path}: no {', '.join(map(repr, missing))}, which every run's has (written by another "
                          "version of itchbench, or edited since): not read as a run's")
    return data


# Keys every run's manifest and summary hold, whatever its end, that a results store (HISTORY_NEEDS) and a report or
# document (REPORT_NEEDS) read: one without them (written by another version, or edited) ended report, doc and
# history in a KeyError.
HISTORY_NEEDS = {"manifest.json": ("run_id", "label", "created_utc", "scenario"),
                 "summary.json": ("transport", "verdict")}
REPORT_NEEDS = {"manifest.json": (*HISTORY_NEEDS["manifest.json"], "environment", "scenario_hash", "capture_sha256"),
                "summary.json": (*HISTORY_NEEDS["summary.json"], "complete")}


def read_run(run_dir: Path, needs: dict[str, tuple[str, ...]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A finished run's manifest and summary, each read_json'd with the keys its reader needs (HISTORY_NEEDS,
    REPORT_NEEDS)."""
    return (read_json(Path(run_dir) / "manifest.json", needs["manifest.json"]),
            read_json(Path(run_dir) / "summary.json", needs["summary.json"]))


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "null")


def is_run_dir(path: Path) -> bool:
    """A finished-enough run directory: its manifest and its summary are there."""
    return (path / "manifest.json").is_file() and (path / "summary.json").is_file()


def find_run_dirs(path: Path) -> list[Path]:
    """path itself when it is a run directory, else every run directory below it, sorted; [] when none."""
    path = Path(path)
    if is_run_dir(path):
        return [path]
    return sorted(p.parent for p in path.rglob("manifest.json") if is_run_dir(p.parent))


def run_identity(run_dir: Path) -> str:
    """What one run is wherever it lies (a copy of it is the same run): its run_id, and the nanosecond it was made
    where recorded, since two runs of one label made in one second share an id's first part and may its 4 random
    hex digits."""
    manifest = read_json(Path(run_dir) / "manifest.json", ("run_id",))
    return f"{manifest['run_id']}@{manifest.get('created_ns', '')}"


def distinct_runs(dirs: list[Path]) -> list[Path]:
    """dirs less each that holds a run an earlier one holds (the same folder, or a copy of it: run_identity): one
    measurement counted twice was two repetitions, its intervals narrowed on nothing."""
    kept: dict[str, Path] = {}
    for d in dirs:
        kept.setdefault(run_identity(d), d)
    return list(kept.values())
