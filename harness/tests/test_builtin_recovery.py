"""The built-in gateway's own recovery (gateway/pipeline/gap_recovery.hpp, docs/exchange.md), end to end with
real sockets in the run's namespace: udp-replay sends the session on multicast A and B lines, each losing
packets from its own seeded stream, and the exchange's re-request server holds the whole session. What each line
lost is udp-replay's record (line-faults.json) and the capture's faults the injector's sidecar; the BBO reference
is a simulation of the capture before any fault. None of them comes from the gateway under test."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from itchbench import paths, rundir
from itchbench.analysis import logs
from itchbench.runs import runner

from live_helpers import config

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
SAMPLE = paths.repo_root() / "fixtures" / "nasdaq-day-sample.pcap"
MESSAGES = 8000  # the fixture's session: sequences 1..8000


def _run(tmp_path: Path, *, lines: dict | None = None, server: dict | None = None, faults: dict | None = None,
         multicast: str = "239.1.1.1") -> dict:
    tables = {"replay": {"sender": "udp-replay", "rate": "pps", "pps": 5000, "multicast": multicast},
              "lines": {"b": True, "b_group": "239.1.1.2" if multicast else "", "skew_us": 200, "seed": 7,
                        **(lines or {})},
              "rerequest": {"server": server is not None, **(server or {})}}
    if faults:
        tables["faults"] = faults
    values = {**config(SAMPLE, "udp", **tables), "subscribers": 0}
    run = runner.execute(values, "builtin-recovery", root=tmp_path / "runs", echo=False)
    return rundir.read_json(run / "summary.json") | {"dir": str(run)}


def _lost(s: dict) -> tuple[set[int], set[int]]:
    lost = json.loads((Path(s["dir"]) / "line-faults.json").read_text())
    return set(lost["a"]), set(lost.get("b", []))


def _gateway(s: dict) -> dict:
    return rundir.read_json(Path(s["dir"]) / "gateway.json")


def _stale_events(s: dict) -> int:
    flags = logs.read_bbo(Path(s["dir"]) / "bbo.bbo").records["flags"]
    return int(np.count_nonzero(flags & logs.FLAG_BOOK_MAY_BE_STALE))


@needs_root
def test_both_lines_dropping_two_percent_with_a_server_are_recovered_by_route(tmp_path):
    s = _run(tmp_path, lines={"a_drop": 0.02, "b_drop": 0.02}, server={})
    a, b = _lost(s)
    r, g = s["reconciliation"]["recovery"], _gateway(s)["recovery"]
    assert s["verdict"]["status"] == "recovered" and s["verdict"]["exit_status"] == 0, s["verdict"]["headline"]
    assert a & b, "the seed must lose some messages on both lines"
    assert (r["from_the_other_line"], r["answered_by_server"]) == (len(a ^ b), len(a & b))
    # Messages lost on both lines can only have come from the server; each message was handed on once.
    assert g["messages_first"]["answers"] >= len(a & b)
    assert sum(g["messages_first"].values()) == MESSAGES and g["messages_given_up"] == 0
    assert g["duplicate_packets"] > 0 and g["gaps_open_at_end"] == 0 and g["held_at_end"] == 0
    # Every gap filled: the book is never marked stale, unlike a gateway that skips.
    assert _stale_events(s) == 0
    assert s["reconciliation"]["recovery"]["time_to_recover_ns"]["measured"] > 0
    assert "RECOVERED" in (Path(s["dir"]) / "report.md").read_text()


@needs_root
def test_it_still_recovers_when_the_server_drops_a_tenth_of_its_answers(tmp_path):
    s = _run(tmp_path, lines={"a_drop": 0.02, "b_drop": 0.02}, server={"drop_answers": 0.1, "seed": 3},
             faults={"seed": 5, "drop": 0.02})
    r, g = s["reconciliation"]["recovery"], _gateway(s)["recovery"]
    assert s["verdict"]["status"] == "recovered", s["verdict"]["headline"]
    assert r["answers_dropped"] > 0 and g["request_retries"] > 0
    assert r["never_answered"] == 0 and g["messages_given_up"] == 0


@needs_root
def test_a_capped_server_is_asked_again_for_the_rest_of_each_gap(tmp_path):
    # Each answer holds two messages at most: a longer gap is filled by several requests.
    s = _run(tmp_path, lines={"b": False, "b_group": "", "skew_us": 0}, server={"max_messages": 2, "max_payload": 200},
             faults={"seed": 5, "drop": 0.02})
    r, g = s["reconciliation"]["recovery"], _gateway(s)["recovery"]
    assert s["verdict"]["status"] == "recovered", s["verdict"]["headline"]
    dropped = json.loads(Path(s["capture"]).with_name(Path(s["capture"]).name + ".faults.json").read_text())
    assert r["answered_by_server"] == r["lost_on_wire"] == dropped["dropped_messages"] > 0
    assert g["requests"] >= r["lost_on_wire"] / 2 > g["gaps"]


@needs_root
def test_what_both_lines_lost_without_a_server_is_given_up_and_said(tmp_path):
    s = _run(tmp_path, lines={"a_drop": 0.02, "b_drop": 0.02})
    a, b = _lost(s)
    g = _gateway(s)
    assert s["verdict"]["status"] == "lost" and s["verdict"]["exit_status"] == 1, s["verdict"]["headline"]
    assert g["recovery"]["messages_given_up"] >= len(a & b) > 0
    assert g["sequence"]["gap_messages"] == g["recovery"]["messages_given_up"]
    assert _stale_events(s) > 0  # from the first skipped gap on


@needs_root
@pytest.mark.parametrize("lines", [{"a_duplicate": 0.05, "a_reorder": 0.05, "b_drop": 0.02},
                                   {"a_delay_us": 1000, "a_drop": 0.02}],
                         ids=["A duplicates and reorders", "B ahead of A"])
def test_duplicates_reorders_and_b_ahead_change_nothing_in_the_book(tmp_path, lines):
    # No re-request server: a gap the gateway gives up is lost. It waits 200 ms for the other line (or a reordered
    # copy), so that a sender or gateway held off its CPU on a busy machine is not taken for a loss.
    s = _run(tmp_path, lines={**lines, "wait_us": 200_000}, multicast="")
    g = _gateway(s)["recovery"]
    sent = rundir.read_json(Path(s["dir"]) / "udp-replay.json")
    assert s["verdict"]["status"] == "recovered", s["verdict"]["headline"]
    assert g["duplicate_packets"] >= sent["line_a_duplicated"] and g["messages_given_up"] == 0
    if "a_delay_us" in lines:
        # B's copies come first: most messages are B's, and A's losses cost nothing.
        assert g["messages_first"]["b"] > g["messages_first"]["a"]
    else:
        assert sent["line_a_duplicated"] > 0 and sent["line_a_reordered"] > 0
