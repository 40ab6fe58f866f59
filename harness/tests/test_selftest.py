"""The mutant zoo (itchbench selftest, docs/selftest.md): every mutant still plants its defect in the current
examples; the whole zoo runs, every mutant caught with the verdict the zoo names for it (worked out from what the
defect does to the stream, not from a run) and every unchanged example passing; and with a check of itchbench's
taken out, the selftest names the mutant that now passes and fails."""

from __future__ import annotations

import functools
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from itchbench import paths, rundir
from itchbench.captures import fixtures
from itchbench.gateways import blackbox
from itchbench.selftest import runner, zoo

from independent_bbo import bbo_events, mold_messages, udp_payloads
from live_helpers import leftover_processes

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


@pytest.mark.parametrize("mutant", zoo.MUTANTS, ids=[m.name for m in zoo.MUTANTS])
def test_each_mutant_is_one_planted_defect_away_from_its_example(mutant, tmp_path):
    copy = zoo.materialise(mutant.example, mutant.edits, tmp_path / "m")
    # What the contract is made to claim is not the defect: a control claims the same and passes.
    claims = tuple(e for e in mutant.edits if e.file == "itchbench.toml")
    assert not claims or any(c.edits == claims and (c.example, c.scenario) == (mutant.example, mutant.scenario)
                             for c in zoo.CONTROLS)
    changed = {e.file for e in mutant.edits if e not in claims}
    assert changed
    for name in changed:  # each edit made, and nothing else in the file changed
        original = (zoo.example_dir(mutant.example) / name).read_text()
        mutated = (copy / name).read_text()
        assert mutated != original and "MUTANT" in mutated
        assert original.count("MUTANT") == 0
    assert zoo.scenario_path(mutant.scenario).is_file()


def test_an_anchor_that_no_longer_stands_in_the_example_is_refused(tmp_path):
    with pytest.raises(zoo.ZooError, match="stands 0 times, not once"):
        zoo.materialise(zoo.PY, (zoo.Edit("this line is in no gateway\n", "x"),), tmp_path / "m")


def test_the_zoo_covers_every_input_and_more_than_thirty_defects():
    assert len(zoo.MUTANTS) >= 30 and len({m.name for m in zoo.MUTANTS}) == len(zoo.MUTANTS)
    assert {m.scenario for m in zoo.MUTANTS} == {"udp", "serial", "serial-noise", "file", "faulted-file", "udp-faults",
                                                 "lines", "recovery", "join", "join-depth", "heartbeats", "udp-depth",
                                                 "udp-every-level", "udp-wide", "file-wide", "udp-corrupt"}
    # Every scenario a mutant runs on has a control: the unchanged example passing there.
    assert {(m.example, m.scenario) for m in zoo.MUTANTS} <= {(c.example, c.scenario) for c in zoo.CONTROLS}
    # And every control is run by the whole zoo: one on a scenario no mutant uses (or whose claim none makes) proves
    # nothing, and would be listed here yet never run.
    assert zoo.select(quick=False)[1] == list(zoo.CONTROLS)


@functools.cache
def _wide_counts() -> dict[str, int]:
    """Of the wide-fields sample's BBO events by the independent book (independent_bbo.py): how many there are, how
    many of stocks whose locate is above 32,767, of a packet numbered from 2^32 on (a packet carries its first
    message's number: one begun below 2^32 is numbered right), and with a side of more than 2^32 shares."""
    fx = next(f for f in fixtures.load_manifest() if f.name == "wide-fields-sample")
    locate = {m[11:19].decode().rstrip(" "): struct.unpack_from(">H", m, 1)[0]
              for _, m in mold_messages(fx.path) if m[:1] == b"R"}
    wrapped = min(s for s in (struct.unpack_from(">Q", p, 10)[0] for p in udp_payloads(fx.path)) if s >= 1 << 32)
    events = bbo_events(fx.path)
    return {"events": len(events), "high_locate": sum(locate[e[1]] > 32767 for e in events),
            "past_2_32": sum(e[0] >= wrapped for e in events),
            "over_2_32_shares": sum(e[3] > 1 << 32 or e[5] > 1 << 32 for e in events)}


def _wide(counted: str, kind: str) -> Callable[[str], bool]:
    """The headline's counts on the wide fields: the independent book's `counted` events all of `kind`, no other."""
    def named(h: str) -> bool:
        c = _wide_counts()
        counts = {"missing": 0, "extra": 0, "wrong": 0, kind: c[counted]}
        return c[counted] > 0 and h.startswith(f"BBO DIFFERS (exact): {counts['missing']:,} missing, "
                                               f"{counts['extra']:,} extra, {counts['wrong']:,} wrong of "
                                               f"{c['events']:,} reference events; ")
    return named


def _reached_before(h: str, seq: int, messages: int) -> bool:
    """The headline ends with how far the output got: a seq below `seq`, and the messages after it of a session of
    `messages` numbered from 1."""
    said = re.search(r"its BBO output reached seq ([\d,]+), ([\d,]+) of the capture's ([\d,]+) messages after it$", h)
    if said is None:
        return False
    reached, after, whole = (int(x.replace(",", "")) for x in said.groups())
    return 0 < reached < seq and whole == messages and after == messages - reached


# What a verdict must name beyond its status, per mutant: it names only what was observed.
HEADLINES = {
    # A JSON number with a fraction is no whole number of shares: malformed, and said why, not rounded to a pass.
    "json-shares-off-by-a-fraction": lambda h: h.startswith("BBO DIFFERS (exact): ") and re.search(
        r"malformed lines \(e\.g\. '.*\"bid_qty\": \d+\.25.*': bid_qty \d+\.25 is not a whole number", h) is not None,
    # A field kept narrow is wrong exactly where the wide fields leave the corner: every event of a locate above
    # 32,767 missing (its line malformed), every event past seq 2^32 missing, every event of more than 2^32 shares
    # at the touch wrong.
    "locate-signed": lambda h: _wide("high_locate", "missing")(h)
    and f"; {_wide_counts()['high_locate']:,} malformed lines (e.g. " in h,
    "sequence-in-32-bits": _wide("past_2_32", "missing"),
    "cpp-shares-summed-in-32-bits": _wide("over_2_32_shares", "wrong"),
    # Its one seq's events past 2^22 (gateways/in_parts.py ONE_SEQ_MOST) are a flood: judged up to that seq, where its
    # first difference is, and judged no further, what was read after it and the bytes left unread said (where the
    # output's parts fall, by its stamps' digits, decides which). Of the 4,500,001 copies of that event,
    # all but the one expected are extra, and no more than were sent are read.
    "flood": lambda h: (said := re.fullmatch(
        r"BBO DIFFERS \(exact\): 0 missing, ([\d,]+) extra, 0 wrong of [\d,]+ reference events; first at seq ([\d,]+) "
        r".*; judged up to seq \2 only: the output then held ([\d,]+) events of that one seq \(more than 4,194,304, a "
        r"flood\) and was (?:read no further|judged no further, [1-9][\d,]* events read after them), [\d,]+ bytes "
        r"unread", h)) is not None
    and 4_194_304 < int(said[3].replace(",", "")) == int(said[1].replace(",", "")) + 1 <= 4_500_001,
    # The out-of-order mutant's headline counts only out-of-order events.
    "out-of-order": lambda h: "0 missing, 0 extra, 0 wrong," in h and "out of order (after a later event" in h,
    # Held a read back: its stock's events that the next read's passed are out of order, however the line was read.
    "out-of-order-serial": lambda h: "0 missing, 0 extra, 0 wrong," in h and "out of order (after a later event" in h,
    "no-snapshot": lambda h: h.startswith("NOT JOINED at seq "),
    # Its output is the simulation's: only that it never opened the capture it was given tells (runs/opens.py).
    "file-output-from-a-recording": lambda h: h == "NOT BALANCED: failed: the gateway opened the capture it was given",
    # Killed at the packet that carries seq 2,000: its output reached a seq before it (docs/gateway-contract.md),
    # and the session, numbered from 1, has 8,000 - that seq messages after it.
    "crash-mid-run": lambda h: "killed by SIGSEGV" in h and _reached_before(h, 2000, 8000),
    "end-of-session-ignored": lambda h: "did not end by itself" in h,
    # Ended at a heartbeat in the middle of the session: early (by the sender's last message, or the sender refused
    # by its closed port), never taken for the end of session.
    "heartbeat-as-end": lambda h: h.startswith("INCOMPLETE (gateway_stopped_early): the gateway ended by itself "
                                               "(exited with status 0)"),
    # Asleep two seconds after it said it was ready: what was sent meanwhile found no socket, and is said as lost.
    "slow-start": lambda h: re.match(r"LOST: the kernel found no socket for at least [\d,]+ datagrams sent up to the "
                                     r"session's last message \(the gateway's feed socket not bound", h) is not None,
    # Its helper named by its command line, its own exit said as what it was.
    "helper-left-running": lambda h: h.startswith("INCOMPLETE (gateway_failed): the gateway ended by itself (exited "
                                                  "with status 0), but it left 1 process running ")
    and "`sleep 3600`" in h,
    "hang-at-end": lambda h: "did not stop within 2 s of SIGTERM: killed (SIGKILL)" in h,
    # A depth bug is named at its level: the zero-share level left at the top of stock 2's bid.
    "depth-empty-level-kept": lambda h: h.startswith("BBO DIFFERS (exact, depth of 5 levels): ")
    and "bid level 1: 0 shares at" in h,
    # One share too many at a level below the top: named there, the shares one more than expected at the same price.
    "depth-deep-level-shares": lambda h: h.startswith("BBO DIFFERS (exact, depth of 5 levels): ")
    and any(int(m[1].replace(",", "")) == int(m[3].replace(",", "")) + 1 for m in re.finditer(
        r"level \d+: ([\d,]+) shares at (\d+), expected ([\d,]+) shares at \2", h)),
    # The built-in gateway's depth publisher: its TCP subscriber's checks fail, the ring's pass.
    "depth-frames-unsent": lambda h: h.startswith("NOT BALANCED: failed: ") and "(TCP, depth)" in h
    and "(shared memory, depth)" not in h,
    # The built-in gateway's snapshot depth: each stock's top levels at the join never logged, so the level changes
    # after it take out levels a reader never had: its depth log refused, the first such record named.
    "snapshot-depth-missed": lambda h: h.startswith("NOT BALANCED: failed: depth log holds together (its records "
                                                    "rebuild every event): depth record ") and "top levels" in h,
    # A brought gateway's: its events after the join are right, the books it took at the join never published.
    "snapshot-depth-unsaid": lambda h: h.startswith("DEPTH DIFFERS after joining at seq 3,992: ")
    and "stocks' books at the join differ (first: stock " in h,
    # Every level: the wrong level named by its side and price, its shares one more than expected.
    "every-level-deep-level-shares": lambda h: h.startswith("BBO DIFFERS (exact, depth of every level): ")
    and any(int(m[2].replace(",", "")) == int(m[3].replace(",", "")) + 1 for m in re.finditer(
        r"wrong: (bid|ask) \d+: ([\d,]+) shares, expected ([\d,]+)", h)),
    # A replace's two changes swapped: each is right, the second is out of its stock's order.
    "every-level-new-price-first": lambda h: "0 missing, 0 extra, 0 wrong," in h and "out of order" in h,
    "level-changes-new-price-first": lambda h: h == "NOT BALANCED: failed: depth digest = simulation's digest",
    # A white box's own log: every one of the 8,000 messages (docs/selftest.md) stamped book before decoded; the
    # session's first message, a system event (S), not a book message.
    "white-box-stamps-backwards": lambda h: h == "NOT BALANCED: failed: white-box stamps in stage order: 8,000 records "
    "with a stage stamped before the one before it (first: seq 1, t_book before t_decoded)",
    # Stamps of another clock: CLOCK_REALTIME lies decades after each event's arrival; µs lie long before each send
    # (of the 8,000 messages, the 5,833 that published an event are held to its arrival).
    "white-box-microseconds": lambda h: h.startswith("NOT BALANCED: failed: white-box stamps on the run's clock "
                                                     "(CLOCK_MONOTONIC): none before its message was sent, none after "
                                                     "its BBO event arrived: 8,000 records stamped before its message "
                                                     "was sent (first: seq 1, "),
    "white-box-log-unclosed": lambda h: h.startswith("NOT BALANCED: failed: white-box latency log written and closed "
                                                     "by the gateway") and "never closed" in h,
    "white-box-book-messages-only": lambda h: re.fullmatch(
        r"NOT BALANCED: failed: white-box latency log: one record a message of the capture: [\d,]+ of 8,000 messages "
        r"have no record \(first: seq 1\)", h) is not None,
    # Every one of the slice's 8,000 messages twice, the first the session's first.
    "cpp-white-box-recorded-twice": lambda h: h == "NOT BALANCED: failed: white-box latency log: one record a message "
    "of the capture: 8,000 recorded more than once (first: seq 1)",
    # Played back from a recording as soon as it connected, before the run's sender started: every event it sent
    # before the message that makes it.
    # A damaged line applied: named at the first, by the type the line carried, and what it was held to said.
    "checksum-ignored": lambda h: h.startswith("BBO DIFFERS (exact): ") and ", on a corrupted line)" in h
    and h.endswith("; held to the simulation without the 40 corrupted lines (first: seq 200), as a gateway checking "
                   "each line's checksum applies the capture"),
    # Its messages' kernel stamps milliseconds before their datagrams were sent (all 8,000 here: a stamp is at least
    # a syscall's time old when read, 1,000 times that beyond the 100 µs allowed), the first named.
    "kernel-stamp-age-scaled": lambda h: re.fullmatch(
        r"NOT BALANCED: failed: gateway stamps on the run's clock \(CLOCK_MONOTONIC, moved from its stage clock\): "
        r"none before its message was sent: [1-9][\d,]* records? stamped before its message was sent \(first: "
        r"seq [\d,]+, [\d.,]+ m?s before\)", h) is not None,
    # The built-in gateway's flag: the first event after the first gap is the one named.
    "stale-flag-missed": lambda h: h.startswith("NOT BALANCED: failed: BBO events flagged stale = those after seq "),
}


def _stamped(events: int, run_dir: str) -> str:
    """events, less those whose arrival stamp the collector left out (a set of CLOCK_REALTIME: collector.Arrivals),
    as a verdict writes a count."""
    collected = (rundir.read_json(Path(run_dir) / "summary.json").get("wire_to_wire") or {}).get("collector") or {}
    return f"{events - int(collected.get('events_across_clock_set') or 0):,}"


# Headlines that count the events with an arrival stamp: all of the seed workload's 5,833, but those left out.
HEADLINES_OF_RUN: dict[str, Callable[[str, str], bool]] = {
    # Its stamps on CLOCK_REALTIME: decades after; and, where that clock was set back during the run, one out of
    # stage order too (a true finding, said first).
    "white-box-wall-clock": lambda h, run: re.match(
        r"NOT BALANCED: failed: (?:white-box stamps in stage order: [\d,]+ records? with a stage stamped before the "
        r"one before it \(first: [^;]*\); )?white-box stamps on the run's clock \(CLOCK_MONOTONIC\): none before its "
        rf"message was sent, none after its BBO event arrived: {_stamped(5833, run)} records stamped after its BBO "
        r"event arrived \(first: seq ", h) is not None,
    # Its events early, each held to its send: by its arrival, or by when it was read where the collector left its
    # arrival out (blackbox.before_the_send).
    "output-from-a-recording": lambda h, run: re.fullmatch(
        r"NOT BALANCED: failed: each BBO event received after its message was sent \(itchbench's stamps on both "
        r"sides\): [1-9][\d,]* of 5,833 events received before their message was sent \(first: seq [\d,]+, [\d.,]+ "
        r"[mµ]?s before\): not made from the feed it was sent(?: \([\d,]+ of the 5,833 events held by when the "
        r"collector read them: CLOCK_REALTIME was set while they waited\))?", h) is not None,
}


# The zoo in parts a test each, so the parts run beside other tests: a scenario's mutants (at most 10 a part) with
# its controls. The mutants judged by compare's timing (half speed) need the machine alone: a part of their own.
TIMED = sorted(m.name for m in zoo.MUTANTS if m.compared)
_BY_SCENARIO = {scen: sorted(m.name for m in zoo.MUTANTS if m.scenario == scen and not m.compared)
                for scen in sorted({m.scenario for m in zoo.MUTANTS})}
PARTS = {f"{scen}-{j + 1}": names[j::-(-len(names) // 10)] for scen, names in _BY_SCENARIO.items()
         for j in range(-(-len(names) // 10))}


def test_the_parts_are_the_whole_zoo_and_every_named_headline_is_checked():
    names = [n for part in PARTS.values() for n in part] + TIMED
    assert sorted(names) == sorted(m.name for m in zoo.MUTANTS) and len(set(names)) == len(names)
    assert set(HEADLINES) | set(HEADLINES_OF_RUN) <= set(names)


def _caught_with_the_expected_verdicts(names: list[str], tmp_path: Path) -> None:
    mutants, controls = zoo.select(quick=False, names=names)
    assert controls, "a part without its control proves nothing"
    outcomes = runner.run(mutants, controls, tmp_path / "runs", say=lambda _: None)
    wrong = [(o.name, o.scenario, o.expect, o.got, o.headline) for o in outcomes if not o.ok]
    assert not wrong, wrong
    s = runner.score(outcomes)
    assert s["caught"] == s["as_expected"] == s["mutants"] == len(names) and s["controls_ok"] == s["controls"]
    assert runner.closing_line(s).endswith("— ok")
    for o in outcomes:
        if o.name in HEADLINES:
            assert HEADLINES[o.name](o.headline), (o.name, o.headline)
        if o.name in HEADLINES_OF_RUN:
            assert HEADLINES_OF_RUN[o.name](o.headline, o.run_dir), (o.name, o.headline)
    assert not [p for p in leftover_processes() if "itchbench-zoo-" in p]


@needs_root
@pytest.mark.parametrize("part", list(PARTS))
def test_every_mutant_of_a_scenario_is_caught_with_its_expected_verdict(part, tmp_path):
    _caught_with_the_expected_verdicts(PARTS[part], tmp_path)


@pytest.mark.alone
@needs_root
def test_the_mutants_judged_by_timing_are_caught(tmp_path):
    _caught_with_the_expected_verdicts(TIMED, tmp_path)


@needs_root
def test_with_the_order_check_taken_out_the_selftest_names_the_mutant_that_passes(tmp_path, monkeypatch):
    # The per-stock order check reverted (no event ever late), in this process only: the out-of-order mutant
    # passes as LOSSLESS, and the selftest says so and fails.
    monkeypatch.setattr(blackbox, "_late", lambda stocks, at_ref: np.full(len(stocks), -1))
    mutants, controls = zoo.select(quick=False, names=["out-of-order"])
    outcomes = runner.run(mutants, controls, tmp_path / "runs", say=lambda _: None)
    (got,) = [o for o in outcomes if not o.control]
    assert got.got == "lossless" and got.passed_run and not got.ok
    assert "| out-of-order | " in runner.table(outcomes) and "NO: it passed" in runner.table(outcomes)
    assert runner.closing_line(runner.score(outcomes)).endswith("— FAILED")


@needs_root
def test_the_wide_fields_scenario_catches_a_narrow_field_on_the_serial_line(tmp_path):
    # scenarios/wide-fields.toml gives a gateway that takes the serial line the widths gateway.toml gives over UDP:
    # the locate read as a signed 16 bits is BBO DIFFERS there on both inputs, the unchanged example LOSSLESS.
    (signed,) = [m for m in zoo.MUTANTS if m.name == "locate-signed"]
    scenario = paths.repo_root() / "scenarios" / "wide-fields.toml"
    for name, edits, want in (("unchanged", (), 0), ("locate-signed", signed.edits, 1)):
        gateway = zoo.materialise(zoo.PY, edits, tmp_path / name)
        r = subprocess.run([sys.executable, "-m", "itchbench.cli", "run", str(scenario), "--gateway", str(gateway),
                            "--out", str(tmp_path / f"runs-{name}")], capture_output=True, text=True)
        verdicts = re.findall(r"^  (LOSSLESS|BBO DIFFERS)", r.stdout, re.M)
        assert r.returncode == want and verdicts == [["LOSSLESS", "BBO DIFFERS"][want]] * 2, r.stdout[-3000:]
        assert "skipped file: transport sim needs a gateway that takes file input" in r.stdout


def test_every_run_of_the_whole_zoo_has_a_folder_of_its_own():
    # Two controls claiming different things on one scenario once shared a folder, and the second failed.
    plan = runner.plan_of(*zoo.select(quick=False))
    labels = [runner.label_of(name, example, scen, control, bool(edits))
              for name, _, example, edits, scen, _, control, _ in plan]
    assert len(labels) == len(set(labels)) == len(zoo.MUTANTS) + len(zoo.CONTROLS)


def test_selftest_lists_the_zoo_and_refuses_an_unknown_mutant():
    itchbench = [sys.executable, "-m", "itchbench.cli", "selftest"]
    listed = subprocess.run([*itchbench, "--list"], capture_output=True, text=True)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == len(zoo.MUTANTS)
    bad = subprocess.run([*itchbench, "--mutant", "no-such-mutant"], capture_output=True, text=True)
    assert bad.returncode == 2 and "no mutant named no-such-mutant" in bad.stderr


def test_quick_is_a_subset_with_a_mutant_and_a_control_for_each_input_it_runs():
    mutants, controls = zoo.select(quick=True)
    assert 0 < len(mutants) < len(zoo.MUTANTS) and all(m.quick for m in mutants)
    assert {(m.example, m.scenario) for m in mutants} == {(c.example, c.scenario) for c in controls}
    assert Path(zoo.scenario_path("join")).read_text().count("join-sample.pcap") == 1


class _Compares:
    """Stands in for the runs and for compare in runner._compare_one: counts the runs a side made, and answers each
    compare with the next of `answers` (its exit status and one timing's verdict), as compare.json says them."""

    def __init__(self, answers: list[tuple[int, str]]) -> None:
        self.answers, self.runs, self.compared_at = answers, {"base": 0, "head": 0}, []

    def run_one(self, example, edits, scen, label, work, out):  # noqa: ANN001 - runner._run_one's arguments
        self.runs[out.name] += 1
        return "lossless", "LOSSLESS", str(out), 0

    def compare(self, cmd, **_):  # noqa: ANN001 - subprocess.run's
        judged = Path(cmd[cmd.index("--out") + 1])
        self.compared_at.append(self.runs["head"])
        status, verdict = self.answers[min(len(self.compared_at), len(self.answers)) - 1]
        judged.mkdir(parents=True)
        words = ("NO REGRESSION: BBO output SAME" if not status else "REGRESSION: 1 SLOWER: x: wire_to_wire.p90"
                 if verdict == "slower" else "INCONCLUSIVE: 1 INCONCLUSIVE: x: wire_to_wire.p90")
        (judged / "compare.json").write_text(
            f'{{"exit_status": {status}, "headline": "{words}", '
            f'"metrics": {{"x": {{"wire_to_wire.p90": {{"verdict": "{verdict}"}}}}}}}}')
        return subprocess.CompletedProcess(cmd, status, "", "")


@pytest.mark.parametrize("answers, runs, got", [
    # Decided by the first 10 runs a side: no more.
    ([(1, "slower")], [10], "slower"),
    # Too noisy at 10, decided at 15: the batch of half as many more, as compare adds them (a busy CI host left the
    # half-speed mutant NO REGRESSION at 10 a side).
    ([(0, "too noisy"), (1, "slower")], [10, 15], "slower"),
    # INCONCLUSIVE exits 1 as a regression does, but is undecided: more runs, as compare adds them (a fresh clone's
    # zoo stopped there at 25 a side, cpu_ns_per_msg +22.6 %, CI 1.02-1.29, p 0.0011).
    ([(1, "inconclusive"), (1, "slower")], [10, 15], "slower"),
    # Undecided to the end: at most 30 a side (the exact U test's most), then compare's word stands (the zoo counts it
    # as a pass).
    ([(0, "inconclusive")], [10, 15, 20, 25, 30], "no_regression"),
    # A pass with every timing decided is not run again.
    ([(0, "unchanged")], [10], "no_regression"),
])
def test_a_compared_mutant_left_undecided_gets_more_runs_as_compare_gives_them(tmp_path, monkeypatch, answers, runs,
                                                                                got):
    fake = _Compares(answers)
    monkeypatch.setattr(runner, "_run_one", fake.run_one)
    monkeypatch.setattr(runner.subprocess, "run", fake.compare)
    mutant = next(m for m in zoo.MUTANTS if m.compared)
    verdict, _, _, _ = runner._compare_one(mutant, tmp_path / "work", tmp_path / "out")
    assert fake.compared_at == runs and fake.runs == {"base": runs[-1], "head": runs[-1]}
    assert verdict == got
