"""The shared-memory BBO ring (gateway/publish/shm_ring.hpp) and its
consumer (bbo-shm-subscriber), through real runs: every event received
byte for byte (against the fixture's golden digest, recorded in
fixtures/manifest.json), overruns counted per consumer, a waiting
producer loses nothing, a consumer killed mid-run is named, and the
shared-memory object is gone after every run, a crashed gateway's too."""

from __future__ import annotations

import hashlib
import os
import signal
from pathlib import Path

import pytest

from itchbench.captures import fixtures
from itchbench.runs import runner

from live_helpers import config, kill_when_running, leftover_processes, summary_of

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
SEED = fixtures.load_manifest()[0]


def _run(tmp_path: Path, pps: int = 20000, **values) -> tuple[Path, dict]:
    v = {**config(SEED.path, "udp", replay={"sender": "udp-replay", "rate": "pps", "pps": pps}), "subscribers": 0}
    for key, value in values.items():
        if isinstance(value, dict):
            v[key] = {**v[key], **value}
        else:
            v[key] = value
    run = runner.execute(v, "shm", root=tmp_path, echo=False)
    return run, summary_of(run)


def _ring_gone(run: Path) -> bool:
    return not Path(f"/dev/shm/itchbench-{run.name}").exists()


def test_every_consumer_receives_the_golden_bbo_stream(tmp_path):
    run, s = _run(tmp_path, shm_subscribers=2)
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    subs = s["reconciliation"]["subscribers"]
    assert [(x["kind"], x["read"], x["overruns"]) for x in subs] == [("shm", 1123, 0)] * 2
    for x in subs:  # the golden digest is the SHA-256 of the BBO records
        assert "sha256:" + hashlib.sha256((run / x["file"]).read_bytes()).hexdigest() == SEED.golden["bbo_digest"]
    assert s["gateway"]["shm"]["published"] == SEED.golden["bbo_events"]
    assert _ring_gone(run) and leftover_processes() == []


def test_a_slow_consumer_overrun_loses_only_its_own_events_and_counts_them(tmp_path):
    run, s = _run(tmp_path, shm_subscribers=2, shm_subscriber_modes=["slow"],
                  gateway={"shm_capacity": 256, "shm_policy": "overrun"})
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]  # the slow one's loss is its own
    slow, fast = s["reconciliation"]["subscribers"]
    assert slow["overruns"] > 0 and slow["read"] + slow["overruns"] == SEED.golden["bbo_events"]
    assert fast["overruns"] == 0 and fast["identical_to_bbo_log"]
    assert _ring_gone(run)


def test_a_waiting_producer_loses_nothing_to_a_slow_consumer(tmp_path):
    run, s = _run(tmp_path, shm_subscribers=1, shm_subscriber_modes=["slow"],
                  gateway={"shm_capacity": 16, "shm_policy": "wait"})
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    (slow,) = s["reconciliation"]["subscribers"]
    assert (slow["read"], slow["overruns"]) == (SEED.golden["bbo_events"], 0) and slow["identical_to_bbo_log"]
    assert s["gateway"]["shm"]["producer_waits"] > 0  # it was held up, and said so


def test_a_consumer_killed_mid_run_is_named(tmp_path):
    killer = kill_when_running("bbo-shm-subscriber --name", signal.SIGKILL, 1.0)
    run, s = _run(tmp_path, pps=2000, shm_subscribers=1)  # 7,001 packets: 3.5 s
    killer.join()
    assert s["verdict"]["status"] != "lossless" and s["verdict"]["exit_status"] == 1
    (sub,) = s["reconciliation"]["subscribers"]
    lost = (f"; and lost: subscriber 0 (shared memory) missed {sub['frames_dropped']:,} BBO "
            f"frame{'s' if sub['frames_dropped'] != 1 else ''}; no feed message lost" if sub["frames_dropped"] else "")
    assert s["verdict"]["headline"] == ("NOT BALANCED: failed: subscriber 0 (shared memory) ended with the stream "
                                        "(killed by SIGKILL)" + lost)
    assert _ring_gone(run) and leftover_processes() == []


def test_the_ring_is_removed_after_the_gateway_crashes(tmp_path):
    killer = kill_when_running("itch-gateway .*--publish-shm", signal.SIGKILL, 1.0)
    run, s = _run(tmp_path, pps=2000, shm_subscribers=1)
    killer.join()
    assert s["verdict"]["status"] == "incomplete" and "killed by SIGKILL" in s["verdict"]["headline"]
    assert _ring_gone(run) and leftover_processes() == []
