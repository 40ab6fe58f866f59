"""The white-box writers a team adds to its gateway (gateway/log/whitebox/):
the C header, compiled here, and the Python module write latency logs that
itchbench's reader takes, every field where FORMAT.md puts it."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from itchbench import paths
from itchbench.analysis import logs

WHITEBOX = paths.repo_root() / "gateway" / "log" / "whitebox"
# (seq, type, locate, flags, read, decoded, book): three messages, the second a BBO event, the third rejected
# (stamped at read only).
MESSAGES = [(7, b"A", 12, 0, 1_000, 1_200, 1_500), (8, b"D", 12, 1, 2_000, 2_100, 2_400),
            (9, b"z", 0, 4, 3_000, 0, 0)]


def _check(path: Path) -> None:
    log = logs.read_latency(path)
    assert log.complete and log.header["record_count"] == 3 and log.header["stages"] == ["t_read", "t_decoded", "t_book"]
    rec = log.records
    assert rec["seq"].tolist() == [7, 8, 9]
    assert rec["msg_type"].tolist() == [b"A", b"D", b"z"]
    assert rec["stock_locate"].tolist() == [12, 12, 0]
    assert (rec["flags"] & 0x7F).tolist() == [0, 1, 4]
    for field, i in (("t_read", 4), ("t_decoded", 5), ("t_book", 6)):
        assert logs.stamp(rec, field).tolist() == [m[i] for m in MESSAGES], field
    assert logs.stamp(rec, "t_kernel").tolist() == [0, 0, 0]


def test_the_python_module_writes_a_log_itchbench_reads(tmp_path):
    spec = importlib.util.spec_from_file_location("itchbench_stamps", WHITEBOX / "itchbench_stamps.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    log = mod.LatencyLog(str(tmp_path / "latency.lat"), mod.READ | mod.DECODED | mod.BOOK, "run-1", "abc")
    for seq, kind, locate, flags, *stamps in MESSAGES:
        log.record(seq, kind, locate, flags, stamps)
    log.close()
    _check(tmp_path / "latency.lat")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_the_c_header_writes_the_same_log(tmp_path):
    rows = ",".join("{%d,'%s',%d,%d,{%d,%d,%d}}" % (s, k.decode(), l, f, a, b, c) for s, k, l, f, a, b, c in MESSAGES)
    (tmp_path / "w.c").write_text(f'''#include "itchbench_stamps.h"
struct m {{ uint64_t seq; char type; uint16_t locate; uint8_t flags; uint64_t stamps[3]; }};
int main(int argc, char** argv) {{
  if (argc != 2) return 2;
  struct m ms[] = {{{rows}}};
  ib_latency_log log;
  if (ib_latency_open(&log, argv[1], IB_STAGE_READ | IB_STAGE_DECODED | IB_STAGE_BOOK, "run-1", "abc")) return 1;
  for (int i = 0; i < 3; ++i)
    if (ib_latency_record(&log, ms[i].seq, ms[i].type, ms[i].locate, ms[i].flags, ms[i].stamps)) return 1;
  return ib_latency_close(&log) ? 1 : 0;
}}
''')
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(WHITEBOX), "-o", str(tmp_path / "w"),
                    str(tmp_path / "w.c")], check=True)
    subprocess.run([str(tmp_path / "w"), str(tmp_path / "c.lat")], check=True)
    _check(tmp_path / "c.lat")
    # Byte for byte what the Python module writes.
    test_the_python_module_writes_a_log_itchbench_reads(tmp_path)
    assert (tmp_path / "c.lat").read_bytes() == (tmp_path / "latency.lat").read_bytes()
