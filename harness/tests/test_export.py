"""itchbench export: Parquet and CSV read back by pandas and pyarrow equal the
logs read with numpy, whatever the chunk size."""

from __future__ import annotations

import functools
import json
import os
import stat
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from itchbench.analysis import export, logs
from itchbench.captures import fixtures
from itchbench.cli import main as itchbench_main
from itchbench.runs import sim
from stamps_in_ns import stamps_in_ns

DAY = next(fx for fx in fixtures.load_manifest() if fx.name == "nasdaq-day-sample")


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    return sim.run_sim(DAY.path, tmp_path_factory.mktemp("exp") / "run", echo=False)


def test_latency_parquet_has_typed_columns_equal_to_the_log(run_dir, tmp_path):
    out = tmp_path / "lat.parquet"
    assert itchbench_main(["export", str(run_dir), "--out", str(out)]) == 0
    schema = pq.read_schema(out)
    assert schema.field("seq").type == "uint64" and str(schema.field("symbol").type).startswith("dictionary")
    df = pd.read_parquet(out, dtype_backend="pyarrow")
    rec = logs.read_latency(run_dir / "latency.lat").records
    assert len(df) == len(rec) == 8000  # the fixture's recipe: --messages 8000
    assert np.array_equal(df["seq"].to_numpy(), rec["seq"])
    # Gateway stamps are moved onto CLOCK_MONOTONIC linearly from the anchor (FORMAT.md), computed here from it.
    clock = json.loads((run_dir / "gateway.json").read_text())["clock"]
    slope = clock["offset_from_monotonic_ns_at_end"] / (clock["offset_measured_at_ns"] - clock["anchor_ns"])

    def moved(name: str) -> np.ndarray:
        t = stamps_in_ns(run_dir / "latency.lat", rec[name])  # the log's raw TSC ticks mapped by its clock line
        return t - np.rint((t - clock["anchor_ns"]) * slope).astype(np.int64)

    assert np.array_equal(df["t_book_ns"].to_numpy(), moved("t_book"))
    assert np.array_equal(df["locate"].to_numpy(), rec["stock_locate"])
    assert (df["type"].astype(str).to_numpy() == rec["msg_type"].astype(str)).all()
    # Simulation has no kernel stamp and no sender: those columns are null, not zero.
    assert df["t_kernel_ns"].isna().all() and df["t_intended_ns"].isna().all()
    bbo = (rec["flags"] & logs.FLAG_BBO_EVENT) != 0
    assert df["t_published_ns"].isna().to_numpy().sum() == (~bbo).sum()
    assert np.array_equal(df["receive_to_book_ns"].to_numpy(), moved("t_book") - moved("t_read"))


def test_bbo_export_keeps_exact_prices_and_the_symbol(run_dir, tmp_path):
    out = tmp_path / "bbo.parquet"
    assert itchbench_main(["export", str(run_dir), "--bbo", "--out", str(out)]) == 0
    df = pd.read_parquet(out)
    rec = logs.read_bbo(run_dir / "bbo.bbo").records
    assert len(df) == len(rec) == DAY.golden["bbo_events"]
    assert np.array_equal(df["bid_px_e4"].to_numpy(), rec["bid_px"])
    assert np.allclose(df["ask_price"].to_numpy() * 1e4, rec["ask_px"])
    named = json.loads((run_dir / "gateway.json").read_text())["symbols"]
    expected = [named.get(str(locate), str(locate)) for locate in rec["stock_locate"]]
    assert df["symbol"].astype(str).tolist() == expected


def test_chunks_change_nothing_and_csv_says_the_same(run_dir, tmp_path):
    whole, small = tmp_path / "whole.parquet", tmp_path / "small.parquet"
    export.export(run_dir, whole)
    export.export(run_dir, small, chunk_rows=777)
    a, b = pd.read_parquet(whole), pd.read_parquet(small)
    pd.testing.assert_frame_equal(a, b)
    assert pq.ParquetFile(small).metadata.num_row_groups > 1
    csv = tmp_path / "lat.csv"
    export.export(run_dir, csv, fmt="csv")
    c = pd.read_csv(csv)
    assert list(c.columns) == list(a.columns) and len(c) == len(a)
    assert (c["symbol"].astype(str).to_numpy() == a["symbol"].astype(str).to_numpy()).all()
    assert np.array_equal(c["t_book_ns"].to_numpy(), a["t_book_ns"].to_numpy())


def test_a_run_without_a_latency_log_is_a_clear_error(tmp_path, capsys):
    run = sim.run_sim(DAY.path, tmp_path / "run", echo=False, latency_log=False)
    assert itchbench_main(["export", str(run)]) == 2
    assert "no latency.lat" in capsys.readouterr().err
    assert not list(run.glob("*.partial")) and not (run / "latency.parquet").exists()


def test_a_long_export_says_how_far_it_is(run_dir, tmp_path, monkeypatch):
    """A day's 50 M rows take about 20 s, which passed in silence. Said every interval (here every chunk)."""
    monkeypatch.setattr(export, "Progress", functools.partial(export.Progress, interval_s=0.0))
    said: list[str] = []
    rows, _ = export.export(run_dir, tmp_path / "l.parquet", chunk_rows=3000, say=said.append)
    # The log of 8,000 messages, read in chunks of 3,000 of its compact slots (about one a message: the total said
    # is estimated): three lines, the last at every row.
    done = [int(line.split(": ")[1].split(" of ~")[0].replace(",", "")) for line in said]
    assert rows == 8000 and len(done) == 3 and done == sorted(done) and done[-1] == 8000, said
    said.clear()
    rows, _ = export.export(run_dir, tmp_path / "b.csv", fmt="csv", bbo=True, chunk_rows=500, say=said.append)
    assert said and said[-1].startswith(f"  export of bbo.bbo: {rows:,} of {rows:,} rows (100 %)"), said


def test_an_export_onto_a_pipe_or_a_folder_is_refused_and_leaves_it(run_dir, tmp_path, capsys):
    """Written to a file of its own and renamed into place, an export to /dev/stdout (as root) replaced the symlink
    /dev/stdout with a CSV file. Refused, naming why, the pipe and the folder left as they were."""
    fifo, folder = tmp_path / "fifo", tmp_path / "folder"
    os.mkfifo(fifo)
    folder.mkdir()
    for out in (fifo, folder):
        assert itchbench_main(["export", str(run_dir), "--format", "csv", "--out", str(out)]) == 2
        assert f"{out}: not a regular file (a device, a pipe or a folder)" in capsys.readouterr().err
    assert stat.S_ISFIFO(fifo.stat().st_mode) and folder.is_dir() and not list(folder.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "folder"]


def test_an_export_into_a_folder_not_yet_made_makes_it(run_dir, tmp_path, capsys):
    """An --out in a folder not yet there failed, exit 1, naming the temporary file the export writes first
    (`Failed to open local file '…/.x.parquet.27276-a92c5e.partial'`). The folder is made, as every --out's is; one
    that cannot be (a file in its place) is said with the path given."""
    out = tmp_path / "new" / "deeper" / "x.csv"
    assert itchbench_main(["export", str(run_dir), "--bbo", "--out", str(out)]) == 0
    assert out.read_text().startswith("\"seq\",")
    (tmp_path / "a-file").write_text("")
    blocked = tmp_path / "a-file" / "x.csv"
    capsys.readouterr()
    assert itchbench_main(["export", str(run_dir), "--bbo", "--out", str(blocked)]) == 2
    err = capsys.readouterr().err
    assert f"{blocked}: its folder cannot be made (a file lies at {blocked.parent} or above it)" in err, err


def test_the_format_follows_the_output_name_and_a_clash_is_refused(run_dir, tmp_path, capsys):
    """`--out x.csv` without --format wrote Parquet into x.csv, and `--format csv --out x.parquet` a CSV that every
    Parquet reader fails on. The suffix now names the format; a --format that says otherwise is refused."""
    as_csv = tmp_path / "x.csv"
    assert itchbench_main(["export", str(run_dir), "--bbo", "--out", str(as_csv)]) == 0
    assert as_csv.read_text().startswith("\"seq\",")  # a CSV's header, not Parquet's magic "PAR1"
    clash = tmp_path / "y.parquet"
    assert itchbench_main(["export", str(run_dir), "--bbo", "--format", "csv", "--out", str(clash)]) == 2
    assert "the name says parquet" in capsys.readouterr().err and not clash.exists()
    other = tmp_path / "z.data"  # a suffix naming no format: --format (or its default) decides
    assert itchbench_main(["export", str(run_dir), "--bbo", "--format", "csv", "--out", str(other)]) == 0
    assert other.read_text().startswith("\"seq\",")


def test_two_exports_to_one_file_at_once_each_write_their_own_and_leave_it_whole(run_dir, tmp_path, monkeypatch):
    """Both had written through out.partial: the second truncated the file the first was writing, the first renamed
    it into place unfinished and said it wrote every row, the second then failed on its rename. Export A is held
    after its first chunk (by the progress it says) while export B writes the whole file; then A goes on."""
    out = tmp_path / "lat.csv"
    monkeypatch.setattr(export, "Progress", functools.partial(export.Progress, interval_s=0.0))
    held, go = threading.Event(), threading.Event()

    def hold(_: str) -> None:
        held.set()
        go.wait(60)

    a: list[tuple[int, Path]] = []
    first = threading.Thread(target=lambda: a.append(export.export(run_dir, out, fmt="csv", chunk_rows=3000,
                                                                   say=hold)))
    first.start()
    assert held.wait(60)
    b = export.export(run_dir, out, fmt="csv")
    assert pd.read_csv(out)["seq"].tolist() == list(range(1, 8001))  # B's file, whole, under A's write
    go.set()
    first.join(60)
    assert a == [(8000, out)] and b == (8000, out)
    assert pd.read_csv(out)["seq"].tolist() == list(range(1, 8001)) and sorted(p.name for p in tmp_path.iterdir()) \
        == ["lat.csv"]
