"""The mutant zoo (docs/selftest.md): gateways each one planted defect away from a correct one — the two examples,
examples/py-gateway and examples/cpp-gateway —, each with the scenario it runs on and the verdict it must get.

A mutant is a list of text edits to a copy of its example: each `old` must stand exactly once in the file, so a
change to an example that moves a mutant's anchor fails loudly (zoo.materialise) instead of planting nothing. The
examples themselves carry no mutation switch: what users read and copy is the correct gateway.

Expected verdicts come from what the defect does to the stream the contract judges (docs/verdicts.md), not from
running the mutant: a defect that changes the BBO stream is BBO DIFFERS, one that kills or hangs the process is
INCOMPLETE, a join without a snapshot is NOT JOINED.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import paths
from ..gateways import revisions

PY, CPP = "py-gateway", "cpp-gateway"
PY_FILE, CPP_FILE = "gateway.py", "gateway.cpp"
# The built-in gateway: a mutant of it is a patched copy of this checkout's sources, built once (cached), run
# through the built-in contract pointed at that build. Its edits name files from the repository's root.
BUILT_IN = "built-in"
BUILT_IN_CONTRACT = "itchbench.toml"
_BUILT_IN_BINARY = "gateway=${{ITCHBENCH_GATEWAY:-{worktree}/build/gateway/itch-gateway}}"  # in each of its commands
_BUILT_IN_BUILD = re.compile(r"^build = \[\n(?:  .*\n)*\]\n", re.M)


@dataclass(frozen=True)
class Edit:
    old: str
    new: str
    file: str = PY_FILE


@dataclass(frozen=True)
class Mutant:
    name: str
    defect: str                 # the planted defect, in words
    example: str                # the example it is a copy of
    edits: tuple[Edit, ...]
    scenario: str               # scenarios/selftest/<scenario>.toml
    expect: str                 # the verdict it must get (runs/verdict.py), or compare's ("slower", "more_memory")
    quick: bool = False         # in `itchbench selftest --quick` and the test command's run
    compared: bool = False      # judged by `itchbench compare` against the unchanged example, not by a run's verdict


@dataclass(frozen=True)
class Control:
    """An unchanged example on a zoo scenario: it must pass, or the mutants' failures there prove nothing. A
    control with edits changes only what its contract claims (never its code), for the mutants that break a claim
    the example's own contract does not make."""
    example: str
    scenario: str
    expect: str
    quick: bool = False
    edits: tuple[Edit, ...] = ()
    claim: str = ""             # what the edits make its contract claim, in words


def _py(*pairs: tuple[str, str]) -> tuple[Edit, ...]:
    return tuple(Edit(old, new) for old, new in pairs)


def _cpp(*pairs: tuple[str, str]) -> tuple[Edit, ...]:
    return tuple(Edit(old, new, CPP_FILE) for old, new in pairs)


def _built_in(file: str, *pairs: tuple[str, str]) -> tuple[Edit, ...]:
    return tuple(Edit(old, new, file) for old, new in pairs)


# Anchors in examples/py-gateway/gateway.py, each standing once.
_EMIT = '        if args.bbo_format == "csv":\n            pending.append(f"{seq},{stock},{bbo[0]},{bbo[1]},{bbo[2]},{bbo[3]}\\n")\n'
_CSV_LINE = '            pending.append(f"{seq},{stock},{bbo[0]},{bbo[1]},{bbo[2]},{bbo[3]}\\n")\n'
_SAY = "        if now != self.said.get(stock, (0,) * len(now)):\n"
_FLUSH = '            send("".join(pending).encode())\n'
_PENDING = "    pending: list[str] = []\n"
_LAST_FLUSH = "        flush(last=True)\n"
_ADD_LEVEL = "        level[price] = level.get(price, 0) + shares\n"
_REPLACE_ADD = "                self._add(new, stock, side, price, shares)\n"
_REDUCING = '        elif kind in (b"E", b"C", b"X"):\n'
_DELETE = '        elif kind == b"D":\n'
_LEVEL_GONE = "        if level[price] == 0:\n            del level[price]\n"
_ASK = "            if self.server is not None:  # what is still missing of it"
_B_LINE = '            if args.udp_b and not args.udp_b.endswith(":0"):  # the session\'s B line: the first copy wins\n'
_DUPLICATE = "        if seq < self.next_seq or self.waiting.get(seq) is not None:\n"
_HOLD = "        else:\n            self.waiting[seq] = m\n        self._drain()\n"
_JOINING = '            joining = args.snapshot and not args.snapshot.endswith(":0")\n'
_SNAPSHOT_NEXT = "                feed.next_seq = feed.top = take_snapshot(s_addr, int(s_port), user, password, staged.append)\n"
_SNAPSHOT_APPLIED = "                for m in staged:\n                    feed.book.apply(feed.next_seq - 1, m)\n"
_PACKET_SEQ = '        seq, count = struct.unpack_from(">QH", p, 10)\n'
_HEARTBEAT = "        if count in (0, 0xFFFF):  # a heartbeat or the end of session: seq is the next one to come\n"
_SIGTERM = "    signal.signal(signal.SIGTERM, stop_reading)\n"
_FINALLY = "        feed.give_up_all()  # stopped with gaps open: what waited behind them is applied, the gaps stay lost\n"
_PER_PACKET = "                flush()  # a packet's events go out with it\n"
_CLOSE = "        flush(last=True)\n        close()\n    return 0\n"
_TCP_OUT = "        conn = socket.create_connection(to)\n        return conn.sendall, conn.close\n"
_PARSED = "    args = p.parse_args()\n"
_OPEN_FEED = "            sock = open_feed(addr, int(port))\n"
_CHECKSUM = "            if int(text[star + 1:star + 3], 16) != check:\n                return True\n"
_FEED = "    feed = Feed(Book(emit, args.levels), stamps=stamps)\n"
# The packet's framing, checked whole before any message is applied.
_CUT_AT = "            if at + 2 > len(p):\n                return True\n"
_OVERRUN = "            if at + 2 + n > len(p):\n                return True\n"
_LEFT_OVER = "        if at != len(p):\n            return True\n"
_CONNECT = "    send, close = _bbo_output(args.bbo_via, bbo_to, args.bbo_topic)\n"
_APPLY_PACKET = "        for i, m in enumerate(messages):\n            self.message(seq + i, m)\n"
_VALID = "        valid = len(m) > 0 and LENGTHS.get(m[0:1]) == len(m)\n"
# A recording's MoldUDP64 packets (a little-endian pcap of Ethernet, IPv4 with no options, UDP: the payload at 42)
# applied before it connects to the collector (its ready signal: the run's sender starts after it), all but its
# end of session, and sent as soon as it is connected.
_FROM_THE_RECORDING = """    with open({path}, "rb") as recording:  # MUTANT
        data = recording.read()
    at = 24
    while at + 16 <= len(data):
        size = struct.unpack_from("<I", data, at + 8)[0]
        packet = data[at + 16 + 42:at + 16 + size]
        at += 16 + size
        if len(packet) >= 20 and struct.unpack_from(">H", packet, 18)[0] not in (0, 0xFFFF):
            feed.packet(packet)
    send, close = _bbo_output(args.bbo_via, bbo_to, args.bbo_topic)
    flush()
"""
_RECEIVE = "                    more = feed.packet(s.recv(65536)) and more\n"
# Anchor in examples/py-gateway/itchbench.toml.
_STOP_GRACE = "term_grace_s = 5    # then SIGKILL\n"
# The example does end by itself at the end of session; its contract does not say so, and so nothing holds it to it.
_CLAIMS_EXIT_AT_END = (Edit(_STOP_GRACE, _STOP_GRACE + "exits_at_end = true\n", "itchbench.toml"),)
# A mutant that never becomes ready, or never stops when asked, shows it as well in 4 s or 2 s as in the example's own
# 10 s and 5 s: its contract is made that impatient (and a control with the same contract passes), so the zoo's runs
# are not spent waiting.
IMPATIENT = (Edit("timeout_s = 10\n", "timeout_s = 4\n", "itchbench.toml"),
             Edit(_STOP_GRACE, "term_grace_s = 2    # then SIGKILL\n", "itchbench.toml"))
# The example publishes depth when asked (--levels N, from the contract's bbo.levels); its contract asks for the BBO.
_BBO_LEVELS = ("levels = 0          # the BBO; N: it publishes the top N levels a side (--levels N); \"all\": every "
               "level's changes; judged against the simulation's\n")
CLAIMS_DEPTH = (Edit(_BBO_LEVELS, "levels = 5\n", "itchbench.toml"),)
# Every level's changes (levels = "all"), from either example.
CLAIMS_EVERY_LEVEL = (Edit(_BBO_LEVELS, 'levels = "all"\n', "itchbench.toml"),)
_CPP_BBO_LEVELS = ("levels = 0          # the BBO; N: it writes the top N levels a side (--levels N); \"all\": every "
                   "level's changes; judged against the simulation's\n")
CPP_CLAIMS_EVERY_LEVEL = (Edit(_CPP_BBO_LEVELS, 'levels = "all"\n', "itchbench.toml"),)
# Checked as states (check = "state"): each event held to its stock's book at its seq, judged in buckets of stocks.
_CHECK_EXACT = 'check = "exact"     # event for event against itchbench\'s simulation\n'
CLAIMS_STATE = (Edit(_CHECK_EXACT, 'check = "state"\n', "itchbench.toml"),)
_WRONG_BID = (_CSV_LINE, _CSV_LINE.replace("{bbo[1]}", "{bbo[1] + (seq % 97 == 0)}").replace(")\n", ")  # MUTANT\n"))
# Run with --shards 3: it publishes as a gateway with a thread a shard does, stocks interleaved otherwise than by seq.
_UDP_COMMAND_END = '{snapshot_password} --levels {levels}"\n'
CLAIMS_SHARDS = (Edit(_UDP_COMMAND_END, '{snapshot_password} --levels {levels} --shards 3"\n', "itchbench.toml"),)
# A white box (white_box = true): the example writes its own stages in itchbench's latency log (--latency-log).
CLAIMS_WHITE_BOX = (Edit('name = "py-gateway"\n', 'name = "py-gateway"\nwhite_box = true\n', "itchbench.toml"),
                    Edit(_UDP_COMMAND_END, _UDP_COMMAND_END.replace('"\n', ' --latency-log {out}/latency.lat"\n'),
                         "itchbench.toml"))
_STAMPS_RECORDED = "        if self.stamps:\n            self.stamps.record(seq, m, valid, decoded)\n"
_NOW_NS = "        self.now, self.read = itchbench_stamps.now_ns, 0"
_CPP_FILE_COMMAND = ('file = "exec {worktree}/cpp-gateway --file {capture} --bbo {bbo_addr}:{bbo_port} '
                     '--levels {levels}"\n')
# Its build keeps a copy of the bundled NASDAQ slice beside the executable (a recording of the session).
CPP_CLAIMS_RECORDING = (Edit('build = ["make -C {worktree} --no-print-directory"]\n',
                             'build = ["make -C {worktree} --no-print-directory", "cp '
                             + str(paths.fixtures_dir() / "nasdaq-day-sample.pcap") + ' {worktree}/recording.pcap"]\n',
                             "itchbench.toml"),)
_CPP_FILE_ARGUMENT = '        if (key == "--file") file = argv[i + 1];\n'
CPP_CLAIMS_WHITE_BOX = (Edit('name = "cpp-gateway"\n', 'name = "cpp-gateway"\nwhite_box = true\n', "itchbench.toml"),
                        Edit(_CPP_FILE_COMMAND, _CPP_FILE_COMMAND.replace('"\n', ' --latency-log {out}/latency.lat"\n'),
                             "itchbench.toml"))
# It names each stock by the symbol the stock directory gives it (--stock symbol), not its locate.
CPP_CLAIMS_SYMBOLS = (Edit(_CPP_FILE_COMMAND, _CPP_FILE_COMMAND.replace('"\n', ' --stock symbol"\n'),
                           "itchbench.toml"),)
_CPP_STAMPS_RECORDED = ("            ib_latency_record(stamps_, seq, n > 0 ? char(m[0]) : '?', n >= 3 ? be16(m + 1) "
                        ": 0,\n                              valid ? 0 : IB_REJECTED, stamps);\n")
# The same on the serial line, whose command is another.
_SERIAL_COMMAND_END = '--serial {serial} --bbo {bbo_addr}:{bbo_port} --levels {levels}"\n'
CLAIMS_SHARDS_SERIAL = (Edit(_SERIAL_COMMAND_END, _SERIAL_COMMAND_END.replace('"\n', ' --shards 3"\n'),
                             "itchbench.toml"),)
# It publishes JSON lines (bbo.format = "jsonl", --bbo-format jsonl) instead of csv.
CLAIMS_JSONL = (Edit('format = "csv"      # seq,stock,bid_px,bid_qty,ask_px,ask_qty\n', 'format = "jsonl"\n',
                     "itchbench.toml"),
                Edit(_UDP_COMMAND_END, _UDP_COMMAND_END.replace('"\n', ' --bbo-format jsonl"\n'), "itchbench.toml"))
_JSON_LINE = ('            pending.append(json.dumps({"seq": seq, "stock": stock, "bid_px": bbo[0], "bid_qty": bbo[1],\n')
_SHARD_SENT = '                    send("".join(shard).encode())\n'
_SHARD_SENT_BACKWARDS = _SHARD_SENT.replace("(shard).encode())\n", "(reversed(shard)).encode())  # MUTANT\n")
_OLD_PRICE_FIRST = "                             key=lambda p: (p != first_price, p))\n"

# Book defects planted in the Python example, each judged on its BBO, on 5 levels of depth and on every level.
_DEEP_LEVEL_SHARE = (_ADD_LEVEL, "        level[price] = level.get(price, 0) + shares + (len(level) >= 5)  # MUTANT\n")
_REPLACE_AT_OLD_PRICE = (_REPLACE_ADD, "                self._add(new, stock, side, order[2], shares)  # MUTANT\n")
# The same replace defect in the C++ example, judged on its BBO and on every level.
_CPP_REPLACE_AT_OLD_PRICE = ("add(new_ref, o.stock, o.bid, be32(m + 31), be32(m + 27));",
                             "add(new_ref, o.stock, o.bid, o.price, be32(m + 27));  // MUTANT")

# Fields kept narrower than the spec gives them: right on every input but one whose values span the widths
# (fixtures/wide-fields-sample.pcap, the wide-fields profile).
_ADD_PRICE = '            price = struct.unpack_from(">I", m, 32)[0]\n'
_ADD_LOCATE = ('self._add(ref, struct.unpack_from(">H", m, 1)[0]',
               '                stock = struct.unpack_from(">H", m, 1)[0]\n')
# Each reference read, then held as a double (a JavaScript Number, a JSON number).
_AS_DOUBLE = "            ref = int(float(ref))  # MUTANT\n"
_ADD_REF = '            ref, side, shares = struct.unpack_from(">QcI", m, 11)\n'
_REDUCE_REF = '            ref, shares = struct.unpack_from(">QI", m, 11)\n'
_DELETE_REF = ('            order = self.orders.get(struct.unpack_from(">Q", m, 11)[0])\n'
               '            stock = self._reduce(struct.unpack_from(">Q", m, 11)[0], order[3]) if order else None\n')
_REPLACE_REFS = '            old, new, shares, price = struct.unpack_from(">QQII", m, 11)\n'
_REFS_AS_DOUBLES = _py(
    (_ADD_REF, _ADD_REF + _AS_DOUBLE), (_REDUCE_REF, _REDUCE_REF + _AS_DOUBLE),
    (_DELETE_REF, _DELETE_REF.replace('struct.unpack_from(">Q", m, 11)[0]',
                                      'int(float(struct.unpack_from(">Q", m, 11)[0]))')),
    (_REPLACE_REFS, _REPLACE_REFS + "            old, new = int(float(old)), int(float(new))  # MUTANT\n"))


MUTANTS: tuple[Mutant, ...] = (
    # The BBO stream: each kind of difference the exact check names.
    Mutant("missing-event", "every event of a seq divisible by 97 never sent", PY,
           _py((_EMIT, "        if seq % 97 == 0:  # MUTANT\n            return\n" + _EMIT)), "udp", "bbo_differs",
           quick=True),
    Mutant("extra-event", "an event on every touch of a stock, changed or not", PY,
           _py((_SAY, "        if True:  # MUTANT\n")), "udp", "bbo_differs"),
    Mutant("wrong-event", "bid shares one too many on events of a seq divisible by 97", PY, _py(_WRONG_BID), "udp",
           "bbo_differs"),
    Mutant("wrong-state", "bid shares one too many on events of a seq divisible by 97, the contract checking states",
           PY, CLAIMS_STATE + _py(_WRONG_BID), "udp", "bbo_differs"),
    Mutant("duplicated-event", "events of a seq divisible by 97 sent twice", PY,
           _py((_EMIT, _EMIT + "            if seq % 97 == 0:  # MUTANT\n                pending.append(pending[-1])\n")),
           "udp", "bbo_differs"),
    # A gateway stuck in a loop, repeating itself: judged up to that seq and read no further (gateways/in_parts.py),
    # the harness's memory not growing with the output.
    Mutant("flood", "its first event from seq 2,000 on sent again 4,500,000 times, as a loop that never ends would",
           PY, _py((_PENDING, _PENDING + "    flooded: list[int] = []  # MUTANT\n"),
                   (_EMIT, _EMIT + "            if seq >= 2000 and not flooded:  # MUTANT\n"
                                   "                flooded.append(seq)  # MUTANT\n"
                                   "                line = pending[-1].encode()  # MUTANT\n"
                                   "                flush()  # MUTANT\n"
                                   "                for _ in range(450):  # MUTANT\n"
                                   "                    send(line * 10_000)  # MUTANT\n")),
           "udp", "bbo_differs"),
    Mutant("out-of-order", "a packet's events sent last first (a stock's older quote after its newer one)", PY,
           _py((_FLUSH, '            send("".join(reversed(pending)).encode())  # MUTANT\n')), "udp", "bbo_differs",
           quick=True),
    Mutant("sharded-out-of-order", "each shard's four events sent last first, the gateway publishing from 3 "
           "shards by stock (stocks interleaved otherwise than by seq, as allowed)", PY,
           CLAIMS_SHARDS + _py((_SHARD_SENT, _SHARD_SENT_BACKWARDS)), "udp", "bbo_differs"),
    Mutant("sharded-out-of-order-serial", "each shard's four events sent last first, on the serial line (3 shards by "
           "stock)", PY, CLAIMS_SHARDS_SERIAL + _py((_SHARD_SENT, _SHARD_SENT_BACKWARDS)), "serial", "bbo_differs"),
    # Held a read and sent after the next one's: a read's own events reversed were the same events whenever the
    # gateway kept up with the line (a read of one line, one event), which a fast enough machine made it do.
    Mutant("out-of-order-serial", "each read's events held back and sent after the next read's, on the serial line",
           PY, _py((_PENDING, _PENDING + "    held: list[str] = []  # MUTANT\n"),
                   (_FLUSH, '            held.append("".join(pending))  # MUTANT\n'
                            '            if len(held) == 2 or last:  # MUTANT\n'
                            '                send("".join(reversed(held)).encode())  # MUTANT\n'
                            '                held.clear()  # MUTANT\n'),
                   (_LAST_FLUSH, _LAST_FLUSH + '        if held:  # MUTANT\n'
                                               '            send("".join(held).encode())  # MUTANT\n')),
           "serial", "bbo_differs"),
    Mutant("wrong-stock", "stock locates off by one (a 1-based table read as 0-based)", PY,
           _py((_CSV_LINE, _CSV_LINE.replace("{stock}", "{stock + 1}").replace(")\n", ")  # MUTANT\n"))), "udp",
           "bbo_differs"),
    # The book.
    Mutant("deep-level-shares", "one share too many on an add to a side already five levels deep", PY,
           _py(_DEEP_LEVEL_SHARE), "udp", "bbo_differs"),
    Mutant("replace-keeps-price", "a replace (U) adds the new order at the old order's price", PY,
           _py(_REPLACE_AT_OLD_PRICE), "udp", "bbo_differs"),
    Mutant("execute-with-price-ignored", "an execution with price (C) does not reduce the order", PY,
           _py((_REDUCING, '        elif kind in (b"E", b"X"):  # MUTANT\n')), "udp", "bbo_differs"),
    Mutant("checksum-ignored", "a serial line applied whatever its checksum says: a line with a damaged digit "
           "applied as it came", PY, _py((_CHECKSUM, "            # MUTANT: the checksum never checked\n")),
           "serial-noise", "bbo_differs"),
    Mutant("cancel-deletes", "a partial cancel (X) removes the whole order", PY,
           _py((_REDUCING, '        elif kind in (b"E", b"C"):  # MUTANT\n'),
               (_DELETE, '        elif kind in (b"D", b"X"):  # MUTANT\n')), "serial", "bbo_differs"),
    Mutant("json-shares-off-by-a-fraction", "a side's shares a quarter of a share off on every event (a float), in "
           "JSON lines: int() took 100.25 as 100, and judged the gateway right", PY,
           CLAIMS_JSONL + _py((_JSON_LINE, _JSON_LINE.replace('"bid_qty": bbo[1],', '"bid_qty": bbo[1] + 0.25,')
                               .replace(",\n", ",  # MUTANT\n", 1))), "udp", "bbo_differs"),
    Mutant("empty-level-kept", "a price level left behind at zero shares when its last order leaves", PY,
           _py((_LEVEL_GONE, "        # MUTANT: a level at zero shares stays\n")), "udp", "bbo_differs"),
    # Depth (docs/book-and-bbo.md): the same book bugs, seen below the top.
    Mutant("depth-empty-level-kept", "a price level left behind at zero shares, the gateway publishing 5 levels of "
           "depth", PY, CLAIMS_DEPTH + _py((_LEVEL_GONE, "        # MUTANT: a level at zero shares stays\n")),
           "udp", "bbo_differs"),
    # The same two book bugs with 5 levels of depth, then with every level's changes (levels = "all"): a wrong
    # level anywhere in the book, named at its first change.
    *(Mutant(f"{prefix}-{name}", f"{defect}, the gateway publishing {published}", PY, claims + _py(edit), "udp",
             "bbo_differs")
      for prefix, claims, published in (("depth", CLAIMS_DEPTH, "5 levels of depth"),
                                        ("every-level", CLAIMS_EVERY_LEVEL, "every level's changes"))
      for name, defect, edit in (
          ("deep-level-shares", "one share too many on an add to a side already five levels deep", _DEEP_LEVEL_SHARE),
          ("replace-keeps-price", "a replace (U) adds the new order at the old order's price", _REPLACE_AT_OLD_PRICE))),
    Mutant("every-level-new-price-first", "a replace's two level changes said new price first", PY,
           CLAIMS_EVERY_LEVEL + _py((_OLD_PRICE_FIRST, "                             key=lambda p: (p == first_price, "
                                                        "p))  # MUTANT\n")), "udp", "bbo_differs"),
    Mutant("cpp-every-level-replace-keeps-price", "a replace (U) adds the new order at the old price, the gateway "
           "writing every level's changes (C++, file)", CPP,
           CPP_CLAIMS_EVERY_LEVEL + _cpp(_CPP_REPLACE_AT_OLD_PRICE),
           "file", "bbo_differs"),
    Mutant("cpp-empty-level-kept", "a price level left behind at zero shares (C++, reading the file itself)", CPP,
           _cpp(("        if (level->second == 0) side.erase(level);\n", "        // MUTANT: a level at zero stays\n")),
           "file", "bbo_differs", quick=True),
    Mutant("cpp-replace-keeps-price", "a replace (U) adds the new order at the old price (C++, file)", CPP,
           _cpp(_CPP_REPLACE_AT_OLD_PRICE), "file", "bbo_differs"),
    Mutant("cpp-execute-ignored", "an execution (E) does not reduce the order (C++, over UDP)", CPP,
           _cpp(("            case 'E': case 'C': case 'X':", "            case 'C': case 'X':  // MUTANT\n"
                 "            case 'E': break;\n           ")), "udp", "bbo_differs"),
    # A message of a type it does not know: counted and skipped, the rest of its packet applied.
    Mutant("unknown-type-ends-packet", "a message of an unknown type ends its packet: the messages after it in the "
           "packet never applied", PY,
           _py((_APPLY_PACKET, _APPLY_PACKET.replace("        for i, m in enumerate(messages):\n",
                                                     "        for i, m in enumerate(messages):\n"
                                                     "            if m[0:1] not in LENGTHS:  # MUTANT\n"
                                                     "                break\n"))), "udp-corrupt", "bbo_differs"),
    Mutant("unknown-type-raises", "a message of an unknown type looked up where it is not: the gateway dies of the "
           "KeyError", PY,
           _py((_VALID, _VALID.replace("LENGTHS.get(m[0:1]) == len(m)", "LENGTHS[m[0:1]] == len(m)  # MUTANT"))),
           "udp-corrupt", "incomplete"),
    # Fields kept narrower than the spec gives them (the wide-fields input).
    Mutant("price-as-float", "a new order's price held in a 32-bit float: exact up to $1,677.7216, beyond it rounded "
           "to the float's step", PY,
           _py((_ADD_PRICE, '            price = int(struct.unpack("f", struct.pack("f", struct.unpack_from(">I", m, '
                            '32)[0]))[0])  # MUTANT\n')), "udp-wide", "bbo_differs"),
    Mutant("price-in-cents", "a new order's price kept in whole cents: a sub-penny price (below $1) rounded down",
           PY, _py((_ADD_PRICE, _ADD_PRICE.replace("[0]\n", "[0] // 100 * 100  # MUTANT\n"))), "udp-wide",
           "bbo_differs"),
    Mutant("locate-signed", "the stock locate read as a signed 16-bit number: locates from 32,768 on negative", PY,
           _py((_ADD_LOCATE[0], _ADD_LOCATE[0].replace('">H"', '">h"')),
               (_ADD_LOCATE[1], _ADD_LOCATE[1].replace('">H", m, 1)[0]\n', '">h", m, 1)[0]  # MUTANT\n'))),
           "udp-wide", "bbo_differs"),
    Mutant("ref-as-double", "order references held as doubles (a JavaScript Number): above 2^53 neighbouring "
           "references are one", PY, _REFS_AS_DOUBLES, "udp-wide",
           "bbo_differs"),
    Mutant("sequence-in-32-bits", "the MoldUDP64 sequence number kept in 32 bits: past 2^32 each number wraps below "
           "the one expected, and what follows is dropped as duplicates", PY,
           _py((_PACKET_SEQ, _PACKET_SEQ + "        seq &= 0xFFFFFFFF  # MUTANT\n")), "udp-wide", "bbo_differs"),
    Mutant("datagram-read-into-1024-bytes", "each datagram read into 1,024 bytes: a longer one (a full packet is "
           "up to 1,400) is cut, and rejected whole", PY,
           _py((_RECEIVE, _RECEIVE.replace("s.recv(65536)) and more\n", "s.recv(1024)) and more  # MUTANT\n"))),
           "udp-wide", "bbo_differs"),
    Mutant("cpp-symbol-in-7-characters", "a stock's symbol kept in 7 characters (an 8-byte buffer with room for its "
           "terminator): an 8-character symbol loses its last (C++, file, naming stocks by symbol)", CPP,
           CPP_CLAIMS_SYMBOLS + _cpp(("        std::string s(reinterpret_cast<const char*>(symbol), 8);\n",
                                      "        std::string s(reinterpret_cast<const char*>(symbol), 7);  // MUTANT\n")),
           "file-wide", "bbo_differs"),
    Mutant("cpp-shares-summed-in-32-bits", "a level's aggregate shares summed in 32 bits: a level of more than 2^32 "
           "shares wraps (C++, file)", CPP,
           _cpp(("    using Levels = std::map<uint32_t, uint64_t>;",
                 "    using Levels = std::map<uint32_t, uint32_t>;  // MUTANT")), "file-wide", "bbo_differs"),
    # The feed: gaps, lines, retransmissions.
    Mutant("gap-never-asked", "a gap is never asked of the re-request server: given up after its timeouts", PY,
           _py((_ASK, "            if False:  # MUTANT")), "recovery", "bbo_differs"),
    Mutant("line-b-ignored", "line B never joined: line A's losses stay lost", PY,
           _py((_B_LINE, "            if False:  # MUTANT: line B ignored\n")), "lines", "bbo_differs"),
    Mutant("copy-applied-twice", "a message's second copy (line B, or A's duplicate) applied again", PY,
           _py((_DUPLICATE, "        if self.waiting.get(seq) is not None:  # MUTANT\n")), "lines", "bbo_differs"),
    Mutant("past-gap-applied-early", "messages after a gap applied at once, before the gap's answer", PY,
           _py((_HOLD, "        else:\n            self._apply(seq, m)  # MUTANT\n        self._drain()\n")),
           "recovery", "bbo_differs"),
    Mutant("heartbeat-as-message", "a heartbeat taken as the message its number names: that message, when it "
           "comes, is dropped as a duplicate", PY,
           _py((_HEARTBEAT, "        if count == 0:  # MUTANT\n            self.next_seq = seq + 1\n            return True\n"
                + _HEARTBEAT)), "heartbeats", "bbo_differs"),
    # Its contract says it ends at the end of session, and it takes the first heartbeat for one: it ends, status 0,
    # while the session goes on. Early, by the sender's last message (the control, which ends at the true end of
    # session while the sender's ends of session go on for a second, is not).
    Mutant("heartbeat-as-end", "a heartbeat taken for the end of session: it ends by itself, status 0, in the middle "
           "of the session (its contract says it ends at the end of session)", PY,
           _CLAIMS_EXIT_AT_END + _py((_HEARTBEAT, "        count = 0xFFFF if count == 0 else count  # MUTANT\n"
                                                  + _HEARTBEAT)), "heartbeats", "incomplete"),
    Mutant("cut-packet-applied", "a packet cut short applied up to its cut, where MoldUDP64 validation rejects it "
           "whole (docs/book-and-bbo.md)", PY,
           _py((_CUT_AT, _CUT_AT.replace("return True", "break  # MUTANT")),
               (_OVERRUN, _OVERRUN.replace("return True", "break  # MUTANT")),
               (_LEFT_OVER, "        # MUTANT: bytes past the count ignored\n")), "udp-faults", "bbo_differs"),
    # The late join.
    Mutant("no-snapshot", "never logs in to the snapshot server: the feed applied from wherever it starts", PY,
           _py((_JOINING, "            joining = False  # MUTANT\n")), "join", "not_joined", quick=True),
    Mutant("snapshot-at-n", "the feed applied from the snapshot's last message N, not N + 1", PY,
           _py((_SNAPSHOT_NEXT, _SNAPSHOT_NEXT.replace("staged.append)", "staged.append) - 1  # MUTANT"))), "join",
           "bbo_differs"),
    Mutant("covered-applied-again", "the 100 messages before the join point applied again on the snapshot", PY,
           _py((_SNAPSHOT_NEXT, _SNAPSHOT_NEXT.replace("staged.append)", "staged.append) - 100  # MUTANT"))),
           "join", "bbo_differs"),
    Mutant("snapshot-depth-unsaid", "the books the snapshot built never published, the gateway publishing 5 levels "
           "of depth (what it publishes after the join is right)", PY,
           CLAIMS_DEPTH + _py((_SNAPSHOT_APPLIED, "                said, feed.book.emit = feed.book.emit, lambda *_: "
                                "None  # MUTANT\n" + _SNAPSHOT_APPLIED + "                feed.book.emit = said\n")),
           "join-depth", "bbo_differs"),
    # The process and its output.
    Mutant("end-of-session-ignored", "the end-of-session packet read as a heartbeat: it never ends by itself, "
           "though its contract says it does (stop.exits_at_end)", PY,
           _CLAIMS_EXIT_AT_END + _py((_HEARTBEAT, "        if count == 0xFFFF:  # MUTANT: the end of session ignored\n"
                                                  "            return True\n" + _HEARTBEAT)), "udp", "incomplete"),
    Mutant("crash-mid-run", "killed by SIGSEGV at the packet that carries seq 2,000", PY,
           _py((_PACKET_SEQ, _PACKET_SEQ + "        if seq <= 2000 < seq + max(count, 1) and count != 0xFFFF:  # MUTANT\n"
                "            os.kill(os.getpid(), signal.SIGSEGV)\n")), "udp", "incomplete", quick=True),
    Mutant("crash-mid-file", "a segmentation fault half-way through the file (C++)", CPP,
           _cpp(("        if (stock >= 0) say(seq, uint16_t(stock));\n",
                 "        if (seq == 5000) std::raise(SIGSEGV);  // MUTANT\n"
                 "        if (stock >= 0) say(seq, uint16_t(stock));\n")), "file", "incomplete"),
    Mutant("hang-at-end", "ignores SIGTERM and sleeps at the end", PY,
           IMPATIENT + _py((_SIGTERM, "    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # MUTANT\n"),
               (_FINALLY, "        time.sleep(3600)  # MUTANT\n" + _FINALLY)), "udp", "incomplete"),
    Mutant("helper-left-running", "a helper process started with it (a stats writer) and never stopped: still "
           "running after the gateway's exit", PY,
           _py((_PARSED, _PARSED + '    os.system("sleep 3600 &")  # MUTANT\n')), "udp", "incomplete"),
    Mutant("output-cut-at-exit", "events sent in batches of 64, the last batch dropped at exit", PY,
           _py((_PER_PACKET, "                if len(pending) >= 64:  # MUTANT\n                    flush()\n"),
               (_FINALLY, _FINALLY + "        pending.clear()  # MUTANT\n")), "udp", "bbo_differs"),
    Mutant("bbo-reconnect", "the BBO connection closed after 100 writes and opened again (the collector takes one "
           "connection: the next write fails and the gateway exits 1)", PY,
           _py((_TCP_OUT, "        conns = [socket.create_connection(to)]\n        writes = [0]\n\n"
                "        def reconnecting(data: bytes) -> None:  # MUTANT\n            writes[0] += 1\n"
                "            if writes[0] == 100:\n                conns[0].close()\n"
                "                conns[0] = socket.create_connection(to)\n            conns[0].sendall(data)\n"
                "        return reconnecting, lambda: conns[0].close()\n")), "udp", "incomplete"),
    Mutant("partial-last-line", "a partial line written last, with no newline", PY,
           _py((_CLOSE, _CLOSE.replace("close()", 'send(b"99999,1,100")  # MUTANT\n        close()'))),
           "udp", "bbo_differs"),
    # The same on a late join: its output after the join point is held whole too.
    Mutant("partial-last-line-join", "a partial line written last, with no newline, on a late join", PY,
           _py((_CLOSE, _CLOSE.replace("close()", 'send(b"99999,1,100")  # MUTANT\n        close()'))),
           "join", "bbo_differs"),
    Mutant("never-ready", "never connects to the BBO collector (its ready signal)", PY,
           IMPATIENT + _py((_PARSED, _PARSED + "    time.sleep(3600)  # MUTANT\n")), "udp", "incomplete"),
    Mutant("exit-0-silent", "exits 0 at once, having said nothing", PY,
           _py((_PARSED, _PARSED + "    return 0  # MUTANT\n")), "udp", "incomplete"),
    # Its output right, and made before the run sent a packet: a stub playing back a recording of the session kept
    # on disk (a UDP gateway gets no {capture}: the recording's path is written into it).
    Mutant("output-from-a-recording", "its BBO made at start from a recording of the session on disk (the bundled "
           "capture, at a path written into it), sent as soon as it is connected, before any packet was sent; the "
           "feed then read and dropped as duplicates", PY,
           _py((_CONNECT, "    # MUTANT: connected once the recording is played\n"),
               (_FEED, _FEED + _FROM_THE_RECORDING.format(
                   path=repr(str(paths.fixtures_dir() / "nasdaq-day-sample.pcap"))))), "udp", "unbalanced"),
    # Reading the capture itself, the same: its build keeps a copy of the session (a claim its control makes too),
    # and it reads that copy, beside its executable, whatever file it is given. Its output equals the simulation's.
    Mutant("file-output-from-a-recording", "reads the copy of the session its build keeps, not the capture it is "
           "given", CPP, CPP_CLAIMS_RECORDING + _cpp((_CPP_FILE_ARGUMENT, _CPP_FILE_ARGUMENT.replace(
               "file = argv[i + 1];", 'file = std::string(argv[0]).substr(0, std::string(argv[0]).rfind(\'/\')) + '
               '"/recording.pcap";  // MUTANT'))), "file", "unbalanced"),
    Mutant("says-lossless", "prints a verdict-looking LOSSLESS line itself, and sends no event", PY,
           _py((_PARSED, _PARSED + '    print("LOSSLESS: 14,000 messages, 6,000 BBO events = simulation (exact), '
                                   'balanced — ok", flush=True)  # MUTANT\n'),
               (_EMIT, "        return  # MUTANT\n" + _EMIT)), "udp", "bbo_differs"),
    # A white box's own latency log: its stages are reported only from a log that holds together.
    Mutant("white-box-stamps-backwards", "its book stamp taken before the message's decoded one (a white box: "
           "white_box = true)", PY,
           CLAIMS_WHITE_BOX + _py(("(self.read, decoded, self.now()))\n",
                                   "(self.read, self.now(), decoded))  # MUTANT\n")),
           "udp", "unbalanced"),
    Mutant("white-box-wall-clock", "its stamps on CLOCK_REALTIME, not the run's CLOCK_MONOTONIC: stages right, "
           "every stamp decades after its BBO event arrived (a white box)", PY,
           CLAIMS_WHITE_BOX + _py((_NOW_NS, _NOW_NS.replace("itchbench_stamps.now_ns", "time.time_ns") + "  # MUTANT")),
           "udp", "unbalanced"),
    Mutant("white-box-microseconds", "its stamps in µs where ns are due: stages 1,000 times too short, every stamp "
           "before its message was sent (a white box)", PY,
           CLAIMS_WHITE_BOX + _py((_NOW_NS, _NOW_NS.replace("itchbench_stamps.now_ns",
                                                          "lambda: itchbench_stamps.now_ns() // 1000") + "  # MUTANT")),
           "udp", "unbalanced"),
    Mutant("white-box-log-unclosed", "its latency log never closed: left unfinalized at exit (a white box)", PY,
           CLAIMS_WHITE_BOX + _py(("        if stamps:\n            stamps.close()\n",
                                   "        pass  # MUTANT: the latency log never closed\n")), "udp", "unbalanced"),
    Mutant("white-box-book-messages-only", "only book messages (A, F, E, C, X, D, U) recorded in its latency log "
           "(a white box)", PY,
           CLAIMS_WHITE_BOX + _py((_STAMPS_RECORDED, _STAMPS_RECORDED.replace(
               "if self.stamps:", 'if self.stamps and m[0:1] in b"AFECXDU":  # MUTANT'))), "udp", "unbalanced"),
    Mutant("cpp-white-box-recorded-twice", "each message recorded twice in its latency log (a white box in C++, "
           "reading the file itself)", CPP,
           CPP_CLAIMS_WHITE_BOX + _cpp((_CPP_STAMPS_RECORDED, _CPP_STAMPS_RECORDED + "            // MUTANT\n"
                                        + _CPP_STAMPS_RECORDED)), "file", "unbalanced"),
    # Speed: what compare must see.
    Mutant("slowdown-2x", "every packet's work done at half speed (a busy wait as long as the work)", PY,
           _py((_RECEIVE, "                    began = time.perf_counter()  # MUTANT: half speed\n" + _RECEIVE +
                "                    spent = time.perf_counter() - began\n"
                "                    while time.perf_counter() - began < 2 * spent:\n                        pass\n")),
           "udp", "slower", compared=True),
    Mutant("memory-leak", "a 64 KiB buffer taken for each packet and never released: its memory grows with the "
           "session (about 85 MiB over the slice's packets)", PY,
           _py((_PENDING, _PENDING + "    kept: list[bytes] = []  # MUTANT\n"),
               (_RECEIVE, "                    kept.append(bytes(65536))  # MUTANT: never released\n" + _RECEIVE)),
           "udp", "more_memory", compared=True),
    # The datagrams sent before the bind reached no socket: lost, whatever its output (docs/verdicts.md).
    Mutant("slow-start", "ready (BBO connected) two seconds before its feed socket is bound", PY,
           _py((_OPEN_FEED, "            time.sleep(2)  # MUTANT\n" + _OPEN_FEED)), "udp", "lost"),
    # The built-in gateway's own flag (FORMAT.md: 0x01, the book may be stale), which neither example writes.
    Mutant("stale-flag-missed", "a jump in sequence (messages lost) does not flag the BBO stale (the built-in "
           "gateway, patched)", BUILT_IN,
           _built_in("gateway/pipeline/gateway.hpp",
                     ("    if (__builtin_expect(seq != last_seq_ + 1, 0) && last_seq_ != 0) bbo_flags_ = "
                      "logfmt::kBookMayBeStale;\n", "    // MUTANT: a gap leaves the flag as it was\n")),
           "faulted-file", "unbalanced"),
    # A stamp moved onto the wrong scale: the kernel's arrival stamp placed 1,000 times its age before the read (its
    # age taken for µs where it is ns), milliseconds before the datagram was sent.
    Mutant("kernel-stamp-age-scaled", "the kernel's arrival stamp placed 1,000 times its age before the read (the "
           "built-in gateway, patched): every wake-up hop 1,000 times too long", BUILT_IN,
           _built_in("gateway/util/stage_clock.hpp",
                     ("    return r.stamp ? earlier(r.stamp, r.other_ns > then_ns ? r.other_ns - then_ns : 0) : 0;\n",
                      "    return r.stamp ? earlier(r.stamp,  // MUTANT\n"
                      "                             r.other_ns > then_ns ? (r.other_ns - then_ns) * 1000 : 0)\n"
                      "                   : 0;\n")),
           "udp-depth", "unbalanced"),
    Mutant("depth-frames-unsent", "every depth event of a seq divisible by 97 logged but never handed to the TCP "
           "depth publisher (the built-in gateway, patched)", BUILT_IN,
           _built_in("gateway/publish/bbo_fan_out.hpp",
                     ("    if (depth_.tcp) depth_.tcp->publish_frame(record);\n",
                      "    if (depth_.tcp && reinterpret_cast<const logfmt::DepthRecord*>(record)->seq % 97)  // MUTANT\n"
                      "      depth_.tcp->publish_frame(record);\n")),
           "udp-depth", "unbalanced"),
    Mutant("snapshot-depth-missed", "the depth of the books the snapshot built never published (the built-in "
           "gateway, patched)", BUILT_IN,
           _built_in("gateway/pipeline/gateway.hpp",
                     ("      if (depth_) log_depth(",
                      "      if (false /* MUTANT */ && depth_) log_depth(")),
           "join-depth", "unbalanced"),
    Mutant("level-changes-new-price-first", "a replace's two level changes logged new price first (the built-in "
           "gateway, patched, logging every level)", BUILT_IN,
           _built_in("gateway/book/level_changes.hpp",
                     ("  for (uint32_t t = 0; t < touch.levels; ++t)\n",
                      "  for (uint32_t t = touch.levels; t-- > 0;)  // MUTANT: the old price's change goes last\n")),
           "udp-every-level", "unbalanced"),
)

CONTROLS: tuple[Control, ...] = (
    Control(PY, "udp", "lossless", quick=True),
    Control(PY, "serial", "lossless"),
    Control(PY, "serial-noise", "faults_accounted"),
    Control(PY, "udp-faults", "faults_accounted"),
    Control(PY, "udp-corrupt", "faults_accounted"),
    Control(CPP, "file", "lossless", quick=True),
    Control(CPP, "udp", "lossless"),
    Control(PY, "udp-wide", "lossless"),
    Control(CPP, "file-wide", "lossless"),
    Control(CPP, "file-wide", "lossless", edits=CPP_CLAIMS_SYMBOLS, claim="contract runs it with --stock symbol"),
    Control(PY, "lines", "recovered"),
    Control(PY, "recovery", "recovered"),
    Control(PY, "join", "joined", quick=True),
    Control(PY, "heartbeats", "lossless"),
    Control(PY, "heartbeats", "lossless", edits=_CLAIMS_EXIT_AT_END, claim="contract says exits_at_end"),
    Control(PY, "udp", "lossless", edits=_CLAIMS_EXIT_AT_END, claim="contract says exits_at_end"),
    Control(PY, "udp", "lossless", edits=CLAIMS_DEPTH, claim="contract says levels = 5"),
    Control(PY, "udp", "lossless", edits=IMPATIENT, claim="contract waits 4 s for ready, 2 s after SIGTERM"),
    Control(PY, "udp", "lossless", edits=CLAIMS_STATE, claim='contract says check = "state"'),
    Control(PY, "udp", "lossless", edits=CLAIMS_JSONL, claim='contract says format = "jsonl"'),
    Control(PY, "udp", "lossless", edits=CLAIMS_SHARDS, claim="contract runs it with --shards 3"),
    Control(PY, "serial", "lossless", edits=CLAIMS_SHARDS_SERIAL, claim="contract runs it with --shards 3"),
    Control(PY, "join-depth", "joined", edits=CLAIMS_DEPTH, claim="contract says levels = 5"),
    Control(PY, "udp", "lossless", edits=CLAIMS_EVERY_LEVEL, claim='contract says levels = "all"'),
    Control(PY, "udp", "lossless", edits=CLAIMS_WHITE_BOX, claim="contract says white_box = true (--latency-log)"),
    Control(PY, "serial", "lossless", edits=CLAIMS_EVERY_LEVEL, claim='contract says levels = "all"'),
    Control(PY, "join", "joined", edits=CLAIMS_EVERY_LEVEL, claim='contract says levels = "all"'),
    Control(CPP, "file", "lossless", edits=CPP_CLAIMS_EVERY_LEVEL, claim='contract says levels = "all"'),
    Control(CPP, "file", "lossless", edits=CPP_CLAIMS_RECORDING, claim="its build keeps a recording of the session"),
    Control(CPP, "file", "lossless", edits=CPP_CLAIMS_WHITE_BOX,
            claim="contract says white_box = true (--latency-log)"),
    Control(BUILT_IN, "udp-every-level", "lossless"),
    Control(BUILT_IN, "faulted-file", "faults_accounted"),
    Control(BUILT_IN, "join-depth", "joined"),
    Control(BUILT_IN, "udp-depth", "lossless"),
)


class ZooError(RuntimeError):
    """A mutant whose edit no longer applies to its example: the zoo is out of step with the examples."""


def scenario_path(name: str) -> Path:
    return paths.repo_root() / "scenarios" / "selftest" / f"{name}.toml"


def example_dir(example: str) -> Path:
    return paths.repo_root() if example == BUILT_IN else paths.repo_root() / "examples" / example


def materialise(example: str, edits: tuple[Edit, ...], into: Path) -> Path:
    """A copy of the example with the edits made (none: the example as it is); ZooError when an anchor does not
    stand exactly once. The built-in gateway's copy is its build inputs and its contract."""
    if example == BUILT_IN:
        _copy_inputs(example_dir(example), into)
        shutil.copy2(example_dir(example) / BUILT_IN_CONTRACT, into / BUILT_IN_CONTRACT)
    else:
        shutil.copytree(example_dir(example), into,
                        ignore=shutil.ignore_patterns("cpp-gateway", "*.o", "__pycache__"))
    for e in edits:
        path = into / e.file
        text = path.read_text()
        found = text.count(e.old)
        if found != 1:
            raise ZooError(f"{example}/{e.file}: the anchor {e.old.strip()[:60]!r} stands {found} times, not once")
        path.write_text(text.replace(e.old, e.new))
    return into


def select(quick: bool, names: list[str] | None = None) -> tuple[list[Mutant], list[Control]]:
    """The mutants and controls to run: all, the quick set, or the named mutants (with the controls of their
    scenarios)."""
    if names:
        unknown = sorted(set(names) - {m.name for m in MUTANTS})
        if unknown:
            raise ZooError(f"no mutant named {', '.join(unknown)} (itchbench selftest --list)")
        mutants = [m for m in MUTANTS if m.name in names]
    else:
        mutants = [m for m in MUTANTS if m.quick or not quick]
    wanted = {(m.example, m.scenario) for m in mutants}
    claimed = {e for m in mutants for e in m.edits if e.file == "itchbench.toml"}
    controls = [c for c in CONTROLS if (c.example, c.scenario) in wanted and (c.quick or not quick or names)
                and set(c.edits) <= claimed]
    return mutants, controls


def prepare(example: str, copy: Path, edited: bool, say: Callable[[str], None]) -> Path:
    """The materialised copy ready to run. A patched built-in gateway is built (once for its sources, cached) and
    its copy's contract pointed at that build, with no build of its own; the unpatched one is this checkout's
    build. The examples build themselves through their contracts."""
    if example != BUILT_IN:
        return copy
    if edited:
        identity = hashlib.sha256()
        for path in sorted(p for name in revisions.build_inputs() for p in [copy / name, *(copy / name).rglob("*")]
                           if p.is_file()):
            identity.update(str(path.relative_to(copy)).encode() + b"\0" + path.read_bytes())
        say("  building the patched built-in gateway (cached by its sources)")
        binary = revisions.build_copy("zoo mutant", identity.hexdigest(), lambda src: _copy_inputs(copy, src), say)
    else:
        binary = paths.build_dir() / "gateway" / "itch-gateway"
    contract = (copy / BUILT_IN_CONTRACT).read_text()
    found = contract.count(_BUILT_IN_BINARY), len(_BUILT_IN_BUILD.findall(contract))
    if found != (3, 1):
        raise ZooError(f"{BUILT_IN_CONTRACT}: the built-in gateway's binary stands {found[0]} times (not 3) and its "
                       f"build {found[1]} times (not once)")
    # In double quotes, escaped for them: the commands are TOML literal strings, which no ' may stand in (shlex's
    # quoting of a path with a space broke the TOML).
    quoted = '"' + re.sub(r'([\\"$`])', r"\\\1", str(binary)) + '"'
    (copy / BUILT_IN_CONTRACT).write_text(_BUILT_IN_BUILD.sub("", contract.replace(_BUILT_IN_BINARY,
                                                                                  "gateway=" + quoted)))
    return copy


def _copy_inputs(source: Path, into: Path) -> None:
    """The gateway's build inputs (revisions.build_inputs()) of a source tree, copied."""
    into.mkdir(parents=True)
    for name in revisions.build_inputs():
        (shutil.copytree if (source / name).is_dir() else shutil.copy2)(source / name, into / name)
