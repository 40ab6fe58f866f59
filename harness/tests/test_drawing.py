"""The report's plots are drawn in a process of their own (analysis/drawing.py) while the caller runs other
threads. A fork would copy whatever lock one of those threads held, held for ever in the child: a CI worker once
hung on one for 19 minutes. Here a thread of the caller is in the middle of importing a module, holding that
module's import lock, while the drawing process imports the same module and draws a real plot, whose bytes are those
drawn here. The process draws batch after batch, each on the CPUs and at the niceness of the thread that handed it
over."""

from __future__ import annotations

import importlib
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from itchbench.analysis import drawing, plots

HELD = "itchbench_test_held_import"


def _write_held_module(where: Path, release: Path) -> None:
    # Its import blocks on the thread named "importer" until the release file exists; elsewhere it returns at once.
    (where / f"{HELD}.py").write_text(
        "import os, pathlib, threading, time\n"
        "if threading.current_thread().name == 'importer':\n"
        f"    while not os.path.exists({str(release)!r}):\n"
        "        time.sleep(0.01)\n"
        "def touch(path):\n"
        "    pathlib.Path(path).touch()\n")


def test_a_plot_is_drawn_while_another_thread_holds_an_import_lock(tmp_path, monkeypatch):
    release = tmp_path / "release"
    _write_held_module(tmp_path, release)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    drawing.stop_waiting()  # one started before (by another test's run) has not this path
    importer = threading.Thread(target=importlib.import_module, args=(HELD,), name="importer")
    importer.start()
    try:
        while HELD not in sys.modules:  # the module exists, half imported, its lock held by the importer
            time.sleep(0.01)
        values = np.array([900, 1_000, 1_200, 5_000], np.int64)
        series = [("stage", values, np.array([3, 7, 2, 1], np.int64))]
        drawn = drawing.Drawing([drawing.Draw(HELD, "touch", (tmp_path / "imported",)),
                                 drawing.plot("histogram", series, tmp_path / "child.png", "title")])
        waiter = threading.Thread(target=drawn.wait)
        waiter.start()
        waiter.join(timeout=300)  # a deadlock never ends: this only bounds how long the test waits to say so
        assert not waiter.is_alive(), "the drawing process is stuck on a lock the caller's thread held"
        assert (tmp_path / "imported").exists()
        plots.histogram(series, tmp_path / "here.png", "title")
        assert (tmp_path / "child.png").read_bytes() == (tmp_path / "here.png").read_bytes()
    finally:
        release.touch()
        importer.join()
        sys.modules.pop(HELD, None)


def test_a_draw_that_fails_is_raised_with_the_process_exit(tmp_path):
    drawn = drawing.Drawing([drawing.plot("histogram", [], tmp_path / "no" / "such" / "dir.png", "t")])
    with pytest.raises(RuntimeError, match="exited with 1"):
        drawn.wait()


def test_the_drawing_process_draws_every_plot_without_pandas(tmp_path):
    # Importing pandas took 0.5 s of the report's wait for its plots after a run, when the latency-over-time plot
    # took its statistics in the drawing process: the caller takes them, and the drawing process draws arrays.
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "import numpy as np\n"
        "from itchbench.analysis import plots\n"
        "series = [('stage', np.array([100.0, 200.0, 5000.0]), np.array([5, 3, 1]))]\n"
        f"out = Path({str(tmp_path)!r})\n"
        "plots.histogram(series, out / 'h.png', 't')\n"
        "plots.percentile_curve(series, out / 'p.png', 't')\n"
        "lines = {'p50': np.array([100.0, 120.0]), 'p99': np.array([900.0, 950.0]), 'max': np.array([5e3, 6e3])}\n"
        "plots.over_time(np.array([0.5, 1.5]), lines, 'stage', out / 'o.png', 't')\n"
        "print('pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert all((tmp_path / f"{name}.png").stat().st_size > 1000 for name in "hpo")


def _drawn_here_with_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> list:
    """A module of the test's on the path of a new drawing process (one started before has not this path), and a
    series whose histogram is drawn here, tmp_path/here.png, to compare the process's with."""
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    drawing.stop_waiting()
    series = [("stage", np.array([900, 1_000, 1_200, 5_000], np.int64), np.array([3, 7, 2, 1], np.int64))]
    plots.histogram(series, tmp_path / "here.png", "title")
    return series


def test_one_process_draws_batch_after_batch_as_each_callers_thread_would(tmp_path, monkeypatch):
    # A probe, drawn in each batch, writes the drawing process's pid, CPUs and niceness. The second batch comes from
    # a thread kept to one CPU at niceness 5, the third from this one again (niceness 0: lowered again, as root).
    series = _drawn_here_with_module(
        tmp_path, monkeypatch, "itchbench_test_probe",
        "import json, os, pathlib\n"
        "def probe(path):\n"
        "    pathlib.Path(path).write_text(json.dumps([os.getpid(), sorted(os.sched_getaffinity(0)),\n"
        "                                              os.getpriority(os.PRIO_PROCESS, 0)]))\n")
    everywhere, one = sorted(os.sched_getaffinity(0)), max(os.sched_getaffinity(0))

    def batch(k: int) -> list[object]:
        drawing.Drawing([drawing.Draw("itchbench_test_probe", "probe", (tmp_path / f"{k}.json",)),
                         drawing.plot("histogram", series, tmp_path / f"{k}.png", "title")]).wait()
        return json.loads((tmp_path / f"{k}.json").read_text())

    def kept_to_one_cpu() -> None:
        os.sched_setaffinity(0, {one})
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 5)
        got.append(batch(2))
    got = [batch(1)]
    thread = threading.Thread(target=kept_to_one_cpu)
    thread.start()
    thread.join()
    got.append(batch(3))
    assert got == [[got[0][0], everywhere, 0], [got[0][0], [one], 5], [got[0][0], everywhere, 0]]
    assert all((tmp_path / f"{k}.png").read_bytes() == (tmp_path / "here.png").read_bytes() for k in (1, 2, 3))
    drawing.stop_waiting()


def test_after_a_draw_that_fails_the_next_is_drawn_by_a_new_process(tmp_path):
    with pytest.raises(RuntimeError, match="exited with 1"):
        drawing.Drawing([drawing.plot("histogram", [], tmp_path / "no" / "such" / "dir.png", "t")]).wait()
    series = [("stage", np.array([900, 1_000], np.int64), np.array([3, 7], np.int64))]
    drawing.Drawing([drawing.plot("histogram", series, tmp_path / "drawn.png", "t")]).wait()
    assert (tmp_path / "drawn.png").stat().st_size > 1000


def _serving(tmp_path: Path) -> subprocess.Popen[bytes]:
    """A drawing process of its own, the test's modules in tmp_path on its path, its stderr kept."""
    return subprocess.Popen([sys.executable, "-c", "import itchbench.analysis.drawing as d; d._serve()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])})


def _hand(server: subprocess.Popen[bytes], draws: list[drawing.Draw]) -> None:
    """A batch to a drawing process, as a Drawing hands it over from a thread on every CPU at niceness 0."""
    assert server.stdin is not None
    batch = pickle.dumps((os.sched_getaffinity(0), 0, draws))
    server.stdin.write(struct.pack("<Q", len(batch)) + batch)
    server.stdin.flush()


def test_the_drawing_process_leaves_an_interrupt_to_its_caller_and_ends_quietly_when_it_is_gone(tmp_path):
    # A Ctrl-C in a terminal reaches the whole process group: the caller says it was interrupted and ends the
    # drawing process; the process had printed a KeyboardInterrupt traceback over that line, or, when the caller
    # was gone before a batch was drawn, a BrokenPipeError one.
    (tmp_path / "itchbench_test_gate.py").write_text(
        "import os, pathlib, time\n"
        "def after(release, path):\n"
        "    while not os.path.exists(release):\n"
        "        time.sleep(0.01)\n"
        "    pathlib.Path(path).touch()\n")
    server = _serving(tmp_path)

    def hand(k: int, release: Path) -> None:
        _hand(server, [drawing.Draw("itchbench_test_gate", "after", (release, tmp_path / f"{k}.done"))])

    try:
        hand(1, tmp_path)  # drawn at once: the process is then serving
        assert server.stdout.read(1) == b"\x00"
        server.send_signal(signal.SIGINT)
        hand(2, tmp_path)
        assert server.stdout.read(1) == b"\x00" and (tmp_path / "2.done").exists()  # it drew on
        hand(3, tmp_path / "release")
        server.stdout.close()  # the caller gone while the batch is drawn
        (tmp_path / "release").touch()
        assert server.wait(timeout=120) == 0 and (tmp_path / "3.done").exists()
        assert server.stderr.read() == b""
    finally:
        server.kill()
        server.wait()


def test_a_batch_is_drawn_at_once_in_forked_children_and_each_failure_is_said(tmp_path, monkeypatch):
    # The first draw of a batch is made in the drawing process, each other in a child forked for it, when the batch
    # has more than one CPU: the plots are the bytes drawn here. A child that cannot write its file, or is killed,
    # fails the batch once the others are done, and says which draw and how.
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: a batch is drawn in one process")
    series = _drawn_here_with_module(
        tmp_path, monkeypatch, "itchbench_test_forks",
        "import os, pathlib, signal\n"
        "def pid(path):\n"
        "    pathlib.Path(path).write_text(str(os.getpid()))\n"
        "def killed():\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n")
    plots.percentile_curve(series, tmp_path / "here-p.png", "title")
    probe = [drawing.Draw("itchbench_test_forks", "pid", (tmp_path / f"{k}.pid",)) for k in range(3)]
    drawing.Drawing([*probe, drawing.plot("histogram", series, tmp_path / "h.png", "title"),
                     drawing.plot("percentile_curve", series, tmp_path / "p.png", "title")]).wait()
    pids = [int((tmp_path / f"{k}.pid").read_text()) for k in range(3)]
    assert len(set(pids)) == 3
    assert (tmp_path / "h.png").read_bytes() == (tmp_path / "here.png").read_bytes()
    assert (tmp_path / "p.png").read_bytes() == (tmp_path / "here-p.png").read_bytes()
    drawing.Drawing(probe[:1]).wait()  # the same process draws the next batch's first
    assert int((tmp_path / "0.pid").read_text()) == pids[0]

    for failing, said in ((drawing.plot("histogram", series, tmp_path / "no" / "such.png", "t"),
                           "drawing histogram: its process exited with 1"),
                          (drawing.Draw("itchbench_test_forks", "killed", ()),
                           "drawing killed: its process was killed by SIGKILL")):
        (tmp_path / "h.png").unlink()
        child = subprocess.run(
            [sys.executable, "-c", "import itchbench.analysis.drawing as d; d._serve()"],
            input=(lambda b: struct.pack("<Q", len(b)) + b)(pickle.dumps(
                (os.sched_getaffinity(0), 0, [probe[0], failing,
                                              drawing.plot("histogram", series, tmp_path / "h.png", "t")]))),
            capture_output=True, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])})
        assert child.returncode == 1 and child.stdout == b""  # never said drawn
        assert said in child.stderr.decode()
        assert (tmp_path / "h.png").stat().st_size > 1000  # the other child drew on
    drawing.stop_waiting()


def test_a_waiting_drawing_process_is_moved_to_the_cpus_of_the_thread_that_asks_for_it_again():
    # A run starts the process before its gateway's CPU is chosen; its follower, kept off that CPU, asks again, and
    # the process (still importing matplotlib, or waiting) is moved there, as one that thread started would be. In
    # an interpreter of its own: a follower thread another test left behind would ask too.
    one = max(os.sched_getaffinity(0))
    code = (
        "import os, threading\n"
        "from itchbench.analysis import drawing\n"
        "drawing.start_drawer()\n"
        "waiting = drawing._waiting\n"
        "print(sorted(os.sched_getaffinity(waiting.pid)))\n"
        "def kept_to_one_cpu():\n"
        f"    os.sched_setaffinity(0, {{{one}}})\n"
        "    drawing.start_drawer()\n"
        "thread = threading.Thread(target=kept_to_one_cpu)\n"
        "thread.start()\n"
        "thread.join()\n"
        "print(drawing._waiting is waiting, sorted(os.sched_getaffinity(waiting.pid)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [str(sorted(os.sched_getaffinity(0))), f"True [{one}]"]


PIDS_CGROUPS = Path("/sys/fs/cgroup/pids")


@pytest.mark.skipif(not (PIDS_CGROUPS / "cgroup.procs").exists() or os.geteuid() != 0,
                    reason="needs the pids cgroup controller (v1) and root")
def test_a_draw_whose_child_cannot_be_forked_is_drawn_by_the_drawing_process_itself(tmp_path, monkeypatch):
    # The drawing process moved into a cgroup whose pids are all taken: its forks fail (EAGAIN, as at a process
    # limit), and it draws every draw of the batch itself, the same bytes, rather than dying on the fork.
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: a batch is drawn in one process, no fork is tried")
    series = _drawn_here_with_module(tmp_path, monkeypatch, "itchbench_test_forks",
                                     "import os, pathlib\n"
                                     "def pid(path):\n"
                                     "    pathlib.Path(path).write_text(str(os.getpid()))\n")
    server = _serving(tmp_path)
    group = PIDS_CGROUPS / f"itchbench-test-{os.getpid()}-{server.pid}"
    group.mkdir()
    try:
        (group / "cgroup.procs").write_text(str(server.pid))
        (group / "pids.max").write_text((group / "pids.current").read_text())
        _hand(server, [drawing.Draw("itchbench_test_forks", "pid", (tmp_path / "0.pid",)),
                       drawing.Draw("itchbench_test_forks", "pid", (tmp_path / "1.pid",)),
                       drawing.plot("histogram", series, tmp_path / "h.png", "title")])
        assert server.stdout.read(1) == b"\x00", server.stderr.read()
        assert [int((tmp_path / f"{k}.pid").read_text()) for k in range(2)] == [server.pid, server.pid]
        assert (tmp_path / "h.png").read_bytes() == (tmp_path / "here.png").read_bytes()
    finally:
        server.kill()
        server.wait()
        group.rmdir()
