"""What `itchbench run` says of a scenario's capacity once its runs are done:
each configuration's targets judged on its repetitions, each sweep's curve
and saturation; written to capacity-<scenario>-<UTC>.json beside the runs."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from .. import rundir
from . import measures, sweep, targets


def measures_of(run_dirs: list[Path]) -> list[dict[str, Any]]:
    return [measures.of_run(d, rundir.read_json(d / "summary.json")) for d in run_dirs]


def _clean(v: Any) -> Any:
    """JSON without NaN: a measure not taken is null."""
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


class Capacity:
    """The judgements of one `itchbench run`, added as its configurations finish."""

    def __init__(self) -> None:
        self.configurations: list[dict[str, Any]] = []
        self.sweeps: dict[str, dict[str, Any]] = {}
        self.judgements: list[tuple[str, list[targets.Judgement]]] = []
        self.not_run: dict[str, str] = {}  # configuration: why it was not run (its targets NOT MEASURED)

    def add_configuration(self, label: str, values: dict[str, Any], run_dirs: list[Path]) -> list[targets.Judgement]:
        """A configuration outside a sweep: its targets judged on its runs."""
        set_ = targets.set_targets(values)
        judged = targets.judge(set_, measures_of(run_dirs)) if set_ else []
        if judged:
            self.judgements.append((label, judged))
        self.configurations.append({"label": label, "runs": [d.name for d in run_dirs],
                                    "targets": [j.row() for j in judged]})
        return judged

    def add_not_run(self, label: str, values: dict[str, Any], why: str) -> None:
        """A configuration not run (the gateway takes none of its input): each target it sets NOT MEASURED."""
        judged = targets.not_run(values)
        if judged:
            self.judgements.append((label, judged))
            self.not_run[label] = why
        self.configurations.append({"label": label, "runs": [], "targets": [j.row() for j in judged],
                                    "not_run": why})

    def add_step(self, base: str, values: dict[str, Any], value: Any, run_dirs: list[Path]) -> list[str]:
        """A sweep step's runs; why it is past saturation ([]: within every bound)."""
        found = measures_of(run_dirs)
        why = sweep.past_saturation(values["sweep"], found)
        entry = self.sweeps.setdefault(base, {"key": values["sweep"]["key"], "bounds": values["sweep"],
                                              "targets": targets.set_targets(values), "steps": [], "measures": []})
        entry["steps"].append({**sweep.step_row(value, found, why), "run_dirs": [d.name for d in run_dirs]})
        entry["measures"].append(found)
        return why

    def finish_sweeps(self) -> list[str]:
        """Each sweep's conclusion in a line; its saturation target judged on the runs of its best step."""
        lines = []
        for base, entry in self.sweeps.items():
            sweep.memory_per_unit(entry["steps"])
            c = sweep.conclusions(entry["steps"])
            entry["conclusions"] = c
            key = entry["key"]
            if c["saturation_value"] is None:
                head = f"no step of {key} within every bound"
            else:
                head = (f"highest within every bound: {key} = {c['saturation_value']}, "
                        f"{c['saturation_msg_s']:,.0f} msg/s achieved")
            past = c["first_past"]
            if c["sender_limited"]:
                tail = (f"; the sender's limit at {key} = {past['value']} ({'; '.join(past['past_saturation'])}): the "
                        "gateway's saturation lies above it, not reached")
            elif past:
                tail = f"; past saturation at {key} = {past['value']} ({'; '.join(past['past_saturation'])})"
            else:
                tail = "; saturation not reached: the last step met every bound"
            knee = f"; knee at {key} = {c['knee_value']}" if c["knee_value"] is not None else ""
            unchecked = f"; not checked: {'; '.join(c['not_checked'])}" if c["not_checked"] else ""
            lines.append(f"SWEEP {base}: {head}{tail}{knee}{unchecked}")
            if "saturation_msg_s" in entry["targets"]:
                judged = targets.judge({"saturation_msg_s": entry["targets"]["saturation_msg_s"]},
                                       sweep.saturation_runs(entry["steps"], entry["measures"], c))
                entry["judgements"] = [j.row() for j in judged]
                self.judgements.append((base, judged))
        return lines

    def lines(self) -> list[str]:
        return [f"{label}: " + (targets.not_run_headline(judged, self.not_run[label]) if label in self.not_run
                                else targets.headline(judged)) for label, judged in self.judgements]

    def failed(self, allow_undecided: bool) -> int:
        """How many configurations (or sweeps) did not meet every target."""
        return sum(1 for _, j in self.judgements if not targets.passed(j, allow_undecided))

    def anything(self) -> bool:
        return bool(self.judgements or self.sweeps)

    def write(self, root: Path, scenario: str) -> Path:
        path = root / f"capacity-{scenario}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
        sweeps = {b: {k: v for k, v in e.items() if k != "measures"} for b, e in self.sweeps.items()}
        return rundir.write_json_new(path, _clean({"scenario": scenario, "configurations": self.configurations,
                                                   "sweeps": sweeps}))


STATUS_MARKS = {"MET": "✅ Met", "MISSED": "❌ Missed", "UNDECIDED": "⚠️ Undecided", "NOT MEASURED": "❌ Not measured"}


def run_section(run_dir: Path, manifest: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """A run report's Targets section: this run alone against the scenario's targets (the scenario's judgement,
    on the median of its repetitions, is `itchbench run`'s and the document's)."""
    set_ = {k: v for k, v in targets.set_targets(manifest.get("scenario") or {}).items() if k != "saturation_msg_s"}
    if not set_:
        return []
    judged = targets.judge(set_, [measures.of_run(run_dir, summary)])
    md = ["## Targets", "", f"**{targets.headline(judged)}** (this run alone; the scenario's targets are judged on "
          "the median of its repetitions: docs/capacity.md)", "", "| Metric | Target | Achieved | Status |",
          "|---|---|---|---|"]
    md += [f"| {j.name} | {j.bound} | {j.achieved} | {STATUS_MARKS[j.status]} |" for j in judged]
    return md + [""]
