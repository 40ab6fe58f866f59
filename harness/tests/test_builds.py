"""Build flavours (docs/builds.md): a scenario's [build] table builds the built-in gateway from this checkout with
other flags, LTO or PGO, cached; the binary under test records the flags it was built with, and a document of
configurations with different flags gains a compiler-flags table. The flavour here is -O0 with PGO: the cheapest
build that still goes through both passes and the training run."""

from __future__ import annotations

import re

import subprocess
from pathlib import Path

import pytest

from itchbench import paths, rundir
from itchbench.documents import benchmark
from itchbench.gateways import revisions
from itchbench.runs import runner
from itchbench.runs.scenario import ScenarioError, defaults, load

SEED = paths.repo_root() / "fixtures" / "seed-workload.pcap"
BROUGHT = paths.repo_root() / "examples" / "cpp-gateway" / "itchbench.toml"  # takes file input


def test_a_flavour_is_checked_and_named(tmp_path):
    with pytest.raises(ScenarioError, match="pgo_training names a training capture but build.pgo is false"):
        _load_one(tmp_path, 'build = { pgo_training = "x.pcap" }')
    with pytest.raises(ScenarioError, match="a brought gateway .* is built by its own contract"):
        _load_one(tmp_path, f'gateway_file = "{BROUGHT}"\nbuild = {{ lto = true }}')
    with pytest.raises(ScenarioError, match="unknown key 'build.flags'"):
        defaults(name="x", transport="sim", capture=str(SEED), build={"flags": "-O2"})
    assert revisions.Flavour("-O3 -march=native", True, "t.pcap").name == "-O3 -march=native LTO PGO"
    assert revisions.Flavour().default and revisions.Flavour().name == "-O3"
    # Flavours of one source are different builds; the set-up's flavour keeps compare's key.
    assert len({revisions.flags_hash(f) for f in (revisions.Flavour(), revisions.Flavour("-O2"),
                                                 revisions.Flavour(lto=True))}) == 3


def _load_one(where: Path, extra: str):
    scenario = where / "flavour.toml"
    scenario.write_text(f'name = "flavour"\ntransport = "sim"\ncapture = "{SEED}"\n{extra}\n')
    return load(scenario)


def test_a_pgo_flavour_is_built_trained_run_and_tabled(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(revisions, "cache_root", lambda: tmp_path / "builds")  # built here, whatever is cached
    # Each target built as one unity source, as no user's flavour is: under test are the flavour's passes, not how
    # its files are grouped, and most of -O0's cost is the same headers parsed in every file (73 -> 26 CPU-s a pass).
    monkeypatch.setattr(revisions, "BUILD_OPTIONS",
                        [*revisions.BUILD_OPTIONS, "-DCMAKE_UNITY_BUILD=ON", "-DCMAKE_UNITY_BUILD_BATCH_SIZE=0"])
    configs = _load_one(tmp_path, 'build = { cxx_flags = "-O0", pgo = true }')
    values = configs[0].values
    assert values["build"]["pgo_training"] == str(SEED)  # the default training capture
    flavoured = runner.execute(values, "O0-PGO", root=tmp_path / "runs", echo=True)
    built = capsys.readouterr().out
    assert "building itch-gateway" in built and "PGO training run on seed-workload.pcap" in built
    manifest = rundir.read_json(flavoured / "manifest.json")
    binary = Path(manifest["gateway_under_test"]["binary"])
    assert binary.is_file() and manifest["gateway_under_test"]["build_flavour"] == "-O0 PGO"
    # What the binary itself says of its build, read here without the harness.
    info = subprocess.run([str(binary), "--build-info"], capture_output=True, text=True, check=True).stdout
    assert '-O0 -fprofile-use=' in info and "-fprofile-correction" in info
    assert manifest["environment"]["build"]["cxx_flags"].endswith("-Wno-missing-profile")
    # The training run left its profiles where the use pass read them.
    assert list((binary.parents[1] / "pgo").rglob("*.gcda"))
    assert rundir.read_json(flavoured / "summary.json")["verdict"]["status"] == "lossless"

    again = runner.execute(values, "O0-PGO", root=tmp_path / "runs", echo=True)  # the same flavour: cached
    assert "cached build" in capsys.readouterr().out
    assert rundir.read_json(again / "manifest.json")["gateway_under_test"]["binary"] == str(binary)

    plain = runner.execute(defaults(name="flavour", transport="sim", capture=str(SEED)), "O3", root=tmp_path / "runs",
                           echo=False)
    benchmark.build([plain, flavoured, again], tmp_path / "doc", baseline="O3")
    doc = (tmp_path / "doc" / "report.md").read_text()
    table = doc[doc.index("## Compiler flags"):]
    rows = {line.split(" | ")[1]: line for line in table.splitlines()[:12] if line.startswith("| seed-workload")}
    assert "| -O3 | `-O3 -DNDEBUG -Wall -Wextra` (GNU " in rows["O3 (reference)"]
    flavour = rows["O0-PGO"]
    assert "| -O0 PGO | `-O3 -DNDEBUG -Wall -Wextra -O0 -fprofile-use -fprofile-correction" in flavour
    assert "| seed-workload.pcap |" in flavour
    # -O0 against -O3 on the same capture, said as a factor of the reference's throughput. Its direction is not
    # asserted: on the seed capture (thousands of messages, one run of the reference) the process's start-up
    # dominates, and on a busy machine the -O0 runs came out 1.62× faster.
    assert re.search(r"\| [\d,.]+×( slower)? \((one run: no CI|CI [\d,.]+–[\d,.]+)\) \|", flavour), flavour


def test_a_build_with_its_micro_benchmarks_is_a_cache_entry_of_its_own(tmp_path, monkeypatch):
    # A compare whose scenario runs micro-benchmarks had rebuilt a cached build in place (removing its folder first)
    # to add them, under any other compare then running that build. The build with them now lives beside it.
    monkeypatch.setattr(revisions, "cache_root", lambda: tmp_path / "builds")
    homes: list[tuple[bool, Path]] = []
    monkeypatch.setattr(revisions, "_build_in", lambda repo, rev, say, benchmarks, flavour, home, populate=None:
                        homes.append((benchmarks, home)) or home / "itch-gateway")
    rev = revisions.resolve(paths.repo_root(), "HEAD")
    for benchmarks in (False, True, False):
        revisions.build(paths.repo_root(), rev, lambda _: None, benchmarks=benchmarks)
    (plain, home), (bench, bench_home), again = homes
    assert (plain, bench) == (False, True) and again == (False, home)
    assert bench_home == home.with_name(home.name + "-bench")
