"""The results store: every run appended as Parquet files in a hive-partitioned
dataset, read in place with DuckDB (embedded, no server) and readable unchanged
by pandas, Polars or Spark. Schema and layout: docs/history.md.

    STORE/metrics/scenario=S/configuration=C/commit_date=YYYY-MM-DD/RUN_ID.parquet
    STORE/messages/scenario=S/configuration=C/commit_date=YYYY-MM-DD/RUN_ID.parquet

Appending is safe with any number of writers: each run is files of its own,
written under a hidden temporary name in the same directory and renamed into
place, so no file is shared or changed and a half-written one is never read
(readers take `*.parquet` only). A file that cannot be read is named and
skipped, never fatal.
"""

from __future__ import annotations

import json
import re
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from .. import atomic, paths, rundir
from ..depth_levels import ALL_LEVELS

# 2: gateway and itchbench_commit; 3: commit_subject; 4: sources_id; 5: workload (older files read with them null)
SCHEMA_VERSION = 5
# One row per (run, metric): new metrics add rows, never columns.
METRICS_SCHEMA = pa.schema([
    ("schema_version", pa.int32()), ("run_id", pa.string()), ("repetition", pa.int32()),
    ("commit", pa.string()), ("commit_time", pa.timestamp("s", tz="UTC")), ("commit_depth", pa.int64()),
    ("dirty", pa.bool_()),
    ("created_utc", pa.timestamp("s", tz="UTC")), ("transport", pa.string()), ("verdict", pa.string()),
    ("cpu_model", pa.string()), ("cpu_count", pa.int32()), ("kernel", pa.string()),
    ("metric", pa.string()), ("value", pa.float64()), ("run_dir", pa.string()),
    ("gateway", pa.string()), ("itchbench_commit", pa.string()), ("commit_subject", pa.string()),
    ("sources_id", pa.string()), ("workload", pa.string()),
])
BUILT_IN = "itchbench built-in"
PARTITIONS = ("scenario", "configuration", "commit_date")


class StoreWarning(UserWarning):
    """A store file was skipped: it could not be read."""


def path_safe(value: str) -> str:
    """A partition value that is one path component (hive: key=value)."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", value) or "_"


def _git(*args: str) -> str | None:
    done = subprocess.run(["git", "-C", str(paths.repo_root()), *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _commit_time(commit: str, fallback: str) -> str:
    """The commit's own time (git, in this repository), else when the run was made."""
    return _git("show", "-s", "--format=%cI", commit) or fallback


def _commit_subject(commit: str) -> str:
    """The commit message's first line (git, in this repository), else ""."""
    return _git("show", "-s", "--format=%s", commit) or ""


def _commit_depth(commit: str) -> int | None:
    """How many commits lead to it (git rev-list --count): orders commits made within one second."""
    depth = _git("rev-list", "--count", commit)
    return int(depth) if depth else None


def _sources_id(under: dict[str, Any], git: dict[str, Any], commit: str) -> str | None:
    """What the measured build read (provenance.sources_id): recorded by the run (a gateway through its contract,
    a revision compare built), or, for the built-in gateway of a clean checkout, its sources at the commit; None
    when not known (a checkout with changes: they are not known now)."""
    if "sources_id" in under:
        return under["sources_id"] or None
    if (under.get("name") or BUILT_IN) != BUILT_IN or (not under.get("commit") and git.get("dirty") is not False):
        return None
    from ..gateways import revisions
    return revisions.measured_sources(paths.repo_root(), revisions.Revision(commit, commit, "", ""))


def metrics_of(run_dir: Path) -> dict[str, float]:
    """The run's figures by name: what compare judges (compare/session.py summary_metrics: latency percentiles per
    stage, throughput, peak RSS, wire to wire for a gateway brought by contract …), and its output counts. Wire to
    wire is left out of a run whose collector stamped events when it read them (no arrival stamp from the
    kernel): it holds the collector's wait too."""
    from ..compare.session import summary_metrics
    from ..gateways.collector import stamp_counts

    s = rundir.read_json(run_dir / "summary.json")
    out = summary_metrics(run_dir)
    if stamp_counts(s.get("wire_to_wire"))[0]:
        out = {name: v for name, v in out.items() if not name.startswith("wire_to_wire.")}
    out["bbo.events"] = float((s.get("bbo") or {}).get("events") or 0)
    if s.get("depth"):  # a run that logged depth of N levels (levels = N), or every level's changes (all)
        out["depth.events"] = float(s["depth"]["events"])
        if s["depth"]["levels"] != ALL_LEVELS:  # a number of levels; every level's is no figure to judge
            out["depth.levels"] = float(s["depth"]["levels"])
    out["lossless"] = 1.0 if s.get("lossless") else 0.0
    return out


@dataclass(frozen=True)
class RunKey:
    scenario: str
    configuration: str
    commit_date: str

    def path(self, store: Path, table: str) -> Path:
        return (store / table / f"scenario={path_safe(self.scenario)}"
                / f"configuration={path_safe(self.configuration)}" / f"commit_date={self.commit_date}")


def _write(table: pa.Table, directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{name}.parquet"
    with atomic.replaced_when_whole(final) as partial:
        pq.write_table(table, partial, compression="zstd")
    return final


def append(store: Path, run_dir: Path, *, messages: bool = True, say: Callable[[str], None] | None = None) -> Path:
    """Append a finished run: its metrics and (messages=True, when it has a latency log) its per-message latency,
    how far that is said to `say` every few seconds (a day's 50 M rows take about 20 s). Returns the metrics file.
    Appending the same run again replaces its files with the same content."""
    run_dir = Path(run_dir).resolve()
    if not (run_dir / "summary.json").is_file():
        raise ValueError(f"{run_dir}: not a finished run directory (no summary.json)")
    m, s = rundir.read_run(run_dir, rundir.HISTORY_NEEDS)
    missing = rundir.report_missing(run_dir, s)
    if missing:
        raise ValueError(f"{missing}: nothing stored, its figures not there")
    if messages:
        from ..analysis import logs
        cut = logs.cut_since_complete(run_dir, s)
        if cut:
            raise ValueError(f"{cut}: nothing stored, its messages not from part of them (--no-messages stores its "
                             "summary's figures alone)")
        # Its report counted a warm-up: its latency came from a per-message log, whose absence now is not a run
        # without one (that would store its metrics alone, and say nothing).
        if not (run_dir / "latency.lat").is_file() and "warmup_messages" in s.get("latency", {}):
            raise ValueError(f"{run_dir}: its latency log (latency.lat), which its report was made from, is gone: "
                             "nothing stored (--no-messages stores its summary's figures alone)")
    env = m.get("environment") or {}
    under = m.get("gateway_under_test") or {}
    commit = str(under.get("commit") or (env.get("git") or {}).get("commit") or "unknown")
    created = m.get("created_utc") or "1970-01-01T00:00:00Z"
    # A brought gateway's commit is in its own repository, whose time and depth its provenance recorded at run time.
    commit_time = str(under.get("commit_time") or "") or _commit_time(commit, created)
    depth = int(under["commit_depth"]) if str(under.get("commit_depth") or "").isdigit() else _commit_depth(commit)
    origin = m.get("origin") or {}
    scenario = str((m.get("scenario") or {}).get("name") or Path(origin.get("scenario_file") or "unknown").stem)
    key = RunKey(scenario, str(origin.get("configuration") or m.get("label") or "unknown"), commit_time[:10])
    figures = metrics_of(run_dir)
    n = len(figures)
    ts = lambda t: pa.scalar(t.replace("Z", "+00:00"), pa.string()).cast(pa.timestamp("s", tz="UTC"))  # noqa: E731
    columns = {
        "schema_version": [SCHEMA_VERSION] * n, "run_id": [m["run_id"]] * n,
        "repetition": [int(origin.get("repetition") or 1)] * n, "commit": [commit] * n,
        "commit_time": pa.array([ts(commit_time)] * n, pa.timestamp("s", tz="UTC")),
        "commit_depth": pa.array([depth] * n, pa.int64()),
        # A brought gateway's own tree (its provenance); the built-in's is itchbench's.
        "dirty": [bool(under.get("dirty")) if "dirty" in under else
                  bool((env.get("git") or {}).get("dirty")) and not under.get("commit")] * n,
        "created_utc": pa.array([ts(created)] * n, pa.timestamp("s", tz="UTC")),
        "transport": [s.get("transport", "")] * n, "verdict": [(s.get("verdict") or {}).get("status", "")] * n,
        "cpu_model": [env.get("cpu_model", "")] * n, "cpu_count": [int(env.get("cpu_count") or 0)] * n,
        "kernel": [env.get("kernel", "")] * n, "metric": list(figures), "value": list(figures.values()),
        "run_dir": [str(run_dir)] * n,
        # commit is the gateway's (what was measured); itchbench's own stands apart.
        "gateway": [str(under.get("name") or BUILT_IN)] * n,
        "itchbench_commit": [str((env.get("git") or {}).get("commit") or "unknown")] * n,
        "commit_subject": [str(under.get("commit_subject") or under.get("subject") or "") or _commit_subject(commit)]
        * n,
        "sources_id": [_sources_id(under, env.get("git") or {}, commit)] * n,
        "workload": [rundir.canonical_json(rundir.run_workload(m))] * n,
    }
    name = path_safe(m["run_id"])
    written = _write(pa.table(columns, schema=METRICS_SCHEMA), key.path(store, "metrics"), name)
    if messages and (run_dir / "latency.lat").is_file():
        from ..analysis import export
        directory = key.path(store, "messages")
        directory.mkdir(parents=True, exist_ok=True)
        # Written under a hidden name not ending in .parquet (export's own .partial included), renamed into place
        # when whole: readers that scan the directory (DuckDB by glob, pyarrow datasets skip hidden names) never
        # meet a half-written file.
        with atomic.replaced_when_whole(directory / f"{name}.parquet") as partial:
            export.export(run_dir, partial, fmt="parquet", say=say)
    return written


def told_apart_by_workload(rows: Any) -> None:
    """In place, on rows of the store (gateway, cpu_model, scenario, configuration, workload): a configuration
    whose runs ran more than one workload is one series a workload, its name followed by the keys that differ
    (`c (levels 5)`, rundir.told_apart; `c (workload not recorded)` for runs stored before schema 5). Every
    `itchbench sim` run is scenario sim, configuration sim: a day's capture against another's, or a scenario edited
    between commits, was judged as the build's step. Runs stored before schema 5 beside runs of one workload are
    taken as of it: a store keeps its series across the upgrade."""
    base = ["gateway", "cpu_model", "scenario", "configuration"]
    for _, g in rows.groupby(base, sort=False, dropna=False):
        kinds = g["workload"].dropna().unique()
        if len(kinds) < 2:
            continue
        words = rundir.told_apart({k: json.loads(k) for k in kinds})
        name = str(g["configuration"].iloc[0])
        rows.loc[g.index, "configuration"] = [f"{name} ({words[w]})" if isinstance(w, str) else
                                              f"{name} (workload not recorded)" for w in g["workload"]]


def readable_files(store: Path, table: str) -> list[Path]:
    """The table's finished files (temporary ones are hidden names), each checked: one that cannot be read is
    named in a StoreWarning and left out."""
    good = []
    for path in sorted((store / table).glob("*/*/*/*.parquet")):
        try:
            pq.read_metadata(path)
            good.append(path)
        except Exception as e:  # noqa: BLE001 - any unreadable file is skipped, whatever broke it
            warnings.warn(f"{path}: skipped, not a readable Parquet file ({e})", StoreWarning, stacklevel=2)
    return good


def query(store: Path, sql: str, table: str = "metrics") -> Any:
    """A DuckDB query over the table's readable files, as the view `runs` (hive partitions as columns); a pandas
    DataFrame."""
    import duckdb

    files = readable_files(store, table)
    con = duckdb.connect()
    if not files:
        raise FileNotFoundError(f"{store}: no readable {table} files")
    listing = "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"
    con.execute(f"CREATE VIEW stored AS SELECT * FROM read_parquet({listing}, hive_partitioning = true, "
                "union_by_name = true)")
    # Columns that only later schema versions write: null in a store of older files alone.
    have = {row[0] for row in con.execute("DESCRIBE stored").fetchall()}
    missing = [f.name for f in METRICS_SCHEMA if f.name not in have] if table == "metrics" else []
    con.execute("CREATE VIEW runs AS SELECT *" + "".join(f", NULL::VARCHAR AS {c}" for c in missing) + " FROM stored")
    return con.execute(sql).df()
