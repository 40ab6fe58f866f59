"""The history page: each metric of each scenario configuration across commits, as asv draws them.

One self-contained HTML page (figures inline), a PNG and a CSV per series.
A point is a commit: the median of its runs, each run drawn faintly beside
it; a step between consecutive commits is marked when compare's statistics
call it significant (compare/verdicts.py: Mann-Whitney p < 0.002 and the
bootstrap CI of the ratio of medians beyond the threshold, which needs 7
runs a commit). Every point links to its runs' reports.
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ..compare import verdicts  # noqa: E402
from . import store  # noqa: E402

# compare's metric names (compare/session.py summary_metrics): the built-in gateway's, and a black box's
DEFAULT_METRICS = ("receive_to_book.p50", "receive_to_book.p99", "throughput_msg_s", "wire_to_wire.p50")
THRESHOLD = 0.05
SEED = 1  # the bootstrap's, recorded on the page


@dataclass
class Series:
    scenario: str
    configuration: str
    metric: str
    points: pd.DataFrame  # one row a commit: commit, commit_time, median, runs, run_dirs, step (verdict words)

    @property
    def slug(self) -> str:
        return store.path_safe(f"{self.scenario}-{self.configuration}-{self.metric}")


def series(store_dir: Path, metrics: tuple[str, ...] = DEFAULT_METRICS) -> list[Series]:
    """Every (scenario, configuration, metric) series in the store, commits in commit-time order."""
    names = ", ".join("'" + m.replace("'", "''") + "'" for m in metrics)
    df = store.query(store_dir, "SELECT scenario, configuration, metric, commit, commit_time, value, run_dir "
                                f"FROM runs WHERE metric IN ({names}) "
                                "ORDER BY commit_time, commit_depth NULLS LAST, commit, run_dir")
    out = []
    for (scen, conf, metric), g in df.groupby(["scenario", "configuration", "metric"], sort=True):
        rows = []
        prev: list[float] | None = None
        higher_is_better = metric == "throughput_msg_s"  # as compare judges it
        for (commit, when), c in g.groupby(["commit", "commit_time"], sort=False):
            values = c["value"].tolist()
            step = ""
            if prev is not None:
                v = verdicts.timing(prev, values, higher_is_better=higher_is_better, threshold=THRESHOLD, seed=SEED)
                step = verdicts.words(metric, v["verdict"])
            rows.append({"commit": commit, "commit_time": when, "median": float(pd.Series(values).median()),
                         "values": values, "runs": len(values), "run_dirs": c["run_dir"].tolist(), "step": step})
            prev = values
        out.append(Series(str(scen), str(conf), str(metric), pd.DataFrame(rows)))
    return out


def _figure(s: Series) -> bytes:
    fig, ax = plt.subplots(figsize=(8, 3.2), dpi=100)
    x = range(len(s.points))
    for i, vals in zip(x, s.points["values"]):
        ax.scatter([i] * len(vals), vals, s=8, color="#9ab", zorder=1)
    ax.plot(list(x), s.points["median"], marker="o", color="#246", zorder=2)
    for i, step in zip(x, s.points["step"]):
        if step and step not in ("NO CHANGE", "NOT COMPARABLE"):
            ax.annotate(step, (i, s.points["median"].iloc[i]), textcoords="offset points", xytext=(0, 8),
                        ha="center", fontsize=8, color="#b22" if step == "SLOWER" else "#282")
    ax.set_xticks(list(x), [c[:8] for c in s.points["commit"]], rotation=45, fontsize=7)
    ax.set_ylabel(s.metric)
    ax.set_title(f"{s.scenario} / {s.configuration}", fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # no version string: same runs, same bytes
    plt.close(fig)
    return buf.getvalue()


def write(store_dir: Path, out: Path, metrics: tuple[str, ...] = DEFAULT_METRICS) -> Path:
    """history.html, and per series a PNG and a CSV, in out; returns the page."""
    out.mkdir(parents=True, exist_ok=True)
    all_series = series(store_dir, metrics)
    parts = [f"<h1>itchbench history: {html.escape(str(store_dir))}</h1>",
             f"<p>{len(all_series)} series. A point is a commit (the median of its runs, each run a faint dot); a "
             f"step is marked where compare's statistics call it significant (Mann-Whitney p &lt; {verdicts.ALPHA}, "
             f"bootstrap CI of the ratio of medians beyond ±{THRESHOLD:.0%}, seed {SEED}; 7 runs a commit at "
             "least). Each row links to its runs.</p>"]
    from . import alerts
    lines, _ = alerts.summarise(alerts.check(store_dir, alerts.Threshold(), metrics))
    parts.append("<h2>Alerts</h2><p>Each series' newest commit against the ten commits before it "
                 "(<code>itchbench history STORE --check</code>, docs/history.md):</p><ul>"
                 + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>")
    for s in all_series:
        png = _figure(s)
        (out / f"{s.slug}.png").write_bytes(png)
        table = s.points.drop(columns=["values", "run_dirs"])
        table.to_csv(out / f"{s.slug}.csv", index=False)
        rows = "".join(
            f"<tr><td><code>{html.escape(p.commit[:12])}</code></td><td>{html.escape(str(p.commit_time))}</td>"
            f"<td>{p.median:,.1f}</td><td>{p.runs}</td><td>{html.escape(p.step)}</td><td>"
            + " ".join(f'<a href="file://{html.escape(d)}/report.html">{i + 1}</a>' for i, d in enumerate(p.run_dirs))
            + "</td></tr>" for p in s.points.itertuples())
        parts.append(
            f"<h2>{html.escape(s.scenario)} / {html.escape(s.configuration)}: {html.escape(s.metric)}</h2>"
            f'<img alt="{html.escape(s.slug)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
            "<table><tr><th>commit</th><th>commit time</th><th>median</th><th>runs</th><th>step</th>"
            f"<th>run reports</th></tr>{rows}</table>")
    page = out / "history.html"
    page.write_text("<!doctype html><html><head><meta charset='utf-8'><title>itchbench history</title>"
                    "<style>body{font-family:sans-serif;max-width:960px;margin:auto}td,th{padding:2px 8px;"
                    "text-align:right}</style></head><body>" + "".join(parts) + "</body></html>\n")
    return page

