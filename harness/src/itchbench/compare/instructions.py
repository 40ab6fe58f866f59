"""Instructions per message: exact and noise-free, from valgrind's callgrind
on the gateway in simulation.

The whole process is not repeatable (its clock calibration spins for a fixed
time; a helper thread provisions log pages), but the functions that handle
messages are: their inclusive counts are the same on every run. So one run
on a fixed slice of the capture (its first N records), and per message:

    message path   Gateway<…>::on_message, inclusive: decode, book, BBO, logs
    book           OrderBook::add / reduce / remove / replace, inclusive
    outside book   the message path less the book: validation, field extraction, per-type count, dispatch,
                   BBO check, log records
    decode         Gateway<…>::decode_and_apply (itch::decode<…> before it) without the book calls it
                   makes: validation, field extraction, per-type count, dispatch. Revisions since the gateway
                   inlines it (a function of its own cost 4-5 % of the time) have no such function
    bbo and logs   the message path less decode and book: BBO check, log records (as decode)
    capture read   PcapReader::next (simulation's own input; not the gateway's)

MoldUDP64 framing is inlined into the simulation's read loop and has no
function of its own to count: it is not reported apart.

A stage whose function a revision does not have (renamed, inlined) is
reported missing, and its verdict is "not comparable". A revision names the
stages it inlines into the message path in its `--build-info`
(`inlined_stages`): those, and the stages derived from them, are not
counted at all, since a function of theirs that some calls still reach (the
book's replace, left out of line) would count only part of the stage.

A gateway brought through its contract that reads the capture itself
(`file` input) is counted whole, as a black box: its command runs under
callgrind (children traced, so through its shell's exec) on two slices of
the capture, the first N and the first 2N records, and instructions per
message are the difference of the two totals over the difference of their
messages. What every run does once — loading, start-up, tear-down — cancels
out; what is left is the cost of a message, exact for a compiled gateway
(an interpreter's hash seed is fixed: PYTHONHASHSEED=0).
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import tempfile
from pathlib import Path

from ..captures.compressed import plain_copy
from ..captures.inspect import facts_of
from ..gateways import adapter
from ..gateways.contract import Contract
from ..rundir import read_json
from ..runs.failure import RunError
from ..runs.procs import ProcessGroup

SLICE_RECORDS = 4000


class InstructionError(RuntimeError):
    """The count could not be made (no valgrind, an unsupported capture)."""


class GatewayFailed(InstructionError):
    """The gateway itself failed under callgrind (it crashed, or ended with an error): it built and could not run."""


def _slice(capture: Path, records: int, out: Path) -> None:
    data = plain_copy(capture).read_bytes()
    magic = struct.unpack_from("<I", data, 0)[0] if len(data) >= 4 else 0
    if magic in (0xA1B2C3D4, 0xA1B23C4D):  # classic little-endian pcap
        off = 24
        for _ in range(records):
            if off + 16 > len(data):
                break
            off += 16 + struct.unpack_from("<I", data, off + 8)[0]
        out.write_bytes(data[:off])
        return
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        raise InstructionError(f"{capture}: instruction counts need a classic pcap or a binary ITCH file, not pcapng")
    off = 0
    for _ in range(records):  # binary ITCH file: 2-byte big-endian length + message
        if off + 2 > len(data):
            break
        off += 2 + struct.unpack_from(">H", data, off)[0]
    out.write_bytes(data[:off])


FUNCTIONS = {
    "message_path": re.compile(r"itchbench::Gateway<[^>]*>::on_message\("),
    # itch::decode<…> until the gateway decoded by table; Gateway<…>::decode_and_apply<…> since.
    "decode_and_apply": re.compile(
        r"itchbench::itch::DecodeStatus itchbench::(itch::decode<|Gateway<[^>]*>::decode_and_apply<)"),
    "book": re.compile(r"itchbench::OrderBook::(add|reduce|remove|replace)\("),
    "capture_read": re.compile(r"itchbench::net::PcapReader::next\("),
}
STAGES = ("message_path", "book", "outside_book", "decode", "bbo_and_logs", "capture_read")


# What each stage is derived from: a stage is uncountable when any of its parts is inlined.
PARTS = {"book": {"book"}, "outside_book": {"book"}, "decode": {"decode", "book"}, "bbo_and_logs": {"decode"}}


def _inlined_stages(gateway: Path) -> set[str]:
    """The stages the gateway says it inlines into the message path (none for a revision that does not say)."""
    proc = subprocess.run([str(gateway), "--build-info"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise InstructionError(f"{gateway} --build-info failed: {proc.stderr.strip()[-300:]}")
    try:
        return set(json.loads(proc.stdout).get("inlined_stages", []))
    except json.JSONDecodeError as e:
        raise InstructionError(f"{gateway} --build-info printed no JSON: {e}") from None


def uncountable(inlined: set[str]) -> list[str]:
    """The stages that inlining leaves no function to count apart, in STAGES order."""
    return [stage for stage in STAGES if PARTS.get(stage, set()) & inlined]


def _stages(f: dict[str, int], inlined: set[str] = frozenset()) -> dict[str, int]:
    """Per stage, from the functions' inclusive counts (derived stages need all their parts)."""
    inlined_functions = {"decode": "decode_and_apply", "book": "book"}
    f = {k: v for k, v in f.items() if k not in {inlined_functions[s] for s in inlined if s in inlined_functions}}
    out = {k: f[k] for k in ("message_path", "book", "capture_read") if k in f}
    if "message_path" in f and "book" in f:
        out["outside_book"] = f["message_path"] - f["book"]
    if "decode_and_apply" in f and "book" in f:
        out["decode"] = f["decode_and_apply"] - f["book"]
        if "message_path" in f:
            out["bbo_and_logs"] = f["message_path"] - f["decode_and_apply"]
    return out
_LINE = re.compile(r"^\s*([\d,]+)\s+\([\s\d.]+%\)\s+\S*?:(.*)$")


def _annotate(out: Path) -> dict[str, int]:
    """Inclusive instructions of every function named in FUNCTIONS."""
    proc = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise InstructionError(f"callgrind_annotate failed: {proc.stderr.strip()[-300:]}")
    totals: dict[str, int] = {}
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        for stage, pattern in FUNCTIONS.items():
            if pattern.match(m.group(2).strip()):
                totals[stage] = totals.get(stage, 0) + int(m.group(1).replace(",", ""))
    return totals


def per_message(gateway: Path, capture: Path, records: int = SLICE_RECORDS) -> dict[str, object]:
    """Instructions per message by stage, with what they were measured on."""
    with tempfile.TemporaryDirectory(prefix="itchbench-callgrind-") as tmp_name:
        tmp = Path(tmp_name)
        piece = tmp / "slice"
        _slice(capture, records, piece)
        out, run = tmp / "callgrind.out", tmp / "run"
        run.mkdir()
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(gateway), "--source", "sim",
               "--capture", str(piece), "--out", str(run), "--no-latency-log"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except FileNotFoundError:
            raise InstructionError("valgrind is not installed (apt-get install valgrind)") from None
        if proc.returncode not in (0, 1) or not out.is_file():
            raise GatewayFailed(f"callgrind run failed: {proc.stderr.strip()[-400:]}")
        messages = int(read_json(run / "gateway.json")["messages_received"])
        inlined = _inlined_stages(gateway)
        totals = _stages(_annotate(out), inlined)
    if messages == 0:
        raise InstructionError(f"{capture}: no messages in the first {records} records")
    return {"messages": messages, "slice_records": records,
            "per_message": {stage: totals[stage] / messages for stage in STAGES if stage in totals},
            "missing_stages": [stage for stage in STAGES if stage not in totals],
            "inlined_stages": uncountable(inlined)}


CONTRACT_STAGE = "process"  # a black box's one figure: its whole process, per message
_TOTALS = re.compile(r"^(?:summary|totals):\s*(\d+)", re.MULTILINE)


def _callgrind_total(run_dir: Path) -> int:
    """Instructions of every process callgrind traced in the run (one file per pid)."""
    total = 0
    for f in run_dir.glob("callgrind.out.*"):
        m = _TOTALS.search(f.read_text(errors="replace"))
        if m:
            total += int(m.group(1))
    return total


def _contract_total(c: Contract, worktree: Path, piece: Path, run_dir: Path) -> int:
    run_dir.mkdir()
    under = ["valgrind", "--tool=callgrind", "--trace-children=yes",
             f"--callgrind-out-file={run_dir}/callgrind.out.%p"]
    with ProcessGroup() as group:
        driver = adapter.ContractGateway(c, run_dir, group, lambda cmd: cmd, worktree=worktree,
                                         env={"PYTHONHASHSEED": "0"}, under=under)
        try:
            driver.start("file", capture=piece, commit="callgrind")
            driver.stop(within_s=900)
        except FileNotFoundError:
            raise InstructionError("valgrind is not installed (apt-get install valgrind)") from None
        except RunError as e:
            raise GatewayFailed(f"the gateway under callgrind: {e}") from e
    total = _callgrind_total(run_dir)
    if not total:
        raise InstructionError(f"callgrind wrote no totals; the gateway's last output: {driver.last_output()}")
    return total


def contract_per_message(c: Contract, worktree: Path, capture: Path, records: int = SLICE_RECORDS) -> dict[str, object]:
    """A contract gateway's instructions per message (its `file` command under callgrind): the marginal cost
    between a slice of `records` records and one of twice as many."""
    if "file" not in c.inputs:
        raise InstructionError(f"{c.name} does not read capture files (inputs = {list(c.inputs)}): nothing to count")
    with tempfile.TemporaryDirectory(prefix="itchbench-callgrind-") as tmp_name:
        tmp = Path(tmp_name)
        counted = []
        for name, n in (("a", records), ("b", 2 * records)):  # names of one length: the same environment size
            piece = tmp / f"slice-{name}"
            _slice(capture, n, piece)
            counted.append((facts_of(piece)["messages"], _contract_total(c, worktree, piece, tmp / f"run-{name}")))
    (m1, i1), (m2, i2) = counted
    if m2 <= m1:
        raise InstructionError(f"{capture}: fewer than {records + 1} records, too few to tell a message's cost from "
                               "the process's own")
    return {"messages": [m1, m2], "slice_records": [records, 2 * records], "instructions": [i1, i2],
            "per_message": {CONTRACT_STAGE: (i2 - i1) / (m2 - m1)}, "missing_stages": []}
