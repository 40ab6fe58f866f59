"""[profile] (docs/profile.md): perf's samples folded, tabled and drawn. The folding is checked on perf script
text written by hand in perf's layout; the live case samples a real gateway with the real perf."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from itchbench import paths, rundir
from itchbench.analysis import flamegraph, profile

pytestmark = pytest.mark.alone

SCRIPT = """itch-gateway 100    1001001 
\t  a67a3 itchbench::OrderBook::leave_level(unsigned int, itchbench::Side)
\t  a6f81 itchbench::OrderBook::remove(unsigned long)
\t  2d762 itchbench::Gateway<itchbench::NullPublisher>::on_message(unsigned long, unsigned char const*)
\tffffffffffffffff [unknown]

itch-gateway 100    1001001 
\t  2d762 itchbench::Gateway<itchbench::NullPublisher>::on_message(unsigned long, unsigned char const*)
\tffffffffffffffff [unknown]

itch-gateway 100    1001001 
\t  a67a3 itchbench::OrderBook::leave_level(unsigned int, itchbench::Side)
\t  a6f81 itchbench::OrderBook::remove(unsigned long)
\t  2d762 itchbench::Gateway<itchbench::NullPublisher>::on_message(unsigned long, unsigned char const*)

itch-gateway 101    1001001 
"""


def test_perf_script_folds_to_root_first_stacks_with_short_names():
    stacks = profile.fold(SCRIPT.splitlines())
    assert stacks == Counter({
        "itchbench::Gateway::on_message;itchbench::OrderBook::remove;itchbench::OrderBook::leave_level": 2,
        "itchbench::Gateway::on_message": 1,
        "[unknown]": 1,  # a sample with no frame at all
    })
    hot = {h.function: h for h in profile.hottest(stacks)}
    assert hot["itchbench::OrderBook::leave_level"].self_samples == 2
    assert hot["itchbench::OrderBook::leave_level"].self_share == 0.5
    assert hot["itchbench::Gateway::on_message"].total_share == 0.75  # on 3 of the 4 stacks


def test_the_flame_graph_gives_each_function_its_share_of_the_width(tmp_path):
    stacks = Counter({"main;a;b": 3, "main;c": 1})
    assert flamegraph.write(tmp_path / "f.svg", stacks, "t")
    assert not flamegraph.write(tmp_path / "none.svg", Counter(), "t")
    svg = ET.parse(tmp_path / "f.svg").getroot()  # well-formed XML
    ns = "{http://www.w3.org/2000/svg}"
    widths = {g.find(f"{ns}title").text.split(":")[0]: float(g.find(f"{ns}rect").get("width"))
              for g in svg.iter(f"{ns}g")}
    assert widths["all"] == widths["main"] == flamegraph.WIDTH
    assert widths["a"] == widths["b"] == pytest.approx(flamegraph.WIDTH * 3 / 4)
    assert widths["c"] == pytest.approx(flamegraph.WIDTH / 4)
    assert (tmp_path / "f.svg").read_bytes() == (flamegraph.write(tmp_path / "g.svg", stacks, "t") and
                                                 (tmp_path / "g.svg").read_bytes())


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and perf need root")
def test_a_profiled_run_samples_the_gateway_and_draws_it(tmp_path):
    from itchbench.runs import runner
    from live_helpers import config
    values = config(paths.repo_root() / "fixtures" / "capacity-sample.pcap", "udp",
                    replay={"sender": "udp-replay", "rate": "pps", "pps": 20_000}, profile={"enabled": True})
    run = runner.execute(values, "profiled", root=tmp_path / "runs", echo=False)
    s = rundir.read_json(run / "summary.json")
    assert s["verdict"]["status"] == "lossless", s["verdict"]["headline"]
    p = s["transport_details"]["profile"]
    assert p.get("samples", 0) > 0, p  # its error said when perf recorded nothing
    assert p["top"] and p["flamegraph"] == "profile/flamegraph.svg"
    folded = (run / "profile" / "folded.txt").read_text()
    assert "itchbench::" in folded  # the gateway's own functions are among the stacks
    assert sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines()) == p["samples"]
    ET.parse(run / "profile" / "flamegraph.svg")
    assert "## Profile" in (run / "report.md").read_text()


def test_a_differential_flame_graph_colours_what_grew_red_and_what_shrank_blue(tmp_path):
    base = Counter({"main;parse": 50, "main;book": 50})
    head = Counter({"main;parse": 20, "main;book": 80})
    assert flamegraph.write(tmp_path / "d.svg", head, "d", base=base)
    ns = "{http://www.w3.org/2000/svg}"
    fills = {g.find(f"{ns}title").text.split(":")[0]: g.find(f"{ns}rect").get("fill")
             for g in ET.parse(tmp_path / "d.svg").getroot().iter(f"{ns}g")}
    assert fills["book"] == "rgb(255,75,75)"    # +30 points: saturated red
    assert fills["parse"] == "rgb(75,75,255)"   # -30 points: saturated blue
    assert fills["main"] == "rgb(255,255,255)"  # 100 % on both sides
    from itchbench.compare import profiles
    for side, stacks in (("b", base), ("h", head)):
        (tmp_path / side / "profile").mkdir(parents=True)
        (tmp_path / side / "profile" / "folded.txt").write_text("".join(f"{s} {n}\n" for s, n in stacks.items()))
    got = profiles.moved([tmp_path / "b"], [tmp_path / "h"], tmp_path, "w")
    assert [(r["function"], round(r["moved"], 2)) for r in got["functions"]] == [("book", 0.3), ("parse", -0.3)]
    assert (tmp_path / got["flamegraph"]).is_file()
    assert profiles.moved([tmp_path / "none"], [tmp_path / "h"], tmp_path, "w") is None
