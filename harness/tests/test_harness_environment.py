"""What the harness sets in its own environment, and that a gateway under test is given the user's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# Prints what a fresh harness process sees: its own value, the user's environment's, and its threads once numpy is
# imported (OpenBLAS starts one a CPU unless told otherwise).
_PROBE = """
import json, os, itchbench, numpy
print(json.dumps({"own": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "users": itchbench.users_environment().get("OPENBLAS_NUM_THREADS"),
                  "marker_to_users": "ITCHBENCH_SET_FOR_ITSELF" in itchbench.users_environment(),
                  "threads": len(os.listdir("/proc/self/task"))}))
"""


def _probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "ITCHBENCH_SET_FOR_ITSELF")}
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**clean, **env}, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="OpenBLAS starts one thread on a single CPU anyway")
def test_the_harness_runs_numpy_on_one_thread_and_keeps_it_from_the_user():
    seen = _probe()
    assert seen == {"own": "1", "users": None, "marker_to_users": False, "threads": 1}


def test_a_value_the_user_set_is_theirs_and_passed_on():
    seen = _probe(OPENBLAS_NUM_THREADS="2")
    assert (seen["own"], seen["users"]) == ("2", "2")


def test_an_itchbench_started_by_itchbench_still_keeps_the_harness_value_to_itself():
    # A Slurm shard or selftest's itchbench inherits the harness's environment: it must not take the value for the
    # user's.
    seen = _probe(OPENBLAS_NUM_THREADS="1", ITCHBENCH_SET_FOR_ITSELF="OPENBLAS_NUM_THREADS")
    assert (seen["own"], seen["users"], seen["marker_to_users"]) == ("1", None, False)
