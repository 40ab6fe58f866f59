"""Reports: rebuilt byte for byte, complete, readable."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from itchbench import rundir
from itchbench.analysis import drawing, logs, report, summary_index
from itchbench.captures import fixtures
from itchbench.runs import sim
from itchbench.cli import main as itchbench_main
from stamps_in_ns import stamps_in_ns


def digest_tree(run: Path) -> dict[str, str]:
    return {str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    return sim.run_sim(fixtures.load_manifest()[1].path, tmp_path_factory.mktemp("rep") / "run", echo=False)


def test_the_demo_index_names_a_run_by_its_verdict_and_golden_digest(run_dir, tmp_path):
    fx = fixtures.load_manifest()[1]
    capture = rundir.read_json(run_dir / "summary.json")["capture"]
    page = summary_index.write([run_dir], {capture: fx.golden["bbo_digest"]}, title="t", out_dir=tmp_path).read_text()
    row = next(line for line in page.splitlines() if line.startswith("| sim |"))
    assert "| lossless |" in row.lower() and f"| {fx.golden['bbo_events']:,} | yes |" in row, row


def test_report_rebuilds_byte_for_byte(run_dir, capsys):
    before = digest_tree(run_dir)
    assert itchbench_main(["report", str(run_dir)]) == 0
    first = digest_tree(run_dir)
    assert itchbench_main(["report", str(run_dir)]) == 0
    assert digest_tree(run_dir) == first
    assert first == before  # the run already wrote the same report
    for name in ["report.md", "summary.json", "plots/histogram.png", "plots/percentiles.png", "plots/over-time.png",
                 "hlog/receive_to_book.hlog"]:
        assert name in first, name


def test_report_sections_and_latency_summary(run_dir):
    text = (run_dir / "report.md").read_text()
    for heading in ["## Environment", "## Workload", "## Latency", "### By stage", "### Distribution",
                    "### By message type", "### By symbol", "### Plots", "## Reconciliation"]:
        assert heading in text, heading
    assert "Percentiles by numpy's `higher` method" in text and "population" in text
    lat = rundir.read_json(run_dir / "summary.json")["latency"]
    assert lat["method"] == "higher"
    assert lat["stages"]["receive_to_book"]["count"] == 8000
    assert set(lat["stages"]["receive_to_book"]) == {"count", "mean", "min", "max", "p50", "p90", "p95", "p99",
                                                      "p999", "p9999", "stddev"}
    assert "AAPL" in lat["by_symbol"] and "A" in lat["by_type"]


def test_hlog_reads_back_with_the_hdrhistogram_reader(run_dir):
    reader = HistogramLogReader(str(run_dir / "hlog" / "receive_to_book.hlog"), HdrHistogram(1, 3_600_000_000_000, 3))
    h = reader.get_next_interval_histogram()
    rec = logs.read_latency(run_dir / "latency.lat").records
    path = run_dir / "latency.lat"
    values = np.sort(stamps_in_ns(path, rec["t_book"]) - stamps_in_ns(path, rec["t_read"]))  # sim: no kernel stamp
    assert h.get_total_count() == values.size == 8000
    # HdrHistogram's percentile is the textbook nearest rank, 1-based ceil(n*p) (our default, numpy's
    # `higher`, is one rank above when n*p is whole), exact below 2048 and within 3 significant digits above.
    for p in (50, 90, 99, 99.9):
        expected = values[math.ceil(values.size * p / 100) - 1]
        assert abs(h.get_value_at_percentile(p) - expected) <= expected * 0.001 + 1, p


def test_warmup_is_reported_apart_and_csv_on_request(run_dir, tmp_path):
    import shutil
    import json

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["scenario"]["warmup_messages"] = 1000
    (copy / "manifest.json").write_text(json.dumps(manifest))
    report.build(copy, method="linear", csv=True)
    lat = rundir.read_json(copy / "summary.json")["latency"]
    assert lat["warmup_messages"] == 1000 and lat["stages"]["receive_to_book"]["count"] == 7000
    assert lat["warmup"]["receive_to_book"]["count"] == 1000
    assert lat["method"] == "linear" and "### Warm-up (excluded above)" in (copy / "report.md").read_text()
    header = (copy / "latency.csv").read_text().splitlines()[0]
    assert header.startswith("seq,type,symbol,locate,t_receive,parse,decode,book")
    assert len((copy / "latency.csv").read_text().splitlines()) == 7001


def _message_slots(path: Path, header_size: int, slot_size: int) -> int:
    """The message slots among a version-5 latency log's whole slots (gateway/log/FORMAT.md: a slot is an escape by
    bit 0x40 of its last byte). A message's stamp steps beyond 65 µs take escape slots (a busy machine's), so a cut
    of N slots loses N messages or fewer."""
    data = path.read_bytes()[header_size:]
    flags = np.frombuffer(data[:len(data) // slot_size * slot_size], np.uint8)[slot_size - 1::slot_size]
    return int(np.count_nonzero(flags & 0x40 == 0))


def test_a_complete_runs_log_cut_afterwards_is_refused_and_its_report_kept(run_dir, tmp_path, capsys):
    # The run ended complete; then its latency log lost 1,000 slots and 7 bytes (a copy cut short).
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    lat = copy / "latency.lat"
    log = logs.read_latency(lat)
    size = int(log.header["record_size"])
    escapes = len(log.stored) - 8000
    os.truncate(lat, lat.stat().st_size - 1000 * size - 7)
    kept_records = _message_slots(lat, log.header_size, size)
    before = digest_tree(copy)
    assert itchbench_main(["report", str(copy)]) == 2
    err = capsys.readouterr().err
    assert ("the run ended complete, and its logs no longer read whole (latency.lat: file ends mid-record: "
            f"{size - 7} trailing bytes ignored") in err and "not rebuilt" in err
    assert digest_tree(copy) == before  # nothing rewritten
    # Nor is a document made, or a compare judged, from it.
    assert itchbench_main(["doc", str(copy), "--out", str(tmp_path / "doc")]) == 2
    assert "no longer read whole (latency.lat" in capsys.readouterr().err and not (tmp_path / "doc").exists()
    assert itchbench_main(["compare", str(run_dir), str(copy), "--out", str(tmp_path / "cmp")]) == 2
    assert "head " + str(copy) + ": the run ended complete" in capsys.readouterr().err
    # Nor stored with its messages; its summary's figures alone, when asked.
    assert itchbench_main(["history", str(tmp_path / "store"), "--append", str(copy)]) == 2
    assert "nothing stored" in capsys.readouterr().err and not (tmp_path / "store").exists()
    assert itchbench_main(["history", str(tmp_path / "store"), "--append", str(copy), "--no-messages"]) == 0
    # Dumping and exporting what it holds still work, said partial, exit 1.
    assert itchbench_main(["export", str(copy), "--out", str(tmp_path / "part.parquet")]) == 1
    assert "part.parquet is partial: " in capsys.readouterr().err
    # The file says so itself, for whoever reads it without the command's output; a whole export does not.
    said = (pq.read_schema(tmp_path / "part.parquet").metadata or {}).get(b"itchbench.partial", b"").decode()
    assert "latency.lat: file ends mid-record" in said, said
    assert itchbench_main(["export", str(run_dir), "--out", str(tmp_path / "whole.parquet")]) == 0
    assert b"itchbench.partial" not in (pq.read_schema(tmp_path / "whole.parquet").metadata or {})
    capsys.readouterr()
    # CSV has no metadata: its name says it, and a whole export already under the name asked for is left as it was.
    whole_csv = tmp_path / "latency.csv"
    assert itchbench_main(["export", str(run_dir), "--format", "csv", "--out", str(whole_csv)]) == 0
    assert capsys.readouterr().out.strip() == str(whole_csv)
    whole_text = whole_csv.read_text()
    assert itchbench_main(["export", str(copy), "--format", "csv", "--out", str(whole_csv)]) == 1
    out, err = capsys.readouterr()
    assert out.strip() == str(tmp_path / "latency.partial.csv") and f"(not {whole_csv}: the name says" in err
    assert "latency.partial.csv is partial: " in err and "latency.lat: file ends mid-record" in err
    # Its header's count is of slots, escapes among them, and said so: the rows are the messages.
    assert f"the file holds {8000 + escapes - 1001:,}: read" in err and "slots, the file holds" in err, err
    assert whole_csv.read_text() == whole_text
    kept = (tmp_path / "latency.partial.csv").read_text().splitlines()
    assert kept[0] == whole_text.splitlines()[0] and len(kept) - 1 == kept_records and 6999 <= kept_records < 8000
    assert not list(tmp_path.glob("*.csv.partial"))
    os.truncate(copy / "bbo.bbo", (copy / "bbo.bbo").stat().st_size - 5)
    assert itchbench_main(["dump", "bbo", str(copy)]) == 1
    out, err = capsys.readouterr()
    assert "the CSV is partial: " in err and "bbo.bbo: file ends mid-record" in err
    assert len(out.splitlines()) == 1 + len(logs.read_bbo(run_dir / "bbo.bbo").records) - 1  # the header, all but one
    assert itchbench_main(["dump", "bbo", str(run_dir)]) == 0
    capsys.readouterr()


def test_a_complete_runs_log_overwritten_at_its_start_is_refused(run_dir, tmp_path, capsys):
    # Its length intact, the BBO log's first bytes damaged: no longer a log by its magic, which a scan of the run's
    # files for logs would pass over, rebuilding the report as if nothing had happened (it did, before).
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    with (copy / "bbo.bbo").open("r+b") as f:
        f.write(b"GARBAGE!")
    before = digest_tree(copy)
    assert itchbench_main(["report", str(copy)]) == 2
    err = capsys.readouterr().err
    assert "its logs no longer read whole (bbo.bbo: not an itchbench log" in err and "not rebuilt" in err
    assert digest_tree(copy) == before
    assert itchbench_main(["compare", str(run_dir), str(copy), "--out", str(tmp_path / "cmp")]) == 2
    assert "head " + str(copy) + ": the run ended complete" in capsys.readouterr().err
    # A whole log, of another kind, in its place.
    swapped = tmp_path / "swapped"
    shutil.copytree(run_dir, swapped)
    shutil.copyfile(run_dir / "bbo.bbo", swapped / "latency.lat")
    assert itchbench_main(["report", str(swapped)]) == 2
    assert "latency.lat: a bbo log, expected a latency log" in capsys.readouterr().err


def test_a_complete_runs_event_log_changed_in_its_middle_is_refused(run_dir, tmp_path, capsys):
    # Its length and its start intact, so it reads whole: one BBO record's bid price changed (a bad copy, a disk's
    # fault). Rebuilt, the report would have said the run's digest and verdict over events the log no longer holds.
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    recorded = rundir.read_json(copy / "summary.json")["bbo"]["digest"]
    raw = bytearray((copy / "bbo.bbo").read_bytes())
    # FORMAT.md: a 128-byte header, 48-byte BBO records, the bid price (u32) at offset 32 of a record; the digest
    # is SHA-256 of the records' bytes.
    assert recorded == "sha256:" + hashlib.sha256(raw[128:]).hexdigest()
    at = 128 + 48 * ((len(raw) - 128) // 48 // 2) + 32
    raw[at:at + 4] = (int.from_bytes(raw[at:at + 4], "little") + 100).to_bytes(4, "little")
    (copy / "bbo.bbo").write_bytes(raw)
    before = digest_tree(copy)
    assert itchbench_main(["report", str(copy)]) == 2
    err = capsys.readouterr().err
    assert (f"its logs no longer hold the events the run recorded (bbo.bbo: its events' digest is "
            f"sha256:{hashlib.sha256(raw[128:]).hexdigest()}, the run recorded {recorded})") in err
    assert "not rebuilt" in err and digest_tree(copy) == before
    # Nor is its output judged as a build's: BBO OUTPUT DIFFERS, exit 1, before.
    assert itchbench_main(["compare", str(run_dir), str(copy), "--out", str(tmp_path / "cmp"),
                           "--no-instructions"]) == 2
    assert f"head {copy}: its logs no longer hold the events the run recorded (bbo.bbo" in capsys.readouterr().err
    # Nor is a document made from it, which would say the run's verdict and digest.
    assert itchbench_main(["doc", str(copy), "--out", str(tmp_path / "doc")]) == 2
    assert f"{copy}: its logs no longer hold the events" in capsys.readouterr().err and not (tmp_path / "doc").exists()
    assert itchbench_main(["report", str(run_dir)]) == 0  # the run as it was still rebuilds
    capsys.readouterr()
    # Dumped or exported, its events are written as they are now, and said not to be the run's (exit 1): they had
    # been handed on, exit 0, as the run's.
    changed = (f"its logs no longer hold the events the run recorded (bbo.bbo: its events' digest is "
               f"sha256:{hashlib.sha256(raw[128:]).hexdigest()}, the run recorded {recorded})")
    assert itchbench_main(["dump", "bbo", str(copy)]) == 1
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 + (len(raw) - 128) // 48 and f"itchbench: the CSV is not the run's: {copy}: " \
        f"{changed}" in err, err
    assert itchbench_main(["export", str(copy), "--bbo", "--out", str(tmp_path / "bbo.csv")]) == 1
    assert f"itchbench: {tmp_path / 'bbo.csv'} is not the run's: {copy}: {changed}" in capsys.readouterr().err
    # Its latency log is as it was, and so is the run it was copied from.
    assert itchbench_main(["export", str(copy), "--out", str(tmp_path / "latency.csv")]) == 0
    assert itchbench_main(["dump", "bbo", str(run_dir)]) == 0
    capsys.readouterr()


def test_a_depth_runs_depth_log_changed_in_its_middle_is_refused(tmp_path, capsys):
    run = sim.run_sim(fixtures.load_manifest()[1].path, tmp_path / "run", echo=False, levels=5)
    assert itchbench_main(["report", str(run)]) == 0
    capsys.readouterr()
    recorded = rundir.read_json(run / "summary.json")["depth"]["digest"]
    raw = bytearray((run / "depth.dep").read_bytes())
    # FORMAT.md, "Level change slot": 16-byte slots after the 128-byte header, the flags in the last byte (0x80
    # written, 0x10 anchor, 0x20 high shares), the shares' low 32 bits at offset 4. The last change's shares, one
    # more: a level the book never held.
    slots = range(128, len(raw), 16)
    last = next(at for at in reversed(slots) if raw[at + 15] & 0x80 and not raw[at + 15] & 0x30)
    raw[last + 4:last + 8] = (int.from_bytes(raw[last + 4:last + 8], "little") + 1).to_bytes(4, "little")
    (run / "depth.dep").write_bytes(raw)
    assert itchbench_main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert "its logs no longer hold the events the run recorded (depth.dep: its events' digest is sha256:" in err
    assert f", the run recorded {recorded})" in err and "not rebuilt" in err
    # Its depth dumped: written, and said not to be the run's; its BBO log, unchanged, dumps as the run's.
    assert itchbench_main(["dump", "depth", str(run)]) == 1
    err = capsys.readouterr().err
    assert "itchbench: the CSV is not the run's: " in err and f", the run recorded {recorded})" in err, err
    assert itchbench_main(["dump", "bbo", str(run)]) == 0
    capsys.readouterr()


def test_an_index_set_aside_is_said_on_one_line(run_dir, tmp_path):
    # The latency log's index damaged (its first block's slot count): the report is rebuilt from the log itself, and
    # says so as itchbench says its errors, not with Python's file, line and source line of the warning.
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    idx = bytearray((copy / "latency.idx").read_bytes())
    idx[logs.HEADER_SIZE + 8:logs.HEADER_SIZE + 16] = b"\xff" * 8
    (copy / "latency.idx").write_bytes(bytes(idx))
    done = subprocess.run([sys.executable, "-m", "itchbench.cli", "report", str(copy)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == (f"itchbench: warning: {copy / 'latency.idx'} set aside: {copy / 'latency.lat'}: its "
                           "index's block 0 does not follow the block before it\n")
    assert (copy / "report.md").read_bytes() == (run_dir / "report.md").read_bytes()


def test_a_run_whose_output_is_gone_is_not_compared_as_one_that_published_nothing(tmp_path, capsys):
    # Before, a head whose BBO log had been deleted read as a gateway that sent no event: "BBO DIFFERS: 5,833
    # missing", exit 1, though it had sent them all.
    base = tmp_path / "base"
    assert itchbench_main(["sim", str(fixtures.load_manifest()[1].path), "--levels", "5", "--out", str(base)]) == 0
    held = {"bbo.bbo": (len(logs.read_bbo(base / "bbo.bbo").records), "BBO"),
            "depth.dep": (logs.depth_summary(logs.read_depth(base / "depth.dep")).events, "depth")}
    for gone, (events, kind) in held.items():
        copy = tmp_path / gone / "run"
        shutil.copytree(base, copy)
        (copy / gone).unlink()
        assert itchbench_main(["compare", str(base), str(copy), "--out", str(tmp_path / gone / "cmp")]) == 2
        err = capsys.readouterr().err
        assert f"head {copy}: {gone} ({events:,} {kind} events) no longer there" in err, err



def test_a_plot_that_cannot_be_written_is_said_on_a_line_and_fails(run_dir, tmp_path, capfd):
    """A plot the drawing process could not write (here its file's name taken by a folder; a full disk alike) ended
    `itchbench report` with two tracebacks and exit 1. Now each failure is a line: the plot and the system's error,
    then that the report's plots failed."""
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (run / "plots" / "histogram.png").unlink()
    (run / "plots" / "histogram.png").mkdir()
    drawing.stop_waiting()  # one started before writes its lines where that test's stderr was
    assert itchbench_main(["report", str(run)]) == 1
    err = capfd.readouterr().err
    assert "itchbench: drawing histogram: [Errno 21] Is a directory" in err, err
    assert "itchbench: drawing the report's plots failed (the drawing process exited with 1)" in err, err
    assert "Traceback" not in err, err


def test_report_of_a_non_run_directory(tmp_path, capsys):
    assert itchbench_main(["report", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_a_run_that_has_not_ended_is_said_so_not_called_no_run(run_dir, tmp_path, capsys):
    # Its manifest is a run's first file, its summary the last: a copy without the summary (and, as at the start
    # of a run, without the gateway's counters) is a run still going, or killed before its end.
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (run / "summary.json").unlink()
    (run / "gateway.json").unlink()
    for command in (["report", str(run)], ["dump", "bbo", str(run)]):
        assert itchbench_main(command) == 2
        err = capsys.readouterr().err
        assert "is a run that has not ended (" in err and "it is still running, or it was killed before its end" \
            in err, err


@pytest.mark.parametrize("name", ["manifest.json", "summary.json", "gateway.json"])
@pytest.mark.parametrize("content, said", [
    (b"[]", "a JSON array where an object ({...}) is written"),
    (b"null", "a JSON null where an object ({...}) is written"),
    (b'"x"', "a JSON string where an object ({...}) is written"),
    (b"\xff{}", "not UTF-8 text, as JSON must be (byte 0: 0xff)"),
])
def test_a_runs_json_file_that_is_no_object_is_refused_by_every_reader(run_dir, tmp_path, capfd, name, content,
                                                                       said):
    # A run's JSON files are objects; one damaged into valid JSON of another type, or into bytes that are not
    # UTF-8, had ended report, dump, export, doc and history in a traceback (a list "has no attribute 'get'").
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (run / name).write_bytes(content)
    for command in (["report", str(run)], ["dump", "bbo", str(run)], ["export", str(run), "--out",
                    str(tmp_path / "x.csv")], ["doc", str(run), "--out", str(tmp_path / "doc")],
                    ["history", str(tmp_path / "store"), "--append", str(run)]):
        code = itchbench_main(command)
        err = capfd.readouterr().err
        assert "Traceback" not in err, (command, err)
        # A command that needs the file refuses the run and says why; one that does not (dump, of the manifest)
        # does its work. report reads all three.
        assert (code == 2 and f"{run / name}: {said}" in err) or (code == 0 and command[0] != "report"), \
            (command, code, err)


@pytest.mark.parametrize("name, key", [("manifest.json", "scenario"), ("manifest.json", "capture_sha256"),
                                       ("summary.json", "verdict"), ("summary.json", "complete")])
def test_a_runs_json_file_without_a_key_every_run_has_is_refused(run_dir, tmp_path, capfd, name, key):
    # Written by another version of itchbench, or edited: report, doc and history had ended in a KeyError.
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    data = json.loads((run / name).read_text())
    del data[key]
    (run / name).write_text(json.dumps(data))
    # Every reader needs the run's scenario and verdict; a report or a document, its capture's digest and whether
    # it ended complete too. A reader that needs the key refuses the run, naming it; one that does not, reads it.
    every = key in ("scenario", "verdict")
    for command in (["report", str(run)], ["doc", str(run), "--out", str(tmp_path / "doc")],
                    ["history", str(tmp_path / "store"), "--append", str(run)]):
        code = itchbench_main(command)
        err = capfd.readouterr().err
        assert "Traceback" not in err, (command, err)
        if every or command[0] != "history":
            assert code == 2 and f"{run / name}: no '{key}', which every run's has (written by another version of " \
                "itchbench, or edited since): not read as a run's" in err, (command, code, err)
        else:
            assert code == 0, (command, code, err)


def test_a_summary_without_its_bbo_digest_says_so_in_the_report(run_dir, tmp_path):
    # A run whose reconciliation failed recorded no BBO digest; the report's counts section had ended in
    # KeyError: 'bbo' rather than say that none was recorded.
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    data = json.loads((run / "summary.json").read_text())
    del data["bbo"]
    (run / "summary.json").write_text(json.dumps(data))
    assert itchbench_main(["report", str(run)]) == 0
    text = (run / "report.md").read_text()
    assert "BBO digest: not recorded." in text and "BBO digest `" not in text


def test_receive_words_say_how_many_kernel_stamps_were_not_placed():
    xdp = {"attach_mode": "skb", "bind_mode": "copy", "hook_stamps": 7001, "hook_stamps_unplaced": 0}
    assert report._receive_words({"gateway": {"af_xdp": xdp}}, "af_xdp").endswith(
        "; 7,001 frames stamped at the hook)")
    xdp["hook_stamps_unplaced"] = 3
    assert report._receive_words({"gateway": {"af_xdp": xdp}}, "af_xdp").endswith(
        "7,001 frames stamped at the hook, 3 of those stamps not placed on the gateway's clock (no kernel receive "
        "stamp))")
    udp = {"kernel_timestamps": 7001, "kernel_timestamps_unplaced": 0}
    assert report._receive_words({"gateway": {"udp": udp}}, "") == ""
    udp["kernel_timestamps_unplaced"] = 2
    assert report._receive_words({"gateway": {"udp": udp}}, "") == (
        "; 2 of the kernel's receive stamps not placed on the gateway's clock (left out)")
    # CLOCK_REALTIME set during the run (gateway/source/kernel_stamps.hpp): the stamps that may have waited across
    # it are among those left out, and the words say so; set with none waiting, that is said alone.
    udp.update(kernel_timestamps_unplaced=5, kernel_timestamps_across_step=3, realtime_steps=2,
               realtime_largest_step_ns=501_200)
    assert report._receive_words({"gateway": {"udp": udp}}, "") == (
        "; 5 of the kernel's receive stamps not placed on the gateway's clock (left out; 3 of them may have waited "
        "across a step: CLOCK_REALTIME, which the kernel stamps on, was set 2 times during the run (by up to "
        "501.2 µs))")
    udp.update(kernel_timestamps_unplaced=0, kernel_timestamps_across_step=0, realtime_steps=1)
    assert report._receive_words({"gateway": {"udp": udp}}, "") == (
        "; CLOCK_REALTIME, which the kernel stamps on, was set 1 time during the run (by up to 501.2 µs), no stamp "
        "waiting across it")


def test_a_run_whose_latency_log_is_gone_is_not_stored_as_one_without_messages(run_dir, tmp_path, capsys):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    (copy / "latency.lat").unlink()
    assert itchbench_main(["history", str(tmp_path / "store"), "--append", str(copy)]) == 2
    assert "its latency log (latency.lat), which its report was made from, is gone" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()
    assert itchbench_main(["history", str(tmp_path / "store"), "--append", str(copy), "--no-messages"]) == 0
    # A run made without a latency log is stored with its metrics alone, as before.
    plain = tmp_path / "plain"
    assert itchbench_main(["sim", str(fixtures.load_manifest()[1].path), "--no-latency-log", "--out", str(plain)]) == 0
    assert itchbench_main(["history", str(tmp_path / "store2"), "--append", str(plain)]) == 0


def test_a_damaged_capture_s_symbols_stay_one_field_and_one_cell(tmp_path, capsys):
    """The stock directory's symbols of a capture whose bytes were damaged (a comma, a quote and a newline; a tab,
    a carriage return; NULs; bytes not ASCII; a pipe): `dump bbo` wrote them as they were, so a carriage return
    split a CSV row in two, and a run's report put a pipe in its by-symbol table, splitting the row's cells. Each
    now stays one field (printable ASCII, the rest written \\xNN) and one cell (the pipe escaped); the names
    expected are written here from the bytes put in."""
    import csv
    import io
    import struct

    put = [b'A,B"C\n  ', b"x\ty\rz   ", b"\0" * 8, b"\xff\xfeXY    ", b"a|b|c   "]
    shown = ['A,B"C\\x0A', "x\\x09y\\x0Dz", "\\x00" * 8, "\\xFF\\xFEXY", "a|b|c"]
    data = bytearray(fixtures.load_manifest()[1].path.read_bytes())
    off, named = 24, 0
    while off + 16 <= len(data):  # each stock directory (R) message's symbol, 11 bytes in, in turn
        incl = struct.unpack_from("<I", data, off + 8)[0]
        payload = off + 16 + 14 + (data[off + 16 + 14] & 0x0F) * 4 + 8
        count, at = struct.unpack_from(">H", data, payload + 18)[0], payload + 20
        for _ in range(count if count != 0xFFFF else 0):
            length = struct.unpack_from(">H", data, at)[0]
            if data[at + 2] == ord("R"):
                data[at + 2 + 11: at + 2 + 19] = put[named % len(put)]
                named += 1
            at += 2 + length
        off += 16 + incl
    capture = tmp_path / "symbols.pcap"
    capture.write_bytes(bytes(data))
    run = sim.run_sim(capture, tmp_path / "run", echo=False)
    capsys.readouterr()
    assert itchbench_main(["dump", "bbo", str(run)]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out, newline="")))
    assert {len(row) for row in rows} == {7}
    assert set(shown) <= {row[1] for row in rows[1:]}
    table = [line for line in (run / "report.md").read_text().splitlines() if line.startswith("| a\\|b\\|c |")]
    assert table and all(len(line.replace("\\|", "").split("|")) == 13 for line in table), table
