"""itchbench cache: listing and pruning reports/cache, on a cache laid out here by hand (its ages set with
utime), so the expected entries come from how the test made them."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from itchbench import cache, paths
from itchbench.cli import main as itchbench_main


@pytest.fixture
def laid_out(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setattr(paths, "cache_dir", lambda: root)
    old = time.time() - 10 * 86400
    made = {"builds/src-old/bin": (1000, old), "builds/src-new/bin": (2000, None), "contract/abc/c1/src/x": (300, old),
            "contract/def/c2/src/y": (400, None), "seed-loopback.pcap": (50, old)}
    for rel, (size, when) in made.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * size)
        if when:
            os.utime(p, (when, when))
    return root


def test_entries_are_listed_by_kind_with_their_sizes(laid_out):
    found = {e.path.relative_to(laid_out).as_posix(): (e.kind, e.bytes) for e in cache.entries()}
    assert found == {"builds/src-old": ("builds", 1000), "builds/src-new": ("builds", 2000),
                     "contract/abc": ("contract", 300), "contract/def": ("contract", 400),
                     "seed-loopback.pcap": ("capture", 50)}


def test_prune_older_than_removes_only_what_was_not_used(laid_out, capsys):
    assert itchbench_main(["cache", "prune", "--older-than", "5", "--dry-run"]) == 0
    assert "would remove 3 entries" in capsys.readouterr().out
    assert len(cache.entries()) == 5 and not (laid_out / cache.LOCKS).exists()  # a dry run removes (and adds) nothing
    assert itchbench_main(["cache", "prune", "--older-than", "5"]) == 0
    left = sorted(e.path.relative_to(laid_out).as_posix() for e in cache.entries())
    assert left == ["builds/src-new", "contract/def"]
    assert itchbench_main(["cache", "prune"]) == 0 and cache.entries() == []
    assert "in use" not in capsys.readouterr().out


# A process of its own that uses two entries of the cache at root (a build found made, a capture), says so, and
# ends when its stdin closes, as a compare ends after its runs.
_USE = """
import sys
from pathlib import Path
from itchbench import cache, paths
root = Path(sys.argv[1])
paths.cache_dir = lambda: root
with cache.locked(root / "builds" / "src-old"):
    pass
cache.made_once(root / "seed-loopback.pcap", lambda partial: partial.write_bytes(b"never made: it is there"))
print("using", flush=True)
sys.stdin.read()
"""


def test_prune_leaves_what_a_running_process_uses_until_it_ends(laid_out, capsys):
    user = subprocess.Popen([sys.executable, "-c", _USE, str(laid_out)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert user.stdout.readline() == "using\n"
        assert itchbench_main(["cache", "prune", "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert "would remove 3 entries" in out and "; 2 left, in use by a running itchbench" in out
        assert itchbench_main(["cache", "prune"]) == 0
        out = capsys.readouterr().out
        assert out.count("in use, left ") == 2 and "removed 3 entries" in out
        left = sorted(e.path.relative_to(laid_out).as_posix() for e in cache.entries())
        assert left == ["builds/src-old", "seed-loopback.pcap"]
        assert (laid_out / "seed-loopback.pcap").read_bytes() == b"x" * 50  # found made, never made again
    finally:
        user.stdin.close()
        assert user.wait() == 0
    pruned = cache.prune()  # the process ended, and its locks with it
    assert sorted(e.path.name for e in pruned.removed) == ["seed-loopback.pcap", "src-old"] and not pruned.in_use
    assert cache.entries() == [] and sorted((laid_out / cache.LOCKS).iterdir()) == []


_MAKE_TWO = """
import sys
from pathlib import Path
from itchbench import cache, paths
root = Path(sys.argv[1])
paths.cache_dir = lambda: root
for commit in ("c1", "c2"):
    with cache.locked(root / "contract" / "abc" / commit):
        (root / "contract" / "abc" / commit / "made").parent.mkdir(parents=True, exist_ok=True)
        (root / "contract" / "abc" / commit / "made").write_text(commit)
print("made", flush=True)
"""


def test_a_process_makes_entries_another_holds_without_waiting_for_it_to_end(laid_out):
    # A compare holds its gateway's checkouts until it ends; the bisect a test's worker starts (or another compare)
    # makes other revisions of the same gateway, and the same one again, meanwhile. A use held exclusively for a
    # make had left the bisect waiting for the worker that waited for it (CI hung).
    holder = subprocess.Popen([sys.executable, "-c", _USE.replace('"builds" / "src-old"', '"contract" / "abc" / "c1"'),
                               str(laid_out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "using\n"
        maker = subprocess.run([sys.executable, "-c", _MAKE_TWO, str(laid_out)], capture_output=True, text=True,
                               timeout=120)  # only a maker that waits for the holder's end runs into this
        assert maker.returncode == 0 and maker.stdout == "made\n", maker.stderr
        assert (laid_out / "contract" / "abc" / "c2" / "made").read_text() == "c2"
        assert [e.path.name for e in cache.prune().in_use] == ["abc", "seed-loopback.pcap"]
    finally:
        holder.stdin.close()
        assert holder.wait() == 0


_MAKE_ONE = """
import sys
from pathlib import Path
from itchbench import cache, paths
root = Path(sys.argv[1])
paths.cache_dir = lambda: root
cache.made_once(root / "seed-loopback.pcap", lambda partial: partial.write_bytes(b"made again"))
print("using", flush=True)
sys.stdin.read()
"""


def test_an_entry_removed_while_a_process_waited_for_it_is_made_again_and_held(laid_out):
    # A prune holds an entry's lock while it removes the entry and the lock file: a process that was waiting for
    # that lock finds the entry gone, makes it again, and holds the lock of the new file (a lock on the removed
    # one would let the next prune take the entry from under it).
    lock_path = cache._lock_path(laid_out / "seed-loopback.pcap")
    lock_path.parent.mkdir(parents=True)
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        user = subprocess.Popen([sys.executable, "-c", _MAKE_ONE, str(laid_out)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            _wait_until_blocked_on_a_lock(user.pid)
            (laid_out / "seed-loopback.pcap").unlink()
            lock_path.unlink()
        except BaseException:
            user.kill()
            raise
    try:
        assert user.stdout.readline() == "using\n"
        assert (laid_out / "seed-loopback.pcap").read_bytes() == b"made again"
        assert [e.path.name for e in cache.prune().in_use] == ["seed-loopback.pcap"]
    finally:
        user.stdin.close()
        assert user.wait() == 0


def _wait_until_blocked_on_a_lock(pid: int) -> None:
    """Until /proc/locks shows the process waiting for a lock (a line `N: -> FLOCK ... PID ...`); no timing."""
    deadline = time.monotonic() + 120  # only a process that never gets there: the test fails, it does not hang
    while time.monotonic() < deadline:
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if "->" in fields and str(pid) in fields:
                return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never waited for a lock")


def test_older_than_goes_with_prune_only(laid_out, capsys):
    assert itchbench_main(["cache", "list", "--older-than", "3"]) == 2
    assert "--older-than" in capsys.readouterr().err
    for days in ("-1", "nan"):
        assert itchbench_main(["cache", "prune", "--older-than", days]) == 2
        assert "a number of days (0 or more)" in capsys.readouterr().err


SAMPLE = paths.fixtures_dir() / "nasdaq-day-sample.pcap"


# Two processes of their own, started at once, each with the cache folder set to the test's (fresh interpreters,
# never forks of the test's process: a fork copies any lock one of its threads holds).
_MAKE = """
import sys
from pathlib import Path
from itchbench import paths
paths.cache_dir = lambda: Path(sys.argv[1])
from itchbench.captures import loopback
print(loopback.loopback_capture(Path(sys.argv[2]), int(sys.argv[3])))
"""


def test_entries_are_made_in_an_empty_cache_whole_even_by_two_processes_at_once(tmp_path):
    # The runs of a Slurm array on one node, or two test workers, ask for the same rewritten capture at once:
    # both get it whole, the same bytes, and no partial file is left.
    root = tmp_path / "cache"
    makers = [subprocess.Popen([sys.executable, "-c", _MAKE, str(root), str(SAMPLE), "26477"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [m.communicate() for m in makers]
    assert [m.returncode for m in makers] == [0, 0], outs
    made = [Path(out.strip()).read_bytes() for out, _ in outs]
    assert made[0] == made[1] and len(made[0]) > 100_000
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [p.name for p in root.glob("*-lo26477.pcap")] + [p.name for p in root.glob("*.eth.pcap")]
        + [cache.FACTS, cache.LOCKS])
    half_made = [p for p in root.rglob("*") if p.name.startswith(".") and cache.LOCKS not in (p.name, p.parent.name)]
    assert half_made == [] and (root / cache.LOCKS).is_dir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(paths, "cache_dir", lambda: root)
        assert sorted(e.kind for e in cache.entries()) == ["capture", "capture", "facts"]  # and the capture's digest


def test_a_capture_is_hashed_once_per_version_and_again_after_any_change(tmp_path, monkeypatch):
    """The digest is read back for the same version of a file, and read again after a change the size and
    modification time do not show (the same size, the modification time set back): the change time gives it away.
    Expected digests from hashlib on the bytes, not from the code under test."""
    import hashlib

    from itchbench.captures import fixtures, remembered

    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(remembered, "RACY_S", 0.0)
    reads: list[Path] = []
    real_read = fixtures._sha256_read
    monkeypatch.setattr(fixtures, "_sha256_read", lambda p: reads.append(p) or real_read(p))
    capture = tmp_path / "day.itch"
    capture.write_bytes(b"A" * 5000)
    first = os.stat(capture)
    assert fixtures.sha256_of(capture) == hashlib.sha256(b"A" * 5000).hexdigest()
    assert fixtures.sha256_of(capture) == hashlib.sha256(b"A" * 5000).hexdigest()
    assert len(reads) == 1
    assert [e.kind for e in cache.entries()] == ["facts"]

    time.sleep(0.01)  # a change time of its own even where the kernel keeps coarse times
    capture.write_bytes(b"B" * 5000)
    os.utime(capture, ns=(first.st_atime_ns, first.st_mtime_ns))
    assert (os.stat(capture).st_size, os.stat(capture).st_mtime_ns) == (first.st_size, first.st_mtime_ns)
    assert fixtures.sha256_of(capture) == hashlib.sha256(b"B" * 5000).hexdigest()
    assert len(reads) == 2


def test_a_capture_changed_within_the_racy_second_is_not_remembered(tmp_path, monkeypatch):
    from itchbench.captures import remembered

    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")
    capture = tmp_path / "day.itch"
    capture.write_bytes(b"A" * 10)
    computed: list[int] = []
    for _ in range(2):
        remembered.remembered(capture, "n", lambda: computed.append(1) or 7)
    assert computed == [1, 1]  # just written: computed each time, kept never
    assert not (tmp_path / "cache" / cache.FACTS).exists()


def test_forgetting_a_capture_drops_its_facts_alone(tmp_path, monkeypatch):
    """whole_day.py forgets its inputs' facts so that its first round is a first run: that file's facts are read
    again, another file's are not."""
    from itchbench.captures import remembered

    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(remembered, "RACY_S", 0.0)
    day, other = tmp_path / "day.itch", tmp_path / "other.itch"
    day.write_bytes(b"A" * 10)
    other.write_bytes(b"B" * 10)
    computed: list[str] = []
    for _ in range(2):
        for path in (day, other):
            for what in ("count", "digest"):
                remembered.remembered(path, what, lambda: computed.append(f"{path.name} {what}") or 7)
    assert len(computed) == 4  # each fact read once, then remembered
    assert remembered.forget(day) == 2
    for path in (day, other):
        for what in ("count", "digest"):
            remembered.remembered(path, what, lambda: computed.append(f"{path.name} {what}") or 7)
    assert computed[4:] == ["day.itch count", "day.itch digest"]
    assert remembered.forget(day) == 2  # read again, remembered again


def test_a_packages_version_is_remembered_per_version_of_dpkgs_status(tmp_path, monkeypatch):
    """libpcap's version in a run's manifest is dpkg-query's answer (asked here, not by the code under test); a
    second snapshot reads it back rather than asking; a status file rewritten (any install or removal) is asked
    again."""
    from itchbench.captures import remembered
    from itchbench.runs import environment

    if not environment.DPKG_STATUS.exists():
        pytest.skip("not a Debian system")
    expected = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libpcap0.8"], capture_output=True,
                              text=True, check=True).stdout.strip()
    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")
    status = tmp_path / "status"
    status.write_bytes(environment.DPKG_STATUS.read_bytes())
    monkeypatch.setattr(remembered, "RACY_S", 0.0)  # a status file just written is remembered as an old one
    monkeypatch.setattr(environment, "DPKG_STATUS", status)
    asked: list[list[str]] = []
    real_run = environment._run
    monkeypatch.setattr(environment, "_run", lambda cmd, cwd=None: asked.append(cmd) or real_run(cmd, cwd))
    assert environment._package_version("libpcap0.8") == expected
    assert environment._package_version("libpcap0.8") == expected
    assert len(asked) == 1
    time.sleep(0.01)
    status.write_bytes(status.read_bytes() + b"\n")
    assert environment._package_version("libpcap0.8") == expected
    assert len(asked) == 2


def test_the_gateways_build_is_remembered_per_binary_and_a_failure_never(tmp_path, monkeypatch):
    """A run's manifest says how the gateway was built (its --build-info, asked here of the binary itself): asked
    once a version of the binary; an answer that did not come is asked again once and then given as unknown, never
    remembered (one run of a compare recorded with no build type had the compare refused as not comparable)."""
    import json
    import shutil

    from itchbench.captures import remembered
    from itchbench.runs import environment

    binary = tmp_path / "itch-gateway"
    shutil.copy2(paths.tool("itch-gateway"), binary)
    expected = json.loads(subprocess.run([binary, "--build-info"], capture_output=True, text=True,
                                         check=True).stdout)
    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setenv(paths.GATEWAY_OVERRIDE, str(binary))
    monkeypatch.setattr(remembered, "RACY_S", 0.0)  # a binary just copied is remembered as an old one
    asked: list[list[str]] = []
    failing = [True, True]  # the next asks fail (a spawn refused, a time-out)
    real_run = environment._run
    monkeypatch.setattr(environment, "_run", lambda cmd, cwd=None: asked.append(cmd) or (
        None if failing and failing.pop() else real_run(cmd, cwd)))
    assert environment.gateway_build() == {} and len(asked) == 2  # asked twice, then unknown
    assert environment.gateway_build() == expected and len(asked) == 3  # not remembered: asked again
    assert environment.gateway_build() == expected and len(asked) == 3  # remembered
    time.sleep(0.01)
    binary.write_bytes(binary.read_bytes())  # a rebuilt binary: asked again
    assert environment.gateway_build() == expected and len(asked) == 4


def test_a_process_holding_entries_ends_without_an_unclosed_file_warning(tmp_path):
    """Held until the process ends, the entries' locks are closed as it ends: Python's development mode says each
    file left to the interpreter's teardown (a ResourceWarning at the end of every test run's output)."""
    script = ("import sys\nfrom pathlib import Path\nfrom itchbench import cache\n"
              "cache._use(Path(sys.argv[1]) / 'a')\ncache._use(Path(sys.argv[1]) / 'b')\n")
    done = subprocess.run([sys.executable, "-X", "dev", "-c", script, str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / ".locks").iterdir()) == ["a.lock", "b.lock"]
    assert "ResourceWarning" not in done.stderr
