"""A scenario's matrix run as N shards in separate processes, merged: the same runs as the whole, unsharded.

The expected split comes from a hand calculation (longest first, each to the least loaded shard); the expected
outputs from the unsharded run of the same scenario.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from itchbench import paths, rundir
from itchbench.cli import main as itchbench_main
from itchbench.runs import shards

FIXTURES = paths.repo_root() / "fixtures"


def scenario(path: Path, name: str = "matrix", repetitions: int = 2) -> Path:
    path.write_text(f'name = "{name}"\ntransport = "sim"\ncapture = "{FIXTURES / "seed-workload.pcap"}"\n'
                    f"repetitions = {repetitions}\n\n"
                    '[[configurations]]\nlabel = "seed"\n\n'
                    f'[[configurations]]\nlabel = "day"\ncapture = "{FIXTURES / "nasdaq-day-sample.pcap"}"\n')
    return path


def run_shard(scen: Path, out: Path, shard: str | None, env_shard: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != shards.ENV}
    if env_shard:
        env[shards.ENV] = env_shard
    cmd = [sys.executable, "-m", "itchbench.cli", "run", str(scen), "--out", str(out)]
    return subprocess.Popen(cmd + (["--shard", shard] if shard else []), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=paths.repo_root())


def outputs(run_dirs: list[Path]) -> list[tuple[str, int, str, int]]:
    """Per run, what must not depend on where or with whom it ran: configuration, repetition, BBO digest, messages."""
    out = []
    for d in run_dirs:
        m, s = rundir.read_json(d / "manifest.json"), rundir.read_json(d / "summary.json")
        out.append((m["origin"]["configuration"], m["origin"]["repetition"], s["bbo"]["digest"],
                    s["reconciliation"]["received"]))
    return sorted(out)


def test_the_split_is_longest_first_to_the_least_loaded_shard():
    # By hand: 5, 5, 5 go to shards 0, 1, 2; then the 1s, in plan order, each to the least loaded (all 5: the
    # lowest index first): loads 6, 6, 6.
    assert shards.assign([1, 5, 1, 5, 1, 5], 3) == [0, 0, 1, 1, 2, 2]
    # 4 to shard 0, 3 to shard 1, 2 to the lighter shard 1 (load 5), then 1 to shard 0 (load 5).
    assert shards.assign([4, 3, 2, 1], 2) == [0, 1, 1, 0]
    assert shards.assign([], 4) == []
    assert shards.assign([2.0, 2.0], 4) == [0, 1]  # more shards than runs: some get none


@pytest.mark.parametrize("text", ["3/3", "-1/2", "1", "a/b", "1/0", ""])
def test_a_shard_outside_0_to_n_is_refused(text):
    with pytest.raises(shards.ShardError, match="K/N with 0 <= K < N"):
        shards.parse(text)


@pytest.fixture(scope="session")
def sharded(tmp_path_factory) -> dict[str, object]:
    """The whole scenario once, and its three shards in three processes at once (one through ITCHBENCH_SHARD)."""
    base = tmp_path_factory.mktemp("sharding")
    scen = scenario(base / "matrix.toml")
    whole = run_shard(scen, base / "whole", None)
    procs = [run_shard(scen, base / f"shard{k}", f"{k}/3" if k != 2 else None, "2/3" if k == 2 else None)
             for k in range(3)]
    logs = [p.communicate()[0] for p in [whole, *procs]]
    assert all(p.returncode == 0 for p in [whole, *procs]), "\n".join(logs)
    return {"base": base, "scenario": scen, "whole": base / "whole", "shards": [base / f"shard{k}" for k in range(3)],
            "logs": logs}


def test_merged_shards_are_the_unsharded_run(sharded, capsys):
    merged = shards.merge(sharded["shards"])
    assert len(merged.run_dirs) == 4 and len(set(merged.run_dirs)) == 4
    # Balanced by cost: the two day runs (the larger capture) on two shards, the seed runs where the load is least.
    per_shard = [len(rundir.read_json(d / f"shard-{k}-of-3.json")["runs"]) for k, d in enumerate(sharded["shards"])]
    assert sorted(per_shard) == [1, 1, 2]
    assert outputs(merged.run_dirs) == outputs(rundir.find_run_dirs(sharded["whole"]))
    assert "(shard 2/3: " in sharded["logs"][3]  # the environment variable chose the part
    capsys.readouterr()
    assert itchbench_main(["merge", *map(str, sharded["shards"]), "--out", str(sharded["base"] / "merged.json")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "4 run(s): 4 lossless — ok"
    assert len(rundir.read_json(sharded["base"] / "merged.json")["runs"]) == 4


def test_merge_names_a_missing_shard(sharded, capsys):
    assert itchbench_main(["merge", *map(str, sharded["shards"][:2])]) == 2
    assert "shard 2/3 missing" in capsys.readouterr().err


def test_merge_names_a_shard_that_is_there_twice(sharded, tmp_path, capsys):
    again = tmp_path / "again"
    shutil.copytree(sharded["shards"][1], again)
    assert itchbench_main(["merge", *map(str, sharded["shards"]), str(again)]) == 2
    err = capsys.readouterr().err
    assert "shard 1/3 is there twice" in err and str(again) in err


def test_merge_names_a_foreign_shard(sharded, tmp_path, capsys):
    other = scenario(tmp_path / "other.toml", name="matrix", repetitions=1)  # same name, another plan
    done = run_shard(other, tmp_path / "foreign", "2/3")
    done.communicate()
    assert itchbench_main(["merge", *map(str, sharded["shards"][:2]), str(tmp_path / "foreign")]) == 2
    err = capsys.readouterr().err
    assert "foreign" in err and "shard-2-of-3.json" in err


@pytest.mark.parametrize("edit, said", [
    (lambda r: r.pop("shard"), "its shard is None, not one of 0 to 2"),
    (lambda r: r.update(shard="2"), "its shard is '2', not one of 0 to 2"),
    (lambda r: r.update(shard=True), "its shard is True, not one of 0 to 2"),
    (lambda r: r.update(count=0), "its count is 0, not a number of shards"),
    (lambda r: r.pop("runs"), "its runs are not a list of run directories and units"),
    (lambda r: r.update(runs=[{}]), "its runs are not a list of run directories and units"),
    (lambda r: r.update(plan=None), "its plan is not a list of units"),
])
def test_merge_names_a_shard_record_that_is_not_one(sharded, tmp_path, capsys, edit, said):
    # Edited or damaged, a record's missing or mistyped field had ended merge in a traceback (KeyError: 'shard').
    damaged = tmp_path / "damaged"
    shutil.copytree(sharded["shards"][2], damaged)
    record = rundir.read_json(damaged / "shard-2-of-3.json")
    edit(record)
    (damaged / "shard-2-of-3.json").write_text(json.dumps(record))
    assert itchbench_main(["merge", *map(str, sharded["shards"][:2]), str(damaged)]) == 2
    err = capsys.readouterr().err
    assert f"{damaged / 'shard-2-of-3.json'}: not a shard record: {said}" in err and "Traceback" not in err, err


def test_merge_names_a_run_whose_log_was_cut_since(sharded, tmp_path, capsys):
    cut = tmp_path / "cut"
    shutil.copytree(sharded["shards"][2], cut)
    run = next(d for d in sorted(cut.iterdir()) if (d / "latency.lat").is_file())
    os.truncate(run / "latency.lat", (run / "latency.lat").stat().st_size - 100)
    assert itchbench_main(["merge", *map(str, sharded["shards"][:2]), str(cut)]) == 2
    err = capsys.readouterr().err
    assert f"{run}: the run ended complete, and its logs no longer read whole (latency.lat" in err


def test_merge_never_writes_its_list_over_a_shard_record(sharded, capsys):
    record = next(sharded["shards"][0].glob("shard-*-of-*.json"))
    before = record.read_bytes()
    assert itchbench_main(["merge", *map(str, sharded["shards"]), "--out", str(record)]) == 2
    assert "is a shard record or a run's own file" in capsys.readouterr().err and record.read_bytes() == before


def test_merge_refuses_another_machine_class(sharded, tmp_path, capsys):
    moved = tmp_path / "moved"
    shutil.copytree(sharded["shards"][2], moved)
    record = moved / "shard-2-of-3.json"
    r = rundir.read_json(record)
    r["machine"]["cpu_count"] += 6
    rundir.write_json(record, r)
    assert itchbench_main(["merge", *map(str, sharded["shards"][:2]), str(moved)]) == 2
    assert "another machine class" in capsys.readouterr().err


def test_a_document_from_shards_needs_them_all(sharded, tmp_path, capsys):
    assert itchbench_main(["doc", *map(str, sharded["shards"][:2]), "--out", str(tmp_path / "doc")]) == 2
    assert "shard 2/3 missing" in capsys.readouterr().err
    assert itchbench_main(["doc", *map(str, sharded["shards"]), "--out", str(tmp_path / "doc")]) == 0
    assert (tmp_path / "doc" / "report.html").is_file()
