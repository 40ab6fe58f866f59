from __future__ import annotations

import ctypes
import resource
import subprocess
from pathlib import Path

import pytest

from itchbench import paths

# Orphans of the runs the tests make (a gateway whose shell died, say) come back to this process rather than to
# init, so the tests' check for leftover processes (live_helpers.leftover_processes) sees them, and only ours.
_PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1)


@pytest.fixture(scope="session")
def tool():
    """Run a built C++ tool; returns the CompletedProcess (never raises on exit code)."""

    def run(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(paths.tool(name)), *map(str, args)], capture_output=True, text=True)

    return run


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it has reaped (the runs' gateways, tools and orphans; the
    report's drawing process, which serves many runs, when a test ends it)."""
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


_CPU_AT_SETUP = pytest.StashKey[float]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_CPU_AT_SETUP] = _cpu_seconds()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Each test's CPU time beside its duration in the JUnit XML, which takes a test's properties from its teardown's
    # report (harness/bin/test-durations prints both): on two CPUs the suite lasts about its CPU time over two, and
    # a test that waits costs a worker, not the machine.
    if call.when == "teardown" and _CPU_AT_SETUP in item.stash:
        item.user_properties.append(("cpu_seconds", f"{_cpu_seconds() - item.stash[_CPU_AT_SETUP]:.2f}"))
    yield
