"""The Kafka programs' class-data archives (runs/brokers/kafka.py): the first run of a program makes its archive as
it exits, the next loads its classes from it, and a program that did not exit as asked leaves none. The JVM itself
says the archive is usable: with -Xshare:on it refuses to start from one it cannot map."""

from __future__ import annotations

import subprocess
from pathlib import Path

from itchbench.runs.brokers import kafka


def _java(lib: Path, shared: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["java", "-cp", f"{lib}/*", *shared, *args], capture_output=True, text=True)


def test_the_first_run_makes_the_archive_the_next_loads_from(tmp_path):
    lib = tmp_path / "kafka" / "lib"  # the set-up's jars, the archives beside them here and not in the build
    lib.mkdir(parents=True)
    for jar in kafka.jars().glob("*.jar"):
        (lib / jar.name).symlink_to(jar)
    shared, made = kafka.class_archive(lib, "storage-tool")
    assert shared[0].startswith("-XX:ArchiveClassesAtExit=")
    first = _java(lib, shared, "kafka.tools.StorageTool", "random-uuid")
    made(first.returncode)
    assert first.returncode == 0 and [p.suffix for p in lib.parent.iterdir() if p.is_file()] == [".jsa"]
    shared, made = kafka.class_archive(lib, "storage-tool")
    assert shared[0].startswith("-XX:SharedArchiveFile=")
    strict = _java(lib, ["-Xshare:on", *shared], "kafka.tools.StorageTool", "random-uuid")
    assert strict.returncode == 0, strict.stderr[-500:]
    # A broker that does not start (no such configuration) exits 1: its half-made archive is not kept.
    shared, made = kafka.class_archive(lib, "broker")
    failed = _java(lib, shared, "kafka.Kafka", str(tmp_path / "no-such.properties"))
    made(failed.returncode)
    assert failed.returncode != 0 and sorted(p.name.split("-")[0] for p in lib.parent.glob("*.jsa*")) == ["storage"]
