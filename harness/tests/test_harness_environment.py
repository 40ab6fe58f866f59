"""What the harness sets in its own environment, and that a gateway under test is given the user's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Prints what a fresh harness process sees: its own value, the user's environment's, and its threads once numpy is
# imported (OpenBLAS starts one a CPU unless told otherwise).
_PROBE = """
import json, os, itchbench, numpy
print(json.dumps({"own": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "users": itchbench.users_environment().get("OPENBLAS_NUM_THREADS"),
                  "own_utf8": os.environ.get("PYTHONUTF8"),
                  "users_utf8": itchbench.users_environment().get("PYTHONUTF8"),
                  "marker_to_users": "ITCHBENCH_SET_FOR_ITSELF" in itchbench.users_environment(),
                  "threads": len(os.listdir("/proc/self/task"))}))
"""


def _probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OPENBLAS_NUM_THREADS", "PYTHONUTF8", "ITCHBENCH_SET_FOR_ITSELF")}
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**clean, **env}, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="OpenBLAS starts one thread on a single CPU anyway")
def test_the_harness_runs_numpy_on_one_thread_and_keeps_it_from_the_user():
    seen = _probe()
    assert seen == {"own": "1", "users": None, "own_utf8": "1", "users_utf8": None, "marker_to_users": False,
                    "threads": 1}


def test_a_value_the_user_set_is_theirs_and_passed_on():
    seen = _probe(OPENBLAS_NUM_THREADS="2")
    assert (seen["own"], seen["users"]) == ("2", "2")


def test_an_itchbench_started_by_itchbench_still_keeps_the_harness_value_to_itself():
    # A Slurm shard or selftest's itchbench inherits the harness's environment: it must not take the value for the
    # user's.
    seen = _probe(OPENBLAS_NUM_THREADS="1", ITCHBENCH_SET_FOR_ITSELF="OPENBLAS_NUM_THREADS")
    assert (seen["own"], seen["users"], seen["marker_to_users"]) == ("1", None, False)


def test_under_a_locale_of_another_encoding_a_run_still_writes_its_report(tmp_path):
    """Under en_US.ISO-8859-1 every report failed to be written ('latin-1' codec can't encode character '\\u2014')
    and every run exited 1 with REPORT NOT WRITTEN. The locale is made here (localedef, into a folder of the test's
    own, found through LOCPATH), and `itchbench sim` is run under it: its report is written, in UTF-8."""
    locales = tmp_path / "locales"
    locales.mkdir()
    subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(locales / "en_US.ISO-8859-1")], check=True,
                   capture_output=True)
    env = {**os.environ, "LOCPATH": str(locales), "LC_ALL": "en_US.ISO-8859-1"}
    env.pop("PYTHONUTF8", None)  # as a user's shell has it
    said = subprocess.run([sys.executable, "-c", "import locale; print(locale.getpreferredencoding(False))"], env=env,
                          capture_output=True, text=True, check=True).stdout.strip()
    assert said == "ISO-8859-1"  # the locale is in force for a Python started there
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "seed-workload.pcap"
    done = subprocess.run([sys.executable, "-m", "itchbench.cli", "sim", str(fixture), "--out", str(tmp_path / "run")],
                          env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"REPORT NOT WRITTEN" not in done.stdout + done.stderr
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert any(ord(c) > 0xFF for c in report)  # characters latin-1 has not (✓), written as UTF-8
