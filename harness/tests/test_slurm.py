"""The Slurm example run on a real Slurm: a one-node cluster on this machine (harness/bin/slurm-cluster: munged,
slurmctld, slurmd of Debian's slurm-wlm), examples/sharding/slurm.sbatch submitted as a three-task array over a
scenario of three "days", waited for, merged, and the merged runs equal to the same scenario run unsharded; the
shards' results store drawn by `itchbench history`. A task cancelled before it ran makes the merge refuse, naming
its shard."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

import pytest

from itchbench import paths
from itchbench.runs.transports.contract import free_loopback_port

from test_sharding import outputs, run_shard

# Set-up installs slurm-wlm and munge: a machine without them fails here rather than skipping. Nothing here is
# judged by timing, so these run beside the other tests; a lock keeps to one cluster at a time (below).
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster's daemons run as root")

REPO = paths.repo_root()
CLUSTER = REPO / "harness" / "bin" / "slurm-cluster"
EXAMPLE = REPO / "examples" / "sharding" / "slurm.sbatch"
DAYS = ("seed-workload", "nasdaq-day-sample", "capacity-sample")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # One cluster at a time on the machine: two pytest workers that each took one of these tests take turns (the
    # daemons of two clusters would share the node's name and its CPUs' accounting).
    lock = open("/tmp/itchbench-slurm-tests.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    where = tmp_path_factory.mktemp("slurm")
    ports = {"ITCHBENCH_SLURMCTLD_PORT": str(free_loopback_port()), "ITCHBENCH_SLURMD_PORT": str(free_loopback_port())}
    started = subprocess.run(["bash", str(CLUSTER), "start", str(where)], capture_output=True, text=True,
                             env={**os.environ, **ports})
    try:
        assert started.returncode == 0, started.stderr
        yield {**os.environ, "SLURM_CONF": str(where / "slurm.conf")}
    finally:
        subprocess.run(["bash", str(CLUSTER), "stop", str(where)], capture_output=True)
        lock.close()  # and with it the lock


def _days(path: Path) -> Path:
    """Three days of a month, one a configuration: each a shard of its own."""
    path.write_text('name = "month"\ntransport = "sim"\n'
                    f'capture = "{REPO / "fixtures" / (DAYS[0] + ".pcap")}"\n\n'
                    + "".join(f'[[configurations]]\nlabel = "{day}"\ncapture = "{REPO / "fixtures" / (day + ".pcap")}"\n\n'
                              for day in DAYS))
    return path


def _submit(env: dict[str, str], scenario: Path, results: Path, *extra: str) -> str:
    results.mkdir(parents=True)
    done = subprocess.run(["sbatch", "--parsable", "--array=0-2", f"--chdir={REPO}",
                           f"--output={results}/slurm-%A_%a.log", f"--constraint=bench-{os.cpu_count()}vcpu",
                           f"--export=ALL,SCENARIO={scenario},RESULTS={results}", *extra, str(EXAMPLE)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split(";")[0]


def _wait(env: dict[str, str], job: str, results: Path) -> dict[str, str]:
    """Until no task of the job is queued or running; then each task's end, as squeue no longer shows it."""
    deadline = time.monotonic() + 600
    while subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True, env=env).stdout.strip():
        assert time.monotonic() < deadline, "the array did not end in 10 minutes: " + "".join(
            p.read_text() for p in results.glob("slurm-*.log"))
        time.sleep(1)
    return {p.name: p.read_text() for p in sorted(results.glob("slurm-*.log"))}


def _itchbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".venv" / "bin" / "itchbench"), *args], capture_output=True, text=True,
                          cwd=REPO)


def test_the_sbatch_array_merges_to_the_unsharded_run(cluster, tmp_path):
    scenario = _days(tmp_path / "month.toml")
    whole = run_shard(scenario, tmp_path / "whole", None)
    job = _submit(cluster, scenario, tmp_path / "results")
    logs = _wait(cluster, job, tmp_path / "results")
    assert whole.communicate()[0] and whole.returncode == 0
    assert len(logs) == 3 and all("1 run(s): 1 lossless — ok" in text for text in logs.values()), logs
    shards = [tmp_path / "results" / f"shard-{k}" for k in range(3)]
    merged = _itchbench("merge", *map(str, shards))
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout.startswith("month: 3 shards, 3 runs"), merged.stdout
    ran = sorted(d for s in shards for d in s.iterdir() if (d / "summary.json").is_file())
    assert outputs(ran) == outputs(sorted(d for d in (tmp_path / "whole").iterdir() if d.is_dir()))
    # Every day in the one store the tasks appended to, drawn across them.
    drawn = _itchbench("history", str(tmp_path / "results" / "store"), "--out", str(tmp_path / "history"))
    assert drawn.returncode == 0, drawn.stderr
    page = (tmp_path / "history" / "history.html").read_text()
    assert all(day in page for day in DAYS)


def test_a_cancelled_task_makes_the_merge_refuse_naming_its_shard(cluster, tmp_path):
    scenario = _days(tmp_path / "month.toml")
    results = tmp_path / "results"
    job = _submit(cluster, scenario, results, "--hold")  # held: the cancel comes before task 1 can start
    cancelled = subprocess.run(["scancel", f"{job}_1"], capture_output=True, text=True, env=cluster)
    assert cancelled.returncode == 0, cancelled.stderr
    subprocess.run(["scontrol", "release", job], check=True, capture_output=True, env=cluster)
    _wait(cluster, job, results)
    present = sorted(p.name for p in results.glob("shard-*"))
    assert present == ["shard-0", "shard-2"]
    merged = _itchbench("merge", *(str(results / p) for p in present))
    assert merged.returncode == 2
    assert "shard 1/3 missing" in merged.stderr
