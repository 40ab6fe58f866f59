"""[placement] (docs/host.md): the gateway's threads placed by name, for the built-in gateway and a brought one,
and what the kernel granted read back independently (os.sched_getaffinity on the threads the report names)."""

from __future__ import annotations

import os

import pytest

from itchbench import paths, rundir
from itchbench.runs import placement, runner
from itchbench.runs.scenario import ScenarioError, defaults

from live_helpers import config

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and SCHED_FIFO need root")
SEED = paths.repo_root() / "fixtures" / "seed-workload.pcap"
PY = paths.repo_root() / "examples" / "py-gateway" / "itchbench.toml"


def test_cpu_lists_and_thread_tables_are_checked():
    assert placement.cpu_list("2-5,7") == {2, 3, 4, 5, 7}
    for bad in ("5-2", "a", "1,,2"):
        with pytest.raises(ValueError):
            placement.cpu_list(bad)
    with pytest.raises(ScenarioError, match="fifo must be a SCHED_FIFO priority"):
        defaults(name="x", transport="udp", capture=str(SEED), placement={"threads": [{"name": "a", "fifo": 120}]})
    with pytest.raises(ScenarioError, match="unknown keys"):
        defaults(name="x", transport="udp", capture=str(SEED), placement={"threads": [{"name": "a", "core": 1}]})


def _run(tmp_path, **extra):
    values = config(SEED, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": 20_000}, **extra)
    run = runner.execute(values, "placed", root=tmp_path / "runs", echo=False)
    return rundir.read_json(run / "summary.json")


@needs_root
def test_the_built_in_gateways_threads_are_placed_by_name(tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    hot, other = cpus[-1], cpus[0]
    s = _run(tmp_path, placement={"cpus": f"{cpus[0]}-{cpus[-1]}",
                                  "threads": [{"name": "itch-gateway", "cpu": hot, "fifo": 80},
                                              {"name": "bbo-publisher", "cpu": other, "fifo": 70}]})
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    threads = {t["name"]: t for t in s["transport_details"]["placement"]["threads"]}
    assert threads["itch-gateway"]["cpus"] == [hot] and threads["itch-gateway"]["policy"] == "SCHED_FIFO"
    assert threads["itch-gateway"]["priority"] == 80 and threads["bbo-publisher"]["priority"] == 70
    # The gateway's own account of its threads at its end (gateway.json noise) agrees with the harness's.
    seen = {t["name"]: t for t in s["noise"]["threads"]}
    assert seen["itch-gateway"]["policy"] == "SCHED_FIFO" and seen["itch-gateway"]["affinity"] == str(hot)


@needs_root
def test_a_brought_gateway_is_placed_by_its_threads_names_and_a_missing_name_stops_the_run(tmp_path):
    cpu = sorted(os.sched_getaffinity(0))[-1]
    s = _run(tmp_path, gateway_file=str(PY), subscribers=0,
             placement={"threads": [{"name": "python3", "cpu": cpu}]})
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    assert {t["name"]: t["cpus"] for t in s["transport_details"]["placement"]["threads"]}["python3"] == [cpu]
    bad = _run(tmp_path, gateway_file=str(PY), subscribers=0, placement={"threads": [{"name": "no-such"}]})
    assert bad["verdict"]["status"] == "incomplete"
    assert "no thread named 'no-such'" in bad["verdict"]["headline"] and "python3" in bad["verdict"]["headline"]
