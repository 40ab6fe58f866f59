"""The exchange's snapshot service as a role of a run with a late join (docs/snapshot.md): snapshot-server in the
run's namespace, holding the session as it was before any fault, serving its book after the scenario's join point
over SoupBinTCP; started before the gateway, stopped after it, its closing report kept for the reconciliation:
run.extras["snapshot_server"] beside snapshot-server.json in the run directory. run.extras["join"] says where the
join is: the snapshot's last message (through), the first the feed must apply (next), and where the live sender
starts (from_seq)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ... import paths
from ..failure import RunError
from ..verdict import count
from .exchange_server import ExchangeServer

if TYPE_CHECKING:
    from ..procs import ProcessGroup
    from ..run import Run

PORT = 26480  # TCP, inside the run's own namespace
START_S = 30.0  # it builds the book up to the join point before it listens
REPORT = "snapshot-server.json"


def joins(values: dict[str, Any]) -> bool:
    return bool(values["join"]["at_seq"] or values["join"]["at_share"] or values["join"]["at_time"])


def refusals(report: dict[str, Any]) -> str:
    """The logins the server's closing report says it refused, in words ("" when none): a gateway that cannot log
    in joins nothing, and its own failure seldom says why."""
    rejected = report.get("rejected") or {}
    refused = {why: int(rejected.get(key, 0)) for key, why in (("not_authorized", "a user or password not the run's"),
                                                              ("session_not_available", "a session not the feed's"))}
    parts = [f"{n:,} for {why}" for why, n in refused.items() if n]
    return f"the snapshot server refused {count(sum(refused.values()), 'login')} ({'; '.join(parts)})" if parts else ""


def login(values: dict[str, Any]) -> tuple[str, str]:
    user, _, password = values["join"]["login"].partition(":")
    return user, password


class SnapshotServerRole(ExchangeServer):
    def __init__(self, run: "Run", group: "ProcessGroup", wrap: Callable[[list[str]], list[str]]) -> None:
        j = run.values["join"]
        session = Path(run.values.get("source_capture") or run.values["capture"])
        point = (["--through", str(j["at_seq"])] if j["at_seq"] else ["--through-time", j["at_time"]] if j["at_time"]
                 else ["--through-share", str(j["at_share"])])
        user, password = login(run.values)
        cmd = [str(paths.tool("snapshot-server")), str(session), *point, "--port", str(PORT),
               *(["--feed", run.values["feed"]] if run.values["feed"] else []), "--username", user,
               "--password", password, "--cut-after", str(j["cut_after"]), "--messages-per-s", str(j["messages_per_s"]),
               "--report", str(run.dir / REPORT)]
        super().__init__(run, group, wrap, cmd, name="snapshot-server", words="snapshot server", report=REPORT,
                         extras_key="snapshot_server", start_s=START_S)
        found = re.search(r"through=(\d+) next=(\d+)", self.listening)
        if not found:
            raise RunError("setup", f"the snapshot server said {self.listening!r}, not where its snapshot is")
        through, nxt = int(found.group(1)), int(found.group(2))
        run.extras["join"] = {"through": through, "next": nxt, "from_seq": max(1, nxt - j["feed_lead"])}
        run.say(f"  snapshot server: {self.listening}; the feed from seq {run.extras['join']['from_seq']:,}")
