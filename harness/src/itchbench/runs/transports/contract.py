"""Every gateway, the built-in one included, brought through its contract
file (docs/gateway-contract.md) over the transports:

    udp     the scenario's sender -> the run's private namespace -> {feed_addr}:{feed_port}
    serial  serial-replay -> socat pty pair -> {serial} at {baud}
    sim     the gateway's file mode: {capture}

Its BBO output goes to a collector (TCP or UDP, inside the namespace) or to
a file in {out}; a gateway that serves TCP subscribers itself
([subscribers]) gets the scenario's real subscribers. With no contract
named, the gateway is the built-in one, described by the repository's own
itchbench.toml and run from this checkout's build (or the revision's,
under compare: ITCHBENCH_GATEWAY).
"""

from __future__ import annotations

import contextlib
import re
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ... import paths, progress, rundir
from ...analysis import hops
from ...analysis.bbo_follow import BboDigestFollower
from ...analysis.latency_follow import LatencyFollower
from ...captures import inspect
from ...captures.compressed import compression_of
from ...gateways import adapter, contract, provenance
from .. import environment, opens
from ..brokers import kafka, mosquitto, restarts
from ..scenario import INPUT_OF
from ..deadlines import sim_seconds
from .. import placement
from ..profiler import Profiler
from ..failure import RunError
from . import exchange_server, rerequest, snapshot, subscribers
from .gateway import asked_in_flags_alone, itchbench_flags
from .live import gateway_cpus
from .serial import pty_pair, replay_serial
from .udp import UDP_PORT, line_b, private_netns, replay_udp

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run

MQTT_PORT = 1883  # inside the run's own namespace: no clash with anything
KAFKA_PORT, KAFKA_CONTROLLER_PORT = 9092, 9093


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 now (the serial transport's broker runs on the host's loopback)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def built_in_contract() -> Path:
    return paths.repo_root() / contract.FILE_NAME


def load_contract(run: "Run") -> contract.Contract:
    """The scenario's contract, the revision's own copy of it (compare, bisect: run.under_test), or the built-in
    gateway's."""
    try:
        return contract.load(run.under_test.get("contract") or run.values["gateway_file"] or built_in_contract())
    except contract.ContractError as e:
        raise RunError("setup", str(e)) from e


def _built_in_binary(run: "Run") -> dict[str, str]:
    """The environment that points the built-in contract at this checkout's build (or, under compare, the
    revision's: paths.tool honours ITCHBENCH_GATEWAY)."""
    if run.values["gateway_file"] or run.under_test.get("contract"):
        return {}
    try:
        return {paths.GATEWAY_OVERRIDE: str(paths.tool("itch-gateway"))}
    except paths.ToolMissing as e:
        raise RunError("setup", str(e)) from e


def _gateway_report(run: "Run") -> dict[str, Any]:
    """The built-in gateway's gateway.json ({} when it wrote none, or none whole)."""
    try:
        return dict(rundir.read_json(run.dir / "gateway.json"))
    except rundir.RunDirError:
        return {}


def _stop_reason(run: "Run") -> str:
    return str(_gateway_report(run).get("stop_reason", ""))


END_RACE_S = 0.5  # an end by itself this long before the sender's is not the end of session racing it


class GatewayWatch:
    """While the feed is sent: the failure the gateway's end is, if it has ended (wait_for_sender calls it).
    An end by itself with an ok status may race the sender's own end: the end of session (for a gateway that
    writes run files, its gateway.json says so); it is early if the sender went on for END_RACE_S or more
    (after), or if the gateway says it ended for another reason. A crash is named with its signal."""

    def __init__(self, run: "Run", c: contract.Contract, driver: adapter.ContractGateway) -> None:
        self.run, self.c, self.driver = run, c, driver
        self.ended_at: float | None = None
        self.sender_done_at = 0.0

    def __call__(self, elapsed_s: float) -> RunError | None:
        gw = self.driver.started.gateway  # type: ignore[union-attr]
        rc = gw.poll()
        if rc is None:
            return None
        failed = self.driver.testbench_failure()
        if failed:  # the gateway's end followed from it (its writes refused, its line gone)
            then = "" if self.driver.meter_failed() else f"; then the gateway {adapter.gateway_ended(rc)}"
            return RunError("testbench_failed", f"{failed}{then}, {elapsed_s:.1f} s into the feed")
        if adapter.crashed(rc):
            return RunError("gateway_crashed", f"the gateway {adapter.gateway_ended(rc)} while the feed was "
                                               f"still being sent, {elapsed_s:.1f} s in; its last output: "
                                               f"{self.driver.last_output()}")
        reason = _stop_reason(self.run) if self.c.white_box == "run-files" else ""
        if rc in self.c.ok_exits and reason in ("", "end of session"):
            if self.ended_at is None:
                self.ended_at = time.monotonic()
            return None
        return RunError("gateway_stopped_early",
                        f"the gateway stopped ({reason or adapter.describe_gateway_exit(rc)}) while the sender was "
                        f"still sending, {elapsed_s:.1f} s in")

    def sender_done(self) -> None:
        self.sender_done_at = time.monotonic()

    def explain(self, e: RunError) -> RunError:
        """A sender that failed after a process of itchbench's own on the way had failed (the serial line's relay)
        failed because of it; after the gateway had ended (a closed port refuses its packets), because the gateway
        stopped early: either is the run's failure."""
        if e.kind != "sender_failed":
            return e
        failed = self.driver.testbench_failure()
        if failed:
            return RunError("testbench_failed", f"{failed}; then {e}")
        if self.ended_at is None:
            return e
        rc = self.driver.started.gateway.returncode  # type: ignore[union-attr]
        return RunError("gateway_stopped_early", f"the gateway ended by itself ({adapter.describe_gateway_exit(rc)}) "
                                                 f"while the sender was still sending; then {e}")

    def replay(self, send: Callable[[], None]) -> None:
        try:
            send()
        except RunError as e:
            raise self.explain(e) from e
        self.sender_done()

    def judge_end(self) -> None:
        """After the stop: an end by itself well before the sender sent the session's last message was early (by its
        send log's stamps, CLOCK_MONOTONIC as time.monotonic; without one, before the sender finished). What a
        sender sends after the last message, ends of session for a while (`end_of_session_ms`), a gateway that ends
        at the first need not wait for."""
        if self.ended_at is None:
            return
        send_log = self.run.dir / "send.log"
        sent = hops.packets_sent(send_log) if send_log.is_file() else None
        at = hops.last_message_packet(sent) if sent is not None else None
        last, what = ((float(sent["t_sent"][at]) / 1e9, "the sender sent the session's last message")
                      if at is not None else (self.sender_done_at, "the sender finished"))
        if last - self.ended_at >= END_RACE_S:
            rc = self.driver.started.gateway.returncode  # type: ignore[union-attr]
            raise RunError("gateway_stopped_early",
                           f"the gateway ended by itself ({adapter.describe_gateway_exit(rc)}) "
                           f"{last - self.ended_at:.1f} s before {what}")


def run_contract(run: "Run", group: "ProcessGroup") -> None:
    c = load_contract(run)
    transport = run.values["transport"]
    input_kind = INPUT_OF[transport]
    under = run.under_test
    worktree = Path(under.get("worktree") or c.root)
    run.extras["gateway_contract"] = c.describe()
    env = _built_in_binary(run)
    if not env:  # a brought gateway: which build of it runs, on record before anything else happens
        _record_provenance(run, c, worktree)
    asked = asked_in_flags_alone(run, input_kind)
    if asked and "itchbench_flags" not in c.commands.get(input_kind, ""):
        # Run without them, the configuration would pass for the one it names (udp-rt, a journey's step).
        raise RunError("setup", f"{c.path}: the scenario's {', '.join(asked)} reach a gateway in "
                                f"{{itchbench_flags}} alone, which its {input_kind} command does not take: none would "
                                "be applied. Give the command {itchbench_flags}, or place the gateway's threads with "
                                "[placement] (docs/host.md)")
    if not under.get("prebuilt") and not env and c.build:
        run.say(f"  building {c.name} in {worktree}")
        try:
            adapter.build(c, worktree, commit=str(under.get("commit") or "WORKTREE"),
                          build_dir=run.dir / "gateway-build", log=run.dir / "build.log", say=run.say)
        finally:
            _record_provenance(run, c, worktree)
    live = transport != "sim"
    brokered = [t for t in run.values["publish"] if t != "tcp"] if live else []
    if (run.values["shm_subscribers"] or brokered) and not any("itchbench_flags" in cmd
                                                                for cmd in c.commands.values()):
        raise RunError("setup", f"{c.path}: shm_subscribers and publish = {brokered} need a gateway that publishes "
                                "as itchbench's does (--publish-shm, --publish-mqtt, --publish-kafka, passed in "
                                "{itchbench_flags}); this contract's commands do not take {itchbench_flags}")
    ns = private_netns(run, group) if transport == "udp" else None
    wrap = ns.wrap if ns is not None else (lambda cmd: cmd)
    # The brokers and their subscribers first: nothing the gateway publishes may go unseen. A gateway whose own
    # BBO output goes through a broker (contract bbo.via) gets one too, and its collector subscribes there.
    via_broker = [c.bbo_via] if live and c.bbo_via in ("mqtt", "kafka") and c.bbo_via not in brokered else []
    brokers = run.extras.setdefault("brokers", {}) if brokered or via_broker else {}
    if "mqtt" in brokered + via_broker:
        run.say("  starting the MQTT broker (mosquitto)")
        brokers["mqtt"] = mosquitto.start(run, group, wrap, MQTT_PORT if ns is not None else free_loopback_port())
    if "kafka" in brokered + via_broker:
        run.say("  starting the Kafka broker (KRaft, one node)")
        ports = (KAFKA_PORT, KAFKA_CONTROLLER_PORT) if ns is not None else (free_loopback_port(), free_loopback_port())
        brokers["kafka"] = kafka.start(run, group, wrap, *ports)
    for kind in brokered:
        subscribers.start_brokered(run, group, wrap, kind)
    commit = under.get("commit") or (environment.commit_label(run.env["git"]) if env else "WORKTREE")
    values: dict[str, object] = {"run_id": run.run_id, "commit": commit,
                                 "itchbench_flags": itchbench_flags(run, input_kind)}
    if "mqtt" in brokers:
        values.update(mqtt_port=brokers["mqtt"]["port"], mqtt_topic=run.values["mqtt"]["topic"])
    if "kafka" in brokers:
        values.update(kafka_brokers=f"127.0.0.1:{brokers['kafka']['port']}", kafka_topic=run.values["kafka"]["topic"])
    driver = adapter.ContractGateway(c, run.dir, group, wrap, worktree=worktree, env=env)
    wants_subscribers = run.values["subscribers"] or run.values["shm_subscribers"]
    on_port = subscribers.starter(run, group, wrap) if wants_subscribers and live else None
    if not c.subscriber_port and run.values["subscribers"] and live:
        run.extras["subscribers_not_served"] = "the gateway's contract names no subscriber port ([subscribers])"
    if transport == "udp":
        assert ns is not None
        driver.watch_testbench("the run's network namespace (its holder, unshare … sleep infinity)", ns.holder)
        server = rerequest.RequestServerRole(run, group, wrap) if run.values["rerequest"]["server"] else None
        if server is not None:
            values.update(rerequest_addr="127.0.0.1", rerequest_port=rerequest.PORT)
            driver.watch_testbench(server.named(), server.proc)
        glimpse = snapshot.SnapshotServerRole(run, group, wrap) if snapshot.joins(run.values) else None
        if glimpse is not None:
            driver.watch_testbench(glimpse.named(), glimpse.proc)
            user, password = snapshot.login(run.values)
            values.update(snapshot_addr="127.0.0.1", snapshot_port=snapshot.PORT, snapshot_user=user,
                          snapshot_password=password)
        group_addr = run.values["replay"]["multicast"]
        b = line_b(run.values)
        if b is not None:
            values.update(feed_b_addr=b[0], feed_b_port=b[1])
        driver.input_read = ns.udp_datagrams_read
        driver.start("udp", on_port, feed_addr=group_addr or "127.0.0.1", feed_port=UDP_PORT, feed_group=group_addr,
                     **values)
        _profile(run, group, driver)

        def send(watch: GatewayWatch) -> None:
            replay_udp(run, group, ns, watch)
            if server is not None:
                server.session_ended()
        try:
            _feed(run, group, c, driver, wrap, send)
        except BaseException:
            # Stopped, their reports kept; the run's failure is the feed's (which named a server that died).
            with contextlib.suppress(RunError):
                _stop_servers(server, glimpse)
            raise
        _stop_servers(server, glimpse)
        failed = driver.testbench_failure()
        if failed:  # the namespace's counters went with its holder
            raise RunError("testbench_failed", f"{failed} before its counters were read")
        run.extras["kernel"] = ns.udp_counters()
    elif transport == "serial":
        gw_end, replay_end, socat = pty_pair(run, group)
        driver.watch_testbench("the serial line's relay (socat, the pty pair)", socat)
        driver.start("serial", on_port, serial=gw_end, baud=run.values["serial"]["baud"], **values)
        _profile(run, group, driver)
        _feed(run, group, c, driver, wrap, lambda watch: replay_serial(run, group, replay_end, watch))
        group.stop(socat)
    else:
        capture = Path(run.values["capture"])
        deadline_s = sim_seconds(capture.stat().st_size, compression_of(capture) is not None)
        run.extras["deadline_s"] = round(deadline_s, 1)
        # Whether the gateway opens the capture it is to read: judged of a black box only (reconcile.CAPTURE_OPENED);
        # a gateway that writes itchbench's run files (the built-in one) accounts for each message it read itself.
        watch = opens.OpenWatch(capture).start() if c.white_box != "run-files" else None
        try:
            driver.start("file", capture=capture, **values)
            # The report's second pass counted as the gateway writes its latency log, and the BBO log's digest taken
            # as it writes that, off the gateway's CPUs.
            avoid = frozenset(gateway_cpus(run))
            follower = LatencyFollower(run.dir, int(run.values["warmup_messages"]), avoid_cpus=avoid)
            run.follower = follower  # the report takes what it counted (the runner abandons what it does not take)
            run.bbo_follower = BboDigestFollower(run.dir / "bbo.bbo", avoid_cpus=avoid)
            try:
                _profile(run, group, driver)
                _stop(run, group, driver, deadline_s)
            finally:
                follower.writer_ended()  # it counts the last blocks beside reconciliation
                run.bbo_follower.writer_ended()
        finally:
            if watch is not None:
                seen = watch.stop()
                meter = driver.started.gateway.pid if driver.started else None
                by_gateway = seen.by(meter) if meter else 0
                run.extras["capture_opens"] = {"by_gateway": by_gateway, "by_others": len(seen.chains) - by_gateway,
                                               "unplaced": seen.unplaced, "held": seen.held, "error": seen.error}
    output = driver.bbo_file()
    run.extras["bbo_output"] = str(output.relative_to(run.dir) if output.is_relative_to(run.dir) else output)


def _stop_servers(*roles: exchange_server.ExchangeServer | None) -> None:
    """Each of the exchange's servers stopped and its report kept; then the first that had died fails the run."""
    failures = []
    for role in filter(None, roles):
        try:
            role.stop()
        except RunError as e:
            failures.append(e)
    if failures:
        raise failures[0]


def _record_provenance(run: "Run", c: contract.Contract, worktree: Path) -> None:
    """The manifest's gateway_under_test: repository, commit, diff hash, contract hash, build commands and the
    digest of their output (this run's build.log, or compare's cached build's)."""
    under = run.under_test
    log = Path(under["build_log"]) if under.get("build_log") else run.dir / "build.log"
    prov = provenance.of(c, worktree, source_repository=under.get("repository"),
                         build_log=log if log.is_file() else None, prebuilt=bool(under.get("prebuilt")))
    manifest = rundir.read_json(run.dir / "manifest.json")
    manifest["gateway_under_test"] = prov
    rundir.write_json(run.dir / "manifest.json", manifest)


def _feed(run: "Run", group: "ProcessGroup", c: contract.Contract, driver: adapter.ContractGateway,
          wrap: Callable[[list[str]], list[str]], send: Callable[[GatewayWatch], None]) -> None:
    """A live feed into the started gateway: the sender watched with it, any broker restart the scenario asks
    for on the way, then the contract's stop, and whether the gateway's own end came too early."""
    watch = GatewayWatch(run, c, driver)
    faults_done = restarts.schedule(run, group, wrap)
    try:
        watch.replay(lambda: send(watch))
    except RunError:
        # The feed's failure is the run's (a gateway that crashed in it, a sender that failed); the stop still
        # records how the gateway ended, what it used and how far its output reached, and its own word is dropped.
        # No drain: no end of session is coming (a sender that failed at its start kept every run 35 s here).
        with contextlib.suppress(RunError):
            _stop(run, group, driver, drain=False)
        raise
    finally:
        faults_done()
    _stop(run, group, driver)
    watch.judge_end()


def _profile(run: "Run", group: "ProcessGroup", driver: adapter.ContractGateway) -> None:
    """Once the gateway is ready: [placement] of its threads (runs/placement.py), then [profile], perf on it from
    that moment (runs/profiler.py)."""
    if driver.started is not None and placement.wanted(run.values):
        placement.apply(run, driver.started.gateway.pid)
    if run.values["profile"]["enabled"] and driver.started is not None:
        run.profiler = Profiler(run, group)
        run.profiler.attach(driver.started.gateway.pid)


PROGRESS_LINE = re.compile(r"^itch-gateway: progress (\d+) messages")
# The lines of its own a gateway reading a file writes to stderr, said as they come: the first this many (a gateway
# that logs each message would have had a day's log echoed to the console).
SAID_LINES_MOST = 20


def _gateway_progress(run: "Run", driver: adapter.ContractGateway
                      ) -> tuple[Callable[[str], None], progress.Progress | None]:
    """What becomes of the gateway's stderr while it reads a capture: the built-in gateway's progress lines
    (itch-gateway --progress) as messages done, rate and time left (progress.Progress, into progress.log); any
    other line said as it is."""
    if driver.started is None or driver.started.values.get("input") != "file":
        return run.say, None
    capture = Path(run.values["capture"])
    total, estimated = None, False
    if compression_of(capture) is None:
        if inspect.capture_kind(capture) == "pcap":
            total = int(inspect.facts_of(capture, run.values["feed"])["messages"])
        else:
            # A binary ITCH file was counted before the run (runner.start) unless the count failed; then estimated.
            try:
                total = int(inspect.facts_of(capture, run.values["feed"])["messages"])
            except inspect.CaptureError:
                total, estimated = progress.estimated_itch_messages(capture), True
    meter = progress.Progress("gateway", total, estimated=estimated, say=run.say, log=run.dir / "progress.log")
    said = 0

    def feed(line: str) -> None:
        nonlocal said
        m = PROGRESS_LINE.match(line)
        if m:
            meter.update(int(m.group(1)))
            return
        said += 1
        if said <= SAID_LINES_MOST:
            run.say(line)
        if said == SAID_LINES_MOST:
            run.say(f"(the gateway's further lines: {run.dir / 'gateway.stderr'})")

    return feed, meter


def _gateway_messages(run: "Run") -> int | None:
    """The messages the built-in gateway says it took (gateway.json), None when it wrote no report."""
    took = _gateway_report(run).get("messages_received")
    return int(took) if took is not None else None


def _stopped_by_signal(run: "Run") -> int | None:
    """The messages the built-in gateway took before a stop request ended its simulation, or None when it was not
    stopped so."""
    return _gateway_messages(run) if _gateway_report(run).get("stopped_by_signal") else None


def _stop(run: "Run", group: "ProcessGroup", driver: adapter.ContractGateway, within_s: float | None = None,
          drain: bool = True) -> None:
    """The contract's stop (drain: ContractGateway.stop's); then the profile and the subscribers, whose results are
    kept even when the stop failed."""
    feed, meter = _gateway_progress(run, driver)
    try:
        driver.stop(within_s, progress=feed, drain=drain)
    except RunError as e:
        stopped = _stopped_by_signal(run)
        if stopped is None:
            raise
        raise RunError("interrupted", f"the gateway was stopped by SIGINT or SIGTERM after {stopped:,} messages; its "
                       "logs are finalized and the report covers the messages it took") from e
    finally:
        if meter is not None and meter.done:
            took = _gateway_messages(run)
            meter.finish(took if took is not None else meter.done, how=f"the gateway {driver.how_it_ended}")
        if run.profiler is not None:
            run.profiler.finish()
        run.extras["gateway_stop"] = driver.how_it_ended
        rc = driver.started.gateway.returncode if driver.started else None
        run.extras["gateway_exit"] = rc
        run.extras["gateway_exit_described"] = adapter.describe_gateway_exit(rc)
        run.extras["gateway_resources"] = driver.resources()
        subscribers.finish(run, group)
