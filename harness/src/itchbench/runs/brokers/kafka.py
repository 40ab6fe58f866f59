"""Apache Kafka, one per run: a single node in KRaft mode (broker and
controller), from the jars set-up fetched from Maven Central
(harness/kafka/pom.xml -> build/kafka/lib), on the Debian JDK. Its storage
is formatted per run in the run directory and removed with the run; its
server.properties, log4j2.properties and kafka.log stay.

Both Java programs a run starts (the storage tool, then the broker) load
their classes from a class-data archive of their own beside the jars (the
JDK's AppCDS), made by the first run of each as it exits: here the broker
answered 4.6 s after its start where it took 5.8, with 5.8 s of CPU where it
took 8.0, and the storage tool took 1.3 s of CPU where it took 2.6."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ... import paths
from ..failure import RunError, tail

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run

READY_TIMEOUT_S = 90.0
CLUSTER_ID = "aXRjaGJlbmNoLWthZmthMQ"  # fixed: a run's broker is formatted afresh each time
HEAP = ["-Xms256m", "-Xmx512m"]
# The JIT stops at C1: C2's compiler threads, on the machine's two CPUs beside the gateway, held the broker back
# for the whole of a run of seconds (a seed-workload run with two subscribers, published -> received p50 147 and
# 337 ms with C2, 2.4 and 3.8 ms without; the run's CPU 14.6-15.0 s against 9.0-10.1 s).
JIT = ["-XX:TieredStopAtLevel=1"]


def jars() -> Path:
    lib = paths.build_dir() / "kafka" / "lib"
    if not any(lib.glob("kafka_2.13-*.jar")):
        raise RunError("setup", f"the Kafka broker's jars are not in {lib}: run bash harness/bin/setup")
    return lib


def version(lib: Path) -> str:
    found = [m.group(1) for p in lib.glob("kafka_2.13-*.jar") if (m := re.match(r"kafka_2\.13-([\d.]+)\.jar", p.name))]
    return f"Apache Kafka {found[0]} (KRaft)" if found else "?"


def start(run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]], port: int,
          controller_port: int) -> dict[str, object]:
    """The broker, ready: a record produced to it was consumed back. RunError('setup') with its log's last lines
    when it does not start."""
    lib = jars()
    data, log = run.dir / "kafka-data", run.dir / "kafka.log"
    group.on_close(lambda: shutil.rmtree(data, ignore_errors=True))  # megabytes of segments nobody reads
    props, log_conf = run.dir / "server.properties", run.dir / "log4j2.properties"
    props.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1", f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}", "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", f"log.dirs={data}",
        "num.partitions=1", "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0", "auto.create.topics.enable=true",
    ]) + "\n")
    log_conf.write_text("\n".join([
        "appender.file.type=File", "appender.file.name=file", f"appender.file.fileName={log}",
        "appender.file.layout.type=PatternLayout", "appender.file.layout.pattern=[%d] %p %m (%c)%n",
        "rootLogger.level=INFO", "rootLogger.appenderRef.file.ref=file",
    ]) + "\n")
    shared, made = class_archive(lib, "storage-tool")
    fmt = subprocess.run([*_java(run, lib), *shared, "kafka.tools.StorageTool", "format", "-t", CLUSTER_ID, "-c",
                          str(props)], capture_output=True, text=True)
    made(fmt.returncode)
    if fmt.returncode != 0:
        raise RunError("setup", f"formatting the Kafka broker's storage failed: {tail(fmt.stderr + fmt.stdout, 6, 600)}")
    _launch(run, group, wrap, lib, port)
    return {"kind": "kafka", "broker": "kafka", "version": version(lib), "port": port,
            "config": props.name, "log": log.name}


def restart(run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]]) -> None:
    """Stop the run's broker (SIGTERM: a clean shutdown) and start it again on its storage: a fault."""
    group.stop(run.broker_procs["kafka"])
    _launch(run, group, wrap, jars(), int(run.extras["brokers"]["kafka"]["port"]))


def _java(run: "Run", lib: Path) -> list[str]:
    return ["java", *HEAP, *JIT, f"-Dlog4j2.configurationFile={run.dir / 'log4j2.properties'}", "-cp", f"{lib}/*"]


_archives_made = itertools.count()


def class_archive(lib: Path, program: str) -> tuple[list[str], Callable[[int | None], None]]:
    """The JVM options that load one of Kafka's programs' classes from its archive, and what to call with the
    program's exit status once it has ended. With no archive yet, the program makes one as it exits (under a name of
    its own: two runs may); kept when it exited as asked (0, or 143 on SIGTERM), not when it was killed mid-write.
    The archive is named after the JDK's java, so that another JDK makes its own (it could not map this one's)."""
    java = Path(shutil.which("java") or "java").resolve()
    stamp = java.stat().st_mtime_ns if java.exists() else 0
    archive = lib.parent / f"{program}-{hashlib.sha256(f'{java}:{stamp}'.encode()).hexdigest()[:12]}.jsa"
    if archive.is_file():
        return [f"-XX:SharedArchiveFile={archive}"], lambda status: None
    being_made = archive.with_name(f"{archive.name}.{os.getpid()}-{next(_archives_made)}.tmp")

    def made(status: int | None) -> None:
        if status in (0, 143) and being_made.is_file():
            os.replace(being_made, archive)
        else:
            being_made.unlink(missing_ok=True)
    return [f"-XX:ArchiveClassesAtExit={being_made}"], made


def _launch(run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]], lib: Path, port: int) -> None:
    shared, made = class_archive(lib, "broker")
    proc = group.start("kafka", wrap([*_java(run, lib), *shared, "kafka.Kafka", str(run.dir / "server.properties")]),
                       stdout=subprocess.DEVNULL, stderr=open(run.dir / "kafka.stderr", "ab"))
    group.on_close(lambda: made(proc.returncode))  # after the group stopped it (or a restart did)
    run.broker_procs["kafka"] = proc
    probe = [str(paths.tool("bbo-kafka-subscriber")), "--probe", "--brokers", f"127.0.0.1:{port}"]
    deadline = time.monotonic() + READY_TIMEOUT_S
    while subprocess.run(wrap(probe), capture_output=True).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            what = "exited" if proc.poll() is not None else f"did not answer within {READY_TIMEOUT_S:g} s"
            log = run.dir / "kafka.log"
            text = log.read_text(errors="replace") if log.exists() else ""
            raise RunError("setup", f"the Kafka broker {what}; its log ends: {tail(text, 6, 800) or '(empty)'}")
        time.sleep(0.2)
