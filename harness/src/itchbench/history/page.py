"""The history page: every metric of every scenario configuration across commits, as asv draws them, one gateway
on one kind of machine a line (docs/history.md).

One self-contained HTML file: plotly.js (from the maintained `plotly` package, inlined: no server, no network)
draws the series picked by gateway, machine, scenario, configuration and metric. A point is a commit: the median
of its runs, their spread drawn as a bar and each run as a faint dot; hovering says the commit, its subject and
date, the value with its unit, the runs and their verdicts; clicking opens the commit's first run report. A step
between consecutive commits is marked, with its statistics, when compare's test calls it significant
(compare/verdicts.py: Mann-Whitney p < 0.002 and the bootstrap CI of the ratio of medians beyond the threshold,
which needs 7 runs a commit). The alerts of `--check` are listed. A CSV a series beside it. The same store gives
the same bytes.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..compare import verdicts
from . import alerts, store

# compare's metric names (compare/session.py summary_metrics): the built-in gateway's, and a black box's
DEFAULT_METRICS = ("receive_to_book.p50", "receive_to_book.p99", "throughput_msg_s", "wire_to_wire.p50")
THRESHOLD = 0.05
SEED = 1  # the bootstrap's, recorded on the page
# What a series is one line of: one gateway on one kind of machine (its testbed), never two drawn as one.
DIMENSIONS = ("gateway", "cpu_model", "scenario", "configuration", "metric")
DIMENSION_NAMES = {"gateway": "gateway", "cpu_model": "machine (CPU model)", "scenario": "scenario",
                   "configuration": "configuration", "metric": "metric"}


@dataclass
class Series:
    gateway: str
    cpu_model: str
    scenario: str
    configuration: str
    metric: str
    points: pd.DataFrame  # one row a commit: commit, subject, commit_time, median, values, runs, verdicts, run_dirs,
    #                       step (verdict words), step_stats

    @property
    def slug(self) -> str:
        return store.path_safe(f"{self.gateway}-{self.cpu_model}-{self.scenario}-{self.configuration}-{self.metric}")


def unit_of(metric: str, values: pd.Series) -> tuple[str, float]:
    """(unit, divisor) a metric is shown in: msg/s, MiB, ns or µs (µs once its values reach 10 µs)."""
    if metric.endswith("_msg_s"):
        return "msg/s", 1.0
    if metric.endswith("_kib"):
        return "MiB", 1024.0
    if metric in ("bbo.events",):
        return "events", 1.0
    if metric == "lossless":
        return "1 = lossless", 1.0
    return ("µs", 1000.0) if values.abs().max() >= 10_000 else ("ns", 1.0)


def series(store_dir: Path, metrics: tuple[str, ...] = DEFAULT_METRICS) -> list[Series]:
    """Every (gateway, machine, scenario, configuration, metric) series in the store, commits in commit order."""
    names = ", ".join("'" + m.replace("'", "''") + "'" for m in metrics)
    df = store.query(store_dir, "SELECT gateway, cpu_model, scenario, configuration, metric, commit, "
                                "commit_subject, commit_time, sources_id, value, verdict, run_dir, workload FROM runs "
                                f"WHERE metric IN ({names}) "
                                "ORDER BY commit_time, commit_depth NULLS LAST, commit, run_dir")
    df[["gateway", "cpu_model", "commit_subject", "verdict"]] = \
        df[["gateway", "cpu_model", "commit_subject", "verdict"]].fillna("")
    store.told_apart_by_workload(df)
    out = []
    for key, g in df.groupby(list(DIMENSIONS), sort=True):
        gateway, cpu, scen, conf, metric = map(str, key)
        rows = []
        prev: list[float] | None = None
        higher_is_better = metric.endswith("_msg_s")  # as compare judges it
        # The commit that made each commit's build (the same sources as the commit before: a step of no code).
        first = alerts.build_starts(list(dict.fromkeys(g["commit"])),
                                    g.groupby("commit")["sources_id"].first().to_dict())
        for (commit, when), c in g.groupby(["commit", "commit_time"], sort=False):
            # As history --check: a run that did not pass measured something other than the workload, so its figure
            # is left out of the point and the step (its verdict is still listed); a commit with none is no step,
            # and the next steps from the commit before it.
            values = c.loc[c["verdict"].isin(alerts.PASSED), "value"].tolist()
            step, stats = "", None
            if values and prev is not None and first[commit] != commit:  # the machine's difference, not the code's
                step = "SAME SOURCES"
            elif values and prev is not None:
                v = verdicts.timing(prev, values, higher_is_better=higher_is_better, threshold=THRESHOLD, seed=SEED)
                step = verdicts.words(metric, v["verdict"])
                stats = {k: v[k] for k in ("verdict", "ratio", "p", "ci") if k in v}
            rows.append({"commit": commit, "subject": str(c["commit_subject"].iloc[0]), "commit_time": when,
                         "median": float(pd.Series(values, dtype=float).median()), "values": values,
                         "runs": len(c), "verdicts": c["verdict"].value_counts().sort_index().to_dict(),
                         "run_dirs": c["run_dir"].tolist(), "step": step, "step_stats": stats})
            prev = values or prev
        out.append(Series(gateway, cpu, scen, conf, metric, pd.DataFrame(rows)))
    return out


def _number(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)


def _series_data(s: Series) -> dict[str, Any]:
    unit, divisor = unit_of(s.metric, s.points["median"])
    points = []
    for p in s.points.itertuples():
        stats = p.step_stats or {}
        step = None
        if stats.get("verdict") in (verdicts.BETTER, verdicts.WORSE):  # significant: not same, noisy or undecided
            step = {"words": p.step, "worse": stats["verdict"] == verdicts.WORSE, "ratio": _number(stats["ratio"]),
                    "p": _number(stats["p"]), "ci": [_number(c) for c in stats["ci"]]}
        values = [v for v in (_number(v / divisor) for v in p.values) if v is not None]
        points.append({"commit": p.commit, "short": p.commit[:10], "subject": p.subject,
                       "date": pd.Timestamp(p.commit_time).strftime("%Y-%m-%d %H:%M UTC"),
                       "median": _number(p.median / divisor), "min": min(values, default=None),
                       "max": max(values, default=None),
                       "values": values, "runs": p.runs,
                       "verdicts": ", ".join(f"{n} {v or 'unknown'}" for v, n in p.verdicts.items()),
                       "reports": [Path(d, "report.html").as_uri() for d in p.run_dirs], "step": step})
    return {**{d: getattr(s, d) for d in DIMENSIONS}, "unit": unit, "slug": s.slug, "points": points}


_SCRIPT = """
const data = JSON.parse(document.getElementById('history-data').textContent);
const dims = %(dims)s;
const picks = dims.map(d => document.getElementById('pick-' + d));
function matching(upTo) {
  return data.series.filter(s => dims.slice(0, upTo).every((d, i) => s[d] === picks[i].value));
}
function refill(from) {
  for (let k = from; k < dims.length; k++) {
    const keep = picks[k].value;
    const values = [...new Set(matching(k).map(s => s[dims[k]]))].sort();
    picks[k].replaceChildren(...values.map(v => new Option(v, v)));
    picks[k].value = values.includes(keep) ? keep : values[0];
  }
}
function draw() {
  const s = matching(dims.length)[0];
  const div = document.getElementById('plot');
  const x = s.points.map(p => p.short);
  const runs = {x: s.points.flatMap(p => p.values.map(() => p.short)), y: s.points.flatMap(p => p.values),
    mode: 'markers', type: 'scatter', name: 'runs', marker: {size: 5, color: 'rgba(120,140,170,0.45)'},
    hovertemplate: 'run: %%{y:,.5~r} ' + s.unit + '<extra></extra>'};
  const medians = {x: x, y: s.points.map(p => p.median), mode: 'lines+markers', type: 'scatter', name: 'median',
    marker: {size: 9, color: '#246'}, line: {color: '#246'},
    error_y: {type: 'data', symmetric: false, array: s.points.map(p => p.max - p.median),
              arrayminus: s.points.map(p => p.median - p.min), color: '#9ab', thickness: 1.5, width: 6},
    customdata: s.points.map(p => [p.commit, p.subject, p.date, p.runs, p.verdicts]),
    hovertemplate: 'commit %%{customdata[0]}<br>%%{customdata[1]}<br>%%{customdata[2]}<br>median %%{y:,.5~r} ' +
                   s.unit + '<br>%%{customdata[3]} runs: %%{customdata[4]}<extra></extra>'};
  const steps = s.points.map((p, i) => [p, i]).filter(([p]) => p.step).map(([p, i]) => ({
    x: p.short, y: p.median, text: p.step.words + ' ×' + p.step.ratio.toFixed(3) + ' (p ' + p.step.p.toPrecision(2) +
      ', CI ' + p.step.ci.map(c => c.toFixed(3)).join('–') + ')',
    showarrow: true, arrowhead: 2, ax: -40, ay: -36, xanchor: 'right', font: {color: p.step.worse ? '#b22' : '#282', size: 11}}));
  const layout = {title: {text: s.scenario + ' / ' + s.configuration + ': ' + s.metric + ' — ' + s.gateway + ' on ' +
      s.cpu_model, font: {size: 14}}, xaxis: {title: {text: 'commit (oldest to newest)'}, type: 'category'},
    yaxis: {title: {text: s.metric + ' (' + s.unit + ')'}, rangemode: 'tozero'},
    annotations: steps, hovermode: 'closest', showlegend: false, margin: {t: 60}};
  Plotly.react(div, [runs, medians], layout, {responsive: true, displaylogo: false});
  div.dataset.slug = s.slug;
  document.getElementById('points').replaceChildren(...s.points.map(p => {
    const tr = document.createElement('tr');
    const median = p.median === null ? 'no run passed'
                                     : p.median.toLocaleString('en', {maximumSignificantDigits: 5}) + ' ' + s.unit;
    const cells = [p.short, p.subject, p.date, median, p.runs, p.verdicts, p.step ? p.step.words : ''];
    cells.forEach(c => { const td = document.createElement('td'); td.textContent = c; tr.appendChild(td); });
    const td = document.createElement('td');
    p.reports.forEach((r, i) => { const a = document.createElement('a'); a.href = r; a.textContent = i + 1;
                                  td.append(a, ' '); });
    tr.appendChild(td);
    return tr;
  }));
}
picks.forEach((p, k) => p.addEventListener('change', () => { refill(k + 1); draw(); }));
refill(0);
draw();
document.getElementById('plot').on('plotly_click', ev => {
  const s = matching(dims.length)[0];
  const p = s.points.find(q => q.short === ev.points[0].x);
  if (p && p.reports.length) window.open(p.reports[0], '_blank');
});
"""


def write(store_dir: Path, out: Path, metrics: tuple[str, ...] = DEFAULT_METRICS) -> Path:
    """history.html, and per series a CSV, in out; returns the page."""
    from plotly.offline import get_plotlyjs

    out.mkdir(parents=True, exist_ok=True)
    all_series = series(store_dir, metrics)
    for s in all_series:
        s.points.drop(columns=["values", "run_dirs", "step_stats"]).to_csv(out / f"{s.slug}.csv", index=False)
    lines, _ = alerts.summarise(alerts.check(store_dir, alerts.Threshold(), metrics))
    data = {"series": [_series_data(s) for s in all_series]}
    # In a <script> element "</" would end it early: JSON's escape for "/" keeps the text the same data.
    blob = json.dumps(data, sort_keys=True, ensure_ascii=False).replace("</", "<\\/")
    pickers = "".join(f'<label>{DIMENSION_NAMES[d]} <select id="pick-{d}"></select></label> ' for d in DIMENSIONS)
    body = (
        f"<h1>itchbench history: {html.escape(str(store_dir))}</h1>"
        f"<p>{len(all_series)} series: one gateway on one kind of machine for one scenario configuration and "
        "metric. A point is a commit: the median of its runs that passed, the bar their range, each such run a faint "
        "dot. Hover a point for its commit; click it for its first run's report; drag to zoom, double-click to zoom "
        "out. A step "
        f"is marked where compare's statistics call it significant (Mann-Whitney p &lt; {verdicts.ALPHA}, "
        f"bootstrap CI of the ratio of medians beyond ±{THRESHOLD:.0%}, seed {SEED}; 7 runs a commit at least), "
        "with the ratio, p and CI.</p>"
        f'<div class="pickers">{pickers}</div><div id="plot"></div>'
        "<table><thead><tr><th>commit</th><th>subject</th><th>date</th><th>median</th><th>runs</th>"
        "<th>verdicts</th><th>step</th><th>run reports</th></tr></thead><tbody id=\"points\"></tbody></table>"
        "<h2>Alerts</h2><p>Each series' newest commit against the ten commits before it "
        "(<code>itchbench history STORE --check</code>, docs/history.md):</p><ul id=\"alerts\">"
        + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>")
    page = out / "history.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>itchbench history</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}td,th{padding:2px 8px;text-align:left}"
        ".pickers label{margin-right:1em}#plot{height:480px}</style>"
        f"<script>{get_plotlyjs()}</script></head><body>{body}"
        f'<script type="application/json" id="history-data">{blob}</script>'
        f"<script>{_SCRIPT % {'dims': json.dumps(list(DIMENSIONS))}}</script></body></html>\n")
    return page
