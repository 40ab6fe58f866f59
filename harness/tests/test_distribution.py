"""BBO distribution through real brokers started by the run — MQTT
(Mosquitto) and Kafka (KRaft, one node): every subscriber's stream against
the fixture's golden digest (fixtures/manifest.json), over UDP and serial;
a subscriber killed and a broker killed mid-run give a verdict that names
them, never a hang, and nothing is left running; with depth, a subscriber
of each path's depth stream holds the depth log."""

from __future__ import annotations

import hashlib
import os
import signal
import struct
import subprocess
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from itchbench import rundir
from itchbench.analysis import logs
from itchbench.captures import fixtures
from itchbench.gateways import blackbox
from itchbench.runs import reconcile, runner

from independent_bbo import depth_events, top_level_changes
from live_helpers import config, kill_when_running, leftover_processes, summary_of

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
SEED = fixtures.load_manifest()[0]


def _run(tmp_path: Path, transport: str = "udp", pps: int = 20000, **values) -> tuple[Path, dict]:
    tables = {"serial": {"baud": 2_000_000}} if transport == "serial" else {
        "replay": {"sender": "udp-replay", "rate": "pps", "pps": pps}}
    v = {**config(SEED.path, transport, **tables), "subscribers": 0, "publish": ["tcp", "mqtt"]}
    for key, value in values.items():
        v[key] = {**v[key], **value} if isinstance(value, dict) else value
    run = runner.execute(v, f"mqtt-{transport}", root=tmp_path, echo=False)
    return run, summary_of(run)


def _no_broker_left(run: Path) -> bool:
    """The run's own broker is gone (a system-wide mosquitto, if the machine has one, is not ours)."""
    return subprocess.run(["pgrep", "-f", f"mosquitto -c {run}/"], capture_output=True).returncode != 0


@pytest.mark.parametrize("transport", ["udp", "serial"])
def test_every_mqtt_subscriber_receives_the_golden_bbo_stream(tmp_path, transport):
    run, s = _run(tmp_path, transport, mqtt={"subscribers": 2, "qos": 1})
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    subs = s["reconciliation"]["subscribers"]
    assert [(x["kind"], x["read"]) for x in subs] == [("mqtt", SEED.golden["bbo_events"])] * 2
    for x in subs:  # the golden digest is the SHA-256 of the BBO records
        assert "sha256:" + hashlib.sha256((run / x["file"]).read_bytes()).hexdigest() == SEED.golden["bbo_digest"]
    mq = s["gateway"]["mqtt"]
    assert mq["sent"] == mq["acked"] == SEED.golden["bbo_events"]
    broker = s["transport_details"]["brokers"]["mqtt"]
    assert broker["version"].startswith("mosquitto version") and (run / "mosquitto.conf").is_file()
    assert (run / "mosquitto.log").is_file() and _no_broker_left(run) and leftover_processes() == []


def test_a_subscriber_killed_mid_run_is_named(tmp_path):
    killer = kill_when_running("bbo-mqtt-subscriber --port", signal.SIGKILL, 1.5)
    run, s = _run(tmp_path, pps=2000, mqtt={"subscribers": 1})  # 7,001 packets: 3.5 s
    killer.join()
    # The check it failed, then what it missed by being killed (if the broker had sent it all already, nothing).
    (sub,) = s["reconciliation"]["subscribers"]
    lost = (f"; and lost: subscriber 0 (MQTT, QoS 1) missed {sub['frames_dropped']:,} BBO "
            f"frame{'s' if sub['frames_dropped'] != 1 else ''}; no feed message lost" if sub["frames_dropped"] else "")
    assert s["verdict"]["headline"] == ("NOT BALANCED: failed: subscriber 0 (MQTT, QoS 1) ended with the stream "
                                        "(killed by SIGKILL)" + lost)
    assert _no_broker_left(run) and leftover_processes() == []


def test_a_broker_killed_mid_run_gives_a_verdict_not_a_hang(tmp_path):
    killer = kill_when_running("mosquitto -c", signal.SIGKILL, 1.5)
    t0 = time.monotonic()
    run, s = _run(tmp_path, pps=2000, mqtt={"subscribers": 1})
    killer.join()
    assert time.monotonic() - t0 < 90
    assert s["verdict"]["status"] == "unbalanced" and s["verdict"]["exit_status"] == 1
    # The broker is named first, with the signal that ended it; then what followed: the subscriber never saw the end
    # marker, and what came after the broker's end stayed with libmosquitto, never acknowledged (QoS 1).
    m = s["gateway"]["mqtt"]
    assert m["acked"] < m["sent"] and m["sent"] + m["errors"] + m["ring_dropped"] == m["published"]
    failed = ("NOT BALANCED: failed: the MQTT broker (mosquitto) ran until the run stopped it (killed by SIGKILL); "
              "subscriber 0 (MQTT, QoS 1) ended with the stream (stopped by the run: no end marker came); MQTT: the "
              f"broker acknowledged every message sent ({m['sent'] - m['acked']:,} of {m['sent']:,} not)")
    (sub,) = s["reconciliation"]["subscribers"]
    lost = (f"; and lost: subscriber 0 (MQTT, QoS 1) missed {sub['frames_dropped']:,} BBO "
            f"frame{'s' if sub['frames_dropped'] != 1 else ''}; no feed message lost" if sub["frames_dropped"] else "")
    assert s["verdict"]["headline"] == failed + lost
    assert s["transport_details"]["brokers"]["mqtt"]["died"] == "killed by SIGKILL"
    assert _no_broker_left(run) and leftover_processes() == []


def _no_kafka_left(run: Path) -> bool:
    return subprocess.run(["pgrep", "-f", f"kafka.Kafka {run}/"], capture_output=True).returncode != 0


@pytest.mark.parametrize("transport", ["udp", "serial"])
def test_every_kafka_subscriber_receives_the_golden_bbo_stream(tmp_path, transport):
    run, s = _run(tmp_path, transport, pps=2000, publish=["tcp", "kafka"], kafka={"subscribers": 2, "acks": "all"})
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    subs = s["reconciliation"]["subscribers"]
    assert [(x["kind"], x["read"]) for x in subs] == [("kafka", SEED.golden["bbo_events"])] * 2
    for x in subs:
        assert "sha256:" + hashlib.sha256((run / x["file"]).read_bytes()).hexdigest() == SEED.golden["bbo_digest"]
    k = s["gateway"]["kafka"]
    assert k["sent"] == k["acked"] == SEED.golden["bbo_events"] and k["acks"] == "all"
    assert s["transport_details"]["brokers"]["kafka"]["version"].startswith("Apache Kafka 4.")
    assert (run / "kafka.log").stat().st_size > 0 and not (run / "kafka-data").exists()  # storage goes with the run
    assert _no_kafka_left(run) and leftover_processes() == []


def _seq_counts(path: Path) -> "Counter[int]":
    """Each BBO frame's seq (its first 8 bytes), counted: an account of a subscriber's file of our own."""
    data = path.read_bytes()
    return Counter(struct.unpack_from("<Q", data, at)[0] for at in range(0, len(data) - 47, 48))


@pytest.mark.parametrize("kind", ["mqtt", "kafka"])
def test_a_broker_restarted_mid_run_is_reported_per_subscriber_never_a_hang(tmp_path, kind):
    t0 = time.monotonic()
    run, s = _run(tmp_path, pps=1000, publish=["tcp", kind], **{kind: {"subscribers": 1, "restart_at_s": 1.5}})
    assert time.monotonic() - t0 < 120
    restart = s["transport_details"]["brokers"][kind]["restart"]
    assert restart["done"] and restart["at_s"] == 1.5 and restart["back_after_s"] > 0
    (sub,) = s["reconciliation"]["subscribers"]
    frames = tmp_path / "bbo-log-frames"
    frames.write_bytes((run / "bbo.bbo").read_bytes()[128:])  # gateway/log/FORMAT.md: a 128-byte header
    got, want = _seq_counts(run / sub["file"]), _seq_counts(frames)
    assert sub["frames_dropped"] == len(set(want) - set(got))
    assert sub["duplicates"] == sum(n - 1 for n in got.values())
    # Whatever it lost or never heard the end of is named, whatever else failed: the restart may cost the subscriber
    # frames, or the gateway's producer an acknowledgement, or both, or (reconnected in time) neither.
    if sub["frames_dropped"] or sub["duplicates"] or not str(sub.get("ended", "")).startswith("end of stream"):
        assert f"subscriber 0 ({'MQTT' if kind == 'mqtt' else 'Kafka'}" in s["verdict"]["headline"]
    assert (s["verdict"]["status"] == "lossless") == (s["verdict"]["exit_status"] == 0)
    g = s["gateway"][kind]
    if g["acked"] < g["sent"]:  # and what the gateway's producer never had acknowledged (a reconnect too late)
        assert (f"the broker acknowledged every message sent ({g['sent'] - g['acked']:,} of {g['sent']:,} not)"
                in s["verdict"]["headline"]) and s["verdict"]["exit_status"] == 1
    assert "died" not in s["transport_details"]["brokers"][kind]  # stopped and started again by the run
    assert leftover_processes() == [] and _no_broker_left(run) and _no_kafka_left(run)


def test_slow_and_reconnecting_subscribers_lose_only_their_own_share(tmp_path):
    run, s = _run(tmp_path, pps=1000, publish=["tcp", "mqtt", "kafka"],
                  mqtt={"subscribers": 3, "subscriber_modes": ["slow", "reconnect"]},
                  kafka={"subscribers": 3, "subscriber_modes": ["slow", "reconnect"]})
    assert s["verdict"]["exit_status"] == 0, s["verdict"]["headline"]  # what a slow one missed is its own
    frames = tmp_path / "bbo-log-frames"
    frames.write_bytes((run / "bbo.bbo").read_bytes()[128:])
    want = set(_seq_counts(frames))
    by = {(x["kind"], x["mode"]): x for x in s["reconciliation"]["subscribers"]}
    for (kind, mode), sub in by.items():
        got = _seq_counts(run / sub["file"])
        assert sub["frames_dropped"] == len(want - set(got)), (kind, mode)
        assert sub["duplicates"] == sum(n - 1 for n in got.values()), (kind, mode)
    assert by[("mqtt", "fast")]["identical_to_bbo_log"] and by[("kafka", "fast")]["identical_to_bbo_log"]
    # Kafka keeps every record: a slow consumer lags, a reconnecting one resumes at its next offset.
    assert by[("kafka", "slow")]["identical_to_bbo_log"] and by[("kafka", "reconnect")]["identical_to_bbo_log"]
    info = rundir.read_json(run / by[("mqtt", "reconnect")]["file"].replace(".bbo", ".json"))
    assert info["reconnects"] >= 3  # about 7 s of replay, one a second
    assert leftover_processes() == [] and _no_broker_left(run) and _no_kafka_left(run)


def test_every_path_carries_bbo_and_depth_as_the_logs_hold_them(tmp_path):
    """levels = 5: a BBO subscriber on each path, numbered TCP, shared memory, MQTT, Kafka, each holding the BBO
    log; then one depth subscriber on each (TCP, the ring NAME-depth, MQTT's TOPIC/depth, Kafka's TOPIC-depth),
    each holding the depth log byte for byte: a level change frame for each level the independent book's events
    change, read back whole its events. A brokered depth stream with a frame changed, or one missing, is caught by
    its own checks."""
    run, s = _run(tmp_path, pps=2000, subscribers=1, shm_subscribers=1, levels=5, publish=["tcp", "mqtt", "kafka"],
                  mqtt={"subscribers": 1}, kafka={"subscribers": 1})
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    expected = depth_events(SEED.path, 5)
    subs = s["reconciliation"]["subscribers"]
    assert [(x["index"], x.get("kind", "tcp"), x.get("depth")) for x in subs] == [
        (0, "tcp", None), (1, "shm", None), (2, "mqtt", None), (3, "kafka", None),
        (4, "mqtt", 5), (5, "kafka", 5), (6, "tcp", 5), (7, "shm", 5)]
    assert all(x["identical_to_bbo_log"] for x in subs[:4])
    dtype = logs.LEVEL_CHANGE_DTYPE
    changes = top_level_changes(SEED.path, 5)
    for x in subs[4:]:
        assert x["identical_to_depth_log"] and x["frames"] == len(changes), x
        frames = np.fromfile(run / x["file"], dtype)
        got = blackbox.depth_frame(logs.depth_events(run / x["file"], frames, 5)).drop(columns="stock")
        assert [tuple(r) for r in got.itertuples(index=False)] == [(e[0], *e[2:]) for e in expected]
    gw = rundir.read_json(run / "gateway.json")
    assert gw["depth_mqtt"]["topic"].endswith("/depth") and gw["depth_kafka"]["topic"].endswith("-depth")
    assert gw["depth_shm"]["name"].endswith("-depth") and gw["depth_shm"]["record_bytes"] == dtype.itemsize
    mqtt = next(x for x in subs if x.get("depth") and x["kind"] == "mqtt")
    path = run / mqtt["file"]
    whole = path.read_bytes()
    changed = np.frombuffer(whole, dtype).copy()
    changed["qty"][20] += 1
    for name, data in (("changed", changed.tobytes()), ("one missing", whole[:dtype.itemsize * 30] +
                                                         whole[dtype.itemsize * 31:])):
        path.write_bytes(data)
        checks: dict[str, bool] = {}
        got = reconcile._depth_subscriber(mqtt, gw, run, checks)
        named = reconcile.subscriber_name(mqtt, mqtt["settings"])
        if name == "changed":  # every event there, one of them wrong
            assert got["frames_dropped"] == 0 and checks[f"{named} received the depth log exactly"] is False
        else:  # its loss, counted against it (a fast subscriber's loss is the run's: not lossless)
            assert got["frames_dropped"] == 1 and not got["identical_to_depth_log"]
    path.write_bytes(whole)
    assert _no_kafka_left(run) and _no_broker_left(run) and leftover_processes() == []
