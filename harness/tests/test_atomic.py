"""Outputs written whole or not at all (itchbench.atomic), and what rests on it: two writers of one name."""
from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from itchbench import atomic, rundir


def _write_many(path: str, marker: str) -> None:
    for _ in range(300):
        atomic.write_text(Path(path), json.dumps({"by": marker, "pad": marker * 20_000}) + "\n")


def test_two_writers_of_one_path_never_leave_a_mixed_or_cut_file(tmp_path):
    """Each writer had used PATH.tmp: one's write truncated the other's file, which the other then renamed into
    place, part-written."""
    out = tmp_path / "out.json"
    writers = [multiprocessing.Process(target=_write_many, args=(str(out), m)) for m in "ab"]
    for w in writers:
        w.start()
    while any(w.is_alive() for w in writers):
        if out.exists():
            got = json.loads(out.read_text())  # never a cut or mixed file
            assert got["pad"] == got["by"] * 20_000
    assert all(w.exitcode == 0 for w in writers)
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"], "a partial file left behind"


def test_a_failed_write_leaves_the_output_as_it_was_and_no_partial(tmp_path):
    out = tmp_path / "report.md"
    out.write_text("before\n")
    with pytest.raises(RuntimeError):
        with atomic.replaced_when_whole(out) as partial:
            partial.write_text("half")
            raise RuntimeError("the writer failed half-way")
    assert out.read_text() == "before\n" and sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_a_new_record_never_replaces_one_of_the_same_name(tmp_path):
    """Two `itchbench run`s into one folder in one second both wrote capacity-quick-UTC.json, and both said so:
    one run's record was the other's."""
    path = tmp_path / "capacity-quick-20261205T192514Z.json"
    first = rundir.write_json_new(path, {"run": 1})
    second = rundir.write_json_new(path, {"run": 2})
    third = rundir.write_json_new(path, {"run": 3})
    assert (first.name, second.name, third.name) == (path.name, "capacity-quick-20261205T192514Z-2.json",
                                                     "capacity-quick-20261205T192514Z-3.json")
    assert [rundir.read_json(p)["run"] for p in (first, second, third)] == [1, 2, 3]
    assert len(list(tmp_path.iterdir())) == 3


def test_a_partial_name_is_hidden_and_not_taken_by_a_glob_of_finished_files(tmp_path):
    name = atomic.partial_name(tmp_path / "run.parquet")
    assert name.name.startswith(".") and not name.match("*.parquet") and name.parent == tmp_path
    kept = atomic.partial_name(tmp_path / "capture.pcap", keep_suffix=True)
    again = atomic.partial_name(tmp_path / "capture.pcap", keep_suffix=True)
    assert kept.suffix == ".pcap" and kept.name.startswith(".") and kept != again


def test_a_new_record_on_a_file_system_without_hard_links_is_still_written_beside(tmp_path, monkeypatch):
    import errno
    import os

    def no_links(*_: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")
    path = tmp_path / "capacity-q-1.json"
    path.write_text("{}\n")
    monkeypatch.setattr(os, "link", no_links)
    second = rundir.write_json_new(path, {"run": 2})
    assert second.name == "capacity-q-1-2.json" and rundir.read_json(second) == {"run": 2}
    assert path.read_text() == "{}\n" and sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, second.name])
