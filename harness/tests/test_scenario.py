"""Scenario validation: every mistake reported with where and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from itchbench.runs import scenario

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "cap.pcap").write_bytes((REPO / "fixtures" / "seed-workload.pcap").read_bytes())
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


BASE = 'name = "t"\ntransport = "udp"\ncapture = "cap.pcap"\n'


def test_every_bundled_scenario_loads():
    names = {p.stem for p in (REPO / "scenarios").glob("*.toml")}
    assert {"sim", "udp-baseline", "udp-pinned", "udp-rt", "udp-topspeed", "uart-115200"} <= names
    for p in (REPO / "scenarios").glob("*.toml"):
        configs = scenario.load(p)
        assert configs and all(c.capture.is_file() for c in configs)


def test_defaults_and_resolution(tmp_path):
    (c,) = scenario.load(write(tmp_path, BASE))
    # Unicast to one port, no heartbeats of the sender's own, one line, no re-request server: as before they came.
    assert c.values["replay"] == {"sender": "tcpreplay", "rate": "capture", "multiplier": 1.0, "pps": 10000,
                                  "loops": 1, "batch": 64, "heartbeat_ms": 0, "end_of_session_ms": 0, "multicast": ""}
    assert not c.values["lines"]["b"] and not c.values["rerequest"]["server"]
    assert c.values["gateway"]["cpu"] == -1 and c.values["repetitions"] == 1
    assert Path(c.values["capture"]).is_absolute()
    assert c.hash() == scenario.load(write(tmp_path, BASE))[0].hash()


@pytest.mark.parametrize("text, message", [
    (BASE + "repetition = 3\n", "unknown key 'repetition' (did you mean 'repetitions'?)"),
    (BASE + "[replay]\nrat = 'pps'\n", "unknown key 'replay.rat' (did you mean 'rate'?)"),
    (BASE + "[gatway]\ncpu = 1\n", "unknown key 'gatway' (did you mean 'gateway'?)"),
    (BASE + "[replay]\nrate = 'warp'\n", "replay.rate: 'warp' must be one of capture, multiplier, pps, topspeed"),
    (BASE + "[gateway]\ncpu = 'one'\n", "gateway.cpu: expected an integer, got a string ('one')"),
    (BASE + "[gateway]\nsched_fifo = 120\n", "gateway.sched_fifo: 120 must be between 0 and 99"),
    # inf was taken and handed to tcpreplay as a speed-up; nan compared false and read "must be positive".
    (BASE + "[replay]\nrate = 'multiplier'\nmultiplier = inf\n", "replay.multiplier: inf must be positive and finite"),
    (BASE + "[replay]\nrate = 'multiplier'\nmultiplier = nan\n", "replay.multiplier: nan must be positive and finite"),
    (BASE.replace('name = "t"', 'name = "../elsewhere"'), "name: '../elsewhere' must not hold '/'"),
    (BASE.replace('name = "t"', 'name = " "'), "name: ' ' must not be empty"),
    (BASE + "[[configurations]]\nlabel = \"a/b\"\n", "configuration label 'a/b' must not hold '/'"),
    (BASE + "[gateway]\nmlockall = 1\n", "gateway.mlockall: expected a boolean (true or false), got an integer (1)"),
    ('name = "t"\ntransport = "udp"\n', "missing required key 'capture'"),
    ('name = "t"\ntransport = "carrier-pigeon"\ncapture = "cap.pcap"\n', "must be one of sim, udp, serial"),
    ('name = "t"\ntransport = "udp"\ncapture = "nope.pcap"\n', "capture not found"),
    (BASE + "[matrix]\n'gateway.cpus' = [0, 1]\n", "unknown matrix key 'gateway.cpus' (did you mean 'gateway.cpu'?)"),
    (BASE + "[matrix]\ntransport = []\n", "matrix.transport must be a non-empty list"),
    (BASE + "[matrix]\n'gateway.cpu' = [0, 'x']\n", "gateway.cpu: expected an integer"),
    (BASE + "transport = ", "not valid TOML"),
    (BASE + "[[configurations]]\ngateway = { cpu = 1 }\n", "configuration 1 needs a label"),
    (BASE + "[[configurations]]\nlabel = 'a'\n[[configurations]]\nlabel = 'a'\n", "label 'a' is used twice"),
    (BASE + "[[configurations]]\nlabel = 'a'\ngateway = { cpux = 1 }\n",
     "unknown key 'gateway.cpux' (did you mean 'cpu'?)"),
    (BASE + "[[configurations]]\nlabel = 'a'\nname = 'b'\n", "cannot change the scenario's name"),
    (BASE + "configurations = 3\n", "must be a non-empty list of tables"),
    (BASE + "[microbench]\nbinaries = ['fast_bench']\n", "unknown benchmark binaries ['fast_bench']"),
    (BASE.replace("udp", "sim") + "[gateway]\nsched_fifo = 80\n", "apply to live transports"),
    (BASE.replace("udp", "sim") + "[gateway]\nbusy_poll = true\n", "mlockall and busy_poll apply to live transports"),
    (BASE + "feed = '233.54.12.111'\n", "feed: '233.54.12.111' must be ADDR:PORT"),
    (BASE + "feed = '233.54.12.300:26477'\n", "must be ADDR:PORT"),
    (BASE + "feed = '233.54.12.111:0'\n", "must be ADDR:PORT"),
    (BASE + "[gateway]\nstamps = 'book,bogus'\n", "gateway.stamps: 'book,bogus' must be all, or a comma-separated"),
    (BASE + "[gateway]\nstamps = ''\n", "gateway.stamps"),
    # A key that paces nothing without its companion was taken and ignored: the run went at the capture's timing.
    (BASE + "[replay]\npps = 500\n", 's.toml: replay.pps takes effect only with replay.rate = "pps" (here '
     '"capture"): set that, or leave replay.pps out'),
    (BASE + "[replay]\nrate = 'pps'\nmultiplier = 4.0\n", 'replay.multiplier takes effect only with replay.rate = '
     '"multiplier" (here "pps")'),
    (BASE + "[replay]\nbatch = 8\n", 'replay.batch takes effect only with replay.sender = "udp-replay" (here '
     '"tcpreplay")'),
    (BASE.replace("udp", "serial") + "[serial]\nmultiplier = 2.0\n", 'serial.multiplier takes effect only with '
     'serial.timing = "capture" (here "baud")'),
    (BASE + "[[configurations]]\nlabel = 'fast'\nreplay = { multiplier = 2.0 }\n",
     's.toml [fast]: replay.multiplier takes effect only with replay.rate = "multiplier"'),
    (BASE + "[matrix]\n'replay.pps' = [1000, 2000]\n", 's.toml [replay.pps=1000]: replay.pps takes effect only'),
    # A sweep of the offered rate at the capture's timing: the same run at each "rate", drawn as a curve.
    (BASE + "[replay]\nsender = 'udp-replay'\n[sweep]\nkey = 'replay.pps'\nsteps = [1000, 2000]\n",
     'replay.pps takes effect only with replay.rate = "pps" (here "capture")'),
    (BASE.replace("udp", "sim") + "[sweep]\nkey = 'subscribers'\nsteps = [1, 10]\n",
     "sweep.key = 'subscribers' shapes live runs, and transport = 'sim' takes none of it: each step would be the "
     "same run"),
    (BASE.replace("udp", "serial") + "[replay]\nrate = 'pps'\n[sweep]\nkey = 'replay.pps'\nsteps = [1, 10]\n",
     "sweep.key = 'replay.pps' shapes udp runs, and transport = 'serial' takes none of it"),
    (BASE + "[sweep]\nkey = 'mqtt.subscribers'\nsteps = [1, 4]\n", "sweep.key = 'mqtt.subscribers' steps the mqtt "
     "broker's subscribers, and publish = ['tcp'] has no mqtt: each step would be the same run"),
])
def test_mistakes_are_reported(tmp_path, text, message):
    with pytest.raises(scenario.ScenarioError) as e:
        scenario.load(write(tmp_path, text))
    assert message in str(e.value)


def test_missing_scenario_file(tmp_path):
    with pytest.raises(scenario.ScenarioError, match="scenario not found"):
        scenario.load(tmp_path / "absent.toml")


def test_a_key_given_at_the_top_need_only_be_taken_by_some_configuration(tmp_path):
    # The rate for all but one configuration, which runs at the capture's timing: the others take replay.pps.
    text = BASE + "[replay]\nrate = 'pps'\npps = 500\n[[configurations]]\nlabel = 'paced'\n" \
                  "[[configurations]]\nlabel = 'as-captured'\nreplay = { rate = 'capture' }\n"
    configs = scenario.load(write(tmp_path, text))
    assert [(c.label, c.values["replay"]["rate"], c.values["replay"]["pps"]) for c in configs] == \
        [("paced", "pps", 500), ("as-captured", "capture", 500)]
    with pytest.raises(scenario.ScenarioError, match=r's.toml: replay.pps takes effect only with replay.rate = "pps", '
                       r"which no configuration sets: set it, or leave replay.pps out"):
        scenario.load(write(tmp_path, text.replace("rate = 'pps'\n", "")))


def test_matrix_expands_to_every_combination(tmp_path):
    configs = scenario.load(write(tmp_path, BASE + "[matrix]\ntransport = ['udp', 'serial']\n'gateway.cpu' = [-1, 1]\n"))
    assert [c.label for c in configs] == ["t-transport=udp-cpu=-1", "t-transport=udp-cpu=1",
                                          "t-transport=serial-cpu=-1", "t-transport=serial-cpu=1"]
    assert {(c.transport, c.values["gateway"]["cpu"]) for c in configs} == {
        ("udp", -1), ("udp", 1), ("serial", -1), ("serial", 1)}
    assert len({c.hash() for c in configs}) == 4


def test_configurations_change_only_their_keys_and_keep_their_order(tmp_path):
    configs = scenario.load(write(tmp_path, BASE + "repetitions = 2\n[gateway]\nrcvbuf = 65536\n"
                                  "[[configurations]]\nlabel = 'uart'\ntransport = 'serial'\nserial = { baud = 9600 }\n"
                                  "[[configurations]]\nlabel = 'pinned'\ngateway = { cpu = 1 }\n"))
    assert [c.label for c in configs] == ["uart", "pinned"]
    uart, pinned = configs
    assert uart.transport == "serial" and uart.values["serial"]["baud"] == 9600
    assert pinned.transport == "udp" and pinned.values["gateway"]["cpu"] == 1
    assert pinned.values["gateway"]["rcvbuf"] == 65536  # the table is merged, not replaced
    assert uart.values["gateway"]["cpu"] == -1 and uart.values["repetitions"] == pinned.values["repetitions"] == 2


def test_configurations_times_a_matrix(tmp_path):
    configs = scenario.load(write(tmp_path, BASE + "[[configurations]]\nlabel = 'a'\n[[configurations]]\nlabel = 'b'\n"
                                  "gateway = { cpu = 1 }\n[matrix]\n'gateway.mlockall' = [false, true]\n"))
    assert [c.label for c in configs] == ["a-mlockall=False", "a-mlockall=True", "b-mlockall=False", "b-mlockall=True"]
    assert [c.values["gateway"]["cpu"] for c in configs] == [-1, -1, 1, 1]
