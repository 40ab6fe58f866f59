"""Google Benchmark micro-benchmarks as part of a run: the binaries of the
gateway's own build (so a compared revision runs its own), run after the
transport, each writing its JSON (results and context) into microbench/."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from .. import atomic, paths
from .failure import RunError, describe_exit, tail

SECONDS_PER_REPETITION = 30  # deadline per benchmark and repetition: generous, the benchmarks set ~1-2 s


def binary(name: str) -> Path:
    """The benchmark binary beside the gateway that runs (the same build)."""
    path = paths.tool("itch-gateway").parent / "bench" / name
    if not path.is_file():
        raise RunError("setup", f"{path} is not built: micro-benchmarks need the build's benchmarks "
                                "(cmake -DITCHBENCH_BENCHMARKS=ON)")
    return path


def _filter_args(cfg: dict[str, Any]) -> list[str]:
    return [f"--benchmark_filter={cfg['filter']}"] if cfg["filter"] else []


def planned(values: dict[str, Any]) -> dict[str, list[str]]:
    """Per binary, the benchmarks the scenario's filter selects; a filter that
    selects nothing is refused before the run starts."""
    cfg = values["microbench"]
    out: dict[str, list[str]] = {}
    for name in cfg["binaries"]:
        proc = subprocess.run([str(binary(name)), "--benchmark_list_tests", *_filter_args(cfg)],
                              capture_output=True, text=True, timeout=60)
        names = proc.stdout.split()
        if proc.returncode != 0 or not names:
            raise RunError("setup", f"microbench.filter {cfg['filter']!r} selects no benchmark of {name}"
                                    + (f": {tail(proc.stderr)}" if proc.stderr.strip() else ""))
        out[name] = names
    return out


def run_all(values: dict[str, Any], run_dir: Path, say) -> None:
    cfg = values["microbench"]
    if not cfg["binaries"]:
        return
    out_dir = run_dir / "microbench"
    out_dir.mkdir(exist_ok=True)
    for name, benchmarks in planned(values).items():
        say(f"  micro-benchmarks: {name}, {len(benchmarks)} benchmark(s) x {cfg['repetitions']} repetitions")
        out = out_dir / f"{name}.json"
        with atomic.replaced_when_whole(out) as tmp:  # only a finished benchmark's JSON is presented as whole
            cmd = [str(binary(name)), f"--benchmark_repetitions={cfg['repetitions']}", "--benchmark_format=json",
                   f"--benchmark_out={tmp}", "--benchmark_out_format=json", *_filter_args(cfg)]
            deadline = 60 + SECONDS_PER_REPETITION * len(benchmarks) * cfg["repetitions"]
            try:
                proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                      timeout=deadline)
            except subprocess.TimeoutExpired:
                raise RunError("deadline", f"micro-benchmark {name} did not finish within {deadline} s") from None
            if proc.returncode != 0:
                raise RunError("microbench_failed", f"micro-benchmark {name} {describe_exit(proc.returncode)}: "
                                                    f"{tail(proc.stderr)}")
