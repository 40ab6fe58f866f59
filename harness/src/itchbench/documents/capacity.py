"""A document's capacity sections from its runs: each configuration's targets
judged on its repetitions (Target / Achieved / Status), and each sweep's
curve, knee and saturation (capacity/, docs/capacity.md)."""

from __future__ import annotations

from typing import Any

from ..capacity import measures, sweep, targets
from ..capacity.record import STATUS_MARKS  # noqa: F401 (the template's marks, one table for every output)
from .collect import Configuration, gateway_of


def _measures(c: Configuration) -> list[dict[str, Any]]:
    return [measures.of_run(r.dir, r.summary) for r in c.runs]


def target_tables(configs: list[Configuration]) -> list[dict[str, Any]]:
    """Per configuration outside a sweep that sets targets: its judged rows and headline."""
    out = []
    for c in configs:
        values = c.runs[0].manifest.get("scenario") or {}
        set_ = {k: v for k, v in targets.set_targets(values).items() if k != "saturation_msg_s"}
        if not set_ or (c.runs[0].manifest.get("origin") or {}).get("sweep"):
            continue
        judged = targets.judge(set_, _measures(c))
        out.append({"label": c.label, "rows": [j.row() for j in judged], "headline": targets.headline(judged)})
    return out




def sweeps(configs: list[Configuration]) -> list[dict[str, Any]]:
    """Each sweep among the runs: its steps in order (medians of each step's runs), why the last one stopped it,
    its conclusions and its saturation target."""
    several = len({gateway_of(r) for c in configs for r in c.runs}) > 1
    groups: dict[str, list[tuple[int, Configuration]]] = {}
    for c in configs:
        origin = (c.runs[0].manifest.get("origin") or {}).get("sweep")
        if origin:
            name = (f"{gateway_of(c.runs[0])} " if several else "") + origin["configuration"]
            groups.setdefault(name, []).append((int(origin["step"]), c))
    out = []
    for name, steps in groups.items():
        steps.sort(key=lambda s: s[0])
        values = steps[0][1].runs[0].manifest["scenario"]
        bounds = values["sweep"]
        rows, step_measures = [], []
        for _, c in steps:
            found = _measures(c)
            step_measures.append(found)
            value = c.runs[0].manifest["origin"]["sweep"]["value"]
            rows.append({**sweep.step_row(value, found, sweep.past_saturation(bounds, found)), "label": c.label})
        sweep.memory_per_unit(rows)
        conclusions = sweep.conclusions(rows)
        set_ = targets.set_targets(values)
        judged = []
        if "saturation_msg_s" in set_:
            judged = targets.judge({"saturation_msg_s": set_["saturation_msg_s"]},
                                   sweep.saturation_runs(rows, step_measures, conclusions))
        out.append({"name": name, "short": name.rsplit(" ", 1)[-1] if several else name, "key": bounds["key"],
                    "bounds": bounds, "rows": rows, "conclusions": conclusions,
                    "targets": [j.row() for j in judged], "headline": targets.headline(judged)})
    return out
