"""The CI examples (examples/ci, examples/sharding) are workflows a team copies: every itchbench command in them
must be one the CLI takes, with flags it knows, on scenarios that load. Parsed with PyYAML and the CLI's own
argument parser; nothing is run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from itchbench import paths
from itchbench.cli import build_parser
from itchbench.runs import scenario

WORKFLOWS = sorted((paths.repo_root() / "examples").glob("*/github-actions.yml"))


def _commands(workflow: Path) -> list[list[str]]:
    doc = yaml.safe_load(workflow.read_text())
    out = []
    for job in doc["jobs"].values():
        for step in job["steps"]:
            for line in str(step.get("run", "")).replace(">\n", "").split("\n"):
                line = re.sub(r"\$\{\{[^}]*\}\}", "X", " ".join(line.split()))
                if ".venv/bin/itchbench " in line:
                    out.append(shlex.split(line.split(".venv/bin/itchbench ", 1)[1]))
    return out


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.parent.name)
def test_every_itchbench_command_of_a_workflow_parses_and_its_scenarios_load(workflow):
    commands = _commands(workflow)
    assert commands, f"{workflow} runs no itchbench command"
    parser = build_parser()
    for argv in commands:
        args = parser.parse_args(argv)  # an unknown flag or command exits 2 here
        named = getattr(args, "scenario", None)
        if named:
            assert scenario.load(paths.repo_root() / str(named)), argv


def test_the_gate_runs_the_quick_tier_with_targets_and_compares_against_main():
    gate = [c for c in _commands(paths.repo_root() / "examples" / "ci" / "github-actions.yml")]
    assert ["run", "scenarios/quick.toml", "--out", "quick", "--store", "results/store"] in gate
    assert any(c[:3] == ["compare", "origin/main", "HEAD"] and "scenarios/quick.toml" in c for c in gate)
    # The store the quick tier appends to is the history gate's, and the page's.
    assert ["history", "results/store", "--check", "--window", "10"] in gate
    assert ["history", "results/store", "--out", "site"] in gate
    quick = scenario.load(paths.repo_root() / "scenarios" / "quick.toml")
    assert all(c.values["targets"]["p99_us"] > 0 and c.values["targets"]["loss"] == 0 for c in quick)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.parent.name)
def test_every_job_runs_set_up_in_a_debian_12_container_with_git_before_checkout(workflow):
    # Set-up installs Debian 12's packages (linux-perf, slurm-wlm ...), which an Ubuntu runner does not have under
    # those names; and the harness records the commit, so checkout must make a git clone (git installed first).
    for name, job in yaml.safe_load(workflow.read_text())["jobs"].items():
        steps = job["steps"]
        if not any("run" in s for s in steps):
            continue  # runs nothing of its own (GitHub's Pages deployment)
        assert job.get("container", {}).get("image") == "debian:12", name
        checkout = next(i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("actions/checkout"))
        assert any("install" in str(s.get("run", "")) and " git" in str(s.get("run", "")) for s in steps[:checkout]), name
        assert not any("sudo " in str(s.get("run", "")) for s in steps), name
