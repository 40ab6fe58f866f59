"""itchbench compare end to end, on planted changes in a scratch clone that
the test makes: a spin loop in the per-message path, a change that drops
every 1000th message, a build-flag change — and a commit against itself."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from itchbench import paths
from itchbench.captures import fixtures
from itchbench.cli import main as itchbench_main
from itchbench.compare import bisect, instructions
from itchbench.gateways import revisions

SEED_FIXTURE = next(fx for fx in fixtures.load_manifest() if fx.name == "seed-workload").path
GATEWAY_HPP = "gateway/pipeline/gateway.hpp"
BOOK_TEST = "gateway/tests/order_book_test.cpp"
ON_MESSAGE = "  void on_message(uint64_t seq, const uint8_t* msg, size_t len, const logfmt::Arrival& arrival) {\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def plant(repo: Path, branch: str, path: str, old: str, new: str) -> str:
    git(repo, "checkout", "-q", "-b", branch, "base")
    f = repo / path
    text = f.read_text()
    assert old in text, f"{path} no longer has the line to plant into"
    f.write_text(text.replace(old, new, 1))
    git(repo, "commit", "-q", "-am", f"planted: {branch}", "-m", f"A body that says why {branch} was planted,\n"
        "over two lines.")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="session")
def scratch(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("scratch") / "repo"
    subprocess.run(["git", "clone", "-q", str(paths.repo_root()), str(repo)], check=True)
    git(repo, "config", "user.email", "tests@itchbench")
    git(repo, "config", "user.name", "tests")
    git(repo, "branch", "base")
    plant(repo, "spin", GATEWAY_HPP, ON_MESSAGE, ON_MESSAGE + "    for (volatile int spin = 0; spin < 200; ++spin) {\n    }\n")
    plant(repo, "drop", GATEWAY_HPP, ON_MESSAGE, ON_MESSAGE + "    if (seq % 1000 == 0) return;\n")
    plant(repo, "flags", "CMakeLists.txt", "set(ITCHBENCH_EXTRA_FLAGS -Wall -Wextra)",
          "set(ITCHBENCH_EXTRA_FLAGS -Wall -Wextra -fno-omit-frame-pointer)")
    plant(repo, "test-only", BOOK_TEST, "#include", "// A test's comment: a change beside the gateway.\n#include")
    return repo


@pytest.fixture(scope="session")
def workload(tmp_path_factory) -> Path:
    scen = tmp_path_factory.mktemp("scen") / "seed.toml"
    scen.write_text(f'name = "seed"\ntransport = "sim"\ncapture = "{SEED_FIXTURE}"\n')
    return scen


def compare(scratch: Path, workload: Path, out: Path, base: str, head: str, *extra: str) -> tuple[int, dict]:
    rc = itchbench_main(["compare", base, head, "--repo", str(scratch), "--scenario", str(workload),
                         "--repetitions", "3", "--out", str(out), *extra])
    return rc, json.loads((out / "compare.json").read_text())


def test_a_commit_against_itself(scratch, workload, tmp_path):
    rc, result = compare(scratch, workload, tmp_path, "base", "base")
    assert rc == 0 and result["headline"].startswith("NO REGRESSION"), result["headline"]
    table = result["metrics"]["seed"]
    for stage in ("message_path", "capture_read"):
        assert table[f"instructions.{stage}"]["ratio"] == 1.0  # exact: the same to the instruction
    # The book's operations are inlined into the message path: no function counts them apart, and neither
    # side's figure is presented as the book's (its out-of-line replace would be only part of it).
    for stage in ("book", "outside_book"):
        assert table[f"instructions.{stage}"]["verdict"] == "not comparable"
        assert "inlines it into the message path" in table[f"instructions.{stage}"]["reason"]
    assert result["outputs"]["seed"]["bbo"]["equal"]
    assert (tmp_path / "compare.md").is_file() and (tmp_path / "percentiles.png").is_file()
    # Every run names the executable it ran, by its digest: the revision's build.
    binary = revisions.build(scratch, revisions.resolve(scratch, "base"), lambda _: None)
    ran = {json.loads(m.read_text())["gateway_under_test"]["executable_sha256"]
           for m in (tmp_path / "runs").glob("*/seed/*/manifest.json")}
    assert ran == {hashlib.sha256(binary.read_bytes()).hexdigest()}


def test_a_head_that_changed_only_a_test_beside_the_gateway_builds_the_same_executable(scratch):
    # gateway/ is the built-in gateway's sources, so such a head is a build of its own by its sources; the binary its
    # runs execute is the base's byte for byte, which compare takes as one build (test_compare_statistics.py), its
    # timings the machine's. A change to the message path is another executable.
    def executable(rev: str) -> str:
        return hashlib.sha256(revisions.build(scratch, revisions.resolve(scratch, rev), lambda _: None)
                              .read_bytes()).hexdigest()
    assert revisions.measured_sources(scratch, revisions.resolve(scratch, "test-only")) != \
        revisions.measured_sources(scratch, revisions.resolve(scratch, "base"))
    assert executable("test-only") == executable("base") != executable("spin")


def test_a_spin_loop_in_the_message_path_is_a_regression(scratch, workload, tmp_path):
    rc, result = compare(scratch, workload, tmp_path, "base", "spin")
    assert rc == 1 and result["headline"].startswith("REGRESSION"), result["headline"]
    path = result["metrics"]["seed"]["instructions.message_path"]
    assert path["verdict"] == "slower" and path["head"] - path["base"] > 200  # the loop's 200 rounds and more
    assert path["words"] == "MORE instructions"
    assert result["metrics"]["seed"]["instructions.book"]["words"] == "NOT COMPARABLE"  # inlined (above)
    assert result["outputs"]["seed"]["bbo"]["equal"] and result["outputs"]["seed"]["bbo"]["words"] == "SAME"
    assert "MORE instructions: seed: instructions.message_path" in result["headline"], result["headline"]
    md = (tmp_path / "compare.md").read_text()
    assert "> A body that says why spin was planted,\n> over two lines." in md  # the head commit's body, quoted


def _bbo_rows(run_dir: str, capsys) -> list[list[str]]:
    capsys.readouterr()
    assert itchbench_main(["dump", "bbo", run_dir]) == 0
    return list(csv.reader(io.StringIO(capsys.readouterr().out)))[1:]


def test_dropping_every_1000th_message_shows_the_first_differing_event(scratch, workload, tmp_path, capsys):
    rc, result = compare(scratch, workload, tmp_path, "base", "drop", "--no-instructions")
    assert rc == 1 and "BBO OUTPUT DIFFERS" in result["headline"]
    # Its own runs do not balance (messages framed and never decoded): said, whatever its figures show.
    assert "| HEAD RUNS DID NOT PASS on seed: NOT BALANCED: " in result["headline"]
    assert list(result["runs_not_passing"]) == ["head"]
    bbo = result["outputs"]["seed"]["bbo"]
    # Independently, from the two runs' dumps: events keyed by (seq, stock); a key only in base is missing, only
    # in head extra, in both with other values wrong; the first difference is the smallest seq among them.
    # (The dump: seq, symbol, bid_px, bid_qty, ask_px, ask_qty, stale.)
    a = {(int(r[0]), r[1]): r[2:7] for r in _bbo_rows(result["runs"]["base"]["seed"][0], capsys)}
    b = {(int(r[0]), r[1]): r[2:7] for r in _bbo_rows(result["runs"]["head"]["seed"][0], capsys)}
    missing, extra = a.keys() - b.keys(), b.keys() - a.keys()
    wrong = {k for k in a.keys() & b.keys() if a[k] != b[k]}
    assert (bbo["missing"], bbo["extra"], bbo["wrong"]) == (len(missing), len(extra), len(wrong))
    assert bbo["first_difference"]["seq"] == min(k[0] for k in missing | extra | wrong)
    assert bbo["first_difference"]["seq"] >= 1000  # nothing differs before the first dropped message
    counters = result["outputs"]["seed"]["counters"]
    assert counters["decode.messages"] == [7000, 7000 - 7]  # seq 1000, 2000, … 7000 never decoded


def test_a_sharded_compare_judges_its_merged_shards_as_the_whole(scratch, workload, tmp_path, capsys):
    """Three repetitions over two shards (each both sides), judged together: the same output verdict and first
    differing event as the unsharded compare of the same revisions."""
    _, whole = compare(scratch, workload, tmp_path / "whole", "base", "drop", "--no-instructions")
    for k in (0, 1):
        rc = itchbench_main(["compare", "base", "drop", "--repo", str(scratch), "--scenario", str(workload),
                             "--repetitions", "3", "--out", str(tmp_path / f"shard{k}"), "--shard", f"{k}/2"])
        assert rc == 0
    records = [json.loads((tmp_path / f"shard{k}" / f"shard-{k}-of-2.json").read_text()) for k in (0, 1)]
    assert sorted(len(r["runs"]) for r in records) == [2, 4]  # 3 repetitions x 2 sides, split 1 / 2
    rc, merged = compare(scratch, workload, tmp_path / "merged", "base", "drop", "--merge",
                         str(tmp_path / "shard0"), str(tmp_path / "shard1"))
    assert rc == 1 and merged["headline"] == whole["headline"]
    assert merged["outputs"]["seed"]["bbo"] == whole["outputs"]["seed"]["bbo"]
    assert len(merged["runs"]["base"]["seed"]) == len(merged["runs"]["head"]["seed"]) == 3
    capsys.readouterr()
    # Shards of another pair of revisions are not these.
    rc = itchbench_main(["compare", "base", "spin", "--repo", str(scratch), "--out", str(tmp_path / "wrong"),
                         "--merge", str(tmp_path / "shard0"), str(tmp_path / "shard1")])
    assert rc == 2 and "the shards compared head" in capsys.readouterr().err


def test_a_build_flag_change_is_not_comparable(scratch, workload, tmp_path):
    rc, result = compare(scratch, workload, tmp_path, "base", "flags", "--no-instructions")
    assert rc == 2 and result["headline"].startswith("NOT COMPARABLE")
    # Said from both revisions' configure, before either is built: the flag the commit adds is named.
    (problem,) = [p for p in result["not_comparable"] if "cxx_flags" in p]
    assert "-fno-omit-frame-pointer" in problem and "nothing was built or run" in problem
    assert not list(tmp_path.rglob("manifest.json"))


def test_an_unknown_revision_is_not_comparable(scratch, workload, tmp_path, capsys):
    rc, result = compare(scratch, workload, tmp_path, "base", "no-such-branch", "--no-instructions")
    assert rc == 2 and "no-such-branch" in result["headline"]


@pytest.fixture(scope="session")
def history(scratch) -> list[str]:
    """Ten commits after base: the 4th changes the book (an execution of all
    of an order's shares leaves it at zero instead of removing it: another
    BBO stream, and no more instructions), the 7th adds a spin loop; the rest
    touch only the documentation."""
    git(scratch, "checkout", "-q", "-b", "history", "base")
    commits = []
    for i in range(1, 11):
        if i == 4:
            f = scratch / "gateway/book/order_book_ops.hpp"
            old = "if (shares >= o->shares) {"
            assert old in f.read_text()
            f.write_text(f.read_text().replace(old, "if (shares > o->shares) {", 1))
        elif i == 7:
            f = scratch / GATEWAY_HPP
            f.write_text(f.read_text().replace(ON_MESSAGE, ON_MESSAGE + "    for (volatile int spin = 0; spin < 200; "
                                               "++spin) {\n    }\n", 1))
        else:
            with open(scratch / "README.md", "a") as readme:
                readme.write(f"\nhistory line {i}\n")
        git(scratch, "commit", "-q", "-am", f"history step {i}")
        commits.append(git(scratch, "rev-parse", "HEAD"))
    return commits


@pytest.mark.parametrize("metric, planted, levels", [("bbo", 4, 0), ("bbo", 4, 5), ("instructions", 7, 0)])
def test_bisect_finds_the_planted_commit(scratch, history, tmp_path, capsys, metric, planted, levels):
    day = next(fx for fx in fixtures.load_manifest() if fx.name == "nasdaq-day-sample").path  # has executions
    scen = tmp_path / "day.toml"
    scen.write_text(f'name = "day"\ntransport = "sim"\ncapture = "{day}"\nlevels = {levels}\n')
    rc = itchbench_main(["bisect", "base", "history", "--metric", metric, "--repo", str(scratch),
                         "--scenario", str(scen)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"first bad commit: {history[planted - 1]} history step {planted}" in out
    if levels:  # the depth stream judged beside the BBO: its digest is part of each commit's value
        # The planted book keeps a level whose last shares went: the depth log its gateway writes does not hold
        # together, and the commit is bad for it, the first record a reader refuses named.
        assert "BBO and depth digest sha256:" in out and out.count(" depth sha256:") == 1
        assert re.search(r"depth log refused: \S+depth\.dep: depth record \d+ ", out), out


def test_a_refused_depth_log_is_bad_in_a_commit_and_stops_bisect_in_good(scratch, history):
    """Measured values as the shards hand them over (no build): a commit whose depth log a reader refused is bad,
    however its BBO digest reads; GOOD's own refused leaves nothing to judge against."""
    good = revisions.resolve(scratch, "base").commit
    same, refused = "sha256:aa depth sha256:bb", f"sha256:aa {bisect.DEPTH_REFUSED}depth.dep: depth record 7 ..."
    measured = {good: same, **{c: (refused if i >= 5 else same) for i, c in enumerate(history)}}
    _, first, _ = bisect.first_bad(scratch, "base", "history", "bbo", measured)
    assert first.revision.commit == history[5] and first.bad
    with pytest.raises(bisect.BisectError, match=r"base is not good: depth log refused: depth\.dep: depth record 7"):
        bisect.first_bad(scratch, "base", "history", "bbo", {**measured, good: refused})


def test_a_first_bad_commit_that_changed_no_source_is_never_named(scratch, history):
    """Measured values as the shards hand them over: the 6th step (documentation only) first measured bad, its
    parent (the 5th, the same build) good. Judged by commit alone that names an innocent commit; with the commits'
    sources known, no commit is named, and why is said. The 4th (it changed the book) bad is named."""
    good = revisions.resolve(scratch, "base").commit
    sources = lambda commit: revisions.measured_sources(scratch, revisions.Revision(commit, commit, "", ""))  # noqa
    assert sources(history[5]) == sources(history[4]) == sources(history[3]) != sources(history[2])
    noisy = {good: 100.0, **{c: (200.0 if i >= 5 else 100.0) for i, c in enumerate(history)}}
    _, first, _ = bisect.first_bad(scratch, "base", "history", "latency", noisy, 0.5)
    assert first.revision.commit == history[5]
    with pytest.raises(bisect.BisectError, match=r"the first bad commit, \S+ 'history step 6', changed none of the "
                       r"gateway's sources since \S+ \(both src-[0-9a-f]{16}\): the same build measured good and bad: "
                       r"the step is the machine's, not the code's"):
        bisect.first_bad(scratch, "base", "history", "latency", noisy, 0.5, sources)
    stepped = {good: 100.0, **{c: (200.0 if i >= 3 else 100.0) for i, c in enumerate(history)}}
    _, first, _ = bisect.first_bad(scratch, "base", "history", "latency", stepped, 0.5, sources)
    assert first.revision.commit == history[3]


def _measured_by_hand(scratch: Path, history: list[str], bad_from: int, unbuilt: set[int]):
    """A measure of the history's commits (0-based) as the search sees it: a commit in `unbuilt` fails to build,
    one from `bad_from` on has another digest. Stands in for builds, to walk the search through every case."""
    index = {c: i for i, c in enumerate(history)}
    tried: list[int] = []

    def measure(rev: revisions.Revision) -> str:
        i = index.get(rev.commit, -1)  # -1: GOOD
        tried.append(i)
        if i in unbuilt:
            raise revisions.BuildFailed(f"{rev.label} does not build (cmake --build failed):\nerror: planted")
        return "sha256:bad" if i >= bad_from else "sha256:good"
    return measure, tried


@pytest.mark.parametrize("bad_from, unbuilt, named, candidates", [
    # The commit before the first bad one does not build: either could be to blame, and both are named, in order.
    (3, {2}, None, [2, 3]),
    # The middle one does not build: its neighbour is measured instead, and the first bad is still told exactly.
    (3, {4, 5}, 3, None),
    # Every commit before the first bad one fails to build: GOOD measured good, so any of them may be to blame.
    (3, {0, 1, 2}, None, [0, 1, 2, 3]),
    # Commits after the first bad one that do not build change nothing.
    (1, {6, 7, 8}, 1, None),
])
def test_bisect_steps_over_commits_that_do_not_build(scratch, history, bad_from, unbuilt, named, candidates):
    """Expected by hand: the first bad commit is the first one after the last commit measured good, if every
    commit between them was measured; one that did not build may be the bad one, so it stays a candidate."""
    measure, tried = _measured_by_hand(scratch, history, bad_from, unbuilt)
    by_merge = {revisions.resolve(scratch, "base").commit: measure(revisions.resolve(scratch, "base"))}
    by_merge.update({c: bisect.measured_or_untestable(measure, revisions.resolve(scratch, c)) for c in history})
    for find in (lambda: bisect.bisect(scratch, "base", "history", "bbo", Path(), lambda _: None, measure=measure),
                 lambda: bisect.first_bad(scratch, "base", "history", "bbo", by_merge)):
        if named is not None:
            good, first, steps = find()
            assert first.revision.commit == history[named] and first.bad and not first.untestable
            assert good.value == "sha256:good"
        else:
            with pytest.raises(bisect.NotNarrowed) as caught:
                find()
            said = caught.value.candidates
            assert [s.revision.commit for s in said] == [history[i] for i in candidates]
            assert all(s.untestable == "does not build (cmake --build failed)" for s in said[:-1]) and said[-1].bad
    assert by_merge[history[min(unbuilt)]] == {bisect.UNTESTABLE: "does not build (cmake --build failed)"}


def test_bisect_needs_good_and_bad_to_build(scratch, history):
    for unbuilt, message in (({-1}, "does not build"), ({9}, "does not build")):
        measure, _ = _measured_by_hand(scratch, history, 3, unbuilt)
        with pytest.raises(revisions.BuildFailed, match=message):
            bisect.bisect(scratch, "base", "history", "bbo", Path(), lambda _: None, measure=measure)
    measured = {c: "sha256:bad" for c in history}
    for unbuilt, message in ((revisions.resolve(scratch, "base").commit, r"base cannot be the good commit: does not"),
                             (history[9], r"history cannot be the bad commit: does not build")):
        values = {revisions.resolve(scratch, "base").commit: "sha256:good", **measured,
                  unbuilt: {bisect.UNTESTABLE: "does not build (cmake --build failed)"}}
        with pytest.raises(bisect.BisectError, match=message):
            bisect.first_bad(scratch, "base", "history", "bbo", values)


def test_bisect_of_a_range_with_no_commit_in_it_says_why(scratch, history):
    # GOOD and BAD the same commit was said as "does not descend from" itself.
    with pytest.raises(bisect.BisectError, match=r"base and base are one commit \([0-9a-f]{12}\): nothing to bisect"):
        bisect.span(scratch, "base", "base")
    with pytest.raises(bisect.BisectError, match=r"base does not descend from history: nothing to bisect"):
        bisect.span(scratch, "history", "base")


def test_bisect_over_a_commit_that_cannot_run(scratch, history):
    """Commit 4 of ten builds and crashes, the first bad is 6. Worked out by hand from the search's order (middles
    4; then 3 when 4 is stepped over): stop ends at 4; skip names 6 as if 4 were not there; bad names 4, the crash
    being the change looked for. A sharded bisect's merge of the same values agrees; GOOD must run whatever."""
    index = {c: i for i, c in enumerate(history)}

    def measure(rev: revisions.Revision) -> str:
        i = index.get(rev.commit, -1)
        if i in crashed:
            raise bisect.CouldNotRun(rev.label, "INCOMPLETE (gateway_crashed): killed by SIGSEGV")
        return "sha256:bad" if i >= 6 else "sha256:good"

    crashed = {4}
    find = lambda policy: bisect.bisect(scratch, "base", "history", "bbo", Path(), lambda _: None,  # noqa: E731
                                        measure=measure, cannot_run=policy)
    with pytest.raises(bisect.CouldNotRun, match=r"the gateway could not run: INCOMPLETE \(gateway_crashed\)"):
        find("stop")
    for policy, named in (("skip", 6), ("bad", 4)):
        base = revisions.resolve(scratch, "base")
        merged = {base.commit: measure(base), **{c: bisect.measured_or_untestable(
            measure, revisions.resolve(scratch, c), policy) for c in history}}
        for good, first, steps in (find(policy), bisect.first_bad(scratch, "base", "history", "bbo", merged)):
            assert first.revision.commit == history[named] and first.bad, policy
            assert good.value == "sha256:good"
        assert merged[history[4]] == ({bisect.UNTESTABLE: "could not run (INCOMPLETE (gateway_crashed): killed by "
                                                          "SIGSEGV)"} if policy == "skip" else
                                      {bisect.COULD_NOT_RUN: "INCOMPLETE (gateway_crashed): killed by SIGSEGV"})
    crashed = {-1}
    with pytest.raises(bisect.CouldNotRun):
        find("bad")


@pytest.mark.parametrize("argv, said", [
    # nan compares false with every ratio: a gate at nan % could never fail (it ran to NO REGRESSION).
    (["compare", "HEAD", "HEAD", "--threshold", "nan"], "argument --threshold: 'nan': a percentage above 0"),
    # Below 0 the band of no change is empty: every timing of an unchanged build beyond it.
    (["compare", "HEAD", "HEAD", "--threshold", "-5"], "argument --threshold: '-5': a percentage above 0"),
    (["bisect", "HEAD~1", "HEAD", "--runs", "0"], "argument --runs: '0': 1 or more"),
    (["bisect", "HEAD~1", "HEAD", "--threshold", "inf"], "argument --threshold: 'inf': a percentage above 0"),
    # Below --repetitions it was taken as "none added", the whole compare run on a figure the user mistyped.
    (["compare", "HEAD", "HEAD", "--repetitions", "5", "--max-repetitions", "4"],
     "--max-repetitions 4 is below --repetitions 5"),
    # A contract that is not there: said, exit 2 (it ended in a traceback).
    (["bisect", "HEAD~1", "HEAD", "--metric", "bbo", "--gateway", "no-such/itchbench.toml"],
     "itchbench: gateway contract not found: "),
])
def test_a_compare_or_bisect_given_what_cannot_be_judged_is_refused(argv, said, capsys):
    try:
        status = itchbench_main([*argv, "--repo", str(paths.repo_root())])
    except SystemExit as e:  # argparse's refusal
        status = e.code
    err = capsys.readouterr().err
    assert status == 2 and said in err and "Traceback" not in err, err


@pytest.mark.parametrize("metric, said", [("instructions", "callgrind run failed"), ("bbo", "itch-gateway")])
def test_a_built_in_gateway_that_crashes_could_not_run(tmp_path, monkeypatch, metric, said):
    """A commit's gateway that builds and dies of SIGSEGV on the capture, measured as bisect measures the built-in
    gateway (by instructions under callgrind, by its BBO in simulation): CouldNotRun, which --cannot-run decides
    on, not another error (under callgrind it ended the command with a traceback)."""
    crashing = tmp_path / "itch-gateway"
    crashing.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crashing.chmod(0o755)
    monkeypatch.setattr(revisions, "build", lambda repo, rev, say: crashing)
    capture = next(fx for fx in fixtures.load_manifest() if fx.name == "seed-workload").path
    rev = revisions.Revision("crash", "0" * 40, "", "Crash")
    with pytest.raises(bisect.CouldNotRun, match=rf"the gateway could not run: .*{said}") as caught:
        bisect.default_measure(tmp_path, metric, capture, lambda _: None)(rev)
    assert bisect.measured_or_untestable(lambda _: (_ for _ in ()).throw(caught.value), rev, "skip") == {
        bisect.UNTESTABLE: f"could not run ({caught.value.reason})"}


def test_bisect_over_a_commit_that_does_not_build(scratch, tmp_path, capsys):
    """Real builds: u3 breaks the build (an #error in the message path's header), u4 repairs it, u5 keeps an order
    all of whose shares executed (another BBO stream). base..u6 steps over u3 and names u5; base..u4x, where the
    repair and the bug are one commit, cannot tell u3 from it, and says both (exit 1)."""
    git(scratch, "checkout", "-q", "-b", "unbuildable", "base")
    header, book = scratch / GATEWAY_HPP, scratch / "gateway/book/order_book_ops.hpp"
    clean = header.read_text()

    def commit(subject: str) -> str:
        git(scratch, "commit", "-q", "-am", subject)
        return git(scratch, "rev-parse", "HEAD")
    readme = scratch / "README.md"
    u = {}
    for i in (1, 2):
        readme.write_text(readme.read_text() + f"\nunbuildable line {i}\n")
        u[i] = commit(f"unbuildable step {i}")
    header.write_text("#error planted: this commit does not build\n" + clean)
    u[3] = commit("unbuildable step 3")
    header.write_text(clean)
    u[4] = commit("unbuildable step 4")
    book.write_text(book.read_text().replace("if (shares >= o->shares) {", "if (shares > o->shares) {", 1))
    u[5] = commit("unbuildable step 5")
    readme.write_text(readme.read_text() + "\nunbuildable line 6\n")
    u[6] = commit("unbuildable step 6")
    git(scratch, "checkout", "-q", "-b", "unbuildable-joined", u[3])
    header.write_text(clean)
    book.write_text(book.read_text().replace("if (shares >= o->shares) {", "if (shares > o->shares) {", 1))
    joined = commit("unbuildable step 4x")
    git(scratch, "checkout", "-q", "base")

    day = next(fx for fx in fixtures.load_manifest() if fx.name == "nasdaq-day-sample").path  # has executions
    scen = tmp_path / "day.toml"
    scen.write_text(f'name = "day"\ntransport = "sim"\ncapture = "{day}"\n')
    common = ["--metric", "bbo", "--repo", str(scratch), "--scenario", str(scen)]
    capsys.readouterr()
    assert itchbench_main(["bisect", "base", u[6], *common]) == 0
    out, err = capsys.readouterr()
    assert f"first bad commit: {u[5]} unbuildable step 5" in out, out + err
    assert "5 commit(s) measured, 1 of them not building (stepped over)" in out
    assert re.search(r"'unbuildable step 3': does not build \(cmake --build failed\) -> skipped", err), err

    assert itchbench_main(["bisect", "base", joined, *common]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "first bad commit: one of 2, the commits before the bad one not building", out
    assert lines[1] == f"  {u[3]} unbuildable step 3: does not build (cmake --build failed)"
    assert lines[2].startswith(f"  {joined} unbuildable step 4x: bad (BBO digest sha256:")


def test_a_sharded_bisect_finds_the_planted_commit_from_every_shard(scratch, history, tmp_path, capsys):
    day = next(fx for fx in fixtures.load_manifest() if fx.name == "nasdaq-day-sample").path
    scen = tmp_path / "day.toml"
    scen.write_text(f'name = "day"\ntransport = "sim"\ncapture = "{day}"\n')
    common = ["bisect", "base", "history", "--metric", "bbo", "--repo", str(scratch), "--scenario", str(scen)]
    for k in range(3):
        assert itchbench_main([*common, "--shard", f"{k}/3", "--out", str(tmp_path / f"s{k}")]) == 0
    measured = [json.loads((tmp_path / f"s{k}" / f"shard-{k}-of-3.json").read_text())["measured"] for k in range(3)]
    assert sorted(len(m) for m in measured) == [3, 4, 4]  # base and ten commits, round the shards
    capsys.readouterr()
    assert itchbench_main([*common, "--merge", *(str(tmp_path / f"s{k}") for k in range(3))]) == 0
    assert f"first bad commit: {history[3]} history step 4" in capsys.readouterr().out
    assert itchbench_main([*common, "--merge", str(tmp_path / "s0"), str(tmp_path / "s2")]) == 2
    assert "shard 1/3 missing" in capsys.readouterr().err


def test_a_journey_documents_each_step_and_the_cumulative_impact(scratch, workload, tmp_path):
    out = tmp_path / "journey"
    # base..spin is base, then the one commit above it (the spin loop): the same two builds as above, cached.
    rc = itchbench_main(["doc", "--journey", "base..spin", "--repo", str(scratch), "--scenario", str(workload),
                         "--repetitions", "3", "--out", str(out), "--title", "Spin journey"])
    assert rc == 0
    text = (out / "report.md").read_text()
    data = json.loads((out / "journey.json").read_text())
    assert [r["subject"] for r in data["revisions"]][1] == "planted: spin"
    assert text.startswith("# Spin journey\n") and "## Step 1: planted: spin" in text and "## Cumulative impact" in text
    # The title is the commit's subject alone; its body follows as a quote.
    assert data["revisions"][1]["body"] == "A body that says why spin was planted,\nover two lines."
    assert "## Step 1: planted: spin\n\n> A body that says why spin was planted,\n> over two lines.\n" in text
    step = data["steps"][0]["workloads"][0]
    path = next(r for r in step["rows"] if r["metric"] == "instructions.message_path")
    # Instructions are not time: more of them is MORE instructions, never SLOWER.
    assert path["mark"] == "MORE instructions" and path["head"] - path["base"] > 200
    assert next(r for r in step["rows"] if r["metric"] == "instructions.book")["mark"] == "NOT COMPARABLE"
    assert step["bbo"]["equal"]
    row = next(line for line in text.splitlines() if line.startswith("| instructions.message_path |"))
    assert row.endswith("| MORE instructions |") and f"{path['base']:,.1f}" in row
    assert (out / data["cumulative"]["seed"]).stat().st_size > 5000
    assert (out / "report.html").read_text().count("data:image/png;base64,") == 1  # the cumulative figure


def test_a_stage_a_revision_inlines_is_not_counted_from_what_is_left_of_it():
    # Inclusive counts as callgrind gives them, made up: the message path 1,000, the book's functions 300 (say,
    # only replace, left out of line), decoding's function 500, the capture read 50.
    counts = {"message_path": 1000, "book": 300, "decode_and_apply": 500, "capture_read": 50}
    # Nothing inlined: every stage, the derived ones by the docstring's differences (1,000 - 300, 500 - 300, ...).
    assert instructions._stages(counts) == {"message_path": 1000, "book": 300, "capture_read": 50,
                                            "outside_book": 700, "decode": 200, "bbo_and_logs": 500}
    # The book inlined: its 300 are not the book's, so neither it nor anything derived from it is given.
    assert instructions._stages(counts, {"book"}) == {"message_path": 1000, "capture_read": 50}
    assert instructions.uncountable({"book"}) == ["book", "outside_book", "decode"]
    assert instructions.uncountable({"decode", "book"}) == ["book", "outside_book", "decode", "bbo_and_logs"]
    assert instructions.uncountable(set()) == []


def test_revisions_outside_a_repository_are_refused_up_front(tmp_path, capsys):
    """From a folder outside any repository, with no --repo: compare wrote a compare.md saying NOT COMPARABLE in
    git's words, which name no folder (`fatal: not a git repository (or any of the parent directories)`), and
    bisect ended on them too."""
    out = tmp_path / "compare"
    for argv, said in ((["compare", "HEAD~1", "HEAD", "--repo", str(tmp_path), "--out", str(out)], "compare: "),
                       (["bisect", "HEAD~1", "HEAD", "--repo", str(tmp_path)], "cannot bisect: ")):
        assert itchbench_main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"itchbench: {said}{tmp_path} is not in a git repository: run from the gateway's repository, or " \
               "name it with --repo" in err, err
    assert not out.exists()


def test_an_identity_a_run_did_not_record_is_said_unknown_not_different(tmp_path):
    # A run whose gateway did not say how it was built recorded no build type: "differs ('Release' vs None)" said
    # the builds were not the same, which nothing had shown.
    from itchbench.compare import session

    def side(name: str, build: dict) -> session.Side:
        run = tmp_path / name
        run.mkdir()
        (run / "manifest.json").write_text(json.dumps({"scenario_hash": "s", "capture_sha256": "c", "environment": {
            "cpu_model": "m", "kernel": "k", "build": build}}))
        return session.Side(name, name, runs={"udp": [run]})

    release = {"build_type": "Release", "cxx_flags": "-O3"}
    assert session.identity_differences(side("base", release), side("head", {"cxx_flags": "-O3"})) == [
        "udp: build_type not recorded by head's run (the other: 'Release'), so not known to be the same"]
    assert session.identity_differences(side("b2", {**release, "cxx_flags": "-O2"}), side("h2", release)) == [
        "udp: cxx_flags differs ('-O2' vs '-O3')"]


def test_runs_of_one_session_kept_in_two_folders_are_compared_and_a_changed_key_is_named(tmp_path, capsys):
    """Two run directories of the same capture, one read from a copy in another folder (another clone, another CI
    workspace): compare said NOT COMPARABLE, `scenario_hash differs ('sha256:…' vs 'sha256:…')`, naming neither the
    folder nor anything else. The capture's content is what must be equal; a key that changes the run is named."""
    fixture = paths.repo_root() / "fixtures" / "seed-workload.pcap"
    copy = tmp_path / "elsewhere" / fixture.name
    copy.parent.mkdir()
    copy.write_bytes(fixture.read_bytes())
    runs = {}
    for name, capture, levels in (("here", fixture, "5"), ("copy", copy, "5"), ("deeper", copy, "10")):
        assert itchbench_main(["sim", str(capture), "--levels", levels, "--out", str(tmp_path / name)]) == 0
        runs[name] = str(tmp_path / name)
    capsys.readouterr()
    assert itchbench_main(["compare", runs["here"], runs["copy"], "--bbo-only", "--out", str(tmp_path / "c1")]) == 0
    result = json.loads((tmp_path / "c1" / "compare.json").read_text())
    assert not result["headline"].startswith("NOT COMPARABLE"), result["headline"]
    assert result["outputs"]["sim"]["depth"]["equal"] and result["outputs"]["sim"]["bbo"]["equal"], result["outputs"]
    assert itchbench_main(["compare", runs["here"], runs["deeper"], "--bbo-only", "--out", str(tmp_path / "c2")]) == 2
    result = json.loads((tmp_path / "c2" / "compare.json").read_text())
    assert result["headline"] == "NOT COMPARABLE: sim: the scenario differs (levels 5 vs 10)"
    # Sharding splits the runs still to make: run directories have none. It said "needs two revisions that build: "
    # and nothing after, and left an empty --out.
    capsys.readouterr()
    assert itchbench_main(["compare", runs["here"], runs["copy"], "--shard", "0/2", "--out", str(tmp_path / "c3")]) == 2
    assert f"{runs['here']} and {runs['copy']} are run directories, whose runs are made: compare them without " \
           "--shard" in capsys.readouterr().err
    assert not (tmp_path / "c3").exists()


def test_a_run_on_both_sides_is_refused_not_judged_against_itself(tmp_path, capsys):
    """The same runs given as base and head (a folder twice, a run and a folder holding it, or a run and a copy of
    it) were judged against themselves: NO REGRESSION, exit 0, where no second build had been measured."""
    run, copy = tmp_path / "runs" / "one", tmp_path / "copied" / "one"
    assert itchbench_main(["sim", str(SEED_FIXTURE), "--out", str(run)]) == 0
    shutil.copytree(run, copy)
    run_id = json.loads((run / "manifest.json").read_text())["run_id"]
    for base, head, where in ((run, run, f"{run}"), (run.parent, run, f"{run}"), (run, copy, f"{run} and {copy}")):
        capsys.readouterr()
        out = tmp_path / f"compare-{base.name}"
        assert itchbench_main(["compare", str(base), str(head), "--bbo-only", "--out", str(out)]) == 2
        assert f"not comparable: 1 run is on both sides (the first: {run_id}, {where})" in capsys.readouterr().err
        assert not out.exists()
    # Nor is a run and its copy on one side two repetitions: it is one run there (3 a side are needed to show the
    # speed metrics a compare judges, and none is).
    other = tmp_path / "other" / "one"
    assert itchbench_main(["sim", str(SEED_FIXTURE), "--out", str(other)]) == 0
    shutil.copytree(run, tmp_path / "runs" / "one-copied")
    assert itchbench_main(["compare", str(run.parent), str(other.parent), "--bbo-only", "--out",
                           str(tmp_path / "once")]) == 0
    result = json.loads((tmp_path / "once" / "compare.json").read_text())
    assert result["runs"] == {"base": {"sim": [str(run)]}, "head": {"sim": [str(other)]}}, result["runs"]


def test_what_says_where_a_workload_lies_is_no_difference_of_it():
    from itchbench import rundir
    a = {"name": "udp", "capture": "/a/s.pcap", "gateway_file": "/a/itchbench.toml", "description": "one",
         "repetitions": 3, "levels": 0, "targets": {"p99_us": 5}, "replay": {"pps": 1000, "sender": "udp-replay"}}
    b = {**a, "capture": "/b/s.pcap", "gateway_file": "/b/itchbench.toml", "description": "two", "repetitions": 9,
         "targets": {"p99_us": 7}}
    assert rundir.workload_differences(a, b) == []
    c = {**b, "levels": 5, "replay": {"pps": 2000, "sender": "udp-replay"}}
    assert rundir.workload_differences(a, c) == [("levels", None, 5), ("replay.pps", 1000, 2000)]
