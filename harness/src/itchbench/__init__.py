"""itchbench: deterministic ITCH 5.0 replay testbench (harness side)."""

import os

__version__ = "0.1.0"

# numpy's OpenBLAS starts a thread a CPU when it is imported, and each spins about 0.1 s waiting for work that the
# harness never gives it (its arithmetic is element-wise): on a run's two CPUs, CPU taken from the gateway and the
# report's follower. itchbench sim on 50 M nasdaq-day messages, 4 rounds interleaved: 3.31 s (3.25-3.36) with the
# spinning, 3.13 s (3.11-3.21) without. Set before anything imports numpy, where the user has not set it; the
# harness's helper processes inherit it, a gateway under test does not (users_environment). _SET_FOR_ITSELF names
# what the harness set, so that an itchbench started by itchbench (a Slurm shard, selftest) knows it too.
_SET_FOR_ITSELF = "ITCHBENCH_SET_FOR_ITSELF"
_set_here = set(os.environ.get(_SET_FOR_ITSELF, "").split())
# PYTHONUTF8: the Pythons the harness starts (its helpers, an itchbench of its own) read and write UTF-8 whatever
# the locale, as it does itself (cli._in_utf8_mode).
for _name, _value in {"OPENBLAS_NUM_THREADS": "1", "PYTHONUTF8": "1"}.items():
    if _name not in os.environ:
        os.environ[_name] = _value
        _set_here.add(_name)
os.environ[_SET_FOR_ITSELF] = " ".join(sorted(_set_here))


def users_environment() -> dict[str, str]:
    """The environment as the user gave it, without what the harness set for its own processes: a gateway under
    test, and its build, run in this."""
    return {k: v for k, v in os.environ.items() if k not in _set_here and k != _SET_FOR_ITSELF}
