"""itchbench doc: a small matrix of real runs into a document, its numbers
checked against the runs' own summaries (medians computed here with the
statistics module), rebuilt byte for byte, and opened in a real headless
Chromium."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from itchbench import rundir
from itchbench.captures import fixtures
from itchbench.cli import main as itchbench_main

from browser import headless_chromium
from live_helpers import another_run

SEED = next(fx for fx in fixtures.load_manifest() if fx.name == "seed-workload").path
CONFIGS = ("small-index", "default-index")
SECTIONS = ["## Executive summary", "## Methodology", "### Hardware and build", "### Clock", "### Workload",
            "### Where each stamp is taken", "## Configuration: small-index",
            "## Configuration: default-index (baseline)", "## Comparative analysis", "## Throughput and resources",
            "## Micro-benchmarks", "## Appendix: per message type", "## Appendix: per symbol",
            "## Measurement accuracy", "## System configuration", "## Reproduce"]


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("doc")
    scen = root / "matrix.toml"
    scen.write_text(f'''name = "matrix"
transport = "sim"
capture = "{SEED}"
repetitions = 3

[microbench]
binaries = ["book_bench"]
filter = "BM_StageClockNow"
repetitions = 2

[[configurations]]
label = "small-index"
gateway = {{ expected_orders = 1024 }}

[[configurations]]
label = "default-index"
''')
    assert itchbench_main(["run", str(scen), "--out", str(root / "runs")]) == 0
    return root / "runs"


def _summaries(runs: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for p in sorted(runs.glob("*/summary.json")):
        s = json.loads(p.read_text())
        out.setdefault(s["label"], []).append(s)
    return out


def _tree(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="session")
def document(runs) -> Path:
    out = runs.parent / "doc-a"
    assert itchbench_main(["doc", str(runs), "--out", str(out), "--baseline", "default-index",
                           "--title", "Index sizes"]) == 0
    return out


def test_runs_are_interleaved_across_configurations(runs):
    labels = [json.loads(p.read_text())["label"] for p in sorted(runs.glob("*/manifest.json"))]
    made = {p.parent.name: json.loads(p.read_text()) for p in runs.glob("*/manifest.json")}
    order = sorted((m["created_utc"], m["created_ns"], name) for name, m in made.items())
    assert sorted(labels) == sorted(list(CONFIGS) * 3)
    firsts = [name for _, _, name in order][:2]
    assert {("small-index" in n) for n in firsts} == {True, False}  # one of each before any repeats


def test_document_has_every_section_in_order(document):
    text = (document / "report.md").read_text()
    positions = [text.find(s + "\n") for s in SECTIONS]
    assert all(p >= 0 for p in positions), [s for s, p in zip(SECTIONS, positions) if p < 0]
    assert positions == sorted(positions)
    assert text.startswith("# Index sizes\n")
    assert "Hop by hop, every message, to the book (sender: none, simulation)" in text
    for fig in ["figures/percentiles.png", "figures/summary.png", "figures/histogram-small-index.png",
                "figures/histogram-default-index.png"]:
        assert f"]({fig})" in text and (document / fig).stat().st_size > 5000


def test_numbers_equal_the_runs_summaries(document, runs):
    text = (document / "report.md").read_text()
    by_label = _summaries(runs)
    medians = {}
    for label, summaries in by_label.items():
        p50 = [s["latency"]["stages"]["receive_to_book"]["p50"] for s in summaries]
        p99 = [s["latency"]["stages"]["receive_to_book"]["p99"] for s in summaries]
        medians[label] = (statistics.median(p50), statistics.median(p99))
        lo, hi = min(p50), max(p50)
        shown = f"{statistics.median(p50):,.0f}" + (f" [{lo:,.0f}–{hi:,.0f}]" if lo != hi else "")
        row = next(line for line in text.splitlines() if line.startswith(f"| {label}"))
        assert f"| {shown} |" in row, (row, shown)
        for s in summaries:  # each run's own row, linked to its own report
            run_row = next(line for line in text.splitlines() if f"[{s['run_id']}](" in line)
            assert f"| {s['latency']['stages']['receive_to_book']['p50']:,.0f} |" in run_row
            link = re.search(r"\]\(([^)]+)\)", run_row).group(1)
            assert (document / link).resolve() == (runs / s["run_id"] / "report.md").resolve()
            assert (document / link).is_file()
    factor = medians["default-index"][0] / medians["small-index"][0]
    words = f"{factor:.2f}× lower p50" if factor >= 1 else f"{1 / factor:.2f}× higher p50"
    summary_line = next(line for line in text.splitlines() if line.startswith("- **small-index**: "))
    assert f"; {words} than default-index (95% CI " in summary_line
    expected = sum(s["reconciliation"]["loss"]["expected_messages"] for ss in by_label.values() for s in ss)
    assert f"all 6 runs are LOSSLESS — {expected:,} messages" in text
    bench = [s["microbench"]["benchmarks"]["BM_StageClockNow"]["real_time_ns"] for s in by_label["default-index"]]
    assert "| `BM_StageClockNow` |" in text and f"{statistics.median(bench):,.2f}" in text


def test_statistics_say_what_they_are(document):
    text = (document / "report.md").read_text()
    assert "numpy's `higher` method" in text and "⌈(n−1)·p⌉" in text and "HdrHistogram" in text
    assert "population" in text and "seed 20261122" in text


def test_a_rebuild_is_byte_identical(document, runs):
    again = runs.parent / "doc-b"  # a sibling: the same relative links to the runs
    assert itchbench_main(["doc", str(runs), "--out", str(again), "--baseline", "default-index",
                           "--title", "Index sizes"]) == 0
    assert _tree(again) == _tree(document)
    assert itchbench_main(["doc", str(runs), "--out", str(again), "--baseline", "default-index",
                           "--title", "Index sizes"]) == 0  # over its own earlier output
    assert _tree(again) == _tree(document)


def test_markdown_tables_render_as_tables(document):
    text = (document / "report.md").read_text()
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables = sum(1 for t in tokens if t.type == "table_open")
    separators = sum(1 for line in text.splitlines() if re.fullmatch(r"\|(-{3}:?\|)+", line.replace("---:", "---:")))
    assert tables == separators >= 10


def test_githubs_own_renderer_makes_the_same_tables_and_figures(document):
    # cmark-gfm is GitHub's reference implementation of GitHub Flavored Markdown: independent of markdown-it-py.
    cmark = shutil.which("cmark-gfm")
    assert cmark, "cmark-gfm is installed by harness/bin/test"
    html = subprocess.run([cmark, "--extension", "table", str(document / "report.md")], check=True,
                          capture_output=True, text=True).stdout
    ours = (document / "report.html").read_text()
    assert html.count("<table>") == ours.count("<table>") >= 10
    assert html.count("<img ") == ours.count("<img ") == 4
    assert html.count("<h2>") == ours.count("<h2>")


def test_html_is_one_self_contained_file(document):
    html = (document / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(list((document / "figures").glob("*.png"))) == 4
    assert 'src="figures/' not in html and "http://" not in html and "https://" not in html
    assert "<table>" in html and "@media print" in html


def test_html_loads_in_headless_chromium_with_every_figure(document):
    browser = headless_chromium()
    try:
        browser.get((document / "report.html").resolve().as_uri())
        images, loaded, width = browser.execute_script(
            "const imgs = Array.from(document.images);"
            "return [imgs.length, imgs.filter(i => i.complete && i.naturalWidth > 0).length,"
            " Math.min(...imgs.map(i => i.getBoundingClientRect().width))];")
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        headings = browser.execute_script("return Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
    finally:
        browser.quit()
    assert errors == []
    assert images == loaded == 4 and width > 300
    assert headings[0] == "Executive summary" and "Reproduce" in headings


@pytest.mark.parametrize("args, message", [
    (["doc", "/nonexistent-runs"], "no such file or folder"),
    (["doc"], "doc needs RUNS"),
])
def test_bad_input_is_a_clear_error(args, message, capsys):
    assert itchbench_main(args) == 2
    assert message in capsys.readouterr().err


def test_a_document_is_never_written_over_a_runs_own_report(runs, capsys):
    run = next(d for d in sorted(runs.rglob("manifest.json"))).parent
    before = (run / "report.md").read_bytes()
    assert itchbench_main(["doc", str(runs), "--out", str(run)]) == 2
    assert "is a run directory: its own report.md would be replaced" in capsys.readouterr().err
    assert (run / "report.md").read_bytes() == before and not (run / "figures").exists()


def test_a_configuration_with_a_run_not_lossless_is_marked_where_its_figures_are(runs, tmp_path, capsys):
    # A copy of the runs with one of small-index's three made incomplete, as an interrupted run's summary says.
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    hit = next(p for p in sorted(copy.glob("*/summary.json")) if json.loads(p.read_text())["label"] == "small-index")
    s = json.loads(hit.read_text())
    s["verdict"] = {**s["verdict"], "status": "incomplete", "exit_status": 1,
                    "headline": "INCOMPLETE (interrupted): interrupted by SIGINT (Ctrl-C)"}
    hit.write_text(json.dumps(s))
    assert itchbench_main(["doc", str(copy), "--out", str(tmp_path / "d"), "--baseline", "default-index"]) == 0
    md = (tmp_path / "d" / "report.md").read_text()
    assert "- **small-index** (1 of 3 runs not lossless): " in md
    assert "| small-index (1 of 3 runs not lossless) | 3 |" in md
    assert "| default-index (baseline) | 3 |" in md  # its runs are all lossless: no mark


def test_a_figure_the_baseline_lacks_is_given_not_said_unmeasured(runs, tmp_path, capsys):
    """Every run of the baseline failed before its latency was measured: the other configuration's figures were
    measured (its table gives them), and its summary line said "mean not measured; p50 not measured; …" of them."""
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    p50s = []
    for p in sorted(copy.glob("*/summary.json")):
        s = json.loads(p.read_text())
        if s["label"] == "small-index":
            p50s.append(s["latency"]["stages"]["receive_to_book"]["p50"])
            continue
        s.pop("latency")
        s["verdict"] = {**s["verdict"], "status": "incomplete", "exit_status": 1,
                        "headline": "INCOMPLETE (interrupted): interrupted by SIGINT (Ctrl-C)"}
        p.write_text(json.dumps(s))
    assert itchbench_main(["doc", str(copy), "--out", str(tmp_path / "d"), "--baseline", "default-index"]) == 0
    md = (tmp_path / "d" / "report.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("- **small-index**"))
    assert f"p50 {statistics.median(p50s):,.0f} ns (not compared: the baseline has none)" in line, line
    assert "not measured" not in line


def test_unknown_baseline_names_the_configurations(runs, tmp_path, capsys):
    assert itchbench_main(["doc", str(runs), "--out", str(tmp_path / "d"), "--baseline", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--baseline 'nope'" in err and "small-index" in err and "default-index" in err


def test_a_folder_without_runs_is_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert itchbench_main(["doc", str(tmp_path / "empty"), "--out", str(tmp_path / "d")]) == 2
    assert "neither a run directory nor a folder of them" in capsys.readouterr().err


def test_compare_judges_micro_benchmarks_with_the_same_statistics(runs, tmp_path, capsys):
    # Two folders holding the same configuration's three runs, three copies each, each copy a run of its own: nine
    # a side (a timing verdict needs at least seven), the same samples on both sides.
    a, b = tmp_path / "a", tmp_path / "b"
    for side in (a, b):
        for copy in range(3):
            for p in sorted(runs.glob("*default-index*")):
                another_run(p, side / f"copy{copy}" / p.name)
    rc = itchbench_main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp"), "--no-instructions"])
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    metric = result["metrics"]["default-index"]["microbench.BM_StageClockNow.real_time_ns"]
    assert metric["n"] == [9, 9] and metric["verdict"] == "unchanged" and metric["ratio"] == 1.0
    assert rc == 0
    # Three a side cannot reach the test's threshold: shown, not judged.
    three = {side: tmp_path / "three" / side for side in ("a", "b")}
    for p in sorted(runs.glob("*default-index*")):
        for side in three.values():
            another_run(p, side / p.name)
    itchbench_main(["compare", str(three["a"]), str(three["b"]), "--out", str(tmp_path / "cmp3"), "--no-instructions"])
    few = json.loads((tmp_path / "cmp3" / "compare.json").read_text())
    assert few["metrics"]["default-index"]["microbench.BM_StageClockNow.real_time_ns"]["verdict"] == "not comparable"
    assert "timings not judged" in few["headline"]


def _scenario(tmp_path: Path, microbench: str) -> Path:
    scen = tmp_path / "mb.toml"
    scen.write_text(f'name = "mb"\ntransport = "sim"\ncapture = "{SEED}"\n[microbench]\n{microbench}')
    return scen


def test_a_micro_benchmark_filter_that_selects_nothing_is_refused_before_the_run(tmp_path, capsys):
    scen = _scenario(tmp_path, 'binaries = ["decode_bench"]\nfilter = "BM_NoSuchThing"\n')
    assert itchbench_main(["run", str(scen), "--out", str(tmp_path / "runs")]) == 2
    assert "selects no benchmark of decode_bench" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_crashing_micro_benchmark_makes_the_run_incomplete_and_names_the_signal(tmp_path, capsys, monkeypatch):
    from itchbench import paths

    build = tmp_path / "other-build"
    (build / "bench").mkdir(parents=True)
    shutil.copy(paths.tool("itch-gateway"), build / "itch-gateway")
    bench = build / "bench" / "book_bench"  # lists one benchmark, then dies as a crashing benchmark would
    bench.write_text('#!/bin/sh\ncase "$*" in *--benchmark_list_tests*) echo BM_Crash; exit 0;; esac\n'
                     'echo "about to crash" >&2\nkill -SEGV $$\n')
    bench.chmod(0o755)
    monkeypatch.setenv(paths.GATEWAY_OVERRIDE, str(build / "itch-gateway"))
    scen = _scenario(tmp_path, 'binaries = ["book_bench"]\n')
    assert itchbench_main(["run", str(scen), "--out", str(tmp_path / "runs")]) == 1
    out = capsys.readouterr().out
    assert "INCOMPLETE (microbench_failed)" in out and "killed by SIGSEGV" in out and "about to crash" in out
    run = next((tmp_path / "runs").iterdir())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["failure"]["kind"] == "microbench_failed" and not summary["complete"]
    assert not list((run / "microbench").glob("*.json"))  # no partial JSON presented as whole


def test_the_loss_statement_counts_only_runs_that_can_say_what_they_applied():
    """A brought gateway's run (no count of messages applied) and a crashed run were summed as 0 not applied: a
    document of eight failed black-box runs said "0 of 64,000 messages not applied"."""
    from itchbench.documents import aggregate
    from itchbench.documents.collect import Configuration, RunRecord

    def run(status: str, **loss: int) -> RunRecord:
        return RunRecord(Path("r"), {"run_id": status}, {"verdict": {"status": status},
                                                          "reconciliation": {"loss": loss}})
    white = [run("lossless", expected_messages=1000, messages_not_applied=0),
             run("lost", expected_messages=1000, messages_not_applied=7)]
    black = [run("incomplete", expected_messages=1000), run("lossless", expected_messages=1000)]
    both = aggregate.loss_statement([Configuration("a", white), Configuration("b", black)])
    assert (both["messages_not_applied"], both["applied_counted_runs"], both["applied_counted_messages"],
            both["expected_messages"], both["runs"]) == (7, 2, 2000, 4000, 4)
    none = aggregate.loss_statement([Configuration("b", black)])
    assert none["applied_counted_runs"] == 0 and none["messages_not_applied"] == 0


def test_a_document_whose_page_cannot_be_written_leaves_the_pair_as_it_was(tmp_path, monkeypatch):
    """report.md was renamed into place before report.html was written: a disk that filled between them left a
    new report.md beside the old report.html."""
    import errno

    from itchbench.documents import render
    (tmp_path / "report.md").write_text("old md\n")
    (tmp_path / "report.html").write_text("old html\n")
    monkeypatch.setattr(render, "markdown", lambda template, context: "# new\n")
    written = Path.write_text

    def full_disk_for_the_page(self: Path, text: str, *args: object, **kwargs: object) -> int:
        if ".report.html." in self.name:
            raise OSError(errno.ENOSPC, "No space left on device")
        return written(self, text, *args, **kwargs)
    monkeypatch.setattr(Path, "write_text", full_disk_for_the_page)
    with pytest.raises(OSError):
        render.write(tmp_path, "unused", {}, "title")
    monkeypatch.undo()
    assert (tmp_path / "report.md").read_text() == "old md\n" and (tmp_path / "report.html").read_text() == "old html\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.md"]


def test_a_document_of_black_box_runs_that_measured_nothing_names_their_own_measure():
    """Eight brought-gateway runs that all failed: the document said "Latency is receive_to_book", the built-in
    gateway's stage, of gateways timed wire to wire."""
    from itchbench.documents import aggregate
    from itchbench.documents.collect import Configuration, RunRecord
    black = [RunRecord(Path("r"), {"run_id": "b"}, {"gateway": {"contract": {"name": "g"}, "started": False}})]
    built_in = [RunRecord(Path("r"), {"run_id": "w"}, {"gateway": {"realtime": {}}})]
    assert aggregate.headline_stage([Configuration("a", black)]) == "wire_to_wire"
    assert aggregate.headline_stage([Configuration("a", built_in)]) == aggregate.STAGE
    assert aggregate.headline_stage([Configuration("a", black + built_in)]) == aggregate.STAGE


def test_a_run_and_a_copy_of_it_are_one_repetition(tmp_path, capsys):
    """A folder of runs and a copy of it (an artifact downloaded back, a backup) given together: each run counted
    twice, its one measurement two repetitions of its configuration."""
    assert itchbench_main(["sim", str(SEED), "--out", str(tmp_path / "runs" / "one")]) == 0
    shutil.copytree(tmp_path / "runs", tmp_path / "copies")
    capsys.readouterr()
    assert itchbench_main(["doc", str(tmp_path / "runs"), str(tmp_path / "copies"), "--out", str(tmp_path / "d")]) == 0
    rows = [line for line in (tmp_path / "d" / "report.md").read_text().splitlines() if line.startswith("| sim ")]
    assert rows[0].startswith("| sim (baseline) | 1 | "), rows[0]


def test_runs_of_one_label_and_two_workloads_are_two_configurations(tmp_path, capsys):
    """`itchbench sim` labels every run sim: a document of runs on two captures, or with and without depth, pooled
    them as repetitions of one configuration, its figures a mix of workloads and its workload row the first run's.
    The same capture copied under another name is the same workload."""
    seed = SEED
    day = next(fx for fx in fixtures.load_manifest() if fx.name == "nasdaq-day-sample").path
    renamed, misnamed = tmp_path / "renamed.pcap", tmp_path / "elsewhere" / seed.name  # another session, seed's name
    misnamed.parent.mkdir()
    shutil.copyfile(seed, renamed)
    shutil.copyfile(day, misnamed)
    made = [("a", seed, "0"), ("b", renamed, "0"), ("c", seed, "5"), ("d", day, "0"), ("e", misnamed, "5")]
    for name, capture, levels in made:
        assert itchbench_main(["sim", str(capture), "--levels", levels, "--out", str(tmp_path / name)]) == 0
    # a and b made within one second, b's id the lesser: a is still the first made, whose capture names the two.
    a, b = (json.loads((tmp_path / name / "manifest.json").read_text()) for name in "ab")
    b["created_utc"], a["run_id"], b["run_id"] = a["created_utc"], a["run_id"] + "-ffff", a["run_id"] + "-0000"
    for name, m in zip("ab", (a, b)):
        rundir.write_json(tmp_path / name / "manifest.json", m)
    capsys.readouterr()
    assert itchbench_main(["doc", *(str(tmp_path / name) for name, _, _ in made), "--out", str(tmp_path / "doc")]) == 0
    md = (tmp_path / "doc" / "report.md").read_text()
    rows: dict[str, str] = {}  # the first table's: configuration, runs
    for line in md.splitlines():
        if line.startswith("| sim ("):
            rows.setdefault(line.split(" | ")[0].removeprefix("| "), line.split(" | ")[1])
    summary = {label: runs for label, runs in rows.items() if runs.isdigit()}
    seeds, days = (f"seed-workload.pcap (sha256 {fixtures.sha256_of(path)[:12]})" for path in (seed, day))
    assert summary == {f"sim (capture {seeds}, levels 0) (baseline)": "2", f"sim (capture {seeds}, levels 5)": "1",
                       "sim (capture nasdaq-day-sample.pcap, levels 0)": "1", f"sim (capture {days}, levels 5)": "1"}, \
        rows
