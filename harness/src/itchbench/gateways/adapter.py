"""The one adapter that drives a gateway described by a contract, whatever
its language: build, start (placeholders and ITCHBENCH_* filled), ready,
stop (drain, SIGTERM, SIGKILL), and its outputs (the collector's file).

Every wait has a deadline; whatever happens, the gateway and the collector
are stopped with the run's process group, and how the gateway ended is
named (docs/gateway-contract.md, "Stop")."""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import paths, rundir, users_environment
from ..runs import procs
from ..runs.failure import RunError, describe_exit, tail
from . import compiler_cache
from . import contract as contract_mod
from .contract import Contract

COLLECTOR_START_S = 10.0
COLLECTOR_END_S = 10.0  # over TCP: the connection's end, this long after the gateway's
COLLECTOR_TOLD_S = 20.0  # told to stop: a broker's collector takes what the broker holds first (15 s at most)
COLLECTOR_QUIET_S = 0.5  # a broker's collector: this long without a new line after the gateway's end
DRAIN_MOST_S = 60.0  # a drain ends after this (and drain_ms) even while the gateway still reads or writes
BBO_FILE = "bbo.received"  # the collector's output in the run directory
USAGE_FILE = "gateway-usage.json"  # process-meter's record of what the gateway's process used
LEFT_GRACE_S = 1.0  # process-meter's kLeftGraceS: how long what a gateway started may outlive it
LEFT_NAMED = 3  # of the processes a gateway left running, named in its verdict


# A build that runs longer than this says so, and again as often: minutes of a compiler in silence read as a hang.
BUILD_NOTE_S = 15.0


def build(c: Contract, worktree: Path, *, commit: str, build_dir: Path, log: Path,
          say: Callable[[str], None] = lambda _: None) -> None:
    """Run the contract's build commands in worktree; a failing one is a RunError('setup') with the log's tail. A
    long one is said every BUILD_NOTE_S, with its time so far and the last line it wrote."""
    build_dir.mkdir(parents=True, exist_ok=True)
    values = {"commit": commit, "worktree": worktree, "build_dir": build_dir}
    # As the gateway's: the user's environment, the contract's env on top, then the placeholders' values.
    env = {**users_environment(), **c.env, **_env(values)}
    cached = compiler_cache.command_environment(Path(worktree), env.get("PATH"))
    with open(log, "ab") as out:
        if cached:
            out.write(f"# compilers called by name go through ccache ({cached['CCACHE_DIR']})\n".encode())
        for template in c.build:
            cmd = contract_mod.fill(template, values)
            out.write(f"$ {cmd}\n".encode())
            out.flush()
            # stdin /dev/null, as the gateway's (procs.popen): a build that reads it gets the same end everywhere.
            proc = subprocess.Popen(["bash", "-c", cmd], cwd=worktree, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env={**env, **cached})
            started = time.monotonic()
            try:
                while True:
                    try:
                        proc.wait(BUILD_NOTE_S)
                        break
                    except subprocess.TimeoutExpired:
                        last = tail(log.read_text(errors="replace"), 1, 160)
                        say(f"  still building: {time.monotonic() - started:.0f} s of `{cmd[:80]}`"
                            + (f"; its last line: {last}" if last else "") + f" (all of it: {log})")
            except BaseException:  # interrupted: the build goes with the run, as subprocess.run would take it
                proc.kill()
                proc.wait()
                raise
            if proc.returncode != 0:
                text = log.read_text(errors="replace")
                raise RunError("setup", f"the gateway's build failed ({describe_exit(proc.returncode)}): {cmd}\n"
                                        f"{tail(text, 8, 800)}")


def _env(values: dict[str, object]) -> dict[str, str]:
    """ITCHBENCH_* variables: a list of words (itchbench_flags) as the shell would quote it."""
    return {f"ITCHBENCH_{k.upper()}": shlex.join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
            for k, v in values.items()}


def describe_gateway_exit(rc: int | None) -> str:
    """describe_exit, and a shell's 128 + N read as the signal N that killed what it ran."""
    if rc is not None and 128 < rc < 128 + 65:
        try:
            return f"exited with status {rc} (its command was killed by {signal.Signals(rc - 128).name})"
        except ValueError:
            pass
    return describe_exit(rc)


def _kill_command(meter: subprocess.Popen) -> bool:
    """SIGKILL to the gateway's command, not to process-meter, which then kills what the command left running and
    says so; the meter itself only if it does not end soon after (then True)."""
    for pid in procs.children(meter.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        meter.wait(LEFT_GRACE_S + 5.0)
        return False
    except subprocess.TimeoutExpired:
        meter.kill()
        meter.wait()
        return True


def gateway_ended(rc: int | None) -> str:
    """describe_gateway_exit as said of the gateway: 'was killed by SIGSEGV', 'exited with status 1'."""
    how = describe_gateway_exit(rc)
    return f"was {how}" if how.startswith("killed") else how


def crashed(rc: int | None) -> bool:
    return rc is not None and (rc < 0 or 128 < rc < 128 + 65)


@dataclass
class Started:
    gateway: subprocess.Popen  # process-meter, which runs the gateway's command and ends as it did
    collector: subprocess.Popen | None
    stdout: Path
    stderr: Path
    values: dict[str, object]


# The end of each of its stdout and stderr read for its last output: a gateway that logs gigabytes is read no more.
LAST_OUTPUT_BYTES = 64 << 10


class OutputSeen:
    """What a gateway's stdout and stderr have said, looked for as they grow: each look reads only the lines that are
    new, and the first match of each pattern is kept (read whole at every look, every 10 ms while the ready wait
    went on, a gateway that logged 1.2 GB before it was ready took the harness to 2.4 GB). A pattern is a line's
    (re.MULTILINE); a line longer than LONGEST_LINE is looked at in pieces of that."""

    LONGEST_LINE = 1 << 20

    def __init__(self, files: tuple[Path, ...], patterns: tuple[str, ...]) -> None:
        self._files, self._patterns = files, [p for p in patterns if p]
        self._read = [0] * len(files)
        self._rest = [b""] * len(files)
        self._found: dict[str, re.Match[str]] = {}

    def match(self, pattern: str) -> re.Match[str] | None:
        """The first line matching pattern (one of those given) so far."""
        self._look()
        return self._found.get(pattern)

    def _look(self) -> None:
        for i, path in enumerate(self._files):
            try:
                f = open(path, "rb")
            except OSError:
                continue
            with f:
                f.seek(self._read[i])
                while new := f.read(self.LONGEST_LINE):  # a part at a time: what is new may be gigabytes
                    self._read[i] += len(new)
                    self._take(i, new)

    def _take(self, i: int, new: bytes) -> None:
        data = self._rest[i] + new
        end = data.rfind(b"\n") + 1
        if not end and len(data) > self.LONGEST_LINE:
            end = len(data)
        self._rest[i] = data[end:]
        text = data[:end].decode(errors="replace")
        for pattern in self._patterns:
            if pattern not in self._found and (m := re.search(pattern, text, re.MULTILINE)):
                self._found[pattern] = m


def last_output(files: tuple[Path, ...], lines: int = 8) -> str:
    """The last lines of the gateway's stdout and stderr (of the last LAST_OUTPUT_BYTES of each)."""
    ends = []
    for path in files:
        try:
            with open(path, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - LAST_OUTPUT_BYTES))
                ends.append(f.read().decode(errors="replace"))
        except OSError:
            continue
    return tail("\n".join(ends), lines, 800)


class ContractGateway:
    """One run of one gateway through its contract."""

    def __init__(self, c: Contract, run_dir: Path, group: procs.ProcessGroup, wrap: Callable[[list[str]], list[str]],
                 *, worktree: Path | None = None, env: dict[str, str] | None = None,
                 under: list[str] | None = None) -> None:
        # Absolute: the gateway and its meter run in the gateway's folder, where a run directory given relative to
        # the caller's (`itchbench sim CAPTURE --out runs/a`) names another place or none.
        run_dir = run_dir.absolute()
        self.c, self.dir, self.group, self.wrap = c, run_dir, group, wrap
        self.under = under or []  # a tool the gateway's command runs under (callgrind), inside the meter
        self.env = env or {}
        self.worktree = worktree or c.root
        self.out_dir = run_dir if c.white_box == "run-files" else run_dir / rundir.GATEWAY_OUT
        self.out_dir.mkdir(exist_ok=True)
        self.started: Started | None = None
        self._seen = OutputSeen((), ())  # what its output has said: its files are given when it starts
        self.how_it_ended = ""
        self.usage_file = run_dir / USAGE_FILE
        self._on_port: Callable[[int, int | None], None] | None = None
        self._testbench: list[tuple[str, subprocess.Popen]] = []  # watch_testbench
        self._meter_killed = False  # by the stop itself, its command already killed: not the meter's failure
        # How many datagrams (or bytes) of its input have been read so far, where the transport can tell (UDP: the
        # run's namespace's count): the drain waits while it grows.
        self.input_read: Callable[[], int] | None = None

    # -- start and ready ------------------------------------------------------------------------------------
    def _start_collector(self, values: dict[str, object]) -> tuple[subprocess.Popen | None, int]:
        """The receiving end of its BBO output: none for a file; our collector on a port for TCP and UDP; a
        subscriber of the run's broker for MQTT and Kafka, back once it has subscribed."""
        via, out = self.c.bbo_via, self.dir / BBO_FILE
        if via == "file":
            return None, 0
        if via in ("tcp", "udp"):
            cmd = [sys.executable, "-m", "itchbench.gateways.collector", "--via", via, "--format", self.c.bbo_format,
                   "--out", str(out)]
        elif via == "mqtt":
            cmd = [str(paths.tool("bbo-mqtt-subscriber")), "--port", str(values["mqtt_port"]), "--topic",
                   str(values["mqtt_topic"]), "--qos", "1", "--collect", self.c.bbo_format, "--out", str(out)]
        else:
            cmd = [str(paths.tool("bbo-kafka-subscriber")), "--brokers", str(values["kafka_brokers"]), "--topic",
                   str(values["kafka_topic"]), "--collect", self.c.bbo_format, "--out", str(out)]
        proc = self.group.start("collector", self.wrap(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.watch_testbench("the BBO collector (itchbench's receiving end of the gateway's output)", proc)
        if via in ("mqtt", "kafka"):
            info, deadline = Path(str(out) + ".json"), time.monotonic() + COLLECTOR_START_S
            while not (info.is_file() and json.loads(info.read_text() or "{}").get("subscribed")):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RunError("setup", f"the BBO collector did not subscribe to the {via} broker "
                                            f"({describe_exit(proc.poll()) if proc.poll() is not None else 'in time'})")
                time.sleep(0.02)
            return proc, 0
        self._collector_lines = procs.LineWaiter(proc)
        try:
            port = int(self._collector_lines.wait_for("LISTENING", COLLECTOR_START_S).split()[1])
        except TimeoutError as e:
            raise RunError("setup", f"the BBO collector did not start: {e}") from e
        return proc, port

    def _clear_output_file(self, values: dict[str, object]) -> None:
        """A BBO file (via = "file") left by an earlier run is removed before the gateway starts: what is judged is
        what it wrote in this run (one that writes nothing would otherwise pass on the last run's output)."""
        if self.c.bbo_via != "file":
            return
        path = Path(contract_mod.fill_path(self.c.bbo_file, values))
        try:
            path.unlink(missing_ok=True)
        except OSError as e:
            raise RunError("setup", f"{self.c.path}: bbo.file {path} is there before the gateway starts and cannot "
                                    f"be removed ({e.strerror}): an earlier run's output would be judged as this "
                                    "run's") from e

    def start(self, input_kind: str, on_port: Callable[[int, int | None], None] | None = None,
              **run_values: object) -> Started:
        """Start the collector and the gateway for input_kind, and wait until it is ready (file input: nothing is
        sent to it, so nothing to wait for). on_port is called with the port it serves subscribers on, and the
        one it serves depth on (None: none named), as soon as its output names the first (contract
        [subscribers]) and before the ready wait goes on."""
        if input_kind not in self.c.inputs:
            raise RunError("setup", f"{self.c.path}: this gateway does not take {input_kind} input "
                                    f"(inputs = {list(self.c.inputs)})")
        values: dict[str, object] = {"feed_addr": "127.0.0.1", "feed_port": 0, "feed_group": "", "serial": "", "baud": 0,
                                     "capture": "", "bbo_addr": "127.0.0.1", "bbo_port": 0,
                                     "out": self.out_dir, "input": input_kind, "worktree": self.worktree,
                                     "run_id": "", "commit": "", "itchbench_flags": [], "mqtt_addr": "127.0.0.1",
                                     "mqtt_port": 0, "mqtt_topic": "", "kafka_brokers": "", "kafka_topic": "",
                                     "rerequest_addr": "", "rerequest_port": 0, "feed_b_addr": "", "feed_b_port": 0,
                                     "snapshot_addr": "", "snapshot_port": 0, "snapshot_user": "",
                                     "snapshot_password": "", "levels": self.c.bbo_levels}
        values.update(run_values)
        self._clear_output_file(values)
        collector, values["bbo_port"] = self._start_collector(values)
        cmd = contract_mod.fill(self.c.commands[input_kind], values)
        stdout, stderr = self.dir / "gateway.stdout", self.dir / "gateway.stderr"
        out, err = open(stdout, "wb"), open(stderr, "wb")  # files: never a pipe nobody drains
        self.group.on_close(out.close)
        self.group.on_close(err.close)
        env = {**users_environment(), **self.env, **self.c.env, **_env(values)}
        meter = [str(paths.tool("process-meter")), "--out", str(self.usage_file), "--"]
        gw = self.group.start("gateway", self.wrap([*meter, *self.under, "bash", "-c", cmd]), stdout=out, stderr=err,
                              env=env, cwd=self.worktree)
        self.started = Started(gw, collector, stdout, stderr, values)
        self._seen = OutputSeen((stdout, stderr), (self.c.ready_pattern if self.c.ready_when == "output" else "",
                                                   self.c.subscriber_port, self.c.depth_port))
        self._on_port = on_port if self.c.subscriber_port else None
        if input_kind != "file":
            self._wait_ready()
        return self.started

    def _subscriber_port_seen(self) -> None:
        """Hand the subscriber port to on_port once its output names it."""
        if self._on_port is None:
            return
        m = self._seen.match(self.c.subscriber_port)
        if m:
            depth = self._seen.match(self.c.depth_port) if self.c.depth_port else None
            on_port, self._on_port = self._on_port, None
            on_port(int(m.group(1)), int(depth.group(1)) if depth else None)

    def last_output(self, lines: int = 8) -> str:
        if self.started is None:
            return ""
        return last_output((self.started.stdout, self.started.stderr), lines) or "(no output)"

    def _ready_now(self, started_at: float) -> bool:
        s = self.started
        assert s is not None
        when = self.c.ready_when
        if when == "delay":
            return time.monotonic() - started_at >= self.c.ready_delay_ms / 1000
        if when == "tcp_connected":
            try:
                self._collector_lines.wait_for("CONNECTED", 0)
                return True
            except TimeoutError:
                return False
        if when == "output":
            return self._seen.match(self.c.ready_pattern) is not None
        # udp_bound: the namespace's own UDP table, seen through the gateway's /proc entry.
        port = f":{int(s.values['feed_port']):04X} "
        try:
            table = Path(f"/proc/{s.gateway.pid}/net/udp").read_text()
        except OSError:
            return False
        return any(line.split()[1].endswith(port.strip()) for line in table.splitlines()[1:] if len(line.split()) > 1)

    def _wait_ready(self) -> None:
        s = self.started
        assert s is not None
        t0 = time.monotonic()
        while True:
            self._subscriber_port_seen()
            if self._ready_now(t0):
                return
            failed = self.testbench_failure()
            if failed:
                raise RunError("testbench_failed", f"{failed} before the gateway was ready")
            if s.gateway.poll() is not None:
                self._raise_ended("before it was ready")
            if time.monotonic() - t0 > self.c.ready_timeout_s:
                raise RunError("gateway_failed",
                               f"the gateway never became ready ({self.c.ready_when}) within "
                               f"{self.c.ready_timeout_s:g} s; its last output: {self.last_output()}")
            time.sleep(0.01)

    def _raise_ended(self, when: str) -> None:
        s = self.started
        assert s is not None
        rc = s.gateway.returncode
        kind = "gateway_crashed" if crashed(rc) else "gateway_failed"
        raise RunError(kind, f"the gateway {gateway_ended(rc)} {when}; its last output: {self.last_output()}")

    # -- stop ---------------------------------------------------------------------------------------------------
    def _output_size(self) -> int:
        try:
            return self.bbo_file().stat().st_size
        except OSError:
            return 0

    def _sent_to_broker(self) -> int:
        """Bytes the gateway's processes have sent on their TCP connections to the run's broker (ss's bytes_sent),
        0 when its output goes elsewhere. A client library that publishes from a queue of its own (paho's, with
        20 messages in flight) may still be sending after the gateway has read its last datagram; with the
        collector behind, its file shows nothing of it, and a drain that saw only the file stopped a gateway
        that was still publishing."""
        s = self.started
        assert s is not None
        if self.c.bbo_via == "mqtt":
            ports = [int(s.values["mqtt_port"])]
        elif self.c.bbo_via == "kafka":
            ports = [int(addr.rsplit(":", 1)[1]) for addr in str(s.values["kafka_brokers"]).split(",")]
        else:
            return 0
        pids = set(procs.descendants(s.gateway.pid))
        wanted = " or ".join(f"dport = :{port}" for port in ports)
        out = subprocess.run(self.wrap(["ss", "-tinpH", wanted]), capture_output=True, text=True).stdout
        # Two lines a connection: its addresses and users:(("name",pid=N,fd=M),…), then its tcp_info.
        lines = out.splitlines()
        sent = 0
        for conn, info in zip(lines[0::2], lines[1::2]):
            if pids & {int(p) for p in re.findall(r"pid=(\d+)", conn)}:
                m = re.search(r"\bbytes_sent:(\d+)", info)
                sent += int(m.group(1)) if m else 0
        return sent

    def _quiet_drain(self) -> None:
        """Until no new BBO output, no input read (input_read, when the transport can tell) and nothing more sent
        to the run's broker (_sent_to_broker), for drain_ms (or its own exit). A gateway still reading its feed
        is not quiet, whatever its output: a slow one that publishes rarely is not stopped with its input still
        queued; nor is one still publishing to its broker while the collector is behind."""
        gw = self.started.gateway  # type: ignore[union-attr]
        progress = lambda: (self._output_size(), self.input_read() if self.input_read else 0,  # noqa: E731
                            self._sent_to_broker())
        last, quiet_since = progress(), time.monotonic()
        deadline = time.monotonic() + DRAIN_MOST_S + self.c.drain_ms / 1000
        while gw.poll() is None and time.monotonic() - quiet_since < self.c.drain_ms / 1000:
            if time.monotonic() > deadline:
                break
            failed = self.testbench_failure()
            if failed:  # what the drain watches may be gone with it (the namespace's counters)
                raise RunError("testbench_failed", f"{failed} while the gateway drained")
            time.sleep(0.02)
            now = progress()
            if now != last:
                last, quiet_since = now, time.monotonic()

    def _collector_quiet(self) -> None:
        """Until the collector's file has not grown for COLLECTOR_QUIET_S (COLLECTOR_END_S at most)."""
        path = self.dir / BBO_FILE
        size = lambda: path.stat().st_size if path.exists() else 0  # noqa: E731
        last, since, deadline = size(), time.monotonic(), time.monotonic() + COLLECTOR_END_S
        while time.monotonic() - since < COLLECTOR_QUIET_S and time.monotonic() < deadline:
            time.sleep(0.05)
            if size() != last:
                last, since = size(), time.monotonic()

    def _wait_exit(self, within_s: float, progress: Callable[[str], None] | None) -> None:
        """Until its own exit, at most within_s, woken by its pidfd the moment it ends. New lines of its stderr
        go to progress as they come."""
        s = self.started
        assert s is not None
        deadline = time.monotonic() + within_s
        seen = 0
        try:
            pidfd = os.pidfd_open(s.gateway.pid)
        except ProcessLookupError:  # it ended and was reaped (a poll elsewhere) before this wait began
            s.gateway.wait()
            if progress is not None:
                self._said_since(seen, progress)
            return
        try:
            while s.gateway.poll() is None and time.monotonic() < deadline:
                select.select([pidfd], [], [], 0.05)
                if progress is not None:
                    seen = self._said_since(seen, progress)
            if progress is not None:  # what it wrote between the last look and its end
                self._said_since(seen, progress)
        finally:
            os.close(pidfd)

    def _said_since(self, seen: int, progress: Callable[[str], None]) -> int:
        """The whole lines of its stderr after byte `seen`, a part at a time (a gateway may log gigabytes), handed to
        progress; where the next look begins."""
        s = self.started
        assert s is not None
        try:
            with open(s.stderr, "rb") as f:
                f.seek(seen)
                chunk = f.read(OutputSeen.LONGEST_LINE)
        except OSError:
            return seen
        end = chunk.rfind(b"\n") + 1
        if not end and len(chunk) == OutputSeen.LONGEST_LINE:  # a line too long to be progress: passed over
            return seen + len(chunk)
        for line in chunk[:end].decode(errors="replace").splitlines():
            progress(line)
        return seen + end

    def resources(self) -> dict[str, float]:
        """What its process used, as process-meter measured it from its own small parent: wall time from start
        to exit, CPU time (user + system, its threads and every process it started), peak RSS. Empty when the
        meter wrote nothing (it was killed)."""
        try:
            used = json.loads(self.usage_file.read_text())
        except (OSError, ValueError):
            return {}
        return {"wall_s": used["wall_s"], "cpu_user_s": used["cpu_user_s"], "cpu_system_s": used["cpu_system_s"],
                "cpu_s": used["cpu_user_s"] + used["cpu_system_s"], "max_rss_kib": used["max_rss_kib"],
                "rss_floor_kib": used["rss_floor_kib"]}

    def stop(self, within_s: float | None = None, progress: Callable[[str], None] | None = None,
             drain: bool = True) -> None:
        """After the feed's end: the drain, then SIGTERM, then SIGKILL after the grace. The drain is its own exit
        for file input (within within_s) and for a gateway that ends by itself (within drain_ms); otherwise no
        new BBO for drain_ms. Without drain (the feed failed: no end of session is coming, and a gateway that
        ends by itself would be waited for the whole drain_ms), SIGTERM at once. Records how it ended; a crash, a
        failure, a gateway that had to be killed or that did not end by itself when it should have is a
        RunError."""
        s = self.started
        assert s is not None
        gw = s.gateway
        ends_itself = drain and (self.c.exits_at_end or s.values["input"] == "file")
        wait_s = within_s if within_s is not None and s.values["input"] == "file" else self.c.drain_ms / 1000
        if ends_itself:
            self._wait_exit(wait_s, progress)
        elif drain:
            self._quiet_drain()
        killed = overdue = False
        if gw.poll() is None:
            overdue = ends_itself
            gw.send_signal(signal.SIGTERM)
            try:
                gw.wait(self.c.term_grace_s)
                self.how_it_ended = (f"did not end by itself within {wait_s:g} s: stopped by SIGTERM" if overdue
                                     else "stopped by SIGTERM after the drain" if drain else
                                     "stopped by SIGTERM when the feed failed")
            except subprocess.TimeoutExpired:
                self._meter_killed = _kill_command(gw)
                killed = True
                self.how_it_ended = f"did not stop within {self.c.term_grace_s:g} s of SIGTERM: killed (SIGKILL)"
        else:
            self.how_it_ended = f"ended by itself ({describe_gateway_exit(gw.returncode)})"
        still_open, stuck = self._stop_collector()
        left = self.left_running()
        also = "".join(f"; and it {what}" for what in (left, still_open) if what)
        failed = stuck or self.testbench_failure()
        if failed:  # what the gateway did next (a write to a closed connection) followed from it
            then = "" if self.meter_failed() else f"; the gateway {self.how_it_ended}"
            raise RunError("testbench_failed", f"{failed}{then}{also}")
        if killed:
            raise RunError("gateway_failed",
                           f"the gateway {self.how_it_ended}{also}; its last output: {self.last_output()}")
        rc = gw.returncode
        if overdue:
            raise RunError("deadline", f"the gateway {self.how_it_ended}{also}; its last output: {self.last_output()}")
        terminated = self.how_it_ended.startswith("stopped")
        if not (rc in self.c.ok_exits or (terminated and rc in (-signal.SIGTERM, 128 + signal.SIGTERM))):
            self._raise_ended(("when asked to stop (SIGTERM)" if terminated else
                               "while reading the capture" if s.values["input"] == "file" else "after the feed ended")
                              + also)
        if left or still_open:
            raise RunError("gateway_failed", f"the gateway {self.how_it_ended}, but it {left or still_open}"
                                             f"{f'; and it {still_open}' if left and still_open else ''}")

    def _stop_collector(self) -> tuple[str, str]:
        """The collector's end after the gateway's: over TCP the connection's end, otherwise told (SIGTERM). Returns
        (the gateway's part, the collector's): its TCP connection still open COLLECTOR_END_S after its end (someone
        holds it: the collector, told to stop then, may lack the rest of its output), or a collector that did not
        stop when told (killed)."""
        s = self.started
        assert s is not None
        if s.collector is None:
            return "", ""
        told = self.c.bbo_via in ("udp", "mqtt", "kafka")  # no end of stream to see
        if self.c.bbo_via in ("mqtt", "kafka"):  # what the broker still holds comes after the gateway's end
            self._collector_quiet()
        if told:
            s.collector.send_signal(signal.SIGTERM)
        try:
            s.collector.wait(COLLECTOR_TOLD_S if told else COLLECTOR_END_S)
            return "", ""
        except subprocess.TimeoutExpired:
            pass
        if not told and self.group.stop(s.collector) == 0:  # it stops on SIGTERM: it waited on a stream, or for one
            if not self._collector_connected():  # ready by its output or a delay, it need never have connected
                return "never connected to its BBO port (TCP)", ""
            return (f"kept its BBO connection (TCP) open {COLLECTOR_END_S:g} s after its end: the collector was "
                    "stopped there, and what it received may not be the whole output"), ""
        self.group.stop(s.collector, timeout=0)
        return "", ("the BBO collector (itchbench's receiving end of the gateway's output) did not stop when told "
                    "(SIGTERM) after the gateway's end: killed")

    def _collector_connected(self) -> bool:
        """Whether the gateway connected to the TCP collector (its CONNECTED line, read now or by the ready wait)."""
        try:
            self._collector_lines.wait_for("CONNECTED", 0)
        except TimeoutError:
            pass
        return any(line.startswith("CONNECTED") for line in self._collector_lines.lines)

    def watch_testbench(self, name: str, proc: subprocess.Popen) -> None:
        """A process of itchbench's own on the gateway's way (its BBO collector, the serial line's relay), named by
        name: one that fails is the run's failure (testbench_failure), not the gateway's."""
        self._testbench.append((name, proc))

    def testbench_failure(self) -> str:
        """How the first of the watched processes of itchbench's own that failed ended (an error, or a signal it
        was not stopped with); '' while they run or when they ended well."""
        for name, proc in self._testbench:
            rc = proc.poll()
            if rc is not None and rc != 0:
                return f"{name} {'was ' * (rc < 0)}{describe_exit(rc)}"
        return self._meter_failure()

    def meter_failed(self) -> bool:
        """Whether the gateway's end seen is process-meter's own (_meter_failure): nothing to say of the gateway."""
        return bool(self._meter_failure())

    def _meter_failure(self) -> str:
        """process-meter ended without its record of how the command ended (killed itself, or unable to write it):
        the end seen is the meter's, not the gateway's (whose command the meter takes with it: PR_SET_PDEATHSIG)."""
        s = self.started
        rc = s.gateway.poll() if s is not None else None
        if rc is None or self._meter_killed:
            return ""
        try:
            used = json.loads(self.usage_file.read_text())
        except (OSError, ValueError):
            used = {}
        if "signal" in used and rc in (-used["signal"], 128 + used["signal"]) or used.get("exit_code") == rc:
            return ""
        return (f"process-meter (itchbench's meter of the gateway's process) {'was ' * (rc < 0)}{describe_exit(rc)} "
                f"without recording the gateway's end: how the gateway ended was not seen")

    def left_running(self) -> str:
        """What the gateway's command left running after its end, as process-meter found and killed it (LEFT_GRACE_S
        on): '' when nothing, or when the meter wrote nothing."""
        try:
            left = json.loads(self.usage_file.read_text()).get("left_running", [])
        except (OSError, ValueError):
            return ""
        if not left:
            return ""
        named = ", ".join(f"pid {p['pid']} `{p['command']}`" for p in left[:LEFT_NAMED])
        more = f" and {len(left) - LEFT_NAMED:,} more" if len(left) > LEFT_NAMED else ""
        return (f"left {len(left):,} process{'es' if len(left) > 1 else ''} running {LEFT_GRACE_S:g} s after its own "
                f"end, killed then (SIGKILL): {named}{more} — whatever a gateway starts must end with it")

    def bbo_file(self) -> Path:
        """Where the gateway's BBO output is: the collector's file, or the gateway's own (via = file)."""
        if self.c.bbo_via == "file":
            assert self.started is not None
            return Path(contract_mod.fill_path(self.c.bbo_file, self.started.values))
        return self.dir / BBO_FILE
