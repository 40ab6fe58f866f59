"""The gateway contract: one `itchbench.toml` in the gateway's repository
says how itchbench builds, starts, feeds, watches and stops it
(docs/gateway-contract.md). Every key is checked; an error names the key
and its line."""

from __future__ import annotations

import math
import re
import shlex
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import toml_types
from ..depth_levels import ALL_LEVELS, Levels

FILE_NAME = "itchbench.toml"
INPUTS = ("udp", "serial", "file")
BBO_FORMATS = ("csv", "jsonl", "itchbench")
BBO_VIA = ("tcp", "udp", "file", "mqtt", "kafka")
READY_WHEN = ("udp_bound", "tcp_connected", "output", "delay")
CHECKS = ("exact", "state")
# What a gateway writes of itchbench's own files into {out} (gateway/log/FORMAT.md): nothing; the per-stage
# latency log; or the whole set of run files (gateway.json, latency.lat, bbo.bbo), reconciled message by message.
WHITE_BOX = ("", "stamps", "run-files")
# Placeholders itchbench fills, and which input needs which to reach the gateway at all.
RUN_PLACEHOLDERS = ("feed_addr", "feed_port", "feed_group", "serial", "baud", "capture", "bbo_addr", "bbo_port", "out",
                    "input", "worktree", "run_id", "commit", "itchbench_flags", "mqtt_addr", "mqtt_port", "mqtt_topic",
                    "kafka_brokers", "kafka_topic", "rerequest_addr", "rerequest_port", "feed_b_addr", "feed_b_port",
                    "snapshot_addr", "snapshot_port", "snapshot_user", "snapshot_password", "levels")
# What a BBO output through a broker needs to reach it at all.
NEEDED_BY_VIA = {"mqtt": "mqtt_port", "kafka": "kafka_brokers"}
BUILD_PLACEHOLDERS = ("commit", "worktree", "build_dir")
NEEDED = {"udp": ("feed_port",), "serial": ("serial",), "file": ("capture",)}


class ContractError(ValueError):
    """The contract file is wrong; the message names the file, the key and its line."""


@dataclass(frozen=True)
class Contract:
    path: Path                  # the itchbench.toml
    name: str
    inputs: tuple[str, ...]
    build: tuple[str, ...]      # shell commands, in the worktree
    commands: dict[str, str]    # input -> shell command
    bbo_format: str
    bbo_via: str
    bbo_file: str
    check: str                  # exact | state
    ready_when: str
    ready_pattern: str
    ready_delay_ms: int
    ready_timeout_s: float
    drain_ms: int
    term_grace_s: float
    white_box: str              # one of WHITE_BOX
    env: dict[str, str] = field(default_factory=dict)
    exits_at_end: bool = False  # it ends by itself at the end of the feed: drain waits for that exit
    ok_exits: tuple[int, ...] = (0,)
    subscriber_port: str = ""   # regex on its output whose group 1 is the TCP port it serves BBO subscribers on
    depth_port: str = ""        # the same for the port it serves depth subscribers on (depth records, FORMAT.md)
    bbo_levels: Levels = 0      # its events are depth of the top N levels a side (docs/book-and-bbo.md), or every
                                # level's changes ("all"); 0: BBO
    sources: tuple[str, ...] = ()  # the repository's paths its build reads; (): the whole tree

    @property
    def root(self) -> Path:
        """The repository the contract describes: the folder it stands in."""
        return self.path.parent

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "name": self.name, "inputs": list(self.inputs), "build": list(self.build),
                "commands": self.commands, "bbo": {"format": self.bbo_format, "via": self.bbo_via,
                                                   "file": self.bbo_file, "check": self.check,
                                                   "levels": self.bbo_levels},
                "ready": {"when": self.ready_when, "pattern": self.ready_pattern, "delay_ms": self.ready_delay_ms,
                          "timeout_s": self.ready_timeout_s},
                "stop": {"drain_ms": self.drain_ms, "term_grace_s": self.term_grace_s,
                         "exits_at_end": self.exits_at_end, "ok_exits": list(self.ok_exits)},
                "subscribers": {"port_pattern": self.subscriber_port, "depth_port_pattern": self.depth_port},
                "white_box": self.white_box, "sources": list(self.sources)}


# table -> key -> (type, default or REQUIRED)
REQUIRED = object()
_SCHEMA: dict[str, dict[str, tuple[Any, Any]]] = {
    "": {"name": (str, REQUIRED), "inputs": (list, REQUIRED), "build": ((str, list), []),
         "command": ((str, dict), REQUIRED), "white_box": ((bool, str), False), "env": (dict, {}),
         "sources": (list, [])},
    "bbo": {"format": (str, "csv"), "via": (str, "tcp"), "file": (str, ""), "check": (str, "exact"),
            "levels": ((int, str), 0)},
    "ready": {"when": (str, "tcp_connected"), "pattern": (str, ""), "delay_ms": (int, 0), "timeout_s": ((int, float), 10)},
    "stop": {"drain_ms": (int, 500), "term_grace_s": ((int, float), 5), "exits_at_end": (bool, False),
             "ok_exits": (list, [0])},
    "subscribers": {"port_pattern": (str, ""), "depth_port_pattern": (str, "")},
}


def _lines_of(text: str) -> dict[str, int]:
    """"table.key" (or "key" at the top) -> the line it is set on, for error messages."""
    out: dict[str, int] = {}
    table = ""
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        m = re.match(r"^\[\s*([A-Za-z0-9_.-]+)\s*\]$", s)
        if m:
            table = m.group(1)
            out.setdefault(table, n)
            continue
        m = re.match(r"^([A-Za-z0-9_.-]+)\s*=", s)
        if m:
            key = m.group(1)
            out.setdefault(f"{table}.{key}" if table else key, n)
    return out


def placeholders_in(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def fill(template: str, values: dict[str, Any]) -> str:
    """A shell command with its placeholders filled as arguments, never as shell text: each value quoted as one
    word (a path with a space, `;` or `$(…)` in it stays that path), a list of words ({itchbench_flags}) as
    that many words. Bash keeps the quoting inside `${VAR:-…}` too. {{ and }} stay literal braces."""
    return template.format_map({k: shlex.join(map(str, v)) if isinstance(v, (list, tuple)) else shlex.quote(str(v))
                                for k, v in values.items()})


def fill_path(template: str, values: dict[str, Any]) -> str:
    """A path (bbo.file) with its placeholders filled as they are: it is never given to a shell."""
    return template.format_map({k: str(v) for k, v in values.items()})


def load(path: Path | str) -> Contract:
    """Read and check a contract file (or the itchbench.toml in a directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE_NAME
    if not path.is_file():
        raise ContractError(f"gateway contract not found: {path}")
    text, raw = toml_types.read(path, ContractError)
    lines = _lines_of(text)

    def where(key: str) -> str:
        line = lines.get(key) or lines.get(key.split(".")[0])
        return f"{path}:{line}: {key}" if line else f"{path}: {key}"

    values: dict[str, dict[str, Any]] = {}
    for key in raw:
        if key not in _SCHEMA[""] and key not in _SCHEMA:
            raise ContractError(f"{where(key)}: unknown key (valid: {', '.join(sorted([*_SCHEMA[''], *_SCHEMA][1:]))})")
    for table, spec in _SCHEMA.items():
        given = raw if table == "" else raw.get(table, {})
        if not isinstance(given, dict):
            raise ContractError(f"{where(table)}: must be a table ([{table}])")
        values[table] = {}
        for key, value in given.items():
            if table == "" and key in _SCHEMA:
                continue
            dotted = f"{table}.{key}" if table else key
            if key not in spec:
                raise ContractError(f"{where(dotted)}: unknown key (valid in [{table or 'top level'}]: "
                                    f"{', '.join(spec)})")
            typ = spec[key][0]
            if not isinstance(value, typ) or (isinstance(value, bool) and bool not in (typ if isinstance(typ, tuple)
                                                                                     else (typ,))):
                raise ContractError(f"{where(dotted)}: expected {toml_types.expected(typ)}, got "
                                    f"{toml_types.got(value)}")
            values[table][key] = value
        for key, (_, default) in spec.items():
            if key not in values[table]:
                if default is REQUIRED:
                    raise ContractError(f"{path}: missing required key '{key}'"
                                        + (f" in [{table}]" if table else ""))
                values[table][key] = default
    top, bbo, ready, stop, subs = values[""], values["bbo"], values["ready"], values["stop"], values["subscribers"]

    def one_of(dotted: str, value: str, options: tuple[str, ...]) -> None:
        if value not in options:
            raise ContractError(f"{where(dotted)}: {value!r} is not one of {', '.join(options)}")

    inputs = tuple(top["inputs"])
    if not inputs:
        raise ContractError(f"{where('inputs')}: names no input (udp, serial, file)")
    for name in inputs:
        one_of("inputs", name, INPUTS)
        if inputs.count(name) > 1:
            raise ContractError(f"{where('inputs')}: {name!r} listed {inputs.count(name)} times")
    for key, value in top["env"].items():  # text in the environment: a number as it reads, nothing else
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ContractError(f"{where('env')}: env.{key}: expected a string (or a number), got "
                                f"{toml_types.got(value)}")
        # itchbench sets these for each run (or build) after the contract's env: one set here would be ignored.
        name = key.removeprefix("ITCHBENCH_").lower()
        if key.startswith("ITCHBENCH_") and name in (*RUN_PLACEHOLDERS, *BUILD_PLACEHOLDERS):
            raise ContractError(f"{where('env')}: env.{key}: itchbench sets it for each run to {{{name}}}'s value, "
                                "over the contract's env: leave it out")
    one_of("bbo.format", bbo["format"], BBO_FORMATS)
    one_of("bbo.via", bbo["via"], BBO_VIA)
    one_of("bbo.check", bbo["check"], CHECKS)
    if bbo["levels"] != ALL_LEVELS and (not isinstance(bbo["levels"], int) or not 0 <= bbo["levels"] <= 64):
        raise ContractError(f"{where('bbo.levels')}: {bbo['levels']!r} levels a side; 1 to 64 (depth), \"all\" "
                            "(every level's changes), or 0 (the BBO)")
    if bbo["levels"] == ALL_LEVELS and bbo["check"] != "exact":
        raise ContractError(f"{where('bbo.check')}: levels = \"all\" is checked change by change: check = \"exact\"")
    one_of("ready.when", ready["when"], READY_WHEN)
    if bbo["via"] == "file" and not bbo["file"]:
        raise ContractError(f"{where('bbo.via')}: via = \"file\" needs bbo.file (e.g. \"{{out}}/bbo.csv\")")
    if ready["when"] == "output":
        if not ready["pattern"]:
            raise ContractError(f"{where('ready.when')}: ready.when = \"output\" needs ready.pattern, a regex a line "
                                "of the gateway's output matches when it is ready")
        try:
            re.compile(ready["pattern"])
        except re.error as e:
            raise ContractError(f"{where('ready.pattern')}: ready.when = \"output\" needs a regex: {e}") from e
    if ready["when"] == "tcp_connected" and bbo["via"] != "tcp":
        raise ContractError(f"{where('ready.when')}: tcp_connected needs bbo.via = \"tcp\"")
    if ready["when"] == "udp_bound" and "udp" not in inputs:
        raise ContractError(f"{where('ready.when')}: udp_bound needs the udp input")
    white_box = top["white_box"] if isinstance(top["white_box"], str) else ("stamps" if top["white_box"] else "")
    if white_box not in WHITE_BOX:
        raise ContractError(f"{where('white_box')}: {white_box!r} is not one of false, true (= \"stamps\"), "
                            f"\"stamps\", \"run-files\"")
    if not top["name"].strip():
        raise ContractError(f"{where('name')}: empty; the gateway's name is what its runs and results are filed by")
    # A wait that is negative, not a number or endless would end every run at once, or never.
    for dotted, value, least in (("ready.timeout_s", ready["timeout_s"], "above 0"),
                                 ("ready.delay_ms", ready["delay_ms"], "0 or more"),
                                 ("stop.drain_ms", stop["drain_ms"], "0 or more"),
                                 ("stop.term_grace_s", stop["term_grace_s"], "0 or more")):
        if not math.isfinite(value) or value < 0 or (least == "above 0" and value == 0):
            raise ContractError(f"{where(dotted)}: {value!r}; a time {least}, and finite")
    # A key that acts only beside another's value, given without it, would be ignored: the gateway then waited for
    # and read as though its file did not say it.
    for dotted, needs, value in (("ready.pattern", "ready.when", "output"), ("ready.delay_ms", "ready.when", "delay"),
                                 ("bbo.file", "bbo.via", "file")):
        table, key = dotted.split(".")
        have = values[needs.split(".")[0]][needs.split(".")[1]]
        if key in raw.get(table, {}) and have != value:
            raise ContractError(f"{where(dotted)}: {toml_types.only_beside(dotted, needs, value, have)}")
    if not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 256 for x in stop["ok_exits"]):
        raise ContractError(f"{where('stop.ok_exits')}: must list exit statuses (integers 0-255)")
    for key in ("port_pattern", "depth_port_pattern"):
        if not subs[key]:
            continue
        try:
            groups = re.compile(subs[key]).groups
        except re.error as e:
            raise ContractError(f"{where('subscribers.' + key)}: not a regex: {e}") from e
        if groups < 1:
            raise ContractError(f"{where('subscribers.' + key)}: needs a group that captures the port")
    if subs["depth_port_pattern"] and not subs["port_pattern"]:
        raise ContractError(f"{where('subscribers.depth_port_pattern')}: needs subscribers.port_pattern too (the "
                            "depth port is read when the BBO port is named)")

    command = top["command"]
    commands = {name: command for name in inputs} if isinstance(command, str) else dict(command)
    for name, cmd in commands.items():
        dotted = f"command.{name}" if isinstance(command, dict) else "command"
        if name not in inputs:
            raise ContractError(f"{where(dotted)}: a command for {name!r}, which inputs does not list")
        if not isinstance(cmd, str) or not cmd.strip():
            raise ContractError(f"{where(dotted)}: must be a non-empty shell command")
        try:
            used = placeholders_in(cmd)
        except ValueError as e:
            raise ContractError(f"{where(dotted)}: {e} (write {{{{ and }}}} for literal braces)") from e
        unknown = sorted(used - set(RUN_PLACEHOLDERS))
        if unknown:
            raise ContractError(f"{where(dotted)}: unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}"
                                f" (known: {', '.join('{' + p + '}' for p in RUN_PLACEHOLDERS)})")
        # The environment carries every value too (ITCHBENCH_*), so a command may rely on it alone; but a
        # command that names neither is told.
        missing = [p for p in NEEDED[name] if p not in used and "ITCHBENCH_" + p.upper() not in cmd]
        if missing:
            raise ContractError(f"{where(dotted)}: input {name} needs {{{missing[0]}}} in the command (or "
                                f"${'ITCHBENCH_' + missing[0].upper()})")
    for name in inputs:
        if name not in commands:
            raise ContractError(f"{where('command')}: no command for input {name!r}")
    needed = NEEDED_BY_VIA.get(bbo["via"])
    for name, cmd in commands.items():
        if needed and needed not in placeholders_in(cmd) and "ITCHBENCH_" + needed.upper() not in cmd:
            raise ContractError(f"{where('bbo.via')}: via = {bbo['via']!r} needs {{{needed}}} in the command for "
                                f"{name} (or ${'ITCHBENCH_' + needed.upper()})")
    build = (top["build"],) if isinstance(top["build"], str) else tuple(top["build"])
    for cmd in build:
        if not isinstance(cmd, str):
            raise ContractError(f"{where('build')}: must be shell commands (strings)")
        unknown = sorted(placeholders_in(cmd) - set(BUILD_PLACEHOLDERS))
        if unknown:
            raise ContractError(f"{where('build')}: unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}"
                                f" (known: {', '.join('{' + p + '}' for p in BUILD_PLACEHOLDERS)})")
    sources = tuple(top["sources"])
    for source in sources:
        if not isinstance(source, str) or not source or source.startswith("/") or ".." in Path(source).parts:
            raise ContractError(f"{where('sources')}: {source!r} is not a path inside the repository")
    return Contract(path=path.resolve(), name=top["name"], inputs=inputs, build=build, commands=commands,
                    bbo_format=bbo["format"], bbo_via=bbo["via"], bbo_file=bbo["file"], check=bbo["check"],
                    bbo_levels=bbo["levels"],
                    ready_when=ready["when"], ready_pattern=ready["pattern"], ready_delay_ms=ready["delay_ms"],
                    ready_timeout_s=float(ready["timeout_s"]), drain_ms=stop["drain_ms"],
                    term_grace_s=float(stop["term_grace_s"]), white_box=white_box,
                    env={str(k): str(v) for k, v in top["env"].items()}, exits_at_end=stop["exits_at_end"],
                    ok_exits=tuple(stop["ok_exits"]), subscriber_port=subs["port_pattern"],
                    depth_port=subs["depth_port_pattern"], sources=sources)
