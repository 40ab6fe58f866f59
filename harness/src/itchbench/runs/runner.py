"""Running one configuration: run directory, transport, gateway, verdict.

    sim     the gateway reads the capture in-process
    udp     tcpreplay -> loopback of a private network namespace -> gateway
    serial  serial-replay -> socat pty pair -> gateway

Every run writes manifest.json first and summary.json last — always, also
when the run fails, is interrupted or the harness itself has a defect — and
summary.json carries the verdict (runs/verdict.py). Child processes, the
namespace and the pty pair are gone when execute() returns, whatever
happened (procs.ProcessGroup).
"""

from __future__ import annotations

import concurrent.futures
import importlib
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from .. import paths
from ..analysis import drawing, profile
from ..captures import faults
from ..captures.fixtures import sha256_of
from ..captures.compressed import compression_of
from ..captures.inspect import CaptureError, capture_kind, check_capture, facts_of
from ..gateways import revisions
from .. import rundir
from ..rundir import RunDirError
from . import environment, microbench, noise, placement
from .transports.contract import run_contract
from .failure import Interrupted, RunError
from .procs import ProcessGroup
from .run import Run


def closing_sections(run_dir: Path, manifest: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """What a run report ends with: the gateway's placement, its profile, then its targets."""
    # Imported once the run is over: it brings pandas (0.6 s), which the report imports beside the run anyway.
    from ..capacity import record as capacity_record
    return (placement.report_section(summary) + profile.report_section(summary)
            + capacity_record.run_section(run_dir, manifest, summary))


REPORT_MODULE = "itchbench.analysis.report"  # with pandas, not matplotlib (analysis/drawing.py): 0.4 s to import


def _import_beside(module: str) -> None:
    """Starts importing the module on a thread of its own, so the import runs while the gateway does (the harness
    only waits on it then) instead of before it. itchbench sim on 50 M nasdaq-day, 5 rounds interleaved, when the
    module brought matplotlib too: 12.81 s (11.44-14.02) against 13.22 s (12.19-14.77), the gateway's own part
    6.1 s against 6.0. Whoever needs the module imports it as usual: Python's import lock makes it wait for the
    thread's import to finish, and an import that failed there is raised again there."""
    threading.Thread(target=_quiet_import, args=(module,), name="import-beside", daemon=True).start()


def _quiet_import(module: str) -> None:
    try:
        importlib.import_module(module)
    except Exception:  # noqa: BLE001 - raised again, and said, where the module is needed
        pass


def default_root() -> Path:
    return paths.repo_root() / "reports" / "runs"


def start(values: dict[str, Any], label: str, *, run_dir: Path | None, root: Path | None, echo: bool,
          command: str, origin: dict[str, Any] | None, under_test: dict[str, Any] | None = None) -> Run:
    """Create the run directory — run_dir itself, or root/RUN_ID — and its manifest."""
    run_id = rundir.new_run_id(label)
    with rundir.create(run_dir if run_dir is not None else (root or default_root()) / run_id) as run_dir:
        return _start(run_dir, run_id, values, label, echo=echo, command=command, origin=origin,
                      under_test=under_test)


def _start(run_dir: Path, run_id: str, values: dict[str, Any], label: str, *, echo: bool, command: str,
           origin: dict[str, Any] | None, under_test: dict[str, Any] | None) -> Run:
    """start()'s body, the run directory held: its manifest is the first file in it."""
    capture = Path(values["capture"])
    # Before the gateway starts, at once: the capture hashed, its count by itch-inspect (which reconciliation holds
    # the run to) and the machine's snapshot, its tools asked their versions. Each waits on a file or on other
    # processes (the first two read the whole capture: 1.3 s apiece for 50 M messages). A count that fails here
    # fails again, and is said, where reconciliation asks for it. A compressed binary ITCH file in simulation is
    # counted beside the run instead (_count_beside_the_run).
    counting = _count_beside_the_run(capture, values)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        counted = pool.submit(facts_of, capture, values["feed"]) if counting is None else None
        snapshot = pool.submit(environment.snapshot)
        capture_sha256 = sha256_of(capture)
        if counted is not None:
            counted.exception()
        env = snapshot.result()
    created_ns = time.time_ns()
    manifest = {
        "run_id": run_id,
        "label": label,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created_ns // 10**9)),
        # Runs made within one second (a quick sim, two configurations back to back) were ordered by the random
        # tail of their ids: a document's configurations and labels changed from one build of it to the next.
        "created_ns": created_ns,
        "command": command,
        "origin": origin or {},
        "scenario": values,
        "scenario_hash": rundir.scenario_hash(values),
        "capture_sha256": capture_sha256,
        "environment": env,
        # JSON's own types kept (a flag stays a flag: "False" would read as true); paths as strings.
        "gateway_under_test": {k: v if v is None or isinstance(v, (bool, int, float, str)) else str(v)
                               for k, v in (under_test or {}).items()},
    }
    rundir.write_json(run_dir / "manifest.json", manifest)
    return Run(run_dir, run_id, values, label, env, echo, under_test=dict(under_test or {}), counting=counting)


def _count_beside_the_run(capture: Path, values: dict[str, Any]) -> concurrent.futures.Future[Any] | None:
    """itch-inspect's count of a compressed binary ITCH file in simulation, begun beside the run rather than
    before it: nothing before reconciliation asks for it (the gateway reads the file itself, its progress is
    shown without a total), and counting it decompresses the whole file, the longest part of a new day's first
    run (270 M messages gzip'd: 15 s of 37 before the gateway started). Such first runs, interleaved, AMD EPYC VM
    of 2 vCPUs: 50 M messages 7.28-7.83 s before, 6.51-6.74 s beside (3 rounds); 270 M 44.0-44.1 s before,
    38.0-38.9 s beside (2 rounds; the gateway's own 28.4 s became 35.1-35.5 s, sharing the CPUs). A plain file's
    count stays before the run: beside it, it slowed the gateway more than it saved (3.8-3.9 s before, 3.95-4.3 s
    beside, 50 M messages). A run that ends early, interrupted too, waits for the count before its summary (and
    says so): it is reconciled with it as any other. None when the count is not for beside."""
    if values["transport"] != "sim" or compression_of(capture) is None or capture_kind(capture) == "pcap":
        return None
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="count-beside")
    try:
        return pool.submit(facts_of, capture, values["feed"])
    finally:
        pool.shutdown(wait=False)  # the count goes on; its thread ends with it


def execute(values: dict[str, Any], label: str, *, run_dir: Path | None = None, root: Path | None = None,
            echo: bool = True, command: str = "itchbench run", origin: dict[str, Any] | None = None,
            under_test: dict[str, Any] | None = None) -> Path:
    """Run one configuration into a new run directory (run_dir, or root/RUN_ID)
    and return it. Its summary.json holds the verdict; an interrupt is raised
    again once the summary is written. `origin` (scenario file and text,
    repetition, command line) goes into the manifest, so a document can say
    how to make the run again."""

    check_capture(Path(values["capture"]), values["feed"])  # no single feed: refused before a run exists
    if faults.any_faults(values["faults"]):
        # Applied before any transport; the run reconciles with the sidecar.
        values = {**values, "source_capture": values["capture"],
                  "capture": str(faults.faulted_capture(Path(values["capture"]), values["faults"]))}
    elif (side := faults.sidecar_of(Path(values["capture"]))) is not None:
        faults.check_describes(Path(values["capture"]), side)
        # Faulted beforehand (itchbench faults): what recovers is held to, and served from, the whole session.
        whole, why_not = faults.whole_session(Path(values["capture"]), side)
        if whole is not None:
            values = {**values, "source_capture": str(whole)}
        elif values["rerequest"]["server"] or values["lines"]["b"] or any(
                values["join"][k] for k in ("at_seq", "at_share", "at_time")):
            raise CaptureError(f"{why_not}; a re-request server, a B line or a snapshot would serve the faulted "
                               "file, and the run be held to it, not to the session")
    flavour = revisions.Flavour.of(values["build"])
    if not flavour.default:
        # Built before the run exists (cached after the first), so a flavour that does not build is no run at all.
        gateway = revisions.flavoured_gateway(flavour, print if echo else lambda _: None)
        with paths.gateway_override(gateway):
            return _execute(values, label, run_dir, root, echo, command, origin,
                            {**(under_test or {}), "build_flavour": flavour.name, "binary": str(gateway)})
    return _execute(values, label, run_dir, root, echo, command, origin, under_test)


def _execute(values: dict[str, Any], label: str, run_dir: Path | None, root: Path | None, echo: bool, command: str,
             origin: dict[str, Any] | None, under_test: dict[str, Any] | None) -> Path:
    if values["transport"] == "sim" and values["gateway"]["latency_log"]:
        # The report's drawing process: its import of matplotlib (half a CPU-second) begins now, on the CPU the
        # harness leaves idle while it prepares the run, rather than beside the gateway, where the report's follower
        # needs that CPU; the follower keeps it off the gateway's CPU once that is chosen. Not for a live run, whose
        # gateway is measured from its start: that run's report starts it after.
        drawing.start_drawer()
    run = start(values, label, run_dir=run_dir, root=root, echo=echo, command=command, origin=origin,
                under_test=under_test)
    failure: RunError | None = None
    interrupted: BaseException | None = None
    unrecorded: OSError | None = None
    cpu_before = noise.cpu_times()
    _import_beside(REPORT_MODULE)
    try:
        with ProcessGroup() as group:
            try:
                run_contract(run, group)
            finally:
                run.cpu_noise = noise.cpu_noise(cpu_before, noise.cpu_times())
        microbench.run_all(values, run.dir, run.say)
    except RunError as e:
        failure = e
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM as Interrupted
        what = "SIGTERM" if isinstance(e, Interrupted) else "SIGINT (Ctrl-C)"
        failure = RunError("interrupted", f"interrupted by {what}")
        interrupted = e
    except Exception as e:  # a defect of ours: the run still ends with an honest summary
        failure = RunError("defect", f"harness defect: {type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}")
    finally:
        # Clean-up has run (the group is closed); nothing below may hide the original failure. Reconciliation is
        # imported only now: it brings pandas, which the report's import beside the run has loaded by then, so the
        # gateway starts 0.5 s sooner.
        from . import reconcile
        if run.counting is not None:
            if not run.counting.done():
                run.say("  waiting for itch-inspect's count of the capture, begun beside the run")
            run.counting.exception()  # its facts are then read back, not counted again
        try:
            reconcile.write_summary(run, failure)
        except OSError as e:  # a disk full: the run cannot be recorded, and says so rather than pass for one
            unrecorded = e
        if unrecorded is None and ((run.dir / "gateway.json").exists() or values["gateway_file"]):
            try:
                report = importlib.import_module(REPORT_MODULE)  # waits for the import begun beside the run
                report.build(run.dir, closing=closing_sections, say=run.say if echo else None,
                             followed=run.follower.result if run.follower is not None else None)
            except Exception as e:  # noqa: BLE001 - the verdict stands; the report's absence is said, and recorded
                run.say(f"  report not written: {type(e).__name__}: {e}")
                try:
                    rundir.set_report_not_written(run.dir, f"{type(e).__name__}: {e}")
                except OSError as not_said:  # a summary that cannot say so would pass for a whole run's: removed
                    (run.dir / "summary.json").unlink(missing_ok=True)
                    unrecorded = not_said
        if run.follower is not None:
            run.follower.abandon()  # what the report did not take (nothing, once it has)
    if unrecorded is not None:
        raise RunDirError(f"{run.dir}: the run could not be recorded, its summary not written ({unrecorded}); "
                          + (f"it had failed: {failure.kind}: {str(failure).splitlines()[0]}" if failure else
                             "its verdict is unknown") + "; nothing in the folder is a whole run") from unrecorded
    if interrupted is not None:
        raise interrupted
    return run.dir
