"""itchbench sim and dump bbo, as a user runs them."""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import subprocess
import sys
import numpy as np
import pytest

from itchbench import paths, rundir
from itchbench.analysis import dump, logs
from itchbench.captures import fixtures
from itchbench.runs import sim
from itchbench.cli import main as itchbench_main

from independent_bbo import bbo_events
from pcap_edit import corrupt_first_type_byte, record_offsets

FIXTURES = fixtures.load_manifest()
# The independent book is plain Python, a message at a time: 1,000,000 messages took it 166 s. It checks every
# fixture up to a few MB (the nasdaq-day mix among them, on 8,000 and 30,000 messages); the larger ones are held to
# their golden digests (test_three_runs_give_the_golden_digest).
INDEPENDENT = [f for f in FIXTURES if f.path.stat().st_size < 8 << 20]


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.name)
def test_three_runs_give_the_golden_digest(fx, tmp_path):
    digests = []
    for i in range(3):
        run = sim.run_sim(fx.path, tmp_path / f"run{i}", echo=False)
        summary = rundir.read_json(run / "summary.json")
        assert summary["complete"] and summary["reconciliation"]["balanced"], summary["reconciliation"]
        digests.append(summary["bbo"]["digest"])
    assert digests == [fx.golden["bbo_digest"]] * 3
    assert summary["bbo"]["events"] == fx.golden["bbo_events"]


@pytest.mark.parametrize("fx", INDEPENDENT, ids=lambda f: f.name)
def test_dump_bbo_matches_an_independent_python_book(fx, tmp_path, capsys):
    run = sim.run_sim(fx.path, tmp_path / "run", echo=False)
    assert itchbench_main(["dump", "bbo", str(run)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "seq,stock,bid_px,bid_qty,ask_px,ask_qty,stale"
    rows = [(int(r["seq"]), r["stock"], int(r["bid_px"]), int(r["bid_qty"]), int(r["ask_px"]), int(r["ask_qty"]))
            for r in csv.DictReader(io.StringIO(text))]
    expected = bbo_events(fx.path)
    assert len(rows) == len(expected) > 100
    assert rows == expected
    assert text.count(",0\n") == len(rows)  # nothing lost: no event is marked stale


def test_binary_itch_file_gives_the_same_bbo_stream(tool, tmp_path):
    fx = next(f for f in FIXTURES if f.name == "nasdaq-day-sample")
    itch = tmp_path / "same-session.itch"
    r = tool("itch-synth", *fx.args, "--format", "itch", "--out", itch)
    assert r.returncode == 0, r.stderr
    run = sim.run_sim(itch, tmp_path / "run", echo=False)
    summary = rundir.read_json(run / "summary.json")
    # Positions in the file equal the MoldUDP64 sequence numbers of the pcap.
    assert summary["bbo"]["digest"] == fx.golden["bbo_digest"]
    assert rundir.read_json(run / "manifest.json")["scenario"]["transport"] == "sim"


def test_a_capture_numbered_from_mid_session_gives_the_same_book_at_its_numbers(tool, tmp_path, capsys):
    # The bundled slice's recipe numbered from 150,000,001, as a capture taken mid-morning is: each event of the
    # independent book over the slice, its seq 150,000,000 on.
    fx = next(f for f in FIXTURES if f.name == "nasdaq-day-sample")
    mid = tmp_path / "mid.pcap"
    r = tool("itch-synth", *fx.args, "--first-sequence", "150000001", "--out", mid)
    assert r.returncode == 0, r.stderr
    run = sim.run_sim(mid, tmp_path / "run", echo=False)
    assert rundir.read_json(run / "summary.json")["verdict"]["status"] == "lossless"
    assert itchbench_main(["dump", "bbo", str(run)]) == 0
    rows = [(int(r["seq"]), r["stock"], int(r["bid_px"]), int(r["bid_qty"]), int(r["ask_px"]), int(r["ask_qty"]))
            for r in csv.DictReader(io.StringIO(capsys.readouterr().out))]
    assert rows == [(seq + 150_000_000, *rest) for seq, *rest in bbo_events(fx.path)]
    for bad in ("0", str((1 << 62) + 1)):
        refused = tool("itch-synth", *fx.args, "--first-sequence", bad, "--out", tmp_path / "bad.pcap")
        assert refused.returncode == 2 and "--first-sequence must be 1..2^62" in refused.stderr
        assert not (tmp_path / "bad.pcap").exists()


def test_latency_log_has_one_ordered_record_per_message(tmp_path):
    fx = FIXTURES[1]
    run = sim.run_sim(fx.path, tmp_path / "run", echo=False)
    lat = logs.read_latency(run / "latency.lat")
    rec = lat.records
    # Raw TSC ticks (the reader maps them), or ns where there is no invariant TSC.
    assert lat.complete and lat.header["stage_clock"] in ("tsc-ticks", "monotonic")
    assert len(rec) == 8000
    assert np.array_equal(rec["seq"], np.arange(1, 8001))
    # No kernel stamp in simulation: the log holds the four stages stamped (FORMAT.md), in compact 20-byte slots.
    assert lat.header["stages"] == ["t_read", "t_decoded", "t_book", "t_published"] and lat.header["record_size"] == 20
    assert lat.header["version"] == 5
    assert np.all(rec["t_read"] != 0) and np.all(rec["t_read"] <= rec["t_decoded"])
    assert np.all(rec["t_decoded"] <= rec["t_book"])
    published = rec["t_published"] != 0
    assert np.all(rec["t_book"][published] <= rec["t_published"][published])
    assert np.count_nonzero(rec["flags"] & logs.FLAG_BBO_EVENT) == fx.golden["bbo_events"] == published.sum()
    assert np.all(rec["flags"] & logs.WRITTEN)
    assert lat.header["run_id"] == rundir.read_json(run / "manifest.json")["run_id"]


def test_fewer_stamps_make_smaller_records_and_leave_the_stages_that_need_others_out(tmp_path):
    from itchbench.runs import runner, scenario

    fx = FIXTURES[1]
    values = scenario.defaults(name="two-stamps", transport="sim", capture=str(fx.path))
    values["gateway"]["stamps"] = "read,book"
    values["gateway"]["latency_format"] = "wide"  # version 4: a field of 8 bytes a stage stamped (FORMAT.md)
    run = runner.execute(values, "two-stamps", root=tmp_path, echo=False)
    lat = logs.read_latency(run / "latency.lat")
    rec = lat.records
    assert lat.header["version"] == 4
    assert lat.header["stages"] == ["t_read", "t_book"] and lat.header["record_size"] == 24 + 2 * 8
    assert len(rec) == 8000 and np.all(rec["t_read"] != 0) and np.all(rec["t_book"] >= rec["t_read"])
    s = rundir.read_json(run / "summary.json")
    assert s["lossless"] and s["bbo"]["digest"] == fx.golden["bbo_digest"]  # what is stamped changes no output
    assert set(s["latency"]["stages"]) == {"receive_to_book"}


@pytest.mark.parametrize("stamps", ["all", "book,published", "read,decoded"])
@pytest.mark.parametrize("source", ["pcap", "itch-file"])
def test_the_gateway_counts_the_clock_reads_its_stamps_took(tool, tmp_path, source, stamps):
    """gateway.json clock.stage_reads against the log: a read for every stamp a record holds, but a pcap's receive
    stamp, read once a datagram whether or not it carries a message (the end-of-session packet does not): there, one
    a record of the capture, counted here from the file's bytes."""
    fx = next(f for f in FIXTURES if f.name == "nasdaq-day-sample")
    capture = fx.path
    if source == "itch-file":
        capture = tmp_path / "session.itch"
        assert tool("itch-synth", *fx.args, "--format", "itch", "--out", capture).returncode == 0
    out = tmp_path / "run"
    out.mkdir()
    done = tool("itch-gateway", "--source", "sim", "--capture", capture, "--out", out, "--stamps", stamps)
    assert done.returncode == 0, done.stderr
    rec = logs.read_latency(out / "latency.lat").records
    expected = sum(int(np.count_nonzero(rec[stage])) for stage in ("t_decoded", "t_book", "t_published")
                   if stage in rec.dtype.names)
    if "t_read" in rec.dtype.names:
        datagrams = len(record_offsets(fx.path.read_bytes()))
        expected += datagrams if source == "pcap" else int(np.count_nonzero(rec["t_read"]))
    clock = json.loads((out / "gateway.json").read_text())["clock"]
    assert clock["stage_reads"] == expected > 0
    assert 1 < clock["timer_overhead_ns"] < 1000  # fractions of a ns: measured in ticks


def test_histograms_count_every_stage_time_the_log_would_hold(tool, tmp_path):
    """--latency-histogram: no per-message log, each stage's time counted once for each message the log records it
    for (its counts set against a log run of the same capture), ordered percentiles, the same clock reads."""
    fx = next(f for f in FIXTURES if f.name == "nasdaq-day-sample")
    runs = {}
    for name, flags in (("log", []), ("histograms", ["--latency-histogram"])):
        out = tmp_path / name
        out.mkdir()
        done = tool("itch-gateway", "--source", "sim", "--capture", fx.path, "--out", out, *flags)
        assert done.returncode == 0, done.stderr
        runs[name] = out
    assert not (runs["histograms"] / "latency.lat").exists()
    rec = logs.read_latency(runs["log"] / "latency.lat").records
    report = json.loads((runs["histograms"] / "gateway.json").read_text())
    hist = report["latency_histogram"]
    both = lambda a, b: int(np.count_nonzero((rec[a] != 0) & (rec[b] != 0)))  # noqa: E731
    assert {k: v["count"] for k, v in hist.items() if isinstance(v, dict)} == {
        "parse": both("t_read", "t_decoded"), "book": both("t_decoded", "t_book"),
        "publish": both("t_book", "t_published"), "receive_to_book": both("t_read", "t_book"),
        "receive_to_published": both("t_read", "t_published")}
    assert hist["publish"]["count"] == fx.golden["bbo_events"] and hist["backwards"] == 0
    for stage in ("parse", "book", "publish", "receive_to_book", "receive_to_published"):
        h = hist[stage]
        assert 0 < h["p50"] <= h["p90"] <= h["p99"] <= h["p999"] <= h["p9999"] <= h["max"], (stage, h)
    assert report["clock"]["stage_reads"] == json.loads((runs["log"] / "gateway.json").read_text())["clock"][
        "stage_reads"]


def test_one_stamp_makes_a_report_that_says_it_has_no_stage(tmp_path):
    """The book's stamp alone is no interval: a log of that one stage, and a report that says so instead of empty tables
    (it once failed building a hop table from a chain of one stamp)."""
    from itchbench.runs import runner, scenario

    fx = FIXTURES[1]
    values = scenario.defaults(name="book-stamp", transport="sim", capture=str(fx.path))
    values["gateway"]["stamps"] = "book"
    run = runner.execute(values, "book-stamp", root=tmp_path, echo=False)
    lat = logs.read_latency(run / "latency.lat")
    assert lat.header["stages"] == ["t_book"] and len(lat.records) == 8000
    assert itchbench_main(["report", str(run)]) == 0
    text = (run / "report.md").read_text()
    assert "holds no stage with both of its stamps (stamped: t_book)" in text and "### By stage" not in text


def test_manifest_records_the_environment(tmp_path):
    run = sim.run_sim(FIXTURES[0].path, tmp_path / "run", echo=False)
    m = rundir.read_json(run / "manifest.json")
    env = m["environment"]
    for key in ("git", "build", "tools", "kernel", "cpu_model", "cpu_governor", "affinity", "isolated_cpus"):
        assert key in env, key
    assert env["build"]["build_type"] == "Release" and "-Wall" in env["build"]["cxx_flags"]
    assert m["capture_sha256"] == FIXTURES[0].sha256
    assert m["scenario_hash"] == rundir.scenario_hash(m["scenario"])


def test_malformed_messages_are_counted_and_the_run_still_balances(tool, tmp_path):
    pcap = tmp_path / "s.pcap"
    tool("itch-synth", "--messages", "300", "--out", pcap)
    corrupt_first_type_byte(pcap, 49)  # the 50th message
    run = sim.run_sim(pcap, tmp_path / "run", echo=False)
    rec = rundir.read_json(run / "summary.json")["reconciliation"]
    assert rec["received"] == 300 and rec["rejected"] == 1 and rec["decoded"] == 299
    assert rec["balanced"]
    # A rejected message is said as such: never "lossless".
    verdict = rundir.read_json(run / "summary.json")["verdict"]
    assert verdict["status"] == "rejected" and "1 of 300 messages malformed (1 × unknown type)" in verdict["headline"]
    lat = logs.read_latency(run / "latency.lat").records
    rejected = lat[(lat["flags"] & logs.FLAG_REJECTED) != 0]
    assert list(rejected["seq"]) == [50] and rejected["msg_type"][0] == b"z"


def test_truncated_capture_gives_an_incomplete_run(tool, tmp_path, capsys):
    pcap = tmp_path / "cut.pcap"
    tool("itch-synth", "--messages", "300", "--out", pcap)
    pcap.write_bytes(pcap.read_bytes()[:-150])
    assert itchbench_main(["sim", str(pcap), "--out", str(tmp_path / "run")]) == 1
    assert "INCOMPLETE" in capsys.readouterr().out
    summary = rundir.read_json(tmp_path / "run" / "summary.json")
    assert summary["complete"] is False and "truncated" in summary["error"]


@pytest.mark.parametrize("content, message", [
    (None, "capture not found"),
    (b"", "empty capture"),
    (b"this is a text file, not a capture\n", "not a capture"),
    # A pipe (`itchbench sim <(zcat day.pcap.gz)`) was said to be an empty capture, its size being 0.
    ("pipe", "input: not a regular file (a pipe or a device): a run reads its capture more than once"),
])
def test_clear_errors_for_bad_captures(tmp_path, capsys, content, message):
    capture = tmp_path / "input"
    if content == "pipe":
        os.mkfifo(capture)
    elif content is not None:
        capture.write_bytes(content)
    assert itchbench_main(["sim", str(capture), "--out", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_unwritable_or_reused_output_is_refused(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert itchbench_main(["sim", str(FIXTURES[0].path), "--out", str(blocker / "run")]) == 2
    assert "cannot create run directory" in capsys.readouterr().err
    run = sim.run_sim(FIXTURES[0].path, tmp_path / "run", echo=False)
    assert itchbench_main(["sim", str(FIXTURES[0].path), "--out", str(run)]) == 2
    assert "never overwritten" in capsys.readouterr().err


def test_a_run_directory_another_run_is_taking_is_refused(tmp_path, capsys):
    """Two runs given the same --out at once: the one that finds it held by the other (which has not yet written a
    file there) is refused, and writes nothing into it."""
    import fcntl

    out = tmp_path / "run"
    out.mkdir()
    held = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # as the other run holds it until its first file is written
        assert itchbench_main(["sim", str(FIXTURES[0].path), "--out", str(out)]) == 2
        assert "being taken by another run" in capsys.readouterr().err
        assert not any(out.iterdir())
    finally:
        os.close(held)
    run = sim.run_sim(FIXTURES[0].path, out, echo=False)  # once let go, it is an empty folder to run into
    assert rundir.read_json(run / "summary.json")["lossless"]


def test_dump_of_a_non_run_directory_is_an_error(tmp_path, capsys):
    assert itchbench_main(["dump", "bbo", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_symbols_fall_back_to_locate_numbers(tmp_path):
    run = sim.run_sim(FIXTURES[0].path, tmp_path / "run", echo=False)
    gw = json.loads((run / "gateway.json").read_text())
    gw["symbols"].pop("1")
    (run / "gateway.json").write_text(json.dumps(gw))
    frame = dump.bbo_frame(run)
    assert "1" in set(frame["stock"]) and "AAPL" not in set(frame["stock"])


def test_cpu_pins_the_simulation_or_the_run_fails_with_the_reason(tmp_path):
    import os

    from itchbench.runs import runner, scenario

    fx = FIXTURES[0]
    cpu = sorted(os.sched_getaffinity(0))[-1]
    values = scenario.defaults(name="pinned", transport="sim", capture=str(fx.path))
    values["gateway"]["cpu"] = cpu
    run = runner.execute(values, "pinned", root=tmp_path, echo=False)
    gw = rundir.read_json(run / "gateway.json")
    assert gw["realtime"]["cpu"] == {"requested": True, "value": cpu, "granted": True, "error": ""}
    assert rundir.read_json(run / "summary.json")["lossless"]
    values["gateway"]["cpu"] = 4095  # no such CPU here
    bad = runner.execute(values, "unpinnable", root=tmp_path, echo=False)
    summary = rundir.read_json(bad / "summary.json")
    assert summary["verdict"]["headline"].startswith("INCOMPLETE (gateway_failed)")
    assert "4095" in summary["failure"]["message"]


def test_a_gateway_that_leaves_the_end_of_a_capture_unread_is_not_lossless(tool, tmp_path, monkeypatch, capsys):
    # A binary ITCH file's sequence numbers are positions: messages never handed on at its end leave no gap. The
    # built-in gateway is made to read a shorter file than the harness gave it (a wrapper swaps --capture), as a
    # reader that stopped early would; it says it completed, and only the capture's own count can tell.
    whole, short = tmp_path / "whole.itch", tmp_path / "short.itch"
    for path, n in ((whole, 3000), (short, 2000)):
        assert tool("itch-synth", "--profile", "nasdaq-day", "--messages", n, "--format", "itch",
                    "--out", path).returncode == 0
    wrapper = tmp_path / "itch-gateway"
    wrapper.write_text("#!/bin/sh\n"
                       f'for a; do shift; [ "$a" = "{whole}" ] && a="{short}"; set -- "$@" "$a"; done\n'
                       f'exec {shlex.quote(str(paths.tool("itch-gateway")))} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv(paths.GATEWAY_OVERRIDE, str(wrapper))
    rc = itchbench_main(["sim", str(whole), "--out", str(tmp_path / "run")])
    summary = rundir.read_json(tmp_path / "run" / "summary.json")
    rec = summary["reconciliation"]
    assert rec["received"] == 2000 and rec["capture_messages"] == 3000
    assert rec["checks"]["received = the capture's messages (itch-inspect)"] is False
    assert rc != 0 and not rec["balanced"] and "LOSSLESS" not in capsys.readouterr().out


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_run_whose_disk_fills_is_said_unrecorded_and_leaves_no_part_written_file(tmp_path, capsys):
    """A run directory on a 3 MiB tmpfs: the 1 M-message day's latency log fills it, the gateway fails, and then
    its summary cannot be written. Said on one line, exit 2, not a traceback (it was, and left summary.json.tmp and
    gateway-usage.json.tmp, empty, beside the run's files). Then an export onto the full disk."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(small)], check=True)
    try:
        day = next(fx for fx in FIXTURES if fx.name == "nasdaq-day-1m").path
        assert itchbench_main(["sim", str(day), "--levels", "5", "--out", str(small / "run")]) == 2
        err = capsys.readouterr().err
        assert f"{small / 'run'}: the run could not be recorded, its summary not written ([Errno 28] No space left " \
               "on device); it had failed: " in err and "Traceback" not in err, err
        left = [p.name for p in (small / "run").iterdir() if p.suffix == ".tmp" or ".partial" in p.name]
        assert not left and not (small / "run" / "summary.json").exists(), left
        # An export onto the full disk: said, exit 1, nothing left of it.
        run = sim.run_sim(paths.repo_root() / "fixtures" / "seed-workload.pcap", tmp_path / "run", echo=False)
        assert itchbench_main(["export", str(run), "--format", "csv", "--out", str(small / "latency.csv")]) == 1
        err = capsys.readouterr().err
        assert "No space left on device" in err and "Traceback" not in err, err
        assert sorted(p.name for p in small.iterdir()) == ["run"]
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_a_run_whose_report_cannot_be_written_fails_and_is_taken_for_no_whole_run(tmp_path, capsys):
    """The plots cannot be drawn (matplotlib refuses its backend): the gateway's verdict stands, but the run's
    summary holds none of the report's figures. It ended LOSSLESS, exit 0, with no report.md, and history, doc and
    compare took it whole (doc printed "—" for every latency figure). Now exit 1, said under the verdict, and
    refused downstream until `itchbench report` writes it."""
    run = tmp_path / "run"
    env = {**os.environ, "MPLBACKEND": "no-such-backend"}
    capture = paths.repo_root() / "fixtures" / "seed-workload.pcap"
    done = subprocess.run([sys.executable, "-m", "itchbench.cli", "sim", str(capture), "--out", str(run)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "LOSSLESS: 7,000 messages, 1,123 BBO events, balanced\nREPORT NOT WRITTEN (DrawingError: drawing the " \
           "report's plots failed" in done.stdout, done.stdout
    assert not (run / "report.md").exists() and "report_not_written" in rundir.read_json(run / "summary.json")
    for argv in (["history", str(tmp_path / "store"), "--append", str(run)], ["doc", str(run), "--out",
                 str(tmp_path / "doc")], ["compare", str(run), str(run), "--out", str(tmp_path / "compare")]):
        assert itchbench_main(argv) == 2, argv
        assert f"{run}: its report was not written (DrawingError: " in capsys.readouterr().err, argv
    assert not [p for p in ("store", "doc", "compare") if (tmp_path / p).exists()]
    assert itchbench_main(["report", str(run)]) == 0
    summary = rundir.read_json(run / "summary.json")
    assert (run / "report.md").is_file() and "report_not_written" not in summary
    assert summary["latency"]["stages"]["receive_to_book"]["count"] == 7000
    assert itchbench_main(["history", str(tmp_path / "store"), "--append", str(run)]) == 0


def test_a_scenario_run_whose_report_cannot_be_written_is_not_stored_and_fails(tmp_path):
    """`itchbench run --store`: the store refused the run, and the refusal ended the scenario in a traceback."""
    scen = tmp_path / "s.toml"
    capture = paths.repo_root() / "fixtures" / "seed-workload.pcap"
    scen.write_text(f'name = "s"\ntransport = "sim"\ncapture = "{capture}"\n')
    env = {**os.environ, "MPLBACKEND": "no-such-backend"}
    done = subprocess.run([sys.executable, "-m", "itchbench.cli", "run", str(scen), "--out", str(tmp_path / "runs"),
                           "--store", str(tmp_path / "store")], capture_output=True, text=True, env=env)
    # (stderr holds the drawing process's own traceback: matplotlib refusing the backend)
    assert done.returncode == 1 and "its figures not there" not in done.stderr, done.stdout + done.stderr
    assert "\n  REPORT NOT WRITTEN (DrawingError: " in done.stdout and "\n  not stored: " in done.stdout
    assert done.stdout.rstrip().endswith("1 run(s): 1 report not written — FAILED"), done.stdout
    assert not (tmp_path / "store").exists()


def test_a_run_directory_relative_to_another_folder_is_the_callers(tmp_path):
    """`itchbench sim CAPTURE --out run` from any folder but the checkout's: the gateway and its meter, which run
    in the gateway's folder, were handed `run` as it was given and looked for it there (`itch-gateway: --out: run
    is not a directory`), and the run ended INCOMPLETE (testbench_failed)."""
    capture = paths.repo_root() / "fixtures" / "seed-workload.pcap"
    done = subprocess.run([sys.executable, "-m", "itchbench.cli", "sim", str(capture), "--out", "run"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "LOSSLESS: 7,000 messages, 1,123 BBO events, balanced" in done.stdout
    assert (tmp_path / "run" / "report.md").is_file() and (tmp_path / "run" / "gateway.json").is_file()
