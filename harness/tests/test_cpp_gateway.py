"""A compiled gateway brought through its contract (examples/cpp-gateway, built with make): run on every input it
takes, its speed judged by compare on a file it reads itself (throughput, CPU time, exact instructions), and the
commit that slowed it found by bisect --metric instructions. The slowdown is planted in a throw-away copy: a
dependent chain of 2,000 multiply-adds on every message (about 2 µs here)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from itchbench import paths, rundir

EXAMPLE = paths.repo_root() / "examples" / "cpp-gateway"
SEED = paths.repo_root() / "fixtures" / "seed-workload.pcap"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
APPLY = "        if (valid) book_.apply(seq, m);\n"
SLOWDOWN = ("        static volatile uint64_t planted_sink;\n        uint64_t x = seq;\n"
            "        for (int i = 0; i < 2000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;\n"
            "        planted_sink = x;\n")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                   check=True, capture_output=True)


def _itchbench(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(paths.repo_root() / ".venv" / "bin" / "itchbench"), *map(str, args)],
                          capture_output=True, text=True)


@pytest.fixture(scope="session")
def planted(tmp_path_factory) -> Path:
    """The example's repository: a good commit, a harmless one, the slowdown, a harmless one."""
    repo = tmp_path_factory.mktemp("cpp") / "gateway"
    repo.mkdir()
    for name in ("gateway.cpp", "itchbench_stamps.h", "Makefile", "itchbench.toml", ".gitignore"):
        (repo / name).write_text((EXAMPLE / name).read_text())
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Example gateway")

    def change(subject: str, path: str, old: str, new: str) -> None:
        text = (repo / path).read_text()
        assert old in text, f"{path} no longer has the text to plant into"
        (repo / path).write_text(text.replace(old, new, 1))
        _git(repo, "commit", "-qam", subject)

    change("Note the contract", "itchbench.toml", 'name = "cpp-gateway"', 'name = "cpp-gateway"  # example')
    change("Work 2 us more on every message", "gateway.cpp", APPLY, APPLY + SLOWDOWN)
    change("Tidy", "itchbench.toml", "# example", "# the example")
    return repo


@pytest.fixture(scope="session")
def file_scenario(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("scen") / "file.toml"
    path.write_text(f'name = "file"\ntransport = "sim"\ncapture = "{SEED}"\n')
    return path


GATEWAYS = {"cpp": EXAMPLE, "py": EXAMPLE.parent / "py-gateway", "builtin": paths.repo_root()}


@pytest.fixture(scope="session")
def every_gateway(tmp_path_factory) -> tuple[Path, dict[str, subprocess.CompletedProcess[str]]]:
    """scenarios/gateway.toml run on both examples and the built-in gateway (through its contract), into one
    folder: every input each takes."""
    out = tmp_path_factory.mktemp("every-gateway")
    done = {name: _itchbench("run", paths.repo_root() / "scenarios" / "gateway.toml", "--gateway", repo,
                             "--out", out / name) for name, repo in GATEWAYS.items()}
    return out, done


@needs_root
def test_the_gateway_scenario_runs_it_on_file_and_udp_and_skips_serial(every_gateway):
    out, done = every_gateway
    r = done["cpp"]
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "skipped serial: transport serial needs a gateway that takes serial input" in r.stdout
    assert r.stdout.strip().splitlines()[-1] == ("4 run(s): 4 lossless; 1 configuration(s) not run, the gateway "
                                                 "taking none of their input: serial — ok")  # seed workload, wide fields
    summaries = {s["transport"]: s for s in (rundir.read_json(p) for p in (out / "cpp").glob("*/summary.json"))
                 if s["label"] in ("udp", "file")}
    assert set(summaries) == {"sim", "udp"}
    messages = 7000  # the seed workload (fixtures/manifest.json)
    for s in summaries.values():
        res = s["resources"]
        assert res["messages"] == messages and res["cpu_s"] > 0 and res["wall_s"] > 0
        assert res["cpu_ns_per_message"] == pytest.approx(res["cpu_s"] * 1e9 / messages)
        # Its own peak, not the harness's (a forked Python is ~80 MB): a small C++ process.
        assert res["rss_floor_kib"] <= res["max_rss_kib"] < 40_000
    perf = summaries["sim"]["performance"]
    assert perf["messages_per_s"] == pytest.approx(messages / perf["elapsed_s"])
    assert summaries["sim"]["verdict"]["headline"].startswith("LOSSLESS: 7,000 messages in the capture it reads "
                                                              "itself")
    report = next(p.parent / "report.md" for p in (out / "cpp").glob("*/summary.json")
                  if rundir.read_json(p)["label"] == "file").read_text()
    assert f"| messages a second, start to exit | {perf['messages_per_s']:,.0f} |" in report
    assert "Not applicable: the gateway read the capture itself" in report
    assert "performance" not in summaries["udp"]  # fed live, it is timed wire to wire instead
    w2w = summaries["udp"]["wire_to_wire"]  # every event, but those a set of CLOCK_REALTIME left out (collector.py)
    assert w2w["events"] + w2w["collector"]["events_across_clock_set"] == summaries["udp"]["bbo"]["reference_events"]
    assert "skipped file" in done["py"].stdout and done["py"].returncode == 0
    assert done["builtin"].stdout.strip().splitlines()[-1] == "5 run(s): 5 lossless — ok"


@needs_root
def test_one_document_over_every_gateway_and_input(every_gateway, tmp_path):
    out, _ = every_gateway
    r = _itchbench("doc", out, "--out", tmp_path / "doc")
    assert r.returncode == 0, r.stderr[-3000:]
    text = (tmp_path / "doc" / "report.md").read_text()
    runs = [rundir.read_json(m) for m in out.glob("*/*/manifest.json")]
    assert len(runs) == 12  # cpp: file, udp and both wide; py: udp, serial, udp-wide; built-in: all five
    for m in runs:  # every run is its own configuration, labelled by the gateway and commit it measured
        under = m["gateway_under_test"]
        assert f"| {under['name']} {under['commit'][:12]}" in text, under["name"]
    assert "## Throughput and resources" in text and "CPU ns a message" in text
    assert "| itchbench commit |" in text and "| gateway under test |" in text


@pytest.mark.alone
@needs_root
def test_compare_finds_the_planted_slowdown_on_a_file(planted, file_scenario, tmp_path):
    r = _itchbench("compare", "HEAD~2", "HEAD~1", "--repo", planted, "--gateway", "itchbench.toml",
                   "--scenario", file_scenario, "--repetitions", "7", "--out", tmp_path / "cmp")
    assert r.returncode == 1, r.stdout + r.stderr[-2000:]
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    table = result["metrics"]["file"]
    ins = table["instructions.process"]
    # Exact: 2,000 rounds of a multiply and an add (and the loop's own) on every message, nothing else changed.
    assert ins["words"] == "MORE instructions" and ins["head"] - ins["base"] >= 4000, ins
    assert table["cpu_ns_per_msg"]["verdict"] in ("slower", "inconclusive"), table["cpu_ns_per_msg"]
    assert table["cpu_ns_per_msg"]["head"] > table["cpu_ns_per_msg"]["base"]
    assert table["throughput_msg_s"]["verdict"] in ("slower", "inconclusive"), table["throughput_msg_s"]
    assert table["throughput_msg_s"]["head"] < table["throughput_msg_s"]["base"]
    assert result["headline"].startswith("REGRESSION") and "instructions.process" in result["headline"]
    assert result["outputs"]["file"]["bbo"]["equal"]
    md = (tmp_path / "cmp" / "compare.md").read_text()  # the gateway's commits measured, itchbench's apart
    assert "- base: `HEAD~2`" in md and "- itchbench (the harness, not measured): `" in md
    # Its commits were checked out as shared clones: nothing is registered in the team's repository.
    worktrees = subprocess.run(["git", "-C", str(planted), "worktree", "list"], capture_output=True, text=True).stdout
    assert len(worktrees.splitlines()) == 1, worktrees
    # Each side's runs name the commit of the gateway they measured, not itchbench's.
    for side, rev in (("base", "HEAD~2"), ("head", "HEAD~1")):
        want = subprocess.run(["git", "-C", str(planted), "rev-parse", rev], capture_output=True, text=True).stdout
        run = Path(result["runs"][side]["file"][0])
        under = rundir.read_json(run / "manifest.json")["gateway_under_test"]
        assert under["commit"] == want.strip() and under["name"] == "cpp-gateway" and not under["dirty"]
        assert under["repository"] == str(planted.resolve()) and under["build_log_sha256"]


@needs_root  # beside other tests: three runs a side judge no timing, and instructions are counted
def test_compare_of_a_harmless_commit_counts_the_same_instructions(planted, file_scenario, tmp_path):
    r = _itchbench("compare", "HEAD~3", "HEAD~2", "--repo", planted, "--gateway", "itchbench.toml",
                   "--scenario", file_scenario, "--repetitions", "3", "--out", tmp_path / "cmp")
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    ins = result["metrics"]["file"]["instructions.process"]
    assert ins["verdict"] == "unchanged" and abs(ins["ratio"] - 1) < 1e-3, ins
    # Three runs a side judge no timing; the exact count is judged, so the compare is not unmeasured.
    assert r.returncode == 0 and result["headline"].startswith("NO REGRESSION"), result["headline"]


@needs_root
def test_bisect_by_instructions_names_the_planted_commit(planted, file_scenario, tmp_path):
    r = _itchbench("bisect", "HEAD~3", "HEAD", "--repo", planted, "--gateway", "itchbench.toml", "--metric",
                   "instructions", "--scenario", file_scenario, "--out", tmp_path / "bisect")
    assert r.returncode == 0, r.stderr[-2000:]
    first = r.stdout.splitlines()[0]
    assert first.startswith("first bad commit: ") and first.endswith("Work 2 us more on every message"), r.stdout
    # The compare it suggests runs the same workloads.
    suggestion = next(line for line in r.stdout.splitlines() if "compare it:" in line)
    assert f"--scenario {file_scenario}" in suggestion and "--gateway itchbench.toml" in suggestion


@needs_root
def test_compare_with_nothing_timed_is_not_comparable_unless_bbo_only(planted, file_scenario, tmp_path):
    for extra, want in (((), 2), (("--bbo-only",), 0)):
        r = _itchbench("compare", "HEAD~3", "HEAD~2", "--repo", planted, "--gateway", "itchbench.toml",
                       "--scenario", file_scenario, "--repetitions", "3", "--no-instructions", "--out",
                       tmp_path / f"cmp{want}", *extra)
        headline = r.stdout.strip().splitlines()[-1]
        assert r.returncode == want, headline
        if want == 2:
            assert headline.startswith("NOT COMPARABLE: no speed metric judged on file"), headline
        else:
            assert headline.startswith("NO REGRESSION: BBO output SAME") and "BBO only" in headline, headline


@needs_root
def test_a_gateway_that_names_stocks_by_symbol_is_read_through_the_stock_directory(tmp_path):
    # The same gateway writing each stock's symbol (from the session's R messages) instead of its locate.
    contract = tmp_path / "itchbench.toml"
    contract.write_text((EXAMPLE / "itchbench.toml").read_text().replace("{worktree}", shlex.quote(str(EXAMPLE)))
                        .replace("--bbo {bbo_addr}:{bbo_port}", "--bbo {bbo_addr}:{bbo_port} --stock symbol"))
    scenario = tmp_path / "file.toml"
    scenario.write_text(f'name = "file"\ntransport = "sim"\ncapture = "{SEED}"\n')
    r = _itchbench("run", scenario, "--gateway", contract, "--out", tmp_path / "runs")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    run = next((tmp_path / "runs").glob("*/summary.json")).parent
    lines = (run / "bbo.received").read_text().splitlines()
    assert lines and all(line.split(" ", 1)[1].split(",")[1].isalpha() for line in lines)  # symbols, not numbers
    assert rundir.read_json(run / "summary.json")["reconciliation"]["bbo_check"]["equal"]


def _copy_with(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the example with one edit: old, standing once in gateway.cpp, made new."""
    repo = tmp_path / "gateway"
    repo.mkdir()
    for name in ("gateway.cpp", "itchbench_stamps.h", "Makefile", "itchbench.toml"):
        (repo / name).write_text((EXAMPLE / name).read_text())
    source = (repo / "gateway.cpp").read_text()
    assert source.count(old) == 1
    (repo / "gateway.cpp").write_text(source.replace(old, new))
    return repo


def _failed_run_on(capture: Path, repo: Path, tmp_path: Path) -> dict:
    """The summary of the gateway in repo reading capture itself, a run that must fail (exit 1)."""
    scenario = tmp_path / "file.toml"
    scenario.write_text(f'name = "file"\ntransport = "sim"\ncapture = "{capture}"\n')
    r = _itchbench("run", scenario, "--gateway", repo, "--out", tmp_path / "runs")
    assert r.returncode == 1, r.stdout[-2000:]
    return rundir.read_json(next((tmp_path / "runs").glob("*/summary.json")))


@needs_root
def test_a_crash_while_reading_the_capture_says_how_far_it_got(tmp_path):
    # A copy of the example that aborts on message 200,000 of a 300,000-message session: a crash mid-capture,
    # at the same place every run, never "at the end of the feed".
    repo = _copy_with(tmp_path, APPLY, "        if (seq == 200000) std::abort();\n" + APPLY)
    capture = tmp_path / "day.pcap"
    subprocess.run([str(paths.tool("itch-synth")), "--profile", "nasdaq-day", "--seed", "3", "--messages", "300000",
                    "--out", str(capture)], check=True, capture_output=True)
    s = _failed_run_on(capture, repo, tmp_path)
    headline = s["verdict"]["headline"]
    assert headline.startswith("INCOMPLETE (gateway_crashed)") and "killed by SIGABRT" in headline, headline
    assert "while reading the capture" in headline and "end of the feed" not in headline
    reached = s["progress"]["last_bbo_seq"]
    # What it had flushed before the abort: some of the events before message 200,000, none after.
    assert 0 < reached < 200000 and s["progress"]["messages"] == 300000
    # The synthesised session numbers its messages from 1: those after the last event are 300,000 - reached.
    after = 300000 - reached
    assert s["progress"]["messages_after"] == after
    assert f"its BBO output reached seq {reached:,}, {after:,} of the capture's 300,000 messages after it" in headline


STRICT = 'truncated record\\n", path); return 1; }'  # the example, at a pcap record cut short: an error


@pytest.mark.parametrize("at_a_cut_record", [STRICT, STRICT.replace("return 1", "break")], ids=["fails", "ends quietly"])
def test_a_capture_that_ends_mid_record_is_said_whatever_the_gateway_does(at_a_cut_record, tmp_path):
    # The seed workload cut inside its 1,000th record. The built-in gateway's simulation of it ends early
    # (input_ended_early); a brought gateway reading it is held to no more than that, whether it fails there (the
    # example) or ends quietly with every event before the cut (a copy), which alone would pass as LOSSLESS.
    data = SEED.read_bytes()
    at = 24
    for _ in range(999):
        at += 16 + int.from_bytes(data[at + 8:at + 12], "little")
    capture = tmp_path / "cut.pcap"
    capture.write_bytes(data[:at + 16 + 10])
    s = _failed_run_on(capture, _copy_with(tmp_path, STRICT, at_a_cut_record), tmp_path)
    headline = s["verdict"]["headline"]
    assert headline.startswith("INCOMPLETE (input_ended_early): the capture ends early, as its simulation found: "
                               f"{capture}: record 1000: truncated dump file"), headline
    assert ("the gateway exited with status 1 while reading the capture" if at_a_cut_record == STRICT
            else "the gateway ended by itself, its BBO output reaching seq ") in headline


def test_a_brought_gateways_build_goes_through_ccache(tmp_path, monkeypatch):
    """Two copies of the example built by its contract's make: the second's object is ccache's, and its binary the
    first's, byte for byte; with CCACHE_DISABLE=1 the compiler runs (docs/gateway-contract.md, `build`)."""
    from itchbench.gateways import adapter, compiler_cache, contract

    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")  # this test's cache, counted alone
    c = contract.load(EXAMPLE / "itchbench.toml")

    def build(name: str) -> bytes:
        copy = tmp_path / name
        copy.mkdir()
        for source in ("Makefile", "gateway.cpp", "itchbench_stamps.h"):
            (copy / source).write_bytes((EXAMPLE / source).read_bytes())
        adapter.build(c, copy, commit="WORKTREE", build_dir=tmp_path / f"{name}-build", log=tmp_path / f"{name}.log")
        return (copy / "cpp-gateway").read_bytes()

    def stats() -> dict[str, int]:
        out = subprocess.run(["ccache", "--print-stats"], env={**os.environ, **compiler_cache.environment(tmp_path)},
                             capture_output=True, text=True, check=True).stdout
        counts = dict(line.split("\t") for line in out.splitlines())
        return {k: int(counts[k]) for k in ("direct_cache_hit", "preprocessed_cache_hit", "cache_miss")}

    first = build("first")
    assert stats() == {"direct_cache_hit": 0, "preprocessed_cache_hit": 0, "cache_miss": 1}
    assert "go through ccache" in (tmp_path / "first.log").read_text()
    assert build("second") == first
    assert stats() == {"direct_cache_hit": 1, "preprocessed_cache_hit": 0, "cache_miss": 1}
    monkeypatch.setenv("CCACHE_DISABLE", "1")
    assert build("third") == first
    assert stats() == {"direct_cache_hit": 1, "preprocessed_cache_hit": 0, "cache_miss": 1}


def test_a_copy_that_kept_the_link_to_the_white_box_header_says_what_to_copy(tmp_path):
    # `cp -r` keeps the example's link to gateway/log/whitebox/itchbench_stamps.h, which then leads nowhere: make
    # says which file to copy, rather than "no rule to make target".
    copy = tmp_path / "gateway"
    subprocess.run(["cp", "-r", str(EXAMPLE), str(copy)], check=True)
    for built in ("gateway.o", "cpp-gateway"):
        (copy / built).unlink(missing_ok=True)
    assert (copy / "itchbench_stamps.h").is_symlink() and not (copy / "itchbench_stamps.h").exists()
    made = subprocess.run(["make", "-C", str(copy)], capture_output=True, text=True)
    assert made.returncode != 0
    assert "itchbench_stamps.h is missing: copy itchbench's gateway/log/whitebox/itchbench_stamps.h here" in made.stderr
    # Copied with -L, it builds.
    whole = tmp_path / "whole"
    subprocess.run(["cp", "-rL", str(EXAMPLE), str(whole)], check=True)
    for built in ("gateway.o", "cpp-gateway"):
        (whole / built).unlink(missing_ok=True)
    assert subprocess.run(["make", "-C", str(whole)], capture_output=True).returncode == 0
